#!/usr/bin/env bash
# Ingested rows are checked against themselves: real nccl-tests outputs and
# LoadGen logs of tests/data/ingest, doctored to contradict themselves (a
# count that does not make the size, an algbw that is not size / time, a
# busbw off the op's factor; LoadGen's min above max, percentiles out of
# order, a summary that disagrees with its detail log), each an error
# (exit 1) naming the file, the line or row, the field and both values, with
# nothing written. $1 is the gpuscale binary.
set -u
bin=$(readlink -f "$1")
data=$(cd "$(dirname "$0")/data/ingest" && pwd)
. "$(dirname "$0")/cli_lib.sh"
cd "$data" || exit 1

out="$work/never.json"
contradicts() {  # PATTERN ARGS...
  local pattern=$1
  shift
  expect 1 "$pattern" -- ingest "$@" -o "$out"
  [ ! -e "$out" ] || fail "ingest $* wrote $out despite the contradiction"
  rm -f "$out"
}

# The real outputs as they are pass every check.
for f in nccl-tests/*.txt nccl-tests/*.json; do
  case $f in *alltoall_2node*) op=(--op alltoall) ;; *) op=() ;; esac
  "$bin" ingest nccl-tests "${op[@]}" -q -o "$work/ok.json" "$f" >"$work/log" 2>&1 ||
    fail "ingest $f: $(cat "$work/log")"
done

# nccl-tests, text: all_reduce on 2 GPUs (line 13: 16384 bytes, 4096 floats,
# 12.87 us, 1.27 GB/s; line 15 in-place 110.32 GB/s).
text=nccl-tests/all_reduce_2gpu.txt
sed '13s/ 4096     float/ 4097     float/' "$text" >"$work/count.txt"
contradicts "count.txt:13: size 16384 bytes, but count 4097 x float \(4 bytes\) = 16388 bytes: the row contradicts itself" \
  nccl-tests "$work/count.txt"
sed '14s/   14.60   14.60       0    17.61/   17.60   17.60       0    17.61/' "$text" >"$work/algbw.txt"
contradicts "algbw.txt:14: out-of-place: algbw 17.6 GB/s, but size 262144 bytes / time 17.95 us = 14.6041 GB/s: the row contradicts itself" \
  nccl-tests "$work/algbw.txt"
sed '15s/  110.32  110.32       0/  110.32   55.16       0/' "$text" >"$work/busbw.txt"
contradicts "busbw.txt:15: in-place: busbw 55.16 GB/s, but algbw 110.32 GB/s x allreduce's factor 1 at 2 ranks = 110.32 GB/s" \
  nccl-tests "$work/busbw.txt"
# all_gather on 2 GPUs: size = count x 4 x 2 ranks (64 = 8 x 4 x 2).
sed '13s/  64             8     float/  64             9     float/' nccl-tests/all_gather_float_2gpu.txt >"$work/gather.txt"
contradicts "gather.txt:13: size 64 bytes, but count 9 x float \(4 bytes\) = 36 bytes \(nor that times the ranks\)" \
  nccl-tests "$work/gather.txt"
# nccl-tests, JSON: results[3] of all_gather int8 on 2 GPUs (4096 bytes in
# 14.7091 us: 0.278467 GB/s), its algbw doubled.
python3 - nccl-tests/all_gather_int8_2gpu.json "$work/json.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["results"][3]["out_of_place"]["alg_bw"] *= 2
json.dump(d, open(sys.argv[2], "w"))
PY
contradicts "json.json: results\[3\].out_of_place: algbw 0.556934 GB/s, but size 4096 bytes / time 14.7091 us = 0.278467 GB/s" \
  nccl-tests "$work/json.json"

# LoadGen: the Offline run of node01 (summary lines 16-24: min 9051203,
# max 599876234110, p90 540112877100, p95 570050322010).
mk() { mkdir -p "$work/$1"; }
summary=mlperf/offline/node01/mlperf_log_summary.txt
detail=mlperf/offline/node01/mlperf_log_detail.txt
mk minmax && sed 's/^Min latency (ns)                : 9051203/Min latency (ns)                : 699876234110/' \
  "$summary" >"$work/minmax/mlperf_log_summary.txt"
contradicts "minmax/mlperf_log_summary.txt:16: min latency 699876234110 ns is above max latency 599876234110 ns \(line 17\)" \
  mlperf "$work/minmax"
mk order && sed 's/^95.00 percentile latency (ns)   : 570050322010/95.00 percentile latency (ns)   : 530050322010/' \
  "$summary" >"$work/order/mlperf_log_summary.txt"
contradicts "order/mlperf_log_summary.txt:21: p95 latency 530050322010 ns is below p90 540112877100 ns \(line 20\): a higher percentile cannot be lower" \
  mlperf "$work/order"
mk outside && sed 's/^Mean latency (ns)               : .*/Mean latency (ns)               : 5/' \
  "$summary" >"$work/outside/mlperf_log_summary.txt"
contradicts "outside/mlperf_log_summary.txt:18: mean latency 5 ns is outside \[min 9051203, max 599876234110\] ns" \
  mlperf "$work/outside"
# The detail log contradicts itself the same way (record on line 16).
mk dmax && cp "$summary" "$work/dmax/" &&
  sed 's/"result_max_latency_ns", "value": 599876234110/"result_max_latency_ns", "value": 9000000/' \
    "$detail" >"$work/dmax/mlperf_log_detail.txt"
contradicts "dmax/mlperf_log_detail.txt:15: min latency 9051203 ns is above max latency 9000000 ns \(line 16\)" \
  mlperf "$work/dmax"
# Summary against detail: the summary rounds (40.96 against 40.96124855 is
# one number), but 41.5 samples/s or another min latency is not.
mk rate && cp "$detail" "$work/rate/" &&
  sed 's/^Samples per second: 40.96/Samples per second: 41.5/' "$summary" >"$work/rate/mlperf_log_summary.txt"
contradicts "rate/mlperf_log_summary.txt: samples per second is 41.5 here but 40.96124855 in .*rate/mlperf_log_detail.txt \(its own line\): the summary and the detail log contradict each other" \
  mlperf "$work/rate"
mk dmin && cp "$summary" "$work/dmin/" &&
  sed 's/"result_min_latency_ns", "value": 9051203/"result_min_latency_ns", "value": 9051303/' \
    "$detail" >"$work/dmin/mlperf_log_detail.txt"
contradicts "dmin/mlperf_log_summary.txt:16: min latency \(ns\) is 9051203 here but 9051303 in .*dmin/mlperf_log_detail.txt \(line 15\)" \
  mlperf "$work/dmin"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all ingest consistency checks passed"
