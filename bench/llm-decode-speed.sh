#!/usr/bin/env bash
# On one GPU: builds gpuscale and test_gpu_llm (Release), runs the llm GPU
# test, times a decode step per kernel class (bench/llm_decode_profile.cu)
# and compares gpuscale with the gpt-fast-style torch.compile peer and
# transformers (bench/llm_vs_pytorch.py). Logs and JSON go to $OUT (default
# ./llm-decode-speed). GS_DEPS_PREFIX names a folder with cJSON/cmocka
# unpacked (usr/include, usr/lib/...). usage: bench/llm-decode-speed.sh [PEER ARGS...]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-llm-decode-speed}
mkdir -p "$out"
build=${GS_BUILD_DIR:-/tmp/gpuscale-llm-build}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
prefix_args=()
if [ -n "${GS_DEPS_PREFIX:-}" ]; then
  prefix_args=(-DCMAKE_PREFIX_PATH="$GS_DEPS_PREFIX/usr")
  export LD_LIBRARY_PATH="$GS_DEPS_PREFIX/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
{
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON "${prefix_args[@]}" >"$out/cmake.log" || echo "cmake failed"
  cmake --build "$build" -j "$(nproc)" --target gpuscale test_gpu_llm 2>&1 | grep -E "error|warning"
  nvcc -O3 -std=c++17 -arch=sm_90 -Isrc bench/llm_decode_profile.cu src/workloads/llm/llm_cuda.cu src/workloads/llm/llm_gemv.cu \
    -o "$build/llm_decode_profile" || echo "profile build failed"
  echo "== test_gpu_llm"
  timeout 300 "$build/tests/test_gpu_llm"
  echo "test_gpu_llm exit code: $?"
  echo "== decode step per kernel class"
  "$build/llm_decode_profile" --rows 1 --rows 8
  echo "== gpuscale against the torch.compile peer and transformers"
  python3 bench/llm_vs_pytorch.py "$build/gpuscale" --out "$out/results" --json "$out/llm_vs_pytorch.json" "$@"
} 2>&1 | tee "$out/llm-decode-speed.log"
tar -C "$out" -czf "$out/results.tar.gz" results && rm -rf "$out/results"
