#!/usr/bin/env bash
# --trace on GPUs (docs/timeline.md): `scale mlp` on up to 2 GPUs checked by
# tests/trace_validate.py with device lanes from CUDA events, the kernels
# from CUPTI where it loads, and the gradient all-reduce on a device lane
# (with 2 GPUs; with one, `coll allreduce -g 1` stands in for it); the
# report's timeline picture drawn. GS_TRACE_KEEP=DIR keeps the trace,
# documents and HTML report there for a look. Skips (77) without a GPU.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
need_gpus 1
command -v python3 >/dev/null || { echo "skipped: python3 runs the trace validator"; exit 77; }
export NCCL_NVLS_ENABLE=0
gpus=$((gpu_count >= 2 ? 2 : 1))
validate() { python3 "$here/trace_validate.py" "$@" || fail "trace_validate.py $*"; }

expect 0 "" -- scale mlp -g "$gpus" --iters 20 --runs 2 --trace-steps 4 \
  --trace "$work/t.json" --out "$work/r.json" -q --no-progress
source=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["otherData"]["device_source"])' "$work/t.json")
echo "device lanes from: $source"
kernels=()
case "$source" in
  cupti) kernels=(--kernels) ;;
  *) echo "note: CUPTI did not load ($source): kernel lanes are not checked" ;;
esac
if [ "$gpus" = 2 ]; then
  validate "$work/t.json" --steps 4 --full --device-lanes "${kernels[@]}" --comm-on-device \
    --expect "step,lockstep,device sync,forward + backward,optimizer,allreduce bucket,wait for gradients"
  expect 0 "Timeline of steps 0-3 of run 0" -- report "$work/r.json"
else
  validate "$work/t.json" --steps 4 --full --device-lanes "${kernels[@]}" \
    --expect "step,lockstep,device sync"
  expect 0 "" -- coll allreduce -g 1 -b 1M -e 4M -n 10 --trace "$work/c.json" \
    --out "$work/c-doc.json" -q --no-progress
  validate "$work/c.json" --steps 5 --device-lanes --comm-on-device --expect allreduce
fi
expect 0 "" -- run voxelize --gpus 0 --iters 10 --runs 1 --trace "$work/v.json" \
  --out "$work/v-doc.json" -q --no-progress
validate "$work/v.json" --steps 5 --full --device-lanes "${kernels[@]}" --expect "voxelize,step"

if command -v gnuplot >/dev/null && [ "$gpus" = 2 ]; then
  expect 0 "" -- report "$work/r.json" --format html --out "$work/r.html" --plots "$work/plots"
  ls "$work/plots" | grep -q "timeline.svg" || fail "no timeline picture: $(ls "$work/plots")"
fi
if [ -n "${GS_TRACE_KEEP:-}" ]; then
  mkdir -p "$GS_TRACE_KEEP" && cp -r "$work"/. "$GS_TRACE_KEEP"/
  echo "kept in $GS_TRACE_KEEP"
fi

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all GPU trace tests passed"
