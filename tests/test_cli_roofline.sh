#!/usr/bin/env bash
# The roofline of `gpuscale run`: every workload measured by the runner
# declares its bound (voxelize, resample, fuse: memory; mlp: its
# precision's math), and the document's "roofline" member and the printed
# line carry the achieved rate, which is the cost per step over the median
# step; on the cpu backend no peak is known and both say why. llm declares
# none (its weight stream's fraction is its own line). The report reads a
# GPU document's fraction with its 95% interval back into its table, JSON
# and CSV, computes the interval of a document written without one from
# its steps, and says when the steps are too few for one.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

common=(--backend cpu --warmup 1 --runs 1 --no-progress)
declare -A opts=(
  [voxelize]="--iters 3 --points 5K --clouds 2 --grid 16"
  [resample]="--iters 3 --batch 2 --samples 200 --targets 64 --dims 8"
  [fuse]="--iters 3 --batch 2 --targets 32"
  [mlp]="--iters 3 --batch 16 --samples 256 --layers 8,16,2"
  [llm]="--model tiny --input-min 4 --input-max 10 --output-min 2 --output-max 5 --samples 3"
)
declare -A bound=([voxelize]=memory [resample]=memory [fuse]=memory [mlp]=fp32 [llm]=none)
for w in $("$bin" run --help 2>&1 | awk '/^Workloads:/ {on = 1; next} on && /^  [a-z]/ {print $1}'); do
  [ -n "${opts[$w]+x}" ] || fail "workload $w has no roofline case in this test"
done
for w in "${!opts[@]}"; do
  # shellcheck disable=SC2086
  out=$("$bin" run "$w" "${common[@]}" ${opts[$w]} --out "$work/$w.json" 2>&1) ||
    fail "run $w: $out"
  python3 - "$work/$w.json" "${bound[$w]}" <<'PY' || fail "run $w: document"
import json, sys
doc = json.load(open(sys.argv[1]))
m = doc["measurements"][0]
want = sys.argv[2]
if want == "none":
    assert "roofline" not in m, m.get("roofline")
    sys.exit(0)
r = m["roofline"]
assert r["bound"] == want, r
work = m["cost"]["bytes_per_step" if want == "memory" else "flops_per_step"]
achieved = work / m["aggregate"]["step"]["median"]
assert abs(r["achieved_per_second"] - achieved) <= 1e-9 * achieved, (r, achieved)
assert r["peak_per_second"] is None and r["fraction"] is None and r["model"] is None, r
assert r["why"] == "the cpu backend has no GPU model", r
PY
  if [ "${bound[$w]}" = none ]; then
    grep -q "^  roofline:" <<<"$out" && fail "run $w printed a roofline: $out"
    # llm's own line: the weight stream's rate, and why there is no fraction.
    grep -qE "^    weight stream [0-9.]+ [kMGT]?B/s per replica at the median TPOT; no peak known: the cpu backend has no GPU memory bandwidth$" <<<"$out" ||
      fail "run $w: no weight stream line: $out"
  else
    grep -qE "^    1 rank: ${bound[$w]}: [0-9.]+ [kMGT]?(B/s|FLOP/s); no bound known: the cpu backend has no GPU model$" <<<"$out" ||
      fail "run $w: no roofline line: $out"
  fi
done

# The report reads the member back: its roofline table has the recorded rate.
out=$("$bin" report "$work/voxelize.json" "$work/mlp.json" 2>&1) || fail "report: $out"
grep -qE "^      1  memory  [0-9.]+ [kMGT]?B/s +- +- +the cpu backend has no GPU model$" <<<"$out" ||
  fail "report: no memory roofline row: $out"
grep -qE "^  ranks  bound  achieved FLOP/s  peak FLOP/s  fraction  model or why not$" <<<"$out" ||
  fail "report: no flops roofline table: $out"
# The report's JSON holds what the run document recorded.
"$bin" report --format json "$work/mlp.json" --out "$work/report.json" >/dev/null 2>&1 ||
  fail "report --format json"
python3 - "$work/report.json" "$work/mlp.json" <<'PY' || fail "report json: roofline"
import json, sys
rep, doc = (json.load(open(p)) for p in sys.argv[1:3])
rows = [row for s in rep["series"] for row in s["rows"]]
got, want = rows[0]["roofline"], doc["measurements"][0]["roofline"]
assert got == want, (got, want)
PY

# A GPU document (tests/data/report/roofline_h100.json: mlp fp32 on an H100,
# a copy of docs/results/2026-11-24-h100-session2/mlp-trace/r.json with the
# "roofline" member its writer now adds, computed from its 40 steps: the
# median 112.752 us, its order statistics 13 and 28 of 40 the interval).
data=$(cd "$(dirname "$0")/data/report" && pwd)
gpu=$data/roofline_h100.json
out=$("$bin" report "$gpu" 2>&1) || fail "report $gpu: $out"
grep -qE "^      1  fp32 +367 G +67\.0 T +0\.5% \[0\.5, 0\.6\]  H100 SXM5 80GB$" <<<"$out" ||
  fail "report: no fp32 roofline row with its interval: $out"
grep -q "the fraction's 95% interval from the median step's" <<<"$out" ||
  fail "report: the roofline table does not say where the interval comes from: $out"
"$bin" report --format json "$gpu" --out "$work/gpu-report.json" >/dev/null 2>&1 ||
  fail "report --format json $gpu"
"$bin" report --format csv "$gpu" --out "$work/gpu-report.csv" >/dev/null 2>&1 ||
  fail "report --format csv $gpu"
