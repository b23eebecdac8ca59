# Shared by the CLI test scripts (sourced, not run): a scratch directory,
# a failure counter, and `expect` for a command's exit code and output.
# The sourcing script sets `bin` to the gpuscale binary first.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

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
  if [ "${GS_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$work/golden.out" "$dir/golden/$name"
  elif ! diff -u "$dir/golden/$name" "$work/golden.out" >"$work/golden.diff"; then
    fail "gpuscale $* differs from golden/$name:"
    cat "$work/golden.diff"
  fi
}
