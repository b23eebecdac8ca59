/* The llm's linear layers of many rows (prefill, and decode with
 * --decode-gemm cublas) through cuBLASLt: y (rows x outs, float) (+)=
 * x (rows x ins, bf16) w^T, with w stored row-major as outs x ins, bf16
 * inputs and fp32 accumulation and output. The algorithm of each shape comes
 * from cuBLASLt's heuristic once and is kept: a prefill repeats the same few
 * shapes in every layer. */
#ifndef GS_LLM_GEMM_H
#define GS_LLM_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "core/status.h"

typedef struct gs_llm_gemm gs_llm_gemm;

/* A GEMM context on the current GPU; `workspace` (device memory of
 * workspace_bytes) stays the caller's and must outlive it. */
gs_status gs_llm_gemm_create(void *workspace, size_t workspace_bytes, gs_llm_gemm **out);

/* Enqueues y (+)= x w^T on `stream` (accumulate: y += ..., else y = ...). */
gs_status gs_llm_gemm_run(gs_llm_gemm *g, const uint16_t *w, const uint16_t *x, float *y,
                          uint64_t rows, uint64_t outs, uint64_t ins, int accumulate,
                          cudaStream_t stream);

/* Frees everything; accepts NULL. */
void gs_llm_gemm_destroy(gs_llm_gemm *g);

#endif
