#!/usr/bin/env python3
"""llm speed against Hugging Face transformers `generate`, side by side.

Same shapes on both sides: the llama-8b preset (or --model), random bf16
weights, prompts of --input tokens, exactly --output greedy tokens, batch 1
and batch 8. transformers runs in PyTorch eager mode (no torch.compile) with
its eager attention (--attn). gpuscale is measured by its own result
documents (offline scenario). Also runs the two-GPU offline data-parallel
scaling (gpuscale scale llm --gpus 2) when two GPUs are present.

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


def transformers_tokens_per_second(model_name, batch, inp, out, attn, reps):
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
    ids = torch.randint(0, cfg.vocab_size, (batch, inp), device="cuda")
    mask = torch.ones_like(ids)
    kw = dict(max_new_tokens=out, min_new_tokens=out, do_sample=False, attention_mask=mask,
              pad_token_id=0)
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
    del model
    torch.cuda.empty_cache()
    return dict(tokens_per_second=batch * out / median, median_seconds=median,
                setup_seconds=setup, transformers=transformers.__version__,
                torch=torch.__version__, attn=attn)


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
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    shape = ["--model", a.model, "--input-min", str(a.input), "--input-max", str(a.input),
             "--output-min", str(a.output), "--output-max", str(a.output)]
    res = {"model": a.model, "input": a.input, "output": a.output}

    b1 = llm_member(gpuscale(a.gpuscale, a.out, "b1",
                             ["run", "llm", *shape, "--batch", "1", "--samples", "8"]))
    b1_cublas = llm_member(gpuscale(a.gpuscale, a.out, "b1-cublas",
                                    ["run", "llm", *shape, "--batch", "1", "--samples", "4",
                                     "--gemv-max-batch", "0"]))
    b8 = llm_member(gpuscale(a.gpuscale, a.out, "b8",
                             ["run", "llm", *shape, "--batch", "8", "--samples", "32"]))
    res["gpuscale_b1"] = dict(tokens_per_second=b1["aggregate"]["throughput"],
                              tpot_median=b1["llm"]["tpot_seconds"]["median"],
                              roofline_fraction=b1["llm"].get("roofline_fraction"),
                              weight_bytes_per_second=b1["llm"].get("weight_bytes_per_second"),
                              verification=b1["verification"]["status"])
    res["gpuscale_b1_cublas_decode"] = dict(tokens_per_second=b1_cublas["aggregate"]["throughput"],
                                            roofline_fraction=b1_cublas["llm"].get("roofline_fraction"))
    res["gpuscale_b8"] = dict(tokens_per_second=b8["aggregate"]["throughput"])
    if a.gpus >= 2:
        dp = gpuscale(a.gpuscale, a.out, "dp",
                      ["scale", "llm", "--model", a.model, "--gpus", str(a.gpus), "--batch", "8",
                       "--samples", "96"])
        one, two = llm_member(dp, 1), llm_member(dp, a.gpus)
        res["gpuscale_dp"] = dict(one_gpu=one["aggregate"]["throughput"],
                                  gpus=a.gpus, all_gpus=two["aggregate"]["throughput"],
                                  speedup=two["aggregate"]["speedup"])
    print(json.dumps(res, indent=1), flush=True)

    for batch in (1, 8):
        r = transformers_tokens_per_second(a.model, batch, a.input, a.output, a.attn, a.reps)
        res[f"transformers_b{batch}"] = r
        print(f"transformers batch {batch}: {r}", flush=True)

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
    if "gpuscale_dp" in res:
        d = res["gpuscale_dp"]
        print(f"offline data parallel: 1 GPU {d['one_gpu']:.1f} tokens/s, {d['gpus']} GPUs "
              f"{d['all_gpus']:.1f} tokens/s: {d['speedup']:.2f}x")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
