#!/usr/bin/env bash
# mlp's pipeline (--pp) on GPUs: 2 stages under GPipe and 1F1B with NCCL
# send/recv between them, with 8 micro-batches and with 1 (whose first
# transfer groups would open the links between the stages unlike on the
# two sides, so that NCCL waits forever without the links opened at set-up:
# bench/pipeline.sh's first run; each run here under `timeout 120`),
# each stage's fp32 gradients and update checked
# against the CPU reference, tf32 and bf16 (bfloat16 activations, sent as
# such) with mlp's error bounds of their precision;
# with 4 GPUs also 2 replicas of 2 stages (summed over each stage's NCCL
# group) and 4 stages. Skips (77) with fewer than 2 GPUs.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_gpus 2

args=(--backend cuda --layers 256,512,512,512,256,8 --samples 8192 --batch 512 --iters 20 --warmup 2
      --runs 1 --no-progress -q --gpu-mode multi)
# bounded NAME ARGS...: run mlp ARGS into $work/NAME.json, given 120 s.
bounded() {
  local name=$1 rc=0
  shift
  timeout -k 10 120 "$bin" run mlp "${args[@]}" "$@" -o "$work/$name.json" >"$work/$name.txt" 2>&1 ||
    rc=$?
  [ "$rc" = 0 ] || fail "run mlp $* exited $rc (124 or 137: still running after 120 s):" \
    "$(tail -n 5 "$work/$name.txt")"
}
for schedule in gpipe 1f1b; do
  bounded "pp2-m1-$schedule" -g 2 --pp 2 --micro-batches 1 --schedule "$schedule"
  expect 0 "" -- run mlp "${args[@]}" -g 2 --pp 2 --micro-batches 8 --schedule "$schedule" \
    -o "$work/pp2-$schedule.json"
done
expect 0 "" -- run mlp "${args[@]}" -g 2 --pp 2 --micro-batches 8 --precision tf32 \
  -o "$work/pp2-tf32.json"
expect 0 "" -- run mlp "${args[@]}" -g 2 --pp 2 --micro-batches 8 --schedule 1f1b --precision bf16 \
  -o "$work/pp2-bf16.json"
names="pp2-m1-gpipe pp2-m1-1f1b pp2-gpipe pp2-1f1b pp2-tf32 pp2-bf16"
if [ "$gpu_count" -ge 4 ]; then
  # --arrival-times 1: the runner's workloads record arrivals on CUDA only
  # when asked (docs/stragglers.md: they cost mlp's step 2%).
  expect 0 "" -- run mlp "${args[@]}" -g 4 --pp 2 --micro-batches 4 --arrival-times 1 \
    -o "$work/dp2pp2.json"
  expect 0 "" -- run mlp "${args[@]}" -g 4 --pp 4 --micro-batches 8 -o "$work/pp4.json"
  bounded pp4-m1 -g 4 --pp 4 --micro-batches 1
  # The stage groups' arrivals on GPUs (docs/stragglers.md, "mlp's
  # pipeline stages"): rank 2 (stage 0 of replica 1) 2 ms late at every
  # step is named as replica 1 in stage 0's group.
  expect 0 "" -- run mlp "${args[@]}" -g 4 --pp 2 --micro-batches 4 --arrival-times 1 \
    --inject late:rank=2,us=2000 -o "$work/dp2pp2-late.json"
  # The same on a shape whose steps keep the GPUs busier than their hosts
  # (about 9 ms of GEMMs a step by their flops): there the lateness is the
  # injected one.
  big=(--backend cuda --layers 1024,2048,2048,2048,1024,8 --batch 8192 --samples 16384
       --verify-rows 8 --iters 20 --warmup 2 --runs 1 --no-progress -q --gpu-mode multi
       --arrival-times 1)
  expect 0 "" -- run mlp "${big[@]}" -g 4 --pp 2 --micro-batches 4 -o "$work/dp2pp2-big.json"
  expect 0 "" -- run mlp "${big[@]}" -g 4 --pp 2 --micro-batches 4 \
    --inject late:rank=2,us=2000 -o "$work/dp2pp2-late-big.json"
  names="$names dp2pp2 pp4 pp4-m1 dp2pp2-late dp2pp2-big dp2pp2-late-big"
  for name in dp2pp2 dp2pp2-late dp2pp2-big dp2pp2-late-big; do
    "$bin" report --format json -o "$work/$name.report" "$work/$name.json" ||
      fail "report of $name failed"
  done
  python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
