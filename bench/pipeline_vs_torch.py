#!/usr/bin/env python3
"""Pipeline parallelism (mlp --pp): the peer of bench/pipeline.sh.

  summary FILE...   per gpuscale result document: stages, micro-batches,
                    schedule, samples/s, the measured bubble (mean stage idle
                    / mean stage busy, as docs/report.md "Pipeline" defines
                    it) beside (p-1)/m and its relative gap, the stage
                    imbalance; one line each, also as JSON with --json
  torch ...         (under torchrun, one process per GPU) the same MLP and
                    Adam/MSE step through torch.distributed.pipelining
                    (ScheduleGPipe or Schedule1F1B), stages split at the
                    same layers; prints one JSON line of samples/s

torch side: the Linear/ReLU/Dropout stack of --layers, stage k holding
layers [first[k], first[k+1]), one PipelineStage per rank, the schedule's
step over --micro-batches micro-batches of a --batch batch already on the
GPU, Adam (lr 1e-3) after each step; warmup steps, then steps for at least
--min-time seconds, synchronised every 10 steps: each window of 10 steps
is timed too ("window_seconds"), so that the ratio to gpuscale carries
the peer's spread as well (bench/step_ratio.py, ratio_to_windows).
"""
import argparse
import json
import os
import statistics
import sys
import time


def summary(files, as_json):
    rows = []
    for path in files:
        with open(path) as f:
            doc = json.load(f)
        for m in doc["measurements"]:
            opts = m.get("workload_options") or doc["config"]["workload_options"]
            pp = opts.get("pipeline")
            row = {"file": os.path.basename(path), "ranks": m["world_size"],
                   "samples_per_s": m["aggregate"]["throughput_items_per_second"],
                   "verification": m["verification"]["status"]}
            if pp:
                stages, micro = pp["stages"], pp["micro_batches"]
                busy = [[] for _ in range(stages)]
                idle = [[] for _ in range(stages)]
                for run in m["runs"]:
                    for k, r in enumerate(run["ranks"]):
                        dev = r.get("device_seconds") or r.get("wall_seconds") or []
                        for t, c in zip(dev, r.get("comm_seconds") or []):
                            if t is not None and c is not None:
                                busy[k % stages].append(t - c)
                                idle[k % stages].append(c)
                b = [statistics.fmean(x) for x in busy]
                i = [statistics.fmean(x) for x in idle]
                bubble = statistics.fmean(i) / statistics.fmean(b)
                formula = (stages - 1) / micro
                row.update(stages=stages, micro=micro, schedule=pp["schedule"], bubble=bubble,
                           formula=formula, gap=(bubble - formula) / formula,
                           imbalance=max(b) / statistics.fmean(b))
            rows.append(row)
    for r in rows:
        if "stages" in r:
            print(f"{r['file']:<28} ranks {r['ranks']}  pp {r['stages']} m {r['micro']:>2} "
                  f"{r['schedule']:<5}  {r['samples_per_s'] / 1e3:9.1f} Ksamples/s  bubble "
                  f"{100 * r['bubble']:6.1f}% vs (p-1)/m {100 * r['formula']:6.1f}% "
                  f"({100 * r['gap']:+.0f}%)  imbalance {r['imbalance']:.2f}x  "
                  f"{r['verification']}")
        else:
            print(f"{r['file']:<28} ranks {r['ranks']}  data parallel  "
                  f"{r['samples_per_s'] / 1e3:9.1f} Ksamples/s  {r['verification']}")
    if as_json:
        with open(as_json, "w") as f:
            json.dump(rows, f, indent=1)


def balanced_split(widths, stages):
    """The first layer of each stage, minimising the most expensive stage
    (cost = 3 x in x out per layer, 2 x for layer 0, whose input gradient
    neither side computes), as gpuscale's split."""
    cost = [(2 if i == 0 else 3) * widths[i] * widths[i + 1] for i in range(len(widths) - 1)]
    L = len(cost)
    prefix = [0]
    for c in cost:
        prefix.append(prefix[-1] + c)
    best = {(1, l): (prefix[l], 0) for l in range(1, L + 1)}
    for k in range(2, stages + 1):
        for l in range(k, L + 1):
            best[(k, l)] = min((max(best[(k - 1, c)][0], prefix[l] - prefix[c]), c)
                               for c in range(k - 1, l))
    first, l = [L], L
    for k in range(stages, 1, -1):
        l = best[(k, l)][1]
        first.insert(0, l)
    return [0] + first


def torch_side(args):
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    widths = [int(w) for w in args.layers.split(",")]
    first = balanced_split(widths, world)
    layers = []
    for i in range(first[rank], first[rank + 1]):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers += [torch.nn.ReLU(), torch.nn.Dropout(args.dropout)]
    module = torch.nn.Sequential(*layers).to(device)
    micro_rows = args.batch // args.micro_batches
    example = torch.randn(micro_rows, widths[first[rank]], device=device)
    stage = PipelineStage(module, rank, world, device, input_args=(example,))
    loss_fn = torch.nn.MSELoss()
    kind = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}[args.schedule]
    schedule = kind(stage, n_microbatches=args.micro_batches, loss_fn=loss_fn)
    opt = torch.optim.Adam(module.parameters(), lr=1e-3)
    x = torch.randn(args.batch, widths[0], device=device)
    y = torch.randn(args.batch, widths[-1], device=device)

    def step():
        opt.zero_grad(set_to_none=True)
        if rank == 0:
            schedule.step(x)
        elif rank == world - 1:
            schedule.step(target=y)
        else:
            schedule.step()
        opt.step()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    steps, start = 0, time.perf_counter()
    windows, mark = [], start
    while True:
        for _ in range(10):
            step()
        steps += 10
        torch.cuda.synchronize()
        now = time.perf_counter()
        windows.append(now - mark)
        mark = now
        flag = torch.tensor([time.perf_counter() - start >= args.min_time], device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        if flag.item():
            break
    elapsed = time.perf_counter() - start
    if rank == 0:
        print(json.dumps({"peer": "torch.distributed.pipelining", "schedule": args.schedule,
                          "stages": world, "micro_batches": args.micro_batches,
                          "batch": args.batch, "layers": widths, "stage_first_layers": first,
                          "samples_per_s": args.batch * steps / elapsed, "steps": steps,
                          "window_steps": 10, "window_seconds": windows,
                          "torch": torch.__version__}))
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summary")
    s.add_argument("files", nargs="+")
    s.add_argument("--json")
    t = sub.add_parser("torch")
    t.add_argument("--layers", required=True)
    t.add_argument("--batch", type=int, required=True)
    t.add_argument("--micro-batches", type=int, required=True)
    t.add_argument("--schedule", choices=["gpipe", "1f1b"], required=True)
    t.add_argument("--dropout", type=float, default=0.2)
    t.add_argument("--warmup", type=int, default=5)
    t.add_argument("--min-time", type=float, default=2.0)
    args = ap.parse_args()
    if args.cmd == "summary":
        summary(args.files, args.json)
    else:
        torch_side(args)


if __name__ == "__main__":
    sys.exit(main())
