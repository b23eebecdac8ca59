#!/usr/bin/env bash
# `gpuscale check pairs` on GPUs (docs/check.md, "Localization by pairs"):
# on the node's first 2-4 GPUs, one rank thread per GPU, then one process
# per GPU under mpirun: a clean run names nobody (exit 0, the tournament's
# rounds and pairs, each exchange 64 MiB through NCCL, checked); a GPU
# slowed 3 times (--inject slow) and a GPU arriving late at every exchange
# (--inject late, 3 times the clean run's slowest median exchange) are
# named, that GPU alone, their pairs over 2x the others (with 2 GPUs the
# one pair cannot tell a GPU from the link: undecided, exit 6); under
# mpirun with each process its own host (GPUSCALE_TEST_SEPARATE_HOSTS=1)
# the node bisection between the leaders' GPUs names the slowed node.
# slowpair is refused on GPUs. Skips (77) with fewer than 2 GPUs; the
# mpirun cases are left out without mpirun or in a build without MPI,
# saying so. $1 is the gpuscale binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_gpus 2
bin=$(readlink -f "$bin")
export NCCL_NVLS_ENABLE=0
n=$((gpu_count < 4 ? gpu_count : 4))
gpus=0-$((n - 1))
slow=$((n - 1)) # the GPU slowed
late=1          # the GPU made late
named=5
[ "$n" -eq 2 ] && named=6 # one pair: undecided

expect 2 "slowpair: a slow link is rehearsed in the cpu backend's host transport only" -- \
  check pairs --backend cuda --gpus "$gpus" --inject slowpair:rank=0,peer=1,factor=4
expect 2 "option --ranks applies to the cpu backend" -- check pairs --backend cuda --ranks 2

# run NAME CODE CMD...: the command's JSON into $work/NAME.json, its exit
# code CODE and its time shown.
names=""
run() {
  local name=$1 code=$2 t0=$SECONDS
  shift 2
  timeout -s KILL 60 "$@" -f json -o "$work/$name.json" >"$work/$name.out" 2>&1
  local rc=$?
  echo "$name: exit $rc in $((SECONDS - t0)) s"
  if [ "$rc" != "$code" ]; then
    fail "$name exited $rc, not $code: $(tail -20 "$work/$name.out")"
  else
    names="$names $name"
  fi
}
c=("$bin" check pairs --backend cuda --gpus "$gpus")
run clean 0 "${c[@]}"
# The lateness: 3 times the clean run's slowest median exchange, in us.
us=$(python3 -c "
import json, math, sys
d = json.load(open(sys.argv[1]))
m = max(p[k]['median_seconds'] for p in d['pairs'] for k in ('allreduce', 'copy'))
print(max(100, math.ceil(3e6 * m)))" "$work/clean.json" 2>/dev/null) || us=1000
echo "late: $us us"
run slow "$named" "${c[@]}" --inject "slow:rank=$slow,factor=3"
run late "$named" "${c[@]}" --inject "late:rank=$late,us=$us"
mpi=1
if ! command -v mpirun >/dev/null; then
  echo "mpirun cases left out: mpirun is not installed (openmpi-bin)"
  mpi=0
elif "$bin" info 2>/dev/null | grep -qE "^MPI +none"; then
  echo "mpirun cases left out: a build without MPI"
  mpi=0
fi
if [ "$mpi" = 1 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  mp=(mpirun --oversubscribe -np "$n" -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE "$bin" check pairs
      --backend cuda --gpus "$gpus")
  run mpiclean 0 "${mp[@]}"
  run mpislow "$named" "${mp[@]}" --inject "slow:rank=$slow,factor=3"
  export GPUSCALE_TEST_SEPARATE_HOSTS=1
  run nodeslow "$named" mpirun --oversubscribe -np "$n" -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE \
    -x GPUSCALE_TEST_SEPARATE_HOSTS "$bin" check pairs --backend cuda --gpus "$gpus" \
    --inject "slow:rank=$slow,factor=3"
  unset GPUSCALE_TEST_SEPARATE_HOSTS
fi

python3 - "$work" "$n" "$slow" "$late" $names <<'PY' || failures=$((failures + 1))
import json, sys
work, n, slow, late = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def need(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)
for name in sys.argv[5:]:
    d = json.load(open(f"{work}/{name}.json"))
    nodes = name.startswith("node")
    need(d["check"] == "pairs" and d["backend"] == "cuda" and d["ranks"] == n, (name, d["ranks"]))
    need(d["bytes"] == 64 << 20 and d["iterations"] == 20 and d["host"]["pinned"] is None,
         (name, d["bytes"], d["host"]))
    need([g["cuda_device"] for g in d["gpus"]] == list(range(n)), (name, d["gpus"]))
    pairs = [(p["a"], p["b"]) for p in d["pairs"]]
    if nodes:
        rounds = (n - 1).bit_length()
        need(d["schedule"] == "node bisection" and d["rounds"] == rounds, (name, d["rounds"]))
        need(sorted(pairs) == sorted({(u, u ^ (1 << r)) for r in range(rounds) for u in range(n)
                                      if u < u ^ (1 << r) < n}), (name, pairs))
    else:
        need(d["schedule"] == "tournament" and d["rounds"] == (n - 1 if n % 2 == 0 else n),
             (name, d["rounds"]))
        need(sorted(pairs) == [(a, b) for a in range(n) for b in range(a + 1, n)], (name, pairs))
    need(d["slots"] == d["rounds"], (name, d["slots"]))
    for p in d["pairs"]:
        for k in ("allreduce", "copy"):
            need(len(p[k]["seconds"]) == 20 and min(p[k]["seconds"]) > 0, (name, p))
    named = d["named_nodes" if nodes else "named_ranks"]
    fault = None if "clean" in name else late if name == "late" else slow
    cells = " ".join("%d-%d %.2fx/%.2fx (%.0f/%.0f us)" % (
        p["a"], p["b"], p["allreduce"]["ratio"], p["copy"]["ratio"],
        p["allreduce"]["median_seconds"] * 1e6, p["copy"]["median_seconds"] * 1e6)
        for p in d["pairs"])
    print("%s: %s, named %r, links %r, %.1f s: %s" % (name, d["overall"], named,
                                                      d["named_links"], d["seconds"], cells))
    if fault is None:
        need(d["overall"] == "pass" and named == [] and d["named_links"] == [] and
             d["confirm"] == [], (name, d["overall"], named, d["reason"]))
        continue
    for p in d["pairs"]:
        with_fault = fault in (p["a"], p["b"])
        for k in ("allreduce", "copy"):
            r = p[k]["ratio"]
            need(r > 2.0 if with_fault else r < 1.3, (name, p["a"], p["b"], k, r))
    if n == 2:
        need(d["overall"] == "warn" and d["pairs"][0]["judged"] == "undecided" and named == [],
             (name, d["overall"], d["pairs"][0]["judged"]))
    else:
        need(d["overall"] == "fail" and named == [fault] and d["named_links"] == [],
             (name, d["overall"], named, d["named_links"]))
PY
exit $((failures > 0))
