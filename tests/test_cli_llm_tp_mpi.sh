#!/usr/bin/env bash
# llm's tensor parallelism under mpirun on the CPU backend (skipped without
# mpirun): each shard is a process, a replica's tp x pp ranks consecutive.
# One replica of 2 shards (2 processes), 2 stages of 2 shards (4), and 2
# replicas of 2 shards (4): each replica is verified over its processes
# against the whole model on one rank (every greedy token the same, every
# logit within the tolerance; 0 mismatches), every request of the stream
# completes, and the document holds the layout. A shard killed while the
# job serves (shard 1 and shard 0 of 2 replicas, shard 1 of stage 1)
# ends it partial, the lost rank named with its shard, stage and replica,
# and the other replica's requests kept. A shard made late (--inject
# late) is named by the arrival skew at the all-reduces. $1 is the
# gpuscale binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_mpirun
bin=$(readlink -f "$bin")

stream=(--backend cpu --model tiny --layers 6 --input-min 4 --input-max 10 --output-min 3
        --output-max 6 --batch 4 --no-progress)
small=("${stream[@]}" --samples 12)

# name: processes and layout options
cases=("tp2:2:--tp 2" "tp2pp2:4:--tp 2 --pp 2" "dp2tp2:4:--tp 2")
for c in "${cases[@]}"; do
  IFS=: read -r name np opts <<<"$c"
  # shellcheck disable=SC2086 # the layout's options are words
  timeout -s KILL 120 mpirun --oversubscribe -np "$np" "$bin" run llm "${small[@]}" -q $opts \
    -o "$work/$name.json" >"$work/$name.out" 2>&1 || fail "mpirun -np $np $opts: $(cat "$work/$name.out")"
done
# Ranks that are not whole replicas are refused before anything runs.
timeout -s KILL 60 mpirun --oversubscribe -np 3 "$bin" run llm "${small[@]}" -q --tp 2 \
  -o "$work/odd.json" >"$work/odd.out" 2>&1
rc=$?
[ "$rc" != 0 ] || fail "mpirun -np 3 --tp 2 succeeded"
grep -q "option --tp 2: a replica needs 2 ranks" "$work/odd.out" ||
  fail "mpirun -np 3 --tp 2: $(cat "$work/odd.out")"
[ ! -e "$work/odd.json" ] || fail "a usage error wrote a document"

python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, os, sys
work = sys.argv[1]
for name, tp, pp, replicas in (("tp2", 2, 1, 1), ("tp2pp2", 2, 2, 1), ("dp2tp2", 2, 1, 2)):
    d = json.load(open(os.path.join(work, name + ".json")))
    assert d["status"] == "ok", (name, d["status"])
    m = d["measurements"][0]
    assert m["world_size"] == replicas * tp * pp, (name, m["world_size"])
    assert m["parallelism"] == {"gpus_per_rank": tp * pp, "option": "pp" if pp > 1 else "tp"}, \
        (name, m["parallelism"])
    assert d["config"]["workload_options"]["tp"] == tp, name
    v = m["verification"]
    assert v["status"] == "passed" and v["mismatches"] == 0, (name, v)
    assert "%d pipeline stage%s x %d tensor-parallel shards (processes)" % (
        pp, "s" if pp > 1 else "", tp) in v["detail"], (name, v["detail"])
    assert "0 of 6 tokens decoded again differ" in v["detail"], (name, v["detail"])
    runs = m["runs"][0]["ranks"]
    assert len(runs) == replicas, (name, len(runs))
    assert [len(r["devices"]) for r in m["llm"]["ranks"]] == [tp * pp] * replicas, name
    ok = sum(q["status"] == "ok" for r in runs for q in r["requests"])
    assert ok == 12, (name, ok)
    if pp > 1:
        p = m["llm"]["pipeline"]
        assert p["stages"] == pp and all(s["busy_seconds"] > 0 for s in p["per_stage"]), (name, p)
    print(f"{name}: {ok} requests ok, verification {v['status']} (max |diff| {v['max_abs_error']})")
PY

# Arrival skew at the shards' all-reduces (docs/stragglers.md): a shard
# whose process waits 100 ms before every prefill and decode (--inject
# late) is named, last in nearly every call, its median lateness within
# 20%; a clean run names nobody, or a follower by under 2 ms (it starts a
# call when the first shard's message arrives: tens of microseconds).
late_us=100000
arrival=(run llm --backend cpu --model tiny --input-min 4 --input-max 10 --output-min 4
         --output-max 6 --samples 12 --batch 4 --no-progress -q --tp 2)
