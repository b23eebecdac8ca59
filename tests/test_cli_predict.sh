#!/usr/bin/env bash
# End-to-end tests of `gpuscale predict` and `report --predict`: the holdout
# on the committed 4-GPU results (every error within 15%), the output
# formats and --out, cost, and inputs that cannot be predicted (exit 2 with
# the reason). CPU only: it reads documents. $1 is the gpuscale binary.
set -u
bin=$1
data=$(cd "$(dirname "$0")/data/report" && pwd)
results=$(cd "$(dirname "$0")/../docs/results/2026-11-21-h200x4/threads" && pwd)
. "$(dirname "$0")/cli_lib.sh"

all=("$results/voxelize.json" "$results/mlp.json" "$results/llm.json" "$results/coll.json")

expect 0 "Exit codes: 0 prediction written" -- predict --help
expect 2 "missing FILE" -- predict --ngpus 8
expect 2 "give --ngpus LIST" -- predict "${all[@]}"
expect 2 "option --ngpus" -- predict --ngpus 8,x "${all[@]}"
expect 2 "option --holdout" -- predict --holdout 1 "${all[@]}"
expect 1 "cannot read .*missing.json" -- predict --ngpus 8 "$work/missing.json"
# a count beyond one node must fill whole nodes
expect 2 "do not fill whole nodes of 4 GPUs" -- predict --ngpus 6 "${all[@]}"
# mlp communicates: without a coll document there is no model of its all-reduce
expect 2 "give a coll document of the same machine" -- predict --ngpus 8 "$results/mlp.json"
# collectives of another machine (the CPU fixture's host), one size only, no model
expect 2 "measured on another machine" -- predict --ngpus 8 "$results/mlp.json" "$data/coll.json"
expect 2 "no prediction model for llm" -- predict --ngpus 8 "$data/llm_server_cpu.json"
expect 2 "nothing measured at 8 GPUs or more" -- predict --holdout 8 "${all[@]}"

# The holdout on the committed results: every error within 15%.
"$bin" predict --holdout 4 --format json -o "$work/h.json" "${all[@]}" || fail "holdout exited $?"
python3 - "$work/h.json" <<'PY' || fail "holdout document: see above"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuscale/predict/v1" and d["holdout"] == 4, d.get("schema")
names = [w["series"] for w in d["workloads"]]
assert names == ["voxelize", "mlp", "llm (scenario offline)"], names
for w in d["workloads"]:
    (p,) = w["predictions"]
    assert p["gpus"] == 4, p
    key = "tokens_per_second" if "tokens_per_second" in p else "step_seconds"
    assert p[key] > 0 and abs(p["relative_error"]) < 0.15, (w["series"], p)
    t = p["terms"]
    if key == "step_seconds":
        total = t["work_seconds"] + t["overhead_seconds"] + t["comm_seconds"] + t["imbalance_seconds"]
        assert abs(total - p["step_seconds"]) < 1e-12, (w["series"], total, p["step_seconds"])
mlp = d["workloads"][1]["predictions"][0]
assert mlp["terms"]["comm_seconds"] > 0 and mlp["terms"]["collective"] == "intra-node", mlp
PY

# Without a coll document the p2p document's links give an optimistic bound.
expect 0 "ring over the links of p2p.json.*|4 +1 .* intra-node .* -11\.[0-9]%" -- \
  predict --holdout 4 "$results/mlp.json" "$results/p2p.json"
# One measured count: the overhead cannot be fitted and the note says so.
python3 - "$data/strong.json" "$work/one.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["measurements"] = [m for m in d["measurements"] if m["world_size"] == 1]
json.dump(d, open(sys.argv[2], "w"))
PY
expect 0 "one GPU count measured" -- predict --ngpus 2 "$work/one.json"
# A super-linear series (strong.json with the 2-rank steps at 0.45x: 2.78x
# on 2 ranks) fits no model of work / N plus costs: predict refuses to
# extrapolate (exit 2), naming the measurement the model misses and the
# super-linear gain; report --predict leaves the series out and says why.
python3 - "$data/strong.json" "$work" <<'PY' || fail "writing the super-linear documents"
import json, sys
def scaled(factors, name):
    d = json.load(open(sys.argv[1]))
    for m in d["measurements"]:
        f = factors(m)
        for run in m["runs"]:
            run["step_seconds"] = [x * f for x in run["step_seconds"]]
            for r in run["ranks"]:
                for k in ("device_seconds", "wall_seconds"):
                    if r.get(k):
                        r[k] = [x * f for x in r[k]]
    json.dump(d, open(f"{sys.argv[2]}/{name}", "w"))
    return d
