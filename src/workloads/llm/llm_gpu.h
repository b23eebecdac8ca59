/* The GPU implementation of the llm model on one device: weights made on
 * the device by a kernel, KV cache, prefill as batched cuBLASLt GEMMs, decode
 * with the custom GEMV and per-row kernels, each decode batch size captured
 * once in a CUDA graph and replayed. Called from the thread that owns the
 * device (made current by the caller). */
#ifndef GS_LLM_GPU_H
#define GS_LLM_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "platform/comm.h"
#include "workloads/llm/engine.h"

typedef struct gs_llm_gpu_model gs_llm_gpu_model;

/* Shard `shard` of a replica on `device` (model.h, gs_llm_shard; the whole
 * model is shard {0, 1} with no `comm`): the partial sums after attention
 * and MLP are all-reduced over `comm` (NCCL, on the model's stream, inside
 * the decode graphs), and the shards agree on each greedy token from their
 * vocabulary rows. */
gs_status gs_llm_gpu_create_shard(const gs_llm_engine_config *config, gs_llm_shard shard,
                                  gs_comm *comm, int device, gs_llm_gpu_model **out);
void gs_llm_gpu_destroy(gs_llm_gpu_model *m);

/* As gs_llm_engine_prefill / gs_llm_engine_decode / gs_llm_engine_logits;
 * with shards every shard calls them together, and logits (whole rows) are
 * written only where `logits` is not NULL. */
gs_status gs_llm_gpu_prefill(gs_llm_gpu_model *m, size_t n, const int32_t *const *prompts,
                             const uint32_t *lengths, int32_t *first_tokens);
gs_status gs_llm_gpu_decode(gs_llm_gpu_model *m, size_t n, size_t next, int32_t *tokens);
gs_status gs_llm_gpu_logits(gs_llm_gpu_model *m, size_t n, float *logits);

#endif
