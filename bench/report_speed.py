#!/usr/bin/env python3
"""Writes the input of bench/report_speed.sh: N result documents (default
100), each with 10^5 timing samples, as a real `gpuscale scale` run on 2
ranks with the CUDA clock would hold them: per iteration one step time and,
per rank, a device time, a wall time and an exposed-communication time
(1 + 3 x 2 = 7 numbers), so 10^5 / 7 = 14286 iterations. Samples are
printed with 17 significant digits like gpuscale's own writer. Every
document differs (seeded noise; a quarter are 1-rank documents)."""
import json
import random
import sys

out_dir = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else 100
SAMPLES = 100_000


def num(x):
    return "%.17g" % x


def measurement(world, iters, rng):
    ranks = []
    steps = [0.0] * iters
    for r in range(world):
        dev = [0.010 * (1 + 0.05 * rng.random()) * (1 + 0.1 * r) for _ in range(iters)]
        wall = [d + 0.0002 * rng.random() for d in dev]
        comm = [0.001 * rng.random() for _ in range(iters)] if world > 1 else None
        steps = [max(s, d) for s, d in zip(steps, dev)]
        ranks.append(
            '{"rank":%d,"device":%d,"host":"node-%d","status":"ok","error":null,'
            '"items_per_step":%d,"first_iteration_seconds":0.03,"device_seconds":[%s],'
            '"wall_seconds":[%s],"comm_seconds":%s}'
            % (r, r, r, 1000000 // world, ",".join(map(num, dev)), ",".join(map(num, wall)),
               "[%s]" % ",".join(map(num, comm)) if comm else "null"))
    return ('{"workload":"voxelize","backend":"cuda","scaling":"strong","world_size":%d,'
            '"devices":[%s],"status":"ok","error":null,"cost":{"items_per_step":1000000,'
            '"item_unit":"points"},"verification":{"status":"passed"},'
            '"runs":[{"step_seconds":[%s],"ranks":[%s]}],"aggregate":null}'
            % (world, ",".join(str(r) for r in range(world)), ",".join(map(num, steps)),
               ",".join(ranks)))


for i in range(count):
    rng = random.Random(i)
    world = 1 if i % 4 == 0 else 2
    per_iter = 1 + (3 if world > 1 else 2) * world
    iters = SAMPLES // per_iter
    head = {
        "schema": "gpuscale/result/v1",
        "tool": {"name": "gpuscale", "version": "0.1.0", "git_revision": "bench"},
        "created": "2026-01-01T00:00:00Z", "command": "scale", "argv": ["gpuscale", "scale"],
        "status": "ok",
        "config": {"backend": "cuda", "scaling": "strong", "workload": "voxelize",
                   "workload_options": {"points": 1000000}},
        "environment": {"host": "node-0", "gpus": [
            {"index": g, "name": "NVIDIA H100 80GB HBM3", "memory_bytes": 85899345920}
            for g in range(2)]},
    }
    text = json.dumps(head)[:-1] + ',"measurements":[' + measurement(world, iters, rng) + "]}"
    with open("%s/doc%03d.json" % (out_dir, i), "w") as f:
        f.write(text)
