#!/usr/bin/env bash
# Real nccl-tests outputs for gpuscale's ingest tests: builds a source
# checkout of NVIDIA/nccl-tests without MPI and runs every collective
# gpuscale knows (all_reduce, all_gather, reduce_scatter, broadcast, reduce,
# alltoall, sendrecv) on GPUS GPUs of one process (-g GPUS, default 1),
# with a few data types, reduction operations and roots, in text and (one
# run per collective) JSON output; with GPUS above 1 also all_reduce as
# GPUS threads of one GPU each (-t GPUS -g 1).
# Each output goes to $OUT/nccl-tests/NAME.txt or NAME.json, NAME =
# PROGRAM_TYPE[_VARIANT]_<GPUS>gpu (the program's name tells the tests which
# collective ran); the build log, the console text of the JSON runs, failed
# runs and the GPU's name stay in $OUT. Copy $OUT/nccl-tests/* to
# tests/data/ingest/nccl-tests/: the tests pick up every file there
# (tests/test_cli_nccl_tests.sh).
# Usage: bench/nccl-tests-outputs.sh NCCL_TESTS_SOURCE_DIR
#   CUDA_HOME (default /usr/local/cuda), NCCL_HOME (default: CUDA_HOME, whose
#   include/ and lib/ hold NCCL in the CUDA 13 toolkit), NVCC_GENCODE
#   (default sm_90: H100, H200), OUT (default ./nccl-tests-outputs), GPUS
#   (default 1).
set -euo pipefail
src=${1:?usage: bench/nccl-tests-outputs.sh NCCL_TESTS_SOURCE_DIR}
src=$(cd "$src" && pwd)
out=${OUT:-nccl-tests-outputs}
mkdir -p "$out/nccl-tests"
out=$(cd "$out" && pwd)
data=$out/nccl-tests
cuda=${CUDA_HOME:-/usr/local/cuda}
nccl=${NCCL_HOME:-$cuda}
gencode=${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}
gpus=${GPUS:-1}
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
export LD_LIBRARY_PATH="$nccl/lib:$nccl/lib64:${LD_LIBRARY_PATH:-}"
# NVLink SHARP needs more than one GPU and is left off on the lent machines.
export NCCL_NVLS_ENABLE=0

# The build goes to a scratch folder: the checkout may be read-only.
make -C "$src" -j "$(nproc)" MPI=0 BUILDDIR="$build" CUDA_HOME="$cuda" NCCL_HOME="$nccl" \
  NVCC_GENCODE="$gencode" >"$out/build.log" 2>&1 || {
  tail -n 30 "$out/build.log" >&2
  echo "nccl-tests-outputs: the build failed (log: $out/build.log)" >&2
  exit 1
}

failures=0
# run NAME PROGRAM ARGS...: one run of PROGRAM on $gpus GPUs, 8 B to 64 MiB
# in steps of 8x, data checked (-c 1); text to NAME_<gpus>gpu.txt, or JSON
# with --json. ARGS may override -g (later options win).
run() {
  local name=${1}_${gpus}gpu program=$2
  shift 2
  local json=()
  if [ "${1:-}" = --json ]; then
    json=(-J "$data/$name.json")
    shift
  fi
  echo "== $name: $program $*"
  # With -J the table goes to the JSON file; the console text is kept apart.
  local text=$data/$name.txt
  [ ${#json[@]} -eq 0 ] || text=$out/$name.console.txt
  if ! "$build/${program}_perf" -g "$gpus" -b 8 -e 64M -f 8 -n 20 -w 5 -c 1 "${json[@]}" "$@" \
      >"$text" 2>&1; then
    echo "   failed: $(tail -n 3 "$text")"
    mv "$text" "$out/$name.failed.txt"
    rm -f "$data/$name.json"
    failures=$((failures + 1))
  fi
}

run all_reduce_float all_reduce -d float -o sum
run all_reduce_half_max all_reduce -d half -o max
run all_reduce_bfloat16 all_reduce --json -d bfloat16 -o sum
run all_gather_float all_gather -d float
run all_gather_int8 all_gather --json -d int8
run reduce_scatter_float reduce_scatter -d float -o sum
run reduce_scatter_double_min reduce_scatter --json -d double -o min
run broadcast_float broadcast -d float -r 0
run broadcast_int32 broadcast --json -d int32 -r 0
run reduce_float reduce -d float -o sum -r 0
run reduce_half_prod reduce --json -d half -o prod -r 0
run alltoall_float alltoall -d float
run alltoall_int64 alltoall --json -d int64
run sendrecv_float sendrecv -d float
run sendrecv_uint8 sendrecv --json -d uint8
# CUDA graphs and blocking collectives change nothing in the output format
# but the timing: one run each.
run all_reduce_float_graph all_reduce -d float -G 1
run all_reduce_float_blocking all_reduce -d float -z 1
# Several ranks as threads of one process, one GPU each.
[ "$gpus" -eq 1 ] || run all_reduce_float_threads all_reduce -d float -t "$gpus" -g 1

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/gpu.txt" 2>&1 || true
echo "outputs in $data ($failures failed runs)"
[ "$failures" -eq 0 ]
