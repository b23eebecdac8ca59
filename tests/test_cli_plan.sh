#!/usr/bin/env bash
# End-to-end tests on the CPU backend of task placement and splits: a
# heterogeneous plan (voxelize, fuse and resample at once) with its result
# document, bad tasks, fault injection and the proportional split of
# `gpuscale run`, resample and fuse option errors.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

expect 0 "Options of fuse" -- run fuse --help
expect 0 "--task" -- plan --help
expect 2 "no --task given" -- plan --backend cpu
expect 2 "expected DEVICES:WORKLOAD" -- plan --backend cpu --task fuse
expect 2 "unknown workload 'fusion'" -- plan --backend cpu --task '0:fusion'
# A workload with its own timing loop cannot share the plan's start gate: it
# is refused before anything runs (it once left the other task waiting at the
# gate forever), and nothing is written.
expect 2 "llm measures itself" -- plan --backend cpu --task '0:llm' \
  --task '1:voxelize --points 2K --clouds 2' --out "$work/llm-plan.json"
[ ! -e "$work/llm-plan.json" ] || fail "a refused plan wrote $work/llm-plan.json"
expect 2 "device 0 already serves another task" -- plan --backend cpu --task '0:fuse' --task '0-1:resample'
expect 2 "unknown option '--pionts'" -- plan --backend cpu --task '0:voxelize --pionts 5'
expect 2 "option --ranks does not apply to gpuscale plan" -- plan --backend cpu --ranks 2 --task '0:fuse'
expect 2 "option --streams" -- run fuse --backend cpu --streams 30x512,100
expect 2 "unknown fault kind 'fast'" -- run fuse --backend cpu --inject fast:rank=0
expect 2 "rank 3 does not exist" -- run fuse --backend cpu --inject slow:rank=3,factor=2
expect 2 "missing factor" -- run fuse --backend cpu --inject slow:rank=0
expect 2 "option --split" -- run fuse --backend cpu --split uneven

timing=(--iters 8 --warmup 1 --runs 2 --no-progress)
expect 0 "system total: .* points/s \+ .* values/s" -- plan --backend cpu "${timing[@]}" \
  --task '0:voxelize --points 20K --clouds 2 --grid 16' --task '1:fuse --batch 2' \
  --task '2,3:resample --batch 4 --samples 50 --targets 40 --dims 16 --dtype float32' \
  --out "$work/plan.json"
expect 0 "split at 2 ranks: even .* proportional \(units [0-9]+,[0-9]+\) .* gain" -- run resample \
  --backend cpu --ranks 2 --batch 24 --samples 300 --targets 128 --dims 64 --dtype float32 \
  --split proportional --inject slow:rank=1,factor=3 --iters 12 --warmup 1 --runs 1 --no-progress \
  --out "$work/split.json"
expect 0 "" -- run fuse --backend cpu --ranks 2 "${timing[@]}" --inject slow:rank=0,factor=1.5 \
  --inject slow:rank=1,factor=2 --out "$work/faults.json"

python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, os, sys
work = sys.argv[1]
def load(name):
    with open(os.path.join(work, name)) as f:
        return json.load(f)
plan = load("plan.json")
assert plan["command"] == "plan" and plan["status"] == "ok", plan["status"]
ms = plan["measurements"]
assert [m["workload"] for m in ms] == ["voxelize", "fuse", "resample"]
assert [m["task"] for m in ms] == [0, 1, 2]
assert [m["world_size"] for m in ms] == [1, 1, 2]
assert all(m["verification"]["status"] == "passed" for m in ms)
tasks = plan["config"]["tasks"]
assert tasks[2]["workload_options"]["dtype"] == "float32" and tasks[2]["ranks"] == 2
summary = plan["plan"]
assert len(summary["tasks"]) == 3 and len(summary["tasks"][2]["devices"]) == 2
assert all(d["items_per_second"] > 0 for t in summary["tasks"] for d in t["devices"])
totals = {t["item_unit"]: t["throughput_items_per_second"] for t in summary["totals"]}
assert set(totals) == {"points", "values"}
want = ms[1]["aggregate"]["throughput_items_per_second"] + ms[2]["aggregate"]["throughput_items_per_second"]
assert abs(totals["values"] - want) <= 1e-9 * want, (totals, want)

split = load("split.json")
even, prop = split["measurements"]
assert even["split"]["policy"] == "even" and prop["split"]["policy"] == "proportional"
assert even["split"]["units"] == [12, 12] and sum(prop["split"]["units"]) == 24
assert prop["split"]["units"][0] > prop["split"]["units"][1]
rates = prop["split"]["calibration_items_per_second"]
assert len(rates) == 2 and rates[0] > rates[1] > 0
assert prop["faults"] == [{"kind": "slow", "rank": 1, "factor": 3}]
assert split["config"]["inject"] == prop["faults"] and split["config"]["split"] == "proportional"
ranks = prop["runs"][0]["ranks"]
assert [r["items_per_step"] for r in ranks] == [u * 128 * 64 for u in prop["split"]["units"]]

faults = load("faults.json")
m = faults["measurements"][0]
assert m["faults"] == [{"kind": "slow", "rank": 0, "factor": 1.5}, {"kind": "slow", "rank": 1, "factor": 2}]
assert "split" not in m
PY

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all plan and split CLI tests passed"
