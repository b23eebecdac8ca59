#!/usr/bin/env bash
# Pipeline parallelism on 2 and 4 GPUs (issue 34's targets), short enough
# for a small GPU budget:
#  1. the link: gpuscale coll sendrecv at 2 GPUs over 1-64 MiB (the sizes
#     of one micro-batch's activations below), which the report uses to
#     take the transfers' own time out of each stage's idle time;
#  2. the bubble: mlp --pp P under 1F1B for m = 1, 2, 4, 8, 16 on a model
#     whose stages are balanced (8 layers of WIDTH outputs, the first with
#     1.5 x WIDTH inputs: see `layers` below), at P = 2 and,
#     with 4+ GPUs, P = 4; the bubble (idle less transfers / busy, with its
#     95% interval, from `gpuscale report`) beside (p-1)/m (target: within
#     15%);
#  3. mlp PP 2 against DP 2 on 2 GPUs at the same global batch (target: PP
#     2 at least 0.9x), at BATCH (the sweep's m) and at COMPARE_BATCH (m =
#     16 and 32: micro-batches as large as BATCH's at m = 8 and 16, with
#     half their bubble);
#  4. beside it, torch.distributed.pipelining's ScheduleGPipe and
#     Schedule1F1B on the same layers, stage split and m = 8 on 2 GPUs
#     (bench/pipeline_vs_torch.py torch, under torchrun; skipped with a
#     note without PyTorch >= 2.5), each against gpuscale's run of the
#     same schedule (TORCH_SCHEDULES: the schedules, default both).
# Every gpuscale run verifies its checked step against the CPU reference
# (fp32; on CUDA the checked step takes --verify-rows samples of each
# rank's share, 16 per replica, so that the reference costs seconds, not
# minutes: the previous version, which checked the whole 4096-sample
# batch, did not finish within 170 s on 2 GPUs).
#
# BATCH is 16384 (it was 4096 until 2026-11-28): at 4096 the micro-batches
# of m = 16 are 256 rows, whose passes are short enough that the host's
# launches and each transfer's latency show as idle time the formula does
# not count (P = 4, m = 16 read 23% above (p-1)/m on 4 x H200); at 16384
# they are 1024 rows.
#
# Measured time on 4 x H200 (2026-11-28, BATCH 16384): 186 s, of which
# the sendrecv sweep 4 s, the ten pipeline runs 108 s (about 11 s each:
# process, CUDA, NCCL and cuBLAS start, the stages' kernel-load pass, 2
# warmup + 10 timed steps, the 16-row CPU check), DP 2 11 s, the three
# COMPARE_BATCH runs 38 s and torchrun 24 s (before its --min-time went
# from 1 to 3 s, for windows enough to give its spread). GPipe's
# gpuscale run and torchrun, added since, took 34 s together when run by
# hand in the same way (docs/results/2026-11-28-h200x4-session13, call
# 6). On 2 GPUs the P = 4 runs are left out.
#
#   bench/pipeline.sh [GPUSCALE]        (default build/gpuscale)
# Environment: NGPU (default: the GPUs nvidia-smi lists), WIDTH (2048),
# BATCH (16384), COMPARE_BATCH (32768: PP 2 at m = 16 and 32 against DP 2
# again), OUT (results folder, default ./pipeline-bench),
# RUN_TIMEOUT (seconds each gpuscale run is given, default 90: a run past
# it counts as failed).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/gpuscale}
out=${OUT:-pipeline-bench}
ngpu=${NGPU:-$(nvidia-smi -L | grep -c "^GPU")}
width=${WIDTH:-2048}
batch=${BATCH:-16384}
mkdir -p "$out"
# Never NVLink multicast (NVLS): both sides measure the same NCCL paths.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
[ "$ngpu" -ge 2 ] || { echo "pipeline.sh: needs 2 GPUs, found $ngpu" >&2; exit 77; }
t0=$(date +%s)
stamp() { echo "[t+$(($(date +%s) - t0))s] $*"; }
failed=0
# One gpuscale command, its output into $1, given $RUN_TIMEOUT seconds (then
# TERM, and KILL 10 s later): a failure or a timeout is shown (the tail of
# its output) and counted, and the bench goes on with the other runs, so
# that one run that hangs cannot take the bench's whole time.
run_timeout=${RUN_TIMEOUT:-90}
measure() {
  local txt=$1
  shift
  local rc=0
  timeout -k 10 "$run_timeout" "$bin" "$@" >"$txt" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] && return 0
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "FAILED (timed out after $run_timeout s, exit $rc): gpuscale $*" >&2
  else
    echo "FAILED (exit $rc): gpuscale $*" >&2
  fi
  tail -n 5 "$txt" >&2
  failed=$((failed + 1))
  return 1
}

