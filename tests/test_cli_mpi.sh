#!/usr/bin/env bash
# Measuring commands under mpirun (one CPU rank per process, mpi mode): a
# normal scale gathered into one document written by process 0, then ranks
# slowed, failing, delayed, killed and hung. A lost rank never hangs the
# others: the survivors write a partial document naming it (rank, host, last
# completed step) within the timeout + 5 s. Skips (77) without mpirun.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_mpirun
small=(voxelize --backend cpu --points 20000 --grid 32,32,32 --warmup 1 --runs 1 -q)

# mpi NP SECONDS NAME ARGS...: mpirun with a time bound; exit code in $rc,
# seconds taken in $took, output in $work/NAME.out.
mpi() {
  local np=$1 limit=$2 name=$3
  shift 3
  local start=$SECONDS
  timeout -s KILL "$limit" mpirun -np "$np" --oversubscribe "$bin" "$@" >"$work/$name.out" 2>&1
  rc=$?
  took=$((SECONDS - start))
}

mpi 3 120 scale scale "${small[@]}" --iters 12 -o "$work/scale.json"
if grep -q "built without MPI" "$work/scale.out"; then
  echo "skipped: this gpuscale was built without MPI"
  exit 77
fi
[ "$rc" = 0 ] || fail "mpirun scale exited $rc: $(cat "$work/scale.out")"
[ "$(grep -c 'backend cpu, strong scaling' "$work/scale.out")" = 1 ] || fail "not exactly one summary: $(cat "$work/scale.out")"
python3 - "$work/scale.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "ok", d["status"]
ms = d["measurements"]
assert [m["world_size"] for m in ms] == [1, 2, 3], [m["world_size"] for m in ms]
for m in ms:
    ranks = m["runs"][0]["ranks"]
    assert [r["rank"] for r in ranks] == list(range(m["world_size"]))
    for r in ranks:
        assert r["status"] == "ok" and r["host"] and len(r["wall_seconds"]) == 12, r
        assert r["first_iteration_seconds"] is not None
    assert m["aggregate"]["step"]["n"] == 12
assert ms[2]["aggregate"]["speedup"] > 0
procs = d["environment"]["processes"]
assert [p["rank"] for p in procs] == [0, 1, 2] and all(p["host"] and p["pid"] > 0 for p in procs), procs
assert d["environment"]["launch"] == {"mode": "mpi", "launcher": "openmpi", "processes": 3}
PY

# suite: every workload at 1 and 2 processes, one document each from process 0.
mpi 2 180 suite suite --iters 2 --runs 1 --warmup 0 -q --out "$work/suite"
[ "$rc" = 0 ] || fail "mpirun suite exited $rc: $(cat "$work/suite.out")"
python3 - "$work/suite" <<'PY' || failures=$((failures + 1))
import glob, json, sys
files = sorted(f for f in glob.glob(sys.argv[1] + "/*.json") if not f.endswith("/info.json"))
assert len(files) >= 3, files
for f in files:
    d = json.load(open(f))
    assert d["status"] == "ok", (f, d["status"])
    # A workload that communicates runs at the full job only under a launcher.
    expected = [2] if f.endswith("/mlp.json") else [1, 2]
    assert [m["world_size"] for m in d["measurements"]] == expected, f
    # llm runs request streams: its samples are per-request latencies.
    if not f.endswith("/llm.json"):
        assert all(len(r["wall_seconds"]) == 2 for m in d["measurements"] for r in m["runs"][0]["ranks"])
PY

# llm: one replica per process, requests split statically, every rank's
# samples in the document of process 0; a shared queue is refused.
mpi 2 120 llm run llm --backend cpu --samples 12 -q -o "$work/llm.json"
[ "$rc" = 0 ] || fail "mpirun run llm exited $rc: $(cat "$work/llm.out")"
python3 - "$work/llm.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "ok" and d["environment"]["launch"]["mode"] == "mpi", d["status"]
m = d["measurements"][0]
ranks = m["runs"][0]["ranks"]
assert [r["rank"] for r in ranks] == [0, 1], ranks
assert [len(r["requests"]) for r in ranks] == [6, 6], [len(r["requests"]) for r in ranks]
assert all(q["status"] == "ok" for r in ranks for q in r["requests"])
assert m["llm"]["samples"] == 12 and m["llm"]["ok"] == 12, m["llm"]
PY
mpi 2 60 llmdyn run llm --backend cpu --dispatch dynamic -q
[ "$rc" != 0 ] && grep -q "dispatch dynamic: not available under a launcher" "$work/llmdyn.out" ||
  fail "mpirun run llm --dispatch dynamic exited $rc: $(cat "$work/llmdyn.out")"
# Tensor parallelism over processes (tests/test_cli_llm_tp_mpi.sh checks it
# in depth); --layouts measures in one process.
mpi 2 60 llmtp run llm --backend cpu --tp 2 -q
[ "$rc" = 0 ] || fail "mpirun run llm --tp 2 exited $rc: $(cat "$work/llmtp.out")"
mpi 2 60 llmlayouts run llm --backend cpu --layouts -q
[ "$rc" = 2 ] && grep -q "option --layouts: measures its layouts in one process" \
  "$work/llmlayouts.out" || fail "mpirun run llm --layouts exited $rc: $(cat "$work/llmlayouts.out")"

