#!/bin/bash
# `gpuscale report TRACE...` on PyTorch profiler (Kineto) traces: a made-up
# two-rank trace whose figures are worked out by hand (docs/traces.md), the
# real ddp_mlp.py traces committed under tests/data/kineto/, every format,
# gpuscale's own --trace files, and the errors (a mix of traces and
# documents, a malformed trace named with its byte offset).
bin=$1
source "$(dirname "$0")/cli_lib.sh"
data="$(dirname "$0")/data/kineto"

# Rank r: gemm [10,50] [60,100], relu [200,220], a copy [320,350], gemm
# [400,410] on stream 7; the all-reduce on stream 20 at 40 (rank 0) or 55.
python3 - "$work" <<'PY'
import json, sys
for rank, nccl in ((0, 40), (1, 55)):
    ev = []
    def x(cat, name, ts, dur, corr, stream=None):
        args = {"correlation": corr}
        if stream is not None:
            args["stream"] = stream
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 1, "ts": ts, "dur": dur, "args": args})
    for corr, ts in ((1, 0), (2, 10), (3, 150), (4, 20), (5, 300), (6, 305)):
        x("cuda_runtime", "cudaLaunchKernel", ts, 5, corr)
    x("kernel", "gemm", 10, 40, 1, 7)
    x("kernel", "gemm", 60, 40, 2, 7)
    x("kernel", "relu", 200, 20, 3, 7)
    x("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", nccl, 40, 4, 20)
    x("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 320, 30, 5, 7)
    x("kernel", "gemm", 400, 10, 6, 7)
    doc = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
           "traceEvents": ev}
    json.dump(doc, open(f"{sys.argv[1]}/rank{rank}.json", "w"), indent=1)
PY

expect 0 "Trace analysis: 2 ranks" -- report "$work/rank1.json" "$work/rank0.json"
out=$("$bin" report "$work/rank1.json" "$work/rank0.json" 2>&1)
# Span 400 us, busy 150, idle 250 (62.5%), compute 110 (27.5%), non-compute
# 40 (10%), communication 40 (10%), memory 30 (7.5%), overlap 30/40 (rank 1: 35/40).
echo "$out" | grep -Eq "rank 0 +400 us +150 us +62\.5% +27\.5% +10\.0% +10\.0% +7\.5% +75\.0%" ||
  fail "breakdown of rank 0: $out"
echo "$out" | grep -Eq "rank 1 +.* +87\.5%$" || fail "overlap of rank 1: $out"
# Gaps: host wait 200, kernel wait 10, other 50 of 260.
echo "$out" | grep -Eq "rank 0 +250 us +260 us +76\.9% +3\.8% +19\.2%" || fail "idle split: $out"
echo "$out" | grep -Eq "rank 0 +gemm +compute +3 +90\.0 us +30\.0 us +50\.0%" || fail "top kernel: $out"
echo "$out" | grep -Eq "rank 0 +5 +45\.0 us +50\.0 us" || fail "launch delays: $out"
echo "$out" | grep -q "1 collective: skew mean 15.0 us, median 15.0 us, max 15.0 us (collective 0, rank 1 entered last)" || fail "skew: $out"
echo "$out" | grep -Eq "rank 1 +1 +1 +0 +0$" || fail "rank 1 entered last: $out"

expect 0 "kernel wait when shorter than 5 us" -- report --kernel-wait 5 "$work/rank0.json"
for f in markdown html csv json; do
  expect 0 "" -- report -f $f -o "$work/rep.$f" "$work/rank0.json" "$work/rank1.json"
done
grep -q "^| rank 0 | gemm | compute | 3 |" "$work/rep.markdown" || fail "markdown: $(cat "$work/rep.markdown")"
grep -q "<th>kernel wait</th>" "$work/rep.html" || fail "html"
grep -q '^rank,0,rank 0,.*rank0.json,,,,,,400,150,250,110,40,40,30,75,200,10,50,5,45,' \
  "$work/rep.csv" || fail "csv: $(cat "$work/rep.csv")"
python3 - "$work/rep.json" <<'PY' || fail "json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuscale/trace-report/v1"
r0, r1 = d["ranks"]
assert r0["overlap"] == 0.75 and r1["overlap"] == 0.875, (r0["overlap"], r1["overlap"])
assert r0["idle_us"] == {"host_wait": 200, "kernel_wait": 10, "other": 50}, r0["idle_us"]
assert r0["top_kernels"][0]["name"] == "gemm" and r0["top_kernels"][0]["count"] == 3
assert d["collective_skew"]["max_us"] == 15 and d["collective_skew"]["max_last_rank"] == 1
PY

