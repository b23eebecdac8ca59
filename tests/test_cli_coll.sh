#!/usr/bin/env bash
# `gpuscale coll` end to end on the CPU backend (rank threads): usage errors,
# every op with checking, the result document's collective members and
# models, and a stalled rank that must time out with its name, not hang.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"

cpu=(--backend cpu --no-progress -q)
expect 0 "reducescatter" -- coll --help
expect 2 "missing OP \(one of allreduce, allgather, reducescatter, broadcast, reduce, alltoall, sendrecv, all\)$" -- coll "${cpu[@]}"
expect 2 "option OP" -- coll allreduse "${cpu[@]}"
expect 2 "minbytes.*larger than" -- coll allreduce "${cpu[@]}" -b 1M -e 1K
# A sweep with nothing to measure (no size holds a whole element) is a
# usage error and writes nothing.
expect 2 "options -b/-e: no size from 1 to 3 bytes holds a whole float element .*nothing to measure" \
  -- coll allreduce "${cpu[@]}" --ranks 2 -b 1 -e 3 --out "$work/none.json"
[ ! -e "$work/none.json" ] || fail "a sweep with nothing to measure wrote a document"
expect 2 "option --minbytes" -- coll allreduce "${cpu[@]}" -b 12Q
expect 2 "conflict" -- coll allreduce "${cpu[@]}" --stepfactor 2 -i 1K
expect 2 "has no reduction" -- coll allgather "${cpu[@]}" --op max
# One meaning per short flag: -o is --out and -f is --format in every
# command; nccl-tests' -o (a reduction) and -f (step factor) are told where
# they went. -g is nccl-tests' GPU count, --ngpus here.
expect 2 "option -o/--out: 'max' is a reduction, not a result file: .*give the reduction as --op max" -- coll allreduce "${cpu[@]}" -o max
expect 2 "option -f/--format does not apply to gpuscale coll: .*--stepfactor F here" -- coll allreduce "${cpu[@]}" -f 4
expect 2 "option --ngpus applies to the cuda backend" -- coll allreduce "${cpu[@]}" -g 2
expect 2 "option --op: 'out.json' is not one of" -- coll allreduce "${cpu[@]}" --op out.json
expect 2 "has no root" -- coll allreduce "${cpu[@]}" -r 1
expect 2 "option --place: alltoall has no in-place form" -- coll alltoall "${cpu[@]}" --place in
expect 2 "rank 5 of a world of 2" -- coll broadcast "${cpu[@]}" --ranks 2 -r 5
expect 2 "needs the cuda backend" -- coll allreduce "${cpu[@]}" -d half
expect 2 "--transport applies to NCCL" -- coll allreduce "${cpu[@]}" --transport p2p
expect 2 "--inject" -- coll allreduce "${cpu[@]}" --inject slow:rank=1
expect 2 "option --min-time does not apply to gpuscale coll: each size runs a fixed" -- coll allreduce "${cpu[@]}" --min-time 1

# Every op, several types and reductions, 3 ranks: nothing wrong.
for args in "-d float --op sum" "-d int8 --op prod" "-d uint64 --op max" "-d double --op avg" "-d int32 --op min -r 2"; do
  # shellcheck disable=SC2086
  expect 0 "Wrong elements     : 0 OK" -- coll all "${cpu[@]}" --ranks 3 -b 8 -e 64K --stepfactor 32 -n 3 -w 1 $args --out "$work/all.json"
done
expect 0 "alpha-beta fit \(out-of-place\)" -- coll allreduce "${cpu[@]}" --ranks 2 -b 1K -e 1M --stepfactor 4 -n 5 -o "$work/ar.json"
python3 - "$work/ar.json" <<'PY' || fail "collective members of the result document"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "ok", d["status"]
ms = d["measurements"]
assert len(ms) == 12, len(ms)                 # 6 sizes x 2 forms
c = ms[0]["collective"]
assert c["op"] == "allreduce" and c["bytes"] == 1024 and c["count"] == 256, c
assert c["busbw_factor"] == 1.0 and c["wrong_elements"] == 0 and c["launch"] == "threads", c
assert abs(c["algbw_bytes_per_second"] - c["bytes"] / c["time_seconds"]) < 1e-6 * c["algbw_bytes_per_second"]
assert ms[1]["collective"]["in_place"] is True
assert len(ms[0]["runs"][0]["ranks"][1]["wall_seconds"]) == 5
models = d["collective_models"]
assert len(models) == 2 and models[0]["points"] == 6 and models[0]["beta_seconds_per_byte"] > 0, models
assert "nccl_environment" in d["config"] and d["config"]["coll"]["op"] == "allreduce"
PY

# In place only: alltoall and sendrecv have no such form; the others are measured.
expect 0 "Wrong elements     : 0 OK" -- coll all "${cpu[@]}" --ranks 2 -b 8 -e 1K --stepfactor 8 -n 2 -w 1 --place in --out "$work/in.json"
expect 0 "# gpuscale coll sendrecv: not measured \(it has no in-place form\)" -- coll all "${cpu[@]}" --ranks 2 -b 8 -e 16 -n 2 -w 1 --place in --out "$work/in2.json"
python3 - "$work/in.json" <<'PY' || fail "coll all --place in: the in-place measurements of five ops"
import json, sys
ms = json.load(open(sys.argv[1]))["measurements"]
ops = sorted({m["collective"]["op"] for m in ms})
assert ops == ["allgather", "allreduce", "broadcast", "reduce", "reducescatter"], ops
assert all(m["collective"]["in_place"] and m["collective"]["wrong_elements"] == 0 for m in ms)
assert len(ms) == 5 * 3, len(ms)
PY

# A rank held back beyond the timeout: exit 1 within bounds, rank named, document kept.
start=$(date +%s)
expect 1 "stalled: rank 1 did not arrive" -- coll allreduce "${cpu[@]}" --ranks 2 -b 8 -e 64 -n 3 --timeout 0.5 --inject delay:rank=1,seconds=2 --out "$work/stall.json"
[ $(( $(date +%s) - start )) -le 20 ] || fail "the stalled run took too long"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['status']=='failed'; assert d['measurements'][0]['status']=='timeout'" "$work/stall.json" || fail "stalled run's document"

exit $((failures > 0))
