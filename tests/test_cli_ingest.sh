#!/usr/bin/env bash
# End-to-end tests of `gpuscale ingest`: the golden inputs in
# tests/data/ingest (written in LoadGen's and nccl-tests' documented
# formats) against the expected result documents in tests/data/ingest/expected
# (volatile members masked), usage errors (exit 2), damaged inputs (exit 1,
# naming file and line, nothing written), and `report` reading the output.
# $1 is the gpuscale binary.
set -u
bin=$1
data=$(cd "$(dirname "$0")/data/ingest" && pwd)
. "$(dirname "$0")/cli_lib.sh"
cd "$data" || exit 1

# The members that change from run to run: creation time, tool version and
# revision, and argv (it holds the scratch output path).
normalize() {
  sed -E -e 's/^(\s*"(created|git_revision|version)": )"[^"]*"/\1"*"/' \
         -e 's/^(\s*"argv": ).*$/\1"*",/' "$1"
}

# golden NAME ARGS...: ingest, then compare with expected/NAME.json.
golden() {
  local name=$1
  shift
  local out="$work/$name.json"
  "$bin" ingest "$@" -q -o "$out" >"$work/log" 2>&1 || { fail "ingest $* failed: $(cat "$work/log")"; return; }
  normalize "$out" | diff -u "expected/$name.json" - >"$work/diff" ||
    fail "ingest $* differs from expected/$name.json:
$(head -40 "$work/diff")"
}

golden mlperf-offline mlperf mlperf/offline/node01 mlperf/offline/node02
golden mlperf-server-invalid mlperf mlperf/server-invalid/rank0
golden mlperf-singlestream-llm mlperf --hosts gpu-host-7 mlperf/singlestream-llm/gpu0
golden nccl-all-reduce-text nccl-tests nccl-tests/all_reduce_2gpu.txt
golden nccl-alltoall-text nccl-tests --op alltoall nccl-tests/alltoall_2node.txt
golden nccl-all-gather-json nccl-tests nccl-tests/all_gather_1gpu.json

# the ingested documents are result documents the report reads
expect 0 "mlperf: backend -" -- report "$work/mlperf-offline.json"
expect 0 "coll: backend cuda" -- report "$work/nccl-all-gather-json.json"
expect 0 "INVALID; recorded as a failed verification" -- ingest mlperf mlperf/server-invalid/rank0 -o "$work/note.json"

# Genuine LoadGen logs (tests/data/ingest/loadgen/README.md): the report of
# each ingested run shows the summary file's figures, in every format: the
# JSON and CSV reports exactly (seconds), the text table scaled (one unit per
# column). summary KEY DIR: the value of "KEY : V" in DIR's summary.
summary() { sed -n "s/^$1 *: *//p" "$2/mlperf_log_summary.txt" | head -n 1; }
for run in offline-valid offline-invalid server-valid server-invalid server-latency-invalid \
           singlestream-valid singlestream-invalid; do
  dir=loadgen/$run/node0
  "$bin" ingest mlperf -q -o "$work/$run.json" "$dir" >"$work/log" 2>&1 || { fail "ingest $dir: $(cat "$work/log")"; continue; }
  "$bin" report "$work/$run.json" >"$work/$run.txt" 2>&1 || { fail "report $run: $(cat "$work/$run.txt")"; continue; }
  "$bin" report -f json -o "$work/$run.report.json" "$work/$run.json" || fail "report -f json $run"
  "$bin" report -f csv -o "$work/$run.csv" "$work/$run.json" || fail "report -f csv $run"
  # one line per file: the file, then ranks, rank, scenario, result
  # (INVALID marked "INVALID (!)")
  line=$(grep -E "^ +$run.json +1 +0 +(Offline|Server|SingleStream) " "$work/$run.txt" | sed 's/ (!)//')
  [ -n "$line" ] || { fail "report $run: no LoadGen row"; continue; }
  scen=$(summary Scenario "$dir"); result=$(summary "Result is" "$dir")
  case $scen in
    Offline) rate=$(summary "Samples per second" "$dir") ;;
    Server) rate=$(summary "Completed samples per second" "$dir") ;;
    *) rate=$(summary "QPS w\/ loadgen overhead" "$dir") ;;
  esac
  python3 - "$work/$run.report.json" "$work/$run.csv" "$line" "$scen" "$result" "$rate" \
    "$(summary 'Mean latency (ns)' "$dir")" "$(summary '50.00 percentile latency (ns)' "$dir")" \
    "$(summary '90.00 percentile latency (ns)' "$dir")" "$(summary '99.00 percentile latency (ns)' "$dir")" \
    "$(summary 'Max latency (ns)' "$dir")" <<'PY' || fail "$run: the report's figures differ from the summary"
