#!/usr/bin/env bash
# The node verdict and the machine sections of a suite's report
# (docs/verdict.md), on the committed documents of a real 4 x H200 suite
# (docs/results/2026-11-21-h200x4/threads) and on copies doctored into the
# cases a health check must catch: a link at half its figure, a GPU 20%
# below the median, a pair with fewer NVLinks, a thermal slowdown,
# uncorrected ECC errors, a PCIe pair well below its peers, a power cap
# with the clock held (pass) or fallen (warn); and a machine
# with one GPU. Golden files in tests/data/report/golden/verdict_*
# (GS_UPDATE_GOLDEN=1 rewrites them; review the diff). $1 is the binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
suite="$root/docs/results/2026-11-21-h200x4/threads"

# verdict_golden NAME CODE DIR ARGS...: `gpuscale ARGS` run in DIR (file
# names relative) exits CODE and prints golden/NAME exactly.
verdict_golden() {
  local name=$1 code=$2 dir=$3
  shift 3
  (cd "$dir" && "$bin" "$@") >"$work/out" 2>"$work/err"
  local rc=$?
  [ "$rc" = "$code" ] || fail "gpuscale $* exited $rc, expected $code: $(cat "$work/err")"
  golden_file "$name" "$work/out" "gpuscale $*"
}

# The verdict section of a text report on standard input: from its heading
# to the blank line after its table.
verdict_section() {
  awk '/^Node verdict/ {on = 1} on {print; if ($0 == "") blank++; if (blank == 2) exit}'
}

