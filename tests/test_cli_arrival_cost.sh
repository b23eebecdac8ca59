#!/usr/bin/env bash
# `gpuscale coll --arrival-cost` on the CPU backend (rank threads): its
# usage errors, the structure of its figures (one cost per size and form,
# the pairs and blocks as asked, the median inside its interval, a
# verdict, no document), and a recorder slowed on purpose
# (GPUSCALE_TEST_ARRIVAL_DELAY_US: every recorded entry waits 2 ms) that
# must come out as a cost over 1%, about 2 ms per iteration.
set -u
bin=$(realpath "$1")  # the runs below work in the scratch directory
. "$(dirname "$0")/cli_lib.sh"

cpu=(coll allreduce --backend cpu --no-progress -q --ranks 2 -b 8 -e 8 -w 2 --check 0)
expect 2 "options --arrival-cost and --arrival-times conflict" -- "${cpu[@]}" --arrival-cost 10 --arrival-times 1
expect 2 "option -o/--out: --arrival-cost writes no result document" -- "${cpu[@]}" --arrival-cost 10 --out "$work/x.json"
expect 2 "option --trace: --arrival-cost writes no result document" -- "${cpu[@]}" --arrival-cost 10 --trace "$work/t.json"
expect 2 "options -n/--iters 100 and --arrival-cost 10: .*a multiple of 40\), at least 6 pairs \(240 iterations\)" -- "${cpu[@]}" --arrival-cost 10 -n 100
expect 2 "options -n/--iters 200 and --arrival-cost 10" -- "${cpu[@]}" --arrival-cost 10 -n 200
expect 2 "option --arrival-cost" -- "${cpu[@]}" --arrival-cost 1
expect 2 "option --arrival-cost: a world of 1 rank records no arrival times" -- coll allreduce --backend cpu -q --ranks 1 --arrival-cost 10
[ ! -e "$work/x.json" ] || fail "a refused cost measurement wrote a document"

# cost_lines FILE PAIRS BLOCK FORMS: FORMS costs of PAIRS pairs of blocks of
# BLOCK iterations, each "cost X% [LOW%, HIGH%]: VERDICT" with LOW <= X <= HIGH;
# prints per cost "X LOW HIGH under|over|undecided ON_US OFF_US".
cost_lines() {
  python3 - "$@" <<'PY'
import re, sys
text, pairs, block, forms = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3], int(sys.argv[4])
heads = re.findall(r"^# \d+ B (out-of-place|in-place): (\d+) pairs of 4 blocks of (\d+) iterations", text, re.M)
costs = re.findall(r"^cost ([+-]\d+\.\d\d)% \[([+-]\d+\.\d\d)%, ([+-]\d+\.\d\d)%\]: (under 1%|over 1%|undecided)$", text, re.M)
means = re.findall(r"^# per iteration \(mean\): (\d+\.\d+) us recording, (\d+\.\d+) us not", text, re.M)
assert len(heads) == forms and len(costs) == forms and len(means) == forms, (heads, costs, text)
assert all(h[1] == pairs and h[2] == block for h in heads), heads
for c in costs:
    lo, x, hi = float(c[1]), float(c[0]), float(c[2])
    assert lo <= x <= hi, c
    want = "under 1%" if hi < 1 else "over 1%" if lo > 1 else "undecided"
    assert c[3] == want, c
for c, m in zip(costs, means):
    print(c[0], c[1], c[2], c[3].split()[0], m[0], m[1])
PY
}

# Clean, both forms, 8 pairs of blocks of 10: the figures' structure, and
# no document (not even the default results/coll-allreduce.json).
cd "$work" || exit 1
"$bin" "${cpu[@]}" --place both --arrival-cost 10 -n 320 >"$work/clean.out" 2>&1 || fail "clean cost run failed: $(cat "$work/clean.out")"
cost_lines "$work/clean.out" 8 10 2 >/dev/null || fail "clean cost figures: $(cat "$work/clean.out")"
[ ! -e "$work/results" ] || fail "--arrival-cost wrote a document"

# Default -n: 24 pairs of 4 blocks.
"$bin" "${cpu[@]}" --place out --arrival-cost 3 >"$work/default.out" 2>&1 || fail "default cost run failed: $(cat "$work/default.out")"
cost_lines "$work/default.out" 24 3 1 >/dev/null || fail "default cost figures: $(cat "$work/default.out")"

# A recorder that costs 2 ms per entry, only in recording blocks: a cost
# over 1% (the interval's low end far above it), recording at least 1.8 ms
# slower per iteration than not.
GPUSCALE_TEST_ARRIVAL_DELAY_US=2000 "$bin" "${cpu[@]}" --place out --arrival-cost 10 -n 320 >"$work/slow.out" 2>&1 ||
  fail "slowed cost run failed: $(cat "$work/slow.out")"
if line=$(cost_lines "$work/slow.out" 8 10 1); then
  read -r x lo hi verdict on off <<<"$line"
  python3 -c "import sys; x, lo, on, off = map(float, sys.argv[1:]); assert lo > 10 and on - off >= 1800, (x, lo, on, off)" \
    "$x" "$lo" "$on" "$off" || fail "the slowed recorder was not seen: $line"
  [ "$verdict" = over ] && [ "$(python3 -c "print(float('$hi') >= float('$lo'))")" = True ] ||
    fail "slowed recorder not over 1%: $line"
else
  fail "slowed cost figures: $(cat "$work/slow.out")"
fi
# The test hook parses its value strictly.
out=$(GPUSCALE_TEST_ARRIVAL_DELAY_US=soon "$bin" "${cpu[@]}" --arrival-cost 10 -n 240 2>&1)
rc=$?
[ "$rc" = 2 ] && grep -q "option GPUSCALE_TEST_ARRIVAL_DELAY_US: 'soon' is not a number" <<<"$out" ||
  fail "a malformed GPUSCALE_TEST_ARRIVAL_DELAY_US: exit $rc: $out"

exit $((failures > 0))
