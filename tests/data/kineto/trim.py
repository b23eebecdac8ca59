#!/usr/bin/env python3
"""Trims a PyTorch profiler (Kineto) trace for the tests: keeps the first
STEPS profiler steps (ProfilerStep#N marks) and, of their events, the ones
the trace analysis reads (kernels, memcpy, memset, CUDA runtime and driver
calls, the step marks, metadata), written one event per line as Kineto
writes them. The other events (CPU ops, Python functions, flows, GPU
annotations) are dropped: neither gpuscale nor HTA's overlap, idle,
temporal and kernel figures use them.

Usage: trim.py IN.json OUT.json [STEPS]   (default 4)
"""
import json
import sys

KEEP = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "Trace"}


def main():
    src, dst = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    doc = json.load(open(src))
    events = doc["traceEvents"]
    marks = sorted((e for e in events if "ProfilerStep" in str(e.get("name"))
                    and e.get("ph") == "X" and e.get("cat") == "user_annotation"),
                   key=lambda e: e["ts"])
    end = marks[steps]["ts"] if len(marks) > steps else float("inf")
    host = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
            and e["ts"] < end]
    launched = {e["args"].get("correlation") for e in host}
    kept = []
    for e in events:
        cat = e.get("cat")
        if e.get("ph") == "M":
            kept.append(e)
        elif e.get("ph") != "X":
            continue
        elif cat == "user_annotation" and e in marks[:steps]:
            kept.append(e)
        elif cat in ("cuda_runtime", "cuda_driver", "Trace"):
            if e["ts"] < end:
                kept.append(e)
        elif cat in KEEP and e.get("args", {}).get("correlation") in launched:
            kept.append(e)
    with open(dst, "w") as f:
        f.write("{\n")
        for k, v in doc.items():
            if k != "traceEvents":
                f.write(f"  {json.dumps(k)}: {json.dumps(v)},\n")
        f.write('  "traceEvents": [\n')
        f.write(",\n".join("  " + json.dumps(e, separators=(",", ":")) for e in kept))
        f.write("\n  ]\n}\n")


if __name__ == "__main__":
    main()
