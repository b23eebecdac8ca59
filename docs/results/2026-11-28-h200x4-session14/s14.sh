#!/usr/bin/env bash
# Session 14 GPU calls (issue 33). STEP=A: diagnostics.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
D=$PWD/.device-libs/deps
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
B=$PWD/build; N=$B/gpuscale; T0=$(date +%s)
el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
R=/tmp/s14; mkdir -p $R
nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
if [ ! -x $N ]; then
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$R/cmake.log 2>&1 && cmake --build $B -j 64 ${TGT:---target gpuscale} >$R/build.log 2>&1 || { grep -E "error" $R/build.log | head; exit 1; }
fi
el built
case ${STEP} in
A)
  $N run mlp --preset large --batch 8192 -g 1 --runs 1 --min-time 1 --no-progress --trace $R/mlp1.trace.json -o $R/mlp1.json > $R/mlp1.txt 2>&1; echo "mlp1 exit $?"
  grep -E "samples/s|roofline|TFLOP" $R/mlp1.txt | head -5
  $N report $R/mlp1.trace.json > $R/mlp1-trace-report.txt 2>&1; echo "trace report exit $?"; head -70 $R/mlp1-trace-report.txt | cut -c1-200
  el mlp1
  python3 - > $R/sgemm.txt 2>&1 <<'PY'
import torch, time
torch.backends.cuda.matmul.allow_tf32 = False
def t(m, n, k, ta=False, tb=False):
    a = torch.randn(k, m, device="cuda").t() if ta else torch.randn(m, k, device="cuda")
    b = torch.randn(n, k, device="cuda").t() if tb else torch.randn(k, n, device="cuda")
    for _ in range(5): torch.mm(a, b)
    torch.cuda.synchronize(); e0 = torch.cuda.Event(True); e1 = torch.cuda.Event(True)
    e0.record()
    for _ in range(50): torch.mm(a, b)
    e1.record(); torch.cuda.synchronize(); s = e0.elapsed_time(e1) / 50 / 1e3
    print(f"sgemm m={m} n={n} k={k} ta={ta} tb={tb}: {s*1e6:.1f} us {2*m*n*k/s/1e12:.1f} TFLOP/s")
t(8192, 1024, 1024); t(8192, 512, 1024); t(8192, 512, 512); t(8192, 256, 512); t(8192, 1024, 50)
t(1024, 1024, 8192, ta=True); t(1024, 512, 8192, ta=True); t(512, 512, 8192, ta=True); t(256, 512, 8192, ta=True); t(1024, 50, 8192, ta=True)
t(8192, 1024, 1024, tb=True); t(8192, 1024, 512, tb=True)
PY
  cat $R/sgemm.txt
  el sgemm
  $N scale mlp --preset large --batch 8192 --scaling weak --counts 1,2,4 --runs 3 --min-time 1 --no-progress --trace $R/mlpw.trace.json -o $R/mlpw.json > $R/mlpw.txt 2>&1; echo "mlp weak exit $?"
  grep -v "^ *$" $R/mlpw.txt | head -40 | cut -c1-200
  el mlpw
  $N scale voxelize --counts 1,2,4 --runs 3 --min-time 1 --no-progress --trace $R/vox.trace.json -o $R/vox.json > $R/vox.txt 2>&1; echo "vox exit $?"
  grep -v "^ *$" $R/vox.txt | head -40 | cut -c1-200
  $N report $R/vox.json > $R/vox-report.txt 2>&1; grep -i -A12 "why not\|timeline" $R/vox-report.txt | head -60 | cut -c1-200
  el vox ;;
