#!/usr/bin/env bash
# `gpuscale check pairs` end to end on 4 CPU ranks (threads, then one
# process per rank under mpirun): a slow link injected between two ranks
# (--inject slowpair) is named as that link, and only it, within the
# tournament's 3 rounds (at most ceil(log2 4) + 1) and one confirming
# round; a slowed rank (--inject slow) is named as the rank, not a pair; a
# clean run names nothing; and the usage errors. Under mpirun with each
# process its own host (GPUSCALE_TEST_SEPARATE_HOSTS=1), the 4 "nodes"
# meet in the node bisection's 2 rounds: a slowed rank's node is named, a
# slow pair of nodes that meet is named as their link. Every judgement is
# asserted in every mode, also where the 4 ranks outnumber the machine's
# cores (always on CI's 2 cores): in every run nothing but what was
# injected is named (an inconclusive verdict must give its reason), and
# in at least 2 of 3 runs an injected fault is found (named, alone, with
# the verdict fail; other pairs may stay inconclusive with the reason). $1
# is the gpuscale binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
c=(check pairs --ranks 4 -n 30 -b 1M)

expect 2 "check pairs rehearses slow and slowpair" -- "${c[@]}" --inject late:rank=1,us=5
expect 2 "--ranks" -- check pairs --ranks 1
expect 2 "rank 5 does not exist" -- "${c[@]}" --inject slowpair:rank=1,peer=5,factor=2
expect 2 "another rank than rank=1" -- "${c[@]}" --inject slowpair:rank=1,peer=1,factor=2
expect 2 "unexpected argument 'extra'" -- check pairs extra

# run NAME EXIT-CODES ARGS...: one measurement into $work/NAME.json, its
# exit code among the allowed ones (5 named, 0 nothing, 6 inconclusive).
run() {
  local name=$1 codes=$2
  shift 2
  "$@" -f json -o "$work/$name.json" >"$work/$name.out" 2>&1
  local rc=$?
  [[ " $codes " == *" $rc "* ]] || fail "$name exited $rc, not one of $codes: $(cat "$work/$name.out")"
}
for i in 1 2 3; do
  run link$i "5 6" "$bin" "${c[@]}" --inject slowpair:rank=1,peer=2,factor=30
  run rank$i "5 6" "$bin" "${c[@]}" --inject slow:rank=2,factor=5
  run clean$i "0 6" "$bin" "${c[@]}"
done
expect 5 "0 rank.s. and 1 link.s. named|action: investigate: the link between rank 1 and rank 2" \
  -- "${c[@]}" --inject slowpair:rank=1,peer=2,factor=30
if command -v mpirun >/dev/null; then
  need_mpirun
  mp=(mpirun -np 4 --oversubscribe "$bin" check pairs --backend cpu -n 30 -b 1M)
  for i in 1 2 3; do
    run mpilink$i "5 6" "${mp[@]}" --inject slowpair:rank=0,peer=3,factor=30
    export GPUSCALE_TEST_SEPARATE_HOSTS=1
    run node$i "5 6" "${mp[@]}" --inject slow:rank=2,factor=5
    run nodelink$i "5 6" "${mp[@]}" --inject slowpair:rank=1,peer=3,factor=30
    unset GPUSCALE_TEST_SEPARATE_HOSTS
  done
  for i in 1 2; do
    run mpiclean$i "0 6" "${mp[@]}"
    export GPUSCALE_TEST_SEPARATE_HOSTS=1
    run nodeclean$i "0 6" "${mp[@]}"
    unset GPUSCALE_TEST_SEPARATE_HOSTS
  done
  GPUSCALE_TEST_SEPARATE_HOSTS=1 "${mp[@]}" --inject slow:rank=2,factor=5 >"$work/node.out" 2>&1
  grep -q "fail (4 nodes, 2 rounds of disjoint pairs by node bisection, 4 pairs" "$work/node.out" ||
    fail "check pairs by nodes: $(cat "$work/node.out")"
fi

