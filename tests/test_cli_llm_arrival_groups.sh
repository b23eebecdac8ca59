#!/usr/bin/env bash
# Arrival skew per tensor-parallel group of llm on the CPU backend, shards
# as threads (docs/stragglers.md, "llm's tensor-parallel all-reduces"):
# with 2 replicas of 2 shards, a shard waiting 100 ms before every prefill
# and decode (--inject late) is named in its own replica's summary, the
# other replica's names nobody; with --pp 2 each stage's shards are a
# group, the late shard named in its stage; clean runs name nobody; the
# CSV gives each group in arrival_stages; a malformed
# group is refused. $1 is the gpuscale binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
. "$(dirname "$0")/llm_arrival_groups.sh"
launch=()

arrival_case dp_late3 0:0:nobody 1:0:1 -- --ranks 4 --inject late:rank=3,us=$late_us
arrival_case dp_late0 0:0:0 1:0:nobody -- --ranks 4 --inject late:rank=0,us=$late_us
arrival_case dp_clean 0:0:nobody 1:0:nobody -- --ranks 4
arrival_case pp_late2 0:0:nobody 0:1:0 -- --ranks 4 --pp 2 --kv-heads 4 --inject late:rank=2,us=$late_us
arrival_case pp_clean 0:0:nobody 0:1:nobody -- --ranks 4 --pp 2 --kv-heads 4

"$bin" report --format csv -o "$work/dp.csv" "$work/dp_late3.json" || fail "csv report"
python3 - "$work/dp.csv" <<'PY' || failures=$((failures + 1))
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows and all(r["arrival_named"] == "" for r in rows), [r["arrival_named"] for r in rows]
stages = rows[0]["arrival_stages"].split(";")
assert stages[0].startswith("replica=0 stage=0 named=nobody"), stages
assert stages[1].startswith("replica=1 stage=0 named=1 named_rank=3"), stages
PY

# A malformed group is refused, naming the file and the member.
python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
work = sys.argv[1]
doc = json.load(open(f"{work}/dp_late3.json"))
doc["measurements"][0]["arrival_groups"][1]["replica"] = -1
json.dump(doc, open(f"{work}/bad_replica.json", "w"))
doc["measurements"][0]["arrival_groups"][1]["replica"] = 1
doc["measurements"][0]["arrival_groups"][1]["global_ranks"] = [2]
json.dump(doc, open(f"{work}/bad_members.json", "w"))
doc["measurements"][0]["arrival_groups"] = {}
json.dump(doc, open(f"{work}/bad_groups.json", "w"))
PY
expect 1 "bad_replica.json: arrival group of stage 0: its replica is not" -- report \
  "$work/bad_replica.json"
expect 1 "bad_members.json: an arrival group's stage is 0 and its global_ranks has 1 of 2" -- \
  report "$work/bad_members.json"
expect 1 "bad_groups.json: a measurement's arrival_groups is an object" -- report \
  "$work/bad_groups.json"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all llm arrival group checks passed"
