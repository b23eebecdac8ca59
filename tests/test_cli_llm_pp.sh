#!/usr/bin/env bash
# End-to-end tests of llm's pipeline (--pp) on the CPU backend: layouts
# that cannot be built are usage errors naming the option; P = 2 and 3
# stages (with several micro-batches per call and --stages boundaries),
# data x pipeline (2 replicas of 2 stages) and tensor x pipeline (2 stages
# of 2 shards) on 4 ranks, each replica's tokens and logits checked against
# the whole model on one rank (bit for bit without tensor parallelism); the
# document's llm.pipeline (stages, their layers, busy and idle seconds, the
# bubble beside (p-1)/(m+p-1)) and the terminal's stage lines.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

small=(--backend cpu --model tiny --layers 6 --input-min 4 --input-max 10 --output-min 3
       --output-max 6 --samples 12 --batch 4 --no-progress)
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
expect 2 "option --layouts: varies --tp only; not with --pp" -- \
  run llm "${small[@]}" --ranks 2 --pp 2 --layouts
[ ! -e "$work/odd.json" ] && [ ! -e "$work/small.json" ] || fail "a usage error wrote a document"

expect 0 "" -- run llm "${small[@]}" --ranks 2 --pp 2 -o "$work/pp2.json"
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
        assert abs(s["idle_fraction"] - s["idle_seconds"] / p["pass_seconds"]) < 1e-9, s
    idle = sum(s["idle_seconds"] for s in p["per_stage"])
    assert abs(p["bubble_fraction"] - idle / (stages * p["pass_seconds"])) < 1e-9, p
    assert abs(p["formula_bubble_fraction"] - (stages - 1) / (micro + stages - 1)) < 1e-12, p
    ok = sum(q["status"] == "ok" for r in runs for q in r["requests"])
    assert ok == 12, (name, ok)
PY

# Under a launcher the stages would be processes: refused, naming --pp.
if command -v mpirun >/dev/null 2>&1; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  out=$(timeout -s KILL 60 mpirun --oversubscribe -np 2 "$bin" run llm "${small[@]}" --pp 2 \
        -o "$work/mpi.json" 2>&1)
  rc=$?
  [ "$rc" = 2 ] || fail "mpirun -np 2 run llm --pp 2 exited $rc, expected 2: $out"
  grep -q "option --pp: a replica's stages run as threads of one process" <<<"$out" ||
    fail "mpirun --pp: the refusal names no option: $out"
fi

exit $((failures > 0))
