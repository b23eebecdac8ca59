#!/usr/bin/env bash
# Faults from outside the job under mpirun (one CPU rank per process): a
# rank stopped with SIGSTOP (process 0 included), a rank sent SIGTERM alone,
# a rank of coll killed with SIGKILL, process 0 of coll stopped, the same
# faults over (simulated) hosts, and a rank of llm killed or stopped. Each ends within the timeout plus
# a few seconds, and a live rank writes a partial document naming the rank
# that was lost (rank, host, last step), never a healthy one. Skips (77)
# without mpirun.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_mpirun
bin=$(readlink -f "$bin")

# fault NAME NP SIGNAL RANK ARGS...: starts gpuscale ARGS under mpirun -np NP,
# sends SIGNAL to rank RANK once it measures ($after seconds after it
# started, 4 unless set; for coll once the document of its first size exists), and sets $took to the
# seconds from the signal to mpirun's end (tenths) and $rc to mpirun's exit
# code; output in $work/NAME.out.
fault() {
  local name=$1 np=$2 sig=$3 rank=$4
  shift 4
  timeout -s KILL 120 mpirun -np "$np" --oversubscribe "$bin" "$@" >"$work/$name.out" 2>&1 &
  local job=$! pid="" i
  for i in $(seq 600); do
    pid=$(rank_pid "$rank") && break
    sleep 0.1
  done
  if [ "$1" = coll ]; then
    for i in $(seq 600); do [ -s "$work/$name.json" ] && break; sleep 0.1; done
  else
    sleep "${after:-4}"
  fi
  [ -n "$pid" ] || { fail "$name: no process of rank $rank"; wait "$job"; return; }
  local t0
  t0=$(date +%s%N)
  kill "-$sig" "$pid"
  wait "$job"
  rc=$?
  took=$((($(date +%s%N) - t0) / 100000000))
  took=$((took / 10)).$((took % 10))
  echo "$name: $sig to rank $rank -> mpirun ended after $took s (exit $rc)"
}

# A long run: the signal comes while it measures.
long=(voxelize --backend cpu --points 20000 --grid 32,32,32 --warmup 1 --runs 1 -q --iters 100000)

# check NAME RANK REASON: the document's interrupted measurement names RANK.
check() {
  python3 - "$work/$1.json" "$2" "$3" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
rank, reason = int(sys.argv[2]), sys.argv[3]
assert d["status"] == "partial", d["status"]
bad = [m for m in d["measurements"] if m["status"] != "ok"]
assert bad, "no failed measurement"
f = bad[0]["failure"]
assert f["rank"] == rank and f["host"] and f["status"] == "rank-lost", f
assert reason in f["reason"], f
ranks = bad[0]["runs"][0]["ranks"]
assert ranks[rank]["status"] == "rank-lost", [r["status"] for r in ranks]
assert [r["rank"] for r in ranks if r["status"] == "rank-lost"] == [rank], [r["status"] for r in ranks]
PY
}

# within LIMIT NAME RANK REASON: the fault's job ended within LIMIT seconds
# and its document names RANK, for REASON.
within() {
  awk -v t="$took" -v l="$1" 'BEGIN { exit !(t <= l) }' || fail "$2: $took s (bound $1)"
  check "$2" "$3" "$4"
}

# Process 0 stopped: the others time out, process 1 takes over the writing.
fault stop0 3 STOP 0 run "${long[@]}" --timeout 3 -o "$work/stop0.json"
within 10 stop0 0 "stopped answering"
# Process 0 hung by fault injection (its heartbeat goes on: it is behind).
start=$SECONDS
timeout -s KILL 60 mpirun -np 3 --oversubscribe "$bin" run voxelize --backend cpu --points 20000 \
  --grid 32,32,32 --warmup 1 --runs 1 -q --iters 20 --timeout 3 -o "$work/hang0.json" \
  --inject hang:rank=0,after=4 >"$work/hang0.out" 2>&1
