#!/usr/bin/env python3
"""A stand-in for a user's program, run by `gpuscale exec` in the CLI tests
(tests/test_cli_exec.sh). Its figures are computed from N (the {n}
placeholder) so that speedups are known exactly:

  exec_program.py MODE N [STEPS]

  rate        per step: samples_per_s = 1000 N samples/s (and a loss)
  weak-time   per step: step_time = 20 ms at every N (weak scaling: ideal)
  strong-time per step: step_time = 40 / N ms
  ranks       per step and rank k < N: samples_per_s = 1000 (rank N-1: 500
              when N > 1), each rank's own rate; "ranks-1" prints ranks 0
              and 1 only, "ranks+1" ranks 0 to N
  items       per step and rank k < N: step_time = 40 / N ms with "items"
              4096 "samples" (the global batch), then samples_per_s
  items-weak  per step: step_time = 20 ms with "items" 1024 N "samples"
  items-rank  like items, but rank N-1 says "items" 2048
  items-raw   one step_time line of 10 ms with the members of the JSON
              object STEPS names added (bad "items" for the tests)
  items-runs  a step_time of 10 ms with "items" 4096 in the first run (the
              file STEPS names counts the runs), then "items" 2048, or
              with a fourth argument "none" no "items"
  once        one value without a step: tput = 500 N img/s
  regex       free text: "iter K: 250 N img/s, loss 0.5"
  env         prints N, CUDA_VISIBLE_DEVICES and the rest of argv, then a rate
  fail        four lines on stderr, then exit 3
  signal      kills itself with SIGKILL
  hang        writes its pid to the file STEPS names, then sleeps
  hang-at-2   like hang at N = 2, else like rate
  silent      prints nothing
  bad         a protocol line whose value is not a number
"""
import json
import os
import signal
import sys
import time


def line(metric, value, unit=None, step=None, rank=None, **more):
    obj = {"metric": metric, "value": value, **more}
    if unit is not None:
        obj["unit"] = unit
    if step is not None:
        obj["step"] = step
    if rank is not None:
        obj["rank"] = rank
    print(json.dumps(obj), flush=True)


def main():
    mode, n = sys.argv[1], int(sys.argv[2])
    steps = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3].isdigit() else 5
    if mode == "hang-at-2":
        mode = "hang" if n == 2 else "rate"
    if mode == "rate":
        print("starting: not a protocol line", flush=True)
        print('{"other": "JSON that is not a metric"}', flush=True)
        for s in range(steps):
            line("samples_per_s", 1000.0 * n, "samples/s", s)
            line("loss", 1.0 / (s + 1), step=s)
    elif mode.startswith("ranks"):
        ranks = {"ranks": n, "ranks-1": 2, "ranks+1": n + 1}[mode]
        for s in range(steps):
            for k in range(ranks):
                line("samples_per_s", 500.0 if n > 1 and k == n - 1 else 1000.0, "samples/s", s, k)
    elif mode in ("items", "items-rank"):
        for s in range(steps):
            for k in range(n):
                batch = 2048 if mode == "items-rank" and k == n - 1 else 4096
                line("step_time", 40.0 / n, "ms", s, k, items=batch, item_unit="samples")
                line("samples_per_s", 4096 / n / (0.04 / n), "samples/s", s, k)
    elif mode == "items-weak":
        for s in range(steps):
            line("step_time", 20.0, "ms", s, items=1024 * n, item_unit="samples")
    elif mode == "items-raw":
        obj = {"metric": "step_time", "value": 10.0, "unit": "ms", "step": 0}
        obj.update(json.loads(sys.argv[3]))
        print(json.dumps(obj), flush=True)
    elif mode == "items-runs":
        with open(sys.argv[3], "a+") as f:
            f.write("run\n")
            f.seek(0)
            runs = len(f.readlines())
        if runs == 1:
            line("step_time", 10.0, "ms", 0, items=4096)
        elif sys.argv[4:] == ["none"]:
            line("step_time", 10.0, "ms", 0)
        else:
            line("step_time", 10.0, "ms", 0, items=2048)
    elif mode == "weak-time":
        for s in range(steps):
            line("step_time", 20.0, "ms", s)
    elif mode == "strong-time":
        for s in range(steps):
            line("step_time", 40.0 / n, "ms", s)
    elif mode == "once":
        line("tput", 500.0 * n, "img/s")
    elif mode == "regex":
        for s in range(steps):
            print(f"iter {s}: {250 * n} img/s, loss 0.5", flush=True)
    elif mode == "env":
        print(f"n={n} visible={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')} "
              f"args={' '.join(sys.argv[3:])}", flush=True)
        line("samples_per_s", 100.0 * n, "samples/s")
    elif mode == "fail":
        for k in range(4):
            print(f"error line {k}", file=sys.stderr, flush=True)
        sys.exit(3)
    elif mode == "signal":
        os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "hang":
        with open(sys.argv[3], "w") as f:
            f.write(str(os.getpid()))
        time.sleep(600)
    elif mode == "silent":
        pass
    elif mode == "bad":
        print('{"metric": "samples_per_s", "value": "fast", "unit": "samples/s"}', flush=True)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
