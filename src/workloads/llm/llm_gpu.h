/* The GPU implementation of the llm model on one device: weights made on
 * the device by a kernel, KV cache, prefill as batched cuBLAS GEMMs, decode
 * with the custom GEMV and per-row kernels, each decode batch size captured
 * once in a CUDA graph and replayed. Called from the thread that owns the
 * device (made current by the caller). */
#ifndef GS_LLM_GPU_H
#define GS_LLM_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "workloads/llm/engine.h"

typedef struct llm_gpu_model llm_gpu_model;

gs_status llm_gpu_create(const llm_engine_config *config, int device, llm_gpu_model **out);
void llm_gpu_destroy(llm_gpu_model *m);

/* As llm_engine_prefill / llm_engine_decode / llm_engine_logits. */
gs_status llm_gpu_prefill(llm_gpu_model *m, size_t n, const int32_t *const *prompts,
                          const uint32_t *lengths, int32_t *first_tokens);
gs_status llm_gpu_decode(llm_gpu_model *m, size_t n, int32_t *tokens);
gs_status llm_gpu_logits(llm_gpu_model *m, size_t n, float *logits);

#endif