B)
  BB=$PWD/.device-libs/base/build
  (cmake -S .device-libs/base -B $BB -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$R/cmake-base.log 2>&1 && cmake --build $BB -j 32 --target gpuscale >$R/build-base.log 2>&1) || { echo base build failed; tail -5 $R/build-base.log; }
  cmake --build $B -j 64 --target test_gpu_mlp test_gpu_voxelize >$R/build-tests.log 2>&1 || { grep error $R/build-tests.log | head; }
  el built-base-and-tests
  timeout 300 ctest --test-dir $B -R "test_gpu_mlp$|test_gpu_voxelize|test_gpu_mlp_pp" --output-on-failure > $R/ctest.log 2>&1
  echo "ctest exit $?"; grep -E "Test +#|tests passed|FAIL|rror|odd|no-graph" $R/ctest.log | cut -c1-200 | head -30
  el tests
  timeout 240 python3 bench/mlp_step_vs_torch.py $N --baseline $BB/gpuscale --rounds 2 --min-time 1.5 --json $R/mlp-step.json > $R/mlp-step.log 2>&1; echo "mlp step exit $?"; cut -c1-400 $R/mlp-step.log
  el mlp-step
  for v in new:$N: nograph:$N:--no-graph base:$BB/gpuscale:; do
    IFS=: read name bin extra <<< "$v"
    timeout 100 $bin scale voxelize --counts 1,2,4 --runs 3 --min-time 1 --no-progress -q $extra -o $R/vox-$name.json > $R/vox-$name.txt 2>&1; echo "vox $name exit $?"
    grep -E "^ +[124] +[0-9]" $R/vox-$name.txt | head -3 | cut -c1-140
  done
  el vox
  for v in def: c4:NCCL_MAX_CTAS=4 c8:NCCL_MAX_CTAS=8 c16:NCCL_MAX_CTAS=16; do
    IFS=: read name envs <<< "$v"
    env $envs timeout 100 $N scale mlp --preset large --batch 8192 --scaling weak --counts 1,4 --runs 3 --min-time 1 --no-progress -q -o $R/mlpw-$name.json > $R/mlpw-$name.txt 2>&1; echo "mlp weak $name exit $?"
    grep -E "^ +[124] +[0-9]" $R/mlpw-$name.txt | head -3 | cut -c1-140
  done
  timeout 100 $BB/gpuscale scale mlp --preset large --batch 8192 --scaling weak --counts 1,4 --runs 3 --min-time 1 --no-progress -q -o $R/mlpw-base.json > $R/mlpw-base.txt 2>&1; echo "mlp weak base exit $?"
  grep -E "^ +[124] +[0-9]" $R/mlpw-base.txt | head -3 | cut -c1-140
  el mlpw ;;
