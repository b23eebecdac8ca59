/* The kernels of llm's device-stamped arrivals on CUDA (llm_stamps.h,
 * docs/stragglers.md; its late fault spins with platform/fault_cuda),
 * each one thread reading the GPU's nanosecond clock (%globaltimer), and
 * their launchers, which
 * enqueue one kernel without the overlap attribute (it starts once the
 * stream's previous work is done, and so does the work after it) and
 * return the launch error. Captured into a CUDA graph they run on every
 * replay. */
#ifndef GS_LLM_STAMPS_CUDA_H
#define GS_LLM_STAMPS_CUDA_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Entry (exit = 0): stamps the clock into the entry of slot *count (of
 * `slots` (entry, exit) pairs of `ring`, by slot mod slots), clears its
 * exit and counts the slot (*count + 1). Exit (exit = 1): stamps the
 * clock into the exit of slot *count - 1, the one the last entry opened.
 * `ring` is mapped host memory, `count` device memory. */
cudaError_t gs_llm_cuda_stamp(unsigned long long *ring, unsigned slots, unsigned long long *count,
                              int exit, cudaStream_t stream);

/* Writes the clock into *out (mapped host memory): the anchor's reading. */
cudaError_t gs_llm_cuda_clock(unsigned long long *out, cudaStream_t stream);

/* Loads the two kernels above and the late fault's spin
 * (gs_fault_cuda_load_kernels) on the current device (CUDA loads a kernel
 * lazily at its first launch otherwise). */
cudaError_t gs_llm_cuda_load_kernels(void);

#ifdef __cplusplus
}
#endif

#endif
