#!/usr/bin/env bash
# --nccl-max-ctas N, the CTAs NCCL may give one collective of the measured
# ranks' communicators (docs/cli.md), on the CPU backend: run, scale, suite
# and plan list it and coll refuses it with the reason; a value outside
# 0..64 or not a number is a usage error naming the option; N > 0 on the
# cpu backend (no NCCL) is refused; the document's config.nccl_max_ctas is
# null on the cpu backend, for the runner's workloads (mlp) and for llm.
# $1 is the gpuscale binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
# Two communicating workloads, small: mlp's gradient all-reduce through the
# runner, llm's tensor-parallel shards through its own driver.
mlp=(run mlp --backend cpu --ranks 2 --samples 512 -n 3 --runs 1 -q)
llm=(run llm --backend cpu --ranks 2 --tp 2 --samples 2 --input-min 2 --input-max 8 --output-min 1
     --output-max 4 --batch 2 -q)

for cmd in run scale suite plan; do
  expect 0 "--nccl-max-ctas N" -- "$cmd" --help
done
expect 2 "option --nccl-max-ctas does not apply to gpuscale coll: coll measures NCCL as it comes" -- \
  coll allreduce --backend cpu --ranks 2 --nccl-max-ctas 4
for bad in 65 x -1 4.5; do
  expect 2 "option --nccl-max-ctas" -- "${mlp[@]}" --nccl-max-ctas "$bad"
done
expect 2 "option --nccl-max-ctas: 65 is above the maximum 64" -- "${mlp[@]}" --nccl-max-ctas 65
expect 2 "option --nccl-max-ctas 4 applies to the cuda backend" -- "${mlp[@]}" --nccl-max-ctas 4
expect 2 "option --nccl-max-ctas 8 applies to the cuda backend" -- \
  plan --backend cpu --task '0,1:mlp' --iters 5 --runs 1 --nccl-max-ctas 8

expect 0 "" -- "${mlp[@]}" -o "$work/mlp-default.json"
expect 0 "" -- "${mlp[@]}" --nccl-max-ctas 0 -o "$work/mlp-0.json"
expect 0 "" -- "${llm[@]}" -o "$work/llm-default.json"
python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
work = sys.argv[1]
for name in ("mlp-default", "mlp-0", "llm-default"):
    config = json.load(open(f"{work}/{name}.json"))["config"]
    assert "nccl_max_ctas" in config and config["nccl_max_ctas"] is None, (name, config)
    print(f"{name}: config.nccl_max_ctas null on the cpu backend")
PY

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all --nccl-max-ctas checks passed"