python3 - "$work" <<'PY' || failures=$((failures + 1))
import json, os, re, sys
work = sys.argv[1]
cpus = len(os.sched_getaffinity(0))
over = 4 > cpus  # the 4 ranks outnumber the CPUs they may run on
def load(name, nodes=False):
    d = json.load(open(f"{work}/{name}.json"))
    assert d["check"] == "pairs" and d["ranks"] == 4 and d["threshold"] == 1.3, d
    assert d["host"]["ranks"] == 4 and d["host"]["cpus"] == cpus and d["host"]["pinned"], d["host"]
    if nodes:
        # 4 hosts: ceil(log2 4) = 2 rounds of the bisection, u meets u ^ 2^r;
        # its 2 pairs a round take turns on 2 CPUs.
        assert d["schedule"] == "node bisection" and d["rounds"] == 2, d
        assert len(set(d["nodes"])) == 4, d
        assert [(p["a"], p["b"]) for p in d["pairs"]] == [(0, 1), (2, 3), (0, 2), (1, 3)], d
        assert d["slots"] == (4 if cpus < 4 else 2), d["slots"]
    else:
        # 3 rounds of disjoint pairs meet all 6 pairs: at most ceil(log2 4) + 1.
        assert d["schedule"] == "tournament" and d["rounds"] == 3 and len(d["pairs"]) == 6, d
        assert sorted((p["a"], p["b"]) for p in d["pairs"]) == [
            (0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
        assert d["slots"] == (6 if cpus < 4 else 3), d["slots"]
    for p in d["pairs"] + d["confirm"]:
        for k in ("allreduce", "copy"):
            x = p[k]
            assert x["ratio_low"] <= x["ratio"] <= x["ratio_high"], x
            assert x["slow"] == (x["ratio_low"] > 1.3), x
            assert len(x["seconds"]) == 30 and min(x["seconds"]) > 0, x
    # The confirming round: the suspects (every pair slow in the rounds, or
    # above 1.3x without the interval to show it) first, measured again
    # alone, then references and neighbours; none when there is no suspect.
    slow = [(p["a"], p["b"]) for p in d["pairs"]
            if any(p[k]["slow"] or p[k]["ratio"] > 1.3 for k in ("allreduce", "copy"))]
    roles = [(p["a"], p["b"], p["role"]) for p in d["confirm"]]
    assert [(a, b) for a, b, r in roles if r == "suspect"] == slow, (slow, roles)
    assert bool(roles) == bool(slow) and all(r != "suspect" for _, _, r in roles[len(slow):])
    # A pair judged inconclusive (the verdict, or one beside a named link)
    # only with the reason, which says how the host was shared; a reason
    # may also speak of a pair of the confirming round alone (a node
    # bisection's pair with a node found fine).
    if any(p["judged"] == "inconclusive" for p in d["pairs"]) or d["overall"] == "inconclusive":
        assert d["reason"] is not None, d
    why = d["reason"]
    if why is not None:
        assert re.search(r"4 ranks (share|on) %d CPUs of host " % cpus, why), why
        assert (" share " in why) == over, why
        assert "neither clearly slow nor clearly fine" in why or "no pair clearly fine" in why, why
    return d
def named(d):
    return (d.get("named_ranks", d.get("named_nodes")), d["named_links"])
# name: (units, links) injected
cases = {"link": ([], [[1, 2]]), "rank": ([2], []), "clean": ([], []),
         "mpilink": ([], [[0, 3]]), "mpiclean": ([], []),
         "node": ([2], []), "nodelink": ([], [[1, 3]]), "nodeclean": ([], [])}
for kind, (units, links) in cases.items():
    runs = [n for n in (1, 2, 3) if os.path.exists(f"{work}/{kind}{n}.json")]
    if not runs:
        continue
    docs = [load(f"{kind}{n}", nodes=kind.startswith("node")) for n in runs]
    exact = found = 0
    # A crowded machine: a load average above 4 per CPU, twice what the
    # test's own 4 ranks on 2 CPUs make. There a slow pair beside loaded
    # ones may stay unclear (seen at 12.7-13.8 on 2 CPUs, with 4 helpers
    # building beside the CI: the slow node link judged inconclusive with
    # its reason in 2 of 3 runs); the fault must be found as often as there
    # were calm runs, up to 2.
    calm = [d for d in docs if not (d["host"]["load_average"] or 0) > 4 * cpus]
    for d in docs:
        u, l = named(d)
        # In every run: nothing named but what was injected.
        assert set(u) <= set(units) and all(x in links for x in l), (kind, u, l, d["reason"])
        # Found: the injected fault named, and only it, with the verdict it
        # calls for (other pairs may stay inconclusive, with the reason).
        hit = (u, l) == (units, links) and d["overall"] == ("fail" if units or links else "pass")
        found += hit
        # Exactly: besides, a named rank's pairs judged by it, the rest fine.
        want = ["link" if [p["a"], p["b"]] in links else
                ("node" if kind.startswith("node") else "rank")
                if any(x in (p["a"], p["b"]) for x in units) else "fine" for p in d["pairs"]]
        exact += hit and [p["judged"] for p in d["pairs"]] == want
    print(f"{kind}: found in {found}, exactly as injected in {exact} of {len(docs)}:",
          [(named(d), d["overall"], d["reason"]) for d in docs])
    # An injected fault found in most runs (2 of 3, or both of 2; fewer on a
    # crowded machine, above). A clean
    # run names nothing in any run (above) but, with the ranks sharing the
    # cores, may end inconclusive with its reason: 1 of 3 did on an idle
    # 2-core machine.
    if units or links:
        assert found >= min(2, len(calm)), (kind, found, len(calm))
print("check pairs: every judgement as injected")
PY

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all check pairs checks passed"
