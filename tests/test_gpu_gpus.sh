#!/usr/bin/env bash
# --gpus names GPUs by CUDA ordinal and -g/--ngpus takes a count, on GPUs
# (docs/cli.md, "GPUs: ordinals or a count"): `run --gpus 0` measures GPU 0
# (once refused as "0 is below the minimum 1"), a lone number past the last
# GPU is a usage error with the -g hint, -g N selects the first N; with two
# GPUs --gpus 1 is GPU 1 alone and coll takes nccl-tests' -g 2. Skips (77)
# without a GPU.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_gpus 1
export NCCL_NVLS_ENABLE=0
quick=(--iters 5 --runs 1 --no-progress -q --points 20K --clouds 2)
devices() { # the document's config.devices as "0,1"
  python3 -c 'import json,sys; print(",".join(str(d) for d in json.load(open(sys.argv[1]))["config"]["devices"]))' "$1"
}

expect 0 "" -- run voxelize --gpus 0 "${quick[@]}" --out "$work/g0.json"
[ "$(devices "$work/g0.json")" = 0 ] || fail "--gpus 0 measured GPUs $(devices "$work/g0.json")"
expect 0 "" -- run voxelize -g 1 "${quick[@]}" --out "$work/n1.json"
[ "$(devices "$work/n1.json")" = 0 ] || fail "-g 1 measured GPUs $(devices "$work/n1.json")"
expect 2 "option --gpus: GPU $gpu_count does not exist \\($gpu_count present, 0-$((gpu_count - 1))\\); the first $gpu_count GPUs are -g $gpu_count" -- \
  run voxelize --gpus "$gpu_count" "${quick[@]}" --out "$work/x.json"
expect 2 "option --ngpus: $((gpu_count + 1)) GPUs asked for, $gpu_count present" -- \
  run voxelize -g $((gpu_count + 1)) "${quick[@]}" --out "$work/x.json"
expect 2 "option --gpus: '0-' is not a list" -- run voxelize --gpus 0- "${quick[@]}"
if [ "$gpu_count" -ge 2 ]; then
  expect 0 "" -- run voxelize --gpus 1 "${quick[@]}" --out "$work/g1.json"
  [ "$(devices "$work/g1.json")" = 1 ] || fail "--gpus 1 measured GPUs $(devices "$work/g1.json")"
  expect 0 "" -- scale voxelize -g 2 "${quick[@]}" --out "$work/n2.json"
  [ "$(devices "$work/n2.json")" = 0,1 ] || fail "scale -g 2 measured GPUs $(devices "$work/n2.json")"
  expect 0 "Wrong elements     : 0 OK" -- coll allreduce -g 2 -b 8 -e 64K -n 3 -w 1 --no-progress -q --out "$work/c.json"
  [ "$(devices "$work/c.json")" = 0,1 ] || fail "coll -g 2 measured GPUs $(devices "$work/c.json")"
else
  echo "note: one GPU: --gpus 1, scale -g 2 and coll -g 2 are not run"
fi
[ "$failures" = 0 ] && echo "all --gpus/--ngpus checks passed"
exit $((failures > 0))
