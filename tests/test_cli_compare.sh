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
# Too few samples to decide: 3 steps a side (as exec's 3 runs of one value)
# going from 0.1 s to 0.3 s. The U test's smallest p is 2/C(6,3) = 0.1:
# "undecidable", with the samples needed, never "not significant".
python3 - "$base" "$work/few-base.json" "$work/few-new.json" <<'PY' || fail "writing the 3-sample documents"
import json, sys
for path, values in ((sys.argv[2], [0.1, 0.11, 0.09]), (sys.argv[3], [0.3, 0.31, 0.29])):
    d = json.load(open(sys.argv[1]))
    m = d["measurements"] = d["measurements"][:1]
    run = m[0]["runs"] = m[0]["runs"][:1]
    run[0]["step_seconds"] = values
    for r in run[0]["ranks"]:
        r["device_seconds"] = r["wall_seconds"] = values
    json.dump(d, open(path, "w"))
PY
expect 0 "step time .* undecidable" -- compare "$work/few-base.json" "$work/few-new.json"
expect 0 "with 3 against 3 samples the U test's smallest two-sided p is 0.1, not below the significance level 0.05, .* 4 samples a side are needed" -- compare "$work/few-base.json" "$work/few-new.json"
expect 0 "no significant regression \(.*\); 3 metrics undecidable" -- compare "$work/few-base.json" "$work/few-new.json"
"$bin" compare "$work/few-base.json" "$work/few-new.json" | grep -q "not significant" &&
  fail "3 against 3 samples called 'not significant'"
# With enough samples, a detectable change is stated for every sampled row.
expect 3 "step time .* \+-[0-9.]+% .* regression" -- compare "$base" "$slow"

# LoadGen judges validity and tails: genuine logs (tests/data/ingest/loadgen)
# of a valid Server run and one that missed its latency bound; VALID ->
# INVALID is a regression (exit 3), and so is the p99 latency's rise.
lg=$(cd "$(dirname "$0")/data/ingest/loadgen" && pwd)
"$bin" ingest mlperf -q -o "$work/lg-valid.json" "$lg/server-valid/node0" || fail "ingest server-valid"
"$bin" ingest mlperf -q -o "$work/lg-late.json" "$lg/server-latency-invalid/node0" || fail "ingest server-latency-invalid"
"$bin" ingest mlperf -q -o "$work/lg-off.json" "$lg/offline-valid/node0" || fail "ingest offline-valid"
"$bin" ingest mlperf -q -o "$work/lg-off-bad.json" "$lg/offline-invalid/node0" || fail "ingest offline-invalid"
expect 3 "LoadGen result rank 0 +VALID +INVALID .* regression" -- compare "$work/lg-valid.json" "$work/lg-late.json"
expect 3 "VALID in BASE, INVALID in NEW \(latency constraint not satisfied" -- compare "$work/lg-valid.json" "$work/lg-late.json"
expect 3 "p99 latency .* regression" -- compare "$work/lg-valid.json" "$work/lg-late.json"
expect 3 "LoadGen result rank 0 +VALID +INVALID .* regression" -- compare "$work/lg-off.json" "$work/lg-off-bad.json"
expect 0 "LoadGen result rank 0 +INVALID +VALID .* improvement" -- compare "$work/lg-off-bad.json" "$work/lg-off.json"
expect 0 "no significant regression" -- compare "$work/lg-valid.json" "$work/lg-valid.json"

# Every row says what it could detect: "needs n=4" where no p can reach
# alpha, "no samples" for ingested figures.
expect 0 "step time .* needs n=4 .* undecidable" -- compare "$work/few-base.json" "$work/few-new.json"
expect 3 "p99 latency .* no samples .* regression" -- compare "$work/lg-valid.json" "$work/lg-late.json"

# Tail latencies of our own request-based rows are tested by the bootstrap
# interval of their p99s' change: 240 requests a rank (2 ranks), latencies
# x1.3 in NEW, TTFT and TPOT unchanged; 20 a rank is too few (undecidable,
# with the 200 needed).
python3 - "$data/llm_server_cpu.json" "$work" <<'PY' || fail "writing the request documents"
import json, sys
def make(path, scale, n):
    d = json.load(open(sys.argv[1]))
    run = d["measurements"][0]["runs"][0]
    steps = []
    for k, rk in enumerate(run["ranks"]):
        tmpl, reqs, lats = rk["requests"][0], [], []
        for i in range(n):
            lat = (0.030 + 0.030 * ((i * 37 + k * 11) % n) / n) * scale
            reqs.append(dict(tmpl, id=k * n + i, latency_seconds=lat,
                             ttft_seconds=0.020 + 0.010 * ((i * 53 + k) % n) / n,
                             tpot_seconds=0.0004 + 0.0001 * ((i * 29) % n) / n))
            lats.append(lat)
        rk["requests"], rk["wall_seconds"] = reqs, lats
        steps += lats
    run["step_seconds"] = steps
    json.dump(d, open(f"{sys.argv[2]}/{path}", "w"))
make("req-base.json", 1.0, 240)
make("req-slow.json", 1.3, 240)
make("req-few.json", 1.3, 20)
PY
expect 3 "p99 latency +59.6 ms +77.5 ms +\+30.00% +\[\+2[0-9]\.[0-9]+%, \+3[0-9]\.[0-9]+%\] +\+-[0-9.]+% .* - +- +regression" -- \
  compare "$work/req-base.json" "$work/req-slow.json"
expect 3 "TTFT p99 .* \+0.00% .* not significant" -- compare "$work/req-base.json" "$work/req-slow.json"
expect 0 "p99 latency .* needs n=200 .* undecidable" -- compare "$work/req-few.json" "$work/req-few.json"
expect 0 "3 tail metrics are undecidable: .* 200 a side, and 40 against 40 requests" -- \
  compare "$work/req-few.json" "$work/req-few.json"
"$bin" compare -f markdown "$work/req-base.json" "$work/req-slow.json" >"$work/req.md"
grep -qE "^\| llm \(scenario server\) \| 2 \| p99 latency \| 59.6 ms \| 77.5 ms \| \+30.00% \| \[\+[0-9.]+%, \+[0-9.]+%\] \| \+-[0-9.]+% \| \+30.00% \| - \| - \| regression \|$" "$work/req.md" ||
  fail "markdown compare lacks the tested p99 row: $(cat "$work/req.md")"
"$bin" compare -f json "$work/req-base.json" "$work/req-slow.json" >"$work/req.json"
python3 - "$work/req.json" <<'PY' || fail "compare JSON of the tail rows: see above"
import json, sys
d = json.load(open(sys.argv[1]))
(p99,) = [m for m in d["metrics"] if m["metric"] == "p99 latency"]
assert p99["test"] == "bootstrap p99" and p99["verdict"] == "regression", p99
assert p99["n_base"] == 480 and p99["samples_needed"] is None, p99
assert p99["change_ci95_low"] > 0.2 and p99["change_ci95_high"] < 0.4, p99
(step,) = [m for m in d["metrics"] if m["metric"] == "step time"]
assert step["test"] == "mann-whitney u", step
PY

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
