#!/usr/bin/env bash
# The cost of llm's device-stamped arrival times on CUDA (docs/stragglers.md,
# "llm's tensor-parallel all-reduces"): one replica of --tp 2 on 2 GPUs,
# decode at batch BATCH (default 8) of MODEL (default llama-1b: its short
# steps make the stamps' two one-thread kernels a larger share than
# llama-8b's would), PAIRS (default 4) pairs of runs with --arrival-times 0
# and 1 in ABBA / BAAB order, every run the same fixed-length requests.
# The cost of each pair is the relative difference of its median TPOT (on
# against off); the figure is the median of the pairs, its interval the
# lowest and highest pair (with 4 pairs, a 87.5% distribution-free
# interval for the median; 6 pairs give 96.9%). Verdict: "under 1%" when
# the highest pair is below 1%, "over 1%" when the lowest is above, else
# "undecided".
# usage: bench/llm_arrival_cost.sh [GPUSCALE_BINARY]; documents and
# summary.txt in $OUT (default ./llm-arrival-cost).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/gpuscale}
out=${OUT:-llm-arrival-cost}
pairs=${PAIRS:-4}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
l=(run llm --backend cuda --model "${MODEL:-llama-1b}" -g 2 --tp 2 --batch "${BATCH:-8}"
   --samples "${SAMPLES:-32}" --input-min 128 --input-max 128 --output-min 128 --output-max 128
   --runs 3 --no-progress -q)
for p in $(seq 1 "$pairs"); do
  order="0 1"
  [ $((p % 2)) = 0 ] && order="1 0"
  for a in $order; do
    "$bin" "${l[@]}" --arrival-times "$a" -o "$out/p$p-a$a.json" >/dev/null
  done
done
python3 - "$out" "$pairs" <<'PY' | tee "$out/summary.txt"
import json, sys
out, pairs = sys.argv[1], int(sys.argv[2])
def tpot(p, a):
    m = json.load(open(f"{out}/p{p}-a{a}.json"))["measurements"][0]
    assert m["verification"]["status"] == "passed", (p, a, m["verification"])
    assert (a == 1) == ("arrival" in m), (p, a, "arrival member")
    return m["llm"]["tpot_seconds"]["median"]
costs = []
for p in range(1, pairs + 1):
    off, on = tpot(p, 0), tpot(p, 1)
    costs.append(on / off - 1)
    print(f"pair {p}: TPOT off {off * 1e3:.4f} ms, on {on * 1e3:.4f} ms, {costs[-1]:+.2%}")
costs.sort()
med = costs[len(costs) // 2] if len(costs) % 2 else (costs[len(costs) // 2 - 1] + costs[len(costs) // 2]) / 2
low, high = costs[0], costs[-1]
verdict = "under 1%" if high < 0.01 else "over 1%" if low > 0.01 else "undecided"
level = 1 - 2 * 0.5 ** pairs
print(f"cost {med:+.2%} [{low:+.2%}, {high:+.2%}] ({level:.1%} interval of {pairs} pairs): {verdict}")
PY
