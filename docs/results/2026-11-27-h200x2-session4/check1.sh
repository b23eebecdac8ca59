#!/usr/bin/env bash
# GPU check of the merged main (first half of issue 27).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
D=$PWD/.device-libs/deps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
B=/tmp/gs-new
nvidia-smi --query-gpu=index,name,driver_version --format=csv
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$OUT/cmake.log 2>&1 || { tail -20 $OUT/cmake.log; exit 1; }
cmake --build $B -j 32 >$OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head; exit 1; }
echo "== ldd"; ldd $B/gpuscale | grep -E 'nccl|cudart|cublas|not found'
G=$B/gpuscale
echo "== ctest -L gpu"; (cd $B && timeout 400 ctest -L gpu --output-on-failure 2>&1 | tail -25)
echo "== info"; $G info 2>&1 | head -30
run() { echo "== $*"; timeout 120 "$@" 2>&1 | tail -${TL:-12}; echo "rc=${PIPESTATUS[0]}"; }
run $G coll all --gpus 0,1 -b 8 -e 256M --stepfactor 8 -n 20 -w 5 -q --out $OUT/coll-oop.json
run $G coll all --gpus 0,1 -b 8 -e 64M --stepfactor 8 --place in -d bfloat16 --op max -q --out /tmp/c-in.json
run $G coll alltoall --gpus 0,1 --place in
run $G coll allreduce -g 2 -b 8 -e 1M -n 5 -o /tmp/c.json -q
run $G coll allreduce -o sum
run $G run llm --gpus 0 --samples 8 --no-progress -q --out /tmp/llm0.json
run $G run voxelize --gpus 1 --iters 10 --runs 1 -q -o /tmp/g1.json
python3 -c 'import json;print("devices",json.load(open("/tmp/g1.json"))["config"].get("devices"))'
run $G run mlp --gpus 0,1 --gpu-mode auto -q --out /tmp/auto.json
run $G scale voxelize --gpus 0,1 --split proportional -q --out /tmp/split.json
run $G plan --task '0:voxelize' --task '1:fuse' -q --out /tmp/plan.json
run $G plan --task '0:llm' --task '1:fuse' -q --out /tmp/plan2.json
run $G run mlp --gpus 0,1 --precision tf32 --iters 20 -q --out /tmp/mlp.json
run $G run llm --gpus 0,1 --tp 2 -q --no-progress --out /tmp/llmtp.json
TL=4 run mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH $G coll all -b 8 -e 64M --stepfactor 8 --no-progress -q --out /tmp/cm.json
python3 - <<'PY'
import json
d=json.load(open('/tmp/cm.json'))
print("mpi coll:", d.get("status"), len(d["measurements"]), "points, wrong:", sum((m.get("check") or {}).get("wrong_elements",0) or 0 for m in d["measurements"]))
PY
echo "== NCCL missing"
unshare --mount sh -c "mount --bind /dev/null \"\$(readlink -f \$(ldconfig -p | awk '/libnccl.so.2 /{print \$NF; exit}'))\"; $G coll allreduce --gpus 0,1 -q --out /tmp/x.json; echo rc=\$?; $G run voxelize --gpus 0 -q --iters 5 --runs 1 --out /tmp/y.json; echo rc=\$?" 2>&1 | tail -5
