#!/usr/bin/env bash
# End-to-end tests of mlp's pipeline (--pp) on the CPU backend: option
# errors, P = 2 and 3 stages under GPipe and 1F1B verified bit for bit
# against the CPU reference on every rank, data x pipeline parallelism on
# 4 ranks (2 replicas of 2 stages), --stages boundaries in the document,
# the report's per-stage timings (busy, idle, bubble against (p-1)/m
# with its interval and verdict, the stage imbalance with its interval,
# transfers, the why-not sentence; text, JSON and CSV), and the same block
# in run's terminal, word for word; one micro-batch over 3 stages.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

small=(--backend cpu --layers 50,32,24,16,3 --samples 1024 --iters 6 --warmup 1 --runs 1 --no-progress
       -q --gpu-mode multi)
expect 2 "--micro-batches needs --pp above 1" -- run mlp "${small[@]}" --micro-batches 4
expect 2 "--schedule needs --pp above 1" -- run mlp "${small[@]}" --schedule gpipe
expect 2 "--pp 5: the model has only 4 layers" -- run mlp "${small[@]}" --ranks 5 --pp 5
expect 2 "--stages takes 2 layers" -- run mlp "${small[@]}" --ranks 3 --pp 3 --stages 2
expect 2 "--stages: layer 2 must lie after 2" -- run mlp "${small[@]}" --ranks 3 --pp 3 --stages 2,2
expect 2 "option --schedule" -- run mlp "${small[@]}" --ranks 2 --pp 2 --schedule zigzag
expect 2 "--pp 2 needs a multiple of 2 ranks \(replicas x stages\), got 3" -- \
  run mlp "${small[@]}" --ranks 3 --pp 2 -o "$work/odd.json"
expect 2 "--micro-batches 4 over 3 samples of replica 0" -- \
  run mlp "${small[@]}" --ranks 2 --pp 2 --batch 3 --micro-batches 4 -o "$work/few.json"

for schedule in gpipe 1f1b; do
  for p in 2 3; do
    expect 0 "" -- run mlp "${small[@]}" --batch 48 --ranks "$p" --pp "$p" --micro-batches 4 \
      --schedule "$schedule" -o "$work/pp-$schedule-$p.json"
  done
done
expect 0 "" -- run mlp "${small[@]}" --batch 50 --ranks 4 --pp 2 --micro-batches 3 -o "$work/dp-pp.json"
# Three replicas: each stage's group of 3 sums in replica order, bit for bit.
expect 0 "" -- run mlp "${small[@]}" --batch 60 --ranks 6 --pp 2 --micro-batches 2 --schedule 1f1b \
  -o "$work/dp3-pp.json"
expect 0 "" -- run mlp "${small[@]}" --batch 40 --ranks 2 --pp 2 --stages 3 --micro-batches 8 \
  --schedule gpipe -o "$work/bounds.json"
# One micro-batch (the schedule that deadlocked NCCL without the links
# opened at set-up; here the set-up group of a middle stage has 4 transfers).
expect 0 "" -- run mlp "${small[@]}" --batch 48 --ranks 3 --pp 3 --micro-batches 1 --schedule 1f1b \
  -o "$work/m1.json"
python3 - "$work/m1.json" <<'PY' || failures=$((failures + 1))
import json, sys
m = json.load(open(sys.argv[1]))["measurements"][0]
assert m["verification"]["status"] == "passed", m["verification"]
details = [r["verification"]["detail"] for r in m["runs"][0]["ranks"]]
assert all("1f1b, 1 micro-batches" in d and ": 0 of " in d for d in details), details
PY

python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, os, re, sys
work = sys.argv[1]
def load(name):
    with open(os.path.join(work, name)) as f:
        return json.load(f)
# Parameters per stage of 50-32-24-16-3: layer 0 = 1632, layers 1..3 = 792 + 400 + 51.
sizes = {2: [1632, 1243], 3: [1632, 792, 451]}
for schedule in ("gpipe", "1f1b"):
    for p in (2, 3):
        d = load(f"pp-{schedule}-{p}.json")
        assert d["status"] == "ok", d["status"]
        pp = d["config"]["workload_options"]["pipeline"]
        assert pp["stages"] == p and pp["schedule"] == schedule and pp["micro_batches"] == 4, pp
        m = d["measurements"][0]
        assert m["verification"]["status"] == "passed", m["verification"]
        ranks = m["runs"][0]["ranks"]
        assert len(ranks) == p
        for r in ranks:
            v = r["verification"]
            s = r["rank"]
            assert v["status"] == "passed" and v["mismatches"] == 0 and v["tolerance"] == 0, v
            want = (f"CPU pipeline stage {s} of {p} .*{schedule}, 4 micro-batches.* over the "
                    f"replica's 48 samples against the CPU reference: 0 of {sizes[p][s]} gradients "
                    "and 0 parameters after Adam differ bitwise, 0 differ from replica 0's stage")
            assert re.search(want, v["detail"]), (want, v["detail"])
            # Every stage but the last waits for gradients, every one but the
            # first for activations: some exposed communication each step.
            assert all(c > 0 for c in r["comm_seconds"]), r["comm_seconds"]
