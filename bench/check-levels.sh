#!/usr/bin/env bash
# On a GPU node, in one call (155 s on 4 x H200 with RUNS=3 BURN=15,
# docs/results/2026-11-27-h200x4-session6; RUNS=1 not timed): `gpuscale check` level 1 three times, level 2 three times and
# level 3 once with a short burn-in (--duration, default 20 s), each run's
# wall time, verdict,
# per-check split and flagged checks, level 2's noise-aware workload
# ratios and NVLink error rates; then the STREAM triad per GPU beside a
# PyTorch peer on the same GPUs (a = b + s c with torch.add on 1 GiB
# float32 tensors, and a.copy_(b), timed with CUDA events) with the ratio.
# usage: [RUNS=3] [BURN=20] [INJECT=1] bench/check-levels.sh [GPUSCALE_BINARY]
#   RUNS: runs of levels 1 and 2 (3: the issue's "3 runs of each level");
#   BURN: level 3's --duration (0 skips level 3); INJECT=1 adds level 2
#   with a 20% memory slowdown of CUDA device 1, which must fail naming it.
# Results go to $OUT (default ./check-levels).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/gpuscale}
out=${OUT:-check-levels}
runs=${RUNS:-3}
burn=${BURN:-20}
mkdir -p "$out"
script_start=$(date +%s.%N)

# run NAME ARGS...: one check into $out/NAME.json, its wall time and exit.
run() {
  local name=$1
  shift
  local start end rc
  start=$(date +%s.%N)
  "$bin" check "$@" --format json --out "$out/$name.json" > "$out/$name.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  printf '%s: exit %s, wall %.2f s\n' "$name" "$rc" "$(echo "$end - $start" | bc)" | tee -a "$out/walls.txt"
}

# A run that writes nothing must not be reported from an earlier call's file.
rm -f "$out"/level*.json "$out"/level*.log
: > "$out/walls.txt"
for level in 1 2; do
  for r in $(seq 1 "$runs"); do run "level$level-run$r" --level "$level"; done
done
[ "$burn" != 0 ] && run level3 --level 3 --duration "$burn"
[ -n "${INJECT:-}" ] && run level2-inject --level 2 --inject membw:gpu=1,factor=0.8

python3 - "$out" <<'PY'
import glob, json, os, re, sys
out = sys.argv[1]
def gpu(f): return "" if f["gpu"] is None else " of GPU %d" % f["gpu"]
# Wall time per level (the runs' spread), from run()'s lines.
walls = {}
for line in open(out + "/walls.txt"):
    name, rest = line.split(": ", 1)
    walls.setdefault(name.split("-run")[0], []).append(float(rest.split("wall ")[1].split(" s")[0]))
print("\nwall time per level")
for level, w in sorted(walls.items()):
    print("%s: %d run(s), %.2f to %.2f s" % (level, len(w), min(w), max(w)))
