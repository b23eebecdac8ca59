#!/usr/bin/env python3
"""mlp training step: gpuscale against the same model in PyTorch, side by
side in one run: PyTorch eager on 1 GPU and DistributedDataParallel on 2
GPUs (mp.spawn, NCCL), gpuscale `run`/`scale mlp` on the same GPUs.

Same model (Linear/ReLU/Dropout stack of the preset), Adam (lr 1e-3), MSE
loss, batches sliced from a dataset already on the GPU, dropout on, same
precision. Throughput is samples per second of training steps.

usage: bench/mlp_vs_torch.py GPUSCALE [--presets medium,large]
       [--batch-sizes 16,32,...,8192] [--precision fp32] [--min-time 0.5]
       [--json FILE]
Prints two tables: one GPU at batch 128 (ratio gpuscale / eager) and, per
per-GPU batch size, 2-GPU samples/s of gpuscale and DDP, their ratio, and
gpuscale's 2-GPU scaling efficiency (weak scaling).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

PRESETS = {
    "medium": ([50, 256, 128, 64, 3], 0.2),
    "large": ([50, 1024, 1024, 512, 512, 256, 3], 0.3),
}


def make_model(preset):
    widths, p = PRESETS[preset]
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers += [torch.nn.ReLU(), torch.nn.Dropout(p)]
    return torch.nn.Sequential(*layers)


def setup_precision(precision):
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    # The setting PyTorch documents for matmuls (allow_tf32 alone did not
    # speed up tf32 GEMMs in torch 2.11).
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")


def make_step(model, opt, batch, precision, device):
    """step(i): training step i on `device` at `batch`, its batch sliced
    from a dataset already there."""
    n = 65536 if batch <= 65536 // 4 else batch * 4
    x = torch.randn(n, 50, device=device)
    y = torch.randn(n, 3, device=device)
    loss_fn = torch.nn.MSELoss()
    per = n // batch

    def step(i):
        j = (i % per) * batch
        xb, yb = x[j:j + batch], y[j:j + batch]
        opt.zero_grad(set_to_none=True)
        if precision == "bf16":
            with torch.autocast("cuda", dtype=torch.bfloat16):
                out = model(xb)
            loss = loss_fn(out.float(), yb)
        else:
            loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()

    return step


def timed_steps(model, opt, batch, precision, min_time, device):
    """Samples per second of training steps on `device` at `batch`."""
    step = make_step(model, opt, batch, precision, device)
    for i in range(10):
        step(i)
    torch.cuda.synchronize(device)
    # Calibrate the count so that the timed loop has no host sync inside.
    t0 = time.perf_counter()
    for i in range(20):
        step(i)
    torch.cuda.synchronize(device)
    per_step = (time.perf_counter() - t0) / 20
    iters = max(20, int(min_time / max(per_step, 1e-6)))
    if dist.is_initialized():
        t = torch.tensor([iters], device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        iters = int(t.item())
        dist.barrier()
    torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    for i in range(iters):
        step(i)
    torch.cuda.synchronize(device)
    elapsed = time.perf_counter() - t0
    if dist.is_initialized():
        t = torch.tensor([elapsed], device=device, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        elapsed = t.item()
    return batch * iters / elapsed


def eager(preset, batch, precision, min_time):
    device = torch.device("cuda", 0)
    torch.manual_seed(0)
    model = make_model(preset).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    return timed_steps(model, opt, batch, precision, min_time, device)


def ddp_worker(rank, world, configs, precision, min_time, port, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    device = torch.device("cuda", rank)
    for preset, batch in configs:
        torch.manual_seed(0)
        model = torch.nn.parallel.DistributedDataParallel(make_model(preset).to(device),
                                                          device_ids=[rank])
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        per_rank = timed_steps(model, opt, batch, precision, min_time, device)
        if rank == 0:
            queue.put((preset, batch, per_rank * world))
        del model, opt
    dist.barrier()
    dist.destroy_process_group()


def ddp(configs, precision, min_time):
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = 29500 + os.getpid() % 1000
    mp.spawn(ddp_worker, args=(2, configs, precision, min_time, port, queue), nprocs=2, join=True)
    out = {}
    while not queue.empty():
        preset, batch, sps = queue.get()
        out[(preset, batch)] = sps
    return out


def gpuscale_json(binary, args):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.json")
        cmd = [binary] + args + ["--out", path, "--no-progress", "-q"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            # Keep going: the other rows of the table still say something.
            print("gpuscale failed (%d): %s\n%s%s" % (proc.returncode, " ".join(cmd),
                                                      proc.stdout[-2000:], proc.stderr[-2000:]),
                  file=sys.stderr)
        if not os.path.exists(path):
            return {"measurements": []}
        with open(path) as f:
            return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("gpuscale")
    ap.add_argument("--presets", default="medium,large")
    ap.add_argument("--batch-sizes", default="16,32,64,128,256,512,1024,2048,4096,8192")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "bf16"])
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--json")
    a = ap.parse_args()
    presets = a.presets.split(",")
    sizes = [int(s) for s in a.batch_sizes.split(",")] if a.batch_sizes else []
    common = ["--precision", a.precision, "--min-time", str(a.min_time), "--runs", "1",
              "--verify-rows", "16",
              "--warmup", "10"]
    results = {"precision": a.precision, "one_gpu": [], "two_gpus": []}

    print("one GPU, batch 128, %s: samples/s" % a.precision)
    print("%-8s %14s %14s %8s" % ("preset", "gpuscale", "torch eager", "ratio"))
    for preset in presets:
        doc = gpuscale_json(a.gpuscale, ["run", "mlp", "--gpus", "0", "--preset", preset,
                                         "--batch", "128"] + common)
        ok = [m for m in doc["measurements"] if m["status"] == "ok"]
        ours = ok[0]["aggregate"]["throughput_items_per_second"] if ok else float("nan")
        theirs = eager(preset, 128, a.precision, a.min_time)
        results["one_gpu"].append({"preset": preset, "gpuscale": ours, "torch_eager": theirs})
        print("%-8s %14.0f %14.0f %7.1fx" % (preset, ours, theirs, ours / theirs), flush=True)

    if not sizes or torch.cuda.device_count() < 2:
        print("two GPUs: skipped (%d GPU(s), batch sizes %s)" % (torch.cuda.device_count(), sizes))
    else:
        ours = {}
        for preset in presets:
            doc = gpuscale_json(a.gpuscale, ["scale", "mlp", "--ngpus", "2", "--scaling", "weak",
                                             "--preset", preset, "--batch-sizes",
                                             ",".join(map(str, sizes))] + common)
            for m in doc["measurements"]:
                if m["status"] != "ok":
                    continue
                b = int(m["variant"].split("=")[1])
                agg = dict(m["aggregate"])
                comm = [c for r in m["runs"][0]["ranks"] for c in (r.get("comm_seconds") or [])]
                agg["exposed_comm_seconds"] = sum(comm) / len(comm) if comm else 0.0
                ours.setdefault((preset, b), {})[m["world_size"]] = agg
        theirs = ddp([(p, b) for p in presets for b in sizes], a.precision, a.min_time)
        print("\ntwo GPUs, weak scaling (batch per GPU), %s: samples/s" % a.precision)
        print("%-8s %6s %12s %12s %12s %7s %7s %9s" % ("preset", "batch", "gpuscale 1",
                                                       "gpuscale 2", "torch DDP", "ratio",
                                                       "effic", "exposed"))
        for preset in presets:
            for b in sizes:
                agg = ours.get((preset, b), {})
                one = agg.get(1, {}).get("throughput_items_per_second", float("nan"))
                two = agg.get(2, {}).get("throughput_items_per_second", float("nan"))
                eff = agg.get(2, {}).get("efficiency", float("nan"))
                exposed = agg.get(2, {}).get("exposed_comm_seconds", float("nan"))
                t = theirs.get((preset, b), float("nan"))
                results["two_gpus"].append({"preset": preset, "batch_per_gpu": b,
                                            "gpuscale_1": one, "gpuscale_2": two,
                                            "efficiency": eff, "torch_ddp": t,
                                            "exposed_comm_seconds": exposed})
                print("%-8s %6d %12.0f %12.0f %12.0f %6.2fx %6.1f%% %6.1f us" %
                      (preset, b, one, two, t, two / t, 100 * eff, 1e6 * exposed), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
