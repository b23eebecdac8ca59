#!/usr/bin/env bash
# gpuscale under a real Slurm cluster whose node is this machine
# (scripts/slurm-local makes one; .ci/run starts it): `srun --mpi=pmix -n 2`
# runs run, scale and coll in mpi mode (one CPU rank per process) into
# documents written by process 0 that record the Slurm job; a killed rank
# ends in a partial document naming it; an srun without PMIx is refused in
# one line before MPI_Init; the shipped batch scripts run with their GPU
# lines dropped, as their headers say (sbatch --wait). Skips (77) saying
# why where no Slurm node on this host takes jobs.
set -u
# Absolute: the steps and batch jobs run in other directories.
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "$0")/cli_lib.sh"
examples=$(cd "$(dirname "$0")/../examples/slurm" && pwd)
skip() {
  echo "skipped: $*"
  exit 77
}
command -v srun >/dev/null && command -v sinfo >/dev/null ||
  skip "no Slurm client here (scripts/slurm-local installs and starts a one-node cluster)"
host=$(hostname -s)
state=$(timeout 10 sinfo -h -n "$host" -o %t 2>&1) ||
  skip "no Slurm controller answers (sinfo: $state; scripts/slurm-local starts one)"
[[ "$state" =~ ^(idle|mix|alloc) ]] ||
  skip "this host ($host) is no Slurm node that takes jobs (sinfo: '${state:-not listed}'; scripts/slurm-local makes it one)"
timeout 10 srun --mpi=list 2>&1 | grep -qw pmix ||
  skip "srun has no pmix plugin (Debian: slurm-wlm-basic-plugins and libpmix2)"
"$bin" version --format json | python3 -c \
  'import json, sys; sys.exit(0 if json.load(sys.stdin)["mpi"]["built_in"] else 1)' ||
  skip "this gpuscale was built without MPI"
# Open MPI's components leave allocations behind at MPI_Finalize (see
# test_cli_mpi.sh); the other sanitizer checks stay on.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
# Where there is no GPU, the auto backend runs (and says so, once).
backend=(--backend cpu)
no_gpu=0
if "$bin" info 2>/dev/null | grep -q "^GPUs .*no usable CUDA device"; then
  backend=()
  no_gpu=1
fi
small=(voxelize "${backend[@]}" --points 20000 --grid 32,32,32 --warmup 1 --runs 1 --no-progress)

# step NAME SRUN_OPTIONS... -- ARGS...: one srun step of 2 tasks running
# gpuscale ARGS, bounded in time; exit code in $rc, seconds in $took,
# output in $work/NAME.out.
step() {
  local name=$1 start=$SECONDS
  shift
  local opts=()
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  (cd "$work" && timeout -s KILL 300 srun -n 2 --immediate=120 "${opts[@]}" "$bin" "$@") \
    >"$work/$name.out" 2>&1
  rc=$?
  took=$((SECONDS - start))
}
# check NAME: the python program on stdin asserts on $work/NAME.json.
check() {
  python3 - "$work/$1.json" "$host" || fail "$1: $(cat "$work/$1.out")"
}
# The Slurm members every document of an srun step has, for check's programs.
cat >"$work/slurm_doc.py" <<'PY'
import json, sys
def load(path, host, processes=2):
    d = json.load(open(path))
    env = d["environment"]
    assert env["launch"] == {"mode": "mpi", "launcher": "slurm", "processes": processes}, env["launch"]
    assert [p["rank"] for p in env["processes"]] == list(range(processes)), env["processes"]
    s = env["slurm"]
    assert s["job_id"].isdigit() and s["step_id"].isdigit(), s
    assert host in s["node_list"], s
    return d
PY
export PYTHONPATH="$work"

# run: both ranks' samples in process 0's document.
step run --mpi=pmix -- run "${small[@]}" --iters 12 --out "$work/run.json"
[ "$rc" = 0 ] || fail "srun run exited $rc: $(cat "$work/run.out")"
[ "$(grep -c 'backend cpu, 2 CPU ranks' "$work/run.out")" = 1 ] ||
  fail "srun run: not exactly one summary: $(cat "$work/run.out")"
if [ "$no_gpu" = 1 ]; then
  [ "$(grep -c 'no NVIDIA driver found.*running the CPU backend' "$work/run.out")" = 1 ] ||
    fail "srun run: the no-driver note is not printed exactly once: $(cat "$work/run.out")"
fi
check run <<'PY'
import sys, slurm_doc
d = slurm_doc.load(sys.argv[1], sys.argv[2])
assert d["status"] == "ok", d["status"]
m, = d["measurements"]
assert m["world_size"] == 2 and m["status"] == "ok", (m["world_size"], m["status"])
ranks = m["runs"][0]["ranks"]
assert [r["rank"] for r in ranks] == [0, 1] and all(len(r["wall_seconds"]) == 12 for r in ranks), ranks
PY

# scale: 1 and 2 ranks, the extra process idling at 1.
step scale --mpi=pmix -- scale "${small[@]}" -q --iters 12 --out "$work/scale.json"
[ "$rc" = 0 ] || fail "srun scale exited $rc: $(cat "$work/scale.out")"
check scale <<'PY'
import sys, slurm_doc
d = slurm_doc.load(sys.argv[1], sys.argv[2])
assert d["status"] == "ok", d["status"]
assert [m["world_size"] for m in d["measurements"]] == [1, 2], [m["world_size"] for m in d["measurements"]]
assert all(m["status"] == "ok" and m["aggregate"]["step"]["n"] == 12 for m in d["measurements"])
PY

