#!/usr/bin/env bash
# Stragglers end to end on 4 CPU ranks (threads, then one process per rank
# under mpirun): a rank made half again slower (--inject slow:rank=1,factor=1.5) is
# named, clean runs name nobody, and every report follows the naming rule of
# docs/statistics.md ("Straggler scores") for its host (nobody named where
# the 4 ranks outnumber its cores, docs/stragglers.md: the judgement is
# inconclusive there with the reason). A loaded 2-core machine moves the
# scores, so the test runs several measurements of each kind and checks
# (1) the rule and the judgement (named, inconclusive with its reason,
# nobody) in every report, exactly, (2) that the slowed rank has the
# largest relative score in every slowed run of threads, (3) that it is
# named (or, on shared cores, the suspect) in most slowed runs, (4) that
# most clean runs name nobody, and under mpirun the honest outcome: the
# slowed rank named alone or an inconclusive judgement, never a clean rank
# named. On 2 ranks, as many as CI's cores, the slowed rank is named.
# Every format shows an inconclusive judgement (a document made for it).
# Also: the late fault's usage errors, its effect on a rank's steps and its
# record in run's and coll's documents. $1 is the gpuscale binary.
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
    mpi = "/slow3" in path or "/clean3" in path
    doc = json.load(open(path.replace(".report.json", ".json")))
    cpu = doc["environment"]["cpu"]
    rows = [r for s in json.load(open(path))["series"] for r in s["rows"]]
    assert len(rows) == 1, path
    g = rows[0]["stragglers"]
    assert g is not None and len(g["ranks"]) == 4, (path, g)
    # (1) the rule: a straggler exactly where the interval's low end clears
    # the threshold, 1.04, on a host with cores enough for the 4 CPU ranks;
    # the one named has the largest relative score. Where they outnumber
    # the host's logical cores nobody is named: "inconclusive" exactly where
    # a rank clears 1.04, the one with the largest score, its reason the
    # host's ranks, cores and load average and the rank's figures
    # (docs/stragglers.md).
    shared = 4 > cpu["logical_cores"]
    threshold = g["threshold"]
    assert abs(threshold - 1.04) < 1e-12, (path, threshold)
    above = [k for k in g["ranks"] if k["relative_low"] > threshold]
    flagged = [] if shared else [k["rank"] for k in above]
    assert [k["rank"] for k in g["ranks"] if k["straggler"]] == flagged, (path, g)
    best = max(above, key=lambda k: k["relative"])["rank"] if above else None
    assert g["named"] == (None if shared else best), (path, g["named"], best)
    want = "nobody" if not above else "inconclusive" if shared else "named"
    assert g["judgement"] == want, (path, g["judgement"], want)
    if shared:
        c = g["shared_cores"]
        assert (c["host"], c["ranks"], c["cores"]) == (doc["environment"]["host"], 4,
                                                       cpu["logical_cores"]), c
        assert abs(c["load_average"] - cpu["load_average"]) < 1e-9, (c, cpu)
    else:
        assert g["shared_cores"] is None, (path, g["shared_cores"])
    if want == "inconclusive":
        s = max(above, key=lambda k: k["relative"])
        head = "%d ranks share %d CPUs of host %s (load average %.1f): rank %d scored %.2fx" % (
            4, cpu["logical_cores"], g["shared_cores"]["host"], cpu["load_average"], s["rank"],
            s["relative"])
        assert g["reason"].startswith(head), (path, g["reason"], head)
    else:
        assert g["reason"] is None, (path, g["reason"])
    for k in g["ranks"]:
        assert k["relative_low"] <= k["relative"] <= k["relative_high"], (path, k)
    runs[kind] += 1
    # Named, or on shared cores the suspect of an inconclusive judgement.
    named[kind] += g["named"] is not None or (want == "inconclusive" and kind == "slow" and
                                              best == 1)
    rel = [k["relative"] for k in g["ranks"]]
    print(f"{path.rsplit('/', 1)[1]}: {g['judgement']} {g['named']}, relative "
          + ", ".join(f"{x:.3f} [{k['relative_low']:.3f}]" for x, k in zip(rel, g["ranks"])))
    if mpi:
        # Under mpirun the honest outcome: the slowed rank named alone, or
        # inconclusive with the reason; never a clean rank named (on CI's
        # 2 cores a clean rank 0 scored 1.33x [1.26] once, in this test).
        assert g["named"] in ((None, 1) if kind == "slow" else (None,)), (path, g["named"])
        assert kind == "clean" or flagged in ([], [1]), (path, flagged)
        assert g["named"] is not None or g["judgement"] in ("nobody", "inconclusive"), path
    if kind == "slow" and not mpi:
        # (2) the slowed rank stands out in every slowed run of threads, and
        # (3) is the one named whenever someone is.
        assert rel.index(max(rel)) == 1, (path, rel)
        assert g["named"] in (None, 1), (path, g["named"])
        # Four ranks on two cores beside another test: a 10% slowdown
        # drowned in time-slicing here (1.01 seen), so the test slows by
        # half; bench/stragglers.sh holds the 10% target on GPUs.
        assert 1.2 < rel[1] < 3.0, (path, rel)
