#!/usr/bin/env bash
# coll's arrival times on 2 GPUs borrow its timing events (docs/stragglers.md,
# "Arrival skew"; gs_comm_arrival_lend), by default as with
# --arrival-times 1, and --arrival-times 0 records nothing. With 64 MiB
# the GPU runs behind its host, so each rank's entry at iteration i + 1 is
# its exit at iteration i to the bit (one event), except on a rank made
# late by --inject late, whose spin kernel lies between them: there the
# recorder's own entry event follows the spin, about its 50 us later. With
# 1 MiB (the host may be the slower) no entry precedes the previous exit.
# Threads mode, and one process per GPU under
# mpirun where it is present. Skips (77) with fewer than 2 GPUs.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_gpus 2
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
base=(coll allreduce --backend cuda --no-progress -q --place out --check 0 -n 16 -w 2)
c=("${base[@]}" --arrival-times 1)
d=("${base[@]}" --arrival-times 0)
expect 0 "" -- "${c[@]}" -g 2 -b 64M -e 64M -o "$work/clean.json"
expect 0 "" -- "${c[@]}" -g 2 -b 64M -e 64M --inject late:rank=1,us=50 -o "$work/late.json"
expect 0 "" -- "${base[@]}" -g 2 -b 1M -e 1M -o "$work/small.json"
expect 0 "" -- "${d[@]}" -g 2 -b 1M -e 1M -o "$work/off.json"
if command -v mpirun >/dev/null && ! "$bin" info 2>/dev/null | grep -qE "^MPI +none"; then
  timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH \
    "$bin" "${c[@]}" -b 64M -e 64M -o "$work/clean_mpi.json" >"$work/mpi.out" 2>&1 ||
    fail "mpirun clean: $(cat "$work/mpi.out")"
fi
python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, os, sys
work = sys.argv[1]

def arrival(name):
    doc = json.load(open(f"{work}/{name}.json"))
    assert doc["config"]["arrival_times"] is True, (name, doc["config"])
    a = doc["measurements"][0]["arrival"]
    assert a["clock"] == "device" and a["iterations"] == 16 and len(a["sample"]) == 16, (name, a)
    return a

for name in ("clean", "clean_mpi", "late", "small"):
    if not os.path.exists(f"{work}/{name}.json"):
        continue
    for r in arrival(name)["ranks"]:
        entry, exit = r["entry_seconds"], r["exit_seconds"]
        assert all(e <= x for e, x in zip(entry, exit)), (name, r["rank"], entry, exit)
        gaps = [entry[i + 1] - exit[i] for i in range(15)]
        if name == "late" and r["rank"] == 1:
            # The recorder's own entry, after the 50 us spin.
            assert all(40e-6 <= g <= 1e-3 for g in gaps), (name, r["rank"], gaps)
        elif name == "small":
            # A lent entry, or the host's call when that came later.
            assert all(g >= 0.0 for g in gaps), (name, r["rank"], gaps)
        else:
            # The lent events: iteration i's exit is iteration i + 1's entry.
            assert all(g == 0.0 for g in gaps), (name, r["rank"], gaps)
        print(f"{name} rank {r['rank']}: gaps {min(gaps) * 1e6:.2f}-{max(gaps) * 1e6:.2f} us")
off = json.load(open(f"{work}/off.json"))
assert off["config"]["arrival_times"] is False and "arrival" not in off["measurements"][0], off["config"]
PY
[ "$failures" = 0 ] && echo "all GPU arrival checks passed"
exit $((failures > 0))