rc=$?
took=$((SECONDS - start))
echo "hang0: hang:rank=0 -> mpirun ended $took s after the start (exit $rc)"
within 12 hang0 0 "stopped answering"
python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["measurements"][0]["failure"]; assert f["last_completed_step"] == 4, f' \
  "$work/hang0.json" || fail "hang0: the failure's last step is not 4"
# A rank stopped inside its wait.
fault stop2 3 STOP 2 run "${long[@]}" --timeout 3 -o "$work/stop2.json"
within 10 stop2 2 "stopped answering"
# SIGTERM to one rank alone: the others stop at once and name it.
fault term1 3 TERM 1 run "${long[@]}" --timeout 60 -o "$work/term1.json"
within 10 term1 1 "signal 15"
fault term0 3 TERM 0 run "${long[@]}" --timeout 60 -o "$work/term0.json"
within 10 term0 0 "signal 15"

# coll: a rank killed from outside is named in the failing size's records.
fault ckill 4 KILL 2 coll allreduce --backend cpu -b 8 -e 64M --stepfactor 2 -n 50 -w 1 --timeout 5 -q \
  --out "$work/ckill.json"
grep -q "rank 2 on .* lost: its process died" "$work/ckill.out" ||
  fail "coll's error names no lost rank: $(grep error "$work/ckill.out")"
within 10 ckill 2 "died"
# coll: process 0 stopped; every process holds every rank's records, so
# process 1 takes over and writes the partial document naming rank 0.
fault cstop0 3 STOP 0 coll allreduce --backend cpu -b 8 -e 64M --stepfactor 2 -n 50 -w 1 \
  --timeout 3 -q --out "$work/cstop0.json"
within 10 cstop0 0 "stopped answering"
python3 - "$work/cstop0.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
ms = d["measurements"]
done = [m for m in ms if m["status"] == "ok"]
# The sizes completed before the stop, with every rank's samples (gathered
# to every process, written by process 1).
assert done and all(len(r["wall_seconds"]) == 50 for m in done for r in m["runs"][0]["ranks"]), \
    [len(r.get("wall_seconds") or []) for m in done for r in m["runs"][0]["ranks"]]
bad = [m for m in ms if m["status"] != "ok"]
ranks = bad[0]["runs"][0]["ranks"]
# Rank 0 lost; the others aborted, or ok with the samples of their own
# iterations when the break came only at the gather.
assert ranks[0]["status"] == "rank-lost", [r["status"] for r in ranks]
assert all(r["status"] == "aborted" or (r["status"] == "ok" and r["wall_seconds"])
           for r in ranks[1:]), [(r["status"], len(r.get("wall_seconds") or [])) for r in ranks]
PY

# coll: process 0 hung (its first timed batch delayed 40 s, its heartbeat
# alive): process 1 names it and writes within the timeout plus seconds.
start=$SECONDS
timeout -s KILL 90 mpirun -np 3 --oversubscribe "$bin" coll allreduce --backend cpu -b 8 -e 1K \
  -n 20 -w 1 --timeout 3 -q --inject delay:rank=0,seconds=40 -o "$work/chang0.json" \
  >"$work/chang0.out" 2>&1
rc=$?
took=$((SECONDS - start))
echo "chang0: delay:rank=0 of coll -> mpirun ended $took s after the start (exit $rc)"
[ "$took" -le 15 ] || fail "chang0: $took s (bound 15)"
python3 - "$work/chang0.json" <<'PY' || failures=$((failures + 1))
import json, sys
m = json.load(open(sys.argv[1]))["measurements"][0]
f = m["failure"]
assert (f["rank"], f["status"]) == (0, "rank-lost") and "stopped answering" in f["reason"], f
assert [r["status"] for r in m["runs"][0]["ranks"]] == ["rank-lost", "aborted", "aborted"]
PY

