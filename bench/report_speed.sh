#!/usr/bin/env bash
# Speed of `gpuscale report` and `gpuscale compare` over many large
# documents: 100 result documents of 10^5 timing samples each
# (bench/report_speed.py), reported in every format, and compared as two
# directories of 50 (doc i against doc i+4: the same rank count);
# prints wall time, CPU time and peak memory of each. Target: report and
# compare under 2 s on the 2-core development machine. Usage:
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
for fmt in text markdown html json csv; do
  printf '%-12s ' "$fmt"
  timed "$bin" report -f "$fmt" -o "$dir/out.$fmt" "$dir"/doc*.json
  printf '  (%s of output)\n' "$(du -h "$dir/out.$fmt" | cut -f1)"
done
printf '%-12s ' "csv --samples"
timed "$bin" report -f csv --samples -o "$dir/out.samples.csv" "$dir"/doc*.json
printf '  (%s of output)\n' "$(du -h "$dir/out.samples.csv" | cut -f1)"
# compare: the 100 documents as two directories of 50 (doc i in BASE, doc
# i + 4 in NEW where i / 4 is even: the same rank counts), in one run; then
# one pair of documents alone. Exit 3 (the documents differ by seeded
# noise) is expected.
mkdir -p "$dir/base" "$dir/new"
for ((i = 0; i < docs; i++)); do
  side=new
  (((i / 4) % 2 == 0)) && side=base
  ln -s "$(printf '%s/doc%03d.json' "$dir" "$i")" "$dir/$side/"
done
printf '%-12s ' "compare dirs"
timed "$bin" compare -o "$dir/compare.txt" "$dir/base" "$dir/new" || true
printf '  (%s metrics compared)\n' "$(grep -cE '(regression|improvement|not significant|within threshold)$' "$dir/compare.txt")"
printf '%-12s ' "compare pair"
timed "$bin" compare -o /dev/null "$dir/doc001.json" "$dir/doc005.json" || true
echo
# The peer: Python's json module parsing the same files (no analysis at all).
printf 'peer: python3 json.load of the same files: '
timed python3 -c 'import json, sys; [json.load(open(f)) for f in sys.argv[1:]]' "$dir"/doc*.json
echo
