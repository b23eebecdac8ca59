#!/usr/bin/env bash
# The terminal and the report give one file one verdict: the verdict lines
# that `scale` prints equal, word for word (series, verdict, speedup and
# every figure), those of `report` in text and in JSON for the same file;
# with --split proportional each split policy has its own (docs/report.md,
# "Recommendation"). On the CPU backend the words say "rank", never "GPU".
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

# The cases of the brief, with a smaller problem so that the test is quick.
small=(--backend cpu --points 100000 --grid 64,64,64)
workload=()
verdict_re='^(.*): (multi-(GPU|rank) (beneficial|marginal)|single (GPU|rank) preferred|inconclusive|suspect): speedup '

# check NAME EXPECTED_LINES SCALE_ARGS...: runs scale (of voxelize, or of
# the workload and options in $workload), then report on its file, and
# compares the verdict lines and the tables' rows of the outputs.
check() {
  local name=$1 lines=$2
  shift 2
  local json="$work/$name.json"
  local what=(voxelize "${small[@]}")
  [ "${#workload[@]}" = 0 ] || what=("${workload[@]}")
  if ! timeout 300 "$bin" scale "${what[@]}" "$@" --out "$json" >"$work/$name.scale" \
    2>"$work/$name.err"; then
    fail "scale $* failed: $(cat "$work/$name.err")"
    return
  fi
  # scale: the lines under its "Verdict" heading.
  sed -n '/^  Verdict (/,/^$/p' "$work/$name.scale" | sed -n 's/^  - //p' | sort >"$work/$name.t"
  "$bin" report "$json" >"$work/$name.rt" || fail "report $name"
  sed -n 's/^  - //p' "$work/$name.rt" | grep -E "$verdict_re" | sort >"$work/$name.r"
  "$bin" report --format json "$json" >"$work/$name.rj" || fail "report --format json $name"
  python3 - "$work/$name.rj" "$verdict_re" >"$work/$name.j" <<'PY' || fail "$name: report JSON"
import json, re, sys
doc = json.load(open(sys.argv[1]))
pattern = re.compile(sys.argv[2])
lines = []
for s in doc["series"]:
    rec = s["recommendation"]
    found = [a for a in rec["advice"] if pattern.match(a)]
    # A verdict sentence exactly when the series has a verdict, naming it.
    assert len(found) == (rec["verdict"] is not None), (s["label"], s["split"], rec)
    for a in found:
        name = s["workload"]
        extra = [p for p in (s["label"], "split " + s["split"] if s["split"] else "") if p]
        if extra:
            name += " (" + ", ".join(extra) + ")"
        assert a.startswith(name + ": "), (name, a)
        assert ("at %d ranks" % rec["world_size"]) in a, (rec["world_size"], a)
        lines.append(a)
print("\n".join(sorted(lines)))
PY
  [ "$(wc -l <"$work/$name.t")" = "$lines" ] ||
    fail "$name: scale printed $(wc -l <"$work/$name.t") verdict line(s), expected $lines: $(cat "$work/$name.scale")"
  diff -u "$work/$name.t" "$work/$name.r" >/dev/null ||
    fail "$name: scale and report text differ: $(diff -u "$work/$name.t" "$work/$name.r")"
  diff -u "$work/$name.t" "$work/$name.j" >/dev/null ||
    fail "$name: scale and report JSON differ: $(diff -u "$work/$name.t" "$work/$name.j")"
  if grep -q "GPU" "$work/$name.t"; then fail "$name: CPU ranks called GPUs: $(cat "$work/$name.t")"; fi
}

# check_cells NAME: each rank count's speedup and efficiency cells of a
# one-series sweep checked before, intervals included, are the same in
# scale's table and in the report's series table.
check_cells() {
  local name=$1
  python3 - "$work/$name.scale" "$work/$name.rt" <<'PY' >"$work/$name.cells" ||
import re, subprocess, sys
cell = r"(\d+\.\d+x \[[^]]*\]) +(\d+\.\d+% \[[^]]*\])"
def cells(lines, row):
    out = {}
    for line in lines:
        m = re.match(row, line)
        c = re.search(cell, line)
        if m and c:
            out[int(m.group(1))] = c.groups()
    return out
scale = open(sys.argv[1]).read().split("\n")
scale = scale[scale.index(next(l for l in scale if re.match(r" +ranks +median", l))):]
scale = scale[:scale.index("")]
t = cells(scale, r" +(\d+) ")
r = cells(open(sys.argv[2]).read().split("\n"), r" +(\d+) +\S+\.json ")
assert t and t == r, (t, r)
for k in sorted(t):
    print(k, *t[k])
PY
    fail "$name: scale's and report's speedup cells differ: $(cat "$work/$name.cells")"
}

