#!/usr/bin/env bash
# On a GPU machine: builds gpuscale, runs `gpuscale suite --expect-gpus N`
# (N: the GPUs nvidia-smi lists, or $GS_EXPECT_GPUS) and checks its node verdict
# (docs/verdict.md): it is not "fail", "GPUs present" passes, the NVML
# readings were judged (throttling and ECC not "n/a: no telemetry
# readings"), the checks between GPUs say why they do not apply on one GPU
# and are judged on two or more, `report` over the same files gives the
# same table and exit code, and a wrong --expect-gpus exits 5. Output goes
# to $OUT (default ./verdict-check): suite.txt (the suite's output, ending
# with the verdict), check.txt (this script's findings), report.md. The
# build goes to $GS_BUILD_DIR (default /tmp/gpuscale-build).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-verdict-check}
build=${GS_BUILD_DIR:-/tmp/gpuscale-build}
bin=$build/gpuscale
mkdir -p "$out"
problems=0
problem() { echo "PROBLEM: $*"; problems=$((problems + 1)); }
{
  date -u
  { cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 &&
    cmake --build "$build" -j "$(nproc)" --target gpuscale; } >"$out/build.log" 2>&1 ||
    { echo "build failed: $(tail -5 "$out/build.log")"; exit 1; }
  gpus=${GS_EXPECT_GPUS:-$(nvidia-smi -L | grep -c '^GPU ')}
  echo "== suite --expect-gpus $gpus"
  dir=/tmp/verdict-suite
  rm -rf "$dir"
  timeout 480 "$bin" suite --expect-gpus "$gpus" --out "$dir" --no-progress -q --min-time 0.2 \
    --runs 1 >"$out/suite.txt" 2>"$out/suite.err"
  rc=$?
  cat "$out/suite.err"
  awk '/^Node verdict/ {on = 1} on' "$out/suite.txt" | tee "$out/verdict.txt"
  cp "$dir/report.md" "$out/report.md" 2>/dev/null
  verdict=$(sed -n 's/^Node verdict of .*: //p' "$out/verdict.txt")
  echo "suite exit $rc, verdict '$verdict'"
  case "$verdict" in
    pass | warn) [ "$rc" = 0 ] || problem "verdict $verdict but exit $rc" ;;
    fail) [ "$rc" = 5 ] || problem "verdict fail but exit $rc"
          problem "the node fails its verdict: look at the fail rows above" ;;
    *) problem "no verdict or an unexpected one: '$verdict' (exit $rc)" ;;
  esac
  state() { awk -v c="$1" 'index($0, "  " c " ") == 1 {sub("^  " c " +", ""); print $1; exit}' "$out/verdict.txt"; }
  [ "$(state "GPUs present")" = pass ] || problem "GPUs present is not pass"
  [ "$(state throttling)" != n/a ] || problem "throttling n/a: no NVML readings?"
  echo "ECC errors: $(grep -E '^  ECC errors' "$out/verdict.txt")"
  for c in "GPUs identical" links "p2p bandwidth" "allreduce busbw"; do
    s=$(state "$c")
    if [ "$gpus" -ge 2 ]; then
      [ "$s" != n/a ] || problem "$c n/a with $gpus GPUs"
    else
      [ "$s" = n/a ] || problem "$c is '$s' on one GPU, expected n/a"
    fi
  done
  echo "== report over the same files: the same table and exit"
  "$bin" report --expect-gpus "$gpus" "$dir"/*.json >"$out/report.txt" 2>&1
  rrc=$?
  awk '/^Node verdict/ {on = 1} on {print; if ($0 == "") b++; if (b == 2) exit}' "$out/report.txt" \
    >"$out/report-verdict.txt"
  head -n "$(wc -l <"$out/report-verdict.txt")" "$out/verdict.txt" |
    diff - "$out/report-verdict.txt" || problem "report's verdict differs from suite's"
  [ "$rrc" = "$rc" ] || problem "report exit $rrc, suite exit $rc"
  echo "== a wrong --expect-gpus exits 5"
  "$bin" report --expect-gpus $((gpus + 1)) "$dir"/*.json >/dev/null 2>"$out/wrong.err"
  [ $? = 5 ] || problem "report --expect-gpus $((gpus + 1)) did not exit 5"
  cat "$out/wrong.err"
  echo "== $problems problem(s)"
} 2>&1 | tee "$out/check.txt"
