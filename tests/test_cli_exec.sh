#!/usr/bin/env bash
# End-to-end tests of `gpuscale exec` with small shell and Python programs
# (tests/exec_program.py, no GPU and no torch): placeholders and
# CUDA_VISIBLE_DEVICES, figures from the protocol and from --metric
# patterns, per-step samples, strong and weak scaling, failed runs (exit
# code, signal, timeout, missing metric) kept with their reason and stderr,
# SIGINT, --no-logs, usage errors that write nothing, and report and
# compare on the documents.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
prog=$(cd "$(dirname "$0")" && pwd)/exec_program.py
command -v python3 >/dev/null || { echo "SKIP: python3 is needed"; exit 77; }
quick=(--warmup 0 --runs 2 --no-progress)

# json FILE EXPR: prints a Python expression over the document `d`.
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# ---- usage errors: exit 2, nothing written ---------------------------------
expect 0 "Options of exec" -- exec --help
expect 0 "\{n\}" -- help exec
expect 2 "missing '-- COMMAND'" -- exec --counts 1,2
expect 2 "missing the command" -- exec --
expect 2 "unexpected argument 'python3'" -- exec python3 "$prog" rate 1
expect 2 "command 'no-such-program-x' not found in PATH" -- exec --out "$work/u.json" -- no-such-program-x
expect 2 "option --metric 'a=b': the REGEX needs a group" -- exec --metric a=b -- true
expect 2 "give the figure's --unit" -- exec --metric 'a=x ([0-9]+)' -- true
expect 2 "option --unit 'apples'" -- exec --metric 'a=x ([0-9]+)' --unit apples -- true
expect 2 "options --unit ms and --better higher conflict" -- exec --metric 'a=x ([0-9]+)' \
  --unit ms --better higher -- true
expect 2 "option --unit: applies to a figure read by --metric NAME=REGEX" -- exec --unit s -- true
expect 2 "a named twice" -- exec --metric a --metric 'a=x ([0-9]+)' -- true
expect 2 "option -n/--iters does not apply to gpuscale exec" -- exec --iters 5 -- true
expect 2 "option --ranks does not apply to gpuscale exec" -- exec --ranks 2 -- true
expect 2 "unknown option" -- exec --metrik a -- true
# The command's own --help is its own: exec's help is not shown for it.
expect 2 "command 'no-such-program-x'" -- exec -- no-such-program-x --help
[ ! -e "$work/u.json" ] && [ ! -e "$work/u.logs" ] || fail "a usage error wrote $work/u.json or its logs"

# ---- placeholders, CUDA_VISIBLE_DEVICES, logs --------------------------------
expect 0 "figure: samples_per_s" -- exec "${quick[@]}" --counts 1,2,3 --out "$work/env.json" \
  -- python3 "$prog" env '{n}' 'gpus={gpus}' 'both={n}/{gpus}'
out=$(cat "$work/env.logs/n3-run1.stdout")
grep -q "^n=3 visible=0,1,2 args=gpus=0,1,2 both=3/0,1,2$" <<<"$out" ||
  fail "placeholders or CUDA_VISIBLE_DEVICES at 3: $out"
[ "$(json "$work/env.json" "d['measurements'][1]['exec']['cuda_visible_devices']")" = "0,1" ] ||
  fail "exec.cuda_visible_devices at 2 is not 0,1"
[ "$(json "$work/env.json" "d['measurements'][2]['exec']['environment']['CUDA_VISIBLE_DEVICES']")" = "0,1,2" ] ||
  fail "the environment the command saw lacks CUDA_VISIBLE_DEVICES"
[ "$(json "$work/env.json" "d['measurements'][0]['exec']['command'][2:]")" = "['env', '1', 'gpus=0', 'both=1/0']" ] ||
  fail "exec.command is not the command as run"
CUDA_VISIBLE_DEVICES=7 "$bin" exec -q "${quick[@]}" --counts 2 --no-visible-devices \
  --out "$work/novis.json" -- python3 "$prog" env '{n}' >/dev/null 2>&1 || fail "--no-visible-devices exited $?"
grep -q "visible=7 " "$work/novis.logs/n2-run1.stdout" ||
  fail "--no-visible-devices changed CUDA_VISIBLE_DEVICES: $(cat "$work/novis.logs/n2-run1.stdout")"

# ---- figures: protocol per step (a rate), strong scaling ---------------------
expect 0 "figure: samples_per_s \(samples/s, higher is better, protocol lines, values per step\)" -- \
  exec "${quick[@]}" --counts 1,2,4 --out "$work/rate.json" -- python3 "$prog" rate '{n}' 7
