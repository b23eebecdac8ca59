#!/usr/bin/env bash
# Stragglers end to end on 4 CPU ranks (threads, then one process per rank
# under mpirun): a rank made half again slower (--inject slow:rank=1,factor=1.5) is
# named, clean runs name nobody, and every report follows the naming rule of
# docs/statistics.md ("Straggler scores"). A loaded 2-core machine moves the
# scores, so the test runs several measurements of each kind and checks (1)
# the rule in every report, exactly, (2) that the slowed rank has the largest
# relative score in every slowed run, (3) that it is named in most of them,
# and (4) that most clean runs name nobody. Also: the late fault's usage
# errors, its effect on a rank's steps and its record in run's and coll's
# documents. $1 is the gpuscale binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
m=(voxelize --backend cpu --points 1000000 --grid 64,64,64 --warmup 2 --runs 3 --iters 20 -q)

# The late fault: parsed, refused where it names no rank, recorded by coll.
expect 2 "unknown fault kind 'lat'" -- run "${m[@]}" --ranks 2 --inject lat:rank=1,us=5
expect 2 "us" -- run "${m[@]}" --ranks 2 --inject late:rank=1,us=-5
expect 2 "rank 5, but there are 4 ranks" -- coll allreduce --backend cpu --ranks 4 -b 1K -e 1K \
  --inject late:rank=5,us=50
expect 0 "" -- coll allreduce --backend cpu --ranks 4 -b 1K -e 1K -n 20 -w 2 \
  --inject late:rank=2,us=200 -o "$work/coll.json"
python3 - "$work/coll.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
for m in d["measurements"]:
    assert m["faults"] == [{"kind": "late", "rank": 2, "us": 200}], m.get("faults")
PY

# The runner's late fault: every step of rank 1 starts 5 ms late (its
# samples are at least that long) and the document records it.
expect 0 "" -- run voxelize --backend cpu --points 20000 --grid 32,32,32 --warmup 1 --runs 1 \
  --iters 10 --ranks 2 -q --inject late:rank=1,us=5000 -o "$work/late.json"
python3 - "$work/late.json" <<'PY' || failures=$((failures + 1))
import json, sys
m = json.load(open(sys.argv[1]))["measurements"][0]
assert m["faults"] == [{"kind": "late", "rank": 1, "us": 5000}], m.get("faults")
ranks = {r["rank"]: r for r in m["runs"][0]["ranks"]}
assert min(ranks[1]["wall_seconds"]) >= 0.005, ranks[1]["wall_seconds"]
PY

# Threads: 2 slowed and 2 clean runs; under mpirun one of each.
for i in 1 2; do
  "$bin" run "${m[@]}" --ranks 4 --inject slow:rank=1,factor=1.5 -o "$work/slow$i.json" >/dev/null ||
    fail "slowed run $i failed"
  "$bin" run "${m[@]}" --ranks 4 -o "$work/clean$i.json" >/dev/null || fail "clean run $i failed"
done
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1 ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
  mpirun -np 4 --oversubscribe "$bin" run "${m[@]}" --inject slow:rank=1,factor=1.5 \
    -o "$work/slow3.json" >"$work/mpi.out" 2>&1 || fail "mpirun slowed run: $(cat "$work/mpi.out")"
  mpirun -np 4 --oversubscribe "$bin" run "${m[@]}" -o "$work/clean3.json" >"$work/mpi.out" 2>&1 ||
    fail "mpirun clean run: $(cat "$work/mpi.out")"
fi
for f in "$work"/slow*.json "$work"/clean*.json; do
  "$bin" report --format json -o "${f%.json}.report.json" "$f" || fail "report of $f failed"
done
python3 - "$work" <<'PY' || failures=$((failures + 1))
import glob, json, sys
named = {"slow": 0, "clean": 0}
runs = {"slow": 0, "clean": 0}
for path in sorted(glob.glob(sys.argv[1] + "/*.report.json")):
    kind = "slow" if "/slow" in path else "clean"
    rows = [r for s in json.load(open(path))["series"] for r in s["rows"]]
    assert len(rows) == 1, path
    g = rows[0]["stragglers"]
    assert g is not None and len(g["ranks"]) == 4, (path, g)
    # (1) the rule: a straggler exactly where the interval's low end clears
    # the threshold; the one named has the largest relative score.
    threshold = g["threshold"]
    assert threshold == 1.04, threshold
    flagged = [k["rank"] for k in g["ranks"] if k["relative_low"] > threshold]
    assert [k["rank"] for k in g["ranks"] if k["straggler"]] == flagged, (path, g)
    best = max(flagged, key=lambda r: g["ranks"][r]["relative"]) if flagged else None
    assert g["named"] == best, (path, g["named"], best)
    for k in g["ranks"]:
        assert k["relative_low"] <= k["relative"] <= k["relative_high"], (path, k)
    runs[kind] += 1
    named[kind] += g["named"] is not None
    rel = [k["relative"] for k in g["ranks"]]
    print(f"{path.rsplit('/', 1)[1]}: named {g['named']}, relative "
          + ", ".join(f"{x:.3f}" for x in rel))
    # Under mpirun 4 processes share the 2 cores by the scheduler's turns,
    # which can make any of them the slowest for a whole run (seen in CI:
    # ranks 0 and 2 at 1.21 and 1.22, the slowed rank 1 at 1.00, rank 3 at
    # 0.64): that run counts towards (3) only.
    if kind == "slow" and "/slow3" not in path:
        # (2) the slowed rank stands out in every slowed run of threads, and
        # (3) is the one named whenever someone is.
        assert rel.index(max(rel)) == 1, (path, rel)
        assert g["named"] in (None, 1), (path, g["named"])
        # Four ranks on two cores beside another test: a 10% slowdown
        # drowned in time-slicing here (1.01 seen), so the test slows by
        # half; bench/stragglers.sh holds the 10% target on GPUs.
        assert 1.2 < rel[1] < 3.0, (path, rel)
# (3) and (4): most slowed runs name rank 1, most clean runs name nobody.
assert 2 * named["slow"] > runs["slow"], named
assert 2 * named["clean"] < runs["clean"], named
PY

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all straggler checks passed"
