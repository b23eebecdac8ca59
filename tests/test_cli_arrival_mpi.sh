#!/usr/bin/env bash
# Arrival skew end to end on 4 CPU ranks (docs/stragglers.md, "Arrival
# skew"): coll allreduce with a rank arriving 100 ms late at every
# collective (--inject late) names that rank in both forms, last in nearly
# every iteration, its median lateness within 20% of 100 ms (on this
# loaded 2-core machine a process waking beside 3 polling ones under
# mpirun was 10 ms later than asked, every time: 50 ms read 60.6), in
# threads mode, under mpirun and under mpirun with every process a host of
# its own (clocks aligned by the ping-pong, each offset within its error
# bound of the true 0); clean runs name nobody; every report follows the
# naming rule exactly (with its scheduling floor where 4 ranks share fewer
# cores); --arrival-times 0 records nothing (config.arrival_times false,
# recording runs true); every format shows it.
# Then mlp's gradient all-reduce through the runner, late and clean.
# $1 is the gpuscale binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
c=(coll allreduce --backend cpu -b 8 -e 8 -n 30 -w 2 -q)
late_us=100000

expect 0 "" -- "${c[@]}" --ranks 4 --inject late:rank=2,us=$late_us -o "$work/late_threads.json"
expect 0 "" -- "${c[@]}" --ranks 4 -o "$work/clean_threads.json"
expect 0 "" -- "${c[@]}" --ranks 2 --arrival-times 0 -o "$work/off.json"
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1 ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
  mpirun -np 4 --oversubscribe "$bin" "${c[@]}" --inject late:rank=1,us=$late_us \
    -o "$work/late_mpi.json" >"$work/mpi.out" 2>&1 || fail "mpirun late: $(cat "$work/mpi.out")"
  mpirun -np 4 --oversubscribe "$bin" "${c[@]}" -o "$work/clean_mpi.json" >"$work/mpi.out" 2>&1 ||
    fail "mpirun clean: $(cat "$work/mpi.out")"
  mpirun -np 4 --oversubscribe -x GPUSCALE_TEST_SEPARATE_HOSTS=1 "$bin" "${c[@]}" \
    --inject late:rank=3,us=$late_us -o "$work/late_hosts.json" >"$work/mpi.out" 2>&1 ||
    fail "mpirun separate hosts: $(cat "$work/mpi.out")"
fi
# mlp's gradient all-reduce through the runner: 2 runs of 20 timed steps.
mm=(run mlp --backend cpu --layers 50,32,16,3 --samples 1024 --iters 20 --warmup 1 --runs 2 -q)
expect 0 "" -- "${mm[@]}" --ranks 4 --inject late:rank=1,us=$late_us -o "$work/mlp_late_threads.json"
expect 0 "" -- "${mm[@]}" --ranks 4 -o "$work/mlp_clean_threads.json"
if command -v mpirun >/dev/null; then
  mpirun -np 4 --oversubscribe "$bin" "${mm[@]}" --inject late:rank=2,us=$late_us \
    -o "$work/mlp_late_mpi.json" >"$work/mpi.out" 2>&1 || fail "mpirun mlp: $(cat "$work/mpi.out")"
fi
for f in "$work"/mlp_*.json; do
  "$bin" report --format json -o "${f%.json}.report.json" "$f" || fail "report of $f failed"
done
python3 - "$work" "$late_us" <<'PY' || failures=$((failures + 1))
import glob, json, sys
work, late_us = sys.argv[1], float(sys.argv[2])
late_rank = {"mlp_late_threads": 1, "mlp_late_mpi": 2}
for path in sorted(glob.glob(work + "/mlp_*.report.json")):
    name = path.rsplit("/", 1)[1].split(".")[0]
    doc = json.load(open(path.replace(".report.json", ".json")))
    rows = [r for s in json.load(open(path))["series"] for r in s["rows"] if r["world_size"] == 4]
    m = [m for m in doc["measurements"] if m["world_size"] == 4][0]
    a, ra = m["arrival"], rows[0]["arrival"]
    assert a["iterations"] == 40 and len(a["sample"]) == 40, (path, a["iterations"])
    print(f"{name}: named {ra['named']}, last {a['last_rank']} in {ra['last_share']:.0%}, "
          f"lateness {a['lateness_seconds'] * 1e6:.1f} us, threshold "
          f"{ra['threshold_seconds'] * 1e6:.1f} us, waiting {a['wait_share']:.1%}")
    if name in late_rank:
        k = late_rank[name]
        assert ra["named"] == k and ra["last_share"] >= 0.9, (path, ra)
        assert abs(a["lateness_seconds"] - late_us * 1e-6) <= 0.2 * late_us * 1e-6, (path, a)
    else:
        assert ra["named"] is None, (path, ra)
PY

for f in "$work"/late_*.json "$work"/clean_*.json "$work/off.json"; do
  "$bin" report --format json -o "${f%.json}.report.json" "$f" || fail "report of $f failed"
done

