#!/usr/bin/env python3
"""Throughput ratio of two gpuscale result files with its 95% interval.

usage: bench/step_ratio.py A.json B.json
prints "R [LOW, HIGH]": A's throughput over B's (items per step over the
mean step), the interval by a bootstrap of each file's steps (a step is
the slowest rank's device time of one timed iteration, as the report's
step), resampled within each run, 4000 draws, fixed seed. The benches
quote it beside their ratios (bench/pipeline.sh)."""
import json
import random
import sys


def runs_of(path):
    """Per run, the steps: the slowest rank's device (else wall) seconds
    of each iteration; and the items of one step."""
    m = json.load(open(path))["measurements"][0]
    runs = []
    for run in m["runs"]:
        times = [r.get("device_seconds") or r["wall_seconds"] for r in run["ranks"]]
        runs.append([max(t[i] for t in times) for i in range(min(len(t) for t in times))])
    items = sum(r["items_per_step"] for r in m["runs"][0]["ranks"])
    return runs, items


def mean_step(runs, draw):
    steps = [draw(run) for run in runs]
    flat = [s for run in steps for s in run]
    return sum(flat) / len(flat)


def bootstrap(figure, draws=4000, seed=7):
    """figure(draw) at draw = the identity (the point) and its 95% interval
    over `draws` draws that resample every list with replacement."""
    rng = random.Random(seed)
    resample = lambda xs: [rng.choice(xs) for _ in xs]
    got = sorted(figure(resample) for _ in range(draws))
    return figure(lambda xs: xs), got[int(0.025 * draws)], got[int(0.975 * draws) - 1]


def throughput(a):
    """A's items per second over its mean step, with the same bootstrap's
    95% interval: for a peer timed as one window, whose own spread is
    unknown (the ratio to it then carries only this side's)."""
    ra, ia = runs_of(a)
    return bootstrap(lambda draw: ia / mean_step(ra, draw))


def ratio(a, b):
    (ra, ia), (rb, ib) = runs_of(a), runs_of(b)
    return bootstrap(lambda draw: (ia / mean_step(ra, draw)) / (ib / mean_step(rb, draw)))


def ratio_to_windows(a, window_seconds, items_per_window):
    """A's throughput over a peer's timed as consecutive windows of equal
    work (items_per_window each; their seconds in window_seconds), with
    the 95% interval of a bootstrap of A's steps and of the peer's
    windows together."""
    ra, ia = runs_of(a)
    peer = lambda w: items_per_window * len(w) / sum(w)
    return bootstrap(lambda draw: (ia / mean_step(ra, draw)) / peer(draw(window_seconds)))


if __name__ == "__main__":
    r, lo, hi = ratio(sys.argv[1], sys.argv[2])
    print(f"{r:.3f}x [{lo:.3f}, {hi:.3f}]")
