#!/usr/bin/env bash
# llm's three layouts of 2 GPUs (issue 34: PP 2 against TP 2 and 2
# replicas), over NVLink and over NCCL's socket transport standing in for a
# slow link between nodes: `run llm -g 2 --layouts` (tp 1 x 2 replicas,
# tp 2, pp 2), offline, MODEL (default llama-8b) at batch 8, SAMPLES (32)
# requests of 128 input and 128 output tokens, RUNS (5) runs of each,
# first with NCCL's defaults, then with NCCL_P2P_DISABLE=1
# NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 (every transfer through a TCP socket
# on the host; the NCCL_DEBUG=INFO lines that say which transport each
# channel took are kept in $OUT/transports-*.txt).
# Prints per layout and link: tokens/s (the runs' generated tokens over
# their seconds, the interval the lowest and highest run), TPOT p50, and
# the ratio of each layout's tokens/s to tp 2's with its 95% interval (a
# bootstrap over the runs of both), then each layout's change from NVLink
# to the socket.
# usage: bench/llm-layouts-link.sh [GPUSCALE]; documents in $OUT (default
# ./llm-layouts-link). Measured: 147 s on 2 of 4 H200s (2026-11-28).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/gpuscale}
out=${OUT:-llm-layouts-link}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
# BACKEND=cpu rehearses the script on 2 CPU ranks (MODEL=tiny).
where=(--backend cuda -g 2)
[ "${BACKEND:-cuda}" = cpu ] && where=(--backend cpu --ranks 2)
l=(run llm "${where[@]}" --layouts --model "${MODEL:-llama-8b}" --scenario offline --batch 8
   --samples "${SAMPLES:-32}" --input-min 128 --input-max 128 --output-min 128 --output-max 128
   --runs "${RUNS:-5}" --no-progress -q)
"$bin" "${l[@]}" -o "$out/nvlink.json" >/dev/null
NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_DEBUG=INFO \
  "$bin" "${l[@]}" -o "$out/socket.json" >"$out/nccl-socket.log" 2>&1
grep -E "via (NET|P2P|SHM)" "$out/nccl-socket.log" | sed 's/^.*\] //' | sort | uniq -c >"$out/transports-socket.txt" || :
python3 - "$out" <<'PY' | tee "$out/summary.txt"
import json, random, sys
out = sys.argv[1]

def layouts(link):
    got = {}
    for m in json.load(open(f"{out}/{link}.json"))["measurements"]:
        if m["status"] != "ok":
            continue
        p, l = m["parallelism"], m["llm"]
        tp = p["gpus_per_rank"] if p["option"] == "tp" else 1
        pp = p["gpus_per_rank"] if p["option"] == "pp" else 1
        per_run = l["generated_tokens"] / len(l["run_seconds"])
        rates = [per_run / s for s in l["run_seconds"]]
        got[(tp, pp, 2 // (tp * pp))] = (rates, l["tpot_seconds"]["median"], m["verification"]["status"])
    return got

def ratio(a, b, draws=4000):
    rng = random.Random(7)
    mean = lambda xs: sum(xs) / len(xs)
    pick = lambda xs: [rng.choice(xs) for _ in xs]
    got = sorted(mean(pick(a)) / mean(pick(b)) for _ in range(draws))
    return mean(a) / mean(b), got[int(0.025 * draws)], got[int(0.975 * draws) - 1]

res = {link: layouts(link) for link in ("nvlink", "socket")}
for link, got in res.items():
    print(f"== {link}")
    base = got.get((2, 1, 1))
    for key in sorted(got):
        rates, tpot, ver = got[key]
        line = (f"  tp {key[0]} pp {key[1]} x {key[2]}: {sum(rates) / len(rates):8.1f} tokens/s "
                f"[{min(rates):.1f}, {max(rates):.1f}], TPOT p50 {tpot * 1e3:.2f} ms, {ver}")
        if base and key != (2, 1, 1):
            r, lo, hi = ratio(rates, base[0])
            line += f"; against tp 2: {r:.3f}x [{lo:.3f}, {hi:.3f}]"
        print(line)
print("== socket against nvlink, per layout (tokens/s)")
for key in sorted(res["nvlink"]):
    if key in res["socket"]:
        r, lo, hi = ratio(res["socket"][key][0], res["nvlink"][key][0])
        print(f"  tp {key[0]} pp {key[1]} x {key[2]}: {r:.3f}x [{lo:.3f}, {hi:.3f}], TPOT "
              f"{res['nvlink'][key][1] * 1e3:.2f} -> {res['socket'][key][1] * 1e3:.2f} ms")
PY
