#!/usr/bin/env bash
# Weak scaling of every workload on the CPU backend, on 2 rank threads and
# under mpirun -np 2: each rank owns units of its own (distinct work_units
# shares, or distinct llm request ids), every measurement is ok and verified,
# the cost is that of the whole 2-rank problem and the efficiency is the
# throughput ratio over 2. Also: a strong split with more ranks than units
# is a usage error that leaves an existing --out file untouched, and a
# --grid whose product overflows 64 bits is refused naming --grid.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

common=(--backend cpu --scaling weak --warmup 1 --runs 1 --no-progress -q)
declare -A opts=(
  [voxelize]="--iters 4 --points 5K --clouds 2 --grid 16"
  [resample]="--iters 4 --batch 2 --samples 200 --targets 64 --dims 8"
  [fuse]="--iters 4 --batch 2 --targets 32"
  [mlp]="--iters 4 --batch 16 --samples 256 --layers 8,16,2"
  [llm]="--model tiny --input-min 4 --input-max 10 --output-min 2 --output-max 5 --samples 3"
)
workloads=(voxelize resample fuse mlp llm)
# Every registered workload is covered: a new one must be added above.
for w in $("$bin" run --help 2>&1 | awk '/^Workloads:/ {on = 1; next} on && /^  [a-z]/ {print $1}'); do
  [ -n "${opts[$w]+x}" ] || fail "workload $w has no weak-scaling case in this test"
done

check_documents() { # DIR [FULL_JOB_ONLY...]: every weak document in DIR
  python3 - "$@" <<'PY'
import json, os, sys
work, full_only = sys.argv[1], sys.argv[2:]
names = ["voxelize", "resample", "fuse", "mlp", "llm"]
bad = 0
def check(ok, what):
    global bad
    if not ok:
        print("FAIL:", what)
        bad += 1
for w in names:
    with open(os.path.join(work, w + ".json")) as f:
        doc = json.load(f)
    ms = doc["measurements"]
    if w in full_only:
        # Measured at the full job only: no 1-rank base, so no efficiency;
        # the ranks' own units are still checked.
        check([m["world_size"] for m in ms] == [2], f"{w}: sizes {[m['world_size'] for m in ms]}")
        m = ms[0]
        check(m["status"] == "ok" and m["verification"]["status"] == "passed", f"{w}: {m['status']}")
        U = m["work_units"]["total"] // 2
        check(m["work_units"]["begin"] == [0, U] and m["work_units"]["count"] == [U, U],
              f"{w}: units {m['work_units']}")
        continue
    check([m["world_size"] for m in ms] == [1, 2], f"{w}: sizes {[m['world_size'] for m in ms]}")
    if len(ms) != 2:
        continue
    one, two = ms
    for m in ms:
        check(m["status"] == "ok", f"{w} at {m['world_size']}: status {m['status']} {m['error']}")
        check(m["scaling"] == "weak", f"{w}: scaling {m['scaling']}")
        check(m["verification"]["status"] in ("passed", "skipped" if w == "llm" else "passed"),
              f"{w}: verification {m['verification']}")
    eff = two["aggregate"].get("efficiency")
    check(isinstance(eff, (int, float)) and eff > 0, f"{w}: efficiency {eff}")
    t1 = one["aggregate"]["throughput_items_per_second"]
    t2 = two["aggregate"]["throughput_items_per_second"]
    if eff:
        check(abs(eff - t2 / t1 / 2) < 1e-9 * max(1, eff), f"{w}: efficiency {eff} != {t2}/{t1}/2")
    ranks = two["runs"][0]["ranks"]
    check([r["status"] for r in ranks] == ["ok", "ok"], f"{w}: rank status")
    if w == "llm":
        # The llm's own driver: each replica serves its own requests.
        ids = [{q["id"] for q in r["requests"]} for r in ranks]
        n1 = len(one["runs"][0]["ranks"][0]["requests"])
        check(not (ids[0] & ids[1]), f"{w}: ranks share requests {ids}")
        check(len(ids[0] | ids[1]) == 2 * n1, f"{w}: {ids} are not twice the {n1} of one rank")
        continue
    u1, u2 = one["work_units"], two["work_units"]
    U = u1["total"]
    check(u1["begin"] == [0] and u1["count"] == [U], f"{w}: 1-rank units {u1}")
    check(u2["total"] == 2 * U and u2["begin"] == [0, U] and u2["count"] == [U, U],
          f"{w}: 2-rank units {u2} (each rank its own {U})")
    check(two["cost"]["items_per_step"] == 2 * one["cost"]["items_per_step"],
          f"{w}: cost {two['cost']} is not twice {one['cost']}")
    check([r["items_per_step"] for r in ranks] == [one["cost"]["items_per_step"]] * 2,
          f"{w}: rank items {[r['items_per_step'] for r in ranks]}")
sys.exit(1 if bad else 0)
PY
}

