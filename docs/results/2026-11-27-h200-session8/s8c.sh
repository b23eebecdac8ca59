#!/usr/bin/env bash
# Session 8, call C on 4 GPUs: llm serving answers under both presets
# (issue 31, QUICK sizes on 4 GPUs), then one more suite (issue 26).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
D=$PWD/.device-libs/deps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
B=$PWD/build; N=$B/gpuscale; T0=$(date +%s)
el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
R=/tmp/s8c; mkdir -p $R
save() { (cd /tmp && find s8c -type f -size -4M \( -name '*.txt' -o -name '*.md' -o -name '*.log' -o -name '*.json' -o -name '*.plan' \) | tar czf $OUT/results.tgz -T - 2>/dev/null); }
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv,noheader
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$OUT/cmake.log 2>&1 && cmake --build $B -j 64 --target gpuscale >$OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head; exit 1; }
el built
QUICK=1 GPUS=4 DENSE_TP=1 GS_BIN=$N OUT=$R/ls timeout 400 bench/llm-serving.sh conversational interactive > $R/ls.log 2>&1; echo "llm-serving exit $?"
grep -vE "^\s*$" $R/ls.log | tail -45 | cut -c1-220
$N report $R/ls/results/*.json --format md -o $R/ls/report.md > /dev/null 2>&1; echo "report exit $?"
save; el serving
save; el done
