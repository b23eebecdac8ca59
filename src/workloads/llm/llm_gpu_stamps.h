/* One shard's arrival stamps on its GPU (docs/stragglers.md, "llm's
 * tensor-parallel all-reduces"): the ring of (entry, exit) slots in
 * mapped host memory that the stamp kernels write (llm_stamps_cuda.h),
 * their device counter, and the anchor of the GPU's clock on the host's.
 * Used by llm_gpu.c on the thread that owns the device. */
#ifndef GS_LLM_GPU_STAMPS_H
#define GS_LLM_GPU_STAMPS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "core/arrival.h"
#include "core/status.h"
#include "workloads/llm/llm_stamps.h"

typedef struct gs_llm_stamper gs_llm_stamper;

/* A ring of GS_LLM_STAMP_SLOTS slots on the current device, its clock
 * anchored on `stream`, which must be idle (GS_LLM_CLOCK_TRIES kernels
 * that read the clock, each launched and synchronized between two host
 * clock reads; the tightest kept: llm_stamps.h, gs_llm_clock_pick).
 * GS_ERR_CUDA, GS_ERR_NOMEM; on failure nothing is left. */
gs_status gs_llm_stamper_create(cudaStream_t stream, gs_llm_stamper **out);

/* Loads the stamp, clock and late-spin kernels on the current device, as
 * a shard's set-up does before its first NCCL transfer: CUDA loads a
 * kernel at its first launch, and a load beside NCCL's spinning transfers
 * hung mlp's pipeline (docs/workloads/mlp.md, "Transfers"). */
gs_status gs_llm_stamps_load(void);

/* Frees `s` (after its stream's work is done); accepts NULL. */
void gs_llm_stamper_destroy(gs_llm_stamper *s);

/* The anchor of the device clock (its error in `error`). */
const gs_llm_clock_anchor *gs_llm_stamper_anchor(const gs_llm_stamper *s);

/* Enqueues the stamp that opens the next slot (entry) or closes the open
 * one (exit) on `stream`. */
gs_status gs_llm_stamper_mark(gs_llm_stamper *s, int exit, cudaStream_t stream);

/* Appends the slots opened since the last take up to slot `done` (every
 * slot below it finished on the device and seen by the host, e.g. after a
 * wait on the stream) to `into`, on the host clock plus `offset`. */
gs_status gs_llm_stamper_take(gs_llm_stamper *s, uint64_t done, double offset,
                              gs_arrival_rank *into);

#endif
