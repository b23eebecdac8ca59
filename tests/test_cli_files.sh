#!/usr/bin/env bash
# End-to-end tests of how gpuscale writes files: every output (report,
# compare, ingest and info --out, the plots of report --plots) is replaced
# atomically, so a failed write (a full disk, simulated by a 1 KiB file-size
# limit: writes past it fail with EFBIG) leaves the old file byte for byte,
# no temp file behind, exit 1 and a message naming the path; an output that
# cannot be written is found before any input is read, and nothing is
# written; an output that is one of the inputs is refused, and an input
# that is not a regular file (a FIFO) is refused at once. $1 is the
# gpuscale binary.
set -u
bin=$1
tests=$(cd "$(dirname "$0")" && pwd)
strong=$tests/data/report/strong.json
weak=$tests/data/report/weak.json
two=$tests/data/report/two_host.json
nccl=$tests/data/ingest/nccl-tests/all_reduce_2gpu.txt
. "$tests/cli_lib.sh"

# The simulation must really fail writes here; otherwise nothing is tested.
(ulimit -f 1; trap '' XFSZ; head -c 4096 /dev/zero >"$work/probe") 2>/dev/null
if [ "$(wc -c <"$work/probe")" -ge 4096 ]; then
  echo "SKIP: ulimit -f does not limit file writes here"
  exit 77
fi
rm -f "$work/probe"

# limited ARGS...: gpuscale under the 1 KiB limit (SIGXFSZ ignored, so a
# write fails with EFBIG as on a full disk); stdout is discarded, stderr
# kept in $work/limited.err; sets `rc`.
limited() {
  (ulimit -f 1; trap '' XFSZ; exec "$bin" "$@") >/dev/null 2>"$work/limited.err"
  rc=$?
}

# kept_after_failure WHAT PATTERN FILE: the last `limited` run failed with
# exit 1 and PATTERN in its message, FILE equals its saved copy FILE.saved,
# and its directory holds no temp file.
kept_after_failure() {
  local what=$1 pattern=$2 file=$3
  [ "$rc" = 1 ] || fail "$what under a full disk exited $rc, expected 1: $(cat "$work/limited.err")"
  grep -qE -- "$pattern" "$work/limited.err" ||
    fail "$what under a full disk: message lacks /$pattern/: $(cat "$work/limited.err")"
  cmp -s "$file" "$file.saved" || fail "$what under a full disk changed $file"
  no_temp "$what" "$(dirname "$file")"
}

# no_temp WHAT DIR: no temp or probe file is left in DIR.
no_temp() {
  local left
  left=$(find "$2" -maxdepth 1 \( -name '*.tmp.*' -o -name '.gpuscale-probe*' \) -print)
  [ -z "$left" ] || fail "$1 left temp files: $left"
}

# save FILE: keeps a copy as FILE.saved (after checking FILE is over 1 KiB,
# so that writing it again must fail under the limit).
save() {
  [ "$(wc -c <"$1")" -gt 1024 ] || fail "$1 is too small to hit the 1 KiB limit"
  cp "$1" "$1.saved"
}

# report --out
mkdir -p "$work/out"
"$bin" report -f markdown --out "$work/out/r.md" "$strong" "$weak" || fail "report --out failed"
save "$work/out/r.md"
limited report -f markdown --out "$work/out/r.md" "$strong" "$weak"
kept_after_failure "report --out" "cannot write the report to $work/out/r.md: File too large" \
  "$work/out/r.md"

# compare --out
"$bin" compare --out "$work/out/c.txt" "$strong" "$strong" || fail "compare --out failed"
save "$work/out/c.txt"
limited compare --out "$work/out/c.txt" "$strong" "$strong"
kept_after_failure "compare --out" "cannot write the comparison to $work/out/c.txt: File too large" \
  "$work/out/c.txt"

# ingest --out
"$bin" ingest nccl-tests -q --out "$work/out/i.json" "$nccl" || fail "ingest --out failed"
save "$work/out/i.json"
limited ingest nccl-tests -q --out "$work/out/i.json" "$nccl"
kept_after_failure "ingest --out" "cannot write $work/out/i.json: File too large" "$work/out/i.json"

