#!/usr/bin/env bash
# On a machine with NVIDIA GPUs: the llm serving answers for the default
# llama-8b shape on one node of G GPUs, under MLPerf's Llama-3.1-8B presets
# (conversational: p99 TTFT <= 2 s and TPOT <= 100 ms; interactive: 500 ms
# and 30 ms):
#   1. per preset, every layout (G / (T x P) replicas of --tp T --pp P) in one sweep with
#      --find-max-rate: the highest Poisson rate meeting the targets at p99,
#      with its bracket, the frontier of tokens/s per user against tokens/s
#      per GPU and the best layout (the terminal's layouts table);
#   2. per preset and layout, a dense sweep of rates around the search's
#      answer (--rates), and the dense sweep's highest rate met beside the
#      search's (the issue asks for them within 5%);
#   3. the report of the searches and dense sweeps: layouts with the
#      frontier's plot, each rate's table with the percentiles against the
#      rate plotted (--plots).
# Logs and documents go to $OUT (default ./llm-serving).
#
# Full (default): every preset given (conversational and interactive), 512
# requests a rate, 14 dense rates from 0.7x to 1.3x the answer for every
# layout. Tens of minutes on 4 GPUs.
#
# QUICK=1, for a small GPU budget: GPUS=2 unless set, one preset
# (interactive unless given), 4 x GPUS x BATCH requests a rate (at least
# 64), and one dense sweep of 12 rates from 0.8x to 1.25x the answer (4.1%
# apart) for one layout (DENSE_TP with one stage, default 1: G replicas).
# Measured on 4 x H200 (session 8, before the load rule): QUICK=1 GPUS=4
# with both presets, 64 requests a rate, every layout (tp 1, 2, 4; pp 1,
# 2, 4) searched: 350 s with the binary built. The CPU rehearsal below of
# the same steps takes about 15 s on 2 cores (tiny model). Without GS_BIN
# the build comes first (1-2 minutes on 16 cores).
#
# Usage: bench/llm-serving.sh [PRESET ...]
# Env: QUICK (0), GPUS (default: all; 2 with QUICK), BATCH (8), SAMPLES (512
#      per rate; with QUICK 4 x GPUS x BATCH, at least 64), START (the search's first rate, 16/s),
#      DENSE_TP (QUICK: the layout swept densely, 1), GS_BIN (a built
#      gpuscale: no build), GS_DEPS_PREFIX as for bench/llm-gpu.sh,
#      REHEARSE=1 (no GPU: the CPU backend with the tiny model, GPUS CPU
#      ranks, targets scaled to it; checks the script, not the figures).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-llm-serving}
mkdir -p "$out/results"
build=${GS_BUILD_DIR:-/tmp/gpuscale-llm-build}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
quick=${QUICK:-0}
rehearse=${REHEARSE:-0}
prefix_args=()
if [ -n "${GS_DEPS_PREFIX:-}" ]; then
  prefix_args=(-DCMAKE_PREFIX_PATH="$GS_DEPS_PREFIX/usr")
  export LD_LIBRARY_PATH="$GS_DEPS_PREFIX/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
if [ "$quick" = 1 ]; then
  gpus=${GPUS:-2}
  # At least 4 times the requests the layout of one-GPU replicas serves at
  # once (GPUs x batch), so that a rate above what it serves shows in its
  # load (docs/workloads/llm.md, "Rate sweeps and the highest rate").
  samples=${SAMPLES:-$(( 4 * gpus * ${BATCH:-8} > 64 ? 4 * gpus * ${BATCH:-8} : 64 ))}
  dense_n=12 dense_lo=0.8 dense_hi=1.25
else
  gpus=${GPUS:-$([ "$rehearse" = 1 ] && echo 2 || nvidia-smi -L | grep -c "^GPU")}
  samples=${SAMPLES:-512}
  dense_n=14 dense_lo=0.7 dense_hi=1.3
