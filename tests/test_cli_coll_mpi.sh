#!/usr/bin/env bash
# `gpuscale coll` under `mpirun -np 2` on the CPU backend: one rank per
# process, MPI collectives on host buffers, records gathered to process 0,
# and a stalled process named by the other one. Skips (77) without mpirun
# or without MPI in the build.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
command -v mpirun >/dev/null || { echo "skipped: mpirun not found (install openmpi-bin)"; exit 77; }
"$bin" info 2>/dev/null | grep -qE "^MPI +none" && { echo "skipped: gpuscale built without MPI"; exit 77; }
# Open MPI keeps its own allocations until exit: leak reports of a sanitizer
# build would be about the library, not gpuscale.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

mpi() { timeout 120 mpirun --oversubscribe -np 2 "$bin" "$@" 2>&1; }

out=$(mpi coll all --backend cpu -b 8 -e 64K --stepfactor 16 -n 3 -w 1 --op max -d int32 --no-progress --out "$work/mpi.json")
rc=$?
[ "$rc" = 0 ] || fail "mpirun -np 2 coll all exited $rc: $out"
[ "$(grep -c 'Wrong elements     : 0 OK' <<<"$out")" = 7 ] || fail "coll all under mpirun: not 7 clean tables: $out"
grep -q "2 ranks (mpi)" <<<"$out" || fail "launch mode not mpi: $out"
python3 - "$work/mpi.json" <<'PY' || fail "MPI result document"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "ok"
m = d["measurements"][0]
assert m["collective"]["launch"] == "mpi" and m["world_size"] == 2
ranks = m["runs"][0]["ranks"]
assert [r["rank"] for r in ranks] == [0, 1]
assert all(r["host"] and len(r["wall_seconds"]) == 3 for r in ranks), ranks
PY

out=$(mpi coll allreduce --backend cpu -b 8 -e 64 -n 3 --timeout 1 --inject delay:rank=1,seconds=5 --no-progress --out "$work/stall.json")
rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "stalled MPI run exited $rc (124: it hung): $out"
grep -q "rank 1 on .* lost: it stopped answering" <<<"$out" || fail "stalled MPI run did not name rank 1: $out"
[ -s "$work/stall.json" ] || fail "stalled MPI run left no document"

exit $((failures > 0))