# info --out (a result document)
"$bin" info --format json --out "$work/out/info.json" || fail "info --out failed"
save "$work/out/info.json"
limited info --format json --out "$work/out/info.json"
kept_after_failure "info --out" "cannot write $work/out/info.json: File too large" \
  "$work/out/info.json"

# report --plots DIR: the plots drawn before stay as they were, and the
# private temporary directory is removed.
if "$bin" report --plots "$work/plots" "$two" 2>&1 | grep -q 'as PNG and SVG'; then
  cp -r "$work/plots" "$work/plots.saved"
  mkdir -p "$work/tmp"
  TMPDIR=$work/tmp limited report --plots "$work/plots" "$two"
  [ "$rc" = 1 ] || fail "report --plots under a full disk exited $rc, expected 1"
  grep -qE "cannot write .*: File too large" "$work/limited.err" ||
    fail "report --plots under a full disk: no message naming a path: $(cat "$work/limited.err")"
  diff -r "$work/plots" "$work/plots.saved" >/dev/null || fail "report --plots under a full disk changed the plots"
  no_temp "report --plots" "$work/plots"
  [ -z "$(ls -A "$work/tmp")" ] || fail "report --plots left its temporary directory: $(ls -A "$work/tmp")"

  # gnuplot that writes cut files (it does not always fail on a full disk):
  # no plot in DIR is replaced.
  printf '#!/bin/sh\nsed -n "s/^set output .\\(.*\\).$/\\1/p" "$1" | while read -r f; do\n'\
'  case "$f" in *.svg) printf "<svg><path" >"$f";; *) printf "PNG" >"$f";; esac\ndone\n' >"$work/cut-gnuplot"
  chmod +x "$work/cut-gnuplot"
  GPUSCALE_GNUPLOT=$work/cut-gnuplot expect 1 "gnuplot wrote an incomplete .*-speedup.svg" -- \
    report --plots "$work/plots" "$two"
  diff -r "$work/plots" "$work/plots.saved" >/dev/null || fail "cut gnuplot output replaced the plots"
  # A cut PNG alone is caught too, before any SVG is copied.
  sed -i 's/printf "<svg><path"/printf "<svg><\/svg>"/' "$work/cut-gnuplot"
  GPUSCALE_GNUPLOT=$work/cut-gnuplot expect 1 "gnuplot wrote an incomplete .*\.png" -- \
    report --plots "$work/plots" "$two"
  diff -r "$work/plots" "$work/plots.saved" >/dev/null || fail "a cut PNG let the SVGs be replaced"
  no_temp "report --plots" "$work/plots"
else
  echo "note: gnuplot not available; the --plots cases are not run"
fi

# An output that cannot be written is found first (the input named after
# it does not exist and is never read), with exit 1 and nothing written.
touch "$work/file"
before=$(find "$work" | sort)
expect 1 "option --out: cannot write $work/file/x.md: $work/file is not a directory" -- \
  report --out "$work/file/x.md" "$work/missing.json"
expect 1 "option --out: cannot write $work/file/sub/c.txt: $work/file is not a directory" -- \
  compare --out "$work/file/sub/c.txt" "$work/missing.json" "$work/missing.json"
expect 1 "option --out: cannot write $work/file/i.json" -- \
  ingest nccl-tests --out "$work/file/i.json" "$work/missing.txt"
expect 1 "option --out: cannot write $work/file/info.txt" -- info --out "$work/file/info.txt"
expect 1 "option --plots: cannot write $work/file/plots" -- \
  report --plots "$work/file/plots" "$work/missing.json"
# a directory given as the output file is a usage error
expect 2 "option --out: $work/out is a directory" -- report --out "$work/out" "$work/missing.json"
expect 2 "option --out: $work/out is a directory" -- ingest nccl-tests --out "$work/out" "$nccl"
expect 2 "option --plots: $work/file exists and is not a directory" -- \
  report --plots "$work/file" "$work/missing.json"
