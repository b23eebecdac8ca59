#!/usr/bin/env python3
"""gpuscale's trace analysis beside Holistic Trace Analysis (HTA 0.5.0) on the
same PyTorch profiler traces (docs/traces.md, "Checked against HTA").

Usage: trace-vs-hta.py GPUSCALE DIR [--max-diff PP]
       trace-vs-hta.py --replicate SRC_DIR OUT_DIR MB

DIR holds one Kineto trace per rank (*.json). For every rank it prints the
communication-computation overlap, the idle share and the temporal split
(compute, non-compute), the idle split (host wait, kernel wait, other, as
shares of the summed idle gaps; HTA's per-stream figures summed over the
streams) and the shares of the five kernels with the most time, from
`gpuscale report -f json` and from HTA, with the difference in percentage
points. Exit 1 when a difference exceeds --max-diff (default 1.0).
"""
import argparse
import glob
import json
import logging
import os
import subprocess
import sys
import time


def gpuscale_figures(binary, files):
    out = subprocess.run([binary, "report", "-f", "json", *files], check=True,
                         capture_output=True, text=True).stdout
    doc = json.loads(out)
    ranks = {}
    for r in doc["ranks"]:
        t, idle = r["time_us"], r["idle_us"]
        gaps = idle["host_wait"] + idle["kernel_wait"] + idle["other"]
        total = sum(k["total_us"] for k in r["top_kernels"]) / max(
            sum(k["share"] for k in r["top_kernels"]), 1e-300)
        ranks[r["rank"]] = {
            "overlap": 100 * (r["overlap"] if r["overlap"] is not None else float("nan")),
            "idle": 100 * t["idle"] / t["span"],
            "compute": 100 * t["compute"] / t["span"],
            "non_compute": 100 * t["non_compute"] / t["span"],
            "host_wait": 100 * idle["host_wait"] / gaps if gaps else float("nan"),
            "kernel_wait": 100 * idle["kernel_wait"] / gaps if gaps else float("nan"),
            "other_wait": 100 * idle["other"] / gaps if gaps else float("nan"),
            "kernels": [100 * k["total_us"] / total for k in r["top_kernels"][:5]],
        }
    return ranks


def hta_figures(trace_dir):
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis  # noqa: E402 (timed with the load)
    analyzer = TraceAnalysis(trace_dir=trace_dir)
    nan = float("nan")
    ranks = {r: {"idle": nan, "compute": nan, "non_compute": nan, "overlap": nan}
             for r in analyzer.t.traces}
    try:
        tb = analyzer.get_temporal_breakdown(visualize=False)
        for _, row in tb.iterrows():
            ranks[int(row["rank"])].update({
                "idle": row["idle_time_pctg"], "compute": row["compute_time_pctg"],
                "non_compute": row["non_compute_time_pctg"]})
    except AssertionError:
        # HTA 0.5.0 asserts non-compute >= 0, which its own rounding of
        # times to whole us can break (compute + idle a few us over the span).
        print("HTA: get_temporal_breakdown failed its own assertion (non_compute_time >= 0); "
              "its idle/compute/non-compute rows are n/a")
    ov = analyzer.get_comm_comp_overlap(visualize=False)
    for _, row in ov.iterrows():
        ranks[int(row["rank"])]["overlap"] = row["comp_comm_overlap_pctg"]
    idle, _ = analyzer.get_idle_time_breakdown(ranks=sorted(ranks), visualize=False)
    for rank in ranks:
        sub = idle[idle["rank"] == rank] if "rank" in idle.columns else idle
        by_cat = sub.groupby("idle_category")["idle_time"].sum()
        gaps = by_cat.sum()
        for cat, key in (("host_wait", "host_wait"), ("kernel_wait", "kernel_wait"),
                         ("other", "other_wait")):
            ranks[rank][key] = 100 * by_cat.get(cat, 0.0) / gaps if gaps else float("nan")
    _, metrics = analyzer.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0,
                                                   num_kernels=100000)
    for rank in ranks:
        sub = metrics[metrics["rank"] == rank]
        sums = sorted(sub["sum (us)"], reverse=True)
        total = sum(sums)
        ranks[rank]["kernels"] = [100 * s / total for s in sums[:5]]
    return ranks


