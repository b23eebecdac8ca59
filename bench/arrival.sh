#!/usr/bin/env bash
# The arrival-skew targets of issue 29 on NGPU GPUs (default 2; threads
# mode, or one process per GPU under mpirun when MPI=1), with coll's
# 1 MiB out-of-place allreduce (docs/stragglers.md, "Arrival skew"):
#   1. the cost of recording arrival times, measured inside one process
#      and one communicator by `coll --arrival-cost`: PAIRS (default 100)
#      pairs of 4 blocks of BLOCK (default 200) timed iterations, recording
#      in 2 blocks of each (ABBA or BAAB), the cost the median of the pairs'
#      relative differences with its 95% distribution-free interval:
#      target met when the interval lies below 1%, missed when above it,
#      else undecided. (Separate runs with and without recording differed
#      by up to 4% among themselves, more than the cost to be shown.)
#   2. a rank arriving 50 us late at every allreduce (late:rank=1,us=50,
#      a spin kernel on its stream; LATE_ITERS, default 500, iterations)
#      is named, last in nearly every iteration, its median lateness within
#      20% of 50 us;
#   3. clean runs name nobody (ROUNDS, default 3, runs of ITERS, default
#      2000, iterations with --arrival-times 1).
# usage: bench/arrival.sh [GPUSCALE_BINARY]; results in $OUT (default
# ./arrival), the tally in $OUT/summary.txt; exit 1 when a target is missed
# or undecided.
# BACKEND=cpu LATE_US=100000 rehearses the script on CPU ranks (NGPU of
# them); the 1% target is the GPU's.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/gpuscale}
out=${OUT:-arrival}
ngpu=${NGPU:-2}
rounds=${ROUNDS:-3}
iters=${ITERS:-2000}
backend=${BACKEND:-cuda}
late_us=${LATE_US:-50}
block=${BLOCK:-200}
pairs=${PAIRS:-100}
mkdir -p "$out"
c=(coll allreduce --backend "$backend" -b 1M -e 1M --place out --check 0 -w 50 -q)
launch=()
if [ "${MPI:-0}" = 1 ]; then
  launch=(mpirun --allow-run-as-root --oversubscribe -np "$ngpu" -x LD_LIBRARY_PATH)
elif [ "$backend" = cpu ]; then
  c+=(--ranks "$ngpu")
else
  c+=(-g "$ngpu")
fi

# The cost: blocks side by side in one process (no document; its lines
# are kept in cost.txt).
"${launch[@]}" "$bin" "${c[@]}" --arrival-cost "$block" -n $((4 * block * pairs)) >"$out/cost.txt"
for i in $(seq 1 "$rounds"); do
  "${launch[@]}" "$bin" "${c[@]}" -n "$iters" --arrival-times 1 -o "$out/on$i.json" >/dev/null
done
"${launch[@]}" "$bin" "${c[@]}" -n "${LATE_ITERS:-500}" --arrival-times 1 --inject late:rank=1,us="$late_us" -o "$out/late.json" \
  >/dev/null
for f in "$out"/on*.json "$out"/late.json; do
  case $f in *.report.json) continue ;; esac
  "$bin" report --format json -o "${f%.json}.report.json" "$f"
done

python3 - "$out" "$rounds" "$late_us" <<'PY' | tee "$out/summary.txt"
import json, re, sys
out, rounds, late = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) * 1e-6

def arrival(path):
    return [r for s in json.load(open(path))["series"] for r in s["rows"]][0]["arrival"]

ok = True
text = open(f"{out}/cost.txt").read()
m = re.search(r"^cost (\S+) \[(\S+), (\S+)\]: (under 1%|over 1%|undecided)$", text, re.M)
detail = re.search(r"^# per iteration \(mean\): .*$", text, re.M)
blocks = re.search(r"^# \d+ B out-of-place: (.*?), recording", text, re.M)
if not m:
    print("1. recording cost: no figure in cost.txt:\n" + text)
    ok = False
else:
    verdict = {"under 1%": "met", "over 1%": "missed"}.get(m.group(4), "undecided")
    print(f"1. recording cost (coll --arrival-cost, {blocks.group(1) if blocks else '?'}): "
          f"{m.group(1)} [{m.group(2)}, {m.group(3)}], target < 1%: {verdict}"
          + (f" ({detail.group(0)[2:]})" if detail else ""))
    ok &= verdict == "met"
r = arrival(f"{out}/late.report.json")
print(f"2. late rank 1 ({late * 1e6:g} us): named {r['named']}, last in {r['last_share']:.0%}, "
      f"median lateness {r['lateness_seconds'] * 1e6:.1f} us "
      f"[{r['lateness_low_seconds'] * 1e6:.1f}, {r['lateness_high_seconds'] * 1e6:.1f}], "
      f"threshold {r['threshold_seconds'] * 1e6:.2f} us, waiting {r['wait_share']:.1%}")
ok &= r["named"] == 1 and abs(r["lateness_seconds"] - late) <= 0.2 * late
clean = [arrival(f"{out}/on{i}.report.json") for i in range(1, rounds + 1)]
for a in clean:
    print(f"3. clean: named {a['named']}, last rank {a['last_rank']} in {a['last_share']:.0%}, "
          f"lateness {a['lateness_seconds'] * 1e6:.2f} us "
          f"[{a['lateness_low_seconds'] * 1e6:.2f}, {a['lateness_high_seconds'] * 1e6:.2f}], "
          f"threshold {a['threshold_seconds'] * 1e6:.2f} us")
ok &= all(a["named"] is None for a in clean)
print("all targets met" if ok else "a target was missed or undecided")
sys.exit(0 if ok else 1)
PY