expect 0 "the step times above are 1/rate \(the time of one of its samples, N under weak scaling\), not the program's steps" -- \
  exec "${quick[@]}" --out "$work/rate1.json" -- python3 "$prog" rate 1
[ "$(json "$work/rate.json" "d['status']")" = ok ] || fail "rate.json is not ok"
[ "$(json "$work/rate.json" "d['measurements'][2]['runs'][0]['step_seconds'].__len__()")" = 7 ] ||
  fail "7 per-step values did not become 7 samples of a run"
[ "$(json "$work/rate.json" "float(round(d['measurements'][2]['aggregate']['throughput_items_per_second'], 6))")" = 4000.0 ] ||
  fail "the throughput at 4 is not the printed rate, 4000 samples/s"
[ "$(json "$work/rate.json" "float(round(d['measurements'][2]['aggregate']['speedup'], 6))")" = 4.0 ] ||
  fail "a rate 4x the 1-GPU one is not a speedup of 4"
[ "$(json "$work/rate.json" "d['measurements'][0]['cost']['item_unit']")" = samples ] ||
  fail "the item unit of samples/s is not samples"
[ "$(json "$work/rate.json" "[m['name'] for m in d['measurements'][0]['exec']['metrics']]")" = "['samples_per_s', 'loss']" ] ||
  fail "the other protocol metrics (loss) are not recorded"
expect 0 "exec \(variant python3 .*\): multi-rank beneficial: speedup 4.00x \[4.00, 4.00\] at 4 ranks" -- report "$work/rate.json"

# ---- values per rank: each rank's record holds its own; the step is the slowest
expect 0 "figure: samples_per_s \(samples/s, higher is better, protocol lines, values per step, per rank\)" -- \
  exec "${quick[@]}" --counts 1,2 --out "$work/ranks.json" -- python3 "$prog" ranks '{n}' 3
[ "$(json "$work/ranks.json" "[r['wall_seconds'] for r in d['measurements'][1]['runs'][0]['ranks']]")" = "[[0.0005, 0.0005, 0.0005], [0.001, 0.001, 0.001]]" ] ||
  fail "the ranks' own rates (1000 and 500 samples/s, half a sample each) are not their samples"
[ "$(json "$work/ranks.json" "float(round(d['measurements'][1]['aggregate']['throughput_items_per_second'], 6))")" = 1000.0 ] ||
  fail "the step at 2 is not the slow rank's: throughput is not 1000 samples/s"
expect 4 "metric samples_per_s: rank 2 printed no value" -- exec "${quick[@]}" --counts 3 \
  --out "$work/ranks-1.json" -- python3 "$prog" ranks-1 '{n}'
expect 4 "metric samples_per_s: rank 2 printed a value, the step has ranks 0 to 1" -- \
  exec "${quick[@]}" --counts 2 --out "$work/ranks+1.json" -- python3 "$prog" ranks+1 '{n}'

# ---- a time per step, weak and strong ----------------------------------------
expect 0 "" -- exec "${quick[@]}" --counts 1,2 --scaling weak --out "$work/weak.json" \
  -- python3 "$prog" weak-time '{n}'
[ "$(json "$work/weak.json" "float(round(d['measurements'][1]['aggregate']['efficiency'], 6))")" = 1.0 ] ||
  fail "weak scaling with the same step time at 2 is not 100% efficient"
[ "$(json "$work/weak.json" "float(round(d['measurements'][1]['aggregate']['speedup'], 6))")" = 2.0 ] ||
  fail "weak scaling with the same step time at 2 is not a scaled speedup of 2"
[ "$(json "$work/weak.json" "d['measurements'][1]['scaling']")" = weak ] || fail "weak.json is not weak"
expect 0 "" -- exec "${quick[@]}" --counts 1,2 --out "$work/strong.json" -- python3 "$prog" strong-time '{n}'
[ "$(json "$work/strong.json" "float(round(d['measurements'][1]['aggregate']['speedup'], 6))")" = 2.0 ] ||
  fail "strong scaling with half the step time at 2 is not a speedup of 2"
[ "$(json "$work/strong.json" "float(round(d['measurements'][0]['aggregate']['step']['median'], 9))")" = 0.04 ] ||
  fail "40 ms per step is not a 0.04 s step"
# The same program under weak scaling: the same step time is no speedup.
expect 0 "" -- exec "${quick[@]}" --counts 1,2 --out "$work/strong-flat.json" -- python3 "$prog" weak-time '{n}'
[ "$(json "$work/strong-flat.json" "float(round(d['measurements'][1]['aggregate']['speedup'], 6))")" = 1.0 ] ||
  fail "strong scaling with the same step time at 2 is not a speedup of 1"

