#!/usr/bin/env bash
# `gpuscale compare X X` over every result document in docs/results
# (results.tar.gz archives unpacked) and tests/data: each exits 0 and
# reports no regression and no improvement, because the one series identity
# pairs every measurement with itself. Files that are not gpuscale result
# documents are skipped with the reason; documents that `gpuscale report`
# rejects (broken on purpose) must be rejected by compare too (exit 1).
# Then figures of ingested documents (no raw samples): a halved busbw and
# a LoadGen samples/s drop are regressions (exit 3). $1 is the binary.
set -u
bin=$1
root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/cli_lib.sh"

mkdir -p "$work/tar"
while IFS= read -r -d '' archive; do
  mkdir -p "$work/tar/$(basename "$(dirname "$archive")")"
  tar xzf "$archive" -C "$work/tar/$(basename "$(dirname "$archive")")" ||
    fail "cannot unpack $archive"
done < <(find "$root/docs/results" -name '*.tar.gz' -print0)

compared=0
while IFS= read -r -d '' f; do
  if ! grep -q '"gpuscale/result/v1"' "$f"; then
    echo "skip: ${f#"$root"/}: not a gpuscale/result/v1 document"
    continue
  fi
  if ! "$bin" report "$f" >/dev/null 2>&1; then
    echo "skip: ${f#"$root"/}: gpuscale report rejects it (invalid on purpose)"
    out=$("$bin" compare "$f" "$f" 2>&1)
    rc=$?
    [ "$rc" = 1 ] || fail "compare of invalid $f with itself exited $rc, expected 1: $out"
    continue
  fi
  out=$("$bin" compare "$f" "$f" 2>&1)
  rc=$?
  compared=$((compared + 1))
  [ "$rc" = 0 ] || fail "compare $f $f exited $rc: $(tail -3 <<<"$out")"
  if grep -qE "  (regression|improvement)$" <<<"$out"; then
    fail "compare $f $f reports a change: $(grep -E "  (regression|improvement)$" <<<"$out" | head -3)"
  fi
  grep -q "no significant regression" <<<"$out" || fail "compare $f $f: no summary line: $out"
done < <(find "$root/docs/results" "$root/tests/data" "$work/tar" -name '*.json' -print0 | sort -z)
[ "$compared" -ge 30 ] || fail "only $compared documents compared"
echo "compared $compared documents with themselves"

# Figures without samples: relative threshold, no significance test.
ing=$root/tests/data/ingest
rep=$root/tests/data/report
expect 3 "16 MiB float sum in-place busbw .* -50.00% .* regression" -- \
  compare "$ing/expected/nccl-all-reduce-text.json" "$rep/nccl_busbw_half.json"
expect 3 "no significance test was possible" -- \
  compare "$ing/expected/nccl-all-reduce-text.json" "$rep/nccl_busbw_half.json"
expect 0 "within threshold" -- compare --figure-threshold 60 \
  "$ing/expected/nccl-all-reduce-text.json" "$rep/nccl_busbw_half.json"
expect 3 "throughput .* -20.00% .* regression" -- \
  compare "$ing/expected/mlperf-offline.json" "$rep/mlperf_slower.json"
expect 0 "improvement" -- compare "$rep/mlperf_slower.json" "$ing/expected/mlperf-offline.json"
expect 2 "option --figure-threshold" -- compare --figure-threshold x "$rep/strong.json" "$rep/strong.json"
# A real nccl-tests output, ingested here, against itself and the edited copy.
"$bin" ingest nccl-tests "$ing/nccl-tests/all_reduce_2gpu.txt" -q -o "$work/nccl.json" >"$work/log" 2>&1 ||
  fail "ingest failed: $(cat "$work/log")"
expect 0 "no significant regression" -- compare "$work/nccl.json" "$work/nccl.json"
expect 3 "1 significant regression" -- compare "$work/nccl.json" "$rep/nccl_busbw_half.json"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
