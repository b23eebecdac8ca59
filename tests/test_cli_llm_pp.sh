#!/usr/bin/env bash
# End-to-end tests of llm's pipeline (--pp) on the CPU backend: layouts
# that cannot be built are usage errors naming the option; P = 2 and 3
# stages (with several micro-batches per call and --stages boundaries),
# data x pipeline (2 replicas of 2 stages) and tensor x pipeline (2 stages
# of 2 shards) on 4 ranks, each replica's tokens and logits checked against
# the whole model on one rank (bit for bit without tensor parallelism); the
# document's llm.pipeline (stages, their layers, busy and idle seconds, the
# bubble against (p-1)/m with its interval and verdict, the stage imbalance
# with its interval), the per-call samples behind them (bounded: merged in
# pairs past 128), the terminal's lines, and the report's pipeline table,
# why-not sentence and transfers priced by a sendrecv document. Under
# mpirun (skipped without it) each stage is a process: 2 and 3 stages and
# 2 replicas of 2 stages, and a stage killed while the job serves ends
# partial with its rank, stage and replica named.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

stream=(--backend cpu --model tiny --layers 6 --input-min 4 --input-max 10 --output-min 3
        --output-max 6 --batch 4 --no-progress)
small=("${stream[@]}" --samples 12)
expect 2 "option --micro-batches: needs --pp above 1" -- run llm "${small[@]}" --micro-batches 2
expect 2 "option --stages: needs --pp above 1" -- run llm "${small[@]}" --stages 3
expect 2 "option --pp 4: 6 layers do not divide into 4 equal stages" -- \
  run llm "${small[@]}" --ranks 4 --pp 4
expect 2 "option --pp 7: the model has only 6 layers" -- run llm "${small[@]}" --ranks 7 --pp 7
expect 2 "option --stages: takes 2 layers \(the first of stages 1..2\) for --pp 3, got 1" -- \
  run llm "${small[@]}" --ranks 3 --pp 3 --stages 2
expect 2 "option --stages: layer 6 must lie after 2" -- \
  run llm "${small[@]}" --ranks 3 --pp 3 --stages 2,6
expect 2 "option --pp 2: a replica needs 2 ranks, and no measured size \(largest 3\)" -- \
  run llm "${small[@]}" --ranks 3 --pp 2 -o "$work/odd.json"
expect 2 "option --tp 2 x --pp 2: a replica needs 4 ranks" -- \
  run llm "${small[@]}" --ranks 2 --tp 2 --pp 2 -o "$work/small.json"
expect 2 "option --micro-batches 5: a batch of 4 sequences has fewer" -- \
  run llm "${small[@]}" --ranks 2 --pp 2 --micro-batches 5
expect 2 "option --layouts: measures every --pp itself; not with --pp" -- \
  run llm "${small[@]}" --ranks 2 --pp 2 --layouts
[ ! -e "$work/odd.json" ] && [ ! -e "$work/small.json" ] || fail "a usage error wrote a document"

expect 0 "bubble \(idle / busy\) [0-9.]+% \[[0-9.]+, [0-9.]+\] against \(p-1\)/m 50.0%: (within 15% of|above|below|inconclusive)" \
  -- run llm "${small[@]}" --ranks 2 --pp 2 -o "$work/pp2.json"
expect 0 "stage 2 \(layers 4..5\): busy" -- run llm "${small[@]}" --ranks 3 --pp 3 --micro-batches 4 \
  -o "$work/pp3.json"
expect 0 "" -- run llm "${small[@]}" --ranks 2 --pp 2 --stages 1 --micro-batches 3 -o "$work/bounds.json"
expect 0 "" -- run llm "${small[@]}" --ranks 4 --pp 2 -o "$work/dp-pp.json"
expect 0 "" -- run llm "${small[@]}" --ranks 4 --tp 2 --pp 2 -o "$work/tp-pp.json"

