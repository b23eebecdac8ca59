#!/usr/bin/env bash
# Next session's GPU calls (written in session 10), most important first.
# carry [".device-libs/deps", ".device-libs/s11.sh"]; NG=4 where a 4-GPU kind is lent, else 2.
#   STEP=S: serving search, both presets, dense sweeps (31)                ~300 s on 4 GPUs
#   STEP=P: pipeline bench, llm --pp under mpirun (4-GPU cases) (34)       ~200 s
#   STEP=U: one whole suite (26); call twice back to back (353 s each on 4 x H200)
#   STEP=T: stragglers 20 runs, arrival cost 8 rounds (29)                 ~400 s
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
D=$PWD/.device-libs/deps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
B=$PWD/build; N=$B/gpuscale; T0=$(date +%s); NG=${NG:-4}
el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
R=/tmp/s11; mkdir -p $R
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv,noheader
if [ ! -x $N ]; then
  cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$OUT/cmake.log 2>&1 &&
    cmake --build $B -j 64 --target gpuscale >$OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head; exit 1; }
fi
el built
case ${STEP} in
S)
  QUICK=1 GPUS=$NG DENSE_TP=1 GS_BIN=$N OUT=$R/ls timeout 540 bench/llm-serving.sh conversational interactive > $OUT/serving.log 2>&1
  echo "serving exit $?"; sed -n '/search.s highest rate against/,$p' $OUT/serving.log | cut -c1-220 ;;
P)
  NGPU=$NG OUT=$R/pipe timeout 300 bench/pipeline.sh $N > $OUT/pipe.log 2>&1; echo "pipeline exit $?"; tail -25 $OUT/pipe.log | cut -c1-240
  timeout 120 bash tests/test_gpu_llm_pp_mpi.sh $N > $OUT/llm-pp-mpi.log 2>&1; echo "llm pp mpi exit $?"; tail -6 $OUT/llm-pp-mpi.log; el pp-mpi
  for link in nvlink p2p-off; do for split in "--tp 2" "--pp 2"; do
    env $([ $link = p2p-off ] && echo NCCL_P2P_DISABLE=1) timeout 50 $N run llm -g 2 $split --scenario offline --batch 8 --samples 32 --runs 2 --no-progress \
      -o $R/slow-$link-${split// /}.json > $OUT/slow-$link-${split// /}.txt 2>&1; echo "$link $split exit $?"
    grep -E "tokens/s|TPOT|bubble" $OUT/slow-$link-${split// /}.txt | head -5 | cut -c1-200
  done; done; el slowlink ;;
U)
  k=$(ls $R 2>/dev/null | grep -c '^suite'); k=$((k + 1))
  timeout 560 $N suite -g $NG --no-progress -o $R/suite$k > $R/suite$k.log 2>&1; echo "suite $k exit $?"; el "suite $k"
  grep -E "^  - |^Node|  (pass|warn|fail) " $R/suite$k/summary.txt | cut -c1-250
  cp $R/suite$k/summary.txt $OUT/suite$k-summary.txt ;;
T)
  NGPU=$NG REPEATS=20 OUT=$R/st timeout 330 bench/stragglers.sh $N > $OUT/stragglers.log 2>&1; echo "stragglers exit $?"; tail -12 $OUT/stragglers.log
  NGPU=2 ROUNDS=8 ITERS=2000 OUT=$R/arr timeout 150 bench/arrival.sh $N > $OUT/arrival.log 2>&1; echo "arrival exit $?"; tail -14 $OUT/arrival.log ;;
esac
el done
