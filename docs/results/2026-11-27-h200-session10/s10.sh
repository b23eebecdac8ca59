#!/usr/bin/env bash
# Session 10 GPU calls. STEP=A: build, serving search on 4 GPUs (31), pipeline
# bench and pp checks (34). STEP=B: the suite twice (26). STEP=C (block 2, new
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
D=$PWD/.device-libs/deps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
B=$PWD/build; N=$B/gpuscale; T0=$(date +%s); NG=${NG:-4}
el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
R=/tmp/s10; mkdir -p $R
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv,noheader
tgt="--target gpuscale"
if [ ! -x $N ] || [ "${STEP}" = D ]; then
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$OUT/cmake.log 2>&1 && cmake --build $B -j 64 $tgt >$OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head; exit 1; }
fi
el built
case ${STEP} in
A)
  QUICK=1 GPUS=$NG DENSE_TP=1 GS_BIN=$N OUT=$R/ls timeout 400 bench/llm-serving.sh conversational interactive > $OUT/llm-serving.log 2>&1
  echo "llm-serving exit $?"; grep -vE "^\s*$" $OUT/llm-serving.log | tail -40 | cut -c1-240
  $N report $R/ls/results/*.json --format md -o $OUT/serving-report.md > /dev/null 2>&1; echo "report exit $?"
  el serving
  NGPU=$NG OUT=$R/pipe timeout 150 bench/pipeline.sh $N > $OUT/pipe.log 2>&1; echo "pipeline exit $?"; tail -25 $OUT/pipe.log | cut -c1-240
  el pipeline
  # mlp --pp 2 on 4 GPUs: terminal pipeline block against the report's
  timeout 60 $N run mlp -g $NG --pp 2 --runs 2 --iters 10 --no-progress -o $R/pp2.json > $OUT/pp2-terminal.txt 2>&1; echo "mlp pp2 exit $?"
  $N report $R/pp2.json > $OUT/pp2-report.txt 2>&1; grep -i -A8 "pipeline" $OUT/pp2-terminal.txt | head -20; echo ---; grep -i -A8 "pipeline" $OUT/pp2-report.txt | head -20
  # the same under a launcher (one process per GPU)
  timeout 90 mpirun --allow-run-as-root --oversubscribe -np $NG -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $N run mlp --pp 2 --runs 2 --iters 10 --no-progress -o $R/pp2mpi.json > $OUT/pp2-mpi.txt 2>&1; echo "mlp pp2 mpirun exit $?"; grep -i -E "verif|pipeline|bubble|samples/s" $OUT/pp2-mpi.txt | head -8
  timeout 90 mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $N run llm --pp 2 --runs 1 --no-progress -o $R/llmpp2mpi.json > $OUT/llm-pp2-mpi.txt 2>&1; echo "llm pp2 mpirun exit $?"; grep -i -E "verif|tpot|ttft|tokens/s" $OUT/llm-pp2-mpi.txt | head -6
  # llm tp 2 and tp2 x pp2: no arrival member on CUDA
  for L in "--tp 2" "--tp 2 --pp 2"; do
    timeout 90 $N run llm -g $NG $L --runs 1 --no-progress -o $R/llm.json > /dev/null 2>&1; echo "llm $L exit $?"
    python3 -c "import json,sys; d=json.load(open('$R/llm.json')); print('arrival members:', sum(1 for m in d['measurements'] for k in m if 'arrival' in k))"
  done
  # PP against TP on 2 GPUs, NVLink and over PCIe/host (NCCL_P2P_DISABLE=1: the slow link)
  for P2P in 0 1; do for L in "--tp 2" "--pp 2"; do
    NCCL_P2P_DISABLE=$P2P timeout 90 $N run llm -g 2 $L --runs 2 --no-progress -o $R/llm-$P2P.json > $R/llm.txt 2>&1; echo "P2P_DISABLE=$P2P llm $L exit $?"; grep -i -E "tpot|tokens/s|verif" $R/llm.txt | head -4
  done; done
  el done ;;
B)
  for k in 1 2; do
    timeout 280 $N suite -g $NG --no-progress -o $R/suite$k > $R/suite$k.log 2>&1; echo "suite $k exit $?"; el "suite $k"
    grep -E "^  - |^Node|^  [0-9]+ pass|  (pass|warn|fail) " $R/suite$k/summary.txt | cut -c1-300
    cp $R/suite$k/summary.txt $OUT/suite$k-summary.txt; cp $R/suite$k/report.md $OUT/suite$k-report.md 2>/dev/null
  done ;;
C)
  timeout 240 ctest --test-dir $B -L gpu --timeout 150 --output-on-failure > $OUT/ctest-gpu.log 2>&1
  grep -E "Test +#|tests passed|Total" $OUT/ctest-gpu.log | head -20; el gpu-tests
  NGPU=2 ROUNDS=3 ITERS=2000 OUT=$R/arrival timeout 90 bench/arrival.sh $N > $OUT/arrival.log 2>&1; tail -10 $OUT/arrival.log
  NGPU=4 ROUNDS=3 ITERS=2000 OUT=$R/arrival4 timeout 90 bench/arrival.sh $N > $OUT/arrival4.log 2>&1; tail -10 $OUT/arrival4.log
  el done ;;
D)
  QUICK=1 GPUS=$NG DENSE_TP=1 GS_BIN=$N OUT=$R/ls timeout 250 bench/llm-serving.sh conversational interactive > $OUT/llm-serving-interactive.log 2>&1
  echo "llm-serving exit $?"; grep -E "highest rate|^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+|best layout|^ +[0-9.]+/s: |dense|\\[t\+" $OUT/llm-serving-interactive.log | cut -c1-200
  el serving
  NGPU=2 ROUNDS=3 ITERS=2000 OUT=$R/arr2 timeout 70 bench/arrival.sh $N > $OUT/arrival2.log 2>&1; echo "arrival exit $?"; tail -12 $OUT/arrival2.log | cut -c1-240
  el arrival
  timeout 100 bash tests/test_gpu_llm_pp_mpi.sh $N > $OUT/llm-pp-mpi.log 2>&1; echo "llm pp mpi test exit $?"; tail -15 $OUT/llm-pp-mpi.log | cut -c1-240
  el llm-pp-mpi
  NGPU=$NG OUT=$R/pipe timeout 110 bench/pipeline.sh $N > $OUT/pipe.log 2>&1; echo "pipeline exit $?"; tail -24 $OUT/pipe.log | cut -c1-240
  mkdir -p $OUT/pipe; cp $R/pipe/*.txt $OUT/pipe/ 2>/dev/null
  el pipeline
  timeout 60 bash tests/test_gpu_coll_arrival.sh $N > $OUT/coll-arrival.log 2>&1; echo "coll arrival test exit $?"; tail -10 $OUT/coll-arrival.log | cut -c1-240
  el done ;;
esac
