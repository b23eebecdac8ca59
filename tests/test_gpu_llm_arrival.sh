#!/usr/bin/env bash
# Arrival skew at llm's tensor-parallel collectives on 2 GPUs
# (docs/stragglers.md, "llm's tensor-parallel all-reduces"): by default
# (--arrival-times 1) each shard's GPU stamps its entry at every prefill's
# and decode step's first collective and its exit from the last one
# (decode graphs replayed included), on its own clock anchored to the
# host's. The tiny model, one replica of --tp 2: a clean run names nobody;
# with shard 1's stream spinning 200 us before each step
# (--inject late:rank=1,us=200) shard 1 is named, last in at least 90% of
# the calls, its median lateness within 20% of 200 us; the same with
# --no-graphs (given --arrival-times 1); --arrival-times 0 records nothing;
# with --pp nothing is recorded by default (a stage's GPUs are not stamped)
# and asking for it is refused. Under mpirun (one process per GPU) where it is present, a follower
# starts each call when the first shard's message arrives, so a clean run
# names nobody or that follower by under 2 ms (as on CPU ranks,
# test_cli_llm_tp_mpi.sh), and the late run's lateness is taken against
# the clean run's lateness of the same shard. Skips (77) with fewer than 2
# GPUs. $1 is the gpuscale binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_gpus 2
bin=$(readlink -f "$bin")
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
l=(run llm --backend cuda --model tiny --input-min 4 --input-max 16 --output-min 8 --output-max 16
   --samples 32 --batch 4 --runs 1 --no-progress -q --tp 2)
late=late:rank=1,us=200

expect 0 "" -- "${l[@]}" -g 2 -o "$work/clean.json"
expect 0 "" -- "${l[@]}" -g 2 --inject $late -o "$work/late.json"
expect 0 "" -- "${l[@]}" -g 2 --arrival-times 1 --inject $late --no-graphs -o "$work/late_nographs.json"
expect 0 "" -- "${l[@]}" -g 2 --arrival-times 0 -o "$work/off.json"
expect 2 "option --arrival-times 1: on CUDA only without --pp" -- run llm --backend cuda \
  --model tiny -g 2 --tp 1 --pp 2 --arrival-times 1
expect 0 "" -- run llm --backend cuda --model tiny --input-min 4 --input-max 16 --output-min 8 \
  --output-max 16 --samples 8 --batch 4 --runs 1 --no-progress -q -g 2 --tp 1 --pp 2 \
  -o "$work/pp.json"
names="clean late late_nographs off pp"
if command -v mpirun >/dev/null && ! "$bin" info 2>/dev/null | grep -qE "^MPI +none"; then
  for name in clean late; do
    extra=()
    [ "$name" = late ] && extra=(--inject $late)
    timeout -s KILL 300 mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_NVLS_ENABLE \
      -x LD_LIBRARY_PATH "$bin" "${l[@]}" "${extra[@]}" \
      -o "$work/${name}_mpi.json" >"$work/${name}_mpi.out" 2>&1 ||
      fail "mpirun $name: $(cat "$work/${name}_mpi.out")"
  done
  names="$names clean_mpi late_mpi"
fi
for name in $names; do
  [ -f "$work/$name.json" ] || continue
  "$bin" report --format json -o "$work/$name.report.json" "$work/$name.json" ||
    fail "report of $name failed"
done
python3 - "$work" $names <<'PY' || failures=$((failures + 1))
import json, os, sys
work, names = sys.argv[1], sys.argv[2:]
got = {}
for name in names:
    if not os.path.exists(f"{work}/{name}.report.json"):
        continue
    doc = json.load(open(f"{work}/{name}.json"))
    m = doc["measurements"][0]
    assert m["verification"]["status"] == "passed", (name, m["verification"])
    assert doc["config"]["arrival_times"] is (name != "off"), (name, doc["config"])
    assert "arrival_times" not in doc["config"]["workload_options"], name
    if name in ("off", "pp"):
        assert "arrival" not in m and "arrival_groups" not in m, name
        continue
    a = m["arrival"]
    ra = json.load(open(f"{work}/{name}.report.json"))["series"][0]["rows"][0]["arrival"]
    assert a["clock"] == "device" and len(a["ranks"]) == 2 and a["iterations"] >= 20, (name, a)
    for r in a["ranks"]:
        assert all(e <= x for e, x in zip(r["entry_seconds"], r["exit_seconds"])), (name, r)
        assert 0 < r["error_seconds"] < 1e-3, (name, r["error_seconds"])
    got[name] = (a, ra)
    print(f"{name}: {a['iterations']} calls, named {ra['named']}, last {a['last_rank']} in "
          f"{ra['last_share']:.0%}, lateness {a['lateness_seconds'] * 1e6:.1f} us "
          f"[{a['lateness_low_seconds'] * 1e6:.1f}, {a['lateness_high_seconds'] * 1e6:.1f}], "
          f"threshold {ra['threshold_seconds'] * 1e6:.1f} us, exit spread "
          f"{a['exit_spread_seconds'] * 1e6:.1f} us, clock error "
          f"{a['alignment_error_seconds'] * 1e6:.1f} us, waiting {a['wait_share']:.1%}")
if "clean" in got:
    assert got["clean"][1]["named"] is None, got["clean"][1]
if "clean_mpi" in got:
    # A follower starts each call when the first shard's message arrives.
    a, ra = got["clean_mpi"]
    assert ra["named"] in (None, 1) and a["lateness_seconds"] < 2e-3, (ra, a["lateness_seconds"])
for name in ("late", "late_nographs", "late_mpi"):
    if name not in got:
        continue
    a, ra = got[name]
    assert ra["named"] == 1 and ra["last_share"] >= 0.9, (name, ra)
    lateness = a["ranks"][1]["lateness_seconds"]
    if name == "late_mpi":
        # Against the clean run's: the follower's own message latency.
        lateness -= got["clean_mpi"][0]["ranks"][1]["lateness_seconds"]
    assert abs(lateness - 200e-6) <= 0.2 * 200e-6, (name, lateness)
PY
[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all GPU llm arrival checks passed"