# Real traces of examples/ddp_mlp.py on H200s (tests/data/kineto/README.md),
# against the figures HTA 0.5.0 gives on the same files
# (bench/trace-vs-hta.sh): every one within 1 percentage point.
hta="m1:0:host_wait:99.03 m1:0:kernel_wait:0.97 m1:0:kernel1:14.29
m2:0:overlap:0.00 m2:0:idle:22.70 m2:0:compute:2.85 m2:0:host_wait:97.54 m2:0:kernel_wait:2.46
m2:0:other_wait:0.00 m2:0:kernel1:96.34 m2:1:idle:96.83 m2:1:compute:3.03 m2:1:host_wait:99.40
m2:1:kernel_wait:0.60 m2:1:kernel1:14.02
m4:0:idle:54.31 m4:0:compute:2.76 m4:0:host_wait:97.90 m4:0:kernel_wait:2.10 m4:0:kernel1:94.05
m4:1:idle:4.02 m4:1:compute:2.89 m4:1:kernel_wait:3.81 m4:1:other_wait:96.19 m4:1:kernel1:97.04
m4:2:idle:96.49 m4:2:host_wait:99.36 m4:2:kernel1:15.07 m4:3:idle:3.85 m4:3:other_wait:96.33
l2:0:overlap:12.84 l2:0:idle:4.03 l2:0:compute:19.92 l2:0:non_compute:76.04 l2:0:host_wait:76.35
l2:0:kernel_wait:4.49 l2:0:other_wait:19.17 l2:0:kernel1:81.37 l2:1:overlap:0.00 l2:1:idle:82.49
l2:1:compute:16.19 l2:1:host_wait:98.96 l2:1:kernel1:11.46"
for set in medium_n1:m1 medium_n2:m2 medium_n4:m4 large_n2:l2; do
  "$bin" report -f json -o "$work/${set#*:}.json" "$data/${set%:*}"/rank*.json ||
    fail "report on $data/${set%:*}"
done
python3 - "$work" $hta <<'PY' || fail "real traces against HTA's figures"
import json, sys
work, bad = sys.argv[1], []
docs = {k: json.load(open(f"{work}/{k}.json")) for k in ("m1", "m2", "m4", "l2")}
for item in sys.argv[2:]:
    key, rank, figure, want = item.split(":")
    r = docs[key]["ranks"][int(rank)]
    t, idle = r["time_us"], r["idle_us"]
    gaps = idle["host_wait"] + idle["kernel_wait"] + idle["other"]
    got = {"overlap": 100 * (r["overlap"] or 0), "idle": 100 * t["idle"] / t["span"],
           "compute": 100 * t["compute"] / t["span"],
           "non_compute": 100 * t["non_compute"] / t["span"],
           "host_wait": 100 * idle["host_wait"] / gaps, "kernel_wait": 100 * idle["kernel_wait"] / gaps,
           "other_wait": 100 * idle["other"] / gaps, "kernel1": 100 * r["top_kernels"][0]["share"]}[figure]
    if abs(got - float(want)) > 1.0:
        bad.append(f"{item}: gpuscale {got:.2f}")
# Medium on 4 GPUs: rank 2's host is late (99% of its idle gaps are host
# wait) and it enters every all-reduce last; the others wait for it.
m4 = docs["m4"]
if [r["entered_last"] for r in m4["ranks"]] != [0, 0, 3, 0]:
    bad.append(f"m4 entered_last {[r['entered_last'] for r in m4['ranks']]}")
if m4["collective_skew"]["max_last_rank"] != 2 or m4["collective_skew"]["collectives"] != 3:
    bad.append(f"m4 skew {m4['collective_skew']}")
# The critical path of every real set runs through a host: the medium
# model's GPU work is short beside its launches (its GPUs idle 96% of the
# span). On 4 GPUs it stays on rank 2, the rank that entered every
# all-reduce last, and its host/launch bound each step.
for key, rank, steps in (("m1", 0, 3), ("m2", 1, 3), ("m4", 2, 3), ("l2", 1, 2)):
    p = docs[key]["critical_path"][0]
    bound = [(s["bound_rank"], s["bound_phase"]) for s in p["steps"]]
    if bound != [(rank, "host_launch")] * steps or p["bound_share"] < 0.8:
        bad.append(f"{key} critical path {bound} {p['bound_share']}")
