#!/usr/bin/env python3
"""GPU-to-GPU copy bandwidth: gpuscale p2p (copy engine, 1 stream and split
over streams, SM copy kernel; one way and both ways) against PyTorch's
tensor copy between the same two GPUs, side by side in one run.

usage: bench/p2p_vs_torch.py GPUSCALE_BINARY [--size 1G] [--iters 8] [--samples 5]
       [--src 0] [--dst 1] [--json FILE] [--p2p-json FILE]
PyTorch is timed with the host clock around `iters` copies after both GPUs
are synchronized (launch overhead included: under 0.1% at 1 GiB); gpuscale
reports its own medians (docs/p2p.md). Ratios are gpuscale / PyTorch.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B").rstrip("I")
    return int(text[:-1]) * mult[text[-1]] if text[-1] in mult else int(text)


def torch_copies(pairs, iters, samples):
    """Median total bandwidth (bytes/s) of copying every (src, dst) tensor
    pair `iters` times at once, and whether the data arrived."""
    devices = sorted({t.device.index for p in pairs for t in p})

    def sync():
        for d in devices:
            torch.cuda.synchronize(d)

    for src, dst in pairs:  # warmup (also enables peer access)
        dst.copy_(src, non_blocking=True)
    sync()
    rates = []
    for _ in range(samples):
        sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            for src, dst in pairs:
                dst.copy_(src, non_blocking=True)
        sync()
        dt = time.perf_counter() - t0
        rates.append(sum(s.numel() * s.element_size() for s, _ in pairs) * iters / dt)
    ok = all(torch.equal(dst.to(src.device), src) for src, dst in pairs)
    return statistics.median(rates), rates, ok


def figures_of(doc, src, dst):
    figures = {}
    for test in doc["p2p"]["tests"]:
        if test["status"] != "ran" or test["layout"] != "matrix":
            continue
        cell = test["cells"][src][dst]
        if cell and cell.get("status") == "ok":
            figures[test["name"]] = cell["median"]
    return figures


def gpuscale_figures(binary, size, iters, samples, src, dst, p2p_json):
    if p2p_json:  # a full `gpuscale p2p` run made just before, same options
        with open(p2p_json) as f:
            return figures_of(json.load(f), src, dst)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p2p.json")
        cmd = [binary, "p2p", "--size", str(size), "--iters", str(iters), "--samples",
               str(samples), "--pairs", f"{src}:{dst},{dst}:{src}", "-q", "-o", path]
        figures = {}
        for mode in ("ce", "sm"):
            subprocess.run(cmd + ["--mode", mode], check=True, stdout=subprocess.DEVNULL)
            with open(path) as f:
                figures.update(figures_of(json.load(f), src, dst))
        return figures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--size", default="1G")
    ap.add_argument("--iters", type=int, default=8)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--src", type=int, default=0)
    ap.add_argument("--dst", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--p2p-json", help="take gpuscale's figures from this p2p result file "
                    "(measured just before with the same size/iters/samples) instead of "
                    "running gpuscale p2p --mode ce and --mode sm here")
    args = ap.parse_args()
    if torch.cuda.device_count() < 2:
        print("skipped: needs 2 GPUs, found", torch.cuda.device_count())
        return 77
    size = parse_size(args.size)
    g = gpuscale_figures(args.binary, size, args.iters, args.samples, args.src, args.dst,
                         args.p2p_json)

    n = size // 4
    a = torch.arange(n, dtype=torch.int32, device=f"cuda:{args.src}")
    b = torch.arange(n, dtype=torch.int32, device=f"cuda:{args.dst}") * 3
    a_on_b = torch.empty(n, dtype=torch.int32, device=f"cuda:{args.dst}")
    b_on_a = torch.empty(n, dtype=torch.int32, device=f"cuda:{args.src}")
    t_uni, t_uni_all, ok_uni = torch_copies([(a, a_on_b)], args.iters, args.samples)
    t_bi, t_bi_all, ok_bi = torch_copies([(a, a_on_b), (b, b_on_a)], args.iters, args.samples)

    rows = [
        ("unidirectional", "ce_unidir_p2p", t_uni),
        ("unidirectional, split over streams", "ce_unidir_p2p_streams", t_uni),
        ("unidirectional, SM copy kernel", "sm_unidir_p2p", t_uni),
        ("bidirectional total", "ce_bidir_p2p", t_bi),
        ("bidirectional total, SM copy kernel", "sm_bidir_p2p", t_bi),
    ]
    print(f"GPU{args.src} <-> GPU{args.dst}, {size} bytes per copy, {args.iters} copies x "
          f"{args.samples} samples; torch {torch.__version__}")
    print(f"{'':38s} {'gpuscale':>10s} {'PyTorch':>10s} {'ratio':>7s}")
    result = {"size_bytes": size, "iters": args.iters, "samples": args.samples,
              "src": args.src, "dst": args.dst, "torch_version": torch.__version__,
              "torch_unidir_bytes_per_s": t_uni, "torch_unidir_samples": t_uni_all,
              "torch_bidir_bytes_per_s": t_bi, "torch_bidir_samples": t_bi_all,
              "torch_verified": ok_uni and ok_bi, "gpuscale": g, "ratios": {}}
    for label, key, torch_rate in rows:
        mine = g.get(key)
        ratio = mine / torch_rate if mine else None
        result["ratios"][key] = ratio
        print(f"{label:38s} {mine / 1e9 if mine else float('nan'):10.1f} "
              f"{torch_rate / 1e9:10.1f} {ratio if ratio else float('nan'):7.3f}")
    print("GB/s = 1e9 bytes/s; PyTorch data verified:", ok_uni and ok_bi)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
