#!/usr/bin/env bash
# mlp's pipeline (--pp) on GPUs: 2 stages under GPipe and 1F1B with NCCL
# send/recv between them, each stage's fp32 gradients and update checked
# against the CPU reference, tf32 and bf16 (bfloat16 activations, sent as
# such) with mlp's error bounds of their precision;
# with 4 GPUs also 2 replicas of 2 stages (summed over each stage's NCCL
# group) and 4 stages. Skips (77) with fewer than 2 GPUs.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_gpus 2

args=(--backend cuda --layers 256,512,512,512,256,8 --samples 8192 --batch 512 --iters 20 --warmup 2
      --runs 1 --no-progress -q --gpu-mode multi)
for schedule in gpipe 1f1b; do
  expect 0 "" -- run mlp "${args[@]}" -g 2 --pp 2 --micro-batches 8 --schedule "$schedule" \
    -o "$work/pp2-$schedule.json"
done
expect 0 "" -- run mlp "${args[@]}" -g 2 --pp 2 --micro-batches 8 --precision tf32 \
  -o "$work/pp2-tf32.json"
expect 0 "" -- run mlp "${args[@]}" -g 2 --pp 2 --micro-batches 8 --schedule 1f1b --precision bf16 \
  -o "$work/pp2-bf16.json"
names="pp2-gpipe pp2-1f1b pp2-tf32 pp2-bf16"
if [ "$gpu_count" -ge 4 ]; then
  expect 0 "" -- run mlp "${args[@]}" -g 4 --pp 2 --micro-batches 4 -o "$work/dp2pp2.json"
  expect 0 "" -- run mlp "${args[@]}" -g 4 --pp 4 --micro-batches 8 -o "$work/pp4.json"
  names="$names dp2pp2 pp4"
fi
for name in $names; do
  python3 - "$work/$name.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "ok", d["status"]
m = d["measurements"][0]
assert m["verification"]["status"] == "passed", m["verification"]
for r in m["runs"][0]["ranks"]:
    kind = "tf32" if "tf32" in sys.argv[1] else "bf16" if "bf16" in sys.argv[1] else "fp32"
    want = f"CUDA {kind} pipeline stage"
    assert want in r["verification"]["detail"], r["verification"]
    assert r["verification"]["mismatches"] == 0, r["verification"]
PY
done
exit $((failures > 0))
