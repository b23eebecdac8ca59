#!/usr/bin/env bash
# Pipeline parallelism on 2 and 4 GPUs (issue 34's targets), in one go:
#  1. the bubble: mlp --pp P (P = 2, and 4 with 4+ GPUs) under 1F1B and
#     GPipe for m = 1, 2, 4, 8, 16 micro-batches on a model whose stages
#     are balanced (8 equal layers), the measured bubble (mean stage idle /
#     mean stage busy) beside (p-1)/m;
#  2. mlp PP 2 against DP 2 on 2 GPUs, same model and global batch;
#  3. gpuscale's GPipe and 1F1B against torch.distributed.pipelining's
#     ScheduleGPipe and Schedule1F1B on the same layer shapes, stage split
#     and micro-batches (bench/pipeline_vs_torch.py torch, under torchrun).
# Every gpuscale run verifies against the CPU reference (fp32).
#
#   bench/pipeline.sh [GPUSCALE]        (default build/gpuscale)
# Environment: NGPU (default: the GPUs nvidia-smi lists), WIDTH (2048),
# BATCH (4096), OUT (results folder, default ./pipeline-bench). Needs
# PyTorch >= 2.5 for part 3 (skipped with a note without it).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/gpuscale}
out=${OUT:-pipeline-bench}
ngpu=${NGPU:-$(nvidia-smi -L | grep -c "^GPU")}
width=${WIDTH:-2048}
batch=${BATCH:-4096}
mkdir -p "$out"
# Never NVLink multicast (NVLS): both sides measure the same NCCL paths.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
[ "$ngpu" -ge 2 ] || { echo "pipeline.sh: needs 2 GPUs, found $ngpu" >&2; exit 77; }

layers=$width
for i in 1 2 3 4 5 6 7 8; do layers="$layers,$width"; done  # 8 equal layers
common=(mlp --backend cuda --layers "$layers" --dropout 0.2 --batch "$batch" --samples 65536
        --warmup 3 --min-time 2 --runs 3 --no-progress -q --gpu-mode multi)

counts=(2)
[ "$ngpu" -ge 4 ] && counts+=(4)
docs=()
for p in "${counts[@]}"; do
  for schedule in 1f1b gpipe; do
    for m in 1 2 4 8 16; do
      f="$out/pp$p-$schedule-m$m.json"
      "$bin" run "${common[@]}" -g "$p" --pp "$p" --micro-batches "$m" --schedule "$schedule" \
        -o "$f" >"$out/pp$p-$schedule-m$m.txt"
      docs+=("$f")
    done
  done
done
"$bin" run "${common[@]}" -g 2 -o "$out/dp2.json" >"$out/dp2.txt"

echo "== bubble against (p-1)/m; PP 2 and DP 2 throughput (gpuscale $("$bin" --version))"
python3 bench/pipeline_vs_torch.py summary "${docs[@]}" "$out/dp2.json" --json "$out/summary.json" |
  tee "$out/summary.txt"
python3 - "$out/summary.json" <<'PY' | tee -a "$out/summary.txt"
import json, sys
rows = json.load(open(sys.argv[1]))
dp = [r for r in rows if "stages" not in r][0]["samples_per_s"]
best = max((r for r in rows if r.get("stages") == 2), key=lambda r: r["samples_per_s"])
print(f"PP 2 (best: {best['schedule']}, m {best['micro']}) / DP 2 throughput: "
      f"{best['samples_per_s'] / dp:.3f}x (target >= 0.9x)")
worst = max(abs(r["gap"]) for r in rows if "stages" in r and r["micro"] >= 1)
print(f"largest |bubble - (p-1)/m| / ((p-1)/m): {100 * worst:.0f}% (target <= 15%)")
PY

echo "== gpuscale against torch.distributed.pipelining (same layers, split, micro-batches)"
if ! python3 -c "import torch.distributed.pipelining" 2>/dev/null; then
  echo "skipped: PyTorch with torch.distributed.pipelining is not installed"
  exit 0
fi
for p in "${counts[@]}"; do
  for schedule in gpipe 1f1b; do
    for m in 4 8 16; do
      torchrun --standalone --nproc_per_node "$p" bench/pipeline_vs_torch.py torch --layers "$layers" \
        --batch "$batch" --micro-batches "$m" --schedule "$schedule" --dropout 0.2 \
        | tail -n 1 >"$out/torch-pp$p-$schedule-m$m.json"
    done
  done
done
python3 - "$out" "${counts[@]}" <<'PY' | tee "$out/vs-torch.txt"
import json, os, sys
out, counts = sys.argv[1], [int(c) for c in sys.argv[2:]]
print(f"{'stages':>6} {'schedule':<8} {'m':>3} {'gpuscale':>12} {'torch':>12} {'ratio':>7}")
for p in counts:
    for schedule in ("gpipe", "1f1b"):
        for m in (4, 8, 16):
            g = json.load(open(os.path.join(out, f"pp{p}-{schedule}-m{m}.json")))
            ours = g["measurements"][0]["aggregate"]["throughput_items_per_second"]
            theirs = json.load(open(os.path.join(out, f"torch-pp{p}-{schedule}-m{m}.json")))
            t = theirs["samples_per_s"]
            print(f"{p:>6} {schedule:<8} {m:>3} {ours / 1e3:>9.1f} K/s {t / 1e3:>9.1f} K/s "
                  f"{ours / t:>6.2f}x")
PY
