#!/usr/bin/env bash
# coll --arrival-cost on 2 GPUs (docs/stragglers.md, "Arrival skew"): a
# 1 MiB allreduce in 24 pairs of 4 blocks of 100 iterations prints its
# cost with an interval and a verdict; with the recorder slowed on
# purpose (GPUSCALE_TEST_ARRIVAL_DELAY_US=100: every recorded entry waits
# 100 us on the host, which then sets the pace of a 17-18 us allreduce)
# the cost is over 1% and recording blocks take at least 50 us more per
# iteration: the device events of recording blocks see what the host adds.
# Skips (77) with fewer than 2 GPUs.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_gpus 2
export NCCL_NVLS_ENABLE=0
c=(coll allreduce --backend cuda --no-progress -q -g 2 -b 1M -e 1M --place out --check 0 -w 20
   --arrival-cost 100 -n 9600)
"$bin" "${c[@]}" >"$work/clean.out" 2>&1 || fail "clean: $(cat "$work/clean.out")"
GPUSCALE_TEST_ARRIVAL_DELAY_US=100 "$bin" "${c[@]}" >"$work/slow.out" 2>&1 ||
  fail "slowed: $(cat "$work/slow.out")"
python3 - "$work" <<'PY' || fail "figures: $(cat "$work/clean.out" "$work/slow.out")"
import re, sys
work = sys.argv[1]

def cost(name):
    text = open(f"{work}/{name}.out").read()
    assert re.search(r"^# gpuscale coll allreduce --arrival-cost: 2 ranks \(threads\), backend cuda", text, re.M), text
    assert re.search(r"^# 1048576 B out-of-place: 24 pairs of 4 blocks of 100 iterations", text, re.M), text
    m = re.findall(r"^cost ([+-]\d+\.\d\d)% \[([+-]\d+\.\d\d)%, ([+-]\d+\.\d\d)%\]: (under 1%|over 1%|undecided)$", text, re.M)
    assert len(m) == 1 and float(m[0][1]) <= float(m[0][0]) <= float(m[0][2]), m
    on, off = map(float, re.search(r"^# per iteration \(mean\): (\S+) us recording, (\S+) us not", text, re.M).groups())
    print(f"{name}: cost {m[0][0]}% [{m[0][1]}%, {m[0][2]}%]: {m[0][3]} ({on} us recording, {off} us not)")
    return m[0][3], on, off

cost("clean")
verdict, on, off = cost("slow")
assert verdict == "over 1%" and on - off >= 50, (verdict, on, off)
PY
exit $((failures > 0))
