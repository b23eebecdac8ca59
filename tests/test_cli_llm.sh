#!/usr/bin/env bash
# End-to-end tests of `gpuscale run/scale llm` on the CPU backend with the
# tiny model: bad options exit 2 naming the option, scenarios write result
# documents with the llm members and per-sample requests.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

cpu=(--backend cpu --model tiny --input-min 4 --input-max 10 --output-min 2 --output-max 5 --no-progress)
expect 0 "Options of llm" -- run llm --help
expect 2 "option --scenario" -- run llm "${cpu[@]}" --scenario batch
expect 2 "belong to --scenario server" -- run llm "${cpu[@]}" --rate 3
expect 2 "--iters and --min-time do not apply to llm" -- run llm "${cpu[@]}" --iters 5
expect 2 "option --hidden" -- run llm "${cpu[@]}" --hidden 60
expect 2 "option --kv-heads" -- run llm "${cpu[@]}" --kv-heads 3
expect 2 "option --input-min" -- run llm "${cpu[@]}" --input-min 20
expect 2 "single-stream" -- run llm "${cpu[@]}" --scenario single-stream --batch 4
expect 2 "option --sample-timeout" -- run llm "${cpu[@]}" --sample-timeout -1
expect 2 "option --model: llama-8b has 8030261248 parameters" -- run llm --backend cpu --model llama-8b
expect 0 "the model is the tiny preset" -- run llm --backend cpu --samples 2 --no-progress -o "$work/default.json"

expect 0 "tokens are meaningless" -- run llm "${cpu[@]}" --samples 12 --batch 4 -o "$work/offline.json"
expect 0 "bounds" -- run llm "${cpu[@]}" --scenario server --rate 100 --samples 8 -o "$work/server.json"
# The CUDA launch switches are accepted (and recorded) on the CPU backend.
expect 0 "single-stream" -- run llm "${cpu[@]}" --scenario single-stream --samples 4 \
  --no-overlap --no-graphs -o "$work/single.json"
expect 0 "rank 1" -- scale llm "${cpu[@]}" --ranks 2 --dispatch dynamic --samples 10 -o "$work/scale.json"
expect 0 "4 timed out" -- run llm "${cpu[@]}" --samples 4 --sample-timeout 0.000001 -o "$work/timeout.json"
# Tensor parallelism: a replica over 2 CPU ranks; splits the model does not
# allow and runs that are not whole replicas are refused by name.
expect 2 "option --tp 3: the model's 4 query heads do not split evenly over 3 shards" -- \
  run llm "${cpu[@]}" --ranks 3 --tp 3
expect 2 "option --tp 2: a replica needs 2 ranks, and no measured size \(largest 3\)" -- \
  run llm "${cpu[@]}" --ranks 3 --tp 2
expect 0 "measuring only the sizes that are whole replicas" -- \
  scale llm "${cpu[@]}" --ranks 4 --tp 2 --samples 8 -o "$work/tp.json"
expect 0 "" -- scale llm "${cpu[@]}" --ranks 4 --samples 8 -o "$work/dp.json"
expect 0 "tensor against data parallelism at 4 ranks: tp 2 \(2 replicas\) .* data parallel \(4 replicas\)" -- \
  report "$work/dp.json" "$work/tp.json"
expect 0 "tensor against data parallelism at 2 ranks: tp 2 \(1 replica\)" -- \
  report "$work/dp.json" "$work/tp.json"
# Its ratios carry their 95% intervals: the throughput's over runs ("[-]"
# with one run a side), the TPOT medians' over requests.
expect 0 "throughput [0-9.]+x \[-\], time per token [0-9.]+x \[[0-9.]+, [0-9.]+\]" -- \
  report "$work/dp.json" "$work/tp.json"
expect 0 "" -- scale llm "${cpu[@]}" --ranks 2 --tp 2 --samples 8 --runs 3 -o "$work/tp3.json"
expect 0 "" -- scale llm "${cpu[@]}" --ranks 2 --samples 8 --runs 3 -o "$work/dp3.json"
expect 0 "throughput [0-9.]+x \[[0-9.]+, [0-9.]+\], time per token [0-9.]+x \[[0-9.]+, [0-9.]+\]" -- \
  report "$work/dp3.json" "$work/tp3.json"

python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, os, sys
work = sys.argv[1]
def load(name):
    with open(os.path.join(work, name)) as f:
        return json.load(f)
for name, scenario in [("offline.json", "offline"), ("server.json", "server"),
                       ("single.json", "single-stream")]:
    d = load(name)
    assert d["status"] == "ok", d["status"]
    m = d["measurements"][0]
    assert m["workload"] == "llm" and m["scenario"] == scenario, m["scenario"]
    assert "meaningless" in m["llm"]["note"]
    reqs = m["runs"][0]["ranks"][0]["requests"]
    assert len(reqs) == d["config"]["workload_options"]["samples"]
    keys = {"id", "input_tokens", "output_tokens", "ttft_seconds", "tpot_seconds",
            "latency_seconds", "status", "cold"}
    for q in reqs:
        assert keys <= set(q), q
        assert q["status"] == "ok" and q["cold"] is False
        assert 4 <= q["input_tokens"] <= 10 and 2 <= q["output_tokens"] <= 5
    # Step statistics describe the per-sample latencies.
    lat = sorted(q["latency_seconds"] for q in reqs)
    assert m["aggregate"]["step"]["n"] == len(lat)
    assert abs(m["aggregate"]["step"]["max"] - lat[-1]) < 1e-12
    assert m["llm"]["success_rate"] == 1.0
launch = {name: {k: load(name)["config"]["workload_options"][k] for k in ("overlap", "graphs")}
          for name in ("offline.json", "single.json")}
assert launch == {"offline.json": {"overlap": True, "graphs": True},
                  "single.json": {"overlap": False, "graphs": False}}, launch
server = load("server.json")["measurements"][0]["llm"]["server"]
assert server["target_rate"] == 100 and "bounds_met" in server
scale = load("scale.json")
assert [m["world_size"] for m in scale["measurements"]] == [1, 2]
two = scale["measurements"][1]
ids = sorted(q["id"] for r in two["runs"][0]["ranks"] for q in r["requests"])
assert ids == list(range(10)), ids
assert len(two["llm"]["ranks"]) == 2 and two["aggregate"]["speedup"] > 0
t = load("timeout.json")["measurements"][0]
assert t["llm"]["timed_out"] == 4 and t["llm"]["success_rate"] == 0.0
assert all(q["status"] == "timed_out" and q["latency_seconds"] is None
           for q in t["runs"][0]["ranks"][0]["requests"])
tp = load("tp.json")
assert tp["status"] == "ok", tp["status"]
assert [m["world_size"] for m in tp["measurements"]] == [2, 4]
for m in tp["measurements"]:
    replicas = m["world_size"] // 2
    assert m["llm"]["tensor_parallel"] == 2 and len(m["llm"]["ranks"]) == replicas
    assert m["parallelism"] == {"gpus_per_rank": 2, "option": "tp"}, m["parallelism"]
    assert len(m["runs"][0]["ranks"]) == replicas
    assert all(len(r["devices"]) == 2 for r in m["llm"]["ranks"])
    assert m["llm"]["ok"] == 8, m["llm"]["ok"]
assert tp["config"]["workload_options"]["tp"] == 2
PY

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all llm CLI tests passed"