scaled(lambda m: 0.45 if m["world_size"] == 2 else 1.0, "superlinear.json")
# The issue's example: 4.62 ms on 1 rank, 2.12 ms on 2 (2.18x).
d = json.load(open(sys.argv[1]))
mean = {m["world_size"]: sum(s for r in m["runs"] for s in r["step_seconds"]) /
        sum(len(r["step_seconds"]) for r in m["runs"]) for m in d["measurements"]}
scaled(lambda m: {1: 4.62e-3, 2: 2.12e-3}.get(m["world_size"], 1.0) / mean[m["world_size"]],
       "issue.json")
PY
expect 2 "voxelize \(.*superlinear.json\): refusing to extrapolate: the model does not fit the measurement at 1 GPU: it gives .* against 12.5 ms measured .*; the series is super-linear \(2.78x the throughput from 1 to 2 GPUs, 139% per GPU\)" -- \
  predict --ngpus 1,2,4 "$work/superlinear.json"
expect 2 "refusing to extrapolate: the model does not fit the measurement at 1 GPU: it gives .* against 4.62 ms measured .*super-linear \(2.18x the throughput from 1 to 2 GPUs, 109% per GPU\)" -- \
  predict --ngpus 1,2 "$work/issue.json"
"$bin" predict --ngpus 1,2 "$work/issue.json" 2>&1 | grep -E "1[01][0-9]\.[0-9]%|[2-9][0-9][0-9]\.[0-9]%" &&
  fail "predict printed an efficiency above 100% for the issue's example"
expect 0 "Not predicted: voxelize: refusing to extrapolate: the model does not fit the measurement at 1 GPU" -- \
  report --predict 4 "$work/issue.json"
expect 0 "   1 +1 .* 1.00x +100.0%" -- predict --ngpus 1,2,4 "$data/strong.json"
"$bin" predict --ngpus 1,2,4 "$data/strong.json" 2>&1 | grep -q "refusing" &&
  fail "strong.json, which the model fits, was refused"

# Past the machine: nodes, tree across nodes, cost and the cheapest count.
expect 0 "1024 +128 .* tree" -- predict --ngpus 8,1024 --gpus-per-node 8 "${all[@]}"
expect 0 "Cheapest: 1 GPU, .* per million points at \\\$4 per GPU-hour" -- \
  predict --ngpus 1,2,8 --price H200=4 "${all[@]}"
expect 0 "to 1e\\+09 samples" -- predict --ngpus 1,8 --target 1e9 "${all[@]}"
expect 0 "^\\| 16 \\| 2 \\| " -- predict --ngpus 16 --gpus-per-node 8 --format markdown "${all[@]}"
# llm as tensor-parallel replicas of 2 GPUs: two all-reduces per layer cost time
expect 0 "  8 +1 +4 +2x1 +2 " -- predict --ngpus 8 --gpus-per-node 8 --tp 2 "$results/llm.json" "$results/coll.json"
expect 2 "2 GPUs do not hold whole replicas of 4 GPUs \(tensor-parallel 4 x pipeline stages 1\)" -- predict --ngpus 2 --tp 4 "$results/llm.json" "$results/coll.json"

# The network between nodes measured (--inter-node-coll): mlp on 2 H200 with
# NCCL on its network transport (tests/data/predict/h200x2-net, trimmed from
# docs/results/2026-11-24-h200x2-session3), predicted as 2 nodes of 1 GPU
# from the NVLink measurements and the network's 2-rank allreduce, within
# 15% of the step measured on that transport.
net=$(cd "$(dirname "$0")/data/predict/h200x2-net" && pwd)
as_nodes=(predict "$net/mlp-nvlink.json" --ngpus 2 --gpus-per-node 1)
"$bin" "${as_nodes[@]}" --inter-node-coll "$net/coll-net.json" --format json -o "$work/net.json" ||
  fail "predict --inter-node-coll exited $?"
