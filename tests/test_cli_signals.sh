#!/usr/bin/env bash
# Stop requests and lost ranks end coll, plan and llm runs with a partial
# document holding every completed measurement and exit 4: SIGINT and
# SIGTERM to `coll` and `plan` (CPU rank threads) and to `run llm`, and
# under mpirun a killed and a stopped rank of `coll`. Each signal is sent
# only once a measurement is on disk (the test polls the document or the
# progress note; it never sleeps a fixed time and hopes). The mpirun part
# skips with its reason when mpirun or MPI is missing. A stop request
# before anything was measured keeps an existing document byte for byte.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

expect 0 "usage: gpuscale p2p" -- p2p --no-progress --help
expect 0 "usage: gpuscale coll" -- coll --no-progress --help

# measured FILE: how many measurements the document FILE holds (0 when it
# is absent or not yet whole; documents are renamed into place).
measured() {
  python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["measurements"]))' "$1" \
    2>/dev/null || echo 0
}

# wait_for CHECK...: polls CHECK (a command) every 0.1 s for up to 90 s
# while $pid lives; 1 when it never held.
wait_for() {
  local i
  for ((i = 0; i < 900; i++)); do
    "$@" && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
has_measurements() { [ "$(measured "$1")" -ge "$2" ]; }

# stop SIG NAME: sends SIG to $pid, waits for it (killed after 120 s by a
# watchdog), leaves its exit code in $rc.
stop() {
  local sig=$1 name=$2
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  kill "$watchdog" 2>/dev/null
  wait "$watchdog" 2>/dev/null
  [ "$rc" = 4 ] || fail "$name: SIG$sig gave exit $rc, expected 4: $(tail -5 "$work/$name.out")"
}
start() {
  local name=$1
  shift
  "$bin" "$@" >"$work/$name.out" 2>&1 &
  pid=$!
  (sleep 120 && kill -KILL "$pid") >/dev/null 2>&1 &
  watchdog=$!
}

# coll: a sweep of 4096 sizes (minutes); stopped once some sizes are written.
coll=(coll allreduce --backend cpu --ranks 2 -b 4K -e 16M -i 4K -n 20 -w 1 --no-progress)
for sig in INT TERM; do
  start "coll-$sig" "${coll[@]}" --out "$work/coll-$sig.json"
  wait_for has_measurements "$work/coll-$sig.json" 4 || fail "coll: no size written before SIG$sig"
  before=$(measured "$work/coll-$sig.json")
  stop "$sig" "coll-$sig"
  python3 - "$work/coll-$sig.json" "$before" <<'PY' || fail "coll SIG$sig: partial document"
import json, sys
d = json.load(open(sys.argv[1]))
ms = d["measurements"]
assert d["status"] == "partial", d["status"]
assert int(sys.argv[2]) <= len(ms) < 2 * 4096, (sys.argv[2], len(ms))
# Every completed size is there in both forms, in order, with its samples.
done = [m for m in ms if m["status"] == "ok"]
assert len(done) >= int(sys.argv[2]) and len(done) % 2 == 0, len(done)
sizes = [m["collective"]["bytes"] for m in done[::2]]
assert sizes == [4096 * (i + 1) for i in range(len(sizes))], sizes[:5]
assert all(len(r["wall_seconds"]) == 20 for m in done for r in m["runs"][0]["ranks"])
assert d["collective_models"], "no model from the completed sizes"
PY
done

# plan: a short task ends (its document is written), then the long one is
# stopped: both tasks are in the document, the long one with its samples.
plan=(plan --backend cpu --iters 100000 --warmup 1 --runs 1 --no-progress
  --task '0:resample --batch 1 --samples 50 --targets 40 --dims 4 --dtype float32'
  --task '1:voxelize --points 200K --grid 32')
for sig in INT TERM; do
  start "plan-$sig" "${plan[@]}" --out "$work/plan-$sig.json"
  wait_for has_measurements "$work/plan-$sig.json" 1 || fail "plan: no task written before SIG$sig"
  stop "$sig" "plan-$sig"
  python3 - "$work/plan-$sig.json" <<'PY' || fail "plan SIG$sig: partial document"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "partial", d["status"]
ms = {m["task"]: m for m in d["measurements"]}
assert sorted(ms) == [0, 1], sorted(ms)
assert ms[0]["status"] == "ok" and len(ms[0]["runs"][0]["ranks"][0]["wall_seconds"]) == 100000
assert ms[1]["status"] == "interrupted", ms[1]["status"]
assert 0 < len(ms[1]["runs"][0]["ranks"][0]["wall_seconds"]) < 100000
assert [t["status"] for t in d["plan"]["tasks"]] == ["ok", "interrupted"]
PY
done

# run llm: two runs; the note of the second says the first (every sample)
# is done. Signalled then, the document keeps the first run and what the
# second completed.
llm=(run llm --backend cpu --model tiny --input-min 4 --input-max 10 --output-min 2
  --output-max 5 --batch 2 --samples 3000 --runs 2)
second_run() { grep -qs "run 2 of 2" "$work/$1.out"; }
for sig in INT TERM; do
  start "llm-$sig" "${llm[@]}" -o "$work/llm-$sig.json"
  wait_for second_run "llm-$sig" || fail "run llm: the second run never began"
  stop "$sig" "llm-$sig"
  python3 - "$work/llm-$sig.json" <<'PY' || fail "run llm SIG$sig: partial document"
import json, sys
d = json.load(open(sys.argv[1]))
m = d["measurements"][0]
assert d["status"] == "partial" and m["status"] == "interrupted", (d["status"], m["status"])
runs = m["runs"]
assert len(runs) == 2, len(runs)
first = runs[0]["ranks"][0]["requests"]
assert len(first) == 3000 and all(q["status"] == "ok" for q in first), len(first)
second = runs[1]["ranks"][0]["requests"]
# Requests never issued are not recorded as failed.
assert len(second) < 3000 and all(q["status"] == "ok" for q in second), len(second)
assert m["aggregate"]["step"]["n"] >= 3000
PY
done

# Under mpirun: one rank per process.
if ! command -v mpirun >/dev/null; then
  echo "skipped the mpirun checks: mpirun is not installed (openmpi-bin)"
elif "$bin" info 2>/dev/null | grep -qE "^MPI +none"; then
  echo "skipped the mpirun checks: gpuscale was built without MPI"
else
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  mpi_coll=(coll allreduce --backend cpu -b 4K -e 16M -i 4K -n 20 -w 1 --no-progress --timeout 5)
  rank1() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["environment"]["processes"][1]["pid"])' "$1"
  }
  # sig EXPECTED HOW: KILL (rank 1 dies: mpirun reports its signal, 137,
  # while process 0 writes) or STOP (rank 1 hangs: process 0 times out,
  # writes and ends the job with 4).
  for how in KILL:137:died STOP:4:stopped\ answering; do
    sig=${how%%:*} rest=${how#*:}
    want=${rest%%:*} reason=${rest#*:}
    timeout -s KILL 120 mpirun --oversubscribe -np 2 "$bin" "${mpi_coll[@]}" \
      --out "$work/mpi-$sig.json" >"$work/mpi-$sig.out" 2>&1 &
    pid=$!
    wait_for has_measurements "$work/mpi-$sig.json" 4 || fail "mpirun coll: no size written"
    victim=$(rank1 "$work/mpi-$sig.json")
    kill -"$sig" "$victim"
    wait "$pid"
    rc=$?
    kill -KILL "$victim" 2>/dev/null
    [ "$rc" = "$want" ] || [ "$rc" = 4 ] ||
      fail "mpirun coll with rank 1 SIG$sig exited $rc, expected $want or 4: $(tail -5 "$work/mpi-$sig.out")"
    python3 - "$work/mpi-$sig.json" "$reason" <<'PY' || fail "mpirun coll with rank 1 SIG$sig: document"
import json, sys
d = json.load(open(sys.argv[1]))
ms = d["measurements"]
assert d["status"] == "partial", d["status"]
done = [m for m in ms if m["status"] == "ok"]
assert len(done) >= 4 and all(len(r["wall_seconds"]) == 20 for m in done for r in m["runs"][0]["ranks"])
lost = [m for m in ms if m["status"] != "ok"]
assert lost and all(m["status"] == "rank-lost" for m in lost), [m["status"] for m in lost]
ranks = lost[0]["runs"][0]["ranks"]
assert ranks[1]["status"] == "rank-lost" and sys.argv[2] in ranks[1]["error"], ranks[1]
assert lost[0]["error"].startswith("rank 1 on "), lost[0]["error"]
PY
  done
fi

# A stop request before anything was measured leaves an existing --out
# byte for byte (exit 1, saying so), for run, scale, llm and exec.
"$bin" run voxelize --backend cpu --points 20000 --grid 32,32,32 --iters 3 -q \
  -o "$work/keep.json" >/dev/null 2>&1 || fail "the document to keep was not written"
cp "$work/keep.json" "$work/keep.orig"
keep="-q -o $work/keep.json"
early=("run voxelize --backend cpu --points 20000000 --iters 3 $keep"
       "scale voxelize --backend cpu --points 20000000 --iters 3 $keep"
       "run llm --backend cpu --samples 4 --warmup 50 $keep"
       "exec --counts 1 $keep -- sleep 30")
for cmd in "${early[@]}"; do
  # shellcheck disable=SC2086
  start early $cmd
  sleep 0.5
  kill -INT "$pid"
  wait "$pid"
  rc=$?
  kill "$watchdog" 2>/dev/null
  wait "$watchdog" 2>/dev/null
  [ "$rc" = 1 ] || fail "early SIGINT to $cmd: exit $rc, expected 1: $(tail -3 "$work/early.out")"
  grep -q "stopped before anything was measured: .*keep.json was left as it was" "$work/early.out" ||
    fail "early SIGINT to $cmd does not say the file was kept: $(tail -3 "$work/early.out")"
  cmp -s "$work/keep.json" "$work/keep.orig" || fail "early SIGINT to $cmd changed the document"
  ls "$work" | grep -q '\.tmp' && fail "early SIGINT to $cmd left a temp file"
done

# An interrupted suite names the step it was in, and its report covers
# only the documents this run wrote, not an earlier suite's in the same
# directory.
suite=(suite --backend cpu --ranks 2 --runs 1 -q --out "$work/suite")
"$bin" "${suite[@]}" --iters 2 >/dev/null 2>&1 || fail "the first suite failed"
[ -s "$work/suite/llm.json" ] || fail "the first suite wrote no llm.json"
start suite "${suite[@]}" --iters 100000
sleep 2
kill -INT "$pid"
wait "$pid"
kill "$watchdog" 2>/dev/null
wait "$watchdog" 2>/dev/null
grep -q "error: suite step voxelize: " "$work/suite.out" ||
  fail "the interrupted suite does not name its step: $(tail -3 "$work/suite.out")"
files=$(grep '^Files:' "$work/suite/report.md")
grep -q "llm.json\|mlp.json\|coll.json" <<<"$files" &&
  fail "the interrupted suite's report lists an earlier suite's documents: $files"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all signal and lost-rank checks passed"
