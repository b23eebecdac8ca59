#!/usr/bin/env bash
# End-to-end tests of predict on llm's pipelined replicas (--pp), CPU
# backend: real documents of the tiny model at 1 GPU and as one replica of
# 2 and 3 stages, their run times set to a known model (a round of one GPU
# 0.1 s, half of a stage's call fixed whatever its rows) so that the
# figures are exact. A pipelined measurement is predicted as stages, not
# as tensor-parallel GPUs (no coll document needed; its 1-GPU round 1.5 x
# smaller than its own, where tp 2 made it 2 x larger); a layout held out
# (--holdout-layout) is predicted from the others with its error's
# interval and the verdict the interval allows; usage errors name the
# option. docs/predict.md, "Pipelined replicas".
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

stream=(--backend cpu --model tiny --layers 6 --input-min 4 --input-max 10 --output-min 3
        --output-max 6 --batch 4 --no-progress --samples 12 --runs 3 -q)
expect 0 "" -- run llm "${stream[@]}" --ranks 1 -o "$work/one.json"
expect 0 "" -- run llm "${stream[@]}" --ranks 2 --pp 2 -o "$work/pp2.json"
expect 0 "" -- run llm "${stream[@]}" --ranks 2 --pp 2 --micro-batches 4 -o "$work/pp2m4.json"
expect 0 "" -- run llm "${stream[@]}" --ranks 3 --pp 3 -o "$work/pp3.json"

# The known model: 3 rounds of one replica (12 requests in batches of 4),
# each computing 0.1 s on one GPU; at P stages and m micro-batches a call
# takes (P + m - 1) / P x (1/2 + 1/(2m)) of it (equal stages, no transfers
# without a send/recv document). Runs 1%, 0 and -1% around it.
python3 - "$work" <<'PY' || fail "doctoring the documents"
import json, os, sys
work = sys.argv[1]
def run(p, m):
    return 3 * 0.1 * (p + m - 1) / p * (0.5 + 0.5 / m)
for name, p, m in (("one", 1, 1), ("pp2", 2, 2), ("pp2m4", 2, 4), ("pp3", 3, 3)):
    path = os.path.join(work, name + ".json")
    d = json.load(open(path))
    l = d["measurements"][0]["llm"]
    t = run(p, m)
    l["run_seconds"] = [t * 1.01, t, t * 0.99]
    for s in l.get("pipeline", {}).get("per_stage", []):
        s["busy_seconds"] = 1.0  # equal stages: imbalance 1
    if "pipeline" in l:
        assert l["pipeline"]["micro_batches"] == m, (name, l["pipeline"])
    json.dump(d, open(path, "w"))
PY

# A pipeline is not tensor parallelism: no coll document is needed, the
# replica is tp 1 x pp 2, nothing is all-reduced, and at its own layout
# the model gives the measured run.
expect 0 "" -- predict "$work/pp2.json" --ngpus 2 -f json -o "$work/self.json"
# The same run at one GPU (--pp 1): 1.5 x faster than the 2 stages (the
# weights read once per call, not once per group, and no fill or drain),
# where reading it as tp 2 gave twice its round.
expect 0 "" -- predict "$work/pp2.json" --ngpus 1 --pp 1 -f json -o "$work/one-gpu.json"
expect 0 "1x2 m2" -- predict "$work/pp2.json" --ngpus 2,4
python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, os, sys
work = sys.argv[1]
def load(n): return json.load(open(os.path.join(work, n)))
pp2 = load("pp2.json")
tokens = sum(q["output_tokens"] for r in pp2["measurements"][0]["runs"][0]["ranks"]
             for q in r["requests"] if q["status"] == "ok")
w = load("self.json")["workloads"][0]
assert w["model"]["measured_tensor_parallel"] == 1 and w["model"]["measured_pipeline_stages"] == 2, w["model"]
assert w["model"]["fixed_share_fitted"] is False and w["model"]["fixed_share"] == 1, w["model"]
pt = w["predictions"][0]
assert pt["tensor_parallel"] == 1 and pt["pipeline_stages"] == 2 and pt["micro_batches"] == 2, pt
assert pt["terms"]["comm_seconds"] == 0 and pt["terms"]["collective"] == "none", pt["terms"]
run = 3 * 0.1 * 1.5 * 0.75
assert abs(pt["run_seconds"] - run) < 1e-9 * run, (pt["run_seconds"], run)
assert abs(pt["tokens_per_second"] - tokens / run) < 1e-6 * tokens / run, (pt, tokens)
lo, hi = pt["tokens_per_second_low"], pt["tokens_per_second_high"]
assert lo < pt["tokens_per_second"] < hi, pt
# Taken as tp 2, the 1-GPU run would be 2 x this run; as stages it is 1 / 1.5 of it.
one = load("one-gpu.json")["workloads"][0]["predictions"][0]
assert one["gpus"] == 1 and one["pipeline_stages"] == 1 and one["tensor_parallel"] == 1, one
assert abs(one["run_seconds"] - run / 1.5) < 1e-9, (one["run_seconds"], run / 1.5)
PY

# Held out: 3 stages, predicted from 1 GPU and 2 stages at 2 and 4
# micro-batches (which fit the round and the fixed half exactly).
expect 0 "Holdout: fitted on the stream's other layouts \(tp 1 x pp 3 held out\); largest error [-+]0\.0% \[-[0-9.]+%, \+[0-9.]+%\] \(95%.*: the measurement cannot tell the prediction from it" -- \
  predict "$work/one.json" "$work/pp2.json" "$work/pp2m4.json" "$work/pp3.json" --holdout-layout tp=1,pp=3
