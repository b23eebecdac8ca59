#!/usr/bin/env bash
# Arrival skew of mlp's pipeline (--pp) on the CPU backend
# (docs/stragglers.md, "mlp's pipeline stages"): 2 replicas of 2 stages
# (4 ranks; rank r is stage r % 2 of replica r / 2) sum their gradients in
# one group per stage, and the document keeps one arrival summary per
# stage group ("arrival_groups": its stage, member k = replica k, and
# replica k's global rank). A rank 100 ms late at every step (--inject
# late) is named as its replica in its stage group, with its median
# lateness within 20% of 100 ms in threads mode (under mpirun, where
# processes poll on shared cores, within 60-200%), and no other replica is
# named anywhere (the late rank's partner stage waits for it through the
# pipeline, so its group may name the same replica); a clean run names nobody (where the 4
# ranks outnumber the cores the 10 ms scheduling floor applies: the test
# checks the rule exactly). In threads mode, under mpirun and under mpirun
# with every process a host of its own (clocks aligned by the ping-pong).
# Every format shows the groups. $1 is the gpuscale binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
late_us=100000
mm=(run mlp --backend cpu --layers 50,32,16,3 --samples 1024 --iters 20 --warmup 1 --runs 2
    --pp 2 --micro-batches 2 -q)

expect 0 "" -- "${mm[@]}" --ranks 4 --inject late:rank=2,us=$late_us -o "$work/late_threads.json"
expect 0 "" -- "${mm[@]}" --ranks 4 -o "$work/clean_threads.json"
# One replica: the stage groups have one member, nothing is recorded.
expect 0 "" -- "${mm[@]}" --ranks 2 -o "$work/one_replica.json"
# mpi4 NAME ARGS...: mpirun of 4 processes with ARGS, its document $work/NAME.json.
mpi4() {
  local name=$1
  shift
  mpirun -np 4 --oversubscribe "$@" -o "$work/$name.json" >"$work/mpi.out" 2>&1 ||
    fail "mpirun $name: $(cat "$work/mpi.out")"
}
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1 ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
  mpi4 late_mpi "$bin" "${mm[@]}" --inject late:rank=1,us=$late_us
  mpi4 clean_mpi "$bin" "${mm[@]}"
  # Every process a host of its own: the clocks aligned by the ping-pong.
  mpi4 late_hosts -x GPUSCALE_TEST_SEPARATE_HOSTS=1 "$bin" "${mm[@]}" --inject late:rank=3,us=$late_us
