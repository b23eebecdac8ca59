#!/usr/bin/env python3
"""Do the trace ranges cost anything when no tool listens? Runs voxelize and
mlp with a binary built with the ranges (GPUSCALE_TRACE=ON, the default)
and one built without them (-DGPUSCALE_TRACE=OFF, or an earlier binary),
the two interleaved in rotating order over several repetitions, and reports
per workload the paired difference of the median step time (with - without)
with its 95% confidence interval. A third condition, the binary with
ranges recording a trace (--trace, first 5 steps of each run), shows the
cost of a trace being written.

usage: bench/trace_overhead.py WITH_BINARY WITHOUT_BINARY [--reps 8]
       [--backend cuda|cpu] [--json FILE]
A confidence interval that contains 0 means no measurable effect
(docs/timeline.md, "Cost").
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from telemetry_overhead import paired_ci  # noqa: E402  (one confidence interval, one place)

WORKLOADS = {
    "cuda": {"voxelize": ["voxelize", "--gpus", "0"],
             "mlp": ["mlp", "--gpus", "0"]},
    "cpu": {"voxelize": ["voxelize", "--ranks", "2", "--points", "50K", "--clouds", "4"],
            "mlp": ["mlp", "--ranks", "2", "--batch", "64"]},
}


def median_step(binary, run_args, trace, tmp):
    path = os.path.join(tmp, "run.json")
    cmd = [binary, "run", *run_args, "--runs", "1", "--min-time", "0.5",
           "--telemetry-interval", "0", "-q", "--no-progress", "-o", path]
    if trace:
        cmd += ["--trace", os.path.join(tmp, "trace.json")]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        return json.load(f)["measurements"][0]["aggregate"]["step"]["median"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("with_binary")
    ap.add_argument("without_binary")
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--backend", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--json")
    args = ap.parse_args()
    conditions = [("without", args.without_binary, False), ("with", args.with_binary, False),
                  ("with, tracing", args.with_binary, True)]
    result = {"backend": args.backend, "reps": args.reps, "workloads": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, run_args in WORKLOADS[args.backend].items():
            steps = {c[0]: [] for c in conditions}
            for rep in range(args.reps):
                k = rep % len(conditions)
                for label, binary, trace in conditions[k:] + conditions[:k]:
                    steps[label].append(median_step(binary, run_args, trace, tmp))
            base = steps["without"]
            entry = {"run_args": run_args, "median_step_seconds": steps, "difference": {}}
            print(f"{name} ({' '.join(run_args)}): {args.reps} interleaved repetitions")
            print(f"  without ranges:  median step {statistics.median(base) * 1e6:10.2f} us")
            for label, _, _ in conditions[1:]:
                diffs = [(x - b) / b for x, b in zip(steps[label], base)]
                mean, lo, hi = paired_ci(diffs)
                entry["difference"][label] = {"mean_relative": mean, "ci95_low": lo,
                                              "ci95_high": hi}
                verdict = "no measurable effect" if lo <= 0.0 <= hi else "measurable"
                print(f"  {label + ':':16s} median step {statistics.median(steps[label]) * 1e6:10.2f}"
                      f" us, difference {100 * mean:+.2f}% (95% CI {100 * lo:+.2f}% .. "
                      f"{100 * hi:+.2f}%): {verdict}")
            result["workloads"][name] = entry
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
