#!/usr/bin/env python3
"""Checks a gpuscale trace file (docs/timeline.md) against the Chrome trace
event format and gpuscale's own rules: every complete event well formed,
spans per lane sorted by start and properly nested, one process per rank of
each measurement, the expected phase names present and no step at or past
the step bound. Used by tests/test_cli_trace.sh and tests/test_gpu_trace.sh.

usage: trace_validate.py TRACE [--steps N] [--ranks R] [--expect NAME,...]
                         [--device-lanes] [--kernels] [--comm-on-device]
Exit 0 when every check passes, 1 with one line per failure otherwise."""
import argparse
import collections
import json
import sys

KINDS = {"run", "step", "compute", "communication", "wait", "host", "copy"}
# ts and dur are written with 3 decimals (nanoseconds): allow that rounding.
SLACK_US = 0.002


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--steps", type=int, help="the step bound: every step below it")
    ap.add_argument("--ranks", type=int, help="ranks every measurement must have")
    ap.add_argument("--full", action="store_true",
                    help="every rank holds a step span for each step below --steps")
    ap.add_argument("--expect", default="", help="span names that must occur, comma-separated")
    ap.add_argument("--device-lanes", action="store_true", help="device lanes must hold spans")
    ap.add_argument("--kernels", action="store_true", help="CUPTI kernel lanes must hold spans")
    ap.add_argument("--comm-on-device", action="store_true",
                    help="a device lane must hold a communication span")
    a = ap.parse_args()
    errors = []

    def fail(msg):
        errors.append(msg)

    try:
        with open(a.trace, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{a.trace}: not readable JSON: {e}")
        return 1
    other = doc.get("otherData", {}) if isinstance(doc, dict) else {}
    if other.get("schema") != "gpuscale/trace/v1":
        fail("otherData.schema is not gpuscale/trace/v1")
    if not isinstance(other.get("device_source"), str):
        fail("otherData.device_source missing")
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        print(f"{a.trace}: no traceEvents array")
        return 1

    lanes = collections.defaultdict(list)
    lane_names = {}
    process_names = {}
    pid_rank = {}
    names = collections.Counter()
    ranks_of = collections.defaultdict(set)
    steps_of = collections.defaultdict(set)
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") not in ("X", "M"):
            fail(f"event {i}: not a complete (X) or metadata (M) event")
            continue
        pid, tid = e.get("pid"), e.get("tid")
        if not isinstance(pid, int) or not isinstance(tid, int):
            fail(f"event {i}: pid and tid must be integers")
            continue
        if e["ph"] == "M":
            if e.get("name") == "process_name":
                process_names[pid] = e.get("args", {}).get("name")
            if e.get("name") == "thread_name":
                lane_names[(pid, tid)] = e.get("args", {}).get("name", "")
            continue
        args = e.get("args", {})
        ts, dur = e.get("ts"), e.get("dur")
        if not isinstance(e.get("name"), str) or not e["name"]:
            fail(f"event {i}: no name")
        if e.get("cat") not in KINDS:
            fail(f"event {i} ({e.get('name')}): category {e.get('cat')!r} is not a kind")
        if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)) or ts < 0 or dur < 0:
            fail(f"event {i} ({e.get('name')}): ts and dur must be numbers >= 0")
            continue
        for key in ("measurement", "rank", "device", "run", "step"):
            if not isinstance(args.get(key), int):
                fail(f"event {i} ({e.get('name')}): args.{key} missing")
        rank, m, step = args.get("rank"), args.get("measurement"), args.get("step", -1)
        if pid_rank.setdefault(pid, (m, rank)) != (m, rank):
            fail(f"process {pid} holds spans of two ranks: {pid_rank[pid]} and {(m, rank)}")
        ranks_of[m].add(rank)
        if isinstance(step, int) and step >= 0:
            steps_of[(m, rank, args.get("run"))].add(step)
            if a.steps is not None and step >= a.steps:
                fail(f"event {i} ({e['name']}): step {step} at or past the bound {a.steps}")
        names[e["name"]] += 1
        lanes[(pid, tid)].append((ts, dur, e["name"], e.get("cat")))

    # One process per rank: each (measurement, rank) has exactly one pid, named.
    pids_of = collections.defaultdict(set)
    for pid, key in pid_rank.items():
        pids_of[key].add(pid)
        if not process_names.get(pid):
            fail(f"process {pid} has no process_name")
    for key, pids in pids_of.items():
        if len(pids) != 1:
            fail(f"measurement {key[0]} rank {key[1]} is spread over processes {sorted(pids)}")
    if a.ranks is not None:
        for m, ranks in ranks_of.items():
            if ranks != set(range(a.ranks)):
                fail(f"measurement {m}: ranks {sorted(ranks)}, expected 0..{a.ranks - 1}")
    if not ranks_of:
        fail("no span at all")

    # Per lane: in file order, starts never go back; spans nest or follow.
    for (pid, tid), spans in lanes.items():
        stack = []
        last = -1.0
        for ts, dur, name, _ in spans:
            if ts + SLACK_US < last:
                fail(f"process {pid} lane {tid}: {name} at {ts} starts before {last}")
            last = ts
            while stack and ts >= stack[-1][0] - SLACK_US:
                stack.pop()
            end = ts + dur
            if stack and end > stack[-1][0] + SLACK_US:
                fail(f"process {pid} lane {tid}: {name} [{ts}, {end}] overlaps "
                     f"{stack[-1][1]} ending at {stack[-1][0]}")
            stack.append((end, name))

    if a.full and a.steps is not None:
        for (m, rank, run), steps in steps_of.items():
            missing = set(range(a.steps)) - steps
            if missing:
                fail(f"measurement {m} rank {rank} run {run}: steps {sorted(missing)} missing")

    for name in filter(None, a.expect.split(",")):
        if names[name] == 0:
            fail(f"no span named {name!r} (have: {', '.join(sorted(names))})")

    device = [k for k in lanes if k[1] > 0]
    if a.device_lanes and not device:
        fail("no device lane holds a span")
    if a.kernels and not any("CUPTI" in lane_names.get(k, "") for k in device):
        fail("no CUPTI kernel lane (device_source: %s)" % other.get("device_source"))
    if a.comm_on_device and not any(
            any(cat == "communication" for _, _, _, cat in lanes[k]) for k in device):
        fail("no communication span on a device lane")

    for msg in errors[:50]:
        print(f"{a.trace}: {msg}")
    if len(errors) > 50:
        print(f"{a.trace}: ... and {len(errors) - 50} more")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
