#!/usr/bin/env bash
# mlp's pipeline (--pp) on GPUs: 2 stages under GPipe and 1F1B with NCCL
# send/recv between them, with 8 micro-batches and with 1 (whose first
# transfer groups would open the links between the stages unlike on the
# two sides, so that NCCL waits forever without the links opened at set-up:
# bench/pipeline.sh's first run; each run here under `timeout 120`),
# each stage's fp32 gradients and update checked
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
# bounded NAME ARGS...: run mlp ARGS into $work/NAME.json, given 120 s.
bounded() {
  local name=$1 rc=0
  shift
  timeout -k 10 120 "$bin" run mlp "${args[@]}" "$@" -o "$work/$name.json" >"$work/$name.txt" 2>&1 ||
    rc=$?
  [ "$rc" = 0 ] || fail "run mlp $* exited $rc (124 or 137: still running after 120 s):" \
    "$(tail -n 5 "$work/$name.txt")"
}
for schedule in gpipe 1f1b; do
  bounded "pp2-m1-$schedule" -g 2 --pp 2 --micro-batches 1 --schedule "$schedule"
  expect 0 "" -- run mlp "${args[@]}" -g 2 --pp 2 --micro-batches 8 --schedule "$schedule" \
    -o "$work/pp2-$schedule.json"
done
expect 0 "" -- run mlp "${args[@]}" -g 2 --pp 2 --micro-batches 8 --precision tf32 \
  -o "$work/pp2-tf32.json"
expect 0 "" -- run mlp "${args[@]}" -g 2 --pp 2 --micro-batches 8 --schedule 1f1b --precision bf16 \
  -o "$work/pp2-bf16.json"
names="pp2-m1-gpipe pp2-m1-1f1b pp2-gpipe pp2-1f1b pp2-tf32 pp2-bf16"
if [ "$gpu_count" -ge 4 ]; then
  expect 0 "" -- run mlp "${args[@]}" -g 4 --pp 2 --micro-batches 4 -o "$work/dp2pp2.json"
  expect 0 "" -- run mlp "${args[@]}" -g 4 --pp 4 --micro-batches 8 -o "$work/pp4.json"
  bounded pp4-m1 -g 4 --pp 4 --micro-batches 1
  names="$names dp2pp2 pp4 pp4-m1"
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
