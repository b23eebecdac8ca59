#!/usr/bin/env bash
# The report of a whole suite in a real headless browser: `suite` on the CPU
# backend (small and quick) with --expect-gpus 1 must end with the node
# verdict, fail for want of a GPU, exit 5 and still write every document,
# summary.txt and report.md; its documents plus an ingested LoadGen log and
# an ingested nccl-tests output, and the committed 4 x H200 suite (with p2p,
# coll and the topology), rendered as HTML, must load in Debian's chromium
# without console errors and hold the verdict, topology and p2p sections.
# Skips (exit 77) with the reason when chromium is not installed. $1 is the
# gpuscale binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: chromium is not installed (apt-get install chromium; scripts/bootstrap does)"
  exit 77
fi

# ---- the suite: verdict at the end, exit 5 when it fails -------------------
timeout 300 "$bin" suite --backend cpu --ranks 2 --counts 1,2 --min-time 0.01 --runs 1 -q \
  --no-progress --expect-gpus 1 --out "$work/suite" >"$work/suite.out" 2>"$work/suite.err"
rc=$?
[ "$rc" = 5 ] || fail "suite --expect-gpus 1 on the cpu backend exited $rc, expected 5: $(tail -5 "$work/suite.err")"
grep -q "node verdict: fail (GPUs present)" "$work/suite.err" ||
  fail "suite's error does not name the failed check: $(cat "$work/suite.err")"
for f in info.json voxelize.json mlp.json llm.json coll.json summary.txt report.md; do
  [ -s "$work/suite/$f" ] || fail "suite wrote no $f"
done
tail -n 16 "$work/suite.out" >"$work/suite.tail"
grep -q "^Node verdict of .*: fail$" "$work/suite.tail" || fail "suite does not end with the verdict"
grep -qE "^  GPUs present +fail +no GPU in the inventory" "$work/suite.tail" ||
  fail "the verdict lacks the failed GPU check"
grep -qE "^  throughput per GPU +n/a +cpu backend" "$work/suite.tail" ||
  fail "the cpu backend's throughput check is not 'not applicable' with its reason"
grep -q "^## Node verdict of .*: fail" "$work/suite/report.md" || fail "report.md lacks the verdict"
# The report covers every document the suite wrote, however many there are.
for f in "$work/suite"/*.json; do
  grep -q "^Files: .*\`$f\`" "$work/suite/report.md" || fail "report.md leaves out $f"
done
grep -q "^Node verdict of .*: fail" "$work/suite/summary.txt" || fail "summary.txt lacks the verdict"
# report over the same documents: the same verdict, the same exit.
expect 5 "node verdict: fail \\(GPUs present\\)" -- report --expect-gpus 1 "$work/suite"/*.json
expect 0 "" -- report "$work/suite"/*.json

# ---- ingested documents beside it -------------------------------------------
ingest="$root/tests/data/ingest"
"$bin" ingest mlperf -q -o "$work/loadgen.json" "$ingest/loadgen/offline-valid/node0" \
  >/dev/null 2>&1 || fail "ingest mlperf failed"
"$bin" ingest nccl-tests -q -o "$work/nccl.json" "$ingest/nccl-tests/all_reduce_2gpu.txt" \
  >/dev/null 2>&1 || fail "ingest nccl-tests failed"

# render NAME FILES...: the HTML report, loaded in chromium; its DOM into NAME.dom.
render() {
  local name=$1
  shift
  "$bin" report -f html -o "$work/$name.html" "$@" 2>"$work/$name.err"
  local rc=$?
  [ "$rc" = 0 ] || fail "html report $name exited $rc: $(cat "$work/$name.err")"
  grep -qE "<script|<link|url\(|(src|href)=['\"][^#]" "$work/$name.html" &&
    fail "$name: the HTML refers to something outside itself"
  browser_dom "$browser" "$work/$name.html" "$work/$name.dom"
}
has() { grep -qF -- "$2" "$1" || fail "the rendered page $1 lacks '$2'"; }

render cpu "$work/suite"/*.json "$work/loadgen.json" "$work/nccl.json"
has "$work/cpu.dom" "<h2>Node verdict of"
has "$work/cpu.dom" "cpu backend (5 workloads): ranks are threads"
has "$work/cpu.dom" "LoadGen (ingested)"
has "$work/cpu.dom" "NCCL 2."
has "$work/cpu.dom" "No GPU."

gpu="$root/docs/results/2026-11-21-h200x4/threads"
render gpu "$gpu"/info.json "$gpu"/p2p.json "$gpu"/coll.json "$gpu"/mlp.json "$gpu"/voxelize.json
has "$work/gpu.dom" "<h2>Node verdict of vm: pass</h2>"
has "$work/gpu.dom" '<td class="pass">pass</td>'
has "$work/gpu.dom" "<h2>Machine vm (info.json)</h2>"
has "$work/gpu.dom" ">NV18</td>"
has "$work/gpu.dom" "<h2>Links measured (p2p.json, status ok)</h2>"
has "$work/gpu.dom" "Latency, SM path: one-way"
has "$work/gpu.dom" '<td class="n">396.6</td>'
# A look for people: GS_SCREENSHOT=FILE keeps a screenshot of the GPU report.
if [ -n "${GS_SCREENSHOT:-}" ]; then
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$work/profile-shot" --window-size=1400,2000 \
    --screenshot="$GS_SCREENSHOT" "file://$work/gpu.html" >/dev/null 2>&1 ||
    fail "chromium could not take the screenshot"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "suite report rendered by $browser without errors"
