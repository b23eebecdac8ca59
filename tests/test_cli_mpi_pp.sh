#!/usr/bin/env bash
# mlp's pipeline (--pp) under mpirun, one CPU rank per process: the stages
# pass activations and gradients through MPI and verify bit for bit
# against the CPU reference (2 stages under 1F1B; 2 replicas of 2 stages
# under GPipe), the report's bubble and stage imbalance of the processes'
# steps with their intervals and verdict, and a stage killed with SIGKILL
# while it measures ends the
# job within the timeout plus a few seconds, with a partial document whose
# failure names the lost rank and its stage. Skips (77) without mpirun.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_mpirun
bin=$(readlink -f "$bin")

model=(mlp --backend cpu --layers 50,64,48,32,3 --samples 1024 --batch 64 --warmup 1 --runs 1 -q)
timeout -s KILL 120 mpirun -np 2 "$bin" run "${model[@]}" --pp 2 --schedule 1f1b --micro-batches 4 \
  --iters 8 -o "$work/mpi2.json" >"$work/mpi2.out" 2>&1 || fail "mpirun -np 2 --pp 2: $(cat "$work/mpi2.out")"
timeout -s KILL 120 mpirun -np 4 "$bin" run "${model[@]}" --pp 2 --schedule gpipe --micro-batches 3 \
  --iters 8 -o "$work/mpi4.json" >"$work/mpi4.out" 2>&1 || fail "mpirun -np 4 --pp 2: $(cat "$work/mpi4.out")"
python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, os, sys
for name, ranks in (("mpi2.json", 2), ("mpi4.json", 4)):
    d = json.load(open(os.path.join(sys.argv[1], name)))
    assert d["status"] == "ok", d["status"]
    m = d["measurements"][0]
    assert m["world_size"] == ranks and m["verification"]["status"] == "passed", m["verification"]
    for r in m["runs"][0]["ranks"]:
        v = r["verification"]
        assert v["mismatches"] == 0 and "0 parameters after Adam differ bitwise" in v["detail"], v
PY
# The report's pipeline of the processes' steps: the bubble against (p-1)/m
# and the stage imbalance, each with its interval, the verdict from it.
for name in mpi2 mpi4; do
  "$bin" report -f json "$work/$name.json" >"$work/$name-report.json" 2>/dev/null ||
    fail "report -f json $name.json"
done
python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, os, sys
for name, micro, replicas in (("mpi2", 4, 1), ("mpi4", 3, 2)):
    rep = json.load(open(os.path.join(sys.argv[1], name + "-report.json")))
    p = [r for s in rep["series"] for r in s["rows"] if "pipeline" in r][0]["pipeline"]
    assert p["stages"] == 2 and p["micro_batches"] == micro and p["per"] == "step", p
    assert abs(p["bubble_formula"] - 1 / micro) < 1e-12, p
    assert p["bubble_low"] <= p["bubble"] <= p["bubble_high"], p
    assert p["imbalance_low"] <= p["imbalance"] <= p["imbalance_high"], p
    f, lo, hi = p["bubble_formula"], p["bubble_low"], p["bubble_high"]
    want = ("within 15%" if lo >= 0.85 * f and hi <= 1.15 * f else "above" if lo > 1.15 * f
            else "below" if hi < 0.85 * f else "inconclusive")
    assert p["bubble_verdict"] == want, (want, p)
PY

# Rank 1 (stage 1 of replica 0) killed while the job measures.
timeout -s KILL 120 mpirun -np 4 "$bin" run "${model[@]}" --pp 2 --micro-batches 4 --iters 1000000 \
  --timeout 3 -o "$work/kill.json" >"$work/kill.out" 2>&1 &
kill_rank_of $! 1 4
echo "kill: SIGKILL to rank 1 -> mpirun ended after $took s"
[ "$took" -le 12 ] || fail "the killed stage's job took $took s to end"
grep -q "rank 1 (pipeline stage 1 of 2, replica 0 of 2) on .* lost" "$work/kill.out" ||
  fail "the error names no stage: $(grep error "$work/kill.out")"
python3 - "$work/kill.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "partial", d["status"]
m = d["measurements"][0]
f = m["failure"]
assert f["rank"] == 1 and f["status"] == "rank-lost", f
assert "pipeline stage 1 of 2, replica 0 of 2" in f["reason"] and "died" in f["reason"], f
ranks = m["runs"][0]["ranks"]
assert [r["rank"] for r in ranks if r["status"] == "rank-lost"] == [1], [r["status"] for r in ranks]
assert f["last_completed_step"] > 0, f
PY

exit $((failures > 0))
