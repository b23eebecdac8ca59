#!/usr/bin/env bash
# On a GPU node: `gpuscale check` levels 1 and 2, three runs each, with the
# wall time and the per-check split of every run, then the STREAM-triad
# figure per GPU side by side with PyTorch's on the same GPUs in the same
# call (torch a.copy_(b) and a triad a = b + 3 c on 1 GiB arrays), against
# the model's memory bandwidth. Level 2 once more with an injected 20%
# memory slowdown of GPU 1 must fail naming it; with BURN=SECONDS, level 3
# once for that long.
# usage: [BURN=60] bench/check-levels.sh [GPUSCALE_BINARY]; results go to
# $OUT (default ./check-levels).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/gpuscale}
out=${OUT:-check-levels}
mkdir -p "$out"

for level in 1 2; do
  for run in 1 2 3; do
    start=$(date +%s.%N)
    "$bin" check --level "$level" --format json --out "$out/level$level-run$run.json" \
      > "$out/level$level-run$run.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    printf 'level %s run %s: exit %s, wall %.2f s\n' "$level" "$run" "$rc" "$(echo "$end - $start" | bc)"
  done
done
"$bin" check --level 1 > "$out/level1-text.txt" 2>&1
"$bin" check --level 2 > "$out/level2-text.txt" 2>&1
# Each measured value with the model's figure and the fraction it is held to.
grep -E "^level 1:|^(p2p|allreduce) " "$out/level1-text.txt"
grep -E "^level 2:|^(membw|allreduce) " "$out/level2-text.txt"
"$bin" check --level 2 --inject membw:gpu=1,factor=0.8 > "$out/level2-inject.txt" 2>&1
echo "level 2 with membw:gpu=1,factor=0.8: exit $?"
grep -E "^membw|^  investigate: GPU .* memory bandwidth" "$out/level2-inject.txt"

# Level 3 once, short, when asked (BURN=SECONDS): the burn-in's figures.
if [ -n "${BURN:-}" ]; then
  "$bin" check --level 3 --duration "$BURN" --format json --out "$out/level3.json" > "$out/level3.log" 2>&1
  echo "level 3 (--duration $BURN): exit $?"
  python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["check"]
print("level 3: %s in %.1f s" % (c["verdict"], c["elapsed_seconds"]))
for g in c["burn"]["gpus"]:
    print("  GPU %d: %.0f TFLOP/s, %d wrong, power mean %s W, max %s C, SM clock min %s MHz, reasons %s" % (
        g["cuda_device"], g["gemm_tflops"], g["mismatches"], g["power_mean_w"], g["temperature_max_c"],
        g["sm_clock_min_mhz"], g["clock_event_reasons_seen"]))' "$out/level3.json"
fi

python3 - "$out" <<'PY'
import glob, json, sys
out = sys.argv[1]
print("\nper-check split (seconds)")
for path in sorted(glob.glob(out + "/level*-run*.json")):
    c = json.load(open(path))["check"]
    split = ", ".join("%s %.2f" % (k, v) for k, v in c["seconds"].items())
    bad = [f["check"] + ("" if f["gpu"] is None else " of GPU %d" % f["gpu"])
           for f in c["findings"] if f["state"] in ("warn", "fail")]
    print("%s: %s, elapsed %.2f of %g s; %s" % (path.split("/")[-1], c["verdict"],
          c["elapsed_seconds"], c["budget_seconds"], split))
    if bad: print("   flagged:", ", ".join(bad))
PY

# The peer: PyTorch on each GPU, same call, then gpuscale's figures from the
# last level 2 run, with the model's bandwidth from the shipped file.
python3 - "$out/level2-run3.json" <<'PY'
import json, sys
import torch
c = json.load(open(sys.argv[1]))["check"]
# NVML's GPUs by bus id (the last "BB:DD.F" part, as CUDA and NVML differ
# in the domain's width), each with its model's bandwidth.
bus = lambda b: b.lower().split(":", 1)[1] if b.count(":") == 2 else b.lower()
nvml_bus = {g["index"]: bus(g["pci_bus_id"]) for g in c["gpus"]}
spec = {nvml_bus.get(g["gpu"]): (g["figures"] or {}).get("memory_bandwidth_gbs", {}).get("value")
        for g in c["expected"]["gpus"]}
n = 1 << 27  # 1 GiB of doubles per array
def timed(fn, bytes_per, reps=20):
    fn(); torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = []
    for _ in range(5):
        s.record()
        for _ in range(reps): fn()
        e.record(); torch.cuda.synchronize()
        best.append(bytes_per * reps / (s.elapsed_time(e) / 1e3) / 1e9)
    best.sort()
    return best[len(best) // 2]
print("\n%-4s %-14s %12s %12s %12s %10s" % ("GPU", "bus", "gpuscale", "torch copy", "torch triad", "model"))
for g in c["stress"]["gpus"]:
    d = g["cuda_device"]
    torch.cuda.set_device(d)
    a = torch.empty(n, dtype=torch.float64, device=d)
    b = torch.rand(n, dtype=torch.float64, device=d)
    cc = torch.rand(n, dtype=torch.float64, device=d)
    copy = timed(lambda: a.copy_(b), 2 * 8 * n)          # read b, write a
    triad = timed(lambda: torch.add(b, cc, alpha=3.0, out=a), 3 * 8 * n)
    print("%-4d %-14s %12.0f %12.0f %12.0f %10s" % (d, g["pci_bus_id"], g["membw_gbs"] or 0, copy,
          triad, spec.get(bus(g["pci_bus_id"]))))
    del a, b, cc
    torch.cuda.empty_cache()
PY
