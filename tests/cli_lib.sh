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
