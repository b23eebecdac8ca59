#!/usr/bin/env bash
# --arrival-times 0|1, one option in every measuring command that records
# arrival times (docs/stragglers.md, "Arrival skew"), on the CPU backend:
# run mlp (its gradient all-reduce through the runner), run llm (2
# tensor-parallel shards), scale mlp and coll write an "arrival" member by
# default and with 1, none with 0, and config.arrival_times says which; a
# bad value is a usage error naming the option; coll's old --arrival is
# refused with its new name. The report keeps one series across an llm
# document of before (arrival_times among the workload's options) and one
# of now. $1 is the gpuscale binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
mlp=(run mlp --backend cpu --ranks 2 --layers 50,32,16,3 --samples 1024 --iters 10 --warmup 1
     --runs 1 -q)
llm=(run llm --backend cpu --ranks 2 --tp 2 --model tiny --input-min 4 --input-max 6
     --output-min 2 --output-max 3 --samples 4 --batch 2 -q)
scale=(scale mlp --backend cpu --ranks 2 --counts 2 --layers 50,32,16,3 --samples 1024 --iters 10
       --warmup 1 --runs 1 -q)
coll=(coll allreduce --backend cpu --ranks 2 -b 8 -e 8 -n 5 -w 1 -q)

for cmd in mlp llm scale coll; do
  eval "args=(\"\${$cmd[@]}\")"
  expect 0 "" -- "${args[@]}" -o "$work/$cmd-default.json"
  expect 0 "" -- "${args[@]}" --arrival-times 1 -o "$work/$cmd-1.json"
  expect 0 "" -- "${args[@]}" --arrival-times 0 -o "$work/$cmd-0.json"
  expect 2 "option --arrival-times" -- "${args[@]}" --arrival-times 2
done
expect 2 "option --arrival-times" -- run mlp --backend cpu --arrival-times on
expect 2 "option --arrival does not apply to gpuscale coll: is --arrival-times 0\|1 now" -- \
  "${coll[@]}" --arrival 0
expect 0 "Stragglers:" -- run mlp --help
expect 0 "--arrival-times 0\|1" -- coll --help

python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
work = sys.argv[1]
for cmd in ("mlp", "llm", "scale", "coll"):
    for given, records in (("default", True), ("1", True), ("0", False)):
        doc = json.load(open(f"{work}/{cmd}-{given}.json"))
        assert doc["config"]["arrival_times"] is records, (cmd, given, doc["config"])
        assert "arrival_times" not in (doc["config"].get("workload_options") or {}), (cmd, given)
        ms = doc["measurements"]
        assert ms and all(("arrival" in m) is records for m in ms), (cmd, given)
        if records:
            assert all(m["arrival"]["iterations"] > 0 for m in ms), (cmd, given)
        print(f"{cmd} --arrival-times {given}: {len(ms)} measurement(s), "
              f"arrival {'recorded' if records else 'none'}")
# An llm document of before: the option among the workload's options when given.
old = json.load(open(f"{work}/llm-1.json"))
old["config"]["workload_options"]["arrival_times"] = True
del old["config"]["arrival_times"]
json.dump(old, open(f"{work}/llm-old.json", "w"))
PY
"$bin" report --format json -o "$work/both.report.json" "$work/llm-old.json" "$work/llm-0.json" ||
  fail "report of an old and a new llm document failed"
python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
report = json.load(open(sys.argv[1] + "/both.report.json"))
series = report["series"]
assert len(series) == 1 and len(series[0]["rows"]) == 2, [(s.get("workload"), len(s["rows"])) for s in series]
print("an llm document of before and one of now: one series")
PY

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all --arrival-times checks passed"