d = load("dp-pp.json")
m = d["measurements"][0]
assert m["verification"]["status"] == "passed", m["verification"]
details = [r["verification"]["detail"] for r in m["runs"][0]["ranks"]]
# Replica-major: ranks 0, 1 are replica 0 (26 of the 50 samples), 2, 3 replica 1.
for rank, (stage, replica, rows) in enumerate([(0, 0, 26), (1, 0, 26), (0, 1, 24), (1, 1, 24)]):
    assert f"stage {stage} of 2" in details[rank] and f"replica {replica} of 2" in details[rank], details[rank]
    assert f"the replica's {rows} samples" in details[rank], details[rank]
    assert "0 parameters after Adam differ bitwise, 0 differ from replica 0's stage" in details[rank]
d = load("dp3-pp.json")
ranks = d["measurements"][0]["runs"][0]["ranks"]
assert len(ranks) == 6 and d["measurements"][0]["verification"]["status"] == "passed"
for r in ranks:
    v = r["verification"]
    assert v["status"] == "passed" and v["mismatches"] == 0, v
    assert f"replica {r['rank'] // 2} of 3" in v["detail"], v["detail"]
    assert "0 differ from replica 0's stage" in v["detail"], v["detail"]
d = load("bounds.json")
pp = d["config"]["workload_options"]["pipeline"]
assert pp["stage_first_layers"] == [0, 3] and pp["balanced_by_cost"] is False, pp
assert d["measurements"][0]["verification"]["status"] == "passed"
PY

# The report's pipeline tables: (p-1)/m = 2/4, the transfers of 48 samples
# over the boundaries into layers 1 and 2 (widths 32 and 24) both ways,
# one busy/idle line per stage.
out=$("$bin" report "$work/pp-1f1b-3.json" 2>&1)
grep -qE "^ +3 +3 +4 +1f1b +step +[0-9.]+% \[[0-9.]+, [0-9.]+\] +50\.0% +(within 15%|above|below|inconclusive) +[0-9.]+x \[[0-9.]+, [0-9.]+\] +21 KiB +- +-$" <<<"$out" ||
  fail "report: no pipeline row with (p-1)/m 50.0%, a verdict, the imbalance's interval and 21 KiB of transfers: $out"
[ "$(grep -cE "^ +3 +[012] +step +[0-9.]+ [um]?s +- +-?[0-9.]+ [um]?s +-?[0-9.]+%" <<<"$out")" = 3 ] ||
  fail "report: not one busy/idle line per stage: $out"
grep -qE "Why not 3 x \(pipeline, 3 ranks\): the stages wait [0-9.]+% \[[0-9.]+, [0-9.]+\] of their compute time \(the bubble\) against \(p-1\)/m 50\.0%, (within 15% of|above|below|inconclusive).* the slowest stage computes [0-9.]+x \[[0-9.]+, [0-9.]+\] the mean stage's; the transfers are not separated" <<<"$out" ||
  fail "report: no why-not sentence naming the bubble, the imbalance and the transfers: $out"
out=$("$bin" report "$work/dp-pp.json" 2>&1)
grep -qE "^ +4 +2 +3 +1f1b +step +[0-9.]+% \[[0-9.]+, [0-9.]+\] +33\.3% " <<<"$out" || fail "report: DP x PP row: $out"
"$bin" report "$work/dp-pp.json" --format json >"$work/report.json" 2>&1 || fail "report --format json"
python3 - "$work/report.json" <<'PY' || failures=$((failures + 1))
import json, sys
doc = json.load(open(sys.argv[1]))
rows = [row for s in doc["series"] for row in s["rows"] if "pipeline" in row]
assert len(rows) == 1, rows
p = rows[0]["pipeline"]
assert p["stages"] == 2 and p["micro_batches"] == 3 and abs(p["bubble_formula"] - 1 / 3) < 1e-12, p
assert len(p["stage_busy"]) == 2 and all(t > 0 for t in p["stage_busy"] + p["stage_idle"]), p
# Replica 0: 26 samples; one boundary, into layer 1 (32 wide), both ways.
assert p["transfer_bytes"] == 2 * 26 * 32 * 4, p
assert p["per"] == "step" and p["imbalance_low"] <= p["imbalance"] <= p["imbalance_high"], p
# The verdict comes from the interval against (p-1)/m +- 15% (core/bubble).
f, lo, hi = p["bubble_formula"], p["bubble_low"], p["bubble_high"]
want = ("within 15%" if lo >= 0.85 * f and hi <= 1.15 * f else "above" if lo > 1.15 * f
        else "below" if hi < 0.85 * f else "inconclusive")
