#!/usr/bin/env bash
# End-to-end tests of `gpuscale check --level 1` on a CPU-only machine: with
# no NVML it is not applicable (exit 0, saying why); with the NVML test
# double (tests/nvml_double.c, found through GS_NVML_DOUBLE that CTest sets)
# a healthy node passes and each rehearsed fault is caught by the right
# check, with the right action and exit code (5 fail, 6 warn); the JSON
# document carries the same verdict, findings and passive state.
set -u
bin=$1
export CUDA_VISIBLE_DEVICES=
. "$(dirname "$0")/cli_lib.sh"

[ -n "${GS_NVML_DOUBLE:-}" ] && [ -f "$GS_NVML_DOUBLE" ] ||
  { echo "FAIL: GS_NVML_DOUBLE does not name the built NVML test double"; exit 1; }

# No NVML, no CUDA device: nothing to check.
export GPUSCALE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1
expect 0 "usage: gpuscale check" -- check --help
expect 0 "gpuscale check pairs. localizes a slow rank, link or node" -- check --help
expect 0 "check +node health check" -- --help
expect 0 "not applicable: no GPU: NVML unavailable: .*nonexistent.*; CUDA: " -- check
expect 0 "not applicable" -- check --level 1
expect 5 "inventory.*fail.*0 GPUs seen by NVML.*1 expected" -- check --expect-gpus 1
expect 2 "option --level" -- check --level 4
expect 2 "option --format" -- check --format yaml
expect 2 "unexpected argument 'extra'" -- check extra

export GPUSCALE_NVML_LIBRARY=$GS_NVML_DOUBLE
unset GS_NVML_DOUBLE_FAULTS
export GS_NVML_DOUBLE_GPUS=4

# A healthy node: every check passes or is not applicable, exit 0.
out=$("$bin" check 2>&1); rc=$?
[ "$rc" = 0 ] || fail "healthy check exited $rc: $out"
grep -qE "^gpuscale check --level 1: pass \(23 passed, 0 warned, 0 failed\) in [0-9.]+ s of a 60 s budget" <<<"$out" ||
  fail "healthy check: no pass line with 23 passed: $out"
grep -qE "^time: CUDA and NCCL [0-9.]+ s, NVML [0-9.]+ s, 4 GPUs [0-9.]+ s \(slowest GPU [0-3], [0-9.]+ s\)$" <<<"$out" ||
  fail "healthy check: no time split: $out"
grep -qE "^inventory +- +pass +4 GPUs seen by NVML, 0 usable by CUDA; CUDA not compared" <<<"$out" ||
  fail "healthy check: inventory line: $out"
grep -qE "^nvlink +3 +pass +18 of 18 links up; since boot 0 replays, 0 recoveries, 0 CRC errors" <<<"$out" ||
  fail "healthy check: nvlink line: $out"
grep -qE "^pcie +0 +pass +gen 5 x16 of gen 5 x16$" <<<"$out" || fail "healthy check: pcie line: $out"
grep -qE "^retired_pages +1 +n/a +page retirement not reported" <<<"$out" ||
  fail "healthy check: retired pages should be n/a on the double: $out"
grep -q "^Actions" <<<"$out" && fail "healthy check lists actions: $out"
# Level 1's short p2p and all-reduce need a CUDA device: skipped, saying why.
grep -qE "^stress +- +n/a +no CUDA device: " <<<"$out" || fail "healthy check: stress line: $out"
grep -q "^nvlink_errors" <<<"$out" && fail "level 1 judged NVLink counters under load: $out"
expect 0 "pass" -- check --expect-gpus 4
expect 5 "investigate: 4 GPUs of 8 expected" -- check --expect-gpus 8
# A sleeping link (newer drivers' power saving) is not a link down.
GS_NVML_DOUBLE_FAULTS=nvlink_sleep:0:4 expect 0 "nvlink +0 +pass +18 of 18 links up" -- check
# The software power cap is not a fault.
GS_NVML_DOUBLE_FAULTS=sw_power_cap:1 expect 0 "clocks +1 +pass +clock event reasons 0x5 \(software power cap" -- check

