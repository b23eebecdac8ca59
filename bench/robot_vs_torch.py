#!/usr/bin/env python3
"""resample and fuse: gpuscale's CUDA kernel against the same operation in
PyTorch eager (searchsorted + gather + lerp per stream, then cat), side by
side in one run on one GPU, timed per call with CUDA events (median), and
the proportional split against the even split on two GPUs with one slowed
2x by fault injection.

usage: bench/robot_vs_torch.py GPUSCALE_BINARY [--iters N] [--json FILE]
       [--no-split]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

# (name, gpuscale workload and options, batch, streams [(S, D)], T)
CASES = [
    ("fuse standard (B=4, 30x512+100x64+200x12, T=50, bf16)",
     ["fuse", "--batch", "4", "--streams", "30x512,100x64,200x12", "--targets", "50"],
     4, [(30, 512), (100, 64), (200, 12)], 50),
    ("resample B=32 S=500 T=256 D=256 bf16",
     ["resample", "--batch", "32", "--samples", "500", "--targets", "256", "--dims", "256"],
     32, [(500, 256)], 256),
]


def torch_fuse(streams, targets):
    """What users write today, per stream: searchsorted for the right
    neighbour, clamp both neighbours (holding the ends), gather the two rows,
    lerp in float32, back to the data type; then concatenate the streams."""
    outs = []
    for data, times in streams:
        S, D = data.shape[1], data.shape[2]
        hi = torch.searchsorted(times, targets, right=True)
        lo = (hi - 1).clamp(0, S - 1)
        hi = hi.clamp(0, S - 1)
        t0 = times.gather(1, lo)
        t1 = times.gather(1, hi)
        span = t1 - t0
        w = torch.where(span > 0, (targets - t0) / torch.where(span > 0, span, 1.0), 0.0)
        a = data.gather(1, lo.unsqueeze(-1).expand(-1, -1, D)).float()
        b = data.gather(1, hi.unsqueeze(-1).expand(-1, -1, D)).float()
        outs.append(torch.lerp(a, b, w.unsqueeze(-1)).to(data.dtype))
    return torch.cat(outs, dim=-1) if len(outs) > 1 else outs[0]


def make_inputs(batch, shapes, T, dtype=torch.bfloat16):
    gen = torch.Generator(device="cuda").manual_seed(42)
    streams = []
    for S, D in shapes:
        steps = (0.5 + torch.rand((batch, S), device="cuda", generator=gen)) / S
        times = torch.cumsum(steps, dim=1)
        data = (2 * torch.rand((batch, S, D), device="cuda", generator=gen) - 1).to(dtype)
        streams.append((data, times.contiguous()))
    targets = ((torch.arange(T, device="cuda", dtype=torch.float32) + 0.5) / T).expand(batch, T).contiguous()
    return streams, targets


def check_torch_semantics():
    """The eager version follows the documented rules on a small case:
    ends held, duplicates use the later sample, values between neighbours."""
    times = torch.tensor([[0.0, 1.0, 1.0, 2.0]], device="cuda")
    data = torch.tensor([[[0.0], [10.0], [20.0], [40.0]]], device="cuda")
    targets = torch.tensor([[-1.0, 0.5, 1.0, 1.5, 3.0]], device="cuda")
    got = torch_fuse([(data, times)], targets)[0, :, 0].tolist()
    assert got == [0.0, 5.0, 20.0, 30.0, 40.0], got


def time_torch(fn, iters, warmup=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e-3)
    times.sort()
    return times[len(times) // 2]


def run_gpuscale(binary, args, out_dir, name, extra):
    path = os.path.join(out_dir, name + ".json")
    cmd = [binary, "run"] + args + ["--backend", "cuda", "--quiet", "--no-progress", "--out", path] + extra
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--json")
    ap.add_argument("--no-split", action="store_true")
    args = ap.parse_args()
    check_torch_semantics()
    rows = []
    with tempfile.TemporaryDirectory() as out_dir:
        for i, (name, gs_args, batch, shapes, T) in enumerate(CASES):
            streams, targets = make_inputs(batch, shapes, T)
            t_torch = time_torch(lambda: torch_fuse(streams, targets), args.iters)
            doc = run_gpuscale(args.binary, gs_args, out_dir, f"case{i}",
                               ["--gpus", "0", "--iters", str(args.iters), "--warmup", "20", "--runs", "3"])
            m = doc["measurements"][0]
            assert m["verification"]["status"] == "passed", m["verification"]
            t_ours = m["aggregate"]["step"]["median"]
            rows.append({"case": name, "torch_seconds": t_torch, "gpuscale_seconds": t_ours,
                         "speedup": t_torch / t_ours, "gpu": doc["environment"]["gpus"][0]["name"],
                         "verification": m["verification"]["detail"]})
        split = None
        if not args.no_split and torch.cuda.device_count() >= 2:
            doc = run_gpuscale(args.binary,
                               ["resample", "--batch", "512", "--samples", "500", "--targets", "256",
                                "--dims", "256"], out_dir, "split",
                               ["--gpus", "0,1", "--split", "proportional", "--inject",
                                "slow:rank=1,factor=2", "--iters", "200", "--warmup", "10", "--runs", "3"])
            even, prop = doc["measurements"]
            assert even["split"]["policy"] == "even" and prop["split"]["policy"] == "proportional"
            split = {"even_items_per_second": even["aggregate"]["throughput_items_per_second"],
                     "proportional_items_per_second": prop["aggregate"]["throughput_items_per_second"],
                     "even_units": even["split"]["units"], "proportional_units": prop["split"]["units"],
                     "calibration_items_per_second": prop["split"]["calibration_items_per_second"],
                     "even_step_median_seconds": even["aggregate"]["step"]["median"],
                     "proportional_step_median_seconds": prop["aggregate"]["step"]["median"],
                     "faults": prop.get("faults")}
            split["gain"] = split["proportional_items_per_second"] / split["even_items_per_second"]
    print(f"GPU: {rows[0]['gpu']}; per call, median of CUDA-event times")
    print(f"{'case':<58} {'torch eager':>12} {'gpuscale':>10} {'ratio':>7}")
    for r in rows:
        print(f"{r['case']:<58} {r['torch_seconds'] * 1e6:>10.1f}us {r['gpuscale_seconds'] * 1e6:>8.2f}us "
              f"{r['speedup']:>6.1f}x")
    if split:
        print(f"split on 2 GPUs, rank 1 slowed 2x: even {split['even_units']} "
              f"{split['even_items_per_second'] / 1e9:.2f} G values/s, proportional "
              f"{split['proportional_units']} {split['proportional_items_per_second'] / 1e9:.2f} G values/s: "
              f"gain {split['gain']:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cases": rows, "split": split}, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
