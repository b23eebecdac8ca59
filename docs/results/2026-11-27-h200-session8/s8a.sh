#!/usr/bin/env bash
# Session 8, call A on 4 GPUs: regressions of the GPU tests, mlp's 200-step
# verification loops (issue 26) in parallel over the GPUs, llm --tp under mpirun.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
D=$PWD/.device-libs/deps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
B=$PWD/build; N=$B/gpuscale; T0=$(date +%s)
el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
R=/tmp/s8a; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/results.tgz s8a 2>/dev/null); }
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv,noheader
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$OUT/cmake.log 2>&1 && cmake --build $B -j 64 >$OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head; exit 1; }
el built
# 1. GPU tests (exec unchanged since its last pass; it takes 100 s)
timeout 200 ctest --test-dir $B -L gpu -E test_gpu_exec --timeout 120 --output-on-failure > $OUT/ctest-gpu.log 2>&1
grep -E "Test +#|tests passed|Total|FAIL|rror" $OUT/ctest-gpu.log | head -30
el gpu-tests
# 2. issue 26: 200 verified steps of each preset x batch x {tf32,bf16}, 2 per GPU at once
i=0
for p in medium large; do for b in 128 8192; do for x in tf32 bf16; do
  ( CUDA_VISIBLE_DEVICES=$((i % 4)) PRESETS=$p BATCHES=$b PRECISIONS=$x RUNS=200 OUT=$R/mv-$p-$b-$x \
    timeout 280 bench/mlp-verify-loop.sh $N > $R/mv-$p-$b-$x.log 2>&1; echo "exit $?" >> $R/mv-$p-$b-$x.log ) &
  i=$((i + 1))
done; done; done
wait
for f in $R/mv-*.log; do echo "== $(basename $f)"; grep -E "^(ok|FAIL)|exit|failure" $f | cut -c1-260; done
save; el mlp-loops
# 3. llm --tp 2 under mpirun beside threads (issue 34)
timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $N run llm --model llama-1b --tp 2 --batch 8 --samples 64 --no-progress -o $R/tp2-mpi.json > $R/tp2-mpi.log 2>&1; echo "mpi exit $?"; grep -E "tokens/s|TPOT|verif|rror|arriv|late" $R/tp2-mpi.log | head -12
timeout 60 $N run llm -g 2 --model llama-1b --tp 2 --batch 8 --samples 64 --no-progress -o $R/tp2-thr.json > $R/tp2-thr.log 2>&1; echo "threads exit $?"; grep -E "tokens/s|TPOT|verif|rror|arriv|late" $R/tp2-thr.log | head -12
save; el done