# fault_case FAULTS CODE CHECK GPU ACTION: the fault list gives exit CODE,
# CHECK of GPU is the only non-passing finding, and ACTION is its action.
fault_case() {
  local faults=$1 code=$2 check=$3 gpu=$4 action=$5
  local out rc bad
  out=$(GS_NVML_DOUBLE_FAULTS=$faults "$bin" check 2>&1); rc=$?
  [ "$rc" = "$code" ] || fail "$faults: exited $rc, expected $code: $out"
  grep -qE "^$check +$gpu +(fail|warn) " <<<"$out" || fail "$faults: $check of GPU $gpu not flagged: $out"
  bad=$(grep -cE "^[a-z_]+ +[-0-9]+ +(fail|warn) " <<<"$out")
  [ "$bad" = 1 ] || fail "$faults: $bad findings flagged, expected 1: $out"
  grep -qxF "  $action" <<<"$out" || fail "$faults: no action '$action': $out"
}
fault_case nvlink_down:2:3 5 nvlink 2 "drain: NVLink 3 of GPU 2 down"
fault_case nvlink_down:2:3,nvlink_down:2:7 5 nvlink 2 "drain: NVLinks 3, 7 of GPU 2 down"
fault_case pcie_x8:1 5 pcie 1 "reseat or replace: GPU 1 at PCIe x8 of x16"
fault_case ecc_uncorrected:3:4 5 ecc 3 \
  "drain and reset: 4 uncorrected ECC errors on GPU 3 since the driver loaded"
fault_case remap_pending:0:2 5 row_remap 0 \
  "reset: row remap pending on GPU 0 (2 rows remapped for uncorrectable errors); reset the GPU to apply it"
fault_case remap_failed:2 5 row_remap 2 "replace: row remapping failed on GPU 2 (no spare row left)"
fault_case hw_slowdown:3 5 clocks 3 \
  "investigate cooling and power: GPU 3 in hardware slowdown (hw_slowdown)"
fault_case nvlink_recovery:1:5:12 6 nvlink 1 \
  "investigate: NVLink 5 of GPU 1 recovered from 12 link errors"
# XID events seen during the check: each judged by what it means.
fault_case xid:2:79 5 xid 2 "drain, reseat or replace: GPU 2 reported XID 79 (GPU has fallen off the bus)"
fault_case xid:0:48 5 xid 0 "drain and reset: GPU 0 reported XID 48 (double-bit ECC error)"
fault_case xid:1:13 6 xid 1 \
  "investigate: GPU 1 reported XID 13 (graphics engine exception, often an application fault)"
fault_case xid:3:999 5 xid 3 "investigate: GPU 3 reported XID 999 (see NVIDIA's XID list)"
expect 0 "^xid +- +pass +no XID event in the [0-9.]+ s of the check$" -- check

# The error line names the failed checks; the worst state decides.
GS_NVML_DOUBLE_FAULTS=pcie_x8:1,nvlink_recovery:0:2:1 \
  expect 5 "error: node check failed: pcie of GPU 1$" -- check
GS_NVML_DOUBLE_FAULTS=nvlink_recovery:0:2:1 expect 6 "error: node check warned: nvlink of GPU 0" -- check
# ECC off is not reported, not a fault.
GS_NVML_DOUBLE_FAULTS=no_ecc:0 expect 0 "ecc +0 +n/a +ECC counts not reported" -- check
# A malformed fault list makes the double refuse to initialise: no silent pass.
GS_NVML_DOUBLE_FAULTS=pcie_x8:9 expect 0 "not applicable: no GPU: NVML unavailable: nvmlInit_v2: Invalid Argument" -- check

# A GPU whose driver does not answer cannot hang the prolog: the budget
# ends the check, which fails naming the GPU, well before the hang ends.
start=$(date +%s)
GS_NVML_DOUBLE_FAULTS=hang:1:30 expect 5 "^  drain: no answer from GPU 1 within the 1 s budget$" -- check --budget 1
[ $(( $(date +%s) - start )) -lt 10 ] || fail "check --budget 1 on a hung GPU took $(( $(date +%s) - start )) s"
GS_NVML_DOUBLE_FAULTS=hang:1:30 expect 5 "^budget +- +fail +no answer from GPU 1 within the 1.5 s budget" -- check --budget 1.5
GS_NVML_DOUBLE_FAULTS=hang:1:1 expect 0 "pass .* of a 5 s budget" -- check --budget 5
expect 2 "option --budget" -- check --budget 0