fi
batch=${BATCH:-8}
start=${START:-16}
presets=("$@")
if [ ${#presets[@]} -eq 0 ]; then
  if [ "$quick" = 1 ]; then presets=(interactive); else presets=(conversational interactive); fi
fi
if [ "$rehearse" = 1 ]; then
  # The tiny model serves hundreds of requests a second on the CPU; targets
  # of milliseconds put its threshold inside the search's reach.
  place=(--backend cpu --ranks "$gpus" --model tiny --input-min 4 --input-max 10 --output-min 2
         --output-max 5 --kv-heads 2)
  slo_of() { echo "ttft=40ms,tpot=8ms"; }
  start=${START:-100}
else
  place=(-g "$gpus")
  slo_of() { echo "$1"; }
fi
common=("${place[@]}" --scenario server --batch "$batch" --samples "$samples" --dispatch dynamic
        --sample-timeout 60 --no-progress)
t0=$(date +%s)
{
  if [ -n "${GS_BIN:-}" ]; then
    bin=$GS_BIN
  else
    nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      "${prefix_args[@]}" >"$out/cmake.log" || exit 1
    cmake --build "$build" -j "$(nproc)" --target gpuscale 2>&1 | grep -E "error|warning"
    bin=$build/gpuscale
  fi
  echo "[t+$(($(date +%s) - t0))s] QUICK=$quick, $gpus GPUs, $samples requests a rate, presets ${presets[*]}"
  for preset in "${presets[@]}"; do
    echo "== $preset: every layout of $gpus GPUs, --find-max-rate from $start/s"
    timeout 1800 "$bin" run llm "${common[@]}" --layouts --find-max-rate --rate "$start" \
      --slo "$(slo_of "$preset")" -o "$out/results/search-$preset.json" |
      grep -E "highest rate|layouts of|^ +[0-9]+ +[0-9]+ |best layout"
    echo "[t+$(($(date +%s) - t0))s] searched"
    # Per layout the search's answer, then the dense rates around it.
    python3 - "$out/results/search-$preset.json" "$quick" "${DENSE_TP:-1}" "$dense_n" "$dense_lo" \
      "$dense_hi" >"$out/results/dense-$preset.plan" <<'PY'
import json, sys
doc, quick, dense_tp, n, lo, hi = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), int(sys.argv[4]), \
    float(sys.argv[5]), float(sys.argv[6])
for m in json.load(open(doc))["measurements"]:
    tp = m["llm"]["tensor_parallel"]
    pp = (m["llm"].get("pipeline") or {}).get("stages", 1)
    best = m["llm"]["rates"]["search"]["max_rate"]
    if best and (not quick or (tp, pp) == (dense_tp, 1)):
        print(tp, pp, ",".join("%.4g" % (best * (lo + (hi - lo) * i / (n - 1))) for i in range(n)))
PY
    while read -r tp pp rates; do
      echo "== $preset: dense sweep, tp $tp pp $pp, $dense_n rates from ${dense_lo}x to ${dense_hi}x the search's answer"
      timeout 1800 "$bin" run llm "${common[@]}" --tp "$tp" --pp "$pp" --rates "$rates" \
        --slo "$(slo_of "$preset")" -o "$out/results/dense-$preset-tp$tp-pp$pp.json" | grep -E "^ +[0-9.]+/s:"
      echo "[t+$(($(date +%s) - t0))s] dense sweep of tp $tp pp $pp"
    done <"$out/results/dense-$preset.plan"
  done
  python3 - "$out/results" "${presets[@]}" <<'PY'
import glob, json, sys
d = sys.argv[1]
for preset in sys.argv[2:]:
    search = {(m["llm"]["tensor_parallel"], (m["llm"].get("pipeline") or {}).get("stages", 1)): m
              for m in json.load(open(f"{d}/search-{preset}.json"))["measurements"]}
    print(f"\n== {preset}: the search's highest rate against the dense sweep's")
    for (tp, pp), m in sorted(search.items()):
        s = m["llm"]["rates"]["search"]
        line = (f"  tp {tp} pp {pp} x {m['world_size'] // (tp * pp)}: search {s['max_rate']}/s"
                f" bracket {s['bracket']} in {len(m['llm']['rates']['points'])} rates")
        try:
            dense = json.load(open(f"{d}/dense-{preset}-tp{tp}-pp{pp}.json"))["measurements"][0]
        except OSError:
            print(line + "; no dense sweep"); continue
        pts = sorted(dense["llm"]["rates"]["points"], key=lambda p: p["rate"])
        met = [p["rate"] for p in pts if p["met"]]
        top = max(met) if met else None
        above = min((p["rate"] for p in pts if not p["met"] and top and p["rate"] > top), default=None)
        diff = (s["max_rate"] / top - 1) * 100 if top and s["max_rate"] else float("nan")
        edge = (" (the dense sweep's every rate met: its answer is a lower bound)" if len(met) == len(pts)
                else " (no dense rate met: widen the sweep)" if not met else "")
        print(line + f"; dense sweep of {len(pts)} rates: highest met {top}/s (next {above}),"
              f" search - dense = {diff:+.1f}%{edge}")
        print("    dense: " + ", ".join(f"{p['rate']:.4g}{'' if p['met'] else '!'}" for p in pts)
              + "  (! = missed)")
PY
  echo "== report of the searches and dense sweeps (layouts, rates, plots in $out/plots)"
  "$bin" report --plots "$out/plots" "$out"/results/*.json >"$out/report.txt" &&
    grep -E "Highest rate|Best layout" "$out/report.txt"
  echo "[t+$(($(date +%s) - t0))s] done"
} 2>&1 | tee "$out/llm-serving.log"
