#!/usr/bin/env bash
# On a machine with NVIDIA GPUs and Open MPI: builds gpuscale (Release, with
# MPI), runs the llm GPU test and the llm comparison with transformers
# (bench/llm_vs_transformers.py), the other scenarios, tensor against data
# parallelism on 2 GPUs, and data parallelism as 2 MPI processes, writing
# logs and result documents to $OUT (default ./llm-gpu).
# Each multi-GPU step is bounded by `timeout`, so one hang cannot eat the run.
# GS_DEPS_PREFIX names a folder with cJSON/cmocka unpacked (usr/include, usr/lib/...).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-llm-gpu}
mkdir -p "$out"
build=${GS_BUILD_DIR:-/tmp/gpuscale-llm-build}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
prefix_args=()
if [ -n "${GS_DEPS_PREFIX:-}" ]; then
  prefix_args=(-DCMAKE_PREFIX_PATH="$GS_DEPS_PREFIX/usr")
  export LD_LIBRARY_PATH="$GS_DEPS_PREFIX/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
{
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    "${prefix_args[@]}" >"$out/cmake.log" && grep -E "MPI|NCCL" "$out/cmake.log"
  cmake --build "$build" -j "$(nproc)" --target gpuscale test_gpu_llm 2>&1 | grep -E "error|warning"
  echo "== test_gpu_llm"
  timeout 120 "$build/tests/test_gpu_llm"
  echo "== llm vs transformers"
  python3 bench/llm_vs_transformers.py "$build/gpuscale" --out "$out/results" --json "$out/llm_vs_transformers.json"
  echo "== other scenarios on llama-8b"
  "$build/gpuscale" run llm --scenario single-stream --samples 8 --no-progress -o "$out/results/single-stream.json"
  "$build/gpuscale" run llm --scenario server --rate 20 --batch 8 --samples 96 --no-progress -o "$out/results/server.json"
  "$build/gpuscale" run llm --scenario server --rate 20 --batch 8 --samples 96 --sample-timeout 1 -g 2 --dispatch dynamic --no-progress -o "$out/results/server-2gpu.json"
  echo "== tensor against data parallelism on 2 GPUs (offline and single-stream)"
  timeout 90 "$build/gpuscale" run llm -g 2 --samples 64 --batch 8 --no-progress -o "$out/results/dp-2gpu.json"
  timeout 90 "$build/gpuscale" run llm -g 2 --tp 2 --samples 64 --batch 8 --no-progress -o "$out/results/tp-2gpu.json"
  timeout 90 "$build/gpuscale" run llm -g 2 --tp 2 --scenario single-stream --samples 8 --no-progress -o "$out/results/tp-2gpu-single.json"
  "$build/gpuscale" report "$out/results/dp-2gpu.json" "$out/results/tp-2gpu.json" "$out/results/tp-2gpu-single.json"
  echo "== data parallelism as 2 MPI processes (one GPU each)"
  timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH \
    "$build/gpuscale" run llm --backend cuda --samples 64 --batch 8 --no-progress -o "$out/results/dp-2gpu-mpi.json"
  "$build/gpuscale" report "$out/results/dp-2gpu.json" "$out/results/dp-2gpu-mpi.json"
} 2>&1 | tee "$out/llm-gpu.log"
# The result documents travel as one file.
tar -C "$out" -czf "$out/results.tar.gz" results && rm -rf "$out/results"
