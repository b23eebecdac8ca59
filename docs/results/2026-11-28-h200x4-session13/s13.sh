#!/usr/bin/env bash
# Session 13 GPU calls. STEP=A: 29's GPU tests + llm stamps cost. STEP=B: pipeline bench. STEP=C: 33.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
D=$PWD/.device-libs/deps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
B=$PWD/build; N=$B/gpuscale; T0=$(date +%s); NG=${NG:-4}
el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
R=/tmp/s13; mkdir -p $R
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv,noheader
tgt=${TGT:---target gpuscale}
if [ ! -x $N ]; then
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$R/cmake.log 2>&1 && cmake --build $B -j 64 $tgt >$R/build.log 2>&1 || { grep -E "error" $R/build.log | head; exit 1; }
fi
el built
case ${STEP} in
A)
  timeout 420 ctest --test-dir $B -R "${TESTS:-test_gpu_coll_arrival$|test_gpu_mlp_pp|test_gpu_llm_arrival|test_gpu_check_pairs}" --output-on-failure > $R/ctest.log 2>&1
  echo "ctest exit $?"; grep -E "Test +#|tests passed|FAIL|Error|assert" $R/ctest.log | head -30
  el tests
  OUT=$R/lac timeout 200 bench/llm_arrival_cost.sh $N > $R/lac.log 2>&1; echo "llm cost exit $?"; tail -8 $R/lac.log
  el done ;;
B)
  NGPU=$NG OUT=$R/pipe RUN_TIMEOUT=${RT:-45} timeout 480 bench/pipeline.sh $N > $R/pipe.log 2>&1; echo "pipeline exit $?"; tail -30 $R/pipe.log | cut -c1-240
  el done ;;
C)
  timeout 150 ctest --test-dir $B -R "test_gpu_mlp_pp" --output-on-failure > $R/ctest-c.log 2>&1
  echo "ctest exit $?"; grep -E "Test +#|tests passed|dp2pp2|Error|assert" $R/ctest-c.log | head -20
  el mlp_pp
  NGPU=$NG OUT=$R/pipe RUN_TIMEOUT=${RT:-60} timeout 330 bench/pipeline.sh $N > $R/pipe.log 2>&1; echo "pipeline exit $?"; grep -E "pp [24] m|largest|within|PP 2|ratio|FAILED|t\+" $R/pipe.log | cut -c1-260
  el pipeline
  for w in "voxelize" "mlp" "resample" "fuse" "llm --model llama-8b --runs 1 --samples 16"; do
    timeout 120 $N run $w -g 1 --no-progress > $R/run.txt 2>&1; echo "run $w exit $?"; grep -i -E "roofline|of peak|weight stream" $R/run.txt | head -4
  done
  el roofline
  OUT=$R/vab timeout 150 bench/voxelize_kernels.sh --ab $B > $R/vab.log 2>&1; echo "vab exit $?"; tail -22 $R/vab.log
  el done ;;
D)
  timeout 150 ctest --test-dir $B -R "test_gpu_mlp_pp" --output-on-failure > $R/ctest-d.log 2>&1
  echo "ctest exit $?"; grep -E "Test +#|tests passed|dp2pp2|Error|assert" $R/ctest-d.log | head -20
  el mlp_pp
  NGPU=$NG OUT=$R/pipe RUN_TIMEOUT=${RT:-60} timeout 400 bench/pipeline.sh $N > $R/pipe.log 2>&1; echo "pipeline exit $?"; grep -E "pp [24] m|largest|within|PP 2|ratio|FAILED|t\+" $R/pipe.log | cut -c1-260
  el done ;;
E)
  OUT=$R/llt timeout 330 bench/llm-layouts-link.sh $N > $R/llt.log 2>&1; echo "layouts exit $?"; cat $R/llt.log | cut -c1-220; cat $R/llt/transports-socket.txt | head -8
  el layouts
  W=2048; L=$((3 * W / 2)); for i in 1 2 3 4 5 6 7 8; do L="$L,$W"; done
  timeout 60 $N run mlp --backend cuda --layers $L --dropout 0.2 --batch 16384 --samples 32768 --warmup 2 --iters 10 --runs 1 --no-progress -q --gpu-mode multi -g 2 --pp 2 --micro-batches 8 --schedule 1f1b --verify-rows 8 -o $R/pp2m8.json > /dev/null 2>&1; echo "pp2 m8 exit $?"
  timeout 120 torchrun --standalone --nproc_per_node 2 bench/pipeline_vs_torch.py torch --layers $L --batch 16384 --micro-batches 8 --schedule 1f1b --dropout 0.2 --warmup 3 --min-time 3 2>/dev/null | tail -n 1 > $R/torch.json
  python3 -c "
import json,sys; sys.path.insert(0,'bench')
from step_ratio import ratio_to_windows
p=json.load(open('$R/torch.json')); print('torch windows', len(p['window_seconds']), p['samples_per_s'])
print('gpuscale/torch', ratio_to_windows('$R/pp2m8.json', p['window_seconds'], p['batch']*p['window_steps']))"
  el done ;;
F)
  timeout 140 ctest --test-dir $B -R "test_gpu_llm_arrival|test_gpu_coll_arrival$|test_gpu_mlp_pp" -V > $R/ctest-f.log 2>&1
  echo "ctest exit $?"; grep -E "Test +#[0-9]+:|tests passed|dp2pp2|host-bound|named|Error|assert|FAIL" $R/ctest-f.log | cut -c1-250 | head -40
  el tests
  W=2048; L=$((3 * W / 2)); for i in 1 2 3 4 5 6 7 8; do L="$L,$W"; done
  timeout 40 $N run mlp --backend cuda --layers $L --dropout 0.2 --batch 16384 --samples 32768 --warmup 2 --iters 10 --runs 1 --no-progress -q --gpu-mode multi -g 2 --pp 2 --micro-batches 8 --schedule gpipe --verify-rows 8 -o $R/pp2gp.json > /dev/null 2>&1; echo "pp2 gpipe exit $?"
  timeout 60 torchrun --standalone --nproc_per_node 2 bench/pipeline_vs_torch.py torch --layers $L --batch 16384 --micro-batches 8 --schedule gpipe --dropout 0.2 --warmup 3 --min-time 3 2>/dev/null | tail -n 1 > $R/torch-gpipe.json
  python3 -c "
import json,sys; sys.path.insert(0,'bench')
from step_ratio import ratio_to_windows, throughput
p=json.load(open('$R/torch-gpipe.json')); print('torch gpipe windows', len(p['window_seconds']), p['samples_per_s'])
print('gpuscale gpipe', throughput('$R/pp2gp.json'))
print('gpuscale/torch gpipe', ratio_to_windows('$R/pp2gp.json', p['window_seconds'], p['batch']*p['window_steps']))"
  el gpipe
  WORKLOAD=mlp PAIRS=${PAIRS:-4} ITERS=${ITERS:-300} OUT=$R/mac timeout 100 bench/arrival_cost_runs.sh $N > $R/mac.log 2>&1; echo "mlp cost exit $?"; tail -7 $R/mac.log
  el done ;;
esac
