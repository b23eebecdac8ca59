#!/usr/bin/env bash
# `gpuscale coll --arrival-cost` under mpirun, 2 CPU ranks, every process a
# host of its own (GPUSCALE_TEST_SEPARATE_HOSTS: each recording block
# aligns the clocks by the ping-pong before it): a recorder slowed by 2 ms
# per entry (GPUSCALE_TEST_ARRIVAL_DELAY_US) comes out over 1%, and only
# the process that prints prints the figure. $1 is the gpuscale binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_mpirun
c=(coll allreduce --backend cpu -b 1K -e 1K --place out --check 0 -w 2 -q --arrival-cost 10 -n 240)
GPUSCALE_TEST_SEPARATE_HOSTS=1 GPUSCALE_TEST_ARRIVAL_DELAY_US=2000 \
  mpirun -np 2 --oversubscribe -x GPUSCALE_TEST_SEPARATE_HOSTS -x GPUSCALE_TEST_ARRIVAL_DELAY_US \
  "$bin" "${c[@]}" >"$work/slow.out" 2>&1 || fail "mpirun slowed cost: $(cat "$work/slow.out")"
python3 - "$work/slow.out" <<'PY' || fail "mpirun slowed cost figures: $(cat "$work/slow.out")"
import re, sys
text = open(sys.argv[1]).read()
assert len(re.findall(r"^# gpuscale coll allreduce --arrival-cost: 2 ranks \(mpi\), backend cpu", text, re.M)) == 1, text
assert re.search(r"^# 1024 B out-of-place: 6 pairs of 4 blocks of 10 iterations", text, re.M), text
m = re.findall(r"^cost ([+-]\d+\.\d\d)% \[([+-]\d+\.\d\d)%, ([+-]\d+\.\d\d)%\]: over 1%$", text, re.M)
assert len(m) == 1 and float(m[0][1]) > 10, m
on, off = map(float, re.search(r"^# per iteration \(mean\): (\S+) us recording, (\S+) us not", text, re.M).groups())
assert on - off >= 1800, (on, off)
PY
exit $((failures > 0))
