#!/usr/bin/env python3
"""Does telemetry sampling perturb the measurement? Runs the same workload
with telemetry off and on (default interval, and a 10x faster one), the
conditions interleaved in rotating order, several repetitions, and reports
the paired step-time difference (on - off) with its 95% confidence interval.

usage: bench/telemetry_overhead.py GPUSCALE_BINARY [--reps 6] [--json FILE]
       [-- extra 'gpuscale run' arguments, default: voxelize --gpus 0 (GPU 0 only)]
A confidence interval that contains 0 means no measurable effect.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

# Two-sided 97.5% Student t quantiles for 1..30 degrees of freedom.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def median_step(binary, run_args, interval, tmp):
    path = os.path.join(tmp, "run.json")
    cmd = [binary, "run", *run_args, "--telemetry-interval", str(interval), "-q",
           "--no-progress", "-o", path]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        m = json.load(f)["measurements"][0]
    tm = m.get("telemetry", {})
    samples = sum(r["samples"] for r in tm.get("ranks", []))
    return m["aggregate"]["step"]["median"], tm.get("available", False), samples


def paired_ci(diffs):
    n = len(diffs)
    mean = statistics.fmean(diffs)
    if n < 2:
        return mean, mean, mean
    half = T975[min(n - 1, 30) - 1] * statistics.stdev(diffs) / math.sqrt(n)
    return mean, mean - half, mean + half


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--json")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.run_args = extra or ["voxelize", "--gpus", "0", "--runs", "1", "--min-time", "0.3"]
    conditions = [0.0, 0.1, 0.01]
    steps = {c: [] for c in conditions}
    sampled = {c: [] for c in conditions}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            order = conditions[rep % 3:] + conditions[:rep % 3]
            for c in order:
                step, available, n = median_step(args.binary, args.run_args, c, tmp)
                steps[c].append(step)
                sampled[c].append(n if available else 0)
    base = steps[0.0]
    result = {"run_args": args.run_args, "reps": args.reps, "median_step_seconds": {},
              "telemetry_samples": {}, "difference": {}}
    print(f"gpuscale run {' '.join(args.run_args)}: {args.reps} interleaved repetitions")
    print(f"  telemetry off: median step {statistics.median(base) * 1e6:.2f} us")
    for c in conditions:
        result["median_step_seconds"][str(c)] = steps[c]
        result["telemetry_samples"][str(c)] = sampled[c]
    for c in conditions[1:]:
        diffs = [(on - off) / off for on, off in zip(steps[c], base)]
        mean, lo, hi = paired_ci(diffs)
        result["difference"][str(c)] = {"mean_relative": mean, "ci95_low": lo, "ci95_high": hi}
        verdict = "no measurable effect" if lo <= 0.0 <= hi else "measurable"
        print(f"  interval {c:5.2f} s: step {statistics.median(steps[c]) * 1e6:.2f} us, "
              f"difference {100 * mean:+.2f}% (95% CI {100 * lo:+.2f}% .. {100 * hi:+.2f}%): "
              f"{verdict}; readings per run {statistics.median(sampled[c]):.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
