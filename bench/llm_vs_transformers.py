#!/usr/bin/env python3
"""llm speed against Hugging Face transformers `generate`, side by side.

Same shapes on both sides: the llama-8b preset (or --model), random bf16
weights, prompts of --input tokens, exactly --output greedy tokens, batch 1
and batch 8. transformers runs in PyTorch eager mode (no torch.compile) with
its eager attention (--attn). gpuscale is measured by its own result
documents (offline scenario). Also runs the two-GPU offline data-parallel
scaling (gpuscale scale llm -g 2) when two GPUs are present.

usage: llm_vs_transformers.py GPUSCALE [--out DIR] [--json FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import time

PRESETS = {
    "llama-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                     num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                     rope_theta=500000.0),
    "tiny": dict(hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
                 rope_theta=10000.0),
    "llama-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                     num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                     rope_theta=500000.0),
}


def gpuscale(binary, out_dir, name, args):
    path = os.path.join(out_dir, name + ".json")
    cmd = [binary] + args + ["-o", path, "--no-progress"]
    print("$", " ".join(cmd), flush=True)
    rc = subprocess.run(cmd).returncode
    if rc != 0:
        print(f"gpuscale exited {rc}", file=sys.stderr)
    with open(path) as f:
        return json.load(f)


def llm_member(doc, world=1):
    for m in doc["measurements"]:
        if m["world_size"] == world:
            return m
    raise KeyError(f"no measurement at world size {world}")


def transformers_figures(model_name, batches, inp, out, attn, reps):
    """tokens/s of `generate` per batch size, one model for all of them."""
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(**PRESETS[model_name], max_position_embeddings=4096,
                      attn_implementation=attn)
    torch.manual_seed(0)
    t0 = time.time()
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg)
    model.eval()
    setup = time.time() - t0
    figures = {}
    for batch in batches:
        ids = torch.randint(0, cfg.vocab_size, (batch, inp), device="cuda")
        kw = dict(max_new_tokens=out, min_new_tokens=out, do_sample=False,
                  attention_mask=torch.ones_like(ids), pad_token_id=0)
        with torch.no_grad():
            model.generate(ids, **kw)  # warm-up
            torch.cuda.synchronize()
            times = []
            for _ in range(reps):
                t = time.time()
                res = model.generate(ids, **kw)
                torch.cuda.synchronize()
                times.append(time.time() - t)
        assert res.shape[1] == inp + out, res.shape
        times.sort()
        median = times[len(times) // 2]
        figures[batch] = dict(tokens_per_second=batch * out / median, median_seconds=median,
                              setup_seconds=setup, transformers=transformers.__version__,
                              torch=torch.__version__, attn=attn)
        print(f"transformers batch {batch}: {figures[batch]}", flush=True)
    del model
    torch.cuda.empty_cache()
    return figures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gpuscale")
    ap.add_argument("--out", default="llm-bench")
    ap.add_argument("--json", default=None)
    ap.add_argument("--model", default="llama-8b", choices=sorted(PRESETS))
    ap.add_argument("--input", type=int, default=65)
    ap.add_argument("--output", type=int, default=30)
    ap.add_argument("--attn", default="eager")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--skip-transformers", action="store_true",
                    help="gpuscale side only (e.g. to check the script without torch)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    shape = ["--model", a.model, "--input-min", str(a.input), "--input-max", str(a.input),
             "--output-min", str(a.output), "--output-max", str(a.output)]
    res = {"model": a.model, "input": a.input, "output": a.output}

    def measure(name, args):
        m = llm_member(gpuscale(a.gpuscale, a.out, name, ["run", "llm", *shape, *args]))
        l = m["llm"]
        r = dict(tokens_per_second=m["aggregate"]["throughput_items_per_second"],
                 tpot_median=(l["tpot_seconds"] or {}).get("median"),
                 roofline_fraction=l.get("roofline_fraction"),
                 weight_bytes_per_second=l.get("weight_bytes_per_second"),
                 verification=m["verification"]["status"], status=m["status"])
        res["gpuscale_" + name] = r
        print(name, r, flush=True)
        return r

    measure("b1", ["--batch", "1", "--samples", "8"])
    for kernel in ("simt", "mma", "cublas"):
        measure("b1-" + kernel, ["--batch", "1", "--samples", "4", "--decode-gemm", kernel])
    measure("b1-nographs", ["--batch", "1", "--samples", "4", "--no-graphs"])
    measure("b1-nooverlap", ["--batch", "1", "--samples", "8", "--no-overlap"])
    measure("b8", ["--batch", "8", "--samples", "32"])
    measure("b8-nooverlap", ["--batch", "8", "--samples", "32", "--no-overlap"])
    for kernel in ("simt", "mma", "cublas"):
        measure("b8-" + kernel, ["--batch", "8", "--samples", "16", "--decode-gemm", kernel])
    if a.gpus >= 2:
        for dispatch in ("static", "dynamic"):
            dp = gpuscale(a.gpuscale, a.out, "dp-" + dispatch,
                          ["scale", "llm", "--model", a.model, "--ngpus", str(a.gpus), "--batch",
                           "8", "--samples", "128", "--dispatch", dispatch])
            one, two = llm_member(dp, 1), llm_member(dp, a.gpus)
            res["gpuscale_dp_" + dispatch] = dict(
                one_gpu=one["aggregate"]["throughput_items_per_second"], gpus=a.gpus,
                all_gpus=two["aggregate"]["throughput_items_per_second"],
                speedup=two["aggregate"]["speedup"])
    print(json.dumps(res, indent=1), flush=True)

    if a.skip_transformers:
        return
    for batch, r in transformers_figures(a.model, (1, 8), a.input, a.output, a.attn,
                                         a.reps).items():
        res[f"transformers_b{batch}"] = r

    g1, g8 = res["gpuscale_b1"]["tokens_per_second"], res["gpuscale_b8"]["tokens_per_second"]
    t1 = res["transformers_b1"]["tokens_per_second"]
    t8 = res["transformers_b8"]["tokens_per_second"]
    res["ratio_b1"] = g1 / t1
    res["ratio_b8"] = g8 / t8
    print(f"\n{a.model}, input {a.input}, output {a.output} tokens, greedy, random bf16 weights")
    print(f"batch 1: gpuscale {g1:.1f} tokens/s, transformers ({a.attn}) {t1:.1f} tokens/s: "
          f"{g1 / t1:.2f}x; weight stream at median TPOT = "
          f"{100 * (res['gpuscale_b1']['roofline_fraction'] or 0):.1f}% of peak bandwidth")
    print(f"batch 8: gpuscale {g8:.1f} tokens/s, transformers {t8:.1f} tokens/s: {g8 / t8:.2f}x")
    for dispatch in ("static", "dynamic"):
        d = res.get("gpuscale_dp_" + dispatch)
        if d:
            print(f"offline data parallel ({dispatch}): 1 GPU {d['one_gpu']:.1f} tokens/s, "
                  f"{d['gpus']} GPUs {d['all_gpus']:.1f} tokens/s: {d['speedup']:.2f}x")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
