#!/usr/bin/env python3
"""llm decode against PyTorch's fastest plain path, side by side on one GPU.

The peer is built the way pytorch-labs/gpt-fast builds it: a plain PyTorch
Llama (fused QKV and gate/up weights), a static KV cache held as module
buffers and written at the step's positions, attention over the whole
static cache under a causal mask, and the one-token decode compiled with
torch.compile(mode="reduce-overhead", fullgraph=True) (CUDA graphs), with
gpt-fast's inductor settings. Hugging Face transformers `generate` (eager)
runs too (bench/llm_vs_transformers.py). Same shapes on every side: a preset
(llama-8b), random bf16 weights, prompts of --input tokens, exactly
--output greedy tokens per sequence.

Figures per batch size (1, 8, 32 by default): time per output token (decode
steps only; gpuscale: the median TPOT of its offline run), tokens/s of the
whole generation (prefill included; gpuscale: offline throughput), and the
fraction of the memory roofline (decode weight bytes / TPOT over the GPU's
peak bandwidth as gpuscale reports it). Prefill of one --input prompt:
gpuscale's single-stream TTFT median against the peer's prefill (eager and
compiled, the faster counts). Prints one table with the ratios
(ours / peer for speeds: above 1 means gpuscale is faster).

usage: llm_vs_pytorch.py GPUSCALE [--out DIR] [--json FILE] [--batches 1,8,32]
       [--peer-batches LIST] [--hf-batches LIST] [--peer-from JSON]
(torch.compile takes about 3 minutes per batch size: --peer-batches and
--peer-from split the peer over several calls of a time-limited machine)
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm_vs_transformers import PRESETS, gpuscale, llm_member, transformers_figures  # noqa: E402


def gpuscale_figures(binary, out_dir, model, inp, out, batches):
    shape = ["--model", model, "--input-min", str(inp), "--input-max", str(inp),
             "--output-min", str(out), "--output-max", str(out)]
    res = {}
    for b in batches:
        m = llm_member(gpuscale(binary, out_dir, f"offline-b{b}",
                                ["run", "llm", *shape, "--batch", str(b),
                                 "--samples", str(max(4 * b, 8) if b <= 8 else 2 * b)]))
        l = m["llm"]
        res[b] = dict(tpot=l["tpot_seconds"]["median"],
                      tokens_per_second=m["aggregate"]["throughput_items_per_second"],
                      roofline_fraction=l.get("roofline_fraction"),
                      peak_bandwidth=(l["weight_bytes_per_second"] / l["roofline_fraction"]
                                      if l.get("roofline_fraction") else None),
                      decode_weight_bytes=l["decode_weight_bytes"],
                      verification=m["verification"]["status"], status=m["status"])
        print(f"gpuscale batch {b}: {res[b]}", flush=True)
    m = llm_member(gpuscale(binary, out_dir, "single-stream",
                            ["run", "llm", *shape, "--scenario", "single-stream",
                             "--samples", "8"]))
    res["prefill"] = m["llm"]["ttft_seconds"]["median"]
    print(f"gpuscale prefill (single-stream TTFT median): {res['prefill']}", flush=True)
    return res


def peer_module(cfg, torch):
    """The gpt-fast-style model as classes made inside torch's import."""
    nn, F = torch.nn, torch.nn.functional
    dim, heads, kvh = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd, ffn = dim // heads, cfg["intermediate_size"]

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            xf = x.float()
            xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)
            return xf.type_as(x) * self.weight

    class KVCache(nn.Module):
        def __init__(self, batch, max_seq):
            super().__init__()
            shape = (batch, kvh, max_seq, hd)
            self.register_buffer("k", torch.zeros(shape, dtype=torch.bfloat16))
            self.register_buffer("v", torch.zeros(shape, dtype=torch.bfloat16))

        def update(self, pos, k, v):
            self.k[:, :, pos] = k
            self.v[:, :, pos] = v
            return self.k, self.v

    def rotate(x, cos, sin):  # x: [B, S, H, hd]; rotate-half pairing
        a, b = x[..., : hd // 2].float(), x[..., hd // 2:].float()
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        return torch.cat([a * c - b * s, b * c + a * s], -1).type_as(x)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention_norm, self.ffn_norm = RMSNorm(), RMSNorm()
            self.wqkv = nn.Linear(dim, (heads + 2 * kvh) * hd, bias=False)
            self.wo = nn.Linear(heads * hd, dim, bias=False)
            self.w13 = nn.Linear(dim, 2 * ffn, bias=False)
            self.w2 = nn.Linear(ffn, dim, bias=False)
            self.kv_cache = None

        def forward(self, x, cos, sin, mask, pos):
            B, S, _ = x.shape
            q, k, v = self.wqkv(self.attention_norm(x)).split(
                [heads * hd, kvh * hd, kvh * hd], dim=-1)
            q = rotate(q.view(B, S, heads, hd), cos, sin).transpose(1, 2)
            k = rotate(k.view(B, S, kvh, hd), cos, sin).transpose(1, 2)
            v = v.view(B, S, kvh, hd).transpose(1, 2)
            k, v = self.kv_cache.update(pos, k, v)
            k = k.repeat_interleave(heads // kvh, dim=1)
            v = v.repeat_interleave(heads // kvh, dim=1)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0)
            x = x + self.wo(y.transpose(1, 2).contiguous().view(B, S, heads * hd))
            g, u = self.w13(self.ffn_norm(x)).chunk(2, dim=-1)
            return x + self.w2(F.silu(g) * u)

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_embeddings = nn.Embedding(cfg["vocab_size"], dim)
            self.layers = nn.ModuleList(Block() for _ in range(cfg["num_hidden_layers"]))
            self.norm = RMSNorm()
            self.output = nn.Linear(dim, cfg["vocab_size"], bias=False)

        def setup_caches(self, batch, max_seq):
            max_seq = (max_seq + 7) // 8 * 8  # as gpt-fast rounds it
            for b in self.layers:
                b.kv_cache = KVCache(batch, max_seq).cuda()
            half = torch.arange(0, hd // 2, device="cuda", dtype=torch.float32)
            inv = cfg["rope_theta"] ** (-2.0 * half / hd)
            ang = torch.outer(torch.arange(max_seq, device="cuda", dtype=torch.float32), inv)
            self.register_buffer("cos", ang.cos(), persistent=False)
            self.register_buffer("sin", ang.sin(), persistent=False)
            self.register_buffer("causal", torch.tril(torch.ones(
                max_seq, max_seq, dtype=torch.bool, device="cuda")), persistent=False)

        def forward(self, idx, pos):
            mask = self.causal[None, None, pos]
            cos, sin = self.cos[pos], self.sin[pos]
            x = self.tok_embeddings(idx)
            for b in self.layers:
                x = b(x, cos, sin, mask, pos)
            return self.output(self.norm(x))

    return Llama


def peer_figures(model_name, batches, inp, out, reps):
    import torch
    import torch._inductor.config as inductor
    inductor.coordinate_descent_tuning = True
    inductor.triton.unique_kernel_names = True
    inductor.fx_graph_cache = True
    cfg = PRESETS[model_name]
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = peer_module(cfg, torch)()
        for p in model.parameters():  # random weights, variance 1/fan-in (norms 1 +- 0.1)
            if p.dim() == 1:
                p.data.uniform_(0.9, 1.1)
            else:
                p.data.uniform_(-math.sqrt(3.0 / p.shape[-1]), math.sqrt(3.0 / p.shape[-1]))
    model.eval()
    decode_bytes = 2 * sum(p.numel() for n, p in model.named_parameters()
                           if not n.startswith("tok_embeddings"))

    def decode_one_token(m, tok, pos):
        return torch.argmax(m(tok, pos)[:, -1], dim=-1, keepdim=True)

    def prefill(m, ids, pos):
        return torch.argmax(m(ids, pos)[:, -1], dim=-1, keepdim=True)

    res = {"decode_weight_bytes": decode_bytes, "torch": torch.__version__}
    for batch in batches:
        torch._dynamo.reset()
        decode = torch.compile(decode_one_token, mode="reduce-overhead", fullgraph=True)
        # gpt-fast compiles prefill only when asked (--compile_prefill): here
        # at batch 1, for the prefill comparison; eager elsewhere.
        prefill_c = torch.compile(prefill, fullgraph=True) if batch == 1 else prefill
        model.setup_caches(batch, inp + out)
        ids = torch.randint(0, cfg["vocab_size"], (batch, inp), device="cuda")
        t_compile = time.time()

        def generate(prefill_fn):
            """Seconds of the prefill, of the out - 1 decode steps, and the tokens."""
            start, mid, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
            pos = torch.arange(0, inp, device="cuda")
            start.record()
            with torch.no_grad():
                tok = prefill_fn(model, ids, pos)
                mid.record()
                p = torch.tensor([inp], device="cuda", dtype=torch.int64)
                toks = [tok]
                for _ in range(out - 1):
                    tok = decode(model, tok, p).clone()
                    p += 1
                    toks.append(tok)
            end.record()
            end.synchronize()
            return start.elapsed_time(mid) / 1e3, mid.elapsed_time(end) / 1e3, toks

        for _ in range(2):  # compiles and captures the graphs
            generate(prefill_c)
        compile_s = time.time() - t_compile
        runs = [generate(prefill_c) for _ in range(reps)]
        eager = [generate(prefill)[0] for _ in range(reps)] if prefill_c is not prefill else \
            [r[0] for r in runs]

        def median(xs):
            return sorted(xs)[len(xs) // 2]
        pre_c, dec = median([r[0] for r in runs]), median([r[1] for r in runs])
        pre_e = median(eager)
        tpot = dec / (out - 1)
        res[batch] = dict(tpot=tpot, prefill_compiled=pre_c if prefill_c is not prefill else None,
                          prefill_eager=pre_e,
                          tokens_per_second=batch * out / (min(pre_c, pre_e) + dec),
                          compile_seconds=compile_s)
        print(f"torch.compile peer batch {batch}: {res[batch]}", flush=True)
        for b in model.layers:
            b.kv_cache = None
        torch.cuda.empty_cache()
    del model
    torch.cuda.empty_cache()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gpuscale")
    ap.add_argument("--out", default="llm-vs-pytorch")
    ap.add_argument("--json", default=None)
    ap.add_argument("--model", default="llama-8b", choices=sorted(PRESETS))
    ap.add_argument("--input", type=int, default=67)
    ap.add_argument("--output", type=int, default=31)
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--peer-batches", default=None,
                    help="batches the torch.compile peer runs (default: --batches; '' none)")
    ap.add_argument("--hf-batches", default=None,
                    help="batches transformers runs (default: --batches; '' none)")
    ap.add_argument("--peer-from", default=None,
                    help="JSON of an earlier run (same GPU kind) for peer figures not run now")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()

    def batch_list(text):
        return [int(b) for b in text.split(",") if b.strip()]
    batches = batch_list(a.batches)
    peer_batches = batch_list(a.peer_batches if a.peer_batches is not None else a.batches)
    hf_batches = batch_list(a.hf_batches if a.hf_batches is not None else a.batches)
    os.makedirs(a.out, exist_ok=True)
    res = {"model": a.model, "input": a.input, "output": a.output}
    ours = gpuscale_figures(a.gpuscale, a.out, a.model, a.input, a.output, batches)
    res["gpuscale"] = ours
    peer, hf = {}, {}
    if a.peer_from:
        with open(a.peer_from) as f:
            earlier = json.load(f)
        for kind, into in (("torch_compile", peer), ("transformers", hf)):
            for b, fig in earlier.get(kind, {}).items():
                if b.isdigit():
                    into[int(b)] = dict(fig, earlier_run=a.peer_from)
    if peer_batches:
        peer.update(peer_figures(a.model, peer_batches, a.input, a.output, a.reps))
    if hf_batches:
        hf.update(transformers_figures(a.model, hf_batches, a.input, a.output, "sdpa", 3))
    res["torch_compile"], res["transformers"] = peer, hf
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1, default=str)

    peak = next((ours[b]["peak_bandwidth"] for b in batches if ours[b]["peak_bandwidth"]), None)
    print(f"\n{a.model}, prompt {a.input} tokens, {a.output} greedy tokens, random bf16 weights; "
          f"peak bandwidth {peak / 1e12 if peak else float('nan'):.2f} TB/s")
    print(f"{'batch':>5} | {'TPOT ms: ours':>13} {'compile':>8} {'ratio':>6} | "
          f"{'roofline: ours':>14} {'compile':>8} | {'tokens/s: ours':>14} {'compile':>8} "
          f"{'ratio':>6} {'HF':>8} {'ratio':>6}")
    for b in batches:
        o, p, h = ours[b], peer.get(b), hf.get(b)
        roof_o = o["decode_weight_bytes"] / o["tpot"] / peak if peak else float("nan")
        line = f"{b:>5} | {o['tpot'] * 1e3:>13.3f} "
        if p:
            roof_p = o["decode_weight_bytes"] / p["tpot"] / peak if peak else float("nan")
            line += f"{p['tpot'] * 1e3:>8.3f} {p['tpot'] / o['tpot']:>5.2f}x | "
            line += f"{100 * roof_o:>13.1f}% {100 * roof_p:>7.1f}% | "
            line += f"{o['tokens_per_second']:>14.1f} {p['tokens_per_second']:>8.1f} "
            line += f"{o['tokens_per_second'] / p['tokens_per_second']:>5.2f}x"
        else:
            line += f"{'':>8} {'':>6} | {100 * roof_o:>13.1f}% {'':>8} | "
            line += f"{o['tokens_per_second']:>14.1f}"
        if h:
            line += f" {h['tokens_per_second']:>8.1f} "
            line += f"{o['tokens_per_second'] / h['tokens_per_second']:>5.2f}x"
        print(line)
    if peer.get(1):
        p1 = peer[1]
        best = min(p1["prefill_compiled"], p1["prefill_eager"])
        print(f"prefill of one {a.input}-token prompt: ours {ours['prefill'] * 1e3:.2f} ms "
              f"(single-stream TTFT median), peer {best * 1e3:.2f} ms (compiled "
              f"{p1['prefill_compiled'] * 1e3:.2f}, eager {p1['prefill_eager'] * 1e3:.2f}): "
              f"{best / ours['prefill']:.2f}x")
    for b in batches:
        if peer.get(b, {}).get("earlier_run"):
            print(f"peer figures of batch {b}: from {peer[b]['earlier_run']}")
    print("ratio = peer time / our time (above 1: gpuscale faster); peer prefill compiled at "
          "batch 1, eager elsewhere (gpt-fast's default)")


if __name__ == "__main__":
    main()
