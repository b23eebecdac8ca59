/* The GPU implementation of the llm model on one device: weights made on
 * the device by a kernel, KV cache, prefill as batched cuBLASLt GEMMs, decode
 * with the custom GEMV and per-row kernels, each decode batch size captured
 * once in a CUDA graph and replayed. Called from the thread that owns the
 * device (made current by the caller). */
#ifndef GS_LLM_GPU_H
#define GS_LLM_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "core/status.h"
#include "platform/comm.h"
#include "workloads/llm/engine.h"
#include "workloads/llm/llm_tp.h"

typedef struct gs_llm_gpu_model gs_llm_gpu_model;

/* Shard `shard` of a replica on `device` (model.h, gs_llm_shard; the whole
 * model is shard {0, 1} with no `comm`): the partial sums after attention
 * and MLP are all-reduced over `comm` (NCCL, on the model's stream, inside
 * the decode graphs), and the shards agree on each greedy token from their
 * vocabulary rows. */
gs_status gs_llm_gpu_create_shard(const gs_llm_engine_config *config, gs_llm_shard shard,
                                  const gs_llm_tp_comm *comm, int device,
                                  gs_llm_gpu_model **out);
void gs_llm_gpu_destroy(gs_llm_gpu_model *m);

/* As gs_llm_engine_prefill / gs_llm_engine_decode / gs_llm_engine_logits;
 * with shards every shard calls them together, and logits (whole rows) are
 * written only where `logits` is not NULL. */
gs_status gs_llm_gpu_prefill(gs_llm_gpu_model *m, size_t n, const int32_t *const *prompts,
                             const uint32_t *lengths, int32_t *first_tokens);
gs_status gs_llm_gpu_decode(gs_llm_gpu_model *m, size_t n, size_t next, int32_t *tokens);
gs_status gs_llm_gpu_logits(gs_llm_gpu_model *m, size_t n, float *logits);

/* Pipeline stages (llm_pp.c): a stage model (config.layer_begin ..
 * layer_end) runs a call as micro-batches. stage_begin lays out the call
 * (prefill: the rows of n prompts, micro-batch g starting at sequence
 * group_first[g] and row group_row0[g]; decode: the next positions) with
 * the stream idle; stage_group enqueues the stage's layers over sequences
 * [first, first + count), rows [row0, row0 + rows) on the model's stream,
 * from the stream at stage_hidden(row0) (a later stage's input, received
 * there; the first stage embeds) to the same place, or on the last stage
 * to logits and greedy tokens at stage_tokens(first); stage_end advances
 * decode's positions. stage_fetch copies tokens 0..n-1 to the host once
 * the streams are done. Logits (gs_llm_gpu_logits) are the last stage's. */
gs_status gs_llm_gpu_stage_begin(gs_llm_gpu_model *m, int prefill, size_t n,
                                 const uint32_t *lengths, const size_t *group_row0,
                                 const size_t *group_first, size_t groups,
                                 const int32_t *const *prompts);
gs_status gs_llm_gpu_stage_group(gs_llm_gpu_model *m, int prefill, size_t first, size_t count,
                                 size_t row0, size_t rows);
gs_status gs_llm_gpu_stage_end(gs_llm_gpu_model *m, int prefill, size_t n);
float *gs_llm_gpu_stage_hidden(gs_llm_gpu_model *m, size_t row0);
int32_t *gs_llm_gpu_stage_tokens(gs_llm_gpu_model *m, size_t first);
cudaStream_t gs_llm_gpu_stream(const gs_llm_gpu_model *m);
gs_status gs_llm_gpu_stage_fetch(gs_llm_gpu_model *m, size_t n, int32_t *tokens);

/* --inject late on CUDA: each prefill and decode step (a pipeline
 * stage's call) spins `seconds` on the stream before its forward pass
 * (captured into the decode graphs, which are dropped here to be captured
 * again). */
void gs_llm_gpu_set_late(gs_llm_gpu_model *m, double seconds);

/* Arrival skew on CUDA (llm_gpu_stamps.h; a shard of a stage that is the
 * whole model, with tp > 1): from now on every prefill and decode step
 * stamps its entry at its first collective and its exit after its last
 * on the GPU, decode graphs included (captured again). Waits for the
 * stream; *error is the clock anchor's error in seconds. */
gs_status gs_llm_gpu_record_arrivals(gs_llm_gpu_model *m, double *error);

/* Appends the steps finished since the last take (all but a decode step
 * launched ahead: the caller waited for its call) to `into`, on the host
 * clock plus `offset` seconds. */
gs_status gs_llm_gpu_take_arrivals(gs_llm_gpu_model *m, double offset, gs_arrival_rank *into);

#endif