# coll: an allreduce sweep over both processes, every element checked.
step coll --mpi=pmix -- coll allreduce --backend cpu --minbytes 8 --maxbytes 4K --stepfactor 8 \
  --iters 5 --warmup 1 -q --out "$work/coll.json"
[ "$rc" = 0 ] || fail "srun coll exited $rc: $(cat "$work/coll.out")"
check coll <<'PY'
import sys, slurm_doc
d = slurm_doc.load(sys.argv[1], sys.argv[2])
assert d["status"] == "ok", d["status"]
ms = d["measurements"]
# 8, 64, 512 and 4096 bytes, out of place and in place.
assert sorted({m["collective"]["bytes"] for m in ms}) == [8, 64, 512, 4096], ms
assert len(ms) == 8 and all(m["world_size"] == 2 and m["status"] == "ok" for m in ms)
assert all(m["collective"]["wrong_elements"] == 0 and m["collective"]["launch"] == "mpi" for m in ms)
PY

# A killed rank: Slurm ends the step (--kill-on-bad-exit), process 0
# writes what was measured and names the rank.
step kill --mpi=pmix --kill-on-bad-exit=1 -- scale "${small[@]}" -q --iters 20 --timeout 10 \
  --out "$work/kill.json" --inject kill:rank=1,after=5
[ "$rc" != 0 ] || fail "srun with a killed rank exited 0"
[ "$took" -le 30 ] || fail "the killed rank's step took $took s"
check kill <<'PY'
import sys, slurm_doc
d = slurm_doc.load(sys.argv[1], sys.argv[2])
assert d["status"] == "partial", d["status"]
ms = {m["world_size"]: m for m in d["measurements"]}
assert ms[1]["status"] == "ok", ms[1]["status"]
f = ms[2]["failure"]
assert f["rank"] == 1 and f["status"] == "rank-lost" and "died" in f["reason"], f
assert f["last_completed_step"] in (4, 5), f
PY

# Without PMIx Open MPI cannot start: one line of gpuscale's, exit 2, no
# MPI_Init output, no document.
step nopmix --mpi=none -- run "${small[@]}" --out "$work/nopmix.json"
[ "$rc" = 2 ] || fail "srun --mpi=none exited $rc, expected 2: $(cat "$work/nopmix.out")"
[ "$(grep -c '^gpuscale' "$work/nopmix.out")" = 1 ] &&
  grep -q "^gpuscale: error: srun started 2 processes without PMIx (--mpi=none), .*run srun --mpi=pmix" \
    "$work/nopmix.out" || fail "srun --mpi=none: not the one line: $(cat "$work/nopmix.out")"
grep -qE "MPI_Init|OPAL|PMI support" "$work/nopmix.out" &&
  fail "srun --mpi=none: Open MPI's output came through: $(cat "$work/nopmix.out")"
[ -e "$work/nopmix.json" ] && fail "srun --mpi=none wrote a document"

# batch NAME SBATCH_OPTIONS...: the shipped script NAME with its GPU lines
# dropped and small problems, as its header says, submitted and waited
# for; its job's directory in $dir.
batch() {
  local name=$1
  shift
  local submit="$work/submit-$name"
  mkdir -p "$submit"
  sed '/^#SBATCH --gpus/d' "$examples/$name" >"$submit/cpu.sbatch"
  local id
  id=$(cd "$submit" && GPUSCALE="$bin" GPUSCALE_SCALE_ARGS="--points 20K --grid 32,32,32 --min-time 0.2 --runs 1" \
    GPUSCALE_COLL_ARGS="--maxbytes 4K --stepfactor 8" timeout 600 sbatch --parsable --wait \
    --output="$submit/job.out" "$@" cpu.sbatch 2>"$submit/sbatch.err")
  rc=$?
  id=${id%%;*}
  dir="$submit/gpuscale-$id"
  [ "$rc" = 0 ] || fail "sbatch $name exited $rc: $(cat "$submit/sbatch.err" "$submit/job.out")"
  for f in scale-voxelize.json allreduce.json report.md; do
    [ -s "$dir/$f" ] || fail "sbatch $name: no $f in $dir: $(cat "$submit/job.out")"
  done
}
batch gpuscale-1node.sbatch
[ -s "$dir/info.json" ] || fail "gpuscale-1node.sbatch: no info.json"
python3 - "$dir" <<'PY' || fail "gpuscale-1node.sbatch: $(cat "$dir/../job.out")"
import json, sys
d = json.load(open(sys.argv[1] + "/scale-voxelize.json"))
# One process in the batch step: threads mode, the job recorded, no step.
assert d["status"] == "ok" and "launch" not in d["environment"], d["status"]
assert d["environment"]["slurm"]["step_id"] is None, d["environment"]["slurm"]
assert json.load(open(sys.argv[1] + "/allreduce.json"))["status"] == "ok"
PY
batch gpuscale-nnodes.sbatch --nodes=1 --ntasks-per-node=2
[ -s "$dir/info-$(hostname).json" ] || fail "gpuscale-nnodes.sbatch: no info-$(hostname).json"
python3 - "$dir" "$host" <<'PY' || fail "gpuscale-nnodes.sbatch: $(cat "$dir/../job.out")"
import sys, slurm_doc
d = slurm_doc.load(sys.argv[1] + "/scale-voxelize.json", sys.argv[2])
assert d["status"] == "ok" and [m["world_size"] for m in d["measurements"]] == [1, 2]
assert slurm_doc.load(sys.argv[1] + "/allreduce.json", sys.argv[2])["status"] == "ok"
PY

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all Slurm tests passed (srun --mpi=pmix -n 2 on $host)"