work = sys.argv[1]
# Clean on the big shape: a replica named there trails by far less than
# the injected 2 ms. On 4 x H200 one replica (either) arrived 84-110 us
# late in 20 of 20 iterations of 5-6 ms, its GPU still working when its
# host made the call, in 3 of 6 runs, with the binaries before and after
# the session-14 changes alike and every GPU at 1980 MHz while busy
# (docs/results/2026-11-28-h200x4-session14/call5-output.txt): over the 1%
# of a step the naming takes as material, so named; the cause is not
# known. So it must be under 10% of the injected lateness. Clean on the
# small one, whose steps are bound by their hosts' launches, a replica may
# be named for its host (one of 2 runs on 4 x H200: replica 1, 171 us late
# in 20 of 20 steps: the rank threads of one process enqueue in turn): a
# replica named there must be found host-bound (its stream waited for its
# host's call). That failed on 4 x H200 in session 14: replica 0 named
# 36 us and 239 us late in steps of about 1 ms with a host-bound share of
# 0 (call6-ctest.log, call7-ctest.log); not explained, left failing.
# Rank 2 late: replica 1 in stage 0's group (stage 1's group may name the
# same replica, which waits for it through the pipe). Its lateness: on the small shape
# the on-time rank's host enqueues a step more slowly than its GPU runs
# it, so its stream reaches the all-reduce when its host gets there, while
# the late rank's host enqueues during its GPU's spin: up to a step's time
# of the 2 ms is absorbed (1.49 ms on 4 x H200). On the big shape, whose
# GPUs trail their hosts, it is within 20%.
clean = json.load(open(f"{work}/dp2pp2.json"))["measurements"][0]
steps = sorted(s for r in clean["runs"] for s in r["step_seconds"])
clean_step = steps[len(steps) // 2]
bounds = {"dp2pp2-late": (2000e-6 - clean_step, 2400e-6), "dp2pp2-late-big": (1600e-6, 2400e-6)}
for name, late in (("dp2pp2", None), ("dp2pp2-late", 1), ("dp2pp2-big", None),
                   ("dp2pp2-late-big", 1)):
    m = json.load(open(f"{work}/{name}.json"))["measurements"][0]
    row = json.load(open(f"{work}/{name}.report"))["series"][0]["rows"][0]
    assert "arrival" not in m, name
    groups, rgroups = m["arrival_groups"], row["arrival_groups"]
    assert [g["stage"] for g in groups] == [0, 1], (name, groups)
    assert [g["global_ranks"] for g in groups] == [[0, 2], [1, 3]], (name, groups)
    for g, rg in zip(groups, rgroups):
        assert g["clock"] == "device", (name, g["clock"])
        print(f"{name} stage {g['stage']}: named {rg['named']}, last {g['last_rank']}, lateness "
              f"{g['lateness_seconds'] * 1e6:.1f} us, threshold {rg['threshold_seconds'] * 1e6:.1f} us")
        share = g.get("last_rank_host_bound_share")
        print(f"  last replica's host-bound share {share}")
        assert share is not None, (name, g)
        if name == "dp2pp2":
            # Launch-bound steps: a replica named here waited for its host.
            assert rg["named"] is None or share >= 0.5, (name, g)
            continue
        if late is None:
            assert rg["named"] is None or g["lateness_seconds"] < 200e-6, (name, g)
        elif g["stage"] == 0:
            assert rg["named"] == late and rg["named_rank"] == 2, (name, rg)
            # Its GPU was still spinning when its host made the call.
            assert share < 0.5, (name, g)
            low, high = bounds[name]
            assert low <= g["lateness_seconds"] <= high, (name, g["lateness_seconds"], low, high)
        else:
            assert rg["named"] in (None, late), (name, rg)
PY
fi
for name in $names; do
  python3 - "$work/$name.json" <<'PY' || failures=$((failures + 1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "ok", d["status"]
m = d["measurements"][0]
assert m["verification"]["status"] == "passed", m["verification"]
for r in m["runs"][0]["ranks"]:
    kind = "tf32" if "tf32" in sys.argv[1] else "bf16" if "bf16" in sys.argv[1] else "fp32"
    want = f"CUDA {kind} pipeline stage"
    assert want in r["verification"]["detail"], r["verification"]
    assert r["verification"]["mismatches"] == 0, r["verification"]
PY
done
exit $((failures > 0))
