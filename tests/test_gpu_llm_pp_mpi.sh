#!/usr/bin/env bash
# llm's pipeline (--pp) on GPUs under mpirun, one process per GPU: the
# stages are processes whose residual stream and tokens go over NCCL
# links between them (a call's header and the logits over MPI). 2 stages
# on 2 GPUs; with 4 GPUs also 2 stages of 2 tensor-parallel shards and 2
# replicas of 2 stages. Each run is verified over its processes against
# the CPU reference (0 mismatches), every request completes, tokens/s and
# every stage's busy time are reported. Skips (77) with fewer than 2
# GPUs, without mpirun or in a build without MPI. $1 is the gpuscale
# binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_gpus 2
need_mpirun
if "$bin" info 2>/dev/null | grep -qE "^MPI +none"; then
  echo "skipped: a build without MPI"
  exit 77
fi
bin=$(readlink -f "$bin")
export NCCL_NVLS_ENABLE=0

args=(--backend cuda --model llama-1b --layers 4 --input-min 16 --input-max 64 --output-min 8
      --output-max 16 --batch 8 --samples 32 --runs 1 --no-progress -q)
# name: processes and layout options
cases=("pp2:2:--pp 2")
[ "$gpu_count" -ge 4 ] && cases+=("tp2pp2:4:--tp 2 --pp 2" "dp2pp2:4:--pp 2")
names=""
for c in "${cases[@]}"; do
  IFS=: read -r name np opts <<<"$c"
  # shellcheck disable=SC2086 # the layout's options are words
  timeout -s KILL 180 mpirun --oversubscribe -np "$np" -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE \
    "$bin" run llm "${args[@]}" $opts -o "$work/$name.json" >"$work/$name.out" 2>&1 ||
    fail "mpirun -np $np llm $opts: $(cat "$work/$name.out")"
  names="$names $name"
done
python3 - "$work" $names <<'PY' || failures=$((failures + 1))
import json, os, sys
layouts = {"pp2": (1, 2, 1), "tp2pp2": (2, 2, 1), "dp2pp2": (1, 2, 2)}
for name in sys.argv[2:]:
    tp, pp, replicas = layouts[name]
    d = json.load(open(os.path.join(sys.argv[1], name + ".json")))
    assert d["status"] == "ok", (name, d["status"])
    m = d["measurements"][0]
    assert m["world_size"] == tp * pp * replicas, (name, m["world_size"])
    assert m["parallelism"] == {"gpus_per_rank": tp * pp, "option": "pp"}, (name, m["parallelism"])
    v = m["verification"]
    assert v["status"] == "passed" and v["mismatches"] == 0, (name, v)
    want = "(first of a pipelined replica over processes) vs CPU reference"
    assert want in v["detail"], (name, v)
    assert m["llm"]["tokens_per_second"] > 0, (name, m["llm"]["tokens_per_second"])
    p = m["llm"]["pipeline"]
    assert p["stages"] == pp and all(s["busy_seconds"] > 0 for s in p["per_stage"]), (name, p)
    ok = sum(q["status"] == "ok" for r in m["runs"][0]["ranks"] for q in r["requests"])
    assert ok == 32, (name, ok)
    print("%s: %.1f tokens/s, verified" % (name, m["llm"]["tokens_per_second"]))
PY
exit $((failures > 0))
