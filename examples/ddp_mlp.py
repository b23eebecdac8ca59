#!/usr/bin/env python3
"""PyTorch DDP training of an MLP, for `gpuscale exec` (docs/exec.md).

The model has the shapes of the "medium" and "large" MLPs that users
benchmark today (50 inputs, 3 outputs; medium 50-256-128-64-3 with dropout
0.2, large 50-1024-1024-512-512-256-3 with dropout 0.3), trained with Adam
on mean squared error over synthetic data, data-parallel with
DistributedDataParallel. Start it with torchrun, one process per GPU:

    gpuscale exec --counts 1,2,4 -- \
        torchrun --standalone --nproc_per_node={n} examples/ddp_mlp.py

Every rank prints gpuscale's protocol, one JSON object per line: per
timed step its step time ("step_time" in ms, with its "rank" and the
global batch as the step's "items" in "samples": the figure gpuscale
takes since it comes first, so the throughput is in samples/s), then its
own throughput ("samples_per_s" over its share of the batch, recorded
beside the figure); rank 0 then prints, once, the model's parameter count
and the final loss. gpuscale takes the slowest rank's time as the job's
step, and the report compares the ranks. A step is
timed from its start to the end of its optimizer update on the GPU (a
CUDA synchronize); DDP's gradient all-reduce makes every rank wait for
the slowest, so the ranks' steps differ by what each did apart from
waiting.

--scaling strong (default) splits --batch, the global batch, over the
processes; --scaling weak gives every process --batch samples, so the
global batch (the "items") grows with the processes (say the same to
gpuscale: `gpuscale exec --scaling weak ...`). Without CUDA the
script trains on the CPU with the gloo backend.

With GPUSCALE_TRACE_DIR set, every rank profiles its first
GPUSCALE_TRACE_STEPS timed steps (default 5; one more step before them
warms the profiler up) with torch.profiler and writes its PyTorch
profiler (Kineto) trace to DIR/ddp_mlp-w{world}-rank{rank}.json, which
`gpuscale report DIR/ddp_mlp-w2-rank*.json` analyses (docs/traces.md).
The profiled steps are timed and printed like the others, with the
profiler's overhead in them.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

SHAPES = {
    "medium": ([256, 128, 64], 0.2),
    "large": ([1024, 1024, 512, 512, 256], 0.3),
}
INPUTS, OUTPUTS = 50, 3


def build_model(preset):
    hidden, dropout = SHAPES[preset]
    layers, width = [], INPUTS
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU(), nn.Dropout(dropout)]
        width = h
    layers.append(nn.Linear(width, OUTPUTS))
    return nn.Sequential(*layers)


def emit(metric, value, unit, step=None, rank=None, items=None, item_unit=None):
    line = {"metric": metric, "value": value, "unit": unit}
    if step is not None:
        line["step"] = step
    if rank is not None:
        line["rank"] = rank
    if items is not None:
        line["items"] = items  # the work of one step of the whole job
        line["item_unit"] = item_unit
    # One write per line: the ranks share the output file, lines stay whole.
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def make_profiler(cuda):
    """The torch.profiler of GPUSCALE_TRACE_DIR (None when it is not set):
    one warmup step, then GPUSCALE_TRACE_STEPS recorded steps."""
    trace_dir = os.environ.get("GPUSCALE_TRACE_DIR")
    if not trace_dir:
        return None, 0
    text = os.environ.get("GPUSCALE_TRACE_STEPS", "5")
    if not text.isdigit() or int(text) < 1:
        sys.exit(f"GPUSCALE_TRACE_STEPS: a whole number of steps of at least 1, got '{text}'")
    steps = int(text)
    os.makedirs(trace_dir, exist_ok=True)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)

    def write(prof):
        path = os.path.join(trace_dir, f"ddp_mlp-w{dist.get_world_size()}-rank{dist.get_rank()}.json")
        prof.export_chrome_trace(path)

    prof = torch.profiler.profile(
        activities=activities,
        schedule=torch.profiler.schedule(wait=0, warmup=1, active=steps, repeat=1),
        on_trace_ready=write)
    return prof, steps + 1


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=sorted(SHAPES), default="large")
    p.add_argument("--batch", type=int, default=4096,
                   help="global batch (strong scaling) or batch per process (weak)")
    p.add_argument("--scaling", choices=["strong", "weak"], default="strong")
    p.add_argument("--steps", type=int, default=200, help="timed steps")
    p.add_argument("--warmup-steps", type=int, default=20, help="untimed steps first")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args()
    if args.steps < 1 or args.warmup_steps < 0 or args.batch < 1:
        p.error("--steps and --batch must be at least 1, --warmup-steps at least 0")

    cuda = torch.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")

    if args.scaling == "strong":
        if args.batch % world:
            sys.exit(f"--batch {args.batch} does not split evenly over {world} processes")
        local_batch = args.batch // world
    else:
        local_batch = args.batch
    global_batch = local_batch * world

    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = build_model(args.model).to(device)
    parameters = sum(t.numel() for t in model.parameters())
    ddp = DistributedDataParallel(model, device_ids=[local_rank] if cuda else None)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()

    # Synthetic data made on the device once, different on every rank, so
    # that the timed steps measure training, not input transfer.
    g = torch.Generator(device=device).manual_seed(args.seed + 1 + rank)
    pool = 8
    features = torch.randn(pool, local_batch, INPUTS, device=device, generator=g)
    targets = torch.randn(pool, local_batch, OUTPUTS, device=device, generator=g)

    def train_step(i):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(features[i % pool]), targets[i % pool])
        loss.backward()  # DDP all-reduces the gradients here
        optimizer.step()
        return loss

    sync = torch.cuda.synchronize if cuda else (lambda: None)
    ddp.train()
    for i in range(args.warmup_steps):
        train_step(i)
    sync()
    dist.barrier(device_ids=[local_rank]) if cuda else dist.barrier()
    loss = None
    prof, profiled = make_profiler(cuda)
    if prof is not None:
        prof.start()
    for step in range(args.steps):
        start = time.perf_counter()
        loss = train_step(step)
        sync()
        seconds = time.perf_counter() - start
        if prof is not None and step < profiled:
            prof.step()  # marks ProfilerStep#N; the trace is written after the last
            if step == profiled - 1:
                prof.stop()
                prof = None
        emit("step_time", seconds * 1e3, "ms", step, rank, global_batch, "samples")
        emit("samples_per_s", local_batch / seconds, "samples/s", step, rank)
    if prof is not None:  # fewer timed steps than profiled ones
        prof.stop()
    final = loss.detach().clone()
    dist.all_reduce(final)
    if rank == 0:
        emit("parameters", parameters, "parameters")
        emit("loss", final.item() / world, "mse")
        print(f"ddp_mlp: {args.model} ({parameters:,} parameters), {world} process(es), "
              f"global batch {global_batch}, {args.steps} timed steps on "
              f"{'cuda' if cuda else 'cpu'}", file=sys.stderr, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
