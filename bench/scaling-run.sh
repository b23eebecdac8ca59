#!/usr/bin/env bash
# The scaling run of one host: builds gpuscale with MPI, runs `gpuscale
# suite` over all GPUs in both launch modes (one process with a thread per
# GPU, and one MPI rank per GPU under mpirun); the suite renders each
# mode's report. Everything lands in $OUT (default ./scaling-run): the log, each
# mode's report.md and summary.txt, and results.tar.gz with every result
# document.
# GS_DEPS_PREFIX names a folder with cJSON/cmocka unpacked (usr/include,
# usr/lib/...) where they are not installed system-wide.
# GS_SCALING_MODES ("threads mpi"), GS_MIN_TIME (1 s per run) or GS_ITERS
# (timed iterations per run), GS_SUITE_TIMEOUT
# (900 s per suite), GS_BUILD_DIR and GS_WORK_DIR (where the suites write)
# let a run be split over several calls.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-scaling-run}
mkdir -p "$out"
build=${GS_BUILD_DIR:-/tmp/gpuscale-scaling}
work=${GS_WORK_DIR:-$(mktemp -d)}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
prefix_args=()
if [ -n "${GS_DEPS_PREFIX:-}" ]; then
  prefix_args=(-DCMAKE_PREFIX_PATH="$GS_DEPS_PREFIX/usr")
  export LD_LIBRARY_PATH="$GS_DEPS_PREFIX/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
gpus=$(nvidia-smi -L | wc -l)
{
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  nvidia-smi topo -m
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    "${prefix_args[@]}" >/dev/null &&
    cmake --build "$build" -j "$(nproc)" --target gpuscale 2>&1 | grep -E "error|warning"
  # Fixed iterations keep the documents small; else a minimum time per run.
  timing=(--min-time "${GS_MIN_TIME:-1}")
  [ -n "${GS_ITERS:-}" ] && timing=(--iters "$GS_ITERS")
  # GS_SCALING_MODES: which launch modes to run (default both).
  for mode in ${GS_SCALING_MODES:-threads mpi}; do
    echo "== $mode mode: gpuscale suite on $gpus GPUs"
    launch=()
    [ "$mode" = mpi ] && launch=(mpirun --allow-run-as-root --oversubscribe -np "$gpus"
                                 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH)
    timeout "${GS_SUITE_TIMEOUT:-900}" "${launch[@]}" "$build/gpuscale" suite \
      --out "$work/$mode" --no-progress "${timing[@]}"
    echo "suite ($mode) exited $?"
  done
  for mode in ${GS_SCALING_MODES:-threads mpi}; do
    cp "$work/$mode/report.md" "$out/report-$mode.md"
    cp "$work/$mode/summary.txt" "$out/summary-$mode.txt"
  done
} 2>&1 | tee -a "$out/scaling-run.log"
tar -czf "$out/results-$(echo ${GS_SCALING_MODES:-threads mpi} | tr " " -).tar.gz" -C "$work" .