# JSON: the same verdict, findings with actions, the passive state with nulls.
GS_NVML_DOUBLE_FAULTS=nvlink_down:2:3,pcie_x8:1,ecc_uncorrected:3:4,remap_pending:0:2,hw_slowdown:3 \
  "$bin" check --format json --out "$work/check.json" >"$work/json.out" 2>&1
rc=$?
[ "$rc" = 5 ] || fail "check --format json with faults exited $rc: $(cat "$work/json.out")"
python3 - "$work/check.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
c = d["check"]
def need(cond, what):
    if not cond:
        print("FAIL: check.json:", what); sys.exit(1)
need(d["command"] == "check" and d["status"] == "ok", "command/status")
need(d["config"] == {"level": 1, "inject": [], "expect": None, "expect_gpus": None}, "config %r" % d["config"])
need(c["verdict"] == "fail" and c["level"] == 1 and c["budget_seconds"] == 60, "verdict/level/budget")
need(0 <= c["elapsed_seconds"] < 60, "elapsed %r" % c["elapsed_seconds"])
t = c["seconds"]
need(sorted(t) == ["allreduce", "cuda", "gpus", "nvml", "p2p"] and all(v >= 0 for v in t.values()), "seconds %r" % t)
need(c["stress"]["why"].startswith("no CUDA device") and c["stress"]["gpus"] == [] and
     c["stress"]["allreduce"]["measured"] is False, "level 1 stress %r" % c["stress"])
need(c["fractions"]["allreduce_warn_of_nvlink"] == 0.4 and c["fractions"]["membw_of_model"] == 0.75,
     "fractions %r" % c["fractions"])
need(abs(t["gpus"] - sum(x["read_seconds"] for x in c["gpus"])) < 1e-9, "gpus seconds = sum of reads")
need(sum(t.values()) <= c["elapsed_seconds"] + 1e-6, "split within elapsed")
need(c["nvml_replaced"] is True and c["driver_version"] == "999.99.99", "nvml/driver")
bad = sorted((f["check"], f["gpu"]) for f in c["findings"] if f["state"] in ("warn", "fail"))
need(bad == [("clocks", 3), ("ecc", 3), ("nvlink", 2), ("pcie", 1), ("row_remap", 0)], "flagged %r" % bad)
need(c["actions"] == [f["action"] for f in c["findings"] if f["action"]], "actions list")
need("drain: NVLink 3 of GPU 2 down" in c["actions"], "nvlink action")
need(all(f["action"] is None for f in c["findings"] if f["state"] in ("pass", "n/a")), "actions only on faults")
g = c["gpus"]
need(len(g) == 4 and [x["index"] for x in g] == [0, 1, 2, 3], "gpus")
need(g[1]["pci_bus_id"] == "00000000:11:00.0", "bus id %r" % g[1]["pci_bus_id"])
need(g[1]["pcie"] == {"generation": 5, "width": 8, "max_generation": 5, "max_width": 16}, "pcie %r" % g[1]["pcie"])
need(g[3]["ecc"] == {"volatile_corrected": 0, "volatile_uncorrected": 4, "aggregate_corrected": 0,
                     "aggregate_uncorrected": 4}, "ecc %r" % g[3]["ecc"])
need(g[0]["row_remap"] == {"uncorrectable_rows": 2, "correctable_rows": 0, "pending": True,
                           "failed": False}, "remap %r" % g[0]["row_remap"])
