#!/usr/bin/env bash
# On a machine with 2 GPUs and Open MPI: builds gpuscale with MPI, measures
# voxelize with run and scale in threads mode (one process, a thread per
# GPU) and in mpi mode (mpirun -np 2, one process per GPU) side by side,
# then kills and hangs a rank on the GPUs and times how long the others take
# to end. Result documents, the log and the table go to $OUT (default
# ./multi-gpu-check; logs of each command in $GS_LOG_DIR). usage:
# bench/multi-gpu-check.sh. GS_CHECK_CPU=1 runs the same on the CPU backend
# (a dry run of the script on a machine without GPUs).
# GS_DEPS_PREFIX names a folder with cJSON/cmocka unpacked (usr/include,
# usr/lib/...) where they are not installed system-wide.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-multi-gpu-check}
mkdir -p "$out"
build=${GS_BUILD_DIR:-/tmp/gpuscale-multi-build}
# Never NVLink multicast.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
prefix_args=()
if [ -n "${GS_DEPS_PREFIX:-}" ]; then
  prefix_args=(-DCMAKE_PREFIX_PATH="$GS_DEPS_PREFIX/usr")
  export LD_LIBRARY_PATH="$GS_DEPS_PREFIX/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
mpi=(mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH)
work=(voxelize --no-progress -q --runs 2 --min-time 0.5)
threads=(-g 2)
mpi_sel=(--backend cuda)
if [ "${GS_CHECK_CPU:-0}" = 1 ]; then
  work=(voxelize --no-progress -q --runs 2 --min-time 0.5 --points 20000 --grid 32,32,32)
  threads=(--backend cpu --ranks 2)
  mpi_sel=(--backend cpu)
fi
bin=$build/gpuscale
logs=${GS_LOG_DIR:-/tmp/multi-gpu-check-logs}
mkdir -p "$logs"

# timed NAME LIMIT CMD...: runs CMD with a time bound, output in NAME.txt;
# records its exit code and end time (epoch seconds) in NAME.rc / NAME.end.
timed() {
  local name=$1 limit=$2
  shift 2
  timeout -s KILL "$limit" "$@" >"$logs/$name.txt" 2>&1
  echo $? >"$logs/$name.rc"
  date +%s.%N >"$logs/$name.end"
}

{
  nvidia-smi --query-gpu=index,name,driver_version --format=csv
  command -v mpirun && mpirun --version | head -1
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 "${prefix_args[@]}" |
    grep -E "MPI|NCCL"
  cmake --build "$build" -j "$(nproc)" --target gpuscale 2>&1 | grep -E "error|warning"
  timed threads-run 120 "$bin" run "${work[@]}" "${threads[@]}" --out "$out/threads-run.json"
  timed mpi-run 120 "${mpi[@]}" "$bin" run "${work[@]}" "${mpi_sel[@]}" --out "$out/mpi-run.json"
  timed threads-scale 120 "$bin" scale "${work[@]}" "${threads[@]}" --out "$out/threads-scale.json"
  timed mpi-scale 120 "${mpi[@]}" "$bin" scale "${work[@]}" "${mpi_sel[@]}" --out "$out/mpi-scale.json"
  timed kill 60 "${mpi[@]}" "$bin" run "${work[@]}" "${mpi_sel[@]}" --timeout 20 \
    --inject kill:rank=1,after=20 --out "$out/kill.json"
  timed hang 60 "${mpi[@]}" "$bin" run "${work[@]}" "${mpi_sel[@]}" --timeout 5 \
    --inject hang:rank=1,after=20 --out "$out/hang.json"
  for t in threads-run mpi-run threads-scale mpi-scale kill hang; do
    echo "== $t (exit $(cat "$logs/$t.rc"))"
    tail -n 12 "$logs/$t.txt"
  done
  python3 - "$out" "$logs" <<'PY'
import json, os, re, sys
out, logs = sys.argv[1], sys.argv[2]
def doc(name):
    path = os.path.join(out, name + ".json")
    return json.load(open(path)) if os.path.exists(path) else None
print("\nvoxelize throughput (points/s), threads mode vs mpi mode")
print("%-6s %6s %14s %14s %8s" % ("cmd", "ranks", "threads", "mpi", "mpi/thr"))
for cmd in ("run", "scale"):
    t, m = doc("threads-" + cmd), doc("mpi-" + cmd)
    rows = {}
    for mode, d in (("threads", t), ("mpi", m)):
        for x in (d or {}).get("measurements", []):
            rows.setdefault(x["world_size"], {})[mode] = x["aggregate"]["throughput_items_per_second"]
    for n in sorted(rows):
        a, b = rows[n].get("threads"), rows[n].get("mpi")
        ratio = "%.3f" % (b / a) if a and b else "-"
        print("%-6s %6d %14s %14s %8s" % (cmd, n, "%.4g" % a if a else "-", "%.4g" % b if b else "-", ratio))
for name in ("kill", "hang"):
    d = doc(name)
    log = open(os.path.join(logs, name + ".txt")).read()
    died = re.search(r"(killed|hangs) by fault injection after step \d+ at ([0-9.]+)", log)
    end = float(open(os.path.join(logs, name + ".end")).read())
    rc = open(os.path.join(logs, name + ".rc")).read().strip()
    if not d:
        print("%s: no document (exit %s)" % (name, rc))
        continue
    m = d["measurements"][0]
    f = m.get("failure") or {}
    kept = [len(r["wall_seconds"]) for r in m["runs"][0]["ranks"]]
    since = "%.2f s" % (end - float(died.group(2))) if died else "?"
    print("%s: exit %s, document %s, measurement %s, failure rank %s on %s after step %s; "
          "samples kept per rank %s; fault to last exit %s" %
          (name, rc, d["status"], m["status"], f.get("rank"), f.get("host"),
           f.get("last_completed_step"), kept, since))
PY
} 2>&1 | tee "$out/multi-gpu-check.log"
