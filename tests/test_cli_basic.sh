#!/usr/bin/env bash
# End-to-end tests of the gpuscale binary on the CPU backend: help, version,
# exit codes of bad input, a run and a scale that write valid result files.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

expect 0 "usage: gpuscale" -- --help
# --help lists every exit code of docs/cli.md's table, in its order.
documented=$(sed -n '/^## Exit codes/,/^## [A-Z]/p' "$(dirname "$0")/../docs/cli.md" |
             grep -oE '^\| [0-9]+ \|' | grep -oE '[0-9]+' | tr '\n' ' ')
codes=$("$bin" --help | sed -n '/^Exit codes:/,$p' | grep -oE '(^|[ ,:])[0-9]+ [a-z]' |
        grep -oE '[0-9]+' | tr '\n' ' ')
[ "$documented" = "0 1 2 3 4 5 6 70 " ] || fail "docs/cli.md lists the exit codes '$documented'"
[ "$codes" = "$documented" ] || fail "gpuscale --help lists the exit codes '$codes'"
expect 0 "^gpuscale [0-9]+\.[0-9]+\.[0-9]+ \(git " -- --version
expect 2 "usage: gpuscale" --
expect 2 "unknown command 'frobnicate'" -- frobnicate
expect 0 "Options of voxelize" -- run voxelize --help
expect 0 "--scaling" -- scale --help
expect 2 "missing WORKLOAD" -- run
expect 2 "unknown workload 'voxelise'" -- run voxelise
expect 2 "unknown option '--pionts'.*--points" -- run voxelize --pionts 10
expect 2 "option --iters" -- run voxelize --iters 12x
expect 2 "option --iters" -- run voxelize --iters 0
expect 2 "option --iters" -- run voxelize --iters
expect 2 "--iters and --min-time conflict" -- run voxelize --iters 5 --min-time 1
expect 2 "option --mode" -- run voxelize --mode median
expect 2 "--gpus" -- run voxelize --backend cpu --gpus 0
# A malformed --gpus is a usage error naming the option, with or without a GPU.
expect 2 "option --gpus: range 3-1 runs backwards" -- run voxelize --gpus 3-1
expect 2 "option --gpus: '0,,1' is not a list of GPU ordinals" -- run voxelize --gpus 0,,1
expect 2 "option --gpus" -- run voxelize --gpus -1
expect 2 "option --gpus: GPU 0 listed twice" -- run voxelize --gpus 0,0
expect 2 "given twice" -- run voxelize --runs 2 --runs 3
expect 2 "unexpected argument 'extra'" -- run voxelize extra
expect 2 "cannot split 2 clouds over 4 ranks" -- scale voxelize --backend cpu --ranks 4 --clouds 2 --points 1000 --iters 2 --runs 1 -q -o "$work/split.json"

small=(--backend cpu --points 20K --clouds 4 --grid 16 --voxel-size 1 --iters 12 --warmup 1 --runs 2 --no-progress)
expect 0 "voxelize" -- run voxelize "${small[@]}" --out "$work/run.json"
expect 0 "speedup" -- scale voxelize "${small[@]}" --ranks 2 --out "$work/nested/dir/scale.json"
expect 0 "" -- run voxelize "${small[@]}" --mode max --features 3 --outside 0.1 --nonfinite 0.01 --out "$work/max.json"

python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, sys, os
work = sys.argv[1]
def load(name):
    with open(os.path.join(work, name)) as f:
        return json.load(f)
run = load("run.json")
assert run["schema"] == "gpuscale/result/v1", run["schema"]
assert run["status"] == "ok"
m = run["measurements"]
assert len(m) == 1 and m[0]["world_size"] == 1 and m[0]["status"] == "ok"
assert m[0]["verification"]["status"] == "passed"
assert len(m[0]["runs"]) == 2
for r in m[0]["runs"]:
    assert len(r["step_seconds"]) == 12, len(r["step_seconds"])
    assert len(r["ranks"][0]["wall_seconds"]) == 12
assert m[0]["runs"][0]["ranks"][0]["first_iteration_seconds"] > 0
assert m[0]["cost"]["items_per_step"] == 80000
assert run["config"]["workload_options"]["points"] == 20000
scale = load("nested/dir/scale.json")
sizes = [x["world_size"] for x in scale["measurements"]]
assert sizes == [1, 2], sizes
two = scale["measurements"][1]
assert len(two["runs"][0]["ranks"]) == 2
assert two["aggregate"]["speedup"] > 0 and two["aggregate"]["efficiency"] > 0
shares = [r["items_per_step"] for r in two["runs"][0]["ranks"]]
assert shares == [40000, 40000], shares
# Step time is the slowest rank's time of each iteration.
run0 = two["runs"][0]
for i, step in enumerate(run0["step_seconds"]):
    assert step == max(r["wall_seconds"][i] for r in run0["ranks"])
print("result files ok")
PY

ls "$work"/nested/dir | grep -q tmp && fail "temporary file left behind"
[ "$failures" = 0 ] && echo "all CLI checks passed"
exit $((failures > 0))
