#!/usr/bin/env bash
# End-to-end tests of `gpuscale report` on the fixtures in tests/data/report:
# exit codes of bad input, key numbers in every format, the CSV row count,
# --out and the mark thresholds. $1 is the gpuscale binary.
set -u
bin=$1
data=$(cd "$(dirname "$0")/data/report" && pwd)
. "$(dirname "$0")/cli_lib.sh"

# has FILE PATTERN: a fixed string in a file.
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2'"; }
lacks() { ! grep -qF -- "$2" "$1" || fail "$1 has '$2'"; }

strong=$data/strong.json
weak=$data/weak.json

# usage errors: exit 2
expect 0 "--moderate PCT" -- report --help
expect 2 "missing FILE" -- report
expect 2 "option --format" -- report --format pdf "$strong"
expect 2 "unknown option '--critcal'" -- report --critcal 20 "$strong"
expect 2 "critical must exceed" -- report --moderate 20 --critical 10 "$strong"
expect 2 "option --moderate" -- report --moderate 5x "$strong"
expect 2 "given twice" -- report --format csv --format json "$strong"
# unreadable or invalid documents: exit 1, naming the file
expect 1 "cannot read .*missing.json" -- report "$strong" "$work/missing.json"
expect 1 "malformed.json: invalid JSON" -- report "$data/malformed.json"
expect 1 "foreign.json: unsupported schema" -- report "$data/foreign.json"
# A negative time is refused, naming the file, the field and the value.
python3 - "$strong" "$work/negative.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["measurements"][0]["runs"][0]["ranks"][0]["wall_seconds"][1] = -0.5
json.dump(d, open(sys.argv[2], "w"))
PY
expect 1 "negative.json: measurements\[0\].runs\[0\].ranks\[0\].wall_seconds\[1\] is -0.5: a time cannot be negative" \
  -- report "$work/negative.json"
expect 1 "not_result.json: not a gpuscale result document" -- report "$data/not_result.json"
expect 1 "mismatched.json: .*has 1 ranks but world_size is 2" -- report "$data/mismatched.json"
touch "$work/plain"
expect 1 "option --out: cannot write $work/plain/r.txt: $work/plain is not a directory" -- report "$strong" -o "$work/plain/r.txt"

# text (default)
"$bin" report "$strong" >"$work/r.txt" 2>"$work/err" || fail "text report failed: $(cat "$work/err")"
has "$work/r.txt" "strong scaling"
has "$work/r.txt" "1.25x"
has "$work/r.txt" "62.5%"
has "$work/r.txt" "0.600"
has "$work/r.txt" "160.0 M"
has "$work/r.txt" "critical (straggler)"
has "$work/r.txt" "straggler rank 1"
has "$work/r.txt" "slow start"
has "$work/r.txt" "beneficial: speedup 1.25x [1.20, 1.29] at 2 ranks"
has "$work/r.txt" "consider dynamic load balancing"

# thresholds: at --critical 20 the 17.6% deviation is only moderate
"$bin" report --critical 20 "$strong" >"$work/r20.txt" || fail "report --critical 20 failed"
has "$work/r20.txt" "moderate"
lacks "$work/r20.txt" "straggler)"
lacks "$work/r20.txt" "load balancing"

# markdown, written with --out
"$bin" report -f markdown --out "$work/r.md" "$strong" "$weak" || fail "markdown report failed"
has "$work/r.md" "| ranks | file | status |"
has "$work/r.md" "| 2 | strong.json | ok | passed | 8 | 10.0 ms |"
has "$work/r.md" "weak scaling"
has "$work/r.md" "marginal: speedup 1.00x [1.00, 1.00] at 2 ranks"

# csv --samples: header + strong (8 + 24 samples) + weak (8 + 12)
"$bin" report --format csv --samples "$strong" "$weak" >"$work/r.csv" || fail "csv report failed"
lines=$(wc -l <"$work/r.csv")
[ "$lines" = 53 ] || fail "csv has $lines lines, expected 53"
ident="file,measurement,workload,backend,scaling,variant,scenario,task,split_policy,tensor_parallel,world_size,op,size_bytes,dtype,redop,root,form,workload_options"
has "$work/r.csv" "$ident,run,iteration,rank,clock,time_s"
grep -q "^$strong,1,voxelize,cpu,strong,,,,,1,2,,,,,,,\".*\",1,3,1,wall,0.01\$" "$work/r.csv" ||
  fail "r.csv lacks rank 1's sample 3 of run 1 at 2 ranks"
