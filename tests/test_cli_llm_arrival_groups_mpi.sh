#!/usr/bin/env bash
# Arrival skew per tensor-parallel group of llm under mpirun on the CPU
# backend, one process per shard (skipped without mpirun;
# docs/stragglers.md, "llm's tensor-parallel all-reduces"): with 2
# replicas of 2 shards, a shard whose process waits 100 ms before every
# prefill and decode (--inject late) is named in its own replica's
# summary and the other replica's names nobody (or a follower by under
# 2 ms: it starts a call when the first shard's message arrives); with
# --pp 2 each stage's shards are a group: a clean run names a follower
# at most, and a late shard of the second stage (rank 2, whose process
# follows the first stage's calls) is named in that stage's summary. $1
# is the gpuscale binary.
set -u
bin=$1
. "$(dirname "$0")/cli_lib.sh"
need_mpirun
. "$(dirname "$0")/llm_arrival_groups.sh"
launch=(timeout -s KILL 120 mpirun --oversubscribe -np 4)

arrival_case late3 0:0:follower 1:0:1 -- --inject late:rank=3,us=$late_us
arrival_case late2 0:0:follower 1:0:0 -- --inject late:rank=2,us=$late_us
arrival_case clean 0:0:follower 1:0:follower --
arrival_case pp_clean 0:0:follower 0:1:follower -- --pp 2 --kv-heads 4
arrival_case pp_late2 0:0:follower 0:1:0 -- --pp 2 --kv-heads 4 --inject late:rank=2,us=$late_us

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all llm arrival group checks under mpirun passed"
