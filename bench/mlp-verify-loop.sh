#!/usr/bin/env bash
# mlp's verification must not flake (docs/workloads/mlp.md, "Verification"):
# 200 consecutive verified steps of every preset at batch 128 and 8192 in
# each precision (--runs 200 --iters 1 --warmup 0: each run ends with one
# more step checked against the CPU reference), then a wrong gradient
# element (--verify-corrupt -3: the largest negated and tripled, 4 times its
# size off; its worst-case bound is about twice its size on the large
# preset in bf16 at the first step, up to 3.8 times after training in the
# CPU emulation of docs/workloads/mlp.md) that must fail.
# Usage: bench/mlp-verify-loop.sh [GPUSCALE] (default build/gpuscale).
# BACKEND=cpu runs fp32 only (the CPU has no tf32 or bf16) and no corrupt
# case (the CPU's step is the reference); RUNS=N changes the 200, PRESETS,
# BATCHES and PRECISIONS (space-separated) the presets, batch sizes and
# precisions (each large case verifies on the CPU for about a second a
# step: split the loop to stay within a time limit).
# Documents and logs go to $OUT (default ./mlp-verify-loop).
set -uo pipefail
bin=${1:-build/gpuscale}
backend=${BACKEND:-cuda}
runs=${RUNS:-200}
out=${OUT:-mlp-verify-loop}
mkdir -p "$out"
read -r -a precisions <<<"${PRECISIONS:-fp32 tf32 bf16}"
[ "$backend" = cpu ] && precisions=(fp32)
failures=0
for preset in ${PRESETS:-medium large}; do
  for batch in ${BATCHES:-128 8192}; do
    for precision in "${precisions[@]}"; do
      name="$preset-$batch-$precision"
      "$bin" run mlp --backend "$backend" --preset "$preset" --batch "$batch" \
        --precision "$precision" --runs "$runs" --iters 1 --warmup 0 --no-progress \
        -o "$out/$name.json" >"$out/$name.log" 2>&1
      rc=$?
      verdict=$(python3 - "$out/$name.json" "$runs" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = d["measurements"][0]
ranks = [k for r in m["runs"] for k in r["ranks"]]
passed = sum(1 for k in ranks if k["verification"]["status"] == "passed")
worst = max((k["verification"]["max_abs_error"] or 0) / (k["verification"]["tolerance"] or 1e-300)
            for k in ranks)
print(f'{passed} of {len(ranks)} verified steps passed (wanted {sys.argv[2]}), '
      f'largest error / largest bound {worst:.3g}; {m["verification"]["detail"][:160]}')
sys.exit(0 if passed == len(ranks) == int(sys.argv[2]) else 1)
PY
      )
      vrc=$?
      if [ "$rc" = 0 ] && [ "$vrc" = 0 ]; then echo "ok   $name: $verdict"
      else echo "FAIL $name (exit $rc): $verdict $(tail -3 "$out/$name.log")"; failures=$((failures + 1)); fi
    done
  done
done
if [ "$backend" != cpu ]; then
  for preset in ${PRESETS:-medium large}; do
    for precision in "${precisions[@]}"; do
      name="corrupt-$preset-$precision"
      "$bin" run mlp --backend "$backend" --preset "$preset" --batch 128 --precision "$precision" \
        --runs 1 --iters 1 --warmup 0 --no-progress --verify-corrupt -3 -o "$out/$name.json" \
        >"$out/$name.log" 2>&1
      rc=$?
      status=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["measurements"][0]["status"])' \
        "$out/$name.json" 2>/dev/null)
      if [ "$rc" = 1 ] && [ "$status" = verification ]; then
        echo "ok   $name: the wrong element failed the run (exit 1)"
      else
        echo "FAIL $name: exit $rc, status '$status', expected 1 and verification: $(tail -3 "$out/$name.log")"
        failures=$((failures + 1))
      fi
    done
  done
fi
[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
if [ "$backend" = cpu ]; then echo "mlp verification: every step passed (no wrong-element case on the CPU)"
else echo "mlp verification: every step passed, every wrong element failed"; fi