python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, os, sys
work = sys.argv[1]
cases = {  # file: (stages, micro-batches, first layers, replicas, tp, bit for bit)
    "pp2.json": (2, 2, [0, 3], 1, 1, True),
    "pp3.json": (3, 4, [0, 2, 4], 1, 1, True),
    "bounds.json": (2, 3, [0, 1], 1, 1, True),
    "dp-pp.json": (2, 2, [0, 3], 2, 1, True),
    "tp-pp.json": (2, 2, [0, 3], 1, 2, False),
}
for name, (stages, micro, firsts, replicas, tp, exact) in cases.items():
    d = json.load(open(os.path.join(work, name)))
    assert d["status"] == "ok", (name, d["status"])
    m = d["measurements"][0]
    assert m["world_size"] == replicas * tp * stages, name
    assert m["parallelism"] == {"gpus_per_rank": tp * stages, "option": "pp"}, m["parallelism"]
    assert d["config"]["workload_options"]["pp"] == stages, name
    assert d["config"]["workload_options"]["stage_first_layers"] == firsts, name
    v = m["verification"]
    assert v["status"] == "passed" and v["mismatches"] == 0, (name, v)
    assert ("bit for bit" in v["detail"]) == exact and v["max_abs_error"] == 0, (name, v)
    assert "%d pipeline stages x %d tensor-parallel shard" % (stages, tp) in v["detail"], v
    runs = m["runs"][0]["ranks"]
    assert len(runs) == replicas, (name, len(runs))
    llm = m["llm"]
    assert [len(r["devices"]) for r in llm["ranks"]] == [tp * stages] * replicas, llm["ranks"]
    p = llm["pipeline"]
    assert p["stages"] == stages and p["micro_batches"] == micro, (name, p)
    layers = [b - a for a, b in zip(firsts, firsts[1:] + [6])]
    assert [s["layers"] for s in p["per_stage"]] == layers, (name, p["per_stage"])
    assert [s["first_layer"] for s in p["per_stage"]] == firsts, name
    assert p["pass_seconds"] > 0, p
    for s in p["per_stage"]:
        assert 0 < s["busy_seconds"] <= p["pass_seconds"] + 1e-9, (name, s)
        assert abs(s["busy_seconds"] + s["idle_seconds"] - p["pass_seconds"]) < 1e-9, s
    # One bubble for every workload: the stages' idle over their busy time
    # against (p-1)/m, with its interval and the verdict from it.
    idle = sum(s["idle_seconds"] for s in p["per_stage"])
    busy = sum(s["busy_seconds"] for s in p["per_stage"])
    assert abs(p["bubble"] - idle / busy) < 1e-9 * p["bubble"], p
    assert abs(p["bubble_formula"] - (stages - 1) / micro) < 1e-12, p
    assert p["bubble_low"] <= p["bubble"] <= p["bubble_high"], p
    f, lo, hi = p["bubble_formula"], p["bubble_low"], p["bubble_high"]
    want = ("within 15%" if lo >= 0.85 * f and hi <= 1.15 * f else "above" if lo > 1.15 * f
            else "below" if hi < 0.85 * f else "inconclusive")
    assert p["bubble_verdict"] == want, (want, p)
    slowest = max(s["busy_seconds"] for s in p["per_stage"])
    assert abs(p["imbalance"] - slowest / (busy / stages)) < 1e-9, p
    assert p["imbalance_low"] <= p["imbalance"] <= p["imbalance_high"], p
    # The per-call samples behind the intervals add up to the totals.
    samples = [r["pipeline_samples"] for run in m["runs"] for r in run["ranks"]]
    assert p["sample"] == "calls" and p["samples"] == sum(len(x["seconds"]) for x in samples), p
    assert abs(sum(sum(x["seconds"]) for x in samples) - p["pass_seconds"]) < 1e-9, p
    for k, s in enumerate(p["per_stage"]):
        got = sum(sum(x["stage_busy_seconds"][k]) for x in samples)
        assert abs(got - s["busy_seconds"]) < 1e-9, (name, k, got, s)
    for x in samples:
        assert x["calls_per_sample"] == 1 and len(x["seconds"]) <= 128, x
        assert all(g == min(micro, q) for g, q in zip(x["micro_batches"], x["sequences"])), x
    ok = sum(q["status"] == "ok" for r in runs for q in r["requests"])
    assert ok == 12, (name, ok)
