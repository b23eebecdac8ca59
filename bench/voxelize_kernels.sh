#!/usr/bin/env bash
# Voxelize count kernels on one GPU: the GPU test, then count mode at 128^3
# for 1M and 10M points in one cloud and 8 clouds of 1M, with the binned
# path forced off (GS_VOXELIZE_BINNED=0, global atomics), forced on (=1)
# and chosen by the launcher's rule (also 2M points, near the switch), then
# the PyTorch comparison. usage: bench/voxelize_kernels.sh BUILD_DIR
# Writes its JSON results under $OUT (default ./voxelize-kernels).
#
# bench/voxelize_kernels.sh --ab BUILD_DIR: the two generations of kernels
# side by side (GS_VOXELIZE_KERNELS=1, the first, against 2, the default),
# every mode (mean and max with 4 features) at 10M points in one cloud and
# at the default 8 clouds x 1M points, 128^3: the median step of each, the
# new one's speedup, each one's fraction of the memory roofline (the
# document's "roofline" member: cost bytes over the median step, against
# the GPU model's bandwidth) and each verification against the CPU
# reference (its usual rules: exact but for mean's 1e-5).
# About 30-45 s on one GPU (mostly generating the clouds and their CPU
# references on the host). JSON under $OUT (default ./voxelize-ab).
set -uo pipefail
if [ "${1:-}" = --ab ]; then
  build=${2:?usage: bench/voxelize_kernels.sh --ab BUILD_DIR}
  out=${OUT:-voxelize-ab}
  mkdir -p "$out"
  for shape in "10M 1" "1M 8"; do
    set -- $shape
    for mode in count occupancy "mean 4" "max 4"; do
      read -r m f <<<"$mode"
      for k in 1 2; do
        GS_VOXELIZE_KERNELS=$k "$build/gpuscale" run voxelize --backend cuda --mode "$m" \
          ${f:+--features $f} --points "$1" --clouds "$2" --grid 128 --iters 100 --warmup 5 \
          --runs 1 -q -o "$out/$m-$1x$2-k$k.json" > /dev/null || echo "run failed: $m $1x$2 kernels $k"
      done
    done
  done
  python3 - "$out" <<'PY'
import json, os, sys
d = sys.argv[1]
def one(name):
    try:
        m = json.load(open(os.path.join(d, name)))["measurements"][0]
    except (OSError, ValueError, IndexError, KeyError):
        return None
    r = m.get("roofline") or {}
    return m["aggregate"]["step"]["median"] * 1e6, r.get("fraction"), m["verification"]["status"], r.get("model")
model = None
print(f"{'case':<22}{'kernels 1 us':>13}{'kernels 2 us':>13}{'speedup':>9}{'roof 1':>8}{'roof 2':>8}  verify 1/2")
for shape in ("10M-1", "1M-8"):
    for mode in ("count", "occupancy", "mean", "max"):
        a, b = (one(f"{mode}-{shape.replace('-', 'x')}-k{k}.json") for k in (1, 2))
        if not a or not b:
            print(f"{mode + ' ' + shape:<22} missing")
            continue
        model = model or b[3] or a[3]
        pct = lambda x: f"{100 * x:.1f}%" if x is not None else "-"
        print(f"{mode + ' ' + shape.replace('-', 'x'):<22}{a[0]:>13.1f}{b[0]:>13.1f}{a[0] / b[0]:>8.2f}x"
              f"{pct(a[1]):>8}{pct(b[1]):>8}  {a[2]}/{b[2]}")
print(f"roofline: of {model or 'an unknown GPU model'}'s memory bandwidth (data/gpu-models.json); "
      "targets at 10M points (issue 33): count and occupancy 50%, mean and max 35%")
PY
  exit 0
fi
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
