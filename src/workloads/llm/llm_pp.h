/* Pipeline parallelism of the llm replica (--pp): the decoder layers cut
 * into stages of tp shards each, a call's sequences cut into micro-batches
 * that move through the stages one after another, so that stage s works
 * on micro-batch j while stage s + 1 works on j - 1. The residual stream
 * of a micro-batch goes from each shard to the same shard of the next
 * stage (gs_comm_p2p), the last stage's greedy tokens back to the first
 * stage. Rules: docs/workloads/llm.md, "Pipeline parallelism". */
#ifndef GS_LLM_PP_H
#define GS_LLM_PP_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "core/status.h"
#include "workloads/llm/engine_internal.h"

/* First layer of each of `stages` stages into first[0 .. stages]
 * (first[stages] = layers): `bounds` (n = stages - 1 first layers of
 * stages 1..) when given, else equal stages. GS_ERR_USAGE naming --pp or
 * --stages when the layers are fewer than the stages, do not divide by
 * them (without bounds) or the bounds do not increase strictly inside
 * 1 .. layers - 1. */
gs_status gs_llm_pp_split(uint64_t layers, uint32_t stages, const uint64_t *bounds, size_t n,
                          uint32_t *first);

/* Micro-batch j of `groups` over n sequences: its first sequence and count
 * (the first n % groups take one more). */
void gs_llm_pp_micro(size_t n, size_t groups, size_t j, size_t *first, size_t *count);

/* Micro-batches of a call over n sequences: config.micro_batches (0: one
 * per stage), at most n. */
size_t gs_llm_pp_groups(const gs_llm_engine_config *c, size_t n);

/* Runs this shard's part of the posted prefill or decode (e->op) on a
 * replica with stages: for each micro-batch, receive its stream from the
 * stage before (or embed it on the first stage), run the stage's layers,
 * pass it on (or pick its tokens on the last stage and send them to the
 * first); the first stage then receives every micro-batch's tokens into
 * sh->tokens. Adds the seconds spent computing to sh->busy. A failed
 * transfer names the stage and its peer. */
gs_status gs_llm_pp_call(engine_shard *sh);

/* A replica over processes: each shard of stage 0 sends `op` (and for a
 * prefill or decode its n, the rows of the next decode and the prompt
 * lengths) to the same shard of the next stage before the call;
 * gs_llm_pp_header_next receives it on a later stage and passes it on. */
gs_status gs_llm_pp_header_send(engine_shard *sh, engine_op op);
gs_status gs_llm_pp_header_next(engine_shard *sh, engine_op *op, size_t *n, size_t *next,
                                uint32_t *lengths);

/* A replica over processes whose stages have tp > 1 shards: the first
 * shard of the first stage sends call `op` (as the header above, and a
 * prefill's prompt tokens one after another) to the other shards of the
 * first stage before it runs it; gs_llm_pp_call_receive receives it there
 * (`prompts`: room for max_batch x max_input tokens). Bounded by the
 * world's timeout, as every receive is. */
gs_status gs_llm_pp_call_announce(engine_shard *sh, engine_op op);
gs_status gs_llm_pp_call_receive(engine_shard *sh, engine_op *op, size_t *n, size_t *next,
                                 uint32_t *lengths, int32_t *prompts);

/* A replica over processes with stages (CPU or CUDA): the logits of the
 * last call. Each shard of the first stage passes the call down its
 * column; the last stage gathers them over its shards and its first
 * shard sends them (host memory, over the job's world) to the first
 * shard of the first stage, which writes them to e->logits_out. */
gs_status gs_llm_pp_logits(engine_shard *sh);

/* Frees a shard's CUDA pipeline streams and events (its GPU current);
 * accepts a shard without them. */
void gs_llm_pp_release(engine_shard *sh);

#endif
