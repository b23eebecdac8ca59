#!/usr/bin/env bash
# On a machine with NVIDIA GPUs: the llm serving answers for the default
# llama-8b shape on one node of G GPUs, under MLPerf's Llama-3.1-8B presets
# (conversational: p99 TTFT <= 2 s and TPOT <= 100 ms; interactive: 500 ms
# and 30 ms):
#   1. per preset, every layout (G / T replicas of --tp T) in one sweep with
#      --find-max-rate: the highest Poisson rate meeting the targets at p99,
#      with its bracket, the frontier of tokens/s per user against tokens/s
#      per GPU and the best layout (the terminal's layouts table);
#   2. per preset and layout, a dense sweep of 14 rates from 0.7x to 1.3x
#      the search's answer (--rates), and the dense sweep's highest rate met
#      beside the search's (the issue asks for them within 5%);
#   3. the report of the searches with the frontier's plot (--plots).
# Logs and documents go to $OUT (default ./llm-serving).
#
# Usage: bench/llm-serving.sh [PRESET ...]   (default: conversational interactive)
# Env: GPUS (default: all), BATCH (8), SAMPLES (512 per rate), START (the
#      search's first rate, 16/s), GS_DEPS_PREFIX as for bench/llm-gpu.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-llm-serving}
mkdir -p "$out/results"
build=${GS_BUILD_DIR:-/tmp/gpuscale-llm-build}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
prefix_args=()
if [ -n "${GS_DEPS_PREFIX:-}" ]; then
  prefix_args=(-DCMAKE_PREFIX_PATH="$GS_DEPS_PREFIX/usr")
  export LD_LIBRARY_PATH="$GS_DEPS_PREFIX/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
gpus=${GPUS:-$(nvidia-smi -L | grep -c "^GPU")}
batch=${BATCH:-8}
samples=${SAMPLES:-512}
start=${START:-16}
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(conversational interactive)
common=(-g "$gpus" --scenario server --batch "$batch" --samples "$samples" --dispatch dynamic
        --sample-timeout 60 --no-progress)
{
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    "${prefix_args[@]}" >"$out/cmake.log" || exit 1
  cmake --build "$build" -j "$(nproc)" --target gpuscale 2>&1 | grep -E "error|warning"
  for preset in "${presets[@]}"; do
    echo "== $preset: every layout of $gpus GPUs, --find-max-rate from $start/s"
    timeout 1800 "$build/gpuscale" run llm "${common[@]}" --layouts --find-max-rate --rate "$start" \
      --slo "$preset" -o "$out/results/search-$preset.json"
    # Per layout the search's answer, then 14 rates around it.
    python3 - "$out/results/search-$preset.json" >"$out/results/dense-$preset.plan" <<'PY'
import json, sys
for m in json.load(open(sys.argv[1]))["measurements"]:
    best = m["llm"]["rates"]["search"]["max_rate"]
    if best:
        rates = ",".join("%.4g" % (best * (0.7 + 0.6 * i / 13)) for i in range(14))
        print(m["llm"]["tensor_parallel"], rates)
PY
    while read -r tp rates; do
      echo "== $preset: dense sweep, tp $tp, 14 rates around the search's answer"
      timeout 1800 "$build/gpuscale" run llm "${common[@]}" --tp "$tp" --rates "$rates" \
        --slo "$preset" -o "$out/results/dense-$preset-tp$tp.json" | grep -E "^ +[0-9.]+/s:"
    done <"$out/results/dense-$preset.plan"
  done
  python3 - "$out/results" "${presets[@]}" <<'PY'
import glob, json, sys
d = sys.argv[1]
for preset in sys.argv[2:]:
    search = {m["llm"]["tensor_parallel"]: m for m in
              json.load(open(f"{d}/search-{preset}.json"))["measurements"]}
    print(f"\n== {preset}: the search's highest rate against the dense sweep's")
    for tp, m in sorted(search.items()):
        s = m["llm"]["rates"]["search"]
        line = (f"  tp {tp} x {m['world_size'] // tp}: search {s['max_rate']}/s bracket {s['bracket']}"
                f" in {len(m['llm']['rates']['points'])} rates")
        try:
            dense = json.load(open(f"{d}/dense-{preset}-tp{tp}.json"))["measurements"][0]
        except OSError:
            print(line + "; no dense sweep"); continue
        pts = dense["llm"]["rates"]["points"]
        met = [p["rate"] for p in pts if p["met"]]
        top = max(met) if met else None
        above = min((p["rate"] for p in pts if not p["met"] and top and p["rate"] > top), default=None)
        diff = (s["max_rate"] / top - 1) * 100 if top and s["max_rate"] else float("nan")
        print(line + f"; dense sweep: highest met {top}/s (next {above}), search - dense = {diff:+.1f}%")
        print("    dense: " + ", ".join(f"{p['rate']:.4g}{'' if p['met'] else '!'}" for p in pts)
              + "  (! = missed)")
PY
  echo "== report of the searches (layouts, frontier plot)"
  "$build/gpuscale" report --plots "$out/plots" "$out"/results/search-*.json
} 2>&1 | tee "$out/llm-serving.log"
