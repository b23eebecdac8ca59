#!/usr/bin/env python3
"""One GPU's mlp training step at a large batch: gpuscale against PyTorch
eager (the same model, Adam, MSE, dropout; bench/mlp_vs_torch.py's
make_model), and optionally against an earlier gpuscale binary, side by
side in one run, with 95% intervals on every ratio.

usage: bench/mlp_step_vs_torch.py GPUSCALE [--baseline OLD_GPUSCALE]
       [--preset large] [--batch 8192] [--precisions fp32,tf32,bf16]
       [--rounds 2] [--min-time 2] [--json FILE]

Per precision, `rounds` rounds of: gpuscale `run mlp` (3 runs of
--min-time seconds), the baseline the same way, and PyTorch eager timed
in windows of 10 steps for --min-time seconds (each window synchronised,
so that the ratio carries the peer's spread too). Prints each side's
samples/s and flop rate (gpuscale's roofline member), gpuscale over
torch (bench/step_ratio.py, ratio_to_windows) and gpuscale over its
baseline (ratio) per round."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mlp_vs_torch import make_model, make_step, setup_precision  # noqa: E402
from step_ratio import ratio, ratio_to_windows, throughput  # noqa: E402

WINDOW = 10


def torch_windows(preset, batch, precision, min_time):
    """Seconds of consecutive windows of WINDOW training steps."""
    setup_precision(precision)
    device = torch.device("cuda", 0)
    torch.manual_seed(0)
    model = make_model(preset).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = make_step(model, opt, batch, precision, device)

    for i in range(20):
        step(i)
    torch.cuda.synchronize(device)
    windows, i, start = [], 0, time.perf_counter()
    while time.perf_counter() - start < min_time or len(windows) < 10:
        mark = time.perf_counter()
        for _ in range(WINDOW):
            step(i)
            i += 1
        torch.cuda.synchronize(device)
        windows.append(time.perf_counter() - mark)
    del model, opt
    return windows


def gpuscale_run(binary, preset, batch, precision, min_time, path):
    cmd = [binary, "run", "mlp", "--gpus", "0", "--preset", preset, "--batch", str(batch),
           "--precision", precision, "--runs", "3", "--min-time", str(min_time), "--warmup", "10",
           "--no-progress", "-q", "--out", path]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print("gpuscale failed (%d): %s\n%s" % (proc.returncode, " ".join(cmd), proc.stderr[-2000:]),
              file=sys.stderr)
        return None
    doc = json.load(open(path))
    m = doc["measurements"][0]
    verified = (m.get("verification") or {}).get("status") == "passed"
    return {"path": path, "roofline": m.get("roofline") or {}, "verified": verified}


def fmt(r):
    return "%.3fx [%.3f, %.3f]" % r


def fraction_text(roofline):
    """The roofline fraction with its 95% interval as the document holds
    them (docs/result-schema.md, "roofline"); no interval where it has none."""
    f, lo, hi = (roofline.get(k) for k in ("fraction", "fraction_low", "fraction_high"))
    if f is None:
        return "no fraction"
    if lo is None or hi is None:
        return "%.1f%% (no interval)" % (100 * f)
    return "%.1f%% [%.1f, %.1f]" % (100 * f, 100 * lo, 100 * hi)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("gpuscale")
    ap.add_argument("--baseline")
    ap.add_argument("--preset", default="large")
    ap.add_argument("--batch", type=int, default=8192)
    ap.add_argument("--precisions", default="fp32,tf32,bf16")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--min-time", type=float, default=2.0)
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="mlp-step-")
    results = []
    print("mlp %s, batch %d, one GPU (%s)" % (a.preset, a.batch, torch.cuda.get_device_name(0)))
    for precision in a.precisions.split(","):
        for k in range(a.rounds):
            row = {"precision": precision, "round": k}
            ours = gpuscale_run(a.gpuscale, a.preset, a.batch, precision, a.min_time,
                                os.path.join(tmp, "new-%s-%d.json" % (precision, k)))
            old = (gpuscale_run(a.baseline, a.preset, a.batch, precision, a.min_time,
                                os.path.join(tmp, "old-%s-%d.json" % (precision, k)))
                   if a.baseline else None)
            windows = torch_windows(a.preset, a.batch, precision, a.min_time)
            peer = a.batch * WINDOW * len(windows) / sum(windows)
            line = "%-5s round %d: torch eager %.3f M/s" % (precision, k, peer / 1e6)
            row["torch_samples_per_s"] = peer
            if ours:
                tp = throughput(ours["path"])
                vs = ratio_to_windows(ours["path"], windows, a.batch * WINDOW)
                rf = ours["roofline"]
                row.update(gpuscale_samples_per_s=tp[0], verified=ours["verified"],
                           flops_per_s=rf.get("achieved_per_second"),
                           fraction=rf.get("fraction"), over_torch=vs)
                line += "; gpuscale %.3f M/s [%.3f, %.3f], %.1f TFLOP/s (%s of %s peak), " \
                        "verified %s; gpuscale/torch %s" % (
                            tp[0] / 1e6, tp[1] / 1e6, tp[2] / 1e6,
                            (rf.get("achieved_per_second") or 0) / 1e12, fraction_text(rf),
                            rf.get("bound"), "yes" if ours["verified"] else "NO", fmt(vs))
            if ours and old:
                over_old = ratio(ours["path"], old["path"])
                row["over_baseline"] = over_old
                row["baseline_flops_per_s"] = old["roofline"].get("achieved_per_second")
                line += "; over the baseline %s (baseline %.1f TFLOP/s, verified %s)" % (
                    fmt(over_old), (old["roofline"].get("achieved_per_second") or 0) / 1e12,
                    "yes" if old["verified"] else "NO")
            print(line, flush=True)
            results.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