steps=$(grep -c ',step,,' "$work/r.csv")
[ "$steps" = 20 ] || fail "csv has $steps step rows, expected 20"
expect 2 "option --samples: only with --format csv" -- report --samples "$strong"
# csv: one row per measurement (header + 2 + 2), with the figures of the analysis
"$bin" report --format csv "$strong" "$weak" >"$work/m.csv" || fail "csv report failed"
python3 - "$work/m.csv" "$strong" <<'PY' || failures=$((failures + 1))
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 4, len(rows)
two = [r for r in rows if r["file"] == sys.argv[2] and r["world_size"] == "2"][0]
assert two["workload"] == "voxelize" and two["scaling"] == "strong", two
assert float(two["throughput_items_per_s"]) == 1e8 and float(two["speedup"]) == 1.25, two
assert two["verdict"] == "beneficial" and two["item_unit"] == "points", two
assert float(two["step_mean_s"]) == 0.01 and two["step_samples"] == "8", two
PY

# json: the analysis as one object
"$bin" report --format=json "$strong" "$weak" "$data/failed.json" >"$work/r.json" || fail "json report failed"
python3 - "$work/r.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuscale/report/v1", d["schema"]
assert len(d["series"]) == 2, len(d["series"])
s = d["series"][0]
rows = {(r["world_size"], r["file"].rsplit("/", 1)[-1]): r for r in s["rows"]}
two = rows[(2, "strong.json")]
assert abs(two["speedup"] - 1.25) < 1e-12, two["speedup"]
assert abs(two["efficiency"] - 0.625) < 1e-12
assert abs(two["karp_flatt"] - 0.6) < 1e-12
assert two["symmetry"]["straggler"] == 1
assert [k["mark"] for k in two["ranks"]] == ["critical", "critical"]
failed = rows[(2, "failed.json")]
assert failed["status"] == "cuda" and failed["speedup"] is None
assert s["recommendation"]["verdict"] == "beneficial"
assert any("investigate rank 1" in a for a in s["recommendation"]["advice"])
assert d["series"][1]["recommendation"]["verdict"] == "marginal"
PY

# 2 hosts, requests, telemetry, cost and plots
two=$data/two_host.json
expect 2 "option --price: 'H100' is not MODEL=DOLLARS_PER_GPU_HOUR" -- report --price H100 "$two"
expect 2 "option --price" -- report --price H100=abc "$two"
expect 0 "no price matches GPU 'NVIDIA H100 80GB HBM3'" -- report --price A100=5 "$two"
"$bin" report --price H100=7 --plots "$work/plots" "$two" "$data/coll.json" >"$work/t.txt" 2>"$work/err" ||
  fail "report with --price and --plots failed: $(cat "$work/err")"
has "$work/t.txt" "Hosts (2)"
has "$work/t.txt" "node-b"
has "$work/t.txt" "50.0%"
has "$work/t.txt" "slow first sample"
has "$work/t.txt" "20.1 K    49.8264"
has "$work/t.txt" "107 ms   55.0 ms   71.2 ms (66.3%)  10.0 ms (9.3%)  21.2 ms (19.8%)   5.00 ms (4.7%)"
has "$work/t.txt" "consider a larger batch size"
has "$work/t.txt" "investigate rank 1 (host node-b): 2 of 4 requests did not succeed"
has "$work/t.txt" "investigate the transport"
has "$work/t.txt" "plots drawn with gnuplot, as PNG and SVG in $work/plots"
# file names name the series (its title) and the rank count
for f in llm-scenario-offline-speedup llm-scenario-offline-efficiency \
         llm-scenario-offline-n2-latency-cdf llm-scenario-offline-n2-throughput coll-busbw; do
  [ -s "$work/plots/$f.png" ] && [ -s "$work/plots/$f.svg" ] || fail "--plots did not write $f.png/.svg"
done
GPUSCALE_GNUPLOT=$work/no-gnuplot "$bin" report --plots "$work/p2" "$two" >"$work/nognuplot.txt" ||
  fail "report without gnuplot failed"
has "$work/nognuplot.txt" "Plots: none: gnuplot ($work/no-gnuplot) is not installed"
GPUSCALE_GNUPLOT=/bin/false expect 1 "gnuplot \(/bin/false\) failed \(exit 1\)" -- report --plots "$work/p3" "$two"
expect 1 "option --plots: cannot write $work/plain/such" -- report --plots "$work/plain/such" "$two"
expect 1 "bad_comm.json: .*comm_seconds must be an array or null" -- report "$data/bad_comm.json"
# a file name with shell and gnuplot metacharacters reaches neither
odd="$work/it's \$(touch pwned); 'x.json"
cp "$two" "$odd"
(cd "$work" && "$bin" report -f html -o "$work/odd.html" "$odd") || fail "report of an odd file name failed"
[ ! -e "$work/pwned" ] || fail "a file name was run as a command"
has "$work/odd.html" "it's"

