#!/usr/bin/env bash
# On a machine with 2 NVLink-connected GPUs: builds gpuscale, then runs
# (each step time-bounded) the full `gpuscale p2p`, the PyTorch comparison,
# the NVML-versus-nvidia-smi check, the telemetry overhead comparison and the
# p2p GPU test. Output goes to $OUT (default ./p2p-check), at most 8 files.
# GS_DEPS_PREFIX as in bench/gpu-check.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-p2p-check}
mkdir -p "$out"
build=${GS_BUILD_DIR:-/tmp/gpuscale-build}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
prefix_args=()
if [ -n "${GS_DEPS_PREFIX:-}" ]; then
  prefix_args=(-DCMAKE_PREFIX_PATH="$GS_DEPS_PREFIX/usr")
  export LD_LIBRARY_PATH="$GS_DEPS_PREFIX/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
bin=$build/gpuscale
{
  date -u
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON "${prefix_args[@]}" >/dev/null &&
    cmake --build "$build" -j "$(nproc)" --target gpuscale test_gpu_p2p 2>&1 | grep -E "error|warning"
  echo "== gpuscale p2p (defaults: 1 GiB, 8 copies x 5 samples)"
  timeout 120 "$bin" p2p -o "$out/p2p.json" | tee "$out/p2p.txt"
  echo "== p2p vs PyTorch"
  timeout 90 python3 bench/p2p_vs_torch.py "$bin" --p2p-json "$out/p2p.json" --json "$out/p2p_vs_torch.json"
  echo "== NVML vs nvidia-smi"
  nvidia-smi -q -d POWER,CLOCK,MEMORY,TEMPERATURE,PERFORMANCE > "$out/nvidia-smi-q.txt"
  timeout 60 python3 bench/nvml_vs_smi.py "$bin" --json "$out/nvml_vs_smi.json"
  echo "== telemetry overhead"
  timeout 90 python3 bench/telemetry_overhead.py "$bin" --reps ${GS_REPS:-5} --json "$out/telemetry_overhead.json"
  echo "== SM copy kernel: CTAs per SM (push and pull, GPU0 -> GPU1)"
  for k in 1 2 8; do
    echo "-- --sm-ctas $k"
    timeout 30 "$bin" p2p --mode sm --pairs 0:1 --sm-ctas $k -q -o /tmp/p2p-sm.json | grep "GPU0 -> GPU1"
    python3 -c "import json,sys; d=json.load(open('/tmp/p2p-sm.json')); print({t['name']: round(t['cells'][0][1]['median']/1e9,1) for t in d['p2p']['tests'] if t['status']=='ran' and t['cells'][0][1]})"
  done
  echo "== suite on 2 GPUs (summary with telemetry, p2p.json)"
  timeout 60 "$bin" suite --out /tmp/suite --no-progress -q --min-time 0.2 --runs 1 >/dev/null
  cat /tmp/suite/summary.txt
  echo "== GPU test"
  timeout 60 "$build/tests/test_gpu_p2p"
  date -u
} 2>&1 | tee "$out/log.txt"
