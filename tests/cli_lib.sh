# Shared by the CLI test scripts (sourced, not run): a scratch directory,
# a failure counter, and `expect` for a command's exit code and output.
# The sourcing script sets `bin` to the gpuscale binary first.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# need_gpus N: sets gpu_count to the GPUs nvidia-smi lists, or exits 77
# (skipped) saying so when there are fewer than N.
need_gpus() {
  gpu_count=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU") || gpu_count=0
  [ "$gpu_count" -ge "$1" ] && return 0
  if [ "$1" -eq 1 ]; then echo "skipped: needs a GPU, found none"; else
    echo "skipped: needs $1 GPUs, found $gpu_count"; fi
  exit 77
}

# need_mpirun: exits 77 (skipped) without mpirun; exports what Open MPI
# needs here (runs as root, more processes than cores) and keeps the
# sanitizer build from reporting Open MPI's own leaks at MPI_Finalize
# (unloaded plugins cannot be suppressed by name).
need_mpirun() {
  if ! command -v mpirun >/dev/null; then
    echo "skipped: mpirun is not installed (openmpi-bin)"
    exit 77
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
}

# rank_pid RANK: the pid of this test's gpuscale process ($bin, an absolute
# path, with $work on its command line) that the launcher made rank RANK.
rank_pid() {
  local p
  for p in $(pgrep -f -- "$bin"); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$bin" ] || continue
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" &&
      grep -q -- "$work" "/proc/$p/cmdline" 2>/dev/null && { echo "$p"; return 0; }
  done
  return 1
}

# kill_rank_of JOB RANK SECONDS: once launcher rank RANK of background job
# JOB runs, waits SECONDS more, kills it with SIGKILL and waits for JOB;
# sets took to the seconds from the kill to the job's end (fails, with took
# empty, when no process of that rank appeared within 60 s).
kill_rank_of() {
  local job=$1 rank=$2 pid="" i
  took=""
  for i in $(seq 600); do
    pid=$(rank_pid "$rank") && break
    sleep 0.1
  done
  if [ -z "$pid" ]; then
    fail "no process of rank $rank"
    wait "$job"
    return 1
  fi
  sleep "$3"
  local t0=$SECONDS
  kill -KILL "$pid"
  wait "$job"
  took=$((SECONDS - t0))
}

# llm_signalled_early FILE: whether the llm document FILE says a replica
# stopped before its first request: a test's fault came while the job was
# still starting (a loaded machine), so the test sends it again, later.
llm_signalled_early() {
  python3 - "$1" <<'PY'
import json, sys
try:
    ranks = json.load(open(sys.argv[1]))["measurements"][0]["runs"][0]["ranks"]
except (OSError, ValueError, KeyError, IndexError):
    sys.exit(1)
sys.exit(0 if any("before its first request" in (r.get("error") or "") for r in ranks) else 1)
PY
}

# expect CODE PATTERN -- ARGS...: exit code and a pattern in stdout+stderr.
expect() {
  local code=$1 pattern=$2
  shift 3
  local out rc
  out=$("$bin" "$@" 2>&1)
  rc=$?
  [ "$rc" = "$code" ] || fail "gpuscale $* exited $rc, expected $code: $out"
  [ -z "$pattern" ] || grep -qE -- "$pattern" <<<"$out" || fail "gpuscale $*: output lacks /$pattern/: $out"
}

# golden NAME ARGS...: gpuscale ARGS run in tests/data/report (so that file
# names are relative) must print exactly tests/data/report/golden/NAME.
# GS_UPDATE_GOLDEN=1 rewrites the golden file instead (review the diff!).
golden() {
  local name=$1
  shift
  local dir
  dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/data/report" && pwd)
  (cd "$dir" && "$bin" "$@") >"$work/golden.out" 2>"$work/golden.err"
  golden_file "$name" "$work/golden.out" "gpuscale $*"
}

# golden_file NAME FILE WHAT: FILE must equal tests/data/report/golden/NAME
# (WHAT names its source in the failure); GS_UPDATE_GOLDEN=1 rewrites it.
golden_file() {
  local name=$1 file=$2 what=$3
  local dir
  dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/data/report" && pwd)
  if [ "${GS_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$file" "$dir/golden/$name"
  elif ! diff -u "$dir/golden/$name" "$file" >"$work/golden.diff"; then
    fail "$what differs from golden/$name:"
    cat "$work/golden.diff"
  fi
}

# browser_dom BROWSER HTML DOM: the page HTML loaded in headless chromium,
# its rendered DOM into DOM; fails on a browser error or a console message
# (--enable-logging=stderr --v=0 prints them as CONSOLE lines).
browser_dom() {
  local browser=$1 html=$2 dom=$3
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$dom.profile" --enable-logging=stderr --v=0 \
    --dump-dom "file://$html" >"$dom" 2>"$dom.log"
  local rc=$?
  [ "$rc" = 0 ] || fail "chromium exited $rc on $html: $(tail -5 "$dom.log")"
  if grep -E 'CONSOLE|Uncaught|SyntaxError|Failed to load' "$dom.log" >"$dom.console"; then
    fail "console errors while rendering $html: $(cat "$dom.console")"
  fi
}