assert p["bubble_verdict"] == want, (want, p)
# Stages do different work: each rank is scored against its own stage's
# other replica only (rank % 2), never against the other stage.
g = rows[0]["stragglers"]
assert g["relative_to"] == "stage" and len(g["ranks"]) == 4, g
PY
"$bin" report "$work/dp-pp.json" --format csv >"$work/report.csv" 2>&1 || fail "report --format csv"
python3 - "$work/report.csv" "$work/report.json" <<'PY' || failures=$((failures + 1))
import csv, json, sys
row = list(csv.DictReader(open(sys.argv[1])))[0]
p = [r for s in json.load(open(sys.argv[2]))["series"] for r in s["rows"] if "pipeline" in r][0]["pipeline"]
assert row["pipeline_stages"] == "2" and row["pipeline_per"] == "step", row
assert row["bubble_verdict"] == p["bubble_verdict"], row
assert row["bubble_expected_verdict"] == (p["bubble_expected_verdict"] or ""), row
for col, key in (("bubble", "bubble"), ("bubble_low", "bubble_low"), ("bubble_high", "bubble_high"),
                 ("stage_imbalance", "imbalance"), ("stage_imbalance_low", "imbalance_low"),
                 ("stage_imbalance_high", "imbalance_high"), ("bubble_formula", "bubble_formula"),
                 ("bubble_expected", "bubble_expected")):
    assert float(row[col]) == p[key], (col, row[col], p[key])
PY

# The terminal of run (and scale) prints the pipeline block of the document
# it wrote by the report's own code: word for word the block of `gpuscale
# report` of that file, its bubble, interval and verdict the report JSON's
# figures as printed. A run without --pp prints none.
"$bin" run mlp "${small[@]}" --batch 50 --ranks 4 --pp 2 --micro-batches 3 \
  -o "$work/term.json" >"$work/term.txt" 2>&1 || fail "run mlp --pp 2 on 4 ranks: $(cat "$work/term.txt")"
"$bin" report "$work/term.json" >"$work/term-report.txt" 2>&1 || fail "report of the run's document"
"$bin" report -f json "$work/term.json" >"$work/term-report.json" 2>&1 || fail "report -f json of it"
python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, re, sys
w = sys.argv[1]
def block(name):
    lines = open(f"{w}/{name}").read().splitlines()
    start = [i for i, l in enumerate(lines) if l.startswith("  Pipeline: bubble = ")]
    assert len(start) == 1, (name, lines)
    end = next(i for i in range(start[0], len(lines)) if lines[i].startswith("    Why not "))
    return lines[start[0] - 1:end + 1]
term, rep = block("term.txt"), block("term-report.txt")
assert term[0] == "  mlp (as `gpuscale report` gives it for the result file):", term[0]
assert term[1:] == rep[1:], ("\n".join(term), "\n".join(rep))
rows = [l for l in term if re.match(r"^ +4 +2 +3 +1f1b +step ", l)]
assert len(rows) == 1, term
m = re.match(r"^ +4 +2 +3 +1f1b +step +(-?[0-9.]+)% \[(-?[0-9.]+), (-?[0-9.]+)\] +([0-9.]+)% +"
             r"(within 15%|above|below|inconclusive) +([0-9.]+)x \[([0-9.]+), ([0-9.]+)\] ", rows[0])
assert m, rows[0]
p = [r for s in json.load(open(f"{w}/term-report.json"))["series"] for r in s["rows"]
     if "pipeline" in r][0]["pipeline"]
for got, key in zip(m.group(1, 2, 3, 4), ("bubble", "bubble_low", "bubble_high", "bubble_formula")):
    assert got == f"{100 * p[key]:.1f}", (key, got, p[key])
assert m.group(4) == "33.3" and m.group(5) == p["bubble_verdict"], (m.groups(), p)
for got, key in zip(m.group(6, 7, 8), ("imbalance", "imbalance_low", "imbalance_high")):
    assert got == f"{p[key]:.2f}", (key, got, p[key])
# The why-not sentence says the same bubble and verdict.
why = term[-1]
assert f"the stages wait {m.group(1)}% [{m.group(2)}, {m.group(3)}] of their compute time" in why, why
PY
"$bin" run mlp "${small[@]}" --batch 48 --ranks 2 -o "$work/dp.json" >"$work/dp.txt" 2>&1 ||
  fail "run mlp on 2 ranks: $(cat "$work/dp.txt")"
! grep -q "Pipeline" "$work/dp.txt" || fail "a run without --pp printed a pipeline: $(cat "$work/dp.txt")"

