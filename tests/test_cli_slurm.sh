#!/usr/bin/env bash
# Dry run of the Slurm batch scripts in examples/slurm: bash -n, then each
# script run as Slurm would (SLURM_JOB_ID, SLURM_SUBMIT_DIR) with a fake
# srun and a fake gpuscale on the PATH that record their arguments, so the
# steps, their options and the job's directory are checked without Slurm
# or a GPU, and so is the scripts' CPU form (GPU lines dropped, smaller
# problems through GPUSCALE_*_ARGS). Usage: test_cli_slurm.sh GPUSCALE_BINARY (unused: every
# gpuscale call is recorded, not run).
bin=${1:?usage: test_cli_slurm.sh GPUSCALE_BINARY}
source "$(dirname "$0")/cli_lib.sh"
examples=$(cd "$(dirname "$0")/../examples/slurm" && pwd)

fake="$work/bin"
mkdir -p "$fake"
# srun: records "srun ARGS", then runs the step's command once (after
# srun's own options), here always a recorded call.
cat >"$fake/srun" <<'SH'
#!/usr/bin/env bash
printf 'srun %s\n' "$*" >>"$GS_FAKE_LOG"
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
exec "$@"
SH
# gpuscale: records "gpuscale ARGS" and creates the file named by --out.
cat >"$fake/gpuscale" <<'SH'
#!/usr/bin/env bash
printf 'gpuscale %s\n' "$*" >>"$GS_FAKE_LOG"
while [ $# -gt 0 ]; do
  if [ "$1" = --out ]; then mkdir -p "$(dirname "$2")" && : >"$2"; fi
  shift
done
SH
chmod +x "$fake/srun" "$fake/gpuscale"

# run_script NAME ARGS...: the script in a fresh submit directory, job 4242.
run_script() {
  local name=$1
  shift
  submit="$work/submit-$name"
  mkdir -p "$submit"
  log="$work/$name.log"
  : >"$log"
  (cd "$submit" && PATH="$fake:$PATH" GS_FAKE_LOG="$log" SLURM_JOB_ID=4242 \
    SLURM_SUBMIT_DIR="$submit" SLURM_JOB_NUM_NODES=2 bash "$examples/$name" "$@") \
    >"$work/$name.out" 2>&1 || fail "$name exited $?: $(cat "$work/$name.out")"
}

# has LOG PATTERN: a recorded call matches the extended regex.
has() { grep -qE -- "$2" "$1" || fail "$(basename "$1" .log): no call matches /$2/: $(cat "$1")"; }

for script in "$examples"/*.sbatch; do
  bash -n "$script" || fail "bash -n rejects $script"
  head -1 "$script" | grep -q '^#!/bin/bash' || fail "$script does not start with #!/bin/bash"
  grep -q '^#SBATCH --nodes=' "$script" || fail "$script has no #SBATCH --nodes"
done

run_script gpuscale-1node.sbatch mlp
job="$work/submit-gpuscale-1node.sbatch/gpuscale-4242"
log="$work/gpuscale-1node.sbatch.log"
has "$log" "^gpuscale info --format json --out $job/info.json$"
has "$log" "^gpuscale scale mlp --out $job/scale-mlp.json"
has "$log" "^gpuscale coll allreduce .*--out $job/allreduce.json"
has "$log" "^gpuscale report --format markdown --out $job/report.md $job/scale-mlp.json $job/allreduce.json$"
grep -q '^srun' "$log" && fail "the one-node script starts srun steps: $(cat "$log")"
[ -f "$job/version.json" ] || fail "the one-node script wrote no version.json"

run_script gpuscale-nnodes.sbatch
job="$work/submit-gpuscale-nnodes.sbatch/gpuscale-4242"
log="$work/gpuscale-nnodes.sbatch.log"
has "$log" "^srun --ntasks-per-node=1 --ntasks=2 bash -c .*info --format json --out .*$job/info-"
has "$log" "^srun --mpi=pmix --kill-on-bad-exit=1 --cpu-bind=cores gpuscale scale voxelize --out $job/scale-voxelize.json --timeout 120"
has "$log" "^srun --mpi=pmix --kill-on-bad-exit=1 gpuscale coll allreduce .*--out $job/allreduce.json"
has "$log" "^gpuscale info --format json --out $job/info-$(hostname).json$"
has "$log" "^gpuscale report --format markdown --out $job/report.md $job/scale-voxelize.json $job/allreduce.json$"
# The report is made once, outside the srun steps.
[ "$(grep -c '^gpuscale report' "$log")" = 1 ] || fail "report ran more than once: $(cat "$log")"
grep -q "results and report in $job" "$work/gpuscale-nnodes.sbatch.out" ||
  fail "the N-node script does not name the job's directory"

# Without GPUs, as the headers say: the GPU lines dropped, smaller problems
# through the environment.
for script in "$examples"/*.sbatch; do
  grep -q "sed '/^#SBATCH --gpus/d'" "$script" || fail "$script does not say how to drop its GPU lines"
  sed '/^#SBATCH --gpus/d' "$script" | grep -qE '^#SBATCH.*(--gpu|gres=gpu)' && fail "$script keeps a GPU line after the sed"
done
GPUSCALE_SCALE_ARGS="--points 20K --runs 1" GPUSCALE_COLL_ARGS="--maxbytes 4K --stepfactor 8" \
  run_script gpuscale-nnodes.sbatch
log="$work/gpuscale-nnodes.sbatch.log"
has "$log" "^gpuscale scale voxelize --out $job/scale-voxelize.json --timeout 120 --no-progress --points 20K --runs 1$"
has "$log" "^gpuscale coll allreduce --maxbytes 4K --stepfactor 8 --out $job/allreduce.json$"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all Slurm example tests passed"