expect 0 "" -- predict "$work/one.json" "$work/pp2.json" "$work/pp2m4.json" "$work/pp3.json" \
  --holdout-layout pp=3 -f json -o "$work/held.json"
python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, os, sys
work = sys.argv[1]
d = json.load(open(os.path.join(work, "held.json")))
held = [w for w in d["workloads"] if w["predictions"]]
assert len(held) == 1, [w["series"] for w in d["workloads"]]
m = held[0]["model"]
assert m["fixed_share_fitted"] is True and abs(m["fixed_share"] - 0.5) < 1e-9, m
assert abs(m["round_seconds"] - 0.1) < 1e-9 and m["layouts_fitted"] == 3, m
lo, hi = m["fixed_share_interval"]
assert lo <= 0.5 <= hi, m
pt = held[0]["predictions"][0]
assert pt["gpus"] == 3 and pt["pipeline_stages"] == 3 and pt["micro_batches"] == 3, pt
run = 3 * 0.1 * 5 / 3 * (0.5 + 0.5 / 3)
assert abs(pt["run_seconds"] - run) < 1e-9, (pt["run_seconds"], run)
err = pt["relative_error"]
elo, ehi = pt["relative_error_interval"]
mlo, mhi = pt["measured_interval"]
assert elo < err < ehi and mlo < pt["measured_tokens_per_second"] < mhi, pt
# The error's bounds: the prediction's bounds against the measurement's.
assert abs(elo - (pt["tokens_per_second_low"] / mhi - 1)) < 1e-9, pt
assert abs(ehi - (pt["tokens_per_second_high"] / mlo - 1)) < 1e-9, pt
slo, shi = pt["speedup_interval"]
assert slo <= pt["speedup"] <= shi and shi - slo > 0, pt
elo_, ehi_ = pt["efficiency_interval"]
assert abs(elo_ - slo / 3) < 1e-12 and abs(ehi_ - shi / 3) < 1e-12, pt
# The same tokens in every layout's runs: the held-out error is the model's only.
assert abs(err) < 0.01, pt
PY

# A held-out layout the model misses (3 stages measured twice as slow) is
# checked, not refused as a misfit of the fit: the error and its verdict.
mkdir -p "$work/slow"
python3 - "$work" <<'PY' || fail "slowing 3 stages"
import json, os, sys
work = sys.argv[1]
d = json.load(open(os.path.join(work, "pp3.json")))
l = d["measurements"][0]["llm"]
l["run_seconds"] = [2 * t for t in l["run_seconds"]]
json.dump(d, open(os.path.join(work, "slow", "pp3.json"), "w"))
PY
expect 0 "largest error \+100\.0% \[\+[0-9.]+%, \+[0-9.]+%\] .*: the model misses it" -- \
  predict "$work/one.json" "$work/pp2.json" "$work/pp2m4.json" "$work/slow/pp3.json" --holdout-layout pp=3

# Which layout at 6 GPUs: 6 replicas of one GPU (1 round of 0.1 s) beat 3
# of 2 stages (0.1125 s) at every corner of the fit's interval; with runs
# 30% apart the interval allows either, and the output says inconclusive.
expect 0 "at 6 GPUs: tp 1 x pp 1, [0-9.]+ +tokens/s \[[0-9.]+ +, [0-9.]+ +\]: fastest of the 4 layouts" -- \
  predict "$work/one.json" "$work/pp2.json" "$work/pp2m4.json" "$work/pp3.json" --ngpus 6 --gpus-per-node 6
mkdir -p "$work/wide"
python3 - "$work" <<'PY' || fail "widening the runs"
import json, os, sys
work = sys.argv[1]
for name in ("one", "pp2", "pp2m4", "pp3"):
    d = json.load(open(os.path.join(work, name + ".json")))
    l = d["measurements"][0]["llm"]
    t = l["run_seconds"][1]
    l["run_seconds"] = [t * 1.3, t, t * 0.7]
    json.dump(d, open(os.path.join(work, "wide", name + ".json"), "w"))
PY
expect 0 "at 6 GPUs: tp 1 x pp 1, .*: inconclusive against tp 1 x pp 2 \(2 micro-batches\)" -- \
  predict "$work/wide/one.json" "$work/wide/pp2.json" "$work/wide/pp2m4.json" "$work/wide/pp3.json" \
  --ngpus 6 --gpus-per-node 6
expect 0 "" -- predict "$work/wide/one.json" "$work/wide/pp2.json" "$work/wide/pp2m4.json" \
  "$work/wide/pp3.json" --ngpus 6 --gpus-per-node 6 -f json -o "$work/wide.json"
python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, os, sys
d = json.load(open(os.path.join(sys.argv[1], "wide.json")))
c = d["layout_choices"]
assert len(c) == 1 and c[0]["gpus"] == 6 and c[0]["layouts"] == 4, c
assert c[0]["verdict"] == "inconclusive", c
f = c[0]["fastest"]
assert (f["tensor_parallel"], f["pipeline_stages"]) == (1, 1), f
assert f["tokens_per_second_low"] < f["tokens_per_second"] < f["tokens_per_second_high"], f
assert {(x["pipeline_stages"], x["micro_batches"]) for x in c[0]["inconclusive_against"]} >= {(2, 2)}, c
PY

expect 2 "option --holdout-layout: 'tp=2x' must be a layout like tp=1,pp=2" -- \
  predict "$work/one.json" --holdout-layout tp=2x
expect 2 "option --holdout-layout: no ok llm measurement of tp 1 x pp 4" -- \
  predict "$work/one.json" "$work/pp2.json" --holdout-layout pp=4
expect 2 "3 GPUs do not hold whole replicas of 2 GPUs" -- \
  predict "$work/pp2.json" --ngpus 3 --gpus-per-node 4

exit $((failures > 0))