# golden outputs: every section of the text and Markdown reports
golden two_host_coll.txt report --price H100=7 two_host.json coll.json
golden strong_two_host.md report -f markdown --price H100=7 strong.json two_host.json
# the speedup's interval in the other formats: numbers in CSV and JSON
golden strong_intervals.csv report -f csv strong.json
golden strong_intervals.json report -f json strong.json
# documents of the newer workloads, written on the CPU backend and trimmed
# (aggregate.step, telemetry and per-rank llm statistics dropped):
#   llm_cpu.json      scale llm --ranks 2 --model tiny --samples 6 --batch 2
#   llm_server_cpu.json run llm --ranks 2 --model tiny --samples 8 --scenario server
#   split_cpu.json    run resample --ranks 2 --split proportional
#                     --inject slow:rank=1,factor=3 --samples 100 --iters 6
#   mlp_variants.json scale mlp --ranks 2 --batch-sizes 8,32 --iters 4
#   plan_cpu.json     plan --task '0:resample --samples 100' --task 1:fuse --iters 4
golden workloads.txt report llm_cpu.json llm_server_cpu.json split_cpu.json mlp_variants.json \
  plan_cpu.json
golden plan.md report -f markdown plan_cpu.json
# llm's rates, as written on the CPU backend (untrimmed), with
#   cpu="--backend cpu --model tiny --input-min 4 --input-max 10 --output-min 2
#        --output-max 5 --scenario server --samples 16 --slo ttft=30ms,tpot=5ms
#        --inject slow:rank=0,factor=4"
#   llm_rates_search_cpu.json run llm $cpu --rate 100 --find-max-rate
#   llm_rates_list_cpu.json   run llm $cpu --rates 50,100,200,400,800,1600
# each rate's figures by rate, the search's answer with its bracket, a
# list's highest rate met with the next one that missed
golden rates.txt report llm_rates_search_cpu.json llm_rates_list_cpu.json
golden rates.md report -f markdown llm_rates_search_cpu.json
golden rates.csv report -f csv --rate-points llm_rates_search_cpu.json llm_rates_list_cpu.json
expect 2 "option --rate-points: only with --format csv" -- report --rate-points "$data/llm_rates_list_cpu.json"
expect 2 "options --samples and --rate-points" -- report -f csv --samples --rate-points \
  "$data/llm_rates_list_cpu.json"

# two series that differ only in an option: the overview, the plot titles
# and the plot files name the option, never the same twice
python3 - "$strong" "$work/other_points.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["config"]["workload_options"]["points"] = 99
json.dump(d, open(sys.argv[2], "w"))
PY
"$bin" report --plots "$work/vary" "$strong" "$work/other_points.json" >"$work/vary.txt" ||
  fail "report of two option variants failed"
has "$work/vary.txt" "voxelize (points=50000)"
has "$work/vary.txt" "voxelize (points=99)"
for f in voxelize-points-50000-speedup voxelize-points-99-speedup voxelize-points-99-n2-latency-cdf; do
  [ -s "$work/vary/$f.svg" ] || fail "--plots did not write $f.svg: $(ls "$work/vary")"
done
grep -q "voxelize (points=99): speedup" "$work/vary/voxelize-points-99-speedup.svg" ||
  fail "the plot's title does not name the option"
[ "$(ls "$work/vary" | wc -l)" = 16 ] || fail "expected 16 plot files: $(ls "$work/vary")"

# report and compare start without cuBLAS: it is opened by the workloads
# that call it (platform/blas.c), so its start-up cost is not every command's
if command -v ldd >/dev/null && ldd "$bin" | grep -q cublas; then
  fail "gpuscale loads cuBLAS at start: $(ldd "$bin" | grep cublas)"
fi

# a real document written by scale
"$bin" scale voxelize --backend cpu --ranks 2 --points 20K --clouds 4 --grid 16 --voxel-size 1 \
  --iters 5 --warmup 1 --runs 1 -q -o "$work/scale.json" >/dev/null 2>&1 || fail "scale failed"
expect 0 "speedup" -- report "$work/scale.json"
"$bin" report -f csv "$work/scale.json" >"$work/scale.csv" || fail "csv of a real document failed"
lines=$(wc -l <"$work/scale.csv")
# one row per measurement: 1 and 2 ranks
[ "$lines" = 3 ] || fail "csv of scale.json has $lines lines, expected 3"
"$bin" report -f csv --samples "$work/scale.json" >"$work/scale-samples.csv" || fail "per-sample csv of a real document failed"
lines=$(wc -l <"$work/scale-samples.csv")
# 1 rank: 5 x (step + 1); 2 ranks: 5 x (step + 2)
[ "$lines" = 26 ] || fail "per-sample csv of scale.json has $lines lines, expected 26"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all report CLI tests passed"
