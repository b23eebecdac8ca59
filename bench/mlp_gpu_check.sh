#!/usr/bin/env bash
# On a machine with 2 NVIDIA GPUs: the mlp GPU tests and the side-by-side
# comparison with PyTorch (eager on 1 GPU, DDP on 2). Uses binaries in
# $GS_BIN (gpuscale, test_gpu_mlp) when they run here, else builds them.
# Output goes to the terminal and to $OUT (default ./mlp-check).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-mlp-check}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
bin=${GS_BIN:-}
if [ -z "$bin" ] || ! "$bin/gpuscale" --version >/dev/null 2>&1; then
  bin=${GS_BUILD_DIR:-/tmp/gpuscale-mlp}
  prefix=()
  [ -n "${GS_DEPS_PREFIX:-}" ] && prefix=(-DCMAKE_PREFIX_PATH="$GS_DEPS_PREFIX/usr")
  cmake -S . -B "$bin" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON "${prefix[@]}" >/dev/null &&
    cmake --build "$bin" -j "$(nproc)" --target gpuscale test_gpu_mlp 2>&1 | grep -E "error|warning"
  cp "$bin/tests/test_gpu_mlp" "$bin/" 2>/dev/null
fi
{
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  echo "== test_gpu_mlp"
  timeout "${MLP_TEST_TIMEOUT:-120}" "$bin/test_gpu_mlp"
  if [ $? -ne 0 ] && [ -n "${GS_FALLBACK_BIN:-}" ]; then
    echo "!! GPU tests failed: the measurements below use $GS_FALLBACK_BIN"
    bin=$GS_FALLBACK_BIN
  fi
  echo "== scale mlp over batch sizes (large, 2 GPUs, weak) and run --gpu-mode auto"
  "$bin/gpuscale" scale mlp -g 2 --scaling weak --preset large --batch-sizes 16,512,8192 \
    --min-time 0.2 --runs 1 --no-progress -o "$out/scale-large.json" | tail -n 7
  "$bin/gpuscale" run mlp --gpu-mode auto --preset medium --batch 256 --min-time 0.2 --runs 1 \
    --no-progress -o "$out/auto.json" 2>&1 | grep -E "gpu-mode|^ +[0-9]"
  for precision in ${MLP_PRECISIONS:-fp32}; do
    sizes=${MLP_BATCH_SIZES:-16,32,64,128,256,512,1024,2048,4096,8192}
    [ "$precision" != fp32 ] && sizes=${MLP_OTHER_BATCH_SIZES:-$sizes}
    echo "== mlp vs PyTorch ($precision)"
    timeout "${MLP_BENCH_TIMEOUT:-400}" python3 bench/mlp_vs_torch.py "$bin/gpuscale" \
      --precision "$precision" --min-time "${MLP_MIN_TIME:-0.3}" --batch-sizes "$sizes" \
      --json "$out/mlp_vs_torch_$precision.json"
  done
} 2>&1 | tee "$out/mlp-check.log"
