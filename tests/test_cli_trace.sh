#!/usr/bin/env bash
# End-to-end tests of --trace on the CPU backend (docs/timeline.md): the
# trace of a multi-rank run checked by tests/trace_validate.py (trace event
# format, nesting per lane, one process per rank, phase names, the step
# bound), the result document naming it, the report's timeline table and
# picture, scale/coll/plan traces, and the usage errors.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 runs the trace validator"; exit 77; }
small=(--points 20K --clouds 4 --grid 16 --voxel-size 1)
validate() { python3 "$here/trace_validate.py" "$@" || fail "trace_validate.py $*"; }

# mlp on 2 CPU ranks: 12 timed steps per run, 3 of them traced.
expect 0 "" -- run mlp --ranks 2 --batch 64 --iters 12 --runs 2 --warmup 1 --trace-steps 3 \
  --trace "$work/t.json" --out "$work/r.json" -q
validate "$work/t.json" --steps 3 --ranks 2 --full \
  --expect "run,warmup,cold start,setup,verify,step,lockstep,forward,backward,allreduce gradients,optimizer"
# The bound is a real bound: a smaller one rejects this trace.
python3 "$here/trace_validate.py" "$work/t.json" --steps 2 >/dev/null &&
  fail "the validator accepted steps past a bound of 2"
python3 - "$work/r.json" <<'PY' || fail "the result document does not name its trace"
import json, sys
t = json.load(open(sys.argv[1]))["trace"]
assert t["file"] == "t.json" and t["steps_per_run"] == 3, t
assert t["device_source"].startswith("none"), t
PY

# The report: the idle share per rank in text, the picture in HTML.
expect 0 "Timeline of steps 0-2 of run 0" -- report "$work/r.json"
expect 0 "rank +lanes +compute +communication +exposed +copy +waiting +idle" -- report "$work/r.json"
# The timeline's communication beside the why-not split's exposed part: a
# made-up trace whose device lanes compute [0, 60] and communicate [40, 80]
# of a 100 us step: communication 40%, half of it under compute, exposed 20%.
python3 - "$work/r.json" "$work/ov.json" "$work/ovdoc.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
ev = []
for rank in (0, 1):
    pid = rank + 1
    for tid, lane in ((0, "host"), (1, "GPU 0: stream 7 (CUPTI)"), (2, "GPU 0: stream 20 (CUPTI)")):
        ev.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": lane}})
    for tid, cat, name, ts, dur in ((0, "step", "step", 0, 100), (1, "compute", "gemm", 0, 60),
                                    (2, "communication", "ncclKernel", 40, 40)):
        ev.append({"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                   "args": {"measurement": 0, "rank": rank, "device": 0, "run": 0, "step": 0}})
json.dump({"otherData": {"schema": "gpuscale/trace/v1", "steps_per_run": 1}, "traceEvents": ev},
          open(sys.argv[2], "w"))
doc["trace"]["file"] = "ov.json"
json.dump(doc, open(sys.argv[3], "w"))
PY
expect 0 " 0 +device +60\.0% +40\.0% +20\.0% +0\.0% +0\.0% +20\.0%" -- report "$work/ovdoc.json"
expect 0 "Communication ran 40\.0% of the window \(mean over ranks\), 50\.0% of it under compute; exposed \(no compute beside it\) 20\.0% of the window; the why-not split's exposed communication" \
  -- report "$work/ovdoc.json"
if command -v gnuplot >/dev/null; then
  expect 0 "" -- report "$work/r.json" --format html --out "$work/r.html" --plots "$work/plots"
  [ -s "$work/plots/mlp-n2-timeline.svg" ] && [ -s "$work/plots/mlp-n2-timeline.png" ] ||
    fail "no timeline picture in $work/plots: $(ls "$work/plots")"
  grep -q "timeline at 2 ranks" "$work/r.html" || fail "the HTML report has no timeline picture"
fi
# A trace that went missing is said, not fatal.
mv "$work/t.json" "$work/moved.json"
expect 0 "Timeline: none" -- report "$work/r.json"

# scale: every measurement has its ranks; the trace lies elsewhere than the document.
mkdir -p "$work/scale"
expect 0 "" -- scale voxelize "${small[@]}" --ranks 2 --iters 6 --runs 1 --trace "$work/s.json" \
  --out "$work/scale/s.json" -q
validate "$work/s.json" --steps 5 --full --expect "voxelize,step,lockstep"
python3 - "$work/s.json" "$work/scale/s.json" <<'PY' || fail "scale's trace does not match its document"
import collections, json, sys
trace, doc = (json.load(open(p)) for p in sys.argv[1:])
ranks = collections.defaultdict(set)
for e in trace["traceEvents"]:
    if e["ph"] == "X":
        ranks[e["args"]["measurement"]].add(e["args"]["rank"])
sizes = [m["world_size"] for m in doc["measurements"]]
assert [len(ranks[i]) for i in range(len(sizes))] == sizes, (dict(ranks), sizes)
assert doc["trace"]["file"] == sys.argv[1], doc["trace"]
PY
expect 0 "Timeline of steps 0-4 of run 0" -- report "$work/scale/s.json"

# coll and plan.
expect 0 "" -- coll allreduce --ranks 2 -b 1K -e 2K -n 8 --trace "$work/c.json" \
  --out "$work/cr.json" -q
validate "$work/c.json" --steps 5 --ranks 2 --expect "allreduce,allreduce 1024 B in place"
expect 0 "" -- plan --backend cpu --task '0,1:mlp' --task "2:voxelize ${small[*]}" --iters 6 --runs 1 \
  --trace "$work/p.json" --out "$work/pl.json" -q
validate "$work/p.json" --steps 5 --expect "voxelize,forward,lockstep"

# llm: its batches are the steps; a tensor-parallel replica's all-reduces.
expect 0 "" -- run llm --backend cpu --model tiny --input-min 4 --input-max 10 --output-min 2 \
  --output-max 5 --ranks 2 --tp 2 --samples 8 --trace "$work/l.json" -o "$work/l-doc.json" -q
validate "$work/l.json" --steps 5 --expect "batch,prefill,decode step,tp allreduce"

# A trace that cannot be written costs the measurements nothing.
expect 0 "the trace was not written: .*No space left" -- run voxelize "${small[@]}" --ranks 2 \
  --iters 4 --runs 1 --trace /dev/full --out "$work/full.json"
python3 -c 'import json,sys; sys.exit("trace" in json.load(open(sys.argv[1])))' "$work/full.json" ||
  fail "a document names a trace that was not written"

# Usage: nothing measured, nothing written.
expect 2 "option --trace-steps applies only with --trace" -- run voxelize --ranks 2 --trace-steps 3 \
  --out "$work/u.json"
expect 2 "is the result file too" -- run voxelize --trace "$work/same.json" --out "$work/same.json"
expect 2 "does not apply to gpuscale suite" -- suite --trace "$work/x.json"
expect 2 "option --trace-steps" -- run voxelize --ranks 2 --trace "$work/k.json" --trace-steps 0
echo keep >"$work/keep.json"
expect 2 "" -- run voxelize --ranks 2 --trace "$work/keep.json" --iters 0
[ "$(cat "$work/keep.json")" = keep ] || fail "a refused run replaced an existing trace"
[ ! -e "$work/u.json" ] && [ ! -e "$work/k.json" ] || fail "a refused run wrote a file"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all trace CLI tests passed"