PY

# More calls than samples: neighbours merge (2 calls a sample here), and
# the samples still add up to the totals. The report's bubble, imbalance
# and their intervals are the terminal's (the same samples, the same
# function); with a sendrecv document the transfers are priced per sample.
expect 0 "stage imbalance \(slowest / mean busy\) [0-9.]+x \[[0-9.]+, [0-9.]+\]; 95% intervals over 2 run\(s\)" \
  -- run llm "${stream[@]}" --samples 100 --runs 2 --ranks 2 --pp 2 -o "$work/long.json"
"$bin" coll sendrecv --backend cpu --ranks 2 -b 512 -e 64K --stepfactor 4 -n 10 -w 2 \
  -o "$work/sendrecv.json" >/dev/null 2>&1 || fail "coll sendrecv on the CPU backend"
"$bin" report -f json "$work/long.json" >"$work/long-report.json" 2>/dev/null || fail "report json"
"$bin" report -f json "$work/long.json" "$work/sendrecv.json" >"$work/long-apart.json" 2>/dev/null ||
  fail "report json with sendrecv"
out=$("$bin" report "$work/long.json" 2>&1)
grep -qE "^ +2 +2 +2 +- +call +[0-9.]+% \[[0-9.]+, [0-9.]+\] +50\.0% +(within 15%|above|below|inconclusive) +[0-9.]+x \[[0-9.]+, [0-9.]+\] +[0-9.]+ KiB +- +-$" <<<"$out" ||
  fail "report: no llm pipeline row: $out"
grep -qE "Why not 2 x \(pipeline, 2 ranks\): the stages wait [0-9.]+% \[[0-9.]+, [0-9.]+\] of their compute time \(the bubble\) against \(p-1\)/m 50\.0%.* the slowest stage computes [0-9.]+x \[[0-9.]+, [0-9.]+\] the mean stage's; the transfers are not separated" <<<"$out" ||
  fail "report: no llm why-not sentence: $out"
python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, os, sys
w = sys.argv[1]
d = json.load(open(os.path.join(w, "long.json")))
m = d["measurements"][0]
p = m["llm"]["pipeline"]
samples = [r["pipeline_samples"] for run in m["runs"] for r in run["ranks"]]
assert len(samples) == 2 and all(x["calls_per_sample"] == 2 for x in samples), [x["calls_per_sample"] for x in samples]
assert all(65 <= len(x["seconds"]) <= 128 for x in samples), [len(x["seconds"]) for x in samples]
assert all(c == 2 for x in samples for c in x["calls"][:-1]), samples[0]["calls"]
assert abs(sum(sum(x["seconds"]) for x in samples) - p["pass_seconds"]) < 1e-9, p
def row(name):
    rep = json.load(open(os.path.join(w, name)))
    return [r for s in rep["series"] for r in s["rows"] if "pipeline" in r][0]["pipeline"]
r = row("long-report.json")
assert r["per"] == "call" and r["schedule"] == "-" and r["transfer_source"] is None, r
for key in ("bubble", "bubble_low", "bubble_high", "bubble_formula", "bubble_verdict", "imbalance",
            "imbalance_low", "imbalance_high"):
    assert r[key] == p[key] or abs(r[key] - p[key]) <= 1e-12 * abs(p[key]), (key, r[key], p[key])
calls = sum(sum(x["calls"]) for x in samples)
for k, s in enumerate(p["per_stage"]):
    assert abs(r["stage_busy"][k] - s["busy_seconds"] / calls) < 1e-12, (k, r, s)
rows = sum(sum(x["rows"]) for x in samples)
seqs = sum(sum(x["sequences"]) for x in samples)
assert abs(r["transfer_bytes"] - ((rows * 64 * 4) + 4 * seqs) / calls) < 1e-9, r
a = row("long-apart.json")
assert a["transfer_source"].endswith("sendrecv.json") and all(t > 0 for t in a["stage_transfer"]), a
for k in range(2):
    assert abs(a["stage_idle"][k] + a["stage_transfer"][k] - r["stage_idle"][k]) < 1e-12, (k, a, r)
