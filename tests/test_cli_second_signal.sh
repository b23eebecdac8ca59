#!/usr/bin/env bash
# A second signal while the document is being written: the first SIGINT
# stops a run whose samples make a large document, the second 50 ms later
# lands while it is built or written (SIGTERM: the second sent the moment
# the temp file exists); the process ends at once (killed by the signal),
# leaves no temp file and the old --out, a complete document, is
# byte-identical. $1 is the gpuscale binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

dir="$work/out"
mkdir -p "$dir"
doc="$dir/run.json"
"$bin" run voxelize --backend cpu --points 1000 --grid 8,8,8 -w 0 --runs 1 -n 20 -q -o "$doc" \
  >/dev/null 2>&1 || fail "the first, complete document was not written"
before=$(sha256sum "$doc")

for sig in INT TERM; do
  # Tiny steps on 8 ranks: after 4 s the run holds some 10^5 samples per
  # rank, a document of megabytes that takes a second or more to build and
  # write after the first signal (2.4 s for 6.7 MB on a busy machine).
  "$bin" run voxelize --backend cpu --ranks 8 --points 64 --grid 4,4,4 -w 0 --runs 1 \
    -n 100000000 -q -o "$doc" >"$work/$sig.out" 2>&1 &
  pid=$!
  sleep 4
  kill "-$sig" "$pid"
  if [ "$sig" = INT ]; then
    sleep 0.05
    how="50 ms apart"
  else
    # The second the moment the temp file exists: inside the write itself.
    for i in $(seq 1000); do
      [ -n "$(find "$dir" -name '*.tmp.*' -print -quit)" ] && break
      sleep 0.01
    done
    [ "$i" -lt 1000 ] || fail "SIGTERM: no temp file appeared within 10 s of the first signal"
    how="the second once the temp file existed"
  fi
  kill "-$sig" "$pid" 2>/dev/null
  wait "$pid"
  rc=$?
  echo "SIG$sig twice, $how: exit $rc"
  [ "$rc" -ge 128 ] || fail "SIG$sig twice: exit $rc, expected the signal's (ended at once): $(tail -2 "$work/$sig.out")"
  left=$(find "$dir" -mindepth 1 ! -name run.json -print)
  [ -z "$left" ] || fail "SIG$sig twice left files beside the document: $left"
  [ "$(sha256sum "$doc")" = "$before" ] || fail "SIG$sig twice changed the old document"
done

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all second-signal checks passed"
