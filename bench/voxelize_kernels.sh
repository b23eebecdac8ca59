#!/usr/bin/env bash
# Voxelize count kernels on one GPU: the GPU test, then count mode at 128^3
# for 1M and 10M points in one cloud and 8 clouds of 1M, with the binned
# path forced off (GS_VOXELIZE_BINNED=0, global atomics), forced on (=1)
# and chosen by the launcher's rule (also 2M points, near the switch), then the PyTorch comparison. usage: bench/voxelize_kernels.sh BUILD_DIR
# Writes its JSON results under $OUT (default ./voxelize-kernels).
set -uo pipefail
build=${1:?usage: bench/voxelize_kernels.sh BUILD_DIR}
out=${OUT:-voxelize-kernels}
mkdir -p "$out"
"$build/tests/test_gpu_voxelize" > "$out/test.log" 2>&1
echo "GPU test exit code: $? ($(grep -c passed "$out/test.log") cases passed; log in test.log)"
grep -E "FAILED|fail|ERROR" "$out/test.log" | head -5
for path in 0 1 auto; do
  for shape in "10M 1" "2M 1" "1M 1" "1M 8"; do
    set -- $shape
    f="$out/r-$path-$1x$2.json"
    if [ "$path" = auto ]; then unset GS_VOXELIZE_BINNED; else export GS_VOXELIZE_BINNED=$path; fi
    "$build/gpuscale" run voxelize --backend cuda --mode count --points "$1" --clouds "$2" \
      --grid 128 --iters 200 --runs 3 -q -o "$f" > /dev/null || echo "run failed: $f"
  done
done
unset GS_VOXELIZE_BINNED
python3 - "$out" <<'PY'
import glob, json, sys
print(f"{'case':<22}{'median us':>10}{'min us':>9}{'GB/s':>8}{'% 3352':>8} verify")
for f in sorted(glob.glob(sys.argv[1] + "/r-*.json")):
    m = json.load(open(f))["measurements"][0]
    st = m["aggregate"]["step"]
    b = m["cost"]["bytes_per_step"]
    print(f"{f.split('/')[-1][2:-5]:<22}{st['median']*1e6:>10.1f}{st['min']*1e6:>9.1f}"
          f"{b/st['median']/1e9:>8.0f}{100*b/st['median']/3352e9:>7.1f}% {m['verification']['status']}")
PY
python3 bench/voxelize_vs_torch.py "$build/gpuscale" --json "$out/torch.json"
