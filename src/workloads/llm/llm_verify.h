/* GPU against CPU reference for the llm model: the same weights on both,
 * two prompts prefilled, a few tokens decoded, logits and greedy tokens
 * compared (docs/workloads/llm.md, "Verification"). */
#ifndef GS_LLM_VERIFY_H
#define GS_LLM_VERIFY_H

#include "core/result.h"
#include "workloads/llm/model.h"

/* Relative logit tolerance: |gpu - cpu| <= GS_LLM_VERIFY_RTOL * max(1, max |cpu|). */
#define GS_LLM_VERIFY_RTOL 2e-2

/* Compares GPU `device` (made current here) with the CPU reference on
 * `shape`, with the GEMV kernel for decode and with cuBLAS only, both
 * through CUDA graphs. Fills *out (passed or failed with details); returns
 * an error status only when something could not run. */
gs_status gs_llm_verify_gpu(const gs_llm_shape *shape, uint64_t seed, int device,
                            gs_verification *out);

#endif
