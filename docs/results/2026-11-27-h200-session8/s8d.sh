#!/usr/bin/env bash
# Session 8, call D on 2 GPUs: the suite twice (issue 26; no 4-GPU machine is lent now).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
D=$PWD/.device-libs/deps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
B=$PWD/build; N=$B/gpuscale; T0=$(date +%s)
el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
R=/tmp/s8d; mkdir -p $R
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv,noheader
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$OUT/cmake.log 2>&1 && cmake --build $B -j 64 --target gpuscale >$OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head; exit 1; }
el built
for k in 1 2; do
  left=$(( 300 - ($(date +%s) - T0) ))
  [ $left -gt 60 ] || { echo "suite $k skipped: $left s left"; break; }
  timeout $left $N suite -g 2 --no-progress -o $R/suite$k > $R/suite$k.log 2>&1; echo "suite $k exit $?"
  el "suite $k"
  grep -E "^  - |^Node|^  [0-9]+ pass|  (pass|warn|fail) " $R/suite$k/summary.txt | cut -c1-300
  cp $R/suite$k/summary.txt $OUT/suite$k-summary.txt; cp $R/suite$k/report.md $OUT/suite$k-report.md 2>/dev/null
  tail -3 $R/suite$k.log
done
