#!/usr/bin/env bash
# Session 8, call B on 4 GPUs: the suite three times on one node (issue 26:
# same verdicts or inconclusive, never opposite; no warning on a healthy node).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
D=$PWD/.device-libs/deps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
B=$PWD/build; N=$B/gpuscale; T0=$(date +%s)
el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
R=/tmp/s8b; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/results.tgz s8b 2>/dev/null); }
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv,noheader
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$OUT/cmake.log 2>&1 && cmake --build $B -j 64 --target gpuscale >$OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head; exit 1; }
el built
for k in 1 2 3; do
  [ $(( $(date +%s) - T0 )) -lt 380 ] || { echo "suite $k skipped: time"; break; }
  timeout 190 $N suite --no-progress -o $R/suite$k > $R/suite$k.log 2>&1; echo "suite $k exit $?"
  grep -E "^  - |^Node|node verdict|warn|fail|inconclusive|suspect" $R/suite$k/summary.txt | cut -c1-230 | head -30
  save; el "suite $k"
done
