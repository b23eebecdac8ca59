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
# timed CMD...: runs it, prints wall time, CPU time (user + system of all
# threads) and peak resident memory.
timed() {
  /usr/bin/time -f '%e %U %S %M' -o "$dir/time" "$@"
  awk '{printf "wall %6.3f s, cpu %6.3f s, max RSS %5.0f MB", $1, $2 + $3, $4 / 1024}' "$dir/time"
}
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for fmt in text json csv; do
  printf '%-5s ' "$fmt"
  timed "$bin" report -f "$fmt" -o "$dir/out.$fmt" "$dir"/doc*.json
  printf '  (%s of output)\n' "$(du -h "$dir/out.$fmt" | cut -f1)"
done
# The peer: Python's json module parsing the same files (no analysis at all).
printf 'peer: python3 json.load of the same files: '
timed python3 -c 'import json, sys; [json.load(open(f)) for f in sys.argv[1:]]' "$dir"/doc*.json
echo
