#!/usr/bin/env python3
"""Collectives: gpuscale coll (threads and MPI launch) against torch.distributed
with the NCCL backend, same ops and sizes, same bandwidth definitions
(nccl-tests' busbw factors, docs/collectives.md).

Two roles:
  measure  run under torchrun (one process per GPU): times every op with CUDA
           events between back-to-back calls, like gpuscale, and writes JSON.
  compare  reads gpuscale result documents and the torch JSON and prints the
           busbw ratio per op at the large sizes and the small-message latency.

usage: torchrun --nproc_per_node 2 bench/coll_vs_torch.py measure --out T.json
           [--sizes 64M,128M,...] [--latency-iters 1000]
       bench/coll_vs_torch.py compare --torch T.json --gpuscale threads=A.json mpi=B.json
"""
import argparse
import json
import os
import sys

OPS = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "sendrecv"]
# The form torch.distributed's call has: its in-place ops are compared with
# gpuscale's in-place figures, the others with out-of-place.
TORCH_IN_PLACE = {"allreduce": True, "broadcast": True, "reduce": True}


def busbw_factor(op, n):
    if op == "allreduce":
        return 2.0 * (n - 1) / n
    if op in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in mult:
        return int(text[:-1]) * mult[text[-1]]
    return int(text)


def measure(args):
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    n = dist.get_world_size()

    def one(op, nbytes, iters, warmup):
        count = nbytes // 4
        per = count // n
        if op == "allgather":
            inp = torch.ones(per, device=dev)
            out = torch.empty(per * n, device=dev)
            call = lambda: dist.all_gather_into_tensor(out, inp)
            nbytes = per * n * 4
        elif op == "reducescatter":
            inp = torch.ones(per * n, device=dev)
            out = torch.empty(per, device=dev)
            call = lambda: dist.reduce_scatter_tensor(out, inp)
            nbytes = per * n * 4
        elif op == "alltoall":
            inp = torch.ones(per * n, device=dev)
            out = torch.empty(per * n, device=dev)
            call = lambda: dist.all_to_all_single(out, inp)
            nbytes = per * n * 4
        elif op == "sendrecv":
            inp = torch.ones(count, device=dev)
            out = torch.empty(count, device=dev)
            ops = [dist.P2POp(dist.isend, inp, (rank + 1) % n), dist.P2POp(dist.irecv, out, (rank - 1 + n) % n)]

            def call():
                for w in dist.batch_isend_irecv(ops):
                    w.wait()
        else:
            t = torch.ones(count, device=dev)
            if op == "allreduce":
                call = lambda: dist.all_reduce(t)
            elif op == "broadcast":
                call = lambda: dist.broadcast(t, 0)
            else:
                call = lambda: dist.reduce(t, 0)
        for _ in range(warmup):
            call()
        torch.cuda.synchronize()
        dist.barrier()
        torch.cuda.synchronize()
        events = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
        events[0].record()
        for i in range(iters):
            call()
            events[i + 1].record()
        torch.cuda.synchronize()
        times = torch.tensor([events[i].elapsed_time(events[i + 1]) * 1e-3 for i in range(iters)],
                             device=dev, dtype=torch.float64)
        # The same definition as gpuscale: per iteration the slowest rank, then the mean.
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        t = times.mean().item()
        return nbytes, t

    results = []
    for op in OPS:
        for s in args.sizes:
            nbytes, t = one(op, s, args.iters, args.warmup)
            results.append({"op": op, "bytes": nbytes, "time_seconds": t,
                            "busbw_bytes_per_second": nbytes / t * busbw_factor(op, n)})
    nbytes, t = one("allreduce", 8, args.latency_iters, args.latency_warmup)
    results.append({"op": "allreduce", "bytes": nbytes, "time_seconds": t, "latency": True})
    if rank == 0:
        doc = {"torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
               "world_size": n, "results": results}
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
    dist.destroy_process_group()


def gpuscale_points(path):
    with open(path) as f:
        doc = json.load(f)
    points = {}
    for m in doc.get("measurements", []):
        c = m.get("collective")
        if not c or c.get("time_seconds") is None:
            continue
        points[(c["op"], c["bytes"], c["in_place"])] = c
    return points


def compare(args):
    with open(args.torch) as f:
        torch_doc = json.load(f)
    modes = []
    for item in args.gpuscale:
        name, _, path = item.partition("=")
        modes.append((name, gpuscale_points(path)))
    print(f"torch {torch_doc['torch']} (NCCL {torch_doc['nccl']}), {torch_doc['world_size']} ranks")
    head = f"{'op':14s} {'size':>10s} {'torch GB/s':>11s}"
    for name, _ in modes:
        head += f" {name + ' GB/s':>13s} {name + ' ratio':>13s}"
    print(head)
    worst = {name: None for name, _ in modes}
    for r in torch_doc["results"]:
        if r.get("latency"):
            continue
        in_place = TORCH_IN_PLACE.get(r["op"], False)
        line = f"{r['op']:14s} {r['bytes'] >> 20:>8d}Mi {r['busbw_bytes_per_second'] / 1e9:11.2f}"
        for name, pts in modes:
            c = pts.get((r["op"], r["bytes"], in_place))
            if c is None:
                line += f" {'-':>13s} {'-':>13s}"
                continue
            ratio = c["busbw_bytes_per_second"] / r["busbw_bytes_per_second"]
            if worst[name] is None or ratio < worst[name][0]:
                worst[name] = (ratio, r["op"], r["bytes"])
            line += f" {c['busbw_bytes_per_second'] / 1e9:13.2f} {ratio:13.3f}"
        print(line)
    for name, w in worst.items():
        if w:
            print(f"lowest busbw ratio {name}/torch: {w[0]:.3f} ({w[1]} at {w[2] >> 20} MiB)")
    lat = [r for r in torch_doc["results"] if r.get("latency")]
    if lat:
        t = lat[0]["time_seconds"]
        line = f"8 B allreduce latency: torch {t * 1e6:.2f} us"
        for name, pts in modes:
            for in_place in (False, True):
                c = pts.get(("allreduce", 8, in_place))
                if c:
                    line += (f"; {name} {'in' if in_place else 'out-of'}-place "
                             f"{c['time_seconds'] * 1e6:.2f} us ({c['time_seconds'] / t:.2f}x)")
        print(line)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="role", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--out", required=True)
    m.add_argument("--sizes", default="64M,128M,256M,512M,1G")
    m.add_argument("--iters", type=int, default=20)
    m.add_argument("--warmup", type=int, default=5)
    m.add_argument("--latency-iters", type=int, default=1000)
    m.add_argument("--latency-warmup", type=int, default=100)
    c = sub.add_parser("compare")
    c.add_argument("--torch", required=True)
    c.add_argument("--gpuscale", nargs="+", required=True, metavar="NAME=RESULT.json")
    args = p.parse_args()
    if args.role == "measure":
        args.sizes = [parse_size(s) for s in args.sizes.split(",")]
        measure(args)
    else:
        compare(args)


if __name__ == "__main__":
    sys.exit(main())
