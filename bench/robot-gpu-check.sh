#!/usr/bin/env bash
# On a machine with two NVIDIA GPUs: builds gpuscale and the timeline GPU
# test, runs that test, compares resample and fuse with PyTorch eager
# (bench/robot_vs_torch.py, including the proportional-vs-even split with
# one GPU slowed 2x), runs a heterogeneous plan (voxelize on GPU 0, fuse on
# GPU 1) and a short suite. Output goes to $OUT (default ./robot-gpu-check).
# GS_DEPS_PREFIX names a folder with cJSON/cmocka unpacked (usr/include,
# usr/lib/...) where they are not installed system-wide.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-robot-gpu-check}
mkdir -p "$out"
build=${GS_BUILD_DIR:-/tmp/gpuscale-build}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
prefix_args=()
if [ -n "${GS_DEPS_PREFIX:-}" ]; then
  prefix_args=(-DCMAKE_PREFIX_PATH="$GS_DEPS_PREFIX/usr")
  export LD_LIBRARY_PATH="$GS_DEPS_PREFIX/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
{
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON "${prefix_args[@]}" >/dev/null &&
    cmake --build "$build" -j "$(nproc)" --target gpuscale test_gpu_timeline 2>&1 | grep -E "error|warning"
  echo "== test_gpu_timeline"
  timeout 60 "$build/tests/test_gpu_timeline"
  echo "== resample and fuse vs PyTorch eager; proportional vs even split"
  timeout 120 python3 bench/robot_vs_torch.py "$build/gpuscale" --json "$out/robot_vs_torch.json"
  echo "== plan: voxelize on GPU 0, fuse on GPU 1"
  timeout 60 "$build/gpuscale" plan --task '0:voxelize' --task '1:fuse --batch 64' \
    --min-time 0.5 --runs 2 --out "$out/plan.json"
  echo "== fuse and resample over 1 and 2 GPUs"
  for w in fuse resample; do
    timeout 60 "$build/gpuscale" scale "$w" --runs 1 --min-time 0.3 --no-progress --out "$out/scale-$w.json"
  done
} 2>&1 | tee "$out/robot-gpu-check.log"