mkdir -p "$work/threads" "$work/mpi"
for w in "${workloads[@]}"; do
  # shellcheck disable=SC2086 # the options are words
  expect 0 "" -- scale "$w" "${common[@]}" ${opts[$w]} --ranks 2 -o "$work/threads/$w.json"
done
check_documents "$work/threads" || failures=$((failures + 1))

if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # Under the sanitizer build: Open MPI's components leave allocations
  # behind at MPI_Finalize (as in test_cli_mpi.sh); address and undefined-
  # behaviour checks stay on, and the threads part above checks our leaks.
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  for w in "${workloads[@]}"; do
    # A communicating workload is measured at the full job only under a
    # launcher (docs/multinode.md): mlp runs --counts 2.
    counts=()
    [ "$w" = mlp ] && counts=(--counts 2)
    # shellcheck disable=SC2086
    out=$(timeout 300 mpirun --oversubscribe -np 2 "$bin" scale "$w" "${common[@]}" ${opts[$w]} \
          "${counts[@]}" --timeout 120 -o "$work/mpi/$w.json" 2>&1) || fail "mpirun -np 2 scale $w: $out"
  done
  check_documents "$work/mpi" mlp || failures=$((failures + 1))
else
  echo "skipped the mpirun part: mpirun is not installed"
fi

# More ranks than units under strong scaling: refused before anything runs.
printf '{"kept": true}\n' >"$work/kept.json"
cp "$work/kept.json" "$work/kept.orig"
expect 2 "cannot split 8 clouds over 16 ranks.*--clouds 16 or more.*--ranks" -- \
  run voxelize --backend cpu --points 1K --ranks 16 --iters 2 --out "$work/kept.json"
cmp -s "$work/kept.json" "$work/kept.orig" || fail "run --ranks 16 changed the existing --out file"
expect 2 "cannot split 8 clouds over 16 ranks" -- \
  scale voxelize --backend cpu --points 1K --ranks 16 --iters 2 --out "$work/kept.json"
cmp -s "$work/kept.json" "$work/kept.orig" || fail "scale --ranks 16 changed the existing --out file"
expect 2 "cannot split 4 batch elements over 8 ranks.*--batch 8" -- \
  scale fuse --backend cpu --ranks 8 --iters 2 --out "$work/kept.json"
cmp -s "$work/kept.json" "$work/kept.orig" || fail "scale fuse --ranks 8 changed the existing --out file"
expect 2 "--split proportional applies to strong scaling only" -- \
  scale voxelize --backend cpu --points 1K --ranks 2 --scaling weak --split proportional \
  --iters 2 --out "$work/kept.json"
cmp -s "$work/kept.json" "$work/kept.orig" || fail "weak --split proportional changed the --out file"

# Products of user values are checked: 2^24 cubed used to wrap to 0.
expect 2 "--grid 16777216x16777216x16777216.*over the limit" -- \
  run voxelize --backend cpu --grid 16777216,16777216,16777216 --out "$work/kept.json"
expect 2 "--points 1000000000 x \(3 \+ --features 1024\)" -- \
  run voxelize --backend cpu --points 1G --mode max --features 1024
expect 2 "--batch 4194304 x --layers" -- run mlp --backend cpu --batch 4194304 --layers 50,65536,3
expect 2 "--targets/--samples/--dims" -- run resample --backend cpu --samples 16M --dims 65536
cmp -s "$work/kept.json" "$work/kept.orig" || fail "an overflowing --grid changed the --out file"

[ "$failures" = 0 ] && echo "all weak-scaling CLI checks passed"
exit $((failures > 0))