# ---- a step's items: from the protocol ("items") or --items --------------------
# tput ROUNDED FILE INDEX: the throughput of measurement INDEX, rounded to 6 places.
tput() { json "$1" "float(round(d['measurements'][$2]['aggregate']['throughput_items_per_second'], 6))"; }
expect 0 "a step's items: its lines' \"items\", in samples" -- exec "${quick[@]}" --counts 1,2 \
  --out "$work/items.json" -- python3 "$prog" items '{n}' 3
[ "$(tput "$work/items.json" 0),$(tput "$work/items.json" 1)" = "102400.0,204800.0" ] ||
  fail "4096 samples a step of 40 ms and 20 ms are not 102400 and 204800 samples/s"
[ "$(json "$work/items.json" "(d['measurements'][1]['cost']['items_per_step'], d['measurements'][1]['cost']['item_unit'])")" = "(4096, 'samples')" ] ||
  fail "the printed items are not the cost of a step in samples"
[ "$(json "$work/items.json" "float(round(d['measurements'][1]['aggregate']['step']['median'], 9))")" = 0.02 ] ||
  fail "the step time at 2 is not the printed 20 ms"
[ "$(json "$work/items.json" "float(round(d['measurements'][1]['aggregate']['speedup'], 6))")" = 2.0 ] ||
  fail "half the step time of the same items at 2 is not a speedup of 2"
[ "$(json "$work/items.json" "(d['measurements'][0]['exec']['figure']['items_source'], [m['name'] for m in d['measurements'][0]['exec']['metrics']])")" = "('protocol', ['step_time', 'samples_per_s'])" ] ||
  fail "the figure's items are not said to come from the protocol, or samples_per_s is not recorded"
expect 0 "" -- exec "${quick[@]}" --counts 1,2 --scaling weak --out "$work/items-weak.json" \
  -- python3 "$prog" items-weak '{n}'
[ "$(tput "$work/items-weak.json" 0),$(tput "$work/items-weak.json" 1)" = "51200.0,102400.0" ] ||
  fail "1024 N samples a step of 20 ms are not 51200 N samples/s"
[ "$(json "$work/items-weak.json" "(float(round(d['measurements'][1]['aggregate']['speedup'], 6)), float(round(d['measurements'][1]['aggregate']['efficiency'], 6)))")" = "(2.0, 1.0)" ] ||
  fail "weak scaling with printed items: not a scaled speedup of 2 at 100%"
expect 0 "a step's items: --items 256 samples" -- exec "${quick[@]}" --counts 1,2 --items 256 \
  --item-unit samples --out "$work/opt-items.json" -- python3 "$prog" strong-time '{n}'
[ "$(tput "$work/opt-items.json" 0),$(tput "$work/opt-items.json" 1)" = "6400.0,12800.0" ] ||
  fail "--items 256 over steps of 40 and 20 ms are not 6400 and 12800 samples/s"
[ "$(json "$work/opt-items.json" "d['measurements'][1]['cost']['item_unit']")" = samples ] ||
  fail "--item-unit is not the item unit"
expect 0 "a step's items: --items 100 items per GPU" -- exec "${quick[@]}" --counts 1,2 \
  --scaling weak --items 100 --out "$work/opt-weak.json" -- python3 "$prog" weak-time '{n}'
[ "$(tput "$work/opt-weak.json" 1),$(json "$work/opt-weak.json" "d['measurements'][1]['cost']['items_per_step']")" = "10000.0,200" ] ||
  fail "--items 100 under weak scaling at 2 is not 200 items a step of 20 ms"
expect 0 "" -- exec "${quick[@]}" --items 3 --out "$work/opt-wall.json" -- sh -c 'exit 0'
[ "$(json "$work/opt-wall.json" "(d['measurements'][0]['cost']['items_per_step'], d['measurements'][0]['cost']['item_unit'])")" = "(3, 'items')" ] ||
  fail "--items without --item-unit over the wall time is not 3 items a run"
# Bad items: the run fails with the reason (exit 4), or a usage error.
for bad in '{"items": -5}' '{"items": 1.5}' '{"items": "many"}' '{"items": 0}'; do
  expect 4 "\"items\" of step_time must be a whole number from 1 to 2\^53" -- exec "${quick[@]}" \
    --out "$work/items-bad.json" -- python3 "$prog" items-raw 1 "$bad"
