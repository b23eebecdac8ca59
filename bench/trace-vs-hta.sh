#!/usr/bin/env bash
# gpuscale's trace analysis beside HTA 0.5.0 (pip install
# holistictraceanalysis==0.5.0) on the same PyTorch profiler traces
# (docs/traces.md, "Checked against HTA").
#
#   bench/trace-vs-hta.sh DIR...          per rank: overlap, idle, compute and
#                                         non-compute shares, idle split, top
#                                         kernel shares side by side; fails when
#                                         one differs by more than 1 point
#   bench/trace-vs-hta.sh --big SRC [MB]  replicates SRC's traces into a set of
#                                         MB megabytes (default 1000) and times
#                                         both tools on it: wall time and peak
#                                         resident memory (/usr/bin/time)
#
# GPUSCALE (default build/gpuscale) names the binary; HTA_MEM_GB (default 12)
# caps HTA's address space in --big, so that a machine shared with others is
# not driven out of memory (HTA then fails, and the table says so).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${GPUSCALE:-build/gpuscale}

if [ "${1:-}" != "--big" ]; then
  [ $# -ge 1 ] || { echo "usage: $0 DIR... | --big SRC [MB]" >&2; exit 2; }
  rc=0
  for dir in "$@"; do python3 bench/trace-vs-hta.py "$bin" "$dir" || rc=1; done
  exit $rc
fi

src=${2:?usage: $0 --big SRC [MB]}
mb=${3:-1000}
big=${BIG_DIR:-$(mktemp -d)}
if ! ls "$big"/*.json >/dev/null 2>&1; then
  python3 bench/trace-vs-hta.py --replicate "$src" "$big" "$mb"
fi
size=$(du -cb "$big"/*.json | tail -1 | cut -f1)
echo "set: $big, $(ls "$big"/*.json | wc -l) files, $((size / 1000000)) MB"

measure() { # LABEL CMD...: wall seconds and peak RSS from GNU time
  local label=$1 log
  shift
  log=$(mktemp)
  if /usr/bin/time -v "$@" >/dev/null 2>"$log"; then status=ok; else status="failed ($(grep -m1 -E 'Error|error|Killed|MemoryError' "$log" | cut -c1-80))"; fi
  local wall rss
  wall=$(grep "Elapsed (wall clock)" "$log" | awk '{print $NF}')
  rss=$(grep "Maximum resident set size" "$log" | awk '{print $NF}')
  printf "%-9s wall %-10s peak RSS %6d MB  %s\n" "$label" "$wall" $((rss / 1024)) "$status"
  rm -f "$log"
}

measure gpuscale "$bin" report -f json -o /dev/null "$big"/*.json
hta_cap=$(( ${HTA_MEM_GB:-12} * 1024 * 1024 ))
measure HTA bash -c "ulimit -v $hta_cap; exec python3 - '$big'" <<'PY'
import logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
a.get_comm_comp_overlap(visualize=False)
a.get_idle_time_breakdown(visualize=False)
a.get_gpu_kernel_breakdown(visualize=False)
try:
    a.get_temporal_breakdown(visualize=False)
except AssertionError:
    pass
PY
