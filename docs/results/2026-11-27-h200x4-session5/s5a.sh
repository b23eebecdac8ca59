#!/usr/bin/env bash
# Session 5 GPU checks, part A: build, GPU tests, check levels, takeover, mlp verify loop.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
D=$PWD/.device-libs/deps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
B=$PWD/build; N=$B/gpuscale; T0=$(date +%s)
el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$OUT/cmake.log 2>&1 && cmake --build $B -j 64 >$OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head; exit 1; }
el "built"
(cd $B && timeout 240 ctest -L gpu --output-on-failure > $OUT/ctest-gpu.log 2>&1; grep -E "Test +#|tests passed" $OUT/ctest-gpu.log)
el "gpu tests done"
for i in 1 2 3; do s=$(date +%s.%N); timeout 90 $N check --level 1 > $OUT/l1-$i.txt 2>&1; rc=$?; echo "check L1 run $i exit $rc in $(python3 -c "print(round($(date +%s.%N)-$s,2))") s"; done
grep -E "^level 1|verdict|p2p|allreduce" $OUT/l1-1.txt | head -12
s=$(date +%s.%N); timeout 280 $N check --level 2 > $OUT/l2-1.txt 2>&1; echo "check L2 exit $? in $(python3 -c "print(round($(date +%s.%N)-$s,1))") s"
grep -E "^level 2|^(membw|host_bw|p2p|allreduce|workload|verdict)" $OUT/l2-1.txt | head -30
el "levels done"
timeout 200 $N check --level 2 --inject membw:gpu=1,factor=0.8 > $OUT/l2-inject.txt 2>&1; echo "L2 inject exit $?"; grep -i -E "membw|investigate" $OUT/l2-inject.txt | head -5
el "inject done"
echo "== coll: SIGSTOP process 0, --timeout 5"
rm -f /tmp/ar0.json
mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH $N coll allreduce -b 8 -e 1G -f 2 -n 200 --timeout 5 -o /tmp/ar0.json >/tmp/ar0.txt 2>&1 & mp=$!
for i in $(seq 300); do [ -s /tmp/ar0.json ] && break; sleep 0.1; done
p0=$(for p in $(pgrep -f "$N coll allreduce"); do tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK=0$' && echo $p; done | head -1)
t0=$(date +%s.%N); kill -STOP $p0; wait $mp; rc=$?; t1=$(date +%s.%N); kill -9 $p0 2>/dev/null
echo "rc=$rc after $(python3 -c "print(round($t1-$t0,1))") s"
python3 -c "import json;d=json.load(open('/tmp/ar0.json'));ms=d['measurements'];print(d['status'],len(ms),'sizes',[m.get('failure',{}).get('reason','')[:160] for m in ms if m['status']!='ok'][:2])"
el "takeover done"
echo "== mlp verify loop (200 verified steps per case)"
OUT2=$OUT/mlpv; PRESETS=medium BATCHES="128 8192" OUT=$OUT2 timeout 150 bench/mlp-verify-loop.sh $N > $OUT/mlpv-medium.log 2>&1; echo "medium exit $?"; tail -12 $OUT/mlpv-medium.log
el "medium loop done"
PRESETS=large BATCHES=128 RUNS=200 OUT=$OUT/mlpv2 timeout 120 bench/mlp-verify-loop.sh $N > $OUT/mlpv-large.log 2>&1; echo "large 128 exit $?"; tail -8 $OUT/mlpv-large.log
el "all done"
