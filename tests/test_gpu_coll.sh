#!/usr/bin/env bash
# Collectives on 2 GPUs: every op checked element by element in both launch
# modes (one process with a thread per GPU; one process per GPU under
# mpirun), for several types and reductions, plus the transports.
# Skips (77) with fewer than 2 GPUs.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_gpus 2
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
with_mpi=1
if ! command -v mpirun >/dev/null || "$bin" info 2>/dev/null | grep -qE "^MPI +none"; then
  with_mpi=0
  echo "note: no mpirun or a build without MPI: the one-process-per-GPU mode is not tested"
fi

gpu=(--backend cuda --no-progress -q -b 8 -e 4M --stepfactor 16 -n 3 -w 1)
for args in "-d float --op sum" "-d half --op prod" "-d bfloat16 --op max -r 1" "-d int8 --op avg" "-d uint64 --op min"; do
  # shellcheck disable=SC2086
  expect 0 "Wrong elements     : 0 OK" -- coll all "${gpu[@]}" -g 2 $args --out "$work/threads.json"
  [ "$with_mpi" = 1 ] || continue
  out=$(timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH "$bin" coll all "${gpu[@]}" $args --out "$work/mpi.json" 2>&1)
  rc=$?
  [ "$rc" = 0 ] || fail "mpirun coll all $args exited $rc: $out"
  [ "$(grep -c 'Wrong elements     : 0 OK' <<<"$out")" = 7 ] || fail "mpirun coll all $args: wrong elements: $out"
done
for t in p2p shm; do
  expect 0 "transport $t" -- coll allreduce "${gpu[@]}" -g 2 --transport "$t" --out "$work/$t.json"
done
python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
assert d['config']['nccl_environment'].get('NCCL_SHM_DISABLE')=='0', d['config']['nccl_environment']
assert d['config']['nccl_environment'].get('NCCL_P2P_DISABLE')=='1'
" "$work/shm.json" || fail "transport switches not recorded"
start=$(date +%s)
expect 1 "stalled: rank 1" -- coll allreduce "${gpu[@]}" -g 2 --timeout 1 --inject delay:rank=1,seconds=4 --out "$work/stall.json"
[ $(( $(date +%s) - start )) -le 60 ] || fail "the stalled GPU run took too long"
[ "$failures" = 0 ] && echo "all GPU collective checks passed"
exit $((failures > 0))