after=$(find "$work" | sort)
[ "$before" = "$after" ] || fail "a rejected output wrote something: $(diff <(echo "$before") <(echo "$after"))"

# Missing parent directories are created; a symlink stays a link to the
# file it names; a device is written straight.
"$bin" report --out "$work/new/sub/r.txt" "$strong" >/dev/null || fail "report into a new directory failed"
[ -s "$work/new/sub/r.txt" ] || fail "report did not create $work/new/sub/r.txt"
ln -s sub/r.txt "$work/new/link.txt"
"$bin" report -f csv --out "$work/new/link.txt" "$strong" || fail "report through a symlink failed"
[ -L "$work/new/link.txt" ] || fail "report --out replaced the symlink by a file"
grep -q "^file,measurement,workload" "$work/new/sub/r.txt" || fail "report --out did not write the symlink's target"
"$bin" report --out /dev/null "$strong" || fail "report --out /dev/null failed"
no_temp "report --out" "$work/new/sub"

# An --out that is one of the command's inputs is a usage error (exit 2),
# whatever its spelling (a symlink, ./), and the input stays byte for byte.
cp "$strong" "$work/in.json"
cp "$weak" "$work/in2.json"
cp "$nccl" "$work/in.txt"
mkdir -p "$work/lg"
cp "$tests"/data/ingest/mlperf/offline/node01/* "$work/lg/"
ln -sf in.json "$work/in-link.json"
sum_before=$(cd "$work" && md5sum in.json in2.json in.txt lg/*)
expect 2 "option --out: .*in.json' is also an input" -- report "$work/in.json" --out "$work/in.json"
expect 2 "is also an input" -- report "$work/in2.json" "$work/in.json" --out "$work/in-link.json"
expect 2 "is also an input" -- compare "$work/in.json" "$work/in2.json" --out "$work/./in2.json"
expect 2 "is also an input" -- predict "$work/in.json" --ngpus 8 --out "$work/in.json"
expect 2 "is also an input" -- ingest nccl-tests "$work/in.txt" -o "$work/in.txt"
expect 2 "is the input .*mlperf_log_summary.txt" -- ingest mlperf "$work/lg" -o "$work/lg/mlperf_log_summary.txt"
sum_after=$(cd "$work" && md5sum in.json in2.json in.txt lg/*)
[ "$sum_before" = "$sum_after" ] || fail "a refused --out changed an input"

# Without SIGXFSZ ignored by the caller, a file-size limit is still a write
# error (gpuscale ignores the signal): exit 1, no temp file, no core.
(ulimit -f 1; exec "$bin" report -f json --out "$work/xfsz.json" "$strong") >/dev/null 2>"$work/xfsz.err"
rc=$?
[ "$rc" = 1 ] && grep -q "File too large" "$work/xfsz.err" ||
  fail "a file-size limit without SIGXFSZ ignored: exit $rc: $(cat "$work/xfsz.err")"
no_temp "report under ulimit -f" "$work"

# A symbolic link that loops at --out is refused, and stays a link.
ln -s loop-b "$work/loop-a"
ln -s loop-a "$work/loop-b"
expect 2 "option --out: .*loop-a is a symbolic link that loops" -- report "$strong" --out "$work/loop-a"
[ -L "$work/loop-a" ] || fail "report --out replaced a looping symlink"

# An input that is not a regular file (a FIFO nobody writes) is refused at
# once, not waited for in open().
mkfifo "$work/fifo"
for cmd in "report $work/fifo" "compare $work/fifo $strong" "predict $work/fifo --ngpus 8" \
           "ingest nccl-tests $work/fifo -o $work/fifo.json"; do
  # shellcheck disable=SC2086
  out=$(timeout 1 "$bin" $cmd 2>&1)
  rc=$?
  [ "$rc" != 124 ] || fail "gpuscale $cmd waited on a FIFO for a second"
  [ "$rc" != 0 ] && grep -q "not a regular file" <<<"$out" || fail "gpuscale $cmd: exit $rc: $out"
done

exit $((failures > 0))