import csv, json, sys
report, table, line, scen, result, rate = sys.argv[1:7]
ns = [float(x) for x in sys.argv[7:12]]
names = ["latency_mean", "latency_p50", "latency_p90", "latency_p99", "latency_max"]
lg = json.load(open(report))["series"][0]["rows"][0]["ranks"][0]["loadgen"]
assert lg["scenario"] == scen and lg["valid"] == (result == "VALID"), lg
# the summary rounds samples/s to 2 decimals (Offline: 6 digits); the report has the detail log's
assert abs(lg["samples_per_second"] - float(rate)) <= 0.01 * max(1, float(rate) / 100), (lg, rate)
for name, v in zip(names, ns):
    assert lg[name + "_seconds"] == v / 1e9, (name, lg[name + "_seconds"], v)
row = list(csv.DictReader(open(table)))[0]
# the identity column holds the measurement's scenario in gpuscale's words
assert row["scenario"].replace("-", "") == scen.lower() and row["loadgen_valid"] == ("true" if result == "VALID" else "false"), row
assert float(row["samples_per_s"]) == lg["samples_per_second"], row
for name, v in zip(names, ns):
    assert float(row[name + "_s"]) == v / 1e9, (name, row)
# the text table: scenario, result, samples/s, then the latencies with one
# unit per column (3 significant digits of the value)
cells = line.split()[1:]
assert cells[2] == scen and cells[3] == result, cells
unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}
values, rest = [], cells[cells.index(result) + 1:]
while rest and len(values) < 8:  # samples/s, tokens/s, queries, mean, p50, p90, p99, max
    if rest[0] == "-":
        values.append(None)
        rest = rest[1:]
    elif len(rest) > 1 and rest[1] in unit:
        values.append(float(rest[0]) * unit[rest[1]])
        rest = rest[2:]
    else:
        values.append(float(rest[0]))
        rest = rest[1:]
assert abs(values[0] - float(rate)) <= 0.005 * float(rate), (values, rate)
for name, v, shown in zip(names, ns, values[3:]):
    assert abs(shown - v / 1e9) <= 0.005 * v / 1e9, (name, shown, v)
PY
  # each criterion the summary says NO to is named in our words
  for crit in "Min duration:min duration not satisfied" "Min queries:min query count not satisfied" \
              "Early stopping:early stopping not satisfied" "Performance constraints:latency constraint not satisfied"; do
    key=${crit%%:*}; words=${crit#*:}
    if grep -q "^ *$key satisfied *: *NO" "$dir/mlperf_log_summary.txt"; then
      grep -q "$words" "$work/$run.txt" || fail "$run: summary says '$key satisfied : NO' but the report lacks '$words'"
      grep -q "$words" "$work/$run.csv" || fail "$run: the CSV report lacks '$words'"
    else
      ! grep -q "$words" "$work/$run.txt" || fail "$run: the report says '$words' but the summary does not"
    fi
  done
  case $result in INVALID) grep -q "Increase the\|Decrease the" "$work/$run.txt" && fail "$run: the report quotes LoadGen's advice" ;; esac
  samples=$(set -- $line; echo "$6")
  for fmt in markdown html; do
    "$bin" report --format "$fmt" "$work/$run.json" >"$work/$run.$fmt" 2>&1 || fail "report --format $fmt $run"
    grep -q "$samples" "$work/$run.$fmt" || fail "$run: --format $fmt lacks samples/s $samples"
  done
done

# nccl-tests: the time per op and the NCCL version from the header
expect 0 "NCCL 2.28.3" -- report "$work/nccl-all-reduce-text.json"
expect 0 "NCCL 2.28.3" -- report "$work/nccl-all-gather-json.json"

