#!/usr/bin/env bash
# GPU check of the merged main: GPU tests, suite before/after on one GPU, issue 26/28 checks on two.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
D=$PWD/.device-libs/deps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
b() { cmake -S $1 -B $2 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$OUT/cmake-$3.log 2>&1 && cmake --build $2 -j 16 $4 >$OUT/build-$3.log 2>&1 || echo "BUILD $3 FAILED"; }
b . /tmp/gs-new new "" & b .device-libs/old-src /tmp/gs-old old "--target gpuscale" & wait
N=/tmp/gs-new/gpuscale; O=/tmp/gs-old/gpuscale
echo "== ctest -L gpu"; (cd /tmp/gs-new && timeout 400 ctest -L gpu 2>&1 | grep -E "Test +#|tests passed")
echo "== suite on GPU 0, old/new alternating"
for r in 1 2; do for v in old new; do s=$(date +%s.%N); CUDA_VISIBLE_DEVICES=0 /tmp/gs-$v/gpuscale suite --out /tmp/su-$v-$r --no-progress -q >/tmp/su-$v-$r.txt 2>&1; echo "$v $r exit $? $(python3 -c "import time;print(round(time.time()-$s,1))") s"; done; done
python3 - <<'PY'
import json,statistics as st
def rates(v):
    out={}
    for r in (1,2):
        for w in ("voxelize","resample","fuse","mlp","llm"):
            try: d=json.load(open(f"/tmp/su-{v}-{r}/{w}.json"))
            except OSError: continue
            for m in d["measurements"]:
                a=m.get("aggregate") or {}; x=a.get("throughput_items_per_second")
                if m["world_size"]==1 and m["status"]=="ok" and x: out.setdefault(w,[]).append(x)
    return {k:st.median(v) for k,v in out.items()}
o,n=rates("old"),rates("new")
for k in sorted(o): print(f"{k:10s} old {o[k]:.4g} new {n.get(k,0):.4g} new/old {n.get(k,0)/o[k]:.3f}")
PY
echo "== suite twice on 2 GPUs (new)"
for r in 1 2; do $N suite --out /tmp/s$r --no-progress -q >/tmp/s$r.txt 2>&1; echo "suite $r exit $?"; grep -E "speedup|beneficial|inconclusive|suspect|preferred|marginal" /tmp/s$r/summary.txt | grep -v "^ *series" | head -12; sed -n '/[Nn]ode verdict/,$p' /tmp/s$r.txt | head -30; done
cp /tmp/s1/summary.txt $OUT/s1-summary.txt; cp /tmp/s2/summary.txt $OUT/s2-summary.txt
echo "== compare s1 s2 mlp"; $N compare /tmp/s1/mlp.json /tmp/s2/mlp.json 2>&1 | tail -8; echo "rc=$?"
echo "== predict"; $N predict --ngpus 1,2,4,8 /tmp/s1/mlp.json 2>&1 | tail -12
echo "== slowed baseline"; $N scale voxelize --gpus 0,1 --inject slow:rank=0,factor=3,world=1 -q --no-progress --out /tmp/slow.json 2>&1 | grep -E "suspect|beneficial|inconclusive" | head -4
echo "== gpu-mode auto"; $N run mlp --gpus 0,1 --gpu-mode auto -q --no-progress --out /tmp/auto.json 2>&1 | grep -i -E "auto|calibrat" | head -3
echo "== SIGSTOP process 0 under mpirun, --timeout 5"
mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH $N run mlp --backend cuda --min-time 600 --runs 1 --timeout 5 -q --no-progress -o /tmp/s0.json >/tmp/s0.txt 2>&1 & mp=$!
sleep 12; p0=$(for p in $(pgrep -f "$N run mlp"); do tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK=0$' && echo $p; done | head -1)
t0=$(date +%s.%N); kill -STOP $p0; wait $mp; rc=$?; t1=$(date +%s.%N); kill -9 $p0 2>/dev/null
echo "rc=$rc after $(python3 -c "print(round($t1-$t0,1))") s"; tail -4 /tmp/s0.txt
python3 -c "import json;d=json.load(open('/tmp/s0.json'));print(d['status'],json.dumps(d.get('failure'))[:300])"
