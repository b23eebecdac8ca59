#!/usr/bin/env bash
# The roofline of `gpuscale run`: every workload measured by the runner
# declares its bound (voxelize, resample, fuse: memory; mlp: its
# precision's math), and the document's "roofline" member and the printed
# line carry the achieved rate, which is the cost per step over the median
# step; on the cpu backend no peak is known and both say why. llm declares
# none (its weight stream's fraction is its own line).
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

# Two ranks: one line per measurement, the rate of both together.
out=$("$bin" scale voxelize "${common[@]}" --iters 3 --ranks 2 --points 5K --clouds 2 --grid 16 \
      --out "$work/scale.json" 2>&1) || fail "scale voxelize: $out"
grep -q "^    1 rank: memory:" <<<"$out" && grep -q "^    2 ranks: memory:" <<<"$out" ||
  fail "scale voxelize: a roofline line per count: $out"

[ "$failures" -eq 0 ] || exit 1
echo "roofline: ok"
