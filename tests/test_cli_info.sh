#!/usr/bin/env bash
# End-to-end tests of `gpuscale info` with zero GPUs (CUDA_VISIBLE_DEVICES
# hides any that exist) and without NVML: text, JSON (a valid result document
# with the environment members) and dot all work and exit 0; bad options
# exit 2 naming the option.
set -u
bin=$1
export CUDA_VISIBLE_DEVICES=
export GPUSCALE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1
. "$(dirname "$0")/cli_lib.sh"

expect 0 "usage: gpuscale info" -- info --help
expect 0 "info +show the GPUs" -- --help
expect 0 "no usable CUDA device: " -- info
expect 0 "^Host +" -- info --format text
expect 0 "^CPU +" -- info
expect 0 "CUDA +driver .*runtime" -- info
expect 0 "^NCCL " -- info
expect 0 "^MPI " -- info
expect 0 "NVML unavailable: .*nonexistent" -- info
expect 0 "^graph gpuscale_topology \{" -- info --format dot
expect 0 "^// no usable CUDA device" -- info --format dot
expect 2 "option --format" -- info --format yaml
expect 2 "option --format" -- info --format
expect 2 "unknown option '--fromat'" -- info --fromat json
expect 2 "given twice" -- info --format json --format text
expect 2 "unexpected argument 'extra'" -- info extra

"$bin" info --format json >"$work/stdout.json" 2>"$work/stderr.txt" || fail "info --format json exited $?"
expect 0 "" -- info --format json --out "$work/nested/info.json"
expect 0 "" -- info --format dot -o "$work/info.dot"
expect 0 "" -- info --out "$work/info.txt"
grep -q "no usable CUDA device" "$work/info.txt" || fail "info --out: file lacks the device status"
grep -q "^graph gpuscale_topology" "$work/info.dot" || fail "info --format dot --out: no graph"
touch "$work/plain"
expect 1 "option --out: cannot write $work/plain/x.txt" -- info --out "$work/plain/x.txt"

python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, sys, os
work = sys.argv[1]
for name in ("stdout.json", "nested/info.json"):
    with open(os.path.join(work, name)) as f:
        doc = json.load(f)
    assert doc["schema"] == "gpuscale/result/v1", doc["schema"]
    assert doc["command"] == "info"
    assert doc["status"] == "ok"
    assert doc["measurements"] == []
    assert doc["config"]["format"] == "json"
    env = doc["environment"]
    for key in ("host", "os", "cpu", "host_memory_bytes", "cuda", "nccl_version",
                "mpi_version", "gpus", "nvml", "topology"):
        assert key in env, "environment lacks " + key
    for key in ("model", "logical_cores"):
        assert key in env["cpu"], "environment.cpu lacks " + key
    for key in ("driver_version", "driver_version_text", "runtime_version",
                "runtime_version_text", "status"):
        assert key in env["cuda"], "environment.cuda lacks " + key
    assert env["gpus"] == []
    assert env["cuda"]["status"].startswith("no usable CUDA device")
    assert env["nvml"]["available"] is False
    assert env["nvml"]["status"].startswith("NVML unavailable: ")
    assert env["nvml"]["driver_version"] is None
    topo = env["topology"]
    assert topo == {"links": [], "peer_access": [], "nvlink_bandwidth_bytes_per_s": []}, topo
print("json ok")
PY

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all info CLI tests passed"