# (3) and (4): most slowed runs name rank 1 (or make it the suspect on
# shared cores), most clean runs name nobody.
assert 2 * named["slow"] > runs["slow"], named
assert 2 * named["clean"] < runs["clean"], named
PY

# Two ranks, no more than the cores of any machine this runs on: the rank
# slowed by half is named in every run (its score 1.5x, far from 1.04).
for i in 1 2 3; do
  "$bin" run "${m[@]}" --ranks 2 --inject slow:rank=1,factor=1.5 -o "$work/pair$i.json" \
    >/dev/null || fail "2-rank slowed run $i failed"
  "$bin" report --format json -o "$work/pair$i.rep.json" "$work/pair$i.json" ||
    fail "report of 2-rank run $i failed"
done
python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
for i in (1, 2, 3):
    g = json.load(open(f"{sys.argv[1]}/pair{i}.rep.json"))["series"][0]["rows"][0]["stragglers"]
    rel = [(round(k["relative"], 3), round(k["relative_low"], 3)) for k in g["ranks"]]
    print(f"pair{i}: {g['judgement']} {g['named']} {rel}")
    assert g["shared_cores"] is None, g
    assert (g["judgement"], g["named"]) == ("named", 1), (i, g["judgement"], rel)
PY

# Every format shows the judgement. A document of 4 CPU ranks, rank 2
# taking 1.12 times the others' time in every iteration (relative 1.12x
# [1.12, 1.12]), on a host of 2 logical cores at load average 7.2: 1.12 is
# above 1.04, but nobody is named there, so the judgement is inconclusive;
# on 8 cores rank 2 is named.
python3 - "$work/clean1.json" "$work/shared.json" "$work/spare.json" <<'PY' ||
import json, sys
d = json.load(open(sys.argv[1]))
d["environment"]["host"] = "node-a"
d["environment"]["cpu"].update(logical_cores=2, load_average=7.2)
for run in d["measurements"][0]["runs"]:
    n = len(run["step_seconds"])
    base = [0.01 * (1 + 0.1 * (i % 3)) for i in range(n)]
    for r in run["ranks"]:
        r["host"] = "node-a"
        r["wall_seconds"] = [t * (1.12 if r["rank"] == 2 else 1.0) for t in base]
    run["step_seconds"] = [1.12 * t for t in base]
json.dump(d, open(sys.argv[2], "w"))
d["environment"]["cpu"]["logical_cores"] = 8
json.dump(d, open(sys.argv[3], "w"))
PY
  fail "cannot write the shared-cores documents"
for fmt in text markdown html csv json; do
  for f in shared spare; do
    "$bin" report --format $fmt -o "$work/$f.out.$fmt" "$work/$f.json" || fail "$fmt report of $f"
  done
done
python3 - "$work" <<'PY' || failures=$((failures + 1))
import csv, html, json, re, sys
w = sys.argv[1]
reason = ("4 ranks share 2 CPUs of host node-a (load average 7.2): rank 2 scored 1.12x "
          "[1.12, 1.12], above 1.04, and the scheduler's shares of the CPUs can explain it")
def words(path):  # the text with its line breaks and markup gone
    t = html.unescape(re.sub(r"<[^>]*>", " ", open(path).read())) if path.endswith("html") \
        else open(path).read()
    return " ".join(t.replace("*", "").split())
unnamed = ("is above 1.04x; nobody is named here, as " + reason.split(":")[0] +
           ": the scheduler's shares decide each rank's time")
for fmt in ("text", "markdown", "html"):
    t = words(f"{w}/shared.out.{fmt}")
    assert "Stragglers: inconclusive: " + reason + ". Scores of wall times" in t, (fmt, t)
    assert unnamed in t, (fmt, t)
    assert "Stragglers: rank 2 (host node-a). Scores" in words(f"{w}/spare.out.{fmt}"), fmt
row = list(csv.DictReader(open(w + "/shared.out.csv")))[0]
assert (row["straggler"], row["straggler_rank"], row["straggler_reason"]) == (
    "inconclusive", "2", reason), row
assert abs(float(row["straggler_relative_low"]) - 1.12) < 1e-9, row
row = list(csv.DictReader(open(w + "/spare.out.csv")))[0]
assert (row["straggler"], row["straggler_host"], row["straggler_reason"]) == ("2", "node-a", ""), row
g = json.load(open(w + "/shared.out.json"))["series"][0]["rows"][0]["stragglers"]
assert (g["judgement"], g["named"], g["reason"]) == ("inconclusive", None, reason), g
assert abs(g["threshold"] - 1.04) < 1e-12, g
assert g["shared_cores"] == {"host": "node-a", "ranks": 4, "cores": 2, "load_average": 7.2}, \
    g["shared_cores"]
assert [k["straggler"] for k in g["ranks"]] == [False] * 4, g
PY

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all straggler checks passed"
