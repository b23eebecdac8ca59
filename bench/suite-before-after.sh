#!/usr/bin/env bash
# On a GPU machine: builds this tree and an earlier source tree of gpuscale
# side by side, runs the GPU tests of this tree, then `gpuscale suite` with
# each binary in turn (old, new, old, new), and prints the 1-GPU throughput
# of every workload from both, with the ratio new/old. The suites alternate
# so that a drift of the machine hits both the same way.
#   OLD_SRC=path/to/old/source [OUT=dir] [ROUNDS=2] bench/suite-before-after.sh
# GS_DEPS_PREFIX names a folder with cJSON/cmocka unpacked (usr/include,
# usr/lib/...) where they are not installed system-wide.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-suite-before-after}
rounds=${ROUNDS:-2}
: "${OLD_SRC:?set OLD_SRC to the earlier source tree}"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
prefix_args=()
if [ -n "${GS_DEPS_PREFIX:-}" ]; then
  prefix_args=(-DCMAKE_PREFIX_PATH="$GS_DEPS_PREFIX/usr")
  export LD_LIBRARY_PATH="$GS_DEPS_PREFIX/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
build() { # SRC DIR TARGET...
  local src=$1 dir=$2
  shift 2
  cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON "${prefix_args[@]}" >/dev/null &&
    cmake --build "$dir" -j "$(nproc)" "$@" 2>&1 | grep -E "error|warning"
  return 0
}
{
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  build . /tmp/gs-new
  build "$OLD_SRC" /tmp/gs-old --target gpuscale
  echo "== GPU tests of this tree: ctest -L gpu"
  ctest --test-dir /tmp/gs-new -L gpu --output-on-failure
  for r in $(seq "$rounds"); do
    for v in old new; do
      echo "== round $r: $v suite"
      start=$(date +%s%N)
      /tmp/gs-$v/gpuscale suite --out "/tmp/suite-$v-$r" --no-progress -q >"$out/suite-$v-$r.txt" 2>&1
      echo "exit $?, $(awk -v ns=$(($(date +%s%N) - start)) 'BEGIN { printf "%.1f", ns / 1e9 }') s"
    done
  done
  echo "== 1-GPU throughput per workload (median of the rounds), new / old"
  python3 - "$rounds" <<'PY'
import json, statistics, sys
rounds = int(sys.argv[1])
def rates(version):
    out = {}
    for r in range(1, rounds + 1):
        for w in ("voxelize", "resample", "fuse", "mlp", "llm"):
            try:
                doc = json.load(open(f"/tmp/suite-{version}-{r}/{w}.json"))
            except OSError:
                continue
            for m in doc["measurements"]:
                agg = m.get("aggregate") or {}
                rate = agg.get("throughput_items_per_second")
                if m["world_size"] == 1 and m["status"] == "ok" and rate:
                    key = (w, m.get("variant") or "")
                    out.setdefault(key, []).append(rate)
    return {k: statistics.median(v) for k, v in out.items()}
old, new = rates("old"), rates("new")
print(f"{'workload':<22} {'old':>14} {'new':>14} {'new/old':>8}")
for key in sorted(set(old) | set(new)):
    o, n = old.get(key), new.get(key)
    name = key[0] + (f" {key[1]}" if key[1] else "")
    ratio = f"{n / o:8.3f}" if o and n else "       -"
    print(f"{name:<22} {o or 0:14.4g} {n or 0:14.4g} {ratio}")
PY
} 2>&1 | tee "$out/suite-before-after.log"