# ---- the real suite: inventory, topology, p2p matrices; the verdict --------
mkdir -p "$work/real"
cp "$suite"/*.json "$work/real/"
verdict_golden verdict_machine.txt 0 "$work/real" report info.json p2p.json
verdict_golden verdict_machine.md 0 "$work/real" report --format markdown info.json p2p.json
(cd "$work/real" && "$bin" report info.json p2p.json coll.json fuse.json llm.json mlp.json \
  resample.json voxelize.json) >"$work/real.txt" 2>"$work/err" ||
  fail "report of the real suite exited $?: $(cat "$work/err")"
verdict_section <"$work/real.txt" >"$work/real.verdict"
golden_file verdict_pass.txt "$work/real.verdict" "the verdict of the real suite"
# Every format gives each per-GPU row the same words, its interval
# included: the JSON's details appear verbatim in the text, Markdown and
# HTML reports of the same files.
real=(info.json p2p.json coll.json fuse.json llm.json mlp.json resample.json voxelize.json)
for f in json markdown html; do
  (cd "$work/real" && "$bin" report --format "$f" "${real[@]}") >"$work/real.$f" 2>/dev/null ||
    fail "report --format $f of the real suite exited $?"
done
python3 - "$work/real.json" "$work/real.verdict" "$work/real.markdown" "$work/real.html" <<'PY' ||
import html, json, re, sys
checks = json.load(open(sys.argv[1]))["node_verdict"]["checks"]
rows = [c for c in checks if c["check"].startswith("throughput ") and c["state"] != "n/a"]
assert len(rows) == 5, rows
texts = [open(p).read() for p in sys.argv[2:]]
texts[2] = html.unescape(texts[2])
for c in rows:
    assert re.search(r"\d\.\d\dx \[(\d\.\d\d, \d\.\d\d|-)\] of it", c["detail"]), c
    for path, t in zip(sys.argv[2:], texts):
        assert c["detail"] in t, (path, c["detail"])
fuse = [c for c in rows if c["check"] == "throughput fuse"][0]
assert "0.93x [0.92, 0.95] of it" in fuse["detail"], fuse
PY
  fail "the per-GPU rows differ between formats: see above"
grep -q "^Node verdict of vm: warn$" "$work/real.verdict" ||
  fail "the real suite's verdict is not warn (fuse's GPU 3 is 6.8% off): $(head -1 "$work/real.verdict")"
# --expect-gpus: the count is checked; a wrong one fails, exit 5, and the
# report is still written.
expect 0 "GPUs present +pass +4 GPUs found by CUDA, as expected" -- report --expect-gpus 4 \
  "$work/real/info.json"
expect 5 "node verdict: fail \\(GPUs present\\)" -- report --expect-gpus 8 \
  "$work/real/info.json" -o "$work/expect8.txt"
grep -qE "GPUs present +fail +4 GPUs found by CUDA, 8 expected" "$work/expect8.txt" ||
  fail "report --expect-gpus 8 did not write the failed check into its report"
expect 2 "option --expect-gpus" -- report --expect-gpus 0 "$work/real/info.json"

# ---- doctored: each fault a health check must catch -----------------------
mkdir -p "$work/bad"
cp "$suite"/{info,p2p,coll,mlp}.json "$work/bad/"
python3 - "$work/bad" <<'PY' || fail "doctoring the documents failed"
import json, sys
d = sys.argv[1]
def load(name): return json.load(open(f"{d}/{name}"))
def save(name, doc): json.dump(doc, open(f"{d}/{name}", "w"), indent=1)
# The copy engines from GPU 1 to GPU 2 at half their figure.
p2p = load("p2p.json")
test = next(t for t in p2p["p2p"]["tests"] if t["name"] == "ce_unidir_p2p")
cell = test["cells"][1][2]
for key in ("median", "min", "max"):
    cell[key] /= 2
cell["samples"] = [x / 2 for x in cell["samples"]]
save("p2p.json", p2p)
# GPU 0 - GPU 3 with 9 of its 18 NVLinks (the rate follows the links).
info = load("info.json")
topo = info["environment"]["topology"]
for a, b in ((0, 3), (3, 0)):
    topo["links"][a][b] = "NV9"
    topo["nvlink_bandwidth_bytes_per_s"][a][b] = 225e9
save("info.json", info)
# mlp at 4 GPUs: rank 3 (GPU 3) takes 1.25x as long, 20% below the others
# (19.5% below the median GPU); GPU 2 reported a thermal slowdown, GPU 1
# uncorrected ECC errors.
mlp = load("mlp.json")
m = next(x for x in mlp["measurements"] if x["world_size"] == 4)
for run in m["runs"]:
    rank = run["ranks"][3]
    for key in ("device_seconds", "wall_seconds"):
        rank[key] = [None if x is None else 1.25 * x for x in rank[key]]
m["telemetry"]["ranks"][2]["throttle_reasons"] = ["gpu_idle", "hw_thermal_slowdown"]
# GPU 1 counted two uncorrected ECC errors, the others none.
for k, rank in enumerate(m["telemetry"]["ranks"]):
    rank["ecc_errors"] = {"corrected": 0, "uncorrected": 2 if k == 1 else 0}
save("mlp.json", mlp)
PY
(cd "$work/bad" && "$bin" report info.json p2p.json coll.json mlp.json) >"$work/bad.txt" \
  2>"$work/bad.err"
rc=$?
[ "$rc" = 5 ] || fail "report of the doctored suite exited $rc, expected 5"
grep -q "node verdict: fail (links, p2p bandwidth, throughput mlp, throttling, ECC errors)" "$work/bad.err" ||
  fail "the error does not name the failed checks: $(cat "$work/bad.err")"
verdict_section <"$work/bad.txt" >"$work/bad.verdict"
golden_file verdict_fail.txt "$work/bad.verdict" "the verdict of the doctored suite"
# The same verdict in JSON, with the same thresholds.
(cd "$work/bad" && "$bin" report --format json info.json p2p.json coll.json mlp.json) \
  >"$work/bad.json" 2>/dev/null
python3 - "$work/bad.json" <<'PY' || fail "the JSON node verdict is wrong"
import json, sys
v = json.load(open(sys.argv[1]))["node_verdict"]
assert v["verdict"] == "fail", v["verdict"]
states = {c["check"]: c["state"] for c in v["checks"]}
for name in ("links", "p2p bandwidth", "throughput mlp", "throttling", "ECC errors"):
    assert states[name] == "fail", (name, states[name])
for name in ("GPUs present", "GPUs identical", "allreduce busbw", "measurements"):
    assert states[name] == "pass", (name, states[name])
detail = {c["check"]: c["detail"] for c in v["checks"]}
assert "GPU 1 -> GPU 2: 198 GB/s, 44% of 450 GB/s NV18" in detail["p2p bandwidth"], detail
assert "GPU 3 (rank 3) is -19.5%" in detail["throughput mlp"], detail
PY

# ---- power cap against sickness (docs/verdict.md, "throttling") ------------
# GPU 0 of mlp at 4 GPUs doctored three ways: at its software power cap
# with the SM clock held at 90% of its 1980 MHz (a healthy GPU at its
# limit: pass); at the cap with the clock down to 50% (warn); busy (95%)
# at 50% of its clock with no cap named (warn); a hardware slowdown (fail).
for case in held:pass:sw_power_cap:0.9:15 low:warn:sw_power_cap:0.5:15 \
            slow:warn:none:0.5:95 hw:fail:hw_slowdown:0.9:95; do
  IFS=: read -r name state reason share util <<<"$case"
  mkdir -p "$work/cap-$name"
  cp "$suite"/{info,mlp}.json "$work/cap-$name/"
  python3 - "$work/cap-$name/mlp.json" "$reason" "$share" "$util" <<'PY' || fail "doctoring cap-$name"
import json, sys
path, reason, share, util = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
doc = json.load(open(path))
m = next(x for x in doc["measurements"] if x["world_size"] == 4)
rank = m["telemetry"]["ranks"][0]
rank["throttle_reasons"] = [] if reason == "none" else [reason]
rank["sm_clock_mhz"] = {"min": 1980 * share, "mean": 1980 * share, "max": 1980}
rank["utilization_percent"] = {"min": 0, "mean": util, "max": 100}
json.dump(doc, open(path, "w"))
PY
  (cd "$work/cap-$name" && "$bin" report info.json mlp.json) >"$work/cap-$name.txt" 2>/dev/null
  grep -Eq "^  throttling +$state " "$work/cap-$name.txt" ||
    fail "cap-$name: throttling is not $state: $(grep throttling "$work/cap-$name.txt")"
done
grep -q "at the software power cap with the clock held (mlp at 4 GPUs: GPU 0 held its SM clock at 90% of its 1980 MHz)" \
  "$work/cap-held.txt" || fail "cap-held: the held clock is not named: $(grep throttling "$work/cap-held.txt")"
grep -q "reported sw_power_cap with its SM clock down to 50% of its 1980 MHz" "$work/cap-low.txt" ||
  fail "cap-low: the fallen clock is not named: $(grep throttling "$work/cap-low.txt")"
grep -q "ran 95% busy at an SM clock of 50% of its 1980 MHz with no power cap reported" \
  "$work/cap-slow.txt" || fail "cap-slow: $(grep throttling "$work/cap-slow.txt")"

# ---- PCIe: no theoretical figure, pairs held against their peers -----------
mkdir -p "$work/pcie"
cp "$suite"/{info,p2p,coll}.json "$work/pcie/"
python3 - "$work/pcie" <<'PY' || fail "making the PCIe documents failed"
import json, sys
d = sys.argv[1]
# The same four GPUs over PCIe: GPUs 0-1 and 2-3 behind one switch (PIX),
# the others across the sockets (SYS); copies at 50 GB/s (PIX) and 40 GB/s
# (SYS), GPU 3 -> GPU 0 at 28 GB/s; no NVLink figure anywhere.
info = json.load(open(f"{d}/info.json"))
p2p = json.load(open(f"{d}/p2p.json"))
coll = json.load(open(f"{d}/coll.json"))
test = next(t for t in p2p["p2p"]["tests"] if t["name"] == "ce_unidir_p2p")
for doc in (info, p2p, coll):
    topo = doc["environment"]["topology"]
    for a in range(4):
        for b in range(4):
            if a == b:
                continue
            topo["links"][a][b] = "PIX" if a // 2 == b // 2 else "SYS"
            topo["nvlink_bandwidth_bytes_per_s"][a][b] = 0
for a in range(4):
    for b in range(4):
        if a == b:
            continue
        rate = 28e9 if (a, b) == (3, 0) else 50e9 if a // 2 == b // 2 else 40e9
        cell = test["cells"][a][b]
        cell["median"] = cell["min"] = cell["max"] = rate
        cell["samples"] = [rate]
for m in coll["measurements"]:  # a slow bus, its figures consistent
    m["collective"]["busbw_bytes_per_second"] /= 10
    m["collective"]["algbw_bytes_per_second"] /= 10
    m["collective"]["time_seconds"] *= 10
for name, doc in (("info", info), ("p2p", p2p), ("coll", coll)):
    json.dump(doc, open(f"{d}/{name}.json", "w"), indent=1)
PY
(cd "$work/pcie" && "$bin" report info.json p2p.json coll.json) >"$work/pcie.txt" 2>"$work/pcie.err"
rc=$?
[ "$rc" = 5 ] || fail "report of the PCIe machine exited $rc, expected 5"
verdict_section <"$work/pcie.txt" >"$work/pcie.verdict"
golden_file verdict_pcie.txt "$work/pcie.verdict" "the PCIe verdict"

# ---- one GPU: the checks between GPUs say why they do not apply ------------
mkdir -p "$work/one"
python3 - "$suite" "$work/one" <<'PY' || fail "making the one-GPU documents failed"
import json, sys
src, dst = sys.argv[1], sys.argv[2]
info = json.load(open(f"{src}/info.json"))
env = info["environment"]
env["gpus"] = env["gpus"][:1]
for key in ("links", "peer_access", "nvlink_bandwidth_bytes_per_s"):
    env["topology"][key] = [env["topology"][key][0][:1]]
json.dump(info, open(f"{dst}/info.json", "w"), indent=1)
mlp = json.load(open(f"{src}/mlp.json"))
mlp["measurements"] = [m for m in mlp["measurements"] if m["world_size"] == 1]
json.dump(mlp, open(f"{dst}/mlp.json", "w"), indent=1)
PY
(cd "$work/one" && "$bin" report info.json mlp.json) >"$work/one.txt" 2>"$work/one.err" ||
  fail "report of one GPU exited $?: $(cat "$work/one.err")"
verdict_section <"$work/one.txt" >"$work/one.verdict"
golden_file verdict_one_gpu.txt "$work/one.verdict" "the one-GPU verdict"

# No info document: no verdict, and the report says nothing of one.
(cd "$work/real" && "$bin" report mlp.json) >"$work/plain.txt" 2>&1 || fail "report mlp.json"
grep -q "Node verdict" "$work/plain.txt" && fail "a report without info.json shows a node verdict"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "node verdict: all cases as expected"
