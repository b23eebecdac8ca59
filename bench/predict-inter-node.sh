#!/usr/bin/env bash
# The inter-node check of `gpuscale predict` on a machine with 2 GPUs: NCCL
# is kept off NVLink and shared memory (NCCL_P2P_DISABLE=1
# NCCL_SHM_DISABLE=1), so it takes its network transport as between two
# nodes. Steps:
#   1. scale mlp on 1 and 2 GPUs as usual (NVLink): the compute the model fits;
#   2. scale mlp again with NCCL on the network transport: the 2-GPU step to check;
#   3. coll allreduce on the network transport: the 2-rank allreduce of the
#      "network" (--inter-node-coll), and the figures of its fit: bus
#      bandwidth (--inter-node) and half its alpha (--inter-node-latency, per
#      ring step: a 2-node ring has 2 steps);
#   4. predict mlp at 2 GPUs as 2 nodes of 1 GPU from step 1 both ways, and
#      print the errors against step 2's measured step.
# Usage: bench/predict-inter-node.sh [GPUSCALE] [OUT]  (defaults build/gpuscale, predict-inter-node)
# GS_RANKS overrides how the ranks are chosen (default "--gpus 0,1"; the
# script's plumbing runs without a GPU with "--backend cpu --ranks 2").
# Pass: |error| of the prediction from the measured allreduce within 15%
# (docs/predict.md, "Across nodes"); the figures' error is printed beside it.
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
  "$bin" coll allreduce -b 8 -e 256M --stepfactor 4 "${ranks[@]}" --out "$out/coll-net.json" --no-progress

# The network described two ways: by the measured 2-rank allreduce itself
# (--inter-node-coll), and by two figures from its fit: bus bandwidth and
# half its alpha.
"$bin" predict "$out/mlp-net.json" "$out/coll-net.json" --ngpus 2 --format json \
  -o "$out/fit-net.json"
read -r gbps latency_us < <(python3 - "$out/fit-net.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["machine"]
ar = next(c for c in m["collectives"] if c["op"] == "allreduce")
print(1e-9 / ar["beta_seconds_per_byte"], 1e6 * ar["alpha_seconds"] / 2)
PY
)
echo "network transport's fit: $gbps GB/s, $latency_us us per step"

as_nodes=("$out/mlp-nvlink.json" --ngpus 2 --gpus-per-node 1)
"$bin" predict "${as_nodes[@]}" --inter-node-coll "$out/coll-net.json" --format json \
  -o "$out/predicted.json"
"$bin" predict "${as_nodes[@]}" --inter-node-coll "$out/coll-net.json" | tee "$out/predicted.txt"
"$bin" predict "${as_nodes[@]}" --inter-node "$gbps" --inter-node-latency "$latency_us" \
  --format json -o "$out/predicted-figures.json"
python3 - "$out/predicted.json" "$out/predicted-figures.json" "$out/mlp-net.json" <<'PY'
import json, sys
net = next(m for m in json.load(open(sys.argv[3]))["measurements"] if m["world_size"] == 2)
measured = net["aggregate"]["step"]["mean"]
comm = [sum(r["comm_seconds"]) / len(r["comm_seconds"]) for run in net["runs"] for r in run["ranks"]]
print(f"2 GPUs over the network transport: measured step {measured * 1e6:.2f} us "
      f"(exposed comm {1e6 * sum(comm) / len(comm):.2f} us)")
errors = []
for path, how in ((sys.argv[2], "the fit's figures (--inter-node, --inter-node-latency)"),
                  (sys.argv[1], "the measured allreduce (--inter-node-coll)")):
    pred = json.load(open(path))["workloads"][0]["predictions"][0]
    error = (pred["step_seconds"] - measured) / measured
    errors.append(error)
    print(f"  predicted from {how}: step {pred['step_seconds'] * 1e6:.2f} us "
          f"(comm {pred['terms']['comm_seconds'] * 1e6:.2f} us, "
          f"{pred['terms']['collective_from']}): error {100 * error:+.1f}%")
# The check: the prediction from the measured allreduce.
sys.exit(0 if abs(errors[-1]) <= 0.15 else 1)
PY