assert abs(a["transfer_seconds"] - sum(a["stage_transfer"])) < 1e-15, a
assert a["bubble"] < r["bubble"] and a["bubble_low"] <= a["bubble"] <= a["bubble_high"], (a, r)
PY

# Under a launcher each stage is a process (one rank each): 2 and 3 stages,
# and 2 replicas of 2 stages, verified and with every stage's busy time.
if command -v mpirun >/dev/null 2>&1; then
  # Open MPI's own plugins leak at exit, as in the other mpirun tests.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  bin=$(readlink -f "$bin")
  for np in 2 3 4; do
    pp=$([ "$np" = 3 ] && echo 3 || echo 2)
    timeout -s KILL 120 mpirun --oversubscribe -np "$np" "$bin" run llm "${small[@]}" -q --pp "$pp" \
      -o "$work/mpi$np.json" >"$work/mpi$np.out" 2>&1 ||
      fail "mpirun -np $np --pp $pp: $(cat "$work/mpi$np.out")"
  done
  python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, os, sys
for np, stages, replicas in ((2, 2, 1), (3, 3, 1), (4, 2, 2)):
    d = json.load(open(os.path.join(sys.argv[1], "mpi%d.json" % np)))
    assert d["status"] == "ok", (np, d["status"])
    m = d["measurements"][0]
    assert m["world_size"] == np and len(m["runs"][0]["ranks"]) == replicas, np
    assert m["verification"]["status"] == "passed", m["verification"]
    p = m["llm"]["pipeline"]
    assert p["stages"] == stages and all(s["busy_seconds"] > 0 for s in p["per_stage"]), p
    # Stages over processes: each replica's run is one sample (its totals).
    assert p["sample"] == "run" and p["samples"] == replicas, p
    for r in m["runs"][0]["ranks"]:
        x = r["pipeline_samples"]
        assert len(x["seconds"]) == 1 and x["rows"] == [None] and x["calls"][0] > 0, x
    assert p["bubble_formula"] == (stages - 1) / p["micro_batches"] and p["bubble"] > 0, p
    ok = sum(q["status"] == "ok" for r in m["runs"][0]["ranks"] for q in r["requests"])
    assert ok == 12, (np, ok)
PY

  # Stage 1 of replica 0 killed while the job serves: a partial document
  # whose failure names the rank, its stage and its replica; the other
  # replica's requests are kept.
  # A kill that came while the job was still starting is sent again, later.
  for after in 6 12 24; do
    rm -f "$work/kill.json"
    timeout -s KILL 120 mpirun --oversubscribe -np 4 "$bin" run llm "${stream[@]}" -q --pp 2 \
      --samples 100000 --timeout 3 -o "$work/kill.json" >"$work/kill.out" 2>&1 &
    kill_rank_of $! 1 "$after"
    echo "kill: SIGKILL to rank 1 (stage 1 of replica 0) after $after s -> mpirun ended after $took s"
    [ "$took" -le 15 ] || fail "the killed stage's job took $took s to end"
    llm_signalled_early "$work/kill.json" || break
  done
  grep -q "rank 1 (pipeline stage 1 of 2, replica 0 of 2) on .* lost" "$work/kill.out" ||
    fail "the error names no stage: $(grep error "$work/kill.out")"
  python3 - "$work/kill.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "partial", d["status"]
m = d["measurements"][0]
f = m["failure"]
assert f["status"] == "rank-lost" and f["rank"] == 0, f
assert "rank 1 (pipeline stage 1 of 2, replica 0 of 2)" in f["reason"] and "died" in f["reason"], f
ranks = m["runs"][0]["ranks"]
assert [r["status"] for r in ranks][0] == "rank-lost", [r["status"] for r in ranks]
assert sum(q["status"] == "ok" for q in ranks[1]["requests"]) > 0, ranks[1].get("error")
PY
fi

exit $((failures > 0))