# usage errors: exit 2
expect 0 "gpuscale ingest mlperf \[options\] DIR" -- ingest --help
expect 0 "--hosts LIST" -- ingest mlperf --help
expect 0 "--op OP" -- ingest nccl-tests --help
expect 2 "missing KIND" -- ingest
expect 2 "KIND of gpuscale ingest" -- ingest loadgen mlperf/offline/node01
expect 2 "missing DIR" -- ingest mlperf
expect 2 "missing FILE" -- ingest nccl-tests -o "$work/x.json"
expect 2 "unknown option '--op'" -- ingest mlperf --op allreduce mlperf/offline/node01
expect 2 "option --op" -- ingest nccl-tests --op allreduse nccl-tests/all_reduce_2gpu.txt
expect 2 "option --hosts: 1 host names for 2 directories" -- ingest mlperf --hosts a mlperf/offline/node01 mlperf/offline/node02
expect 2 "given twice" -- ingest nccl-tests -o a.json -o b.json nccl-tests/all_reduce_2gpu.txt

# damaged inputs: exit 1, naming the file (and line), nothing written
out="$work/never.json"
damaged() {  # PATTERN ARGS...
  local pattern=$1
  shift
  expect 1 "$pattern" -- ingest "$@" -o "$out"
  [ ! -e "$out" ] || fail "ingest $* wrote $out despite the error"
  rm -f "$out"
}
mk() { mkdir -p "$work/$1"; }

damaged "cannot read $work/nodir" mlperf "$work/nodir"
damaged "is not a directory" mlperf nccl-tests/all_reduce_2gpu.txt
mk empty
damaged "neither mlperf_log_summary.txt nor mlperf_log_detail.txt" mlperf "$work/empty"

summary=mlperf/offline/node01/mlperf_log_summary.txt
detail=mlperf/offline/node01/mlperf_log_detail.txt
mk trunc && head -n 14 "$summary" >"$work/trunc/mlperf_log_summary.txt"
damaged "trunc/mlperf_log_summary.txt: no 'Min/Max/Mean latency \(ns\)' lines; the file ends at line 14 \(truncated\?\)" mlperf "$work/trunc"
mk unit && sed 's/^Max latency (ns)/Max latency (us)/' "$summary" >"$work/unit/mlperf_log_summary.txt"
damaged "unit/mlperf_log_summary.txt:17: 'Max latency \(us\)' is in 'us'; LoadGen writes latencies in nanoseconds" mlperf "$work/unit"
mk garbage && sed '7a this line is not LoadGen output' "$summary" >"$work/garbage/mlperf_log_summary.txt"
damaged "garbage/mlperf_log_summary.txt:8: unexpected line 'this line is not LoadGen output'" mlperf "$work/garbage"
mk number && sed 's/^Samples per second: .*/Samples per second: 40.9x/' "$summary" >"$work/number/mlperf_log_summary.txt"
damaged "number/mlperf_log_summary.txt:7: 'Samples per second' has the value '40.9x'; expected a non-negative number" mlperf "$work/number"
mk scen && sed 's/^Scenario : Offline/Scenario : Offlien/' "$summary" >"$work/scen/mlperf_log_summary.txt"
damaged "scen/mlperf_log_summary.txt:5: 'Scenario' has the value 'Offlien'; expected SingleStream" mlperf "$work/scen"
mk nohead && tail -n +4 "$summary" >"$work/nohead/mlperf_log_summary.txt"
damaged "nohead/mlperf_log_summary.txt:1: 'SUT name : gs-demo-8xH100' before the heading 'MLPerf Results Summary'" mlperf "$work/nohead"

