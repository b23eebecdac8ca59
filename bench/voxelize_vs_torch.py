#!/usr/bin/env python3
"""Voxelize count mode: gpuscale's CUDA kernel against the same operation in
PyTorch eager (voxel index computation + bincount), side by side in one run
on one GPU, plus the fraction of the memory-bandwidth roofline reached.

usage: bench/voxelize_vs_torch.py GPUSCALE_BINARY [--points 1M,10M] [--grid 128]
Prints a table; --json FILE also writes the figures.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch


def parse_count(text):
    mult = {"K": 10**3, "M": 10**6, "G": 10**9}
    text = text.strip().upper()
    if text[-1] in mult:
        return int(text[:-1]) * mult[text[-1]]
    return int(text)


def torch_voxelize_count(points, grid, voxel, origin):
    """What users write today: index, mask, linearize, bincount."""
    idx = torch.floor((points - origin) / voxel).long()
    finite = torch.isfinite(points).all(dim=1)
    inside = finite & (idx >= 0).all(dim=1) & (idx[:, 0] < grid) & (idx[:, 1] < grid) & (idx[:, 2] < grid)
    idx = idx[inside]
    lin = (idx[:, 0] * grid + idx[:, 1]) * grid + idx[:, 2]
    return torch.bincount(lin, minlength=grid ** 3)


def torch_voxelize_count_syncfree(points, grid, voxel, origin):
    """A tuned eager variant: no boolean indexing (which forces a host sync);
    dropped points go to one extra bin that is cut off at the end."""
    idx = torch.floor((points - origin) / voxel)
    inside = torch.isfinite(points).all(dim=1) & ((idx >= 0) & (idx < grid)).all(dim=1)
    lin = ((idx[:, 0] * grid + idx[:, 1]) * grid + idx[:, 2]).long()
    lin = torch.where(inside, lin, grid ** 3)
    return torch.bincount(lin, minlength=grid ** 3 + 1)[: grid ** 3]


def time_torch(fn, iters, warmup):
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


def copy_bandwidth(nbytes=1 << 30):
    """Measured device-to-device copy rate (bytes read + bytes written per s)."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    t = time_torch(lambda: dst.copy_(src), 20, 5)
    return 2 * nbytes / t


def run_gpuscale(binary, n, grid, iters, out_dir):
    path = os.path.join(out_dir, f"voxelize-{n}.json")
    cmd = [binary, "run", "voxelize", "--backend", "cuda", "--gpus", "0", "--mode", "count",
           "--points", str(n), "--clouds", "1", "--grid", str(grid), "--voxel-size", "1",
           "--iters", str(iters), "--warmup", "20", "--runs", "3", "--quiet", "--out", path]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        doc = json.load(f)
    m = doc["measurements"][0]
    assert m["verification"]["status"] == "passed", m["verification"]
    gpu = doc["environment"]["gpus"][0]
    return m["aggregate"]["step"]["median"], m["cost"]["bytes_per_step"], gpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--points", default="1M,10M")
    ap.add_argument("--grid", type=int, default=128)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()

    copy_bw = copy_bandwidth()
    rows = []
    with tempfile.TemporaryDirectory() as out_dir:
        for text in args.points.split(","):
            n = parse_count(text)
            gen = torch.Generator(device="cuda").manual_seed(42)
            points = torch.rand((n, 3), device="cuda", generator=gen) * args.grid
            origin = torch.zeros(3, device="cuda")
            ref = torch_voxelize_count(points, args.grid, 1.0, origin)
            assert int(ref.sum()) == n
            assert torch.equal(ref, torch_voxelize_count_syncfree(points, args.grid, 1.0, origin))
            t_naive = time_torch(lambda: torch_voxelize_count(points, args.grid, 1.0, origin),
                                 args.iters, 20)
            t_tuned = time_torch(lambda: torch_voxelize_count_syncfree(points, args.grid, 1.0, origin),
                                 args.iters, 20)
            # The peer is the faster of the two eager versions.
            t_torch = min(t_naive, t_tuned)
            t_ours, nbytes, gpu = run_gpuscale(args.binary, n, args.grid, args.iters, out_dir)
            peak = gpu.get("peak_memory_bandwidth_bytes_per_s") or 0
            rows.append({
                "points": n, "grid": args.grid, "torch_seconds": t_torch,
                "torch_masked_seconds": t_naive, "torch_syncfree_seconds": t_tuned, "gpuscale_seconds": t_ours,
                "speedup": t_torch / t_ours, "bytes": nbytes, "gpuscale_bandwidth": nbytes / t_ours,
                "peak_bandwidth": peak, "copy_bandwidth": copy_bw, "gpu": gpu["name"],
            })
    print(f"GPU: {rows[0]['gpu']}; theoretical memory bandwidth {rows[0]['peak_bandwidth'] / 1e9:.0f} GB/s, "
          f"measured device copy {copy_bw / 1e9:.0f} GB/s")
    print("torch eager: masked = boolean indexing (forces a host sync), sync-free = extra dump bin;"
          " ratio is against the faster of the two")
    print(f"{'points':>10} {'masked':>10} {'sync-free':>10} {'gpuscale':>10} {'ratio':>7} {'GB/s':>8} {'% peak':>7} {'% copy':>7}")
    for r in rows:
        bw = r["gpuscale_bandwidth"]
        print(f"{r['points']:>10} {r['torch_masked_seconds'] * 1e6:>8.1f}us {r['torch_syncfree_seconds'] * 1e6:>8.1f}us "
              f"{r['gpuscale_seconds'] * 1e6:>8.1f}us "
              f"{r['speedup']:>6.1f}x {bw / 1e9:>8.0f} {100 * bw / r['peak_bandwidth'] if r['peak_bandwidth'] else 0:>6.1f}% "
              f"{100 * bw / r['copy_bandwidth']:>6.1f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