done
expect 4 "\"item_unit\" of step_time needs \"items\"" -- exec "${quick[@]}" \
  --out "$work/items-bad.json" -- python3 "$prog" items-raw 1 '{"item_unit": "samples"}'
expect 4 "\"item_unit\" of step_time must be a name of 1 to 31" -- exec "${quick[@]}" \
  --out "$work/items-bad.json" -- python3 "$prog" items-raw 1 '{"items": 8, "item_unit": "img/s"}'
expect 4 "\"items\" of step_time applies to a time .*not to unit 'samples/s'" -- exec "${quick[@]}" \
  --out "$work/items-bad.json" -- python3 "$prog" items-raw 1 '{"items": 8, "unit": "samples/s"}'
expect 4 "protocol: step_time changed its \"items\"" -- exec "${quick[@]}" --counts 2 \
  --out "$work/items-bad.json" -- python3 "$prog" items-rank '{n}' 2
expect 4 "metric step_time: \"items\" 2048, earlier runs at 1 printed 4096" -- exec "${quick[@]}" \
  --out "$work/items-bad.json" -- python3 "$prog" items-runs 1 "$work/items-runs1"
expect 4 "metric step_time: its lines say no \"items\", those of earlier runs did" -- \
  exec "${quick[@]}" --out "$work/items-bad.json" -- python3 "$prog" items-runs 1 "$work/items-runs2" none
expect 4 "metric samples_per_s: --items applies to a time figure" -- exec "${quick[@]}" --items 8 \
  --out "$work/items-bad.json" -- python3 "$prog" rate 1
expect 4 "metric step_time: its lines say their \"items\" \(4096\); give --items only" -- \
  exec "${quick[@]}" --items 8 --out "$work/items-bad.json" -- python3 "$prog" items 1
expect 2 "option --item-unit: applies with --items N" -- exec --item-unit samples -- true
expect 2 "option --items" -- exec --items 0 -- true
expect 2 "option --items" -- exec --items many -- true
expect 2 "option --item-unit 'a b'" -- exec --items 4 --item-unit 'a b' -- true
expect 2 "option --items: applies to a time figure; --unit img/s is a rate" -- \
  exec --items 4 --metric 'a=x ([0-9]+)' --unit img/s -- true

# ---- one value per run; --metric patterns -----------------------------------
expect 0 "" -- exec "${quick[@]}" --counts 1,2 --metric tput --out "$work/once.json" -- python3 "$prog" once '{n}'
[ "$(json "$work/once.json" "[len(r['step_seconds']) for r in d['measurements'][1]['runs']]")" = "[1, 1]" ] ||
  fail "a value without a step is not one sample per run"
expect 0 "figure: imgs \(img/s, higher is better, read by --metric, values per step\)" -- \
  exec "${quick[@]}" --counts 1,2 --metric 'imgs=iter [0-9]+: ([0-9.]+) img/s' --unit img/s \
  --metric 'loss=loss ([0-9.]+)' --out "$work/regex.json" -- python3 "$prog" regex '{n}' 4
[ "$(json "$work/regex.json" "float(round(d['measurements'][1]['aggregate']['throughput_items_per_second'], 6))")" = 500.0 ] ||
  fail "the pattern's value at 2 (500 img/s) is not the throughput"
[ "$(json "$work/regex.json" "d['measurements'][1]['runs'][0]['step_seconds'].__len__()")" = 4 ] ||
  fail "every match of the pattern is not a sample"
# Two documents of different commands are two series for compare.
expect 0 "" -- compare "$work/rate.json" "$work/rate.json"
expect 1 "" -- compare "$work/rate.json" "$work/regex.json"

# ---- failed runs: kept with reason and stderr; exit 4 ------------------------
expect 4 "timed run 1 with \{n\}=1 failed: exit code 3" -- exec "${quick[@]}" --counts 1 \
  --out "$work/fail.json" -- python3 "$prog" fail '{n}'
[ "$(json "$work/fail.json" "d['status']")" = failed ] || fail "fail.json is not failed"
[ "$(json "$work/fail.json" "d['measurements'][0]['exec']['runs'][0]['stderr_tail'].splitlines()[-1]")" = "error line 3" ] ||
  fail "the failed run's stderr tail is not recorded"
[ "$(json "$work/fail.json" "d['measurements'][0]['failure']['status']")" = command-failed ] ||
  fail "the failure is not named command-failed"
expect 4 "killed by signal 9" -- exec "${quick[@]}" --counts 1 --out "$work/sig.json" -- python3 "$prog" signal '{n}'
expect 4 "metric samples_per_s was not printed" -- exec "${quick[@]}" --counts 1 --metric samples_per_s \
  --out "$work/missing.json" -- python3 "$prog" silent '{n}'
