#!/usr/bin/env bash
# How long `gpuscale predict` takes for 1000 GPU counts of every workload of
# the committed 4-GPU results (voxelize, mlp, llm with their coll document),
# as JSON: the fastest of RUNS runs with one count and with 1000 counts
# (8, 16, ..., 8000 over nodes of 8), and their difference, which is the
# prediction itself (reading the documents is the same in both).
# Usage: bench/predict-speed.sh [GPUSCALE] [RUNS]  (defaults build/gpuscale, 7)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/gpuscale}
runs=${2:-7}
dir=docs/results/2026-11-21-h200x4/threads
files=("$dir/voxelize.json" "$dir/mlp.json" "$dir/llm.json" "$dir/coll.json")
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# fastest COUNTS: the fastest wall time in ms of RUNS predictions of COUNTS.
fastest() {
  local best=""
  for _ in $(seq "$runs"); do
    local t0 t1 ms
    t0=$(date +%s%N)
    "$bin" predict --ngpus "$1" --gpus-per-node 8 --format json -o "$out" "${files[@]}"
    t1=$(date +%s%N)
    ms=$(( (t1 - t0) / 1000 ))
    if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
  done
  echo "$best"
}

one=$(fastest 8)
many=$(fastest 8-8000:8)
points=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(len(w["predictions"]) for w in d["workloads"]))' "$out")
awk -v one="$one" -v many="$many" -v points="$points" 'BEGIN {
  printf "one count:   %.1f ms (reading the documents, fitting, one prediction per workload)\n", one / 1000
  printf "1000 counts: %.1f ms (%d predictions)\n", many / 1000, points
  printf "prediction over 1000 counts for all workloads: %.1f ms\n", (many - one) / 1000
}'
