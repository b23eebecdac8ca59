#!/usr/bin/env bash
# `gpuscale exec` on GPUs with the PyTorch DDP example (examples/ddp_mlp.py)
# started by torchrun: the figure is the protocol's per-step step_time of
# each rank with the global batch as its "items" (samples), so the
# throughput is in samples/s; every timed step is a sample, CUDA_VISIBLE_DEVICES names the step's GPUs
# and NVML telemetry of those GPUs is in the document; report reads it.
# Skips (77) without a GPU, PyTorch with CUDA, or torchrun.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
need_gpus 1
python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null ||
  { echo "skipped: needs PyTorch with CUDA"; exit 77; }
command -v torchrun >/dev/null || { echo "skipped: needs torchrun"; exit 77; }

counts=1
[ "$gpu_count" -ge 2 ] && counts=1,2
expect 0 "figure: step_time \(ms, lower is better, protocol lines, values per step, per rank\)" -- \
  exec --counts "$counts" --warmup 1 --runs 2 --no-progress --out "$work/ddp.json" \
  -- torchrun --standalone --nproc_per_node='{n}' "$root/examples/ddp_mlp.py" --steps 50 --warmup-steps 10
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
[ "$(json "$work/ddp.json" "d['status']")" = ok ] || fail "ddp.json is not ok"
[ "$(json "$work/ddp.json" "len(d['measurements'][0]['runs'][1]['step_seconds'])")" = 50 ] ||
  fail "50 timed steps are not 50 samples of a run"
[ "$(json "$work/ddp.json" "(d['measurements'][-1]['cost']['items_per_step'], d['measurements'][-1]['cost']['item_unit'])")" = "(4096, 'samples')" ] ||
  fail "a step's items are not the global batch of 4096 samples"
[ "$(json "$work/ddp.json" "'samples_per_s' in [m['name'] for m in d['measurements'][0]['exec']['metrics']]")" = True ] ||
  fail "samples_per_s is not recorded beside the figure"
[ "$(json "$work/ddp.json" "d['measurements'][0]['telemetry']['available']")" = True ] ||
  fail "no NVML telemetry of the step's GPU"
[ "$(json "$work/ddp.json" "d['measurements'][0]['exec']['cuda_visible_devices']")" = 0 ] ||
  fail "CUDA_VISIBLE_DEVICES at 1 GPU is not 0"
[ "$(json "$work/ddp.json" "[m['last'] for m in d['measurements'][0]['exec']['metrics'] if m['name'] == 'parameters']")" = "[2021379]" ] ||
  fail "the large MLP does not have 2,021,379 parameters"
expect 0 "exec: backend cuda" -- report "$work/ddp.json"

[ "$failures" = 0 ] || exit 1
echo "exec on GPUs passed"