# 8 layers of WIDTH outputs whose stages cost the same at P = 2 and 4: the
# first layer has 1.5 x WIDTH inputs, as it computes no input gradient (2
# GEMMs of 1.5 units against the others' 3 of 1; gs_mlp_pp_layer_cost).
layers=$((3 * width / 2))
for i in 1 2 3 4 5 6 7 8; do layers="$layers,$width"; done
common=(mlp --backend cuda --layers "$layers" --dropout 0.2 --batch "$batch" --samples $((2 * batch))
        --warmup 2 --iters 10 --runs 1 --no-progress -q --gpu-mode multi)

link=()
measure "$out/sendrecv.txt" coll sendrecv -g 2 -b 1M -e 128M --stepfactor 2 -n 20 -w 5 \
  -o "$out/sendrecv.json" && link=("$out/sendrecv.json")
stamp "sendrecv"
counts=(2)
[ "$ngpu" -ge 4 ] && counts+=(4)
docs=()
for p in "${counts[@]}"; do
  for m in 1 2 4 8 16; do
    f="$out/pp$p-1f1b-m$m.json"
    measure "$out/pp$p-1f1b-m$m.txt" run "${common[@]}" -g "$p" --pp "$p" --micro-batches "$m" \
      --schedule 1f1b --verify-rows $((16 / p)) -o "$f" && docs+=("$f")
  done
  stamp "PP $p, m = 1, 2, 4, 8, 16"
done
dp=()
measure "$out/dp2.txt" run "${common[@]}" -g 2 --verify-rows 8 -o "$out/dp2.json" && dp=("$out/dp2.json")
stamp "DP 2"
# PP 2 against DP 2 again at twice the batch, at m = 16 and 32: the same
# micro-batch sizes as BATCH's m = 8 and 16 with half their bubble (at
# BATCH, m = 8's 12.5% caps PP 2 near 0.89x of DP 2 even with no other
# loss, and m = 16's smaller micro-batches run its GEMMs slower).
big=${COMPARE_BATCH:-32768}
large=(mlp --backend cuda --layers "$layers" --dropout 0.2 --batch "$big" --samples $((2 * big))
       --warmup 2 --iters 10 --runs 1 --no-progress -q --gpu-mode multi)
# (a failed run is counted by measure and the bench goes on: `|| :`)
measure "$out/dp2-large.txt" run "${large[@]}" -g 2 --verify-rows 8 -o "$out/dp2-large.json" || :
for m in 16 32; do
  measure "$out/pp2-large-m$m.txt" run "${large[@]}" -g 2 --pp 2 --micro-batches "$m" \
    --schedule 1f1b --verify-rows 8 -o "$out/pp2-large-m$m.json" || :
done
stamp "PP 2 against DP 2 at batch $big"
[ "${#docs[@]}" -gt 0 ] || { echo "pipeline.sh: no pipeline run succeeded" >&2; exit 1; }

echo "== bubble (idle less the transfers at the sendrecv cost) against (p-1)/m; PP 2 / DP 2" \
     "(gpuscale $("$bin" --version))"
"$bin" report -f json "${docs[@]}" "${dp[@]}" "${link[@]}" >"$out/report.json"
"$bin" report "${docs[@]}" "${link[@]}" >"$out/report.txt"
python3 - "$out/report.json" "$batch" "$out" <<'PY' | tee "$out/summary.txt"
import json, os, sys
sys.path.insert(0, "bench")
from step_ratio import ratio
rep = json.load(open(sys.argv[1]))
rows = [r for s in rep["series"] for r in s["rows"] if not r.get("collective")]
worst, dp, pp2 = 0.0, None, {}
for r in rows:
    p = r.get("pipeline")
    if not p:
        dp = r["throughput"]
        continue
    f = p["bubble_formula"]
    gap = (p["bubble"] - f) / f
    worst = max(worst, abs(gap))
    t = sum(x for x in p["stage_transfer"] if x is not None) if p["transfer_source"] else None
    print(f"  pp {p['stages']} m {p['micro_batches']:>2}: bubble {100 * p['bubble']:6.1f}% "
          f"[{100 * (p['bubble_low'] or float('nan')):.1f}, {100 * (p['bubble_high'] or float('nan')):.1f}]"
          f" vs (p-1)/m {100 * f:6.1f}% ({100 * gap:+.0f}%: {p['bubble_verdict']}; with the imbalance "
          f"{100 * p['bubble_expected']:.1f}%: {p['bubble_expected_verdict']}), transfers "
          f"{'%.3g ms' % (1e3 * t) if t is not None else 'not separated'} a step, imbalance "
          f"{p['imbalance']:.2f}x, {r['throughput'] / 1e3:.1f} Ksamples/s, {r['verification']}")
    if p["stages"] == 2:
        pp2[p["micro_batches"]] = r["throughput"]
