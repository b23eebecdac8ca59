#!/usr/bin/env bash
# The inter-node check of `gpuscale predict` on a machine with 2 GPUs: NCCL
# is kept off NVLink and shared memory (NCCL_P2P_DISABLE=1
# NCCL_SHM_DISABLE=1), so it takes its network transport as between two
# nodes. Steps:
#   1. scale mlp on 1 and 2 GPUs as usual (NVLink): the compute the model fits;
#   2. scale mlp again with NCCL on the network transport: the 2-GPU step to check;
#   3. coll allreduce on the network transport: its alpha and bus bandwidth
#      give --inter-node (GB/s) and --inter-node-latency (us per ring step,
#      half the 2-rank alpha: a 2-node ring has 2 steps);
#   4. predict mlp at 2 GPUs as 2 nodes of 1 GPU from step 1 with those
#      figures, and print the error against step 2's measured step.
# Usage: bench/predict-inter-node.sh [GPUSCALE] [OUT]  (defaults build/gpuscale, predict-inter-node)
# GS_RANKS overrides how the ranks are chosen (default "--gpus 0,1"; the
# script's plumbing runs without a GPU with "--backend cpu --ranks 2").
# Pass: |error| within 15% (docs/predict.md, "What remains").
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/gpuscale}
out=${2:-predict-inter-node}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
read -r -a ranks <<<"${GS_RANKS:---gpus 0,1}"

"$bin" scale mlp "${ranks[@]}" --out "$out/mlp-nvlink.json" --no-progress
NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 \
  "$bin" scale mlp "${ranks[@]}" --out "$out/mlp-net.json" --no-progress
NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 \
  "$bin" coll allreduce -b 8 -e 256M -f 4 "${ranks[@]}" --out "$out/coll-net.json" --no-progress

# The network's figures from the fit of the network-transport sweep.
"$bin" predict "$out/mlp-net.json" "$out/coll-net.json" --gpus 2 --format json \
  -o "$out/fit-net.json"
read -r gbps latency_us < <(python3 - "$out/fit-net.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["machine"]
ar = next(c for c in m["collectives"] if c["op"] == "allreduce")
print(1e-9 / ar["beta_seconds_per_byte"], 1e6 * ar["alpha_seconds"] / 2)
PY
)
echo "network transport: $gbps GB/s, $latency_us us per step"

"$bin" predict "$out/mlp-nvlink.json" --gpus 2 --gpus-per-node 1 --inter-node "$gbps" \
  --inter-node-latency "$latency_us" --format json -o "$out/predicted.json"
"$bin" predict "$out/mlp-nvlink.json" --gpus 2 --gpus-per-node 1 --inter-node "$gbps" \
  --inter-node-latency "$latency_us" | tee "$out/predicted.txt"
python3 - "$out/predicted.json" "$out/mlp-net.json" <<'PY'
import json, sys
pred = json.load(open(sys.argv[1]))["workloads"][0]["predictions"][0]
net = next(m for m in json.load(open(sys.argv[2]))["measurements"] if m["world_size"] == 2)
measured = net["aggregate"]["step"]["mean"]
comm = [sum(r["comm_seconds"]) / len(r["comm_seconds"]) for run in net["runs"] for r in run["ranks"]]
error = (pred["step_seconds"] - measured) / measured
print(f"2 GPUs over the network transport: predicted step {pred['step_seconds'] * 1e6:.2f} us "
      f"(comm {pred['terms']['comm_seconds'] * 1e6:.2f} us), measured {measured * 1e6:.2f} us "
      f"(exposed comm {1e6 * sum(comm) / len(comm):.2f} us): error {100 * error:+.1f}%")
sys.exit(0 if abs(error) <= 0.15 else 1)
PY