mk dtrunc && cp "$summary" "$work/dtrunc/" && head -c 700 "$detail" >"$work/dtrunc/mlperf_log_detail.txt"
damaged "dtrunc/mlperf_log_detail.txt:3: invalid JSON after ':::MLLOG' at column [0-9]+ \(the record does not end with '}': truncated\?\)" mlperf "$work/dtrunc"
mk dkey && cp "$summary" "$work/dkey/" && sed 's/"time_ms": [0-9.]*, //' "$detail" >"$work/dkey/mlperf_log_detail.txt"
damaged "dkey/mlperf_log_detail.txt:1: ':::MLLOG' record \"loadgen_version\" without a numeric \"time_ms\"" mlperf "$work/dkey"
mk dtype && cp "$summary" "$work/dtype/" && sed 's/"result_min_latency_ns", "value": \([0-9]*\)/"result_min_latency_ns", "value": "\1"/' "$detail" >"$work/dtype/mlperf_log_detail.txt"
damaged "dtype/mlperf_log_detail.txt:15: \"result_min_latency_ns\" has a string value; expected a non-negative number" mlperf "$work/dtype"
mk dscen && cp "$summary" "$work/dscen/" && sed 's/"effective_scenario", "value": "Offline"/"effective_scenario", "value": "Server"/' "$detail" >"$work/dscen/mlperf_log_detail.txt"
damaged "dscen/mlperf_log_summary.txt says scenario Offline but .*dscen/mlperf_log_detail.txt says Server" mlperf "$work/dscen"
mk dnone && cp "$summary" "$work/dnone/" && echo "just text" >"$work/dnone/mlperf_log_detail.txt"
damaged "dnone/mlperf_log_detail.txt: no ':::MLLOG' record in 1 lines" mlperf "$work/dnone"
damaged "ran the Offline scenario but mlperf/server-invalid/rank0 ran Server" mlperf mlperf/offline/node01 mlperf/server-invalid/rank0

text=nccl-tests/all_reduce_2gpu.txt
head -n 14 "$text" >"$work/ntrunc.txt"
damaged "ntrunc.txt: no '# Avg bus bandwidth' footer after the last row \(line 14\); the file ends at line 14" nccl-tests "$work/ntrunc.txt"
head -n 8 "$text" >"$work/nhead.txt"
damaged "nhead.txt: no table header" nccl-tests "$work/nhead.txt"
sed 's/(us)  (GB\/s)  (GB\/s)             (us)/(ms)  (GB\/s)  (GB\/s)             (us)/' "$text" >"$work/nunit.txt"
damaged "nunit.txt:11: the table unit row has '\(ms\)' where nccl-tests writes '\(us\)'" nccl-tests "$work/nunit.txt"
sed '13s/  12.87 /  12,87 /' "$text" >"$work/nrow.txt"
damaged "nrow.txt:13: column 'time' is '12,87'; expected a time in microseconds" nccl-tests "$work/nrow.txt"
sed '14s/ 0$//' "$text" >"$work/ncols.txt"
damaged "ncols.txt:14: a table row with 12 columns; expected 13" nccl-tests "$work/ncols.txt"
sed '13s/float/fl\/oat/' "$text" >"$work/ntype.txt"
damaged "ntype.txt:13: column 'type' is 'fl/oat'" nccl-tests "$work/ntype.txt"
damaged "alltoall_2node.txt: cannot tell which collective ran: no '# Collective test starting: NAME' line; give it with --op" nccl-tests nccl-tests/alltoall_2node.txt
sed 's/all_reduce_perf/bisection_perf/' "$text" >"$work/nprog.txt"
damaged "nprog.txt: cannot tell which collective ran: unknown nccl-tests program 'bisection_perf'" nccl-tests "$work/nprog.txt"
head -c 900 nccl-tests/all_gather_1gpu.json >"$work/jtrunc.json"
damaged "jtrunc.json:1: invalid JSON at column [0-9]+: the document does not end with '}' \(truncated" nccl-tests "$work/jtrunc.json"
sed 's/"version":2/"version":4/' nccl-tests/all_gather_1gpu.json >"$work/jver.json"
damaged "jver.json: nccl-tests JSON version 4; gpuscale reads versions 2 and 3" nccl-tests "$work/jver.json"
sed 's/"time":42.300000/"time":"fast"/' nccl-tests/all_gather_1gpu.json >"$work/jtime.json"
damaged "jtime.json: results\[0\].out_of_place.time is a string; expected a time in microseconds" nccl-tests "$work/jtime.json"
# the second file is damaged: nothing at all is written, not even the first
damaged "ntrunc.txt: no '# Avg bus bandwidth' footer" nccl-tests "$text" "$work/ntrunc.txt"

# a damaged input leaves an existing result file as it was
echo old >"$work/keep.json"
expect 1 "ntrunc.txt" -- ingest nccl-tests "$work/ntrunc.txt" -o "$work/keep.json"
[ "$(cat "$work/keep.json")" = old ] || fail "a failed ingest changed an existing result file"

if [ "$failures" -gt 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all ingest CLI tests passed"