print(f"largest |bubble - (p-1)/m| / ((p-1)/m): {100 * worst:.0f}% (target <= 15%)")
verdicts = [r["pipeline"]["bubble_verdict"] for r in rows if r.get("pipeline")]
print(f"bubble within 15% of (p-1)/m by its interval: {verdicts.count('within 15%')} of "
      f"{len(verdicts)} ({verdicts.count('inconclusive')} inconclusive)")
expected = [r["pipeline"]["bubble_expected_verdict"] for r in rows if r.get("pipeline")]
print(f"bubble within 15% of the formula with the measured imbalance: "
      f"{expected.count('within 15%')} of {len(expected)}")
if dp and pp2:
    m, best = max(pp2.items(), key=lambda kv: kv[1])
    r, lo, hi = ratio(os.path.join(sys.argv[3], f"pp2-1f1b-m{m}.json"),
                      os.path.join(sys.argv[3], "dp2.json"))
    print(f"PP 2 (best: m {m}) / DP 2 throughput at batch {sys.argv[2]}: {r:.3f}x "
          f"[{lo:.3f}, {hi:.3f}] (target >= 0.9x)")
PY
python3 - "$out" "$big" <<'PY' | tee -a "$out/summary.txt"
import json, os, sys
sys.path.insert(0, "bench")
from step_ratio import ratio
out, big = sys.argv[1], sys.argv[2]
def rate(name):
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        return None
    m = json.load(open(path))["measurements"][0]
    return m["aggregate"]["throughput_items_per_second"], m["verification"]["status"]
dp = rate("dp2-large")
for m in (16, 32):
    pp = rate(f"pp2-large-m{m}")
    if dp and pp:
        r, lo, hi = ratio(os.path.join(out, f"pp2-large-m{m}.json"), os.path.join(out, "dp2-large.json"))
        print(f"PP 2 (m {m}) / DP 2 throughput at batch {big}: {r:.3f}x [{lo:.3f}, {hi:.3f}] (target >= "
              f"0.9x; {pp[0] / 1e3:.1f} against {dp[0] / 1e3:.1f} Ksamples/s, checked step {pp[1]}, {dp[1]})")
PY
stamp "reports"

echo "== gpuscale against torch.distributed.pipelining (ScheduleGPipe and Schedule1F1B, same layers, split, m = 8)"
if ! python3 -c "import torch.distributed.pipelining" 2>/dev/null; then
  echo "skipped: PyTorch with torch.distributed.pipelining is not installed"
  [ "$failed" -eq 0 ] || { echo "pipeline.sh: $failed gpuscale runs failed (above)" >&2; exit 1; }
  exit 0
fi
# 1F1B's gpuscale side is the sweep's m = 8 run; GPipe's is run here.
measure "$out/pp2-gpipe-m8.txt" run "${common[@]}" -g 2 --pp 2 --micro-batches 8 --schedule gpipe \
  --verify-rows 8 -o "$out/pp2-gpipe-m8.json" || :
for schedule in ${TORCH_SCHEDULES:-gpipe 1f1b}; do
  timeout -k 10 "$((2 * run_timeout))" torchrun --standalone --nproc_per_node 2 bench/pipeline_vs_torch.py \
    torch --layers "$layers" --batch "$batch" --micro-batches 8 --schedule "$schedule" --dropout 0.2 \
    --warmup 3 --min-time 3 | tail -n 1 >"$out/torch-pp2-$schedule-m8.json" || :
done
python3 - "$out" ${TORCH_SCHEDULES:-gpipe 1f1b} <<'PY' | tee "$out/vs-torch.txt"
import json, os, sys
out = sys.argv[1]
sys.path.insert(0, "bench")
from step_ratio import ratio_to_windows, throughput
for schedule in sys.argv[2:]:
    ours_doc = os.path.join(out, f"pp2-{schedule}-m8.json")
    peer_doc = os.path.join(out, f"torch-pp2-{schedule}-m8.json")
    try:
        peer = json.load(open(peer_doc))
        ours, lo, hi = throughput(ours_doc)
    except (OSError, ValueError, KeyError) as e:
        print(f"pp 2, {schedule}, m 8: no comparison ({e})")
        continue
    t = peer["samples_per_s"]
    r, rlo, rhi = ratio_to_windows(ours_doc, peer["window_seconds"], peer["batch"] * peer["window_steps"])
    print(f"pp 2, {schedule}, m 8, batch {peer['batch']}: gpuscale {ours / 1e3:.1f} Ksamples/s "
          f"[{lo / 1e3:.1f}, {hi / 1e3:.1f}], torch {t / 1e3:.1f} Ksamples/s "
          f"({len(peer['window_seconds'])} windows of {peer['window_steps']} steps), ratio {r:.3f}x "
          f"[{rlo:.3f}, {rhi:.3f}] (both sides' spread; target >= 1)")
PY
stamp "done"
[ "$failed" -eq 0 ] || { echo "pipeline.sh: $failed gpuscale runs failed (above)" >&2; exit 1; }