if docs["l2"]["ranks"][0]["profiler_steps"] != 3 or docs["m1"]["ranks"][0]["gpu_events_outside_steps"] == 0:
    bad.append("profiler steps")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY

# The critical path across 4 ranks (docs/traces.md): a planted slow rank
# (rank 2's gemm takes 300 us, the others' 100) and, in step 2, a late
# host (rank 1 launches 600 us after its GPU ran dry). Steps 1 and 3 are
# bound by rank 2's compute (300 of 373 and 374 us: its gemm; the rest is
# the all-reduce after rank 2 entered it, sgd and launch gaps), step 2 by
# rank 1's host/launch (603 of 774 us).
python3 - "$work" <<'PY'
import json, sys
# Four ranks, three analysed steps (a fourth mark closes them). Per step on
# each rank: gemm on stream 7, then an all-reduce on stream 20 two us after
# it, ending 50 us after the last rank entered; then sgd (20 us) on stream 7
# one us after the all-reduce. The host launches each step 200 us ahead of
# the GPU, except rank 1 in step 2, which launches 600 us after its GPU ran
# dry (and stays 160 us apart from then on). Rank 2's gemm takes 300 us,
# the others' 100.
out = sys.argv[1]
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
ranks = {r: [] for r in range(4)}
corr = [0]
def x(r, cat, name, ts, dur, c=None, stream=None):
    args = {}
    if c is not None: args["correlation"] = c
    if stream is not None: args["stream"] = stream
    ranks[r].append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 1, "ts": ts, "dur": dur, "args": args})
g = 1000.0
last = {r: 0.0 for r in range(4)}
for s in (1, 2, 3, 4):
    host = {r: max(g - 200 + (800 if (r == 1 and s == 2) else 0), last[r] + 160) for r in range(4)}
    last = host
    for r in range(4):
        x(r, "user_annotation", f"ProfilerStep#{s}", host[r], 150)
    if s == 4:
        break
    entries, ends = {}, {}
    for r in range(4):
        h = host[r]
        gemm = max(g + 1, h + 1)
        d = 300 if r == 2 else 100
        x(r, "cpu_op", "aten::linear", h - 1, 10)  # the host's ops: mm inside linear
        x(r, "cpu_op", "aten::mm", h, 8)
        for k, name in enumerate(("cudaLaunchKernel", "cudaLaunchKernel", "cudaLaunchKernel")):
            x(r, "cuda_runtime", name, h + k * 3, 2, c=s * 10 + k)
        x(r, "kernel", "gemm", gemm, d, c=s * 10, stream=7)
        entries[r] = gemm + d + 2
    end = max(entries.values()) + 50
    for r in range(4):
        x(r, "kernel", NCCL, entries[r], end - entries[r], c=s * 10 + 1, stream=20)
        x(r, "kernel", "sgd", end + 1, 20, c=s * 10 + 2, stream=7)
    g = end + 21
for r in range(4):
    doc = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": r, "world_size": 4},
           "traceEvents": ranks[r]}
    json.dump(doc, open(f"{out}/slow{r}.json", "w"))
PY
expect 0 "Over 3 steps \(1.52 ms\), the path spent 40\.8% in rank 2's compute, which bound 2 of the 3 steps" \
  -- report "$work"/slow*.json
expect 0 "2 +774 us +rank 1 host/launch +77.9% " -- report "$work"/slow*.json
"$bin" report -f json -o "$work/path.json" "$work"/slow*.json || fail "report -f json on slow"
python3 - "$work/path.json" <<'PY' || fail "critical path: $(cat "$work/path.json")"
import json, sys
p = json.load(open(sys.argv[1]))["critical_path"]
assert len(p) == 1, p
steps = p[0]["steps"]
got = [(s["step"], s["time_us"], s["bound_rank"], s["bound_phase"], s["crossings"]) for s in steps]
assert got == [(1, 373, 2, "compute", 1), (2, 774, 1, "host_launch", 1),
               (3, 374, 2, "compute", 1)], got