print("\nper run: verdict, elapsed of budget, per-check split (s)")
for path in sorted(glob.glob(out + "/level*.json")):
    try:
        c = json.load(open(path))["check"]
    except (OSError, ValueError, KeyError) as e:
        print("%s: unreadable (%s); see its .log" % (os.path.basename(path), e))
        continue
    split = ", ".join("%s %.2f" % (k, v) for k, v in c["seconds"].items())
    print("%s: %s, %.2f of %g s; %s" % (os.path.basename(path)[:-5], c["verdict"],
          c["elapsed_seconds"], c["budget_seconds"], split))
    for f in c["findings"]:
        if f["state"] in ("warn", "fail"):
            print("   %s %s%s: %s" % (f["state"], f["check"], gpu(f), f["action"]))
        elif f["check"] == "workloads" and "inconclusive" in f["detail"]:
            print("   inconclusive workloads%s: %s" % (gpu(f), f["detail"]))
    if c["level"] >= 2:
        # "GPU g: replays/recoveries, CRC flit and data errors per second".
        rates = []
        for f in c["findings"]:
            m = f["check"] == "nvlink_errors" and re.search(
                r"(\d+) replays, (\d+) recoveries, (\d+) CRC flit errors \(([\d.]+)/s\), "
                r"(\d+) CRC data errors \(([\d.]+)/s\)", f["detail"])
            if m: rates.append("GPU %d %s/%s, CRC %s/s + %s/s" % (f["gpu"], m[1], m[2], m[4], m[6]))
        if rates: print("   nvlink replays/recoveries, CRC flit + data rates: " + "; ".join(rates))
        for key, row in (c["stress"].get("workload_ratios") or {}).items():
            cells = ["-" if e is None else "%.3f [%s, %s]" % (e["ratio"],
                     "-" if e["low"] is None else "%.3f" % e["low"],
                     "-" if e["high"] is None else "%.3f" % e["high"]) for e in row]
            print("   %s ratio to the median GPU: %s" % (key, ", ".join(cells)))
    if c["level"] >= 3 and c.get("burn"):
        for g in c["burn"]["gpus"]:
            print("   burn GPU %d: %.0f TFLOP/s, %d wrong, power mean %s W, max %s C, SM clock min %s MHz"
                  % (g["cuda_device"], g["gemm_tflops"], g["mismatches"], g["power_mean_w"],
                     g["temperature_max_c"], g["sm_clock_min_mhz"]))
PY

# The peer, same call: PyTorch on each GPU beside gpuscale's triad of the
# last level 2 run, with the model's figure from the shipped file.
python3 - "$out/level2-run$runs.json" <<'PY'
import json, sys
import torch
c = json.load(open(sys.argv[1]))["check"]
# NVML's GPUs by bus id (the "BB:DD.F" part: CUDA and NVML differ in the
# domain's width), each with its model's memory bandwidth.
bus = lambda b: b.lower().split(":", 1)[1] if b.count(":") == 2 else b.lower()
nvml_bus = {g["index"]: bus(g["pci_bus_id"]) for g in c["gpus"]}
spec = {nvml_bus.get(g["gpu"]): ((g["figures"] or {}).get("memory_bandwidth_gbs") or {}).get("value")
        for g in c["expected"]["gpus"]}
n = 1 << 28  # 1 GiB of float32 per tensor

def gbs(fn, bytes_per_op, reps=20, samples=5):
    """Median over `samples` of `reps` back-to-back ops between CUDA events."""
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    got = []
    for _ in range(samples):
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        torch.cuda.synchronize()
        got.append(bytes_per_op * reps / (s.elapsed_time(e) / 1e3) / 1e9)
    got.sort()
    return got[len(got) // 2]

print("\nSTREAM triad per GPU, GB/s (gpuscale: doubles, 3 x 512 MiB; torch: float32, 3 x 1 GiB)")
print("%-4s %-14s %10s %12s %8s %12s %8s" % ("GPU", "bus", "gpuscale", "torch triad", "ratio",
                                            "torch copy", "model"))
for g in c["stress"]["gpus"]:
    d = g["cuda_device"]
    torch.cuda.set_device(d)
    a = torch.empty(n, dtype=torch.float32, device=d)
    b = torch.rand(n, dtype=torch.float32, device=d)
    cc = torch.rand(n, dtype=torch.float32, device=d)
    triad = gbs(lambda: torch.add(b, cc, alpha=3.0, out=a), 3 * 4 * n)  # read b, c; write a
    copy = gbs(lambda: a.copy_(b), 2 * 4 * n)                          # read b; write a
    ours = g["membw_gbs"]
    print("%-4d %-14s %10s %12.0f %8s %12.0f %8s" % (d, g["pci_bus_id"],
          "-" if ours is None else "%.0f" % ours, triad,
          "-" if ours is None else "%.3f" % (ours / triad), copy, spec.get(bus(g["pci_bus_id"]))))
    del a, b, cc
    torch.cuda.empty_cache()
PY

printf '\ntotal wall %.1f s\n' "$(echo "$(date +%s.%N) - $script_start" | bc)"