# The same document as written before the intervals were: the report
# computes them from the steps, to the same figures.
python3 - "$gpu" "$work/old.json" <<'PY' || fail "an old document"
import json, sys
doc = json.load(open(sys.argv[1]))
for key in ("achieved_low_per_second", "achieved_high_per_second", "fraction_low", "fraction_high"):
    del doc["measurements"][0]["roofline"][key]
json.dump(doc, open(sys.argv[2], "w"))
PY
"$bin" report --format json "$work/old.json" --out "$work/old-report.json" >/dev/null 2>&1 ||
  fail "report --format json (old document)"
python3 - "$gpu" "$work/gpu-report.json" "$work/gpu-report.csv" "$work/old-report.json" <<'PY' ||
import csv, json, sys
doc, rep = (json.load(open(p)) for p in sys.argv[1:3])
want = doc["measurements"][0]["roofline"]
got = rep["series"][0]["rows"][0]["roofline"]
assert got == want, (got, want)
# fraction_low = work / (peak x median_high), fraction_high = work / (peak x median_low).
steps = sorted(x for r in doc["measurements"][0]["runs"] for x in r["step_seconds"])
work = doc["measurements"][0]["cost"]["flops_per_step"]
close = lambda a, b: abs(a - b) <= 1e-12 * abs(b)
assert close(want["fraction_low"], work / (67e12 * steps[27])), want
assert close(want["fraction_high"], work / (67e12 * steps[12])), want
# The CSV keeps its columns and appends the roofline's.
rows = list(csv.DictReader(open(sys.argv[3])))
head = list(rows[0].keys())
new = ["roofline_bound", "roofline_achieved_per_s", "roofline_peak_per_s", "roofline_fraction",
       "roofline_fraction_low", "roofline_fraction_high"]
assert head[-len(new):] == new, head
assert head.index("transfer_source") < head.index("bubble_expected") < head.index("roofline_bound"), head
row = rows[0]
assert row["roofline_bound"] == "fp32" and float(row["roofline_peak_per_s"]) == 67e12, row
for col, key in (("roofline_achieved_per_s", "achieved_per_second"), ("roofline_fraction", "fraction"),
                 ("roofline_fraction_low", "fraction_low"), ("roofline_fraction_high", "fraction_high")):
    assert float(row[col]) == want[key], (col, row[col], want[key])
# An old document: the same interval, from the steps.
old = json.load(open(sys.argv[4]))["series"][0]["rows"][0]["roofline"]
for key in ("achieved_low_per_second", "achieved_high_per_second", "fraction_low", "fraction_high"):
    assert close(old[key], want[key]), (key, old[key], want[key])
PY
  fail "report json and csv: roofline intervals"

# Three steps are too few for a 95% interval: the fraction stands alone and
# says so (the cpu document of mlp above, given a peak).
python3 - "$work/mlp.json" "$work/few.json" <<'PY' || fail "a document of few steps"
import json, sys
doc = json.load(open(sys.argv[1]))
r = doc["measurements"][0]["roofline"]
assert r["fraction_low"] is None and r["achieved_low_per_second"] is None, r
r.update(peak_per_second=1e12, fraction=r["achieved_per_second"] / 1e12, model="a model", why=None)
json.dump(doc, open(sys.argv[2], "w"))
PY
out=$("$bin" report "$work/few.json" 2>&1) || fail "report few.json: $out"
grep -qE "^      1  fp32 +[0-9.]+ [kMGT]? +1\.00 T +[0-9.]+% \(too few steps for an interval\)  a model$" <<<"$out" ||
  fail "report: the fraction of three steps does not say they are too few: $out"

# llm's weight stream at the median TPOT has the interval of that median
# over the requests: decode weight bytes / the TPOT's order statistics.
out=$("$bin" run llm "${common[@]}" --model tiny --input-min 4 --input-max 10 --output-min 2 \
      --output-max 5 --samples 12 --out "$work/llm12.json" 2>&1) || fail "run llm: $out"
python3 - "$work/llm12.json" <<'PY' || fail "llm: the weight stream's interval"
import json, math, sys
m = json.load(open(sys.argv[1]))["measurements"][0]
l = m["llm"]
tpot = sorted(q["tpot_seconds"] for r in m["runs"] for k in r["ranks"] for q in k["requests"]
              if q["status"] == "ok" and not q["cold"] and q["tpot_seconds"] is not None)
n = len(tpot)
assert n >= 6, n
lo, hi = math.floor(n / 2 - 0.98 * math.sqrt(n)), math.ceil(1 + n / 2 + 0.98 * math.sqrt(n))
low, high = tpot[max(lo, 1) - 1], tpot[min(hi, n) - 1]
close = lambda a, b: abs(a - b) <= 1e-12 * abs(b)
assert close(l["weight_bytes_per_second_low"], l["decode_weight_bytes"] / high), (l, high)
assert close(l["weight_bytes_per_second_high"], l["decode_weight_bytes"] / low), (l, low)
assert l["roofline_fraction_low"] is None and l["roofline_fraction_high"] is None, l
PY

# Two ranks: one line per measurement, the rate of both together.
out=$("$bin" scale voxelize "${common[@]}" --iters 3 --ranks 2 --points 5K --clouds 2 --grid 16 \
      --out "$work/scale.json" 2>&1) || fail "scale voxelize: $out"
grep -q "^    1 rank: memory:" <<<"$out" && grep -q "^    2 ranks: memory:" <<<"$out" ||
  fail "scale voxelize: a roofline line per count: $out"

[ "$failures" -eq 0 ] || exit 1
echo "roofline: ok"