expect 4 "\"value\" of samples_per_s is not a finite number" -- exec "${quick[@]}" --counts 1 \
  --out "$work/bad.json" -- python3 "$prog" bad '{n}'
# Completed counts are kept when a later one fails; the failed count's
# remaining runs are not started.
expect 4 "timed out after 1 s" -- exec "${quick[@]}" --counts 1,2 --timeout 1 \
  --out "$work/timeout.json" -- python3 "$prog" hang-at-2 '{n}' "$work/timeout.pid"
[ "$(json "$work/timeout.json" "(d['status'], [m['status'] for m in d['measurements']])")" = "('partial', ['ok', 'timeout'])" ] ||
  fail "a timeout at 2 did not keep the measurement at 1: $(json "$work/timeout.json" "d['status']")"
[ "$(json "$work/timeout.json" "len(d['measurements'][1]['exec']['runs'])")" = 1 ] ||
  fail "the runs after a timed-out one were started"
kill -0 "$(cat "$work/timeout.pid")" 2>/dev/null && fail "the timed-out command still runs"

# ---- SIGINT: the command's group is stopped, what was measured is kept ------
"$bin" exec "${quick[@]}" --counts 1,2 --out "$work/int.json" \
  -- python3 "$prog" hang-at-2 '{n}' "$work/int.pid" >"$work/int.out" 2>&1 &
pid=$!
for _ in $(seq 1 200); do [ -s "$work/int.pid" ] && break; sleep 0.1; done
[ -s "$work/int.pid" ] || fail "the command never started at 2"
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" = 4 ] || fail "exec after SIGINT exited $rc, expected 4: $(cat "$work/int.out")"
[ "$(json "$work/int.json" "(d['status'], [m['status'] for m in d['measurements']])")" = "('partial', ['ok', 'interrupted'])" ] ||
  fail "SIGINT did not keep the measurement at 1"
kill -0 "$(cat "$work/int.pid")" 2>/dev/null && fail "the command survived SIGINT"

# ---- --no-logs -----------------------------------------------------------------
expect 0 "" -- exec "${quick[@]}" --no-logs --out "$work/nolog.json" -- python3 "$prog" rate 1
[ ! -e "$work/nolog.logs" ] || fail "--no-logs wrote $work/nolog.logs"
[ "$(json "$work/nolog.json" "'stdout_log' in d['measurements'][0]['exec']['runs'][0]")" = False ] ||
  fail "--no-logs still names log files"

# ---- the document is an ordinary one -------------------------------------------
expect 0 "telemetry: unavailable" -- exec "${quick[@]}" --out "$work/plain.json" -- sh -c 'exit 0'
[ "$(json "$work/plain.json" "d['measurements'][0]['telemetry']['available']")" = False ] ||
  fail "unavailable telemetry is not said in the document"
[ "$(json "$work/plain.json" "d['measurements'][0]['exec']['figure']['source']")" = wall_time ] ||
  fail "a command without protocol lines is not measured by its wall time"
expect 0 "exec: backend cpu" -- report "$work/plain.json" "$work/rate.json"
expect 0 "" -- report --format json --out "$work/r.json" "$work/strong.json"

# ---- --trace: each run a span of the host lane, named in the document ---------
expect 0 "" -- exec --runs 2 --no-progress --warmup 1 --trace "$work/exec-trace.json" \
  --out "$work/traced.json" -- sh -c 'exit 0'
python3 "$(dirname "$prog")/trace_validate.py" "$work/exec-trace.json" --ranks 1 \
  --expect "command run,command warmup" >/dev/null || fail "exec's trace is not valid"
[ "$(json "$work/traced.json" "d['trace']['device_source'].startswith('none: exec sees')")" = True ] ||
  fail "exec's document does not say that the command's GPU work is not traced"

# A figure that is NaN (Python's json.dumps) or overflows as a step time
# (1e308 hours) fails its run with the reason, and the document is written.
for value in 'NaN:not a finite number' '1e308:out of range'; do
  expect 4 "${value#*:}" -- exec --counts 1 --runs 1 -q --out "$work/bad-figure.json" -- \
    sh -c "echo '{\"metric\": \"t\", \"value\": ${value%%:*}, \"unit\": \"h\"}'"
  [ "$(json "$work/bad-figure.json" "d['measurements'][0]['status']")" = command-failed ] ||
    fail "exec with a ${value%%:*} figure: the document does not say the run failed"
done

[ "$failures" = 0 ] || exit 1
echo "all exec tests passed"
