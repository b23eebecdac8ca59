#!/usr/bin/env bash
# Builds the sources that use trace ranges with GS_TRACE_DISABLED (the
# object library gs_trace_disabled of tests/CMakeLists.txt) and checks that
# none of their objects calls a range, a device-lane or NVTX function: with
# -DGPUSCALE_TRACE=OFF the ranges cost nothing because they are not there.
# usage: trace_disabled.sh CMAKE BUILD_DIR "OBJECT;OBJECT;..."
set -u
cmake=$1 build=$2 objects=$3
"$cmake" --build "$build" --target gs_trace_disabled -- -j2 >"$build/trace_disabled.log" 2>&1 || {
  cat "$build/trace_disabled.log"
  echo "FAIL: the sources do not compile with GS_TRACE_DISABLED"
  exit 1
}
failures=0
IFS=';' read -r -a list <<<"$objects"
[ "${#list[@]}" -ge 5 ] || { echo "FAIL: only ${#list[@]} objects: $objects"; exit 1; }
for obj in "${list[@]}"; do
  calls=$(nm -u "$obj" | grep -E ' (gs_trace_(begin|begin_text|end|attach|detach|step_open|step_close|abandon|depth|measurement_start|measurement_stop)|gs_cupti_[a-z_]+|nvtx[A-Za-z_]+)$')
  defines=$(nm --defined-only "$obj" | grep -E ' T (gs_trace_begin|gs_cupti_start)$')
  if [ -n "$calls$defines" ]; then
    echo "FAIL: $(basename "$obj") still has trace code: $calls $defines"
    failures=$((failures + 1))
  fi
done
[ "$failures" = 0 ] || exit 1
echo "the trace ranges compile away in ${#list[@]} objects"