# Over hosts, rehearsed on one machine (GPUSCALE_TEST_SEPARATE_HOSTS=1:
# every process a host of its own, so no process sees another's pid or
# heartbeat): the roll call over MPI elects the writer and names the rank
# that did not answer.
export GPUSCALE_TEST_SEPARATE_HOSTS=1
fault hstop0 3 STOP 0 run "${long[@]}" --timeout 3 -o "$work/hstop0.json"
within 12 hstop0 0 "did not answer"
fault hkill2 3 KILL 2 run "${long[@]}" --timeout 3 -o "$work/hkill2.json"
within 10 hkill2 2 "did not answer"
fault hcstop0 3 STOP 0 coll allreduce --backend cpu -b 8 -e 64M --stepfactor 2 -n 50 -w 1 \
  --timeout 3 -q --out "$work/hcstop0.json"
within 12 hcstop0 0 "did not answer"
unset GPUSCALE_TEST_SEPARATE_HOSTS
python3 - "$work"/hstop0.json "$work"/hkill2.json "$work"/hcstop0.json <<'PY' || failures=$((failures + 1))
import json, sys
for path in sys.argv[1:]:
    hosts = [p["host"] for p in json.load(open(path))["environment"]["processes"]]
    assert len(set(hosts)) == 3, (path, hosts)
PY

# llm: kill -9 of rank 1 of 3 keeps the requests the others completed and
# names rank 1; a stopped rank under --timeout is lost, not ok.
# When to signal depends on how fast this machine runs llm (a sanitizer
# build is several times slower): a clean run of the same stream first takes
# CLEAN seconds. A killed rank stops the others at once: a stream 30 times
# longer, signalled after CLEAN, when every rank has usually completed
# requests. A stopped one is found lost only when the others have finished
# their streams: a stream three times the clean one, stopped after CLEAN /
# 2, ends within 3 x CLEAN plus the timeout (and slack for the slowest rank);
# three times, so that a machine that sped up since the clean run (a load
# that ended) still has requests in flight at the stop.
# A machine that slowed since (the other tests' load) may still be starting
# the job at the signal: the document then names rank 1 and says the others
# stopped before their first request, and the fault is sent again, twice as
# late, up to three times.
t0=$(date +%s%N)
mpirun -np 3 --oversubscribe "$bin" run llm --backend cpu --samples 600 -q \
  -o "$work/llm-clean.json" >/dev/null 2>&1 || fail "llm: the clean run under mpirun failed"
clean=$(awk -v ns=$(($(date +%s%N) - t0)) 'BEGIN { printf "%.1f", ns / 1e9 }')
echo "llm: the clean run of 600 samples took $clean s"
for how in KILL STOP; do
  if [ "$how" = KILL ]; then
    samples=20000 after=$clean bound=15
  else
    samples=1800
    after=$(awk -v c="$clean" 'BEGIN { printf "%.1f", c / 2 }')
    bound=$(awk -v c="$clean" 'BEGIN { printf "%.0f", 3 * c + 3 + 8 }')
  fi
  for attempt in 1 2 3; do
    rm -f "$work/llm$how.json"
    fault "llm$how" 3 "$how" 1 run llm --backend cpu --samples "$samples" -q --timeout 3 \
      -o "$work/llm$how.json"
    within "$bound" "llm$how" 1 "$([ $how = KILL ] && echo died || echo 'stopped answering')"
    llm_signalled_early "$work/llm$how.json" || break
    echo "llm$how: signalled before the job had started; again, twice as late"
    after=$(awk -v a="$after" 'BEGIN { printf "%.1f", 2 * a }')
  done
  python3 - "$work/llm$how.json" <<'PY' || failures=$((failures + 1))
import json, sys
m = json.load(open(sys.argv[1]))["measurements"][0]
ranks = m["runs"][0]["ranks"]
assert [r["status"] for r in ranks][1] == "rank-lost", [r["status"] for r in ranks]
kept = [len(r.get("requests", [])) for r in ranks]
assert kept[0] > 0 and kept[2] > 0, kept
assert all(q["status"] == "ok" for r in (ranks[0], ranks[2]) for q in r["requests"])
assert m["llm"]["samples"] == sum(kept), (m["llm"], kept)
PY
done

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all mpirun fault checks passed"