fi
# The documents measured, each with its JSON report beside it.
names=()
for doc in "$work"/*.json; do
  names+=("$(basename "$doc" .json)")
  "$bin" report --format json -o "${doc%.json}.report" "$doc" || fail "report of $doc failed"
done

python3 - "$work" "$late_us" "${names[@]}" <<'PY' || failures=$((failures + 1))
import json, sys
work, late_us, names = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
late_rank = {"late_threads": 2, "late_mpi": 1, "late_hosts": 3}
assert len(names) in (3, 6), names
for name in names:
    doc = json.load(open(f"{work}/{name}.json"))
    m = doc["measurements"][0]
    row = json.load(open(f"{work}/{name}.report"))["series"][0]["rows"][0]
    # The pipeline's ranks meet in groups: no summary over the world.
    assert "arrival" not in m and row["arrival"] is None, (name, row["arrival"])
    if name == "one_replica":
        assert "arrival_groups" not in m and row["arrival_groups"] is None, name
        continue
    groups, rgroups = m["arrival_groups"], row["arrival_groups"]
    assert [g["stage"] for g in groups] == [0, 1], groups
    assert [g["global_ranks"] for g in groups] == [[0, 2], [1, 3]], groups
    cores = doc["environment"]["cpu"]["logical_cores"]
    hosts = name == "late_hosts"
    for g, rg in zip(groups, rgroups):
        # The document: 2 runs of 20 steps, all sampled, both replicas'
        # times; "rank" is the replica index in the group.
        assert g["iterations"] == 40 and g["sample"] == list(range(40)), (name, g["iterations"])
        assert g["clock"] == "host" and g["alignment"] == ("ping-pong" if hosts else "shared"), g
        assert [r["rank"] for r in g["ranks"]] == [0, 1], g["ranks"]
        assert sum(r["last"] for r in g["ranks"]) == 40, g["ranks"]
        for r in g["ranks"]:
            assert len(r["entry_seconds"]) == 40 and len(r["exit_seconds"]) == 40, r
            assert all(x <= y for x, y in zip(r["entry_seconds"], r["exit_seconds"])), r
            assert abs(r["offset_seconds"]) <= r["error_seconds"] + 1e-9, r
        # The report: the same group, the rule applied exactly (the floor
        # where the world's 4 ranks share a host's fewer cores).
        assert rg["stage"] == g["stage"] and rg["global_ranks"] == g["global_ranks"], rg
        floor = 0.01 if not hosts and 4 > cores else 0.0
        assert rg["floor_seconds"] == floor, (name, rg["floor_seconds"], cores)
        # The material share: 1% of the iteration's period.
        threshold = max(g["noise_seconds"], g["alignment_error_seconds"],
                        g["exit_spread_seconds"], floor, 0.01 * g["period_seconds"])
        assert abs(rg["threshold_seconds"] - threshold) < 1e-12, (rg, threshold)
        expected = g["last_rank"] if g["lateness_low_seconds"] > threshold else None
        assert rg["named"] == expected, (name, rg, g)
        assert rg["named_rank"] == (None if expected is None else g["global_ranks"][expected])
        print(f"{name} stage {g['stage']}: named replica {rg['named']} (rank "
              f"{rg['named_rank']}), last {g['last_rank']} in {rg['last_share']:.0%}, lateness "
              f"{g['lateness_seconds'] * 1e6:.1f} us [{g['lateness_low_seconds'] * 1e6:.1f}, "
              f"{g['lateness_high_seconds'] * 1e6:.1f}], threshold {threshold * 1e6:.1f} us, "
              f"waiting {g['wait_share']:.1%}")
        if name not in late_rank:
            assert rg["named"] is None, (name, rg)
            continue
        k = late_rank[name]
        replica, stage = k // 2, k % 2
        if g["stage"] != stage:
            # The partner stage of the late rank's replica waits for it.
            assert rg["named"] in (None, replica), (name, rg)
            continue
        assert rg["named"] == replica and rg["named_rank"] == k, (name, rg)
        assert rg["last_share"] >= 0.9, (name, rg["last_share"])
        # Threads: within 20%. Processes poll their peers on 2 shared cores:
        # under the full suite's load the other replica's process was held
        # back too (83.6 and 80.4 ms seen under mpirun) or the waking one
        # came later (108.5 ms with separate hosts).
        low, high = (0.8, 1.2) if name == "late_threads" else (0.6, 2.0)
        assert low * late_us * 1e-6 <= g["lateness_seconds"] <= high * late_us * 1e-6, (name, g)
        assert g["wait_share"] > 0.3, (name, g["wait_share"])
PY

# Every format names the late replica in its stage group.
f="$work/late_threads.json"
"$bin" report "$f" >"$work/text" 2>&1 || fail "text report"
grep -q "Arrival at the collectives of stage 0's replicas (replicas 0-1 = ranks 0, 2; host clock, shared clocks): named replica 1 (rank 2, host [^)]*)\. Replica 1 of stage 0 arrived last in" "$work/text" ||
  fail "text: replica 1 of stage 0 not named: $(grep 'Arrival' "$work/text")"
grep -q "Arrival at the collectives of stage 1's replicas" "$work/text" || fail "text: no stage 1"
"$bin" report --format markdown "$f" | grep -q "named replica 1 (rank 2" || fail "markdown"
"$bin" report --format html -o "$work/r.html" "$f" && grep -q "named replica 1 (rank 2" \
  "$work/r.html" || fail "html"
"$bin" report --format csv -o "$work/r.csv" "$f" || fail "csv"
"$bin" report --format csv -o "$work/clean.csv" "$work/clean_threads.json" || fail "csv clean"
python3 - "$work/r.csv" "$work/clean.csv" <<'PY' || failures=$((failures + 1))
import csv, sys
def groups(path):
    rows = list(csv.DictReader(open(path)))
    assert len(rows) == 1 and rows[0]["arrival_named"] == "", rows
    out = []
    for g in rows[0]["arrival_stages"].split(";"):
        out.append(dict(kv.split("=", 1) for kv in g.split(" ")))
    return out
late = groups(sys.argv[1])
assert [g["stage"] for g in late] == ["0", "1"], late
assert late[0]["named"] == "1" and late[0]["named_rank"] == "2", late[0]
assert 0.08 <= float(late[0]["lateness_s"]) <= 0.12, late[0]
assert float(late[0]["lateness_low_s"]) <= float(late[0]["lateness_s"]) <= float(late[0]["lateness_high_s"])
assert float(late[0]["wait_share"]) > 0.3, late[0]
assert all(g["named"] == "nobody" for g in groups(sys.argv[2])), groups(sys.argv[2])
PY

# A malformed group is an error naming the file, never a guess.
python3 - "$f" "$work/bad.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
d["measurements"][0]["arrival_groups"][1]["global_ranks"] = [1]
json.dump(d, open(sys.argv[2], "w"))
PY
expect 1 "bad.json: an arrival group's stage is 1 and its global_ranks has 1 of 2 members" -- \
  report "$work/bad.json"

[ "$failures" -eq 0 ] || exit 1
echo "ok"
