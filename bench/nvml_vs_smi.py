#!/usr/bin/env python3
"""Cross-checks what gpuscale reads through NVML (gpuscale info, and the
telemetry of a short run) against nvidia-smi on the same machine: power
limit, maximum SM and memory clocks, memory size, and during idle the
current power, temperature and memory used (within stated tolerances).

usage: bench/nvml_vs_smi.py GPUSCALE_BINARY [--json FILE]
Exit 0 when every static figure matches, 1 otherwise.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

QUERY = ["index", "pci.bus_id", "power.limit", "clocks.max.sm", "clocks.max.mem",
         "memory.total", "memory.used", "power.draw", "temperature.gpu", "clocks.sm",
         "clocks.mem"]


def smi():
    out = subprocess.run(["nvidia-smi", "--query-gpu=" + ",".join(QUERY),
                          "--format=csv,noheader,nounits"], check=True, capture_output=True,
                         text=True).stdout
    rows = []
    for line in out.strip().splitlines():
        vals = [v.strip() for v in line.split(",")]
        rows.append(dict(zip(QUERY, vals)))
    return rows


def num(text):
    try:
        return float(text)
    except ValueError:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        info_path = os.path.join(tmp, "info.json")
        subprocess.run([args.binary, "info", "--format", "json", "-o", info_path], check=True)
        with open(info_path) as f:
            info = json.load(f)
        run_path = os.path.join(tmp, "run.json")
        subprocess.run([args.binary, "run", "voxelize", "--gpus", "0", "--iters", "20", "--runs",
                        "1", "--telemetry-interval", "0.02", "-q", "--no-progress", "-o",
                        run_path], check=True, stdout=subprocess.DEVNULL)
        with open(run_path) as f:
            telemetry = json.load(f)["measurements"][0]["telemetry"]
    rows = smi()
    checks = []

    def check(gpu, what, ours, theirs, tolerance, static):
        ok = ours is not None and theirs is not None and abs(ours - theirs) <= tolerance
        checks.append({"gpu": gpu, "what": what, "gpuscale": ours, "nvidia_smi": theirs,
                       "tolerance": tolerance, "static": static, "match": ok})

    for gpu, row in zip(info["environment"]["gpus"], rows):
        i = gpu["index"]
        check(i, "power limit (W)", gpu.get("power_limit_watts"), num(row["power.limit"]), 0.5, True)
        check(i, "max SM clock (MHz)", gpu.get("max_sm_clock_mhz"), num(row["clocks.max.sm"]), 0, True)
        check(i, "max memory clock (MHz)", gpu.get("max_memory_clock_mhz"),
              num(row["clocks.max.mem"]), 0, True)
        # CUDA's total is what the runtime can allocate against; nvidia-smi
        # shows the whole framebuffer: equal within the driver's reserve.
        check(i, "memory total (MiB, CUDA vs NVML)", gpu["memory_bytes"] / 2**20,
              num(row["memory.total"]), 1024, False)
    for r in telemetry.get("ranks", []):
        row = rows[r["device"]]
        def mean(key):
            v = r.get(key)
            return v["mean"] if v else None
        check(r["device"], "temperature during run (C)", mean("temperature_c"),
              num(row["temperature.gpu"]), 10, False)
        check(r["device"], "memory clock during run (MHz)", mean("memory_clock_mhz"),
              num(row["clocks.mem"]), 1, False)
        peak = r.get("memory_used_bytes")
        check(r["device"], "memory used, idle after run vs run minimum (MiB)",
              peak["min"] / 2**20 if peak else None, num(row["memory.used"]), 2048, False)
    print(f"{'GPU':>3s}  {'figure':48s} {'gpuscale':>12s} {'nvidia-smi':>12s}  result")
    for c in checks:
        ours = "null" if c["gpuscale"] is None else f"{c['gpuscale']:.1f}"
        theirs = "null" if c["nvidia_smi"] is None else f"{c['nvidia_smi']:.1f}"
        print(f"{c['gpu']:3d}  {c['what']:48s} {ours:>12s} {theirs:>12s}  "
              f"{'match' if c['match'] else 'DIFFERS'} (tolerance {c['tolerance']})")
    print("telemetry of the run:", json.dumps(telemetry))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"checks": checks, "telemetry": telemetry, "nvidia_smi": rows}, f, indent=2)
    return 0 if all(c["match"] for c in checks if c["static"]) else 1


if __name__ == "__main__":
    sys.exit(main())