C)
  BB=$PWD/.device-libs/base/build
  (cmake -S .device-libs/base -B $BB -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$R/cmake-base.log 2>&1 && cmake --build $BB -j 32 --target gpuscale >$R/build-base.log 2>&1) || { echo base build failed; tail -5 $R/build-base.log; }
  cmake --build $B -j 64 --target test_gpu_voxelize >$R/build-tests.log 2>&1 || { grep error $R/build-tests.log | head; }
  el built-base-and-tests
  timeout 120 ctest --test-dir $B -R "test_gpu_voxelize" --output-on-failure > $R/ctest.log 2>&1
  echo "ctest exit $?"; grep -E "Test +#|tests passed|FAIL|rror|chunk 2048" $R/ctest.log | cut -c1-200 | head -12
  el tests
  for round in 1 2; do
  for v in new:$N: chunk4096:$N:GS_VOXELIZE_CHUNK=4096 base:$BB/gpuscale:; do
    IFS=: read name bin envs <<< "$v"
    env $envs timeout 100 $bin scale voxelize --counts 1,2,4 --runs 3 --min-time 1 --no-progress -q -o $R/vox-$name-$round.json > $R/vox-$name-$round.txt 2>&1; echo "vox $name round $round exit $?"
    grep -E "^ +[124] +[0-9]" $R/vox-$name-$round.txt | head -3 | cut -c1-140
  done; done
  for v in new:$N base:$BB/gpuscale; do
    IFS=: read name bin <<< "$v"
    timeout 60 $bin run voxelize --points 10M --clouds 1 --runs 3 --min-time 1 --no-progress -q -o $R/vox10m-$name.json > $R/vox10m-$name.txt 2>&1; echo "vox 10M $name exit $?"; grep -E "^ +1 +[0-9]|memory:" $R/vox10m-$name.txt | cut -c1-140
  done
  el vox
  W=1024; L="1024,2048,2048,2048,1024,8"
  for g in 0,1,2,3 2,3,0,1; do
    timeout 60 $N run mlp --backend cuda --layers $L --batch 8192 --samples 16384 --verify-rows 8 --iters 20 --warmup 2 --runs 1 --no-progress -q --gpu-mode multi --arrival-times 1 --gpus $g --pp 2 --micro-batches 4 -o $R/pp-$g.json > $R/pp-$g.txt 2>&1; echo "pp gpus $g exit $?"
    $N report $R/pp-$g.json 2>&1 | grep -i -E "straggler|late|named" | head -6 | cut -c1-220
  done
  el pp
  for v in def: c2:NCCL_MAX_CTAS=2 c4:NCCL_MAX_CTAS=4 c8:NCCL_MAX_CTAS=8; do
    IFS=: read name envs <<< "$v"
    env $envs timeout 100 $N scale mlp --preset large --batch 8192 --scaling weak --counts 1,2,4 --runs 3 --min-time 1 --no-progress -q -o $R/mlpw-$name.json > $R/mlpw-$name.txt 2>&1; echo "mlp weak $name exit $?"
    grep -E "^ +[124] +[0-9]" $R/mlpw-$name.txt | head -3 | cut -c1-140
  done
  el mlpw
  timeout 200 python3 bench/mlp_step_vs_torch.py $N --baseline $BB/gpuscale --rounds 1 --min-time 1 --json $R/mlp-step.json > $R/mlp-step.log 2>&1; echo "mlp step exit $?"; cut -c1-420 $R/mlp-step.log
  el done ;;
D)
  cmake --build $B -j 64 --target test_gpu_mlp test_gpu_voxelize >$R/build-tests.log 2>&1 || { grep error $R/build-tests.log | head; }
  el built-tests
  timeout 260 ctest --test-dir $B -R "test_gpu_mlp$|test_gpu_voxelize|test_gpu_mlp_pp|test_gpu_trace|test_gpu_gpus" --output-on-failure > $R/ctest.log 2>&1
  echo "ctest exit $?"; grep -E "Test +#|tests passed|FAIL|Assertion|dp2pp2" $R/ctest.log | cut -c1-220 | head -30
  el tests
  timeout 100 $N scale mlp --preset large --batch 8192 --scaling weak --counts 1,2,4 --runs 3 --min-time 1 --no-progress -q -o $R/mlpw-default.json > $R/mlpw-default.txt 2>&1; echo "mlp weak default exit $?"
  grep -E "^ +[124] +[0-9]" $R/mlpw-default.txt | head -3 | cut -c1-140; grep -o '"nccl_max_ctas":[a-z0-9]*' $R/mlpw-default.json | head -2
  timeout 100 $N scale mlp --preset large --batch 8192 --scaling weak --counts 1,4 --runs 3 --min-time 1 --no-progress -q --nccl-max-ctas 0 -o $R/mlpw-ctas0.json > $R/mlpw-ctas0.txt 2>&1; echo "mlp weak --nccl-max-ctas 0 exit $?"
  grep -E "^ +[124] +[0-9]" $R/mlpw-ctas0.txt | head -3 | cut -c1-140; grep -o '"nccl_max_ctas":[a-z0-9]*' $R/mlpw-ctas0.json | head -2
  timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $N run mlp --preset large --batch 16384 --runs 1 --min-time 1 --no-progress -q -o $R/mlp-mpi.json > $R/mlp-mpi.txt 2>&1; echo "mpirun mlp exit $?"
  grep -E "^ +[124] +[0-9]|rror" $R/mlp-mpi.txt | head -4 | cut -c1-160; grep -o '"nccl_max_ctas":[a-z0-9]*' $R/mlp-mpi.json | head -1
  el done ;;