r2 = steps[0]["ranks_us"][2]
assert (r2["compute"], r2["host_launch"], r2["communication"]) == (300, 2, 0), r2
r1 = steps[1]["ranks_us"][1]
assert (r1["compute"], r1["host_launch"], r1["other_wait"]) == (100, 603, 0), r1
assert abs(steps[1]["bound_share"] - 603 / 774) < 1e-12
r = json.load(open(sys.argv[1]))["ranks"][0]["cpu_ops"]
assert (r["events"], r["names"], r["self_us"], r["in_order"]) == (6, 2, 30, True), r
assert [(o["name"], o["self_us"], o["total_us"]) for o in r["top"]] == [
    ("aten::mm", 24, 24), ("aten::linear", 6, 30)], r
# Every step's cells add up to its time.
for s in steps:
    total = sum(v for r in s["ranks_us"] for k, v in r.items() if k != "rank")
    assert abs(total - s["time_us"]) < 1e-9, (s["step"], total)
PY
grep -q '^path,1,rank 1,.*slow1.json,,*2,774,100,0,0,603,0$' <("$bin" report -f csv "$work"/slow*.json) ||
  fail "critical path csv"
expect 0 "<th>ranks on the path</th>" -- report -f html "$work"/slow*.json
# The CPU ops beside the kernels: mm's 8 us inside linear's 10 in each step.
expect 0 "rank 3 +aten::mm +3 +24\.00 us +24\.0 us +8\.00 us +80\.0%" -- report "$work"/slow*.json
expect 0 "rank 3 +aten::linear +3 +6\.00 us +30\.0 us +10\.00 us +20\.0%" -- report "$work"/slow*.json
grep -q '^cpu_op,0,rank 0,.*slow0.json,aten::mm,,3,24,0.8,,*24,,*$' <("$bin" report -f csv "$work"/slow*.json) ||
  fail "cpu ops csv: $("$bin" report -f csv "$work"/slow*.json | grep cpu_op)"

# compare of two trace sets: the kernels by name, per rank. The medium
# model's 3 analysed steps ran one all-reduce each, the large model's 2
# steps two buckets each; its larger layers use other GEMM kernels.
expect 0 "Trace diff: 8 kernels added, 2 removed, 29 changed" -- \
  compare "$data/medium_n2" "$data/large_n2"
expect 0 "changed +ncclDevKernel_AllReduce_Sum_f32_RING_LL.* 3 +4 " -- \
  compare "$data/medium_n2" "$data/large_n2"
expect 0 "Trace diff: 0 kernels added, 0 removed, 0 changed" -- \
  compare "$work/rank0.json" "$work/rank0.json"
"$bin" compare -f json "$work/rank0.json" "$work/rank1.json" > "$work/diff.json" || fail "diff json"
python3 - "$work/diff.json" <<'PY' || fail "diff json: $(cat "$work/diff.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuscale/trace-diff/v1" and d["base_ranks"] == 1
assert (d["added"], d["removed"], d["changed"]) == (0, 0, 0)
gemm = [k for k in d["kernels"] if k["name"] == "gemm"][0]
assert gemm["base_count"] == 3 and gemm["new_us"] == 90, gemm
PY

# Errors: a mix, a malformed trace, options for documents.
"$bin" run mlp --backend cpu --iters 3 --runs 1 --trace "$work/own.json" --out "$work/doc.json" \
  >/dev/null 2>&1 || fail "run mlp --trace"
expect 2 "not both in one report" -- report "$work/rank0.json" "$work/doc.json"
expect 2 "are for result documents, not trace files" -- report --plots "$work" "$work/rank0.json"
expect 2 "option --kernel-wait: only for trace files" -- report --kernel-wait 5 "$work/doc.json"
head -c 300 "$work/rank0.json" > "$work/cut.json"
expect 1 "cut.json: byte 300: the file ends inside" -- report "$work/cut.json"
# ... also from a worker thread among other ranks; a missing file is named.
expect 1 "cut.json: byte 300: the file ends inside" -- report "$work/rank0.json" "$work/cut.json"
expect 1 "cannot open .*/missing.json" -- report "$work/rank0.json" "$work/missing.json"
# gpuscale's own trace goes through the same analysis.
expect 0 "m0 rank 0 +.*backward +compute" -- report "$work/own.json"
# ... its critical path included: one CPU rank computes all the time.
expect 0 "run 0 step 2 +[0-9.]+ ms +m0 rank 0 compute +[5-9][0-9]\.[0-9]%" -- report "$work/own.json"

exit $((failures > 0))
