#!/usr/bin/env bash
# On a machine with NVIDIA GPUs: builds gpuscale, runs the GPU test suite and
# the whole test suite, the standard suite, and the voxelize comparison with
# PyTorch eager. Everything it prints also goes to $OUT (default ./gpu-check).
# GS_DEPS_PREFIX names a folder with cJSON/cmocka unpacked (usr/include,
# usr/lib/...) where they are not installed system-wide.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check}
mkdir -p "$out"
build=${GS_BUILD_DIR:-/tmp/gpuscale-build}
export NCCL_NVLS_ENABLE=0
prefix_args=()
if [ -n "${GS_DEPS_PREFIX:-}" ]; then
  prefix_args=(-DCMAKE_PREFIX_PATH="$GS_DEPS_PREFIX/usr")
  export LD_LIBRARY_PATH="$GS_DEPS_PREFIX/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
{
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON "${prefix_args[@]}" >/dev/null &&
    cmake --build "$build" -j "$(nproc)" 2>&1 | grep -E "error|warning" ; true
  echo "== GPU tests: ctest -L gpu"
  ctest --test-dir "$build" -L gpu --output-on-failure
  echo "== all tests"
  ctest --test-dir "$build" --output-on-failure -j 8 | tail -n 15
  echo "== gpuscale suite"
  "$build/gpuscale" suite --out "$out/results" --no-progress
  echo "== voxelize vs PyTorch eager"
  python3 bench/voxelize_vs_torch.py "$build/gpuscale" --json "$out/voxelize_vs_torch.json"
} 2>&1 | tee "$out/gpu-check.log"