python3 - "$work/net.json" "$net/mlp-net.json" <<'PY' || fail "inter-node prediction: see above"
import json, sys
pred = json.load(open(sys.argv[1]))
(p,) = pred["workloads"][0]["predictions"]
assert p["gpus"] == 2 and p["nodes"] == 2, p
assert p["terms"]["collective"] == "ring" and p["terms"]["collective_from"] == "measured", p
assert pred["machine"]["inter_node_coll"]["file"].endswith("coll-net.json"), pred["machine"]
(m,) = [m for m in json.load(open(sys.argv[2]))["measurements"] if m["world_size"] == 2]
steps = [s for run in m["runs"] for s in run["step_seconds"]]
measured = sum(steps) / len(steps)
error = (p["step_seconds"] - measured) / measured
assert abs(error) <= 0.15, f"predicted {p['step_seconds']} s, measured {measured} s: {error:+.1%}"
PY
# Refused: the figures and the document together, a document that is not a
# coll document, another op, one size, another rank count.
expect 2 "give it or --inter-node/--inter-node-latency, not both" -- \
  "${as_nodes[@]}" --inter-node 3 --inter-node-coll "$net/coll-net.json"
expect 2 "mlp-net.json is not a coll document" -- \
  "${as_nodes[@]}" --inter-node-coll "$net/mlp-net.json"
expect 1 "option --inter-node-coll: .*missing.json" -- \
  "${as_nodes[@]}" --inter-node-coll "$work/missing.json"
python3 - "$net/coll-net.json" "$work" <<'PY'
import copy, json, sys
d = json.load(open(sys.argv[1]))
def save(name, change):
    e = copy.deepcopy(d)
    change(e)
    json.dump(e, open(f"{sys.argv[2]}/{name}", "w"))
def other_op(e):
    for m in e["measurements"]:
        m["collective"]["op"] = "allgather"
def one_size(e):
    e["measurements"] = [m for m in e["measurements"] if m["collective"]["bytes"] == 8]
def four_ranks(e):
    for m in e["measurements"]:
        m["world_size"] = 4
        for run in m["runs"]:
            extra = copy.deepcopy(run["ranks"])
            for k, r in enumerate(extra):
                r["rank"] = 2 + k
            run["ranks"] += extra
save("net-allgather.json", other_op)
save("net-one-size.json", one_size)
save("net-4-ranks.json", four_ranks)
PY
expect 2 "measured allgather; the network is described by an allreduce" -- \
  "${as_nodes[@]}" --inter-node-coll "$work/net-allgather.json"
expect 2 "allreduce was measured at one size only" -- \
  "${as_nodes[@]}" --inter-node-coll "$work/net-one-size.json"
expect 2 "measured allreduce at 4 ranks; the network is described by 2 ranks" -- \
  "${as_nodes[@]}" --inter-node-coll "$work/net-4-ranks.json"
# The node's coll document: its measured curve is used at the count it
# covers and says so.
expect 0 "allreduce at 2 GPUs: as measured from 8 B to 128 MiB" -- \
  predict --ngpus 2 "$net/mlp-net.json" "$net/coll-net.json"
expect 0 "  2 +1 .* intra-node +measured" -- predict --ngpus 2 "$net/mlp-net.json" "$net/coll-net.json"

# --out goes through the atomic path: a failed prediction leaves the file alone.
echo keep >"$work/keep.txt"
"$bin" predict --ngpus 6 -o "$work/keep.txt" "${all[@]}" 2>/dev/null
[ "$(cat "$work/keep.txt")" = keep ] || fail "a failed predict replaced its --out file"
touch "$work/file"
expect 1 "option --out" -- predict --ngpus 8 -o "$work/file/p.txt" "${all[@]}"

# report --predict: the table after the report, and the dashed continuation.
expect 0 "^    16 +4 +21.6 us" -- report --predict 8,16 "${all[@]}"
# report --predict leaves out, and names, what it cannot predict.
expect 0 "Not predicted: llm \(scenario server\): only the offline scenario" -- \
  report --predict 4 "$data/llm_server_cpu.json" "$data/llm_cpu.json"
expect 0 "voxelize: measured on another machine \(fixture, fixture\)" -- \
  report --predict 4 "$data/llm_cpu.json" "$data/strong.json"
expect 2 "option --predict: .* not in json" -- report --predict 8 --format json "${all[@]}"
if "$bin" version --format json | python3 -c 'import json, sys
sys.exit(0 if json.load(sys.stdin).get("gnuplot", {}).get("built_in") else 1)' &&
   command -v gnuplot >/dev/null; then
  "$bin" report --predict 8,16,64 --plots "$work/plots" -o "$work/r.txt" "${all[@]}" ||
    fail "report --predict --plots exited $?"
  grep -q "predicted" "$work/plots/voxelize-speedup.svg" ||
    fail "the speedup plot lacks the predicted curve"
fi

[ "$failures" = 0 ] || exit 1
echo "test_cli_predict: all passed"