need(g[0]["retired_pages"] == {"single_bit": None, "double_bit": None, "pending": None}, "retired nulls")
links = g[2]["nvlink"]
need(len(links) == 18 and [l["link"] for l in links if not l["up"]] == [3], "links of GPU 2")
need(links[0] == {"link": 0, "up": True, "replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}, "link 0")
need(all(x["read_seconds"] >= 0 for x in g), "read_seconds")
need(g[3]["clock_event_reasons"] == 9 and g[3]["clock_event_names"] == ["gpu_idle", "hw_slowdown"], "clocks")
PY

# Expected figures: the double as an H200 (its figures are an H200's) is
# held to the shipped H200 SXM 141GB figures and passes; each figure short
# of its model's is caught by its own check with its action.
export GS_NVML_DOUBLE_NAME="NVIDIA H200"
out=$("$bin" check 2>&1); rc=$?
[ "$rc" = 0 ] || fail "healthy H200 check exited $rc: $out"
grep -qE "^gpuscale check --level 1: pass \(47 passed, 0 warned, 0 failed\)" <<<"$out" ||
  fail "healthy H200: no pass line with 47 passed: $out"
grep -qE "^model +1 +pass +H200 SXM 141GB, figures from .*/share/gpuscale/gpu-models.json$" <<<"$out" ||
  fail "healthy H200: model line: $out"
grep -qE "^memory_size +0 +pass +150.8 GB of the 141 GB of an H200 SXM 141GB$" <<<"$out" ||
  fail "healthy H200: memory line: $out"
grep -qE "^power_limit +3 +pass +power limit 700 W; an H200 SXM 141GB's is 700 W$" <<<"$out" ||
  fail "healthy H200: power line: $out"
grep -qE "^Expected figures: .*/share/gpuscale/gpu-models.json$" <<<"$out" ||
  fail "healthy H200: expected figures line: $out"
fault_case pcie_gen4:2 6 pcie_slot 2 \
  "investigate: GPU 2's slot allows PCIe gen 4 of the gen 5 an H200 SXM 141GB takes (BIOS setting, riser or slot)"
fault_case power_limit:1:500 6 power_limit 1 \
  "investigate: GPU 1 power limit 500 W, below the 700 W of an H200 SXM 141GB (a cap slows every job; a site's own limit goes in --expect FILE)"
fault_case memory_mib:0:70000 5 memory_size 0 \
  "investigate: GPU 0 reports 73.4 GB of memory, 141 GB expected of an H200 SXM 141GB"
fault_case max_sm_clock:3:1500 6 max_clocks 3 \
  "investigate: GPU 3's highest SM clock 1500 MHz, below the 1980 MHz of an H200 SXM 141GB (firmware or a clock lock)"
# A site that caps its GPUs at 500 W says so with --expect: then 500 W passes.
cat >"$work/site.json" <<'JSON'
{"schema": "gpuscale/gpu-models/v1", "models": [{"model": "H200 at 500 W", "nvml_names": ["NVIDIA H200"],
 "form_factor": "sxm", "figures": {"power_limit_w": {"value": 500, "source": "site policy 2026-11"}}}]}
JSON
GS_NVML_DOUBLE_FAULTS=power_limit:0:500,power_limit:1:500,power_limit:2:500,power_limit:3:500 \
  expect 0 "power_limit +2 +pass +power limit 500 W; an H200 at 500 W's is 500 W" -- check --expect "$work/site.json"
GS_NVML_DOUBLE_FAULTS=power_limit:1:400 expect 6 "^Expected figures: .*site.json, then .*gpu-models.json$" -- check --expect "$work/site.json" --expect-gpus 4
# The site's file states only the power limit: the rest comes from the shipped file.
GS_NVML_DOUBLE_FAULTS=memory_mib:2:70000 expect 5 "model +2 +pass +H200 at 500 W, figures from .*site.json, then .*gpu-models.json" -- check --expect "$work/site.json"
expect 2 "option --expect: .*nonexistent.json" -- check --expect "$work/nonexistent.json"
printf '{"schema": "gpuscale/gpu-models/v1", "models": [{"model": "x"}]}' >"$work/bad.json"
expect 2 "option --expect: .*bad.json: models\[0\].form_factor: a non-empty string expected" -- check --expect "$work/bad.json"
# Without the shipped file the figures are not applicable, never a warning.
GPUSCALE_DATA_DIR=$work/empty expect 0 "model +0 +n/a +no expected figures: " -- check
GPUSCALE_NVML_LIBRARY=$GS_NVML_DOUBLE "$bin" check --format json --out "$work/h200.json" --expect "$work/site.json" >/dev/null 2>&1 ||
  fail "check --format json as an H200 exited $?"
python3 - "$work/h200.json" "$work/site.json" <<'PY' || failures=$((failures + 1))
import json, sys
c = json.load(open(sys.argv[1]))
need = lambda cond, what: cond or (print("FAIL: h200.json:", what), sys.exit(1))
need(c["config"]["expect"] == sys.argv[2], "config.expect %r" % c["config"])
e = c["check"]["expected"]
need(e["site_file"] == sys.argv[2] and e["shipped_file"].endswith("share/gpuscale/gpu-models.json"), "files %r" % e)
need(e["why"] is None and len(e["gpus"]) == 4, "why/gpus")
g0 = e["gpus"][0]
need(g0["gpu"] == 0 and g0["model"] == "H200 at 500 W", "gpu 0 %r" % g0)
need(g0["figures"]["power_limit_w"] == {"value": 500, "source": "site policy 2026-11"}, "site figure %r" % g0)
need(g0["figures"]["memory_bandwidth_gbs"]["value"] == 4800 and
     g0["figures"]["memory_bandwidth_gbs"]["source"].startswith("https://www.nvidia.com/"), "shipped figure %r" % g0)
g = c["check"]["gpus"][0]
need(g["memory_total_bytes"] == 143771 << 20 and g["power_limit_w"] == 700, "figures read %r" % g)
need(g["max_sm_clock_mhz"] == 1980 and g["max_memory_clock_mhz"] == 3201, "clocks read")
PY
unset GS_NVML_DOUBLE_NAME

# Level 2 without a CUDA device: the passive checks as at level 1, the
# stress checks not applicable with the reason, within a 240 s budget.
out=$("$bin" check --level 2 2>&1); rc=$?
[ "$rc" = 0 ] || fail "check --level 2 without CUDA exited $rc: $out"
grep -qE "^gpuscale check --level 2: pass \(27 passed, 0 warned, 0 failed\) in [0-9.]+ s of a 240 s budget" <<<"$out" ||
  fail "level 2: verdict line: $out"
grep -qE "^stress +- +n/a +no CUDA device: " <<<"$out" || fail "level 2: stress line: $out"
GS_NVML_DOUBLE_FAULTS=pcie_x8:1 expect 5 "reseat or replace: GPU 1 at PCIe x8 of x16" -- check --level 2
expect 0 "of a 30 s budget" -- check --level 2 --budget 30 --inject membw:gpu=1,factor=0.8
# NVLink errors counted during the check (not since boot) are level 2's.
# CRC errors are judged by their rate (DCGM's 100 per second of a kind):
# a steady 20/s passes, 5000/s and a burst of 4000 in the short check fail;
# a replay warns. GPU 2's reads take a second (hang:2:1), so that its
# counters' window holds some 20 errors at 20/s rather than 0 or 1.
GS_NVML_DOUBLE_FAULTS=hang:2:1,nvlink_crc_rate:2:5:20 expect 0 \
  "^nvlink_errors +2 +pass +during the check \(1\.[0-9] s\): 0 replays, 0 recoveries, [0-9]+ CRC flit errors \((1[5-9]|2[0-5])\.[0-9]/s\), 0 CRC data errors \(0.0/s\); fail at 100 CRC errors/s of a kind$" \
  -- check --level 2
GS_NVML_DOUBLE_FAULTS=hang:2:1,nvlink_crc_rate:2:5:5000 expect 5 \
  "^  drain: GPU 2's NVLinks counted [0-9]+ CRC flit errors per second under load \(limit 100/s; NVLink 5 the most\)$" \
  -- check --level 2
GS_NVML_DOUBLE_FAULTS=nvlink_crc_load:2:5:4000 expect 5 \
  "^nvlink_errors +2 +fail +during the check \([0-9.]+ s\): 0 replays, 0 recoveries, 4000 CRC flit errors" -- check --level 2
GS_NVML_DOUBLE_FAULTS=nvlink_replay_load:1:3:7 expect 6 \
  "^  investigate: NVLink 3 of GPU 1 replayed 7 times under load \(its peer received corrupted flits\)$" -- check --level 2
GS_NVML_DOUBLE_FAULTS=nvlink_crc_load:2:5:40 expect 0 "^nvlink +2 +pass" -- check
expect 0 "^nvlink_errors +3 +pass +during the check \([0-9.]+ s\): 0 replays, 0 recoveries, 0 CRC flit errors \(0.0/s\), 0 CRC data errors \(0.0/s\)" -- check --level 2
expect 2 "option --inject: faults are rehearsed at --level 2" -- check --inject membw:gpu=1,factor=0.8
expect 2 "option --inject: 'membw:gpu=1,factor=1.5': factor=F needs a number in \(0, 1\)" -- check --level 2 --inject membw:gpu=1,factor=1.5
expect 2 "option --inject: 'slow:rank=1,factor=2': gpuscale check rehearses membw" -- check --level 2 --inject slow:rank=1,factor=2
"$bin" check --level 2 --inject membw:gpu=1,factor=0.8 --format json --out "$work/l2.json" >/dev/null 2>&1 ||
  fail "check --level 2 --format json exited $?"
python3 - "$work/l2.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
c = d["check"]
need = lambda cond, what: cond or (print("FAIL: l2.json:", what), sys.exit(1))
need(d["config"]["level"] == 2 and d["config"]["inject"] == ["membw:gpu=1,factor=0.8"], "config %r" % d["config"])
need(c["level"] == 2 and c["budget_seconds"] == 240, "level/budget")
need(c["fractions"]["allreduce_warn_of_nvlink"] == 0.5, "fractions %r" % c["fractions"])
need(c["fractions"]["workloads_warn_of_median"] == 0.95 and
     c["fractions"]["workloads_fail_of_median"] == 0.8, "workload fractions %r" % c["fractions"])
need(c["stress"]["workload_rounds"] == 0 and c["stress"]["workload_ratios"] == {} and
     c["stress"]["workload_round_mean_seconds"] == {}, "workload rounds %r" % c["stress"])
need(sorted(c["seconds"]) == ["allreduce", "cuda", "gpus", "host", "membw", "nvml", "p2p", "workloads"], "seconds %r" % c["seconds"])
need(c["stress"]["why"].startswith("no CUDA device") and c["stress"]["gpus"] == [] and
     c["stress"]["p2p_gbs"] == [], "stress %r" % c["stress"])
PY

# Level 3 without a CUDA device: the burn-in not applicable, the budget
# level 2's, the burn-in and a minute; --duration belongs to level 3.
expect 0 "^burn +- +n/a +no CUDA device: " -- check --level 3 --duration 5
expect 0 "of a 305 s budget" -- check --level 3 --duration 5
expect 0 "of a 900 s budget" -- check --level 3
expect 2 "option --duration: the burn-in is level 3's" -- check --level 2 --duration 5
expect 2 "option --duration" -- check --level 3 --duration 0
expect 2 "option --budget: 30 s cannot hold a 600 s burn-in" -- check --level 3 --budget 30
"$bin" check --level 3 --duration 2 --format json --out "$work/l3.json" >/dev/null 2>&1 ||
  fail "check --level 3 --format json exited $?"
python3 - "$work/l3.json" <<'PY' || failures=$((failures + 1))
import json, sys
c = json.load(open(sys.argv[1]))["check"]
need = lambda cond, what: cond or (print("FAIL: l3.json:", what), sys.exit(1))
need(c["level"] == 3 and c["budget_seconds"] == 302, "level/budget %r" % c["budget_seconds"])
need("burn" in c["seconds"] and "membw" in c["seconds"], "seconds %r" % c["seconds"])
b = c["burn"]
need(b["why"].startswith("no CUDA device") and b["duration_seconds"] == 2 and b["gpus"] == [] and
     b["telemetry"] is None, "burn %r" % b)
PY

# Not applicable also in JSON, exit 0.
GPUSCALE_NVML_LIBRARY=/nonexistent "$bin" check --format json >"$work/na.json" 2>&1 ||
  fail "check --format json without GPUs exited $?"
python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["check"]
assert c["verdict"] == "not applicable" and c["why"].startswith("no GPU: NVML unavailable"), c
assert c["findings"] == [] and c["gpus"] == [], c
' "$work/na.json" || fail "not applicable JSON: $(cat "$work/na.json")"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "ok"
