#!/usr/bin/env bash
# The straggler targets of issue 29 on NGPU GPUs (default 4; threads mode,
# then one process per GPU under mpirun when MPI=1):
#   1. a rank made 10% slower (slow:rank=1,factor=1.1) is named in 20 of 20
#      runs;
#   2. 20 clean runs name nobody;
#   3. a rank that starts every step 50 us late (late:rank=1,us=50) is named
#      and its lateness, estimated from the scores as (mean of its times -
#      mean of the median-of-others times), is within 20% of 50 us.
# The fourth target, the cost of recording arrival times on a 1 MiB
# allreduce, is bench/arrival.sh's.
# usage: bench/stragglers.sh [GPUSCALE_BINARY]; results in $OUT
# (default ./stragglers), the tally in $OUT/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/gpuscale}
out=${OUT:-stragglers}
ngpu=${NGPU:-4}
repeats=${REPEATS:-20}
mkdir -p "$out"
m=(voxelize --backend cuda -g "$ngpu" --runs 3 --iters 200 --warmup 5 -q --no-progress)
launch=()
[ "${MPI:-0}" = 1 ] && m=(voxelize --backend cuda --runs 3 --iters 200 --warmup 5 -q --no-progress) &&
  launch=(mpirun --allow-run-as-root --oversubscribe -np "$ngpu" -x LD_LIBRARY_PATH)

for i in $(seq 1 "$repeats"); do
  "${launch[@]}" "$bin" run "${m[@]}" --inject slow:rank=1,factor=1.1 -o "$out/slow$i.json" >/dev/null
  "${launch[@]}" "$bin" run "${m[@]}" -o "$out/clean$i.json" >/dev/null
  "${launch[@]}" "$bin" run "${m[@]}" --inject late:rank=1,us=50 -o "$out/late$i.json" >/dev/null
done
for f in "$out"/slow*.json "$out"/clean*.json "$out"/late*.json; do
  case $f in *.report.json) continue ;; esac
  "$bin" report --format json -o "${f%.json}.report.json" "$f"
done

python3 - "$out" <<'PY' | tee "$out/summary.txt"
import glob, json, statistics, sys
out = sys.argv[1]

def row(path):
    rows = [r for s in json.load(open(path))["series"] for r in s["rows"]]
    return rows[0]

def runs_of(path):  # the per-iteration device times of each rank, by run
    m = json.load(open(path))["measurements"][0]
    return [[r["device_seconds"] for r in sorted(run["ranks"], key=lambda r: r["rank"])]
            for run in m["runs"]]

tally = {}
for kind in ("slow", "clean", "late"):
    paths = sorted(glob.glob(f"{out}/{kind}[0-9]*.report.json"))
    named = [row(p)["stragglers"]["named"] for p in paths]
    tally[kind] = (sum(n == 1 for n in named), sum(n is None for n in named), len(paths))
    rel = [row(p)["stragglers"]["ranks"][1]["relative"] for p in paths]
    print(f"{kind}: rank 1 named in {tally[kind][0]} of {len(paths)}, nobody in "
          f"{tally[kind][1]}; rank 1's relative score {min(rel):.3f} .. {max(rel):.3f}")
    if kind == "late":
        est = []
        for p in paths:
            diffs = []
            for t in runs_of(p.replace(".report.json", ".json")):
                for i in range(min(len(x) for x in t)):
                    others = statistics.median(t[k][i] for k in range(len(t)) if k != 1)
                    diffs.append(t[1][i] - others)
            est.append(statistics.mean(diffs) * 1e6)
        ok = sum(abs(e - 50) <= 10 for e in est)
        print(f"late: estimated lateness {min(est):.1f} .. {max(est):.1f} us; within 20% of 50 us "
              f"in {ok} of {len(est)}")
print("target 1 (slow named 20/20):", "met" if tally["slow"][0] == tally["slow"][2] else "NOT met")
print("target 2 (clean nobody 20/20):", "met" if tally["clean"][1] == tally["clean"][2] else "NOT met")
print("target 3 (late named):", "met" if tally["late"][0] == tally["late"][2] else "NOT met")
PY