# With a coll sendrecv document of the same machine, each stage's transfers
# at the measured cost come apart from its idle time: 12-sample
# micro-batches over the boundaries into layers 1 (32 wide: 1536 bytes) and
# 2 (24 wide: 1152 bytes), received and (on the CPU) sent 4 times a step;
# the middle stage pays both boundaries. The bubble is the idle less them,
# inside its interval.
"$bin" coll sendrecv --backend cpu --ranks 2 -b 512 -e 4K --stepfactor 2 -n 20 -w 2 \
  -o "$work/sendrecv.json" >/dev/null 2>&1 || fail "coll sendrecv on the CPU backend"
out=$("$bin" report "$work/pp-1f1b-3.json" "$work/sendrecv.json" 2>&1)
grep -qE "^ +3 +3 +4 +1f1b +step +-?[0-9.]+% \[(-?[0-9.]+, -?[0-9.]+|-)\] +50\.0% +(within 15%|above|below|inconclusive) +[0-9.]+x \[([0-9.]+, [0-9.]+|-)\] +21 KiB +[0-9.]+ [um]?s +[^ ]*sendrecv.json" \
  <<<"$out" || fail "report: the transfers' time from the sendrecv document: $out"
"$bin" report -f json "$work/pp-1f1b-3.json" >"$work/plain.json" 2>/dev/null || fail "report json"
"$bin" report -f json "$work/pp-1f1b-3.json" "$work/sendrecv.json" >"$work/apart.json" 2>/dev/null ||
  fail "report json with sendrecv"
python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
w = sys.argv[1]
def pipe(name):
    doc = json.load(open(f"{w}/{name}"))
    return [row for s in doc["series"] for row in s["rows"] if "pipeline" in row][0]["pipeline"]
a, b = pipe("plain.json"), pipe("apart.json")
assert a["transfer_source"] is None and all(t is None for t in a["stage_transfer"]), a
assert b["transfer_source"].endswith("sendrecv.json"), b
t = b["stage_transfer"]
assert all(x > 0 for x in t) and abs(t[1] - (t[0] + t[2])) <= 1e-12 * t[1], t
for k in range(3):
    assert abs(b["stage_idle"][k] + t[k] - a["stage_idle"][k]) <= 1e-9 * a["stage_idle"][k], (k, a, b)
busy = sum(b["stage_busy"])
assert abs(b["bubble"] - sum(b["stage_idle"]) / busy) <= 1e-9 * abs(b["bubble"]) + 1e-12, b
assert abs(a["bubble"] - sum(a["stage_idle"]) / busy) <= 1e-9 * a["bubble"], a
# On a loaded machine the sendrecv may price the transfers above the waits
# (idle below 0); the paired interval holds the bubble either way.
assert a["bubble_low"] <= a["bubble"] <= a["bubble_high"], a
assert b["bubble_low"] <= b["bubble"] <= b["bubble_high"], b
assert abs(b["transfer_seconds"] - sum(t)) <= 1e-12 * sum(t), b
PY

# predict: the pipeline at other stage and micro-batch counts from its
# measured stages, the transfers from the same sendrecv curve; at the
# measured point the model's step beside the measured one.
expect 0 "a pipeline of 3 stages at 4 micro-batches measured" -- \
  predict "$work/pp-1f1b-3.json" "$work/sendrecv.json" --ngpus 3,6
"$bin" predict -f json "$work/pp-1f1b-3.json" "$work/sendrecv.json" --ngpus 3,6 --gpus-per-node 3 \
  >"$work/predict.json" 2>/dev/null || fail "predict --format json of a pipeline"
python3 - "$work/predict.json" <<'PY' || failures=$((failures + 1))
import json, sys
q = json.load(open(sys.argv[1]))["pipelines"][0]
assert q["stages"] == 3 and q["micro_batches"] == 4 and q["sendrecv_file"].endswith("sendrecv.json"), q
pts = {(x["stages"], x["micro_batches"]): x for x in q["predictions"]}
assert sorted({s for s, _ in pts}) == [3, 6] and sorted({m for _, m in pts}) == [1, 2, 4, 8, 16, 32]
here = pts[(3, 4)]
assert abs(here["step_seconds"] - q["model_step_seconds"]) <= 1e-12 * here["step_seconds"], here
# 6 stages on nodes of 3: one boundary crosses the network; 3 stages none.
assert pts[(6, 4)]["inter_node_boundaries"] == 1 and here["inter_node_boundaries"] == 0
c = q["busy_seconds"] / (3 * 4)
assert abs(here["step_seconds"] - here["transfer_seconds"] - (3 * c + 3 * q["imbalance"] * c)) <= 1e-9 * here["step_seconds"]
for x in q["predictions"]:
    assert abs(x["bubble_formula"] - (x["stages"] - 1) / x["micro_batches"]) < 1e-12, x
PY

exit $((failures > 0))
