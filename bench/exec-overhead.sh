#!/usr/bin/env bash
# What `gpuscale exec` costs and whether it moves the figure it measures
# (docs/exec.md, "Overhead"). Two programs of about one second each:
#   sleep   `sleep 1`, nothing printed;
#   lines   a Python program printing 10^6 protocol lines (a per-step
#           figure), the largest output the reader is meant for.
# The figure: RUNS rounds, each timing the program once directly, by a
# plain timer around the spawn with its output to a file (Python's
# time.perf_counter around subprocess.run), and once by `gpuscale exec
# --runs 1` (its recorded wall time), in random order so that a busy
# machine slows both alike; printed are the medians and their ratio
# (exec / direct: 1.000 means exec does not change the figure). exec's
# own cost, from one `gpuscale exec --warmup 1 --runs RUNS`: the time it
# spends reading a run's output after the run (read_seconds, median), and
# its whole elapsed time minus the wall time of its runs, per run (spawn,
# waiting, reading, telemetry, rewriting the document with every sample).
#
#   bench/exec-overhead.sh [GPUSCALE] [RUNS]     (defaults: build/gpuscale, 10)
set -eu
bin=${1:-build/gpuscale}
runs=${2:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/lines.py" <<'EOF'
import sys
out = sys.stdout
chunk = []
for step in range(1_000_000):
    chunk.append('{"metric": "step_time", "value": 0.001, "unit": "s", "step": %d}\n' % step)
    if len(chunk) == 10000:
        out.write("".join(chunk))
        chunk.clear()
out.write("".join(chunk))
EOF

python3 - "$bin" "$runs" "$work" <<'EOF'
import json, random, statistics, subprocess, sys, time
bin, runs, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
programs = {"sleep": ["sleep", "1"], "lines": [sys.executable, work + "/lines.py"]}

def direct(cmd):
    with open(work + "/out", "wb") as out, open(work + "/err", "wb") as err:
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, check=True)
        return time.perf_counter() - t0

def by_exec(name, cmd, warmup, runs):
    doc = f"{work}/{name}.json"
    t0 = time.perf_counter()
    subprocess.run([bin, "exec", "-q", "--no-progress", "--warmup", str(warmup), "--runs",
                    str(runs), "--counts", "1", "--out", doc, "--"] + cmd,
                   stdout=subprocess.DEVNULL, check=True)
    elapsed = time.perf_counter() - t0
    notes = json.load(open(doc))["measurements"][0]["exec"]["runs"]
    return notes, elapsed

print(f"{'program':8} {'direct s':>9} {'exec s':>9} {'ratio':>7} {'read/run':>10} "
      f"{'cost/run':>10} {'values/run':>11}")
for name, cmd in programs.items():
    direct(cmd)  # one untimed run of each first
    by_exec(name, cmd, 0, 1)
    plain, measured = [], []
    for _ in range(runs):
        pair = [0, 1]
        random.shuffle(pair)
        for which in pair:
            if which == 0:
                plain.append(direct(cmd))
            else:
                measured.append(by_exec(name, cmd, 0, 1)[0][0]["wall_seconds"])
    notes, elapsed = by_exec(name, cmd, 1, runs)
    walls = sum(r["wall_seconds"] for r in notes)
    read = statistics.median(r["read_seconds"] for r in notes)
    cost = (elapsed - walls) / len(notes)
    a, b = statistics.median(plain), statistics.median(measured)
    print(f"{name:8} {a:9.4f} {b:9.4f} {b / a:7.4f} {read * 1e3:7.1f} ms {cost * 1e3:7.1f} ms "
          f"{notes[-1]['values']:11d}")
EOF