# Even and proportional split, rank 1 slowed 3x: one verdict per policy.
check split 2 --ranks 2 --split proportional --inject slow:rank=1,factor=3 --min-time 0.2
grep -q '^voxelize (split even): ' "$work/split.t" || fail "split: no verdict of the even split"
grep -q '^voxelize (split proportional): ' "$work/split.t" ||
  fail "split: no verdict of the proportional split"
# The plain sweep: one series, one verdict, its speedup with its interval.
check plain 1 --ranks 2 --min-time 0.2
grep -q '^voxelize: ' "$work/plain.t" || fail "plain: the verdict does not name the series"
check_cells plain
grep -Eq 'speedup [0-9.]+x \[[0-9.]+, [0-9.]+\] at 2 ranks' "$work/plain.t" ||
  fail "plain: the speedup has no interval: $(cat "$work/plain.t")"
# The 1-rank baseline slowed 3x (world=1): 2 ranks look super-linear. The
# verdict is suspect (or inconclusive), never beneficial above 100%, and
# names the injected fault; the same in scale's table and the report.
check slowbase 1 --ranks 2 --min-time 0.2 --inject slow:rank=0,factor=3,world=1
grep -Eq '^voxelize: (suspect|inconclusive): ' "$work/slowbase.t" ||
  fail "slowbase: a 3x slower baseline is not suspect: $(cat "$work/slowbase.t")"
if grep -q 'beneficial' "$work/slowbase.t"; then fail "slowbase: called beneficial"; fi
if grep -q '^voxelize: suspect' "$work/slowbase.t"; then
  grep -q 'likely cause: injected faults slow the 1-rank baseline (1 at 1 rank, 0 at 2 ranks)' "$work/slowbase.t" ||
    fail "slowbase: the injected fault is not named: $(cat "$work/slowbase.t")"
fi
grep -Eq '^ +voxelize +2 .*(suspect|inconclusive)$' "$work/slowbase.scale" ||
  fail "slowbase: the table's recommendation is not suspect: $(cat "$work/slowbase.scale")"

# Other work on the CPUs: as many busy loops as the host has cores run
# beside a 2-rank sweep, so the ranks need more cores than are left to
# them. Every run records that other work (host_other_cores), and the
# verdict is inconclusive, naming it, whatever the speedup came out as
# (docs/statistics.md, "Other work on the host").
hogs=()
for _ in $(seq 1 "$(nproc)"); do
  (while :; do :; done) &
  hogs+=($!)
done
check busy 1 --ranks 2 --min-time 0.2
kill "${hogs[@]}" 2>/dev/null
wait "${hogs[@]}" 2>/dev/null
grep -Eq '^voxelize: (inconclusive|suspect): .*other work kept up to [0-9.]+ of the host.s [0-9]+ cores busy' \
  "$work/busy.t" || fail "busy: the other work does not make the verdict inconclusive: $(cat "$work/busy.t")"
python3 - "$work/busy.json" <<'PY' || fail "busy: runs without host_other_cores >= 0.25"
import json, sys
runs = [r for m in json.load(open(sys.argv[1]))["measurements"] for r in m["runs"]]
assert runs and max(r["host_other_cores"] for r in runs) >= 0.25, [r.get("host_other_cores") for r in runs]
PY

# An llm sweep: its speedup rests on the request latencies of each run
# (docs/statistics.md), so its rows and verdict carry an interval, the same
# in the terminal and the report, and its series names the scenario.
workload=(llm --backend cpu --samples 16)
check llm 1 --ranks 2 --runs 2
check_cells llm
grep -Eq '^llm \(scenario offline\): .*: speedup [0-9.]+x \[[0-9.]+, [0-9.]+\] at 2 ranks \(.*95% interval over 2 \+ 2 runs' "$work/llm.t" ||
  fail "llm: the verdict has no interval or no scenario: $(cat "$work/llm.t")"
grep -Eq '^2 [0-9.]+x \[[0-9.]+, [0-9.]+\] ' "$work/llm.cells" ||
  fail "llm: the 2-rank row has no interval: $(cat "$work/llm.cells")"

[ "$failures" = 0 ] || exit 1
echo "ok"
