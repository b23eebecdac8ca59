#!/usr/bin/env bash
# Session 5 GPU checks, part B.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
D=$PWD/.device-libs/deps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
B=$PWD/build; N=$B/gpuscale; T0=$(date +%s)
el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$OUT/cmake.log 2>&1 && cmake --build $B -j 64 >$OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head; exit 1; }
el built
(cd $B && timeout 60 ctest -R "test_gpu_mlp" --output-on-failure > $OUT/ctest-pp.log 2>&1; grep -E "Test +#|FAIL" $OUT/ctest-pp.log | head)
el "pp test"
for pr in tf32 bf16; do PRESETS=medium BATCHES="128 8192" PRECISIONS=$pr OUT=/tmp/mv-$pr timeout 70 bench/mlp-verify-loop.sh $N 2>&1 | grep -E "^(ok|FAIL)" | cut -c1-220; done
PRESETS=large BATCHES=128 PRECISIONS="tf32 bf16" OUT=/tmp/mv-l timeout 100 bench/mlp-verify-loop.sh $N 2>&1 | grep -E "^(ok|FAIL)" | cut -c1-220
el "verify loops"
echo "== coll: SIGSTOP process 0, --timeout 5"
rm -f /tmp/ar0.json
mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH $N coll allreduce -b 8 -e 1G --stepfactor 2 -n 200 --timeout 5 -o /tmp/ar0.json >/tmp/ar0.txt 2>&1 & mp=$!
for i in $(seq 300); do [ -s /tmp/ar0.json ] && break; sleep 0.1; done
p0=$(for p in $(pgrep -f "coll allreduce"); do tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK=0$' && echo $p; done | head -1)
echo "rank 0 pid: $p0"; t0=$(date +%s.%N); kill -STOP $p0; wait $mp; rc=$?; t1=$(date +%s.%N); kill -9 $p0 2>/dev/null
echo "rc=$rc after $(python3 -c "print(round($t1-$t0,1))") s"; head -c 600 /tmp/ar0.txt
python3 -c "import json;d=json.load(open('/tmp/ar0.json'));ms=d['measurements'];print(d['status'],len(ms),'sizes;',[json.dumps(m.get('failure'))[:200] for m in ms if m['status']!='ok'][:1])"
el "takeover"
REPEATS=5 NGPU=4 OUT=/tmp/strag timeout 110 bench/stragglers.sh $N > $OUT/strag.log 2>&1; echo "stragglers exit $?"; cat /tmp/strag/summary.txt 2>/dev/null | head -12
el "stragglers"
NGPU=2 OUT=/tmp/pipe timeout 130 bench/pipeline.sh $N > $OUT/pipe.log 2>&1; echo "pipeline exit $?"; tail -30 $OUT/pipe.log
el "pipeline"
timeout 100 $N run llm -g 2 --layouts --scenario server --samples 64 --find-max-rate --rate 16 --slo interactive --no-progress -o /tmp/lay.json > $OUT/llm-layouts.txt 2>&1; echo "llm layouts exit $?"; tail -25 $OUT/llm-layouts.txt
el done
