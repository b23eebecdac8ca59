#!/usr/bin/env bash
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
D=$PWD/.device-libs/deps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=index,name --format=csv,noheader
B=/tmp/gs-new; N=$B/gpuscale
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$OUT/cmake.log 2>&1 && cmake --build $B -j 32 >$OUT/build.log 2>&1 || { grep error $OUT/build.log | head; exit 1; }
echo "== ctest -L gpu + check tests"; (cd $B && timeout 330 ctest -L gpu -R "gpu|check" 2>&1 | grep -E "Test +#|tests passed"; timeout 60 ctest -R "test_cli_check|test_check$" 2>&1 | grep -E "Test +#")
for i in 1 2 3; do /usr/bin/time -f "%e s" $N check --level 1 > /tmp/ck$i.txt 2>&1; echo "check $i exit $?"; done; cat /tmp/ck1.txt | head -30
$N check --expect-gpus 4; echo "expect 4 exit $?"
$N check -f json -o $OUT/check.json >/dev/null 2>&1; echo "json exit $?"
nvidia-smi --query-gpu=index,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks_event_reasons.active,ecc.errors.uncorrected.volatile.total --format=csv
echo "== SIGSTOP process 0, --timeout 5"
mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH $N run mlp --backend cuda --min-time 600 --runs 1 --timeout 5 -q --no-progress -o /tmp/s0.json >/tmp/s0.txt 2>&1 & mp=$!
sleep 12; p0=$(for p in $(pgrep -f "$N run mlp"); do tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK=0$' && echo $p; done | head -1)
t0=$(date +%s.%N); kill -STOP $p0; wait $mp; rc=$?; t1=$(date +%s.%N); kill -9 $p0 2>/dev/null
echo "rc=$rc after $(python3 -c "print(round($t1-$t0,1))") s"; grep error /tmp/s0.txt | head -3
python3 -c "import json;d=json.load(open('/tmp/s0.json'));print(d['status'],[json.dumps(m.get('failure'))[:300] for m in d['measurements'] if m['status']!='ok'])"
echo "== llm tp vs dp"
$N run llm --gpus 0,1 --tp 2 --samples 32 -q --no-progress -o /tmp/tp.json >/dev/null 2>&1; echo "tp exit $?"
$N run llm --gpus 0,1 --samples 32 -q --no-progress -o /tmp/dp.json >/dev/null 2>&1; echo "dp exit $?"
python3 -c "import json;print([m.get('parallelism') for m in json.load(open('/tmp/tp.json'))['measurements']])"
$N report /tmp/tp.json /tmp/dp.json 2>&1 | grep -i -E "tensor|parallel" | head -5
