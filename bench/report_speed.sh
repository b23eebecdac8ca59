#!/usr/bin/env bash
# Speed of `gpuscale report` over many large documents: 100 result documents
# of 10^5 timing samples each (bench/report_speed.py), reported in every
# format; prints the wall time of each. Target: under 2 s for the text
# report on the 2-core development machine. Usage:
#   bench/report_speed.sh BUILD_DIR [DOCS]
set -euo pipefail
build=${1:?usage: bench/report_speed.sh BUILD_DIR [DOCS]}
docs=${2:-100}
bin=$build/gpuscale
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$(dirname "$0")/report_speed.py" "$dir" "$docs"
echo "input: $docs documents, $(du -sh "$dir" | cut -f1) in all"
# Warm the page cache so the figures measure gpuscale, not the disk.
cat "$dir"/*.json >/dev/null
for fmt in text json csv; do
  start=$(date +%s.%N)
  "$bin" report -f "$fmt" "$dir"/doc*.json >"$dir/out.$fmt"
  end=$(date +%s.%N)
  printf '%-5s %6.3f s  (%s of output)\n' "$fmt" "$(echo "$end - $start" | bc)" \
    "$(du -h "$dir/out.$fmt" | cut -f1)"
done
# The raw parse alone, for comparison: python's json module on the same files.
start=$(date +%s.%N)
python3 -c 'import json, sys; [json.load(open(f)) for f in sys.argv[1:]]' "$dir"/doc*.json
end=$(date +%s.%N)
printf 'peer: python3 json.load of the same files %6.3f s\n' "$(echo "$end - $start" | bc)"