E)
  BB=$PWD/.device-libs/base/build
  (cmake -S .device-libs/base -B $BB -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D/usr >$R/cmake-base.log 2>&1 && cmake --build $BB -j 32 --target gpuscale >$R/build-base.log 2>&1) || { echo base build failed; tail -5 $R/build-base.log; }
  el built-base
  L="1024,2048,2048,2048,1024,8"
  for round in 1 2 3; do for v in new:$N base:$BB/gpuscale; do
    IFS=: read name bin <<< "$v"
    timeout 60 $bin run mlp --backend cuda --layers $L --batch 8192 --samples 16384 --verify-rows 8 --iters 20 --warmup 2 --runs 1 --no-progress -q --gpu-mode multi --arrival-times 1 -g 4 --pp 2 --micro-batches 4 --telemetry-interval 0.02 --telemetry-series -o $R/big-$name-$round.json > /dev/null 2>&1; echo -n "$name round $round exit $? "
    $N report --format json -o $R/big-$name-$round.report $R/big-$name-$round.json 2>/dev/null
    python3 - $R/big-$name-$round.json $R/big-$name-$round.report <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["measurements"][0]
row = json.load(open(sys.argv[2]))["series"][0]["rows"][0]
out = []
for g, rg in zip(m["arrival_groups"], row["arrival_groups"]):
    out.append(f"stage {g['stage']}: last {g['last_rank']} {g['lateness_seconds']*1e6:.1f} us thr {rg['threshold_seconds']*1e6:.1f} named {rg['named']}")
st = sorted(s for r in m["runs"] for s in r["step_seconds"]); out.append(f"step {st[len(st)//2]*1e3:.3f} ms")
series = {x["device"]: x for x in (m["telemetry"].get("series") or [])}
for r in m["telemetry"]["ranks"]:
    ser = [x for x in series.get(r["device"], {}).get("sm_clock_mhz", []) if x and x > 1000]
    out.append(f"gpu{r['device']} clk {r['sm_clock_mhz']['mean']:.0f} busy-mean {sum(ser)/len(ser) if ser else 0:.0f} pw {r['power_watts']['mean']:.0f}")
print("; ".join(out))
PY
  done; done
  el done ;;
F)
  timeout 120 ctest --test-dir $B -R "test_gpu_mlp_pp" --output-on-failure > $R/ctest.log 2>&1
  echo "ctest exit $?"; grep -E "Test +#|tests passed|FAIL|Assertion|dp2pp2" $R/ctest.log | cut -c1-220 | head -16
  el tests
  L="1024,2048,2048,2048,1024,8"
  timeout 60 $N run mlp --backend cuda --layers $L --batch 8192 --samples 16384 --verify-rows 8 --iters 20 --warmup 2 --runs 1 --no-progress -q --gpu-mode multi -g 4 --pp 2 --micro-batches 4 -o $R/pp.json > $R/pp.txt 2>&1; echo "pp exit $?"
  grep -E "^ +4 +[0-9]" $R/pp.txt | cut -c1-140; grep -A0 '"nccl_max_ctas"' $R/pp.json
  timeout 80 $N scale mlp --preset large --batch 8192 --scaling weak --counts 1,4 --runs 3 --min-time 1 --no-progress -q -o $R/mlpw.json > $R/mlpw.txt 2>&1; echo "mlp weak exit $?"
  grep -E "^ +[124] +[0-9]" $R/mlpw.txt | head -3 | cut -c1-140; grep -A0 '"nccl_max_ctas"' $R/mlpw.json
  el done ;;
G)
  timeout 90 ctest --test-dir $B -R "test_gpu_mlp_pp" -V > $R/ctest.log 2>&1
  echo "ctest exit $?"; grep -E "tests passed|FAIL|Assertion|dp2pp2|share" $R/ctest.log | cut -c1-200 | head -20 ;;
esac
cd /tmp && tar czf $OUT/s14-$STEP.tgz s14
