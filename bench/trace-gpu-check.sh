#!/usr/bin/env bash
# On a machine with 1 or 2 NVIDIA GPUs: the trace on GPUs (docs/timeline.md).
# Builds gpuscale twice (with the trace ranges, and with -DGPUSCALE_TRACE=OFF),
# runs tests/test_gpu_trace.sh keeping its trace, documents and HTML report,
# measures the cost of the ranges with bench/trace_overhead.py, and, where
# Nsight Systems is installed, checks that its NVTX summary holds the ranges.
# Output goes to the terminal and to $OUT (default ./trace-check): look at
# trace/r.html (or trace/plots/*timeline.png) and open trace/t.json in Perfetto.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-trace-check}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
with=${GS_BUILD_DIR:-build}
without=${GS_NOTRACE_BUILD_DIR:-build-notrace}
jobs=$(nproc)
cmake -S . -B "$with" -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null &&
  cmake --build "$with" -j "$jobs" --target gpuscale 2>&1 | grep -E "error|warning"
cmake -S . -B "$without" -DCMAKE_CUDA_ARCHITECTURES=90 -DGPUSCALE_TRACE=OFF >/dev/null &&
  cmake --build "$without" -j "$jobs" --target gpuscale 2>&1 | grep -E "error|warning"
{
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  echo "== tests/test_gpu_trace.sh"
  GS_TRACE_KEEP="$out/trace" timeout 600 bash tests/test_gpu_trace.sh "$with/gpuscale"
  echo "== the report's timeline of the 2-GPU measurement (if any)"
  [ -f "$out/trace/r.json" ] && "$with/gpuscale" report "$out/trace/r.json" | grep -A5 "Timeline"
  echo "== cost of the ranges: with (ON) against without (OFF)"
  timeout 900 python3 bench/trace_overhead.py "$with/gpuscale" "$without/gpuscale" \
    --backend cuda --reps "${TRACE_REPS:-8}" --json "$out/trace_overhead.json"
  if command -v nsys >/dev/null; then
    echo "== NVTX ranges in Nsight Systems"
    nsys profile --trace=cuda,nvtx --force-overwrite true --output "$out/mlp-profile" \
      "$with/gpuscale" run mlp --gpus 0 --iters 20 --runs 1 -q --no-progress \
      -o "$out/nsys-run.json" >/dev/null 2>&1
    nsys stats --report nvtx_sum "$out/mlp-profile.nsys-rep" 2>/dev/null | head -20
  else
    echo "== nsys not installed: NVTX ranges not checked in Nsight Systems"
  fi
} 2>&1 | tee "$out/trace-check.txt"
