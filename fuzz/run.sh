#!/usr/bin/env bash
# Fuzzes every ingest parser for a bounded time: fuzz/run.sh BUILD_DIR [SECONDS]
# (default 60 per target). BUILD_DIR was configured with -DGPUSCALE_FUZZ=ON.
# New inputs go to a scratch copy of the corpus, so the corpus kept in the
# repository changes only by hand. A crash leaves its input as
# BUILD_DIR/fuzz/crash-* and makes this script fail.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: fuzz/run.sh BUILD_DIR [SECONDS]}
seconds=${2:-60}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
for name in mlperf_summary mlperf_detail nccl_tests; do
  target="$build/fuzz/fuzz_$name"
  [ -x "$target" ] || { echo "fuzz/run.sh: $target missing (configure with -DGPUSCALE_FUZZ=ON)" >&2; exit 2; }
  dict=fuzz/nccl_tests.dict
  case $name in mlperf_*) dict=fuzz/mlperf.dict ;; esac
  mkdir -p "$scratch/$name"
  echo "fuzz/run.sh: $name for ${seconds}s"
  if ! "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -dict="$dict" -artifact_prefix="$build/fuzz/" -print_final_stats=1 \
      "$scratch/$name" "fuzz/corpus/$name" >"$scratch/$name.log" 2>&1; then
    tail -60 "$scratch/$name.log"
    echo "fuzz/run.sh: $name FAILED (input saved under $build/fuzz/)" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$scratch/$name.log" | tail -2
  fi
done
exit $status