python3 - "$work" "$late_us" <<'PY' || failures=$((failures + 1))
import glob, json, sys
work, late_us = sys.argv[1], float(sys.argv[2])
late_rank = {"late_threads": 2, "late_mpi": 1, "late_hosts": 3}
for path in sorted(glob.glob(work + "/*.report.json")):
    name = path.rsplit("/", 1)[1].split(".")[0]
    if name.startswith("mlp_"):
        continue
    doc = json.load(open(path.replace(".report.json", ".json")))
    rows = [r for s in json.load(open(path))["series"] for r in s["rows"]]
    assert rows, path
    for m, row in zip(doc["measurements"], rows):
        a, ra = m.get("arrival"), row["arrival"]
        if name == "off":
            assert a is None and ra is None and doc["config"]["arrival_times"] is False, path
            continue
        assert doc["config"]["arrival_times"] is True, path
        # The document: 30 iterations, all sampled, every rank's times.
        assert a["iterations"] == 30 and a["sample"] == list(range(30)), (path, a["iterations"])
        assert a["clock"] == "host", a["clock"]
        assert a["alignment"] == ("ping-pong" if name == "late_hosts" else "shared"), a
        assert sum(r["last"] for r in a["ranks"]) == 30, a["ranks"]
        for r in a["ranks"]:
            assert len(r["entry_seconds"]) == 30 and len(r["exit_seconds"]) == 30, r
            assert all(x <= y for x, y in zip(r["entry_seconds"], r["exit_seconds"])), r
            # One machine: the true offset is 0, within each bound.
            assert abs(r["offset_seconds"]) <= r["error_seconds"] + 1e-9, r
            if name != "late_hosts":
                assert r["offset_seconds"] == 0 and r["error_seconds"] == 0, r
        # The report applies the rule exactly, with the scheduling floor
        # where the 4 ranks of one host outnumber its cores.
        cores = doc["environment"]["cpu"]["logical_cores"]
        floor = 0.01 if 4 > cores else 0.0  # separate hosts in name only share them too
        assert ra["floor_seconds"] == floor, (path, ra["floor_seconds"], cores)
        # The material share: 1% of the iteration's period.
        threshold = max(a["noise_seconds"], a["alignment_error_seconds"],
                        a["exit_spread_seconds"], floor, 0.01 * a["period_seconds"])
        assert abs(ra["threshold_seconds"] - threshold) < 1e-12, (ra, threshold)
        expected = a["last_rank"] if a["lateness_low_seconds"] > threshold else None
        assert ra["named"] == expected, (path, ra, a)
        assert a["lateness_low_seconds"] <= a["lateness_seconds"] <= a["lateness_high_seconds"]
        print(f"{name} {m['collective']['bytes']} B in_place={m['collective']['in_place']}: "
              f"named {ra['named']}, last {a['last_rank']} in {ra['last_share']:.0%}, "
              f"lateness {a['lateness_seconds'] * 1e6:.1f} us "
              f"[{a['lateness_low_seconds'] * 1e6:.1f}, {a['lateness_high_seconds'] * 1e6:.1f}], "
              f"threshold {threshold * 1e6:.1f} us, waiting {a['wait_share']:.1%}")
        if name in late_rank:
            k = late_rank[name]
            assert ra["named"] == k and a["last_rank"] == k, (path, ra)
            assert ra["last_share"] >= 0.9, (path, ra["last_share"])
            # The separate hosts' processes also poll a heartbeat: on
            # this loaded machine the waking rank came up to 35% later
            # there; it is never early.
            high = 1.2 if name != "late_hosts" else 2.0
            assert 0.8 * late_us * 1e-6 <= a["lateness_seconds"] <= high * late_us * 1e-6, (path, a)
            assert a["wait_share"] > 0.3, (path, a["wait_share"])
        else:
            assert ra["named"] is None, (path, ra)
PY

# Every format names the late rank.
f="$work/late_threads.json"
"$bin" report "$f" >"$work/text" 2>&1 || fail "text report"
grep -q "Arrival skew per collective" "$work/text" || fail "text: no arrival table"
grep -Eq "allreduce 8 B float sum out-of-place +2 +100\.0% .* rank 2 \(host" "$work/text" ||
  grep -Eq "allreduce 8 B float sum out-of-place +2 +9[0-9]\.[0-9]% .* rank 2 \(host" "$work/text" ||
  fail "text: rank 2 not named: $(grep -A3 'Arrival skew' "$work/text")"
"$bin" report --format markdown "$f" | grep -q "Arrival skew per collective" || fail "markdown"
"$bin" report --format html -o "$work/r.html" "$f" && grep -q "Arrival skew per collective" \
  "$work/r.html" || fail "html"
"$bin" report --format csv -o "$work/r.csv" "$f" || fail "csv"
python3 - "$work/r.csv" <<'PY' || failures=$((failures + 1))
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows and all(r["arrival_named"] == "2" and r["arrival_last_rank"] == "2" for r in rows), rows
assert all(0.08 <= float(r["arrival_lateness_s"]) <= 0.12 for r in rows), rows
PY
"$bin" report --format csv -o "$work/clean.csv" "$work/clean_threads.json" || fail "csv clean"
python3 - "$work/clean.csv" <<'PY' || failures=$((failures + 1))
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows and all(r["arrival_named"] == "nobody" for r in rows), rows
PY

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all arrival checks passed"
