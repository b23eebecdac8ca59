#!/usr/bin/env bash
# End-to-end tests on the CPU backend (CUDA_VISIBLE_DEVICES hides any GPU,
# NVML is pointed at a missing library): `gpuscale p2p` says why it cannot
# measure and exits 1; its bad options exit 2 naming the option; `run`
# still works and records telemetry as unavailable with the reason; the
# telemetry options are checked; the suite writes no p2p.json without GPUs.
set -u
bin=$1
export CUDA_VISIBLE_DEVICES=
export GPUSCALE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1
. "$(dirname "$0")/cli_lib.sh"

expect 0 "usage: gpuscale p2p" -- p2p --help
expect 0 "p2p +measure GPU-to-GPU" -- --help
expect 1 "p2p: nothing to measure: .*CPU backend has no GPU links" -- p2p -o "$work/p2p.json"
[ -e "$work/p2p.json" ] && fail "p2p without a GPU wrote a result file"
expect 2 "option --size: 17 bytes is not a multiple of 16" -- p2p --size 17
expect 2 "option --size" -- p2p --size 1X
expect 2 "option --pairs: 1:1 pairs a GPU with itself" -- p2p --pairs 1:1
expect 2 "option --pairs: '0-1' is not SRC:DST" -- p2p --pairs 0-1
expect 2 "option --mode: 'fast' is not one of" -- p2p --mode fast
expect 2 "option --iters" -- p2p --iters 0
expect 2 "option --samples" -- p2p --samples 1001
expect 2 "option --sm-ctas" -- p2p --sm-ctas 0
expect 2 "unexpected argument 'now'" -- p2p now

small=(voxelize --backend cpu --points 2000 --clouds 2 --iters 2 --runs 1 -q --no-progress)
expect 2 "option --telemetry-interval: 0.001 s is below" -- run "${small[@]}" --telemetry-interval 0.001
expect 2 "option --telemetry-interval" -- run "${small[@]}" --telemetry-interval -1
expect 2 "option --telemetry-interval" -- run "${small[@]}" --telemetry-interval
expect 0 "telemetry: unavailable: CPU backend" -- run "${small[@]}" --telemetry-series -o "$work/run.json"
expect 0 "telemetry: unavailable: CPU backend" -- scale "${small[@]}" --ranks 2 --telemetry-interval 0 -o "$work/scale.json"
expect 0 "" -- suite --backend cpu --ranks 1 --iters 2 --runs 1 -q --no-progress --out "$work/suite"
[ -e "$work/suite/p2p.json" ] && fail "suite on the CPU backend wrote p2p.json"
grep -q "telemetry: unavailable" "$work/suite/summary.txt" || fail "suite summary lacks the telemetry line"

python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, sys, os
work = sys.argv[1]
for name, interval in (("run.json", 0.1), ("scale.json", 0)):
    with open(os.path.join(work, name)) as f:
        doc = json.load(f)
    assert doc["config"]["telemetry_interval_seconds"] == interval, doc["config"]
    for m in doc["measurements"]:
        t = m["telemetry"]
        assert t["available"] is False, t
        assert t["reason"].startswith("CPU backend"), t
        assert t["interval_seconds"] == interval and t["ranks"] == [], t
        assert "series" not in t, t
PY

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all p2p/telemetry CLI tests passed"
