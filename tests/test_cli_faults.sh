#!/usr/bin/env bash
# Fault injection in threads mode (one process, one thread per rank) on the
# CPU backend: a killed rank's thread, failed samples, a delayed first step,
# Ctrl-C during a measurement; each ends in a document that keeps what was
# measured, names the failed rank and exits as documented (docs/cli.md).
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
small=(voxelize --backend cpu --points 20000 --grid 32,32,32 --warmup 1 --runs 1 -q)

expect 2 "unknown fault kind 'crash'" -- run "${small[@]}" --inject crash:rank=0
expect 2 "whole number" -- run "${small[@]}" --inject kill:rank=0,after=1.5
expect 2 "rank 3 does not exist" -- run "${small[@]}" --ranks 2 --inject kill:rank=3,after=1
expect 2 "hang: needs one process per rank" -- run "${small[@]}" --inject hang:rank=0,after=1

# A killed rank thread, a failing rank and a delayed one, over a sweep.
timeout 120 "$bin" scale "${small[@]}" --iters 20 --ranks 3 -o "$work/faults.json" \
  --inject kill:rank=1,after=5 --inject fail:rank=0,rate=0.5 \
  --inject delay:rank=2,seconds=0.3 >"$work/faults.out" 2>&1
rc=$?
[ "$rc" = 4 ] || fail "scale with a killed rank exited $rc, expected 4: $(cat "$work/faults.out")"
python3 - "$work/faults.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "partial", d["status"]
ms = {m["world_size"]: m for m in d["measurements"]}
assert sorted(ms) == [1, 2, 3], sorted(ms)
one = ms[1]["runs"][0]["ranks"][0]
assert ms[1]["status"] == "ok" and len(one["wall_seconds"]) == 20
assert 0 < one["failed_samples"] < 20, one.get("failed_samples")
for n in (2, 3):
    m = ms[n]
    f = m["failure"]
    assert m["status"] == "rank-lost", m["status"]
    assert f["rank"] == 1 and f["last_completed_step"] == 5 and f["host"], f
    ranks = m["runs"][0]["ranks"]
    assert ranks[1]["status"] == "rank-lost" and ranks[1]["last_completed_step"] == 5
    # cold start + 1 warmup + 3 timed steps before the kill, all kept
    assert len(ranks[1]["wall_seconds"]) == 3, len(ranks[1]["wall_seconds"])
    assert ranks[0]["status"] == "aborted"
    kinds = sorted(x["kind"] for x in m["faults"])
    assert "kill" in kinds and "fail" in kinds, kinds
ranks3 = ms[3]["runs"][0]["ranks"]
assert ranks3[2]["first_iteration_seconds"] >= 0.3, ranks3[2]["first_iteration_seconds"]
assert ranks3[0]["first_iteration_seconds"] < 0.3
PY

# The report names every injected fault and what it did.
expect 0 "killed by fault injection \(kill:rank=1,after=5\)" -- report "$work/faults.json"
expect 0 "rank 0 \(host [^)]*\): [0-9]+ of 20 timed samples failed at 1 rank .*injected by --inject fail" \
  -- report "$work/faults.json"
expect 0 "injected cold start on rank 2 at 3 ranks: first iteration .*injected by --inject delay" -- report "$work/faults.json"
expect 0 "injected: kill rank 1 after=5; fail rank 0 rate=0.5; delay rank 2 seconds=0.3" \
  -- report "$work/faults.json"

# Ctrl-C: the interrupted measurement's samples are written, exit 4.
"$bin" run "${small[@]}" --ranks 2 --iters 100000000 -o "$work/int.json" >"$work/int.out" 2>&1 &
pid=$!
(sleep 60 && kill -KILL "$pid") >/dev/null 2>&1 &
watchdog=$!
sleep 2
kill -INT "$pid"
wait "$pid"
rc=$?
kill "$watchdog" 2>/dev/null
[ "$rc" = 4 ] || fail "interrupted run exited $rc, expected 4: $(cat "$work/int.out")"
python3 - "$work/int.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
m = d["measurements"][0]
assert d["status"] == "partial" and m["status"] == "interrupted", (d["status"], m["status"])
assert m["failure"]["rank"] is None and "signal 2" in m["failure"]["reason"], m["failure"]
assert all(len(r["wall_seconds"]) > 0 for r in m["runs"][0]["ranks"])
assert m["aggregate"]["step"]["n"] > 0
PY

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all fault injection checks passed (threads mode)"
