#!/usr/bin/env bash
# What recording arrival times (--arrival-times, docs/stragglers.md,
# "Arrival skew") costs a whole workload run on 2 GPUs: PAIRS (default 4)
# pairs of runs with --arrival-times 0 and 1 in ABBA / BAAB order, the
# same work in every run.
#   WORKLOAD=llm (default): one replica of --tp 2, decode at batch BATCH
#     (default 8) of MODEL (default llama-1b: its short steps make the
#     stamps' two one-thread kernels a larger share than llama-8b's
#     would), SAMPLES (default 32) fixed-length requests; the figure per
#     run is its median TPOT. Measured: 60 s for 4 pairs (2 x H200,
#     2026-11-28).
#   WORKLOAD=mlp: data parallel (-g 2), --preset large at --batch BATCH
#     (default 8192: by its flops an fp32 step of 1-3 ms), ITERS (default
#     500) timed steps in each of 3 runs; every step's gradient all-reduce
#     is recorded (two CUDA events per step); the figure per run is the
#     median step of the measurement (aggregate.step.median, over its
#     runs' step_seconds). Measured: 53 s for 4 pairs with ITERS=300
#     (2 x H200, 2026-11-28). On CUDA the runner records only when
#     asked (its default is off there), so the "on" runs pass 1.
# The cost of each pair is the relative difference of its figures (on
# against off); the cost is the median of the pairs, its interval the
# lowest and highest pair (with 4 pairs, a 87.5% distribution-free
# interval for the median; 6 pairs give 96.9%). Verdict: "under 1%" when
# the highest pair is below 1%, "over 1%" when the lowest is above, else
# "undecided".
# BACKEND=cpu runs the same on 2 CPU ranks with tiny shapes, in seconds:
# a check of the script, not a cost of the GPUs.
# usage: [WORKLOAD=llm|mlp] [BACKEND=cuda|cpu] bench/arrival_cost_runs.sh
#        [GPUSCALE_BINARY]; documents and summary.txt in $OUT (default
#        ./arrival-cost-runs-WORKLOAD).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/gpuscale}
workload=${WORKLOAD:-llm}
backend=${BACKEND:-cuda}
out=${OUT:-arrival-cost-runs-$workload}
pairs=${PAIRS:-4}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
case $backend in
  cuda) devices=(--backend cuda -g 2) ;;
  cpu) devices=(--backend cpu --ranks 2) ;;
  *) echo "BACKEND=$backend: cuda or cpu" >&2; exit 2 ;;
esac
case $workload:$backend in
  llm:cuda) shape=(--model "${MODEL:-llama-1b}" --batch "${BATCH:-8}" --samples "${SAMPLES:-32}"
                   --input-min 128 --input-max 128 --output-min 128 --output-max 128 --runs 3) ;;
  llm:cpu) shape=(--model tiny --batch 4 --samples 8 --input-min 8 --input-max 8
                  --output-min 8 --output-max 8 --runs 2) ;;
  mlp:cuda) shape=(--preset large --batch "${BATCH:-8192}" --iters "${ITERS:-500}" --runs 3) ;;
  mlp:cpu) shape=(--layers 50,32,16,3 --samples 1024 --iters 20 --runs 2) ;;
  *) echo "WORKLOAD=$workload: llm or mlp" >&2; exit 2 ;;
esac
[ "$workload" = llm ] && shape+=(--tp 2)
r=(run "$workload" "${devices[@]}" "${shape[@]}" --no-progress -q)
for p in $(seq 1 "$pairs"); do
  order="0 1"
  [ $((p % 2)) = 0 ] && order="1 0"
  for a in $order; do
    "$bin" "${r[@]}" --arrival-times "$a" -o "$out/p$p-a$a.json" >/dev/null
  done
done
python3 - "$out" "$pairs" "$workload" "$backend" <<'PY' | tee "$out/summary.txt"
import json, sys
out, pairs, workload, backend = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
# The CPU backend's step is its own reference: llm skips the comparison there.
verified = {"passed"} if backend == "cuda" else {"passed", "skipped"}
name = "TPOT" if workload == "llm" else "median step"
def figure(p, a):
    doc = json.load(open(f"{out}/p{p}-a{a}.json"))
    m = doc["measurements"][0]
    assert m["status"] == "ok", (p, a, m["status"], m.get("error"))
    assert m["verification"]["status"] in verified, (p, a, m["verification"])
    assert doc["config"]["arrival_times"] is (a == 1), (p, a, "config.arrival_times")
    assert (a == 1) == ("arrival" in m), (p, a, "arrival member")
    if workload == "llm":
        return m["llm"]["tpot_seconds"]["median"]
    return m["aggregate"]["step"]["median"]
costs = []
for p in range(1, pairs + 1):
    off, on = figure(p, 0), figure(p, 1)
    costs.append(on / off - 1)
    print(f"pair {p}: {name} off {off * 1e3:.4f} ms, on {on * 1e3:.4f} ms, {costs[-1]:+.2%}")
costs.sort()
med = costs[len(costs) // 2] if len(costs) % 2 else (costs[len(costs) // 2 - 1] + costs[len(costs) // 2]) / 2
low, high = costs[0], costs[-1]
verdict = "under 1%" if high < 0.01 else "over 1%" if low > 0.01 else "undecided"
level = 1 - 2 * 0.5 ** pairs
print(f"{workload} ({backend}) cost of {name} {med:+.2%} [{low:+.2%}, {high:+.2%}] "
      f"({level:.1%} interval of {pairs} pairs): {verdict}")
PY