# A slowed rank, a failing one and a delayed one show in the rank records.
mpi 3 120 sfd run "${small[@]}" --iters 12 -o "$work/sfd.json" --inject slow:rank=1,factor=4 \
  --inject fail:rank=2,rate=0.5 --inject delay:rank=0,seconds=0.3
[ "$rc" = 0 ] || fail "mpirun run with slow/fail/delay exited $rc: $(cat "$work/sfd.out")"
python3 - "$work/sfd.json" <<'PY' || failures=$((failures + 1))
import json, sys, statistics as st
m = json.load(open(sys.argv[1]))["measurements"][0]
r = m["runs"][0]["ranks"]
# Rank 1's steps take 4x its own work. Three processes share two cores
# here: the sleeping rank 1 wins a core on waking while ranks 0 and 2 (MPI
# polls) share the other, so its own work runs up to 2x faster and the gap
# can shrink to half the factor.
assert st.median(r[1]["wall_seconds"]) > 1.5 * st.median(r[0]["wall_seconds"]), (r[0]["wall_seconds"], r[1]["wall_seconds"])
assert 0 < r[2]["failed_samples"] < 12, r[2].get("failed_samples")
assert "failed_samples" not in r[0]
assert r[0]["first_iteration_seconds"] >= 0.3 > r[1]["first_iteration_seconds"]
assert sorted(f["kind"] for f in m["faults"]) == ["delay", "fail", "slow"], m["faults"]
PY

# A killed rank: mpirun ends the others with SIGTERM; process 0 writes.
mpi 3 60 kill scale "${small[@]}" --iters 20 --timeout 10 -o "$work/kill.json" --inject kill:rank=1,after=5
[ "$rc" != 0 ] || fail "mpirun with a killed rank exited 0"
[ "$took" -le 15 ] || fail "the killed rank's job took $took s (timeout 10 + 5)"
python3 - "$work/kill.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "partial", d["status"]
ms = {m["world_size"]: m for m in d["measurements"]}
assert ms[1]["status"] == "ok" and len(ms[1]["runs"][0]["ranks"][0]["wall_seconds"]) == 20
f = ms[2]["failure"]
# Killed after step 5 (cold start, warmup, 3 timed): a survivor that the
# launcher stops before it finished exchange 5 saw the rank complete 4.
assert f["rank"] == 1 and f["host"] and f["last_completed_step"] in (4, 5), f
assert f["status"] == "rank-lost" and "died" in f["reason"], f
ranks = ms[2]["runs"][0]["ranks"]
assert len(ranks[1]["wall_seconds"]) == f["last_completed_step"] - 2 and ranks[1]["status"] == "rank-lost"
assert len(ranks[0]["wall_seconds"]) >= len(ranks[1]["wall_seconds"])
assert 3 not in ms  # the job ended with the lost rank
PY

# A killed rank of a workload that communicates (mlp's gradient
# all-reduce): the survivor leaves the collective and process 0 writes.
mpi 2 60 killmlp run mlp --backend cpu --iters 400 --runs 1 -q --timeout 10 \
  -o "$work/killmlp.json" --inject kill:rank=1,after=50
[ "$rc" != 0 ] || fail "mpirun mlp with a killed rank exited 0"
[ "$took" -le 15 ] || fail "the killed mlp rank's job took $took s (timeout 10 + 5)"
python3 - "$work/killmlp.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "partial", d["status"]
m = d["measurements"][0]
f = m["failure"]
assert m["workload"] == "mlp" and f["rank"] == 1 and f["status"] == "rank-lost", f
assert f["last_completed_step"] in (49, 50), f
assert len(m["runs"][0]["ranks"][0]["wall_seconds"]) > 0
PY

# Process 0 itself killed: the lowest live process of its host writes.
mpi 3 60 kill0 scale "${small[@]}" --iters 20 --timeout 10 -o "$work/kill0.json" --inject kill:rank=0,after=5
[ "$rc" != 0 ] || fail "mpirun with process 0 killed exited 0"
[ "$took" -le 15 ] || fail "process 0's death took $took s to end the job (timeout 10 + 5)"
python3 - "$work/kill0.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
m = d["measurements"][0]
assert d["status"] == "partial" and m["world_size"] == 1 and m["status"] == "rank-lost", d
f = m["failure"]
assert f["rank"] == 0 and f["last_completed_step"] in (4, 5) and "died" in f["reason"], f
assert len(m["runs"][0]["ranks"][0]["wall_seconds"]) == f["last_completed_step"] - 2
PY

# A hung rank: the others time out, process 0 writes and aborts the job (exit 4).
mpi 4 60 hang run "${small[@]}" --iters 20 --timeout 3 -o "$work/hang.json" --inject hang:rank=2,after=4
[ "$rc" = 4 ] || fail "mpirun with a hung rank exited $rc, expected 4: $(cat "$work/hang.out")"
[ "$took" -le 12 ] || fail "the hung rank's job took $took s (timeout 3 + 5, plus start-up)"
python3 - "$work/hang.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
m = d["measurements"][0]
assert d["status"] == "partial" and m["status"] == "rank-lost", (d["status"], m["status"])
f = m["failure"]
assert f["rank"] == 2 and f["last_completed_step"] == 4 and "stopped answering" in f["reason"], f
ranks = m["runs"][0]["ranks"]
assert [r["status"] for r in ranks] == ["aborted", "aborted", "rank-lost", "aborted"], [r["status"] for r in ranks]
assert all(len(r["wall_seconds"]) >= 2 for r in ranks)
PY

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all mpirun checks passed"
