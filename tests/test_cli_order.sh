#!/usr/bin/env bash
# The order of a sweep's rank counts (docs/statistics.md, "Drift"): by
# default one run of each count in turn (1, 2, 1, 2, ...), so that a load
# that starts mid-sweep falls on every count alike and the speedup keeps
# its value; --order sequential measures each count's runs together, and
# the same load then falls on the later count only. The load is made by
# stopping the measuring process (SIGSTOP/SIGCONT, four fifths of the time)
# from a moment inside the sweep on: the steps of every rank count it
# meets take about five times as long in wall-clock time, whatever else
# runs on the machine.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
sweep=(scale voxelize --backend cpu --ranks 2 --counts 1,2 --points 20000 --grid 32,32,32
       --warmup 1 --runs 6 --min-time 0.3 -q)

expect 2 "option --order: .*'backwards'" -- "${sweep[@]}" --order backwards
expect 0 "--order ORDER" -- scale --help

# loaded ORDER: the sweep in ORDER with the load starting once the
# document holds 5 of its 12 runs (it is written after every measurement);
# the load's start (Unix seconds) goes to $work/ORDER.start.
loaded() {
  python3 - "$work/$1.start" "$work/$1.json" "$bin" "${sweep[@]}" --order "$1" \
    -o "$work/$1.json" <<'PY'
import json, os, signal, subprocess, sys, time
start_file, doc, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def runs():
    try:
        return sum(len(m["runs"]) for m in json.load(open(doc))["measurements"])
    except (OSError, ValueError):
        return 0
while p.poll() is None and runs() < 5:
    time.sleep(0.01)
open(start_file, "w").write(repr(time.time()))
try:
    while p.poll() is None:
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(0.08)
        os.kill(p.pid, signal.SIGCONT)
        time.sleep(0.02)
except ProcessLookupError:
    pass
sys.exit(p.wait())
PY
}
loaded interleaved || fail "the interleaved sweep under load failed"
loaded sequential || fail "the sequential sweep under load failed"

python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, statistics as st, sys
work = sys.argv[1]

def load(order):
    d = json.load(open(f"{work}/{order}.json"))
    began = float(open(f"{work}/{order}.start").read())
    assert d["status"] == "ok" and d["config"]["order"] == order, (d["status"], d["config"])
    runs = []  # (start, count, sequence, mean step, loaded, ended before the load)
    for m in d["measurements"]:
        assert len(m["runs"]) == 6, (m["world_size"], len(m["runs"]))
        for r in m["runs"]:
            t0 = r["started_unix_seconds"]
            runs.append((t0, m["world_size"], r["sequence"], st.mean(r["step_seconds"]),
                         t0 > began, t0 + sum(r["step_seconds"]) < began))
    runs.sort()
    assert [r[2] for r in runs] == list(range(12)), [r[2] for r in runs]
    speedup = {m["world_size"]: m["aggregate"]["speedup"] for m in d["measurements"]}[2]
    return runs, speedup

inter, s_inter = load("interleaved")
seq, s_seq = load("sequential")
# The order in the document: the runs by their start, counts alternating
# in one, one count's runs together in the other.
assert [r[1] for r in inter] == [1, 2] * 6, [r[1] for r in inter]
assert [r[1] for r in seq] == [1] * 6 + [2] * 6, [r[1] for r in seq]
# The load was real: a run started under it took longer steps than one
# that ended before it began.
for name, runs in (("interleaved", inter), ("sequential", seq)):
    for n in (1, 2):
        calm = [r[3] for r in runs if r[1] == n and r[5]]
        busy = [r[3] for r in runs if r[1] == n and r[4]]
        if calm and busy:
            assert st.median(busy) > 1.5 * st.median(calm), (name, n, calm, busy)
def loaded(runs, n): return sum(1 for r in runs if r[1] == n and r[4])
# Interleaved: the load falls on both counts alike; sequential: on the later.
li = (loaded(inter, 1), loaded(inter, 2))
ls = (loaded(seq, 1), loaded(seq, 2))
assert min(li) >= 1 and abs(li[0] - li[1]) <= 1, li
assert ls[1] - ls[0] >= 4, ls
# What that does to the figure: the sequential sweep's speedup is cut by
# the load (the 2-rank runs are the slowed ones), the interleaved one's not.
assert s_seq < 0.7 * s_inter, (s_seq, s_inter)
print(f"order: interleaved runs under load {li}, speedup {s_inter:.2f}x; "
      f"sequential {ls}, speedup {s_seq:.2f}x")
PY

# llm and exec interleave their counts too: each call of their drivers
# measures one run, which the sweep merges into its count's measurement
# (llm's throughput stays its tokens over the runs' seconds; exec's warmup
# runs once per count, before its first timed run). A rate sweep keeps a
# count's runs in one search, and says so.
llm=(scale llm --backend cpu --ranks 2 --counts 1,2 --samples 8 --input-min 4 --input-max 10
     --output-min 2 --output-max 5 --no-progress)
expect 0 "" -- "${llm[@]}" --runs 3 -o "$work/llm.json"
expect 0 "" -- "${llm[@]}" --runs 3 --order sequential -o "$work/llm-seq.json"
expect 0 "llm: rank counts measured one after the other, not interleaved: --rates" -- \
  "${llm[@]}" --runs 2 --scenario server --slo latency=1000s --rates 200,100 -o "$work/llm-rates.json"
expect 0 "" -- exec --counts 1,2 --runs 3 -q -o "$work/exec.json" -- sh -c 'sleep 0.0{n}'
python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
work = sys.argv[1]
def doc(name):
    d = json.load(open(f"{work}/{name}.json"))
    assert d["status"] == "ok", (name, d["status"])
    return d
def order(d):
    # Each count's run sequences, and the counts by their runs' start.
    seqs = {m["world_size"]: [r["sequence"] for r in m["runs"]] for m in d["measurements"]}
    starts = sorted((r["started_unix_seconds"], m["world_size"])
                    for m in d["measurements"] for r in m["runs"])
    return d["config"]["order"], seqs, [n for _, n in starts]
for name in ("llm", "exec"):
    d = doc(name)
    assert order(d) == ("interleaved", {1: [0, 2, 4], 2: [1, 3, 5]}, [1, 2] * 3), (name, order(d))
assert order(doc("llm-seq")) == ("sequential", {1: [0, 1, 2], 2: [3, 4, 5]}, [1] * 3 + [2] * 3)
assert doc("llm-rates")["config"]["order"] == "sequential"
for m in doc("llm")["measurements"]:
    # Every run's requests kept, the figures over all of them, as one call
    # of three runs gives them.
    llm, agg = m["llm"], m["aggregate"]
    assert len(llm["run_seconds"]) == 3 and llm["samples"] == 3 * 8, (llm["run_seconds"], llm["samples"])
    assert sum(len(k["requests"]) for r in m["runs"] for k in r["ranks"]) == 24
    want = llm["generated_tokens"] / sum(llm["run_seconds"])
    assert abs(agg["throughput_items_per_second"] - want) <= 1e-9 * want, (agg, want)
    assert agg["step"]["n"] == llm["ok"], (agg["step"]["n"], llm["ok"])
    assert m["verification"]["detail"] == "the CPU backend is the reference", m["verification"]
for m in doc("exec")["measurements"]:
    runs = [(r["kind"], r["index"]) for r in m["exec"]["runs"]]
    assert runs == [("warmup", 0), ("timed", 0), ("timed", 1), ("timed", 2)], runs
print("order: llm and exec interleaved; llm --rates sequential")
PY

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all order checks passed"