def replicate(src_dir, out_dir, megabytes):
    """Writes a trace per rank of SRC_DIR into OUT_DIR, each about MB / ranks
    megabytes: the rank's events repeated with times shifted past the
    previous copy's end, correlation ids and ProfilerStep numbers moved on,
    so that every copy is a further stretch of the same training."""
    files = sorted(glob.glob(os.path.join(src_dir, "*.json")))
    os.makedirs(out_dir, exist_ok=True)
    target = megabytes * 1e6 / len(files)
    for path in files:
        doc = json.load(open(path))
        events = doc.pop("traceEvents")
        timed = [e for e in events if "ts" in e]
        lo = min(e["ts"] for e in timed)
        hi = max(e["ts"] + e.get("dur", 0) for e in timed)
        period = hi - lo + 100.0
        corr = max((e.get("args", {}).get("correlation", 0) for e in events
                    if isinstance(e.get("args", {}).get("correlation", 0), int)), default=0) + 1
        steps = 1000
        lines = [json.dumps(e, separators=(",", ":")) for e in events]
        size = sum(len(x) + 2 for x in lines)
        copies = max(1, int(target // size))
        with open(os.path.join(out_dir, os.path.basename(path)), "w") as f:
            f.write("{\n")
            for k, v in doc.items():
                f.write(f"  {json.dumps(k)}: {json.dumps(v)},\n")
            f.write('  "traceEvents": [\n')
            first = True
            for c in range(copies):
                for e in events:
                    if c and e.get("ph") == "M":
                        continue
                    if c:
                        e = dict(e)
                        if "ts" in e:
                            e["ts"] = e["ts"] + c * period
                        args = e.get("args")
                        if isinstance(args, dict) and isinstance(args.get("correlation"), int) \
                                and args["correlation"] >= 0:
                            e["args"] = dict(args, correlation=args["correlation"] + c * corr)
                        if isinstance(e.get("id"), int):
                            e["id"] = e["id"] + c * corr
                        name = e.get("name", "")
                        if isinstance(name, str) and name.startswith("ProfilerStep#"):
                            e["name"] = f"ProfilerStep#{int(name[13:]) + c * steps}"
                    f.write(("" if first else ",\n") + "  " + json.dumps(e, separators=(",", ":")))
                    first = False
            f.write("\n  ]\n}\n")
        print(f"{out_dir}/{os.path.basename(path)}: {copies} copies")


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--replicate":
        replicate(sys.argv[2], sys.argv[3], float(sys.argv[4]))
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("gpuscale")
    p.add_argument("dir")
    p.add_argument("--max-diff", type=float, default=1.0)
    args = p.parse_args()
    files = sorted(glob.glob(os.path.join(args.dir, "*.json")))
    if not files:
        sys.exit(f"{args.dir}: no *.json trace")
    t0 = time.perf_counter()
    ours = gpuscale_figures(args.gpuscale, files)
    t1 = time.perf_counter()
    theirs = hta_figures(args.dir)
    t2 = time.perf_counter()
    print(f"{args.dir}: {len(files)} rank(s); gpuscale {t1 - t0:.2f} s, HTA {t2 - t1:.2f} s")
    print(f"{'rank':>4}  {'figure':<14} {'gpuscale':>9} {'HTA':>9} {'diff pp':>8}")
    worst = 0.0
    for rank in sorted(ours):
        a, b = ours[rank], theirs.get(rank)
        if b is None:
            sys.exit(f"HTA has no rank {rank}")
        rows = [(k, a[k], b[k]) for k in ("overlap", "idle", "compute", "non_compute",
                                          "host_wait", "kernel_wait", "other_wait")]
        rows += [(f"kernel {i + 1}", x, y) for i, (x, y) in enumerate(zip(a["kernels"],
                                                                          b["kernels"]))]
        for name, x, y in rows:
            d = abs(x - y)
            if d == d:  # NaN on either side (no communication, HTA failed) is not compared
                worst = max(worst, d)
            print(f"{rank:>4}  {name:<14} {x:>8.2f}% {y:>8.2f}% {d:>8.2f}")
    print(f"largest difference: {worst:.2f} percentage points (limit {args.max_diff})")
    return 0 if worst <= args.max_diff else 1


if __name__ == "__main__":
    sys.exit(main())
