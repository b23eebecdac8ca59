#!/usr/bin/env bash
# `gpuscale check --level 1` on GPUs (docs/check.md, "Level 1's short p2p
# and all-reduce"): a healthy node passes within the 60 s budget; with two
# or more GPUs the short p2p gives one finding per source GPU of the round
# of disjoint pairs (none for a GPU that is only a destination), and the
# 64 MiB all-reduce over every GPU is measured with no wrong element, each
# timed in check.seconds; every measured value's detail names the fraction
# it is held to. Skips (77) without a GPU.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_gpus 1

"$bin" check --level 1 --format json --out "$work/l1.json" >"$work/l1.out" 2>&1
rc=$?
[ "$rc" = 0 ] || fail "check --level 1 exited $rc on a GPU node: $(cat "$work/l1.out")"
python3 - "$work/l1.json" "$gpu_count" <<'PY' || failures=$((failures + 1))
import json, sys
c = json.load(open(sys.argv[1]))["check"]
n = int(sys.argv[2])
def need(cond, what):
    if not cond:
        print("FAIL: l1.json:", what); sys.exit(1)
need(c["level"] == 1 and c["budget_seconds"] == 60 and c["elapsed_seconds"] < 60,
     "level/budget/elapsed %r" % [c["level"], c["budget_seconds"], c["elapsed_seconds"]])
s = c["stress"]
need(s["why"] is None and len(s["gpus"]) == n, "stress ran on %d GPUs: %r" % (n, s["why"]))
f = {(x["check"], x["gpu"]): x for x in c["findings"]}
print("level 1: %.2f s (p2p %.3f s, all-reduce %.3f s)" % (
    c["elapsed_seconds"], c["seconds"]["p2p"], c["seconds"]["allreduce"]))
if n >= 2:
    sources = [s["gpus"][i]["cuda_device"] for i in range(0, n - 1, 2)] + \
              ([s["gpus"][n - 1]["cuda_device"]] if n % 2 else [])
    p2p = sorted(g for (k, g) in f if k == "p2p")
    need(len(p2p) == len(sources), "p2p findings %r for sources %r" % (p2p, sources))
    measured = sum(v is not None for row in s["p2p_gbs"] for v in row)
    need(measured == len(sources), "%d pairs measured, %d expected" % (measured, len(sources)))
    ar = s["allreduce"]
    need(ar["measured"] and ar["error"] is None and ar["wrong"] == 0 and
         [p["bytes"] for p in ar["points"]] == [64 << 20], "allreduce %r" % ar)
    need(c["seconds"]["p2p"] > 0 and c["seconds"]["allreduce"] > 0, "seconds %r" % c["seconds"])
    a = f[("allreduce", None)]
    need(a["state"] == "pass" and a["detail"].startswith("bus bandwidth over %d GPUs: 64 MiB" % n),
         "allreduce finding %r" % a)
    for g in p2p:
        print("  p2p %d: %s" % (g, f[("p2p", g)]["detail"]))
    print("  allreduce: %s" % a["detail"])
    if "NVLink" in a["detail"]:
        need("(warn below 40%" in a["detail"], "allreduce fraction not printed: %r" % a["detail"])
else:
    need(s["allreduce"]["error"] == "one GPU: nothing to reduce", "one GPU: %r" % s["allreduce"])
PY
[ "$failures" = 0 ] && echo "all level 1 GPU checks passed"
exit $((failures > 0))