for late in 1 0 clean; do
  inject=()
  [ "$late" = clean ] || inject=(--inject "late:rank=$late,us=$late_us")
  timeout -s KILL 120 mpirun --oversubscribe -np 2 "$bin" "${arrival[@]}" "${inject[@]}" \
    -o "$work/late$late.json" >"$work/late$late.out" 2>&1 ||
    fail "mpirun late $late: $(cat "$work/late$late.out")"
  "$bin" report --format json -o "$work/late$late.report.json" "$work/late$late.json" ||
    fail "report of late $late"
done
python3 - "$work" "$late_us" <<'PY' || failures=$((failures + 1))
import json, sys
work, late_us = sys.argv[1], float(sys.argv[2])
for late in ("1", "0", "clean"):
    m = json.load(open(f"{work}/late{late}.json"))["measurements"][0]
    rows = [r for s in json.load(open(f"{work}/late{late}.report.json"))["series"] for r in s["rows"]]
    a, ra = m["arrival"], rows[0]["arrival"]
    assert a["iterations"] >= 6 and len(a["ranks"]) == 2, (late, a["iterations"])
    print(f"late {late}: {a['iterations']} calls, named {ra['named']}, last {a['last_rank']} in "
          f"{ra['last_share']:.0%}, lateness {a['lateness_seconds'] * 1e6:.1f} us")
    if late == "clean":
        assert ra["named"] is None or a["lateness_seconds"] < 2e-3, (late, ra, a["lateness_seconds"])
    else:
        assert ra["named"] == int(late) and ra["last_share"] >= 0.9, (late, ra)
        assert abs(a["lateness_seconds"] - late_us * 1e-6) <= 0.2 * late_us * 1e-6, (late, a)
PY

# kill RANK ROLE KEPT OPTIONS...: RANK killed while 4 processes serve;
# the document is partial, its failure names RANK with ROLE, and replica
# KEPT's requests are kept (-1: one replica, lost). A kill that came while
# the job was still starting is sent again, later (llm_signalled_early).
kill_case() {
  local rank=$1 role=$2 kept=$3
  shift 3
  local after
  for after in 6 12 24; do
    rm -f "$work/kill.json"
    timeout -s KILL 120 mpirun --oversubscribe -np 4 "$bin" run llm "${stream[@]}" -q "$@" \
      --samples 100000 --timeout 3 -o "$work/kill.json" >"$work/kill.out" 2>&1 &
    kill_rank_of $! "$rank" "$after"
    echo "kill: SIGKILL to rank $rank ($role) after $after s -> mpirun ended after $took s"
    [ "$took" -le 15 ] || fail "the killed shard's job took $took s to end"
    llm_signalled_early "$work/kill.json" || break
  done
  grep -q "rank $rank ($role) on .* lost" "$work/kill.out" ||
    fail "the error names no role: $(grep error "$work/kill.out")"
  python3 - "$work/kill.json" "rank $rank ($role)" "$kept" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
who, kept = sys.argv[2], int(sys.argv[3])
assert d["status"] == "partial", d["status"]
m = d["measurements"][0]
f = m["failure"]
assert f["status"] == "rank-lost", f
assert who in f["reason"] and "died" in f["reason"], f
ranks = m["runs"][0]["ranks"]
assert ranks[1 - kept if kept >= 0 else 0]["status"] == "rank-lost", [r["status"] for r in ranks]
if kept >= 0:
    assert sum(q["status"] == "ok" for q in ranks[kept]["requests"]) > 0, ranks[kept].get("error")
PY
}
# Shard 1 of replica 0 (2 replicas of 2 shards); shard 0 of replica 1.
kill_case 1 "tensor-parallel shard 1 of 2, replica 0 of 2" 1 --tp 2
kill_case 2 "tensor-parallel shard 0 of 2, replica 1 of 2" 0 --tp 2
# Shard 1 of stage 1 of the one replica of 2 stages of 2 shards.
kill_case 3 "tensor-parallel shard 1 of 2, pipeline stage 1 of 2, replica 0 of 1" -1 --tp 2 --pp 2

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all llm tensor-parallel mpirun checks passed"
