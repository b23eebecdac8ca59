#!/usr/bin/env bash
# Session 5 GPU checks, part C: the coll takeover after the file fix, the pipeline bench, the large mlp loop.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
D=$PWD/.device-libs/deps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
B=$PWD/build; N=$B/gpuscale; T0=$(date +%s)
el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$OUT/cmake.log 2>&1 && cmake --build $B -j 64 >$OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head; exit 1; }
el built
for k in 1 2 3; do
  rm -f /tmp/ar0.json
  mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH $N coll allreduce -b 8 -e 1G --stepfactor 2 -n 200 --timeout 5 -o /tmp/ar0.json >/tmp/ar0.txt 2>&1 & mp=$!
  for i in $(seq 300); do [ -s /tmp/ar0.json ] && break; sleep 0.1; done
  p0=$(for p in $(pgrep -f "coll allreduce"); do tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK=0$' && echo $p; done | head -1)
  t0=$(date +%s.%N); kill -STOP $p0; wait $mp; rc=$?; t1=$(date +%s.%N); kill -9 $p0 2>/dev/null
  echo "stop0 run $k: rc=$rc after $(python3 -c "print(round($t1-$t0,1))") s"
  python3 -c "import json;d=json.load(open('/tmp/ar0.json'));ms=d['measurements'];print(' ',d['status'],len(ms),'measurements;',[m['failure']['reason'][:120] for m in ms if m['status']!='ok'][:1])"
  grep -i "replaced" /tmp/ar0.txt | head -2
done
el takeover
NGPU=2 OUT=/tmp/pipe timeout 170 bench/pipeline.sh $N > $OUT/pipe.log 2>&1; echo "pipeline exit $?"; tail -40 $OUT/pipe.log
el pipeline
PRESETS=large BATCHES=128 PRECISIONS=bf16 RUNS=200 OUT=/tmp/mv-l timeout 200 bench/mlp-verify-loop.sh $N 2>&1 | grep -E "^(ok|FAIL)" | cut -c1-240
el done
