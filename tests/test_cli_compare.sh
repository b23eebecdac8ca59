#!/usr/bin/env bash
# End-to-end tests of `gpuscale compare`: exit codes (0 no regression, 3
# significant regression, 1 bad or mismatched input, 2 usage), the options
# and every output format. $1 is the gpuscale binary.
set -u
bin=$1
data=$(cd "$(dirname "$0")/data/report" && pwd)
. "$(dirname "$0")/cli_lib.sh"

base=$data/strong.json
slow=$data/strong_slower.json

expect 0 "Exit codes: 0 no significant regression, 3" -- compare --help
expect 2 "give two result documents" -- compare "$base"
expect 2 "too many files" -- compare "$base" "$base" "$base"
expect 2 "option --alpha" -- compare --alpha 2 "$base" "$slow"
expect 2 "option --threshold" -- compare --threshold x "$base" "$slow"
expect 1 "cannot read .*missing.json" -- compare "$base" "$work/missing.json"
expect 1 "malformed.json: invalid JSON" -- compare "$base" "$data/malformed.json"
expect 1 "share no measurement to compare" -- compare "$base" "$data/weak.json"

expect 0 "no significant regression" -- compare "$base" "$base"
expect 3 "7 significant regressions" -- compare "$base" "$slow"
expect 3 "step time .* \\+30.00% .* 0.0284  regression" -- compare "$base" "$slow"
expect 0 "improvement" -- compare "$slow" "$base"
# series keyed by variant and split are paired as such and named
expect 0 "mlp \\(variant batch=32\\) +2 throughput" -- compare "$data/mlp_variants.json" "$data/mlp_variants.json"
expect 0 "resample \\(split proportional\\) +2 step time" -- compare "$data/split_cpu.json" "$data/split_cpu.json"
# request-based rows: latencies compared, no throughput per latency sample
expect 0 "llm at 2 ranks: request-based" -- compare "$data/llm_cpu.json" "$data/llm_cpu.json"
expect 0 "within threshold" -- compare --threshold 40 "$base" "$slow"
expect 0 "no significant regression" -- compare --alpha 0.0001 "$base" "$slow"

"$bin" compare -f markdown "$base" "$slow" >"$work/c.md"
[ $? = 3 ] || fail "markdown compare did not exit 3"
grep -qF "| voxelize | 1 | step time | 12.5 ms | 16.2 ms | +30.00% |" "$work/c.md" ||
  fail "markdown compare lacks the step row: $(cat "$work/c.md")"

"$bin" compare -f json -o "$work/c.json" "$base" "$slow"
[ $? = 3 ] || fail "json compare did not exit 3"
python3 - "$work/c.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuscale/compare/v1"
assert d["regressions"] == 7
m = d["metrics"][0]
assert m["metric"] == "step time" and m["world_size"] == 1
assert abs(m["change"] - 0.3) < 1e-12 and abs(m["p"] - 0.028430) < 1e-6 and not m["exact"]
assert m["change_ci95_low"] < 0.3 < m["change_ci95_high"]
assert m["verdict"] == "regression"
PY

# directories: each side's .json documents together, in name order
mkdir -p "$work/dir-base" "$work/dir-new" "$work/dir-empty"
cp "$base" "$work/dir-base/a.json"
cp "$data/weak.json" "$work/dir-base/b.json"
cp "$slow" "$work/dir-new/a.json"
cp "$data/weak.json" "$work/dir-new/b.json"
echo "not a document" >"$work/dir-new/notes.txt"
expect 3 "BASE $work/dir-base, NEW $work/dir-new" -- compare "$work/dir-base" "$work/dir-new"
expect 3 "7 significant regressions" -- compare "$work/dir-base" "$work/dir-new"
expect 0 "no significant regression" -- compare "$work/dir-base" "$work/dir-base"
expect 1 "NEW directory $work/dir-empty holds no .json result document" -- \
  compare "$work/dir-base" "$work/dir-empty"

# golden outputs (exit 3: the fixture regresses)
golden compare.txt compare strong.json strong_slower.json
golden compare.md compare -f markdown strong.json strong_slower.json

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all compare CLI tests passed"
