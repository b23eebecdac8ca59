/* GPU against CPU reference for the llm model: the same weights on both,
 * two prompts prefilled, a few tokens decoded, logits and greedy tokens
 * compared (docs/workloads/llm.md, "Verification"). */
#ifndef GS_LLM_VERIFY_H
#define GS_LLM_VERIFY_H

#include "core/result.h"
#include "core/types.h"
#include "workloads/llm/engine.h"
#include "workloads/llm/model.h"

/* Relative logit tolerance: |gpu - cpu| <= GS_LLM_VERIFY_RTOL * max(1, max |cpu|). */
#define GS_LLM_VERIFY_RTOL 2e-2

/* Compares a replica on GPUs devices[0..tp) (tp > 1: tensor-parallel
 * shards, engine.h) with the CPU reference of the whole model on `shape`,
 * through every way of running decode's small linear layers (auto, SIMT,
 * tensor cores, cuBLAS) and CUDA graphs. The first GPU is made current
 * here. Fills *out (passed or failed with details); returns an error
 * status only when something could not run. */
gs_status gs_llm_verify_gpu(const gs_llm_shape *shape, uint64_t seed, const int *devices,
                            uint32_t tp, gs_verification *out);

/* Compares a replica of `layout` (its shape, tp, pp, micro-batches and
 * stage split; seed) on `backend` (devices[0 .. tp x pp) on CUDA) with the
 * CPU reference of the whole model, as gs_llm_verify_gpu does; on the CPU
 * backend every logit must be equal bit for bit (a split replica computes
 * the same sums in the same order, tensor parallelism aside: its partial
 * sums are held to the GPU's tolerance) and every token the same. */
gs_status gs_llm_verify_replica(const gs_llm_engine_config *layout, gs_backend backend,
                                const int *devices, gs_verification *out);

/* Under a launcher: the same check of a replica whose tp x pp shards are
 * processes (engine.h, gs_llm_engine_create_stage, at `place`; CPU
 * backend with stages). Its first shard's process compares and fills *out; the
 * others follow its calls (*out stays empty). Every shard of the replica
 * calls it together. */
gs_status gs_llm_verify_processes(const gs_llm_engine_config *layout, gs_backend backend,
                                  const gs_llm_engine_place *place, gs_verification *out);

#endif
