#!/usr/bin/env bash
# Real nccl-tests outputs for gpuscale's ingest tests: builds a source
# checkout of NVIDIA/nccl-tests without MPI and runs every collective
# gpuscale knows (all_reduce, all_gather, reduce_scatter, broadcast, reduce,
# alltoall, sendrecv) on one GPU (-g 1), with a few data types, reduction
# operations and roots, in text and (one run per collective) JSON output.
# Each output goes to $OUT/nccl-tests/NAME.txt or NAME.json, NAME =
# PROGRAM_TYPE[_VARIANT]_1gpu (the program's name tells the tests which
# collective ran); the build log, the console text of the JSON runs, failed
# runs and the GPU's name stay in $OUT. Copy $OUT/nccl-tests/* to
# tests/data/ingest/nccl-tests/: the tests pick up every file there
# (tests/test_cli_nccl_tests.sh).
# Usage: bench/nccl-tests-outputs.sh NCCL_TESTS_SOURCE_DIR
#   CUDA_HOME (default /usr/local/cuda), NCCL_HOME (default: CUDA_HOME, whose
#   include/ and lib/ hold NCCL in the CUDA 13 toolkit), NVCC_GENCODE
#   (default sm_90: H100, H200), OUT (default ./nccl-tests-outputs).
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
# run NAME PROGRAM ARGS...: one run of PROGRAM on one GPU, 8 B to 64 MiB in
# steps of 8x, data checked (-c 1); text to NAME.txt, or JSON with --json.
run() {
  local name=$1 program=$2
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
  if ! "$build/${program}_perf" -g 1 -b 8 -e 64M -f 8 -n 20 -w 5 -c 1 "${json[@]}" "$@" \
      >"$text" 2>&1; then
    echo "   failed: $(tail -n 3 "$text")"
    mv "$text" "$out/$name.failed.txt"
    rm -f "$data/$name.json"
    failures=$((failures + 1))
  fi
}

run all_reduce_float_1gpu all_reduce -d float -o sum
run all_reduce_half_max_1gpu all_reduce -d half -o max
run all_reduce_bfloat16_1gpu all_reduce --json -d bfloat16 -o sum
run all_gather_float_1gpu all_gather -d float
run all_gather_int8_1gpu all_gather --json -d int8
run reduce_scatter_float_1gpu reduce_scatter -d float -o sum
run reduce_scatter_double_min_1gpu reduce_scatter --json -d double -o min
run broadcast_float_1gpu broadcast -d float -r 0
run broadcast_int32_1gpu broadcast --json -d int32 -r 0
run reduce_float_1gpu reduce -d float -o sum -r 0
run reduce_half_prod_1gpu reduce --json -d half -o prod -r 0
run alltoall_float_1gpu alltoall -d float
run alltoall_int64_1gpu alltoall --json -d int64
run sendrecv_float_1gpu sendrecv -d float
run sendrecv_uint8_1gpu sendrecv --json -d uint8
# CUDA graphs and blocking collectives change nothing in the output format
# but the timing: one run each.
run all_reduce_float_graph_1gpu all_reduce -d float -G 1
run all_reduce_float_blocking_1gpu all_reduce -d float -z 1

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/gpu.txt" 2>&1 || true
echo "outputs in $data ($failures failed runs)"
[ "$failures" -eq 0 ]
