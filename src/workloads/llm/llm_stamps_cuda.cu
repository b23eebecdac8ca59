/* The clock kernels of llm's arrival stamps (see llm_stamps_cuda.h; the
 * late fault's spin is platform/fault_cuda's): one thread each, a few instructions besides the
 * clock read, so a stamp costs about a kernel launch on the stream. */
#include "workloads/llm/llm_stamps_cuda.h"

#include "platform/fault_cuda.h"

static __device__ __forceinline__ unsigned long long gs_llm_now(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void gs_llm_stamp_kernel(unsigned long long *ring, unsigned slots,
                                    unsigned long long *count, int exit) {
  const unsigned long long t = gs_llm_now(), s = *count;
  if (exit) {
    ring[2 * ((s - 1) % slots) + 1] = t;
  } else {
    ring[2 * (s % slots)] = t;
    ring[2 * (s % slots) + 1] = 0;
    *count = s + 1;
  }
  // The host reads the ring once it saw the stream pass this point.
  __threadfence_system();
}

__global__ void gs_llm_clock_kernel(unsigned long long *out) {
  *out = gs_llm_now();
  __threadfence_system();
}


extern "C" cudaError_t gs_llm_cuda_stamp(unsigned long long *ring, unsigned slots,
                                         unsigned long long *count, int exit,
                                         cudaStream_t stream) {
  gs_llm_stamp_kernel<<<1, 1, 0, stream>>>(ring, slots, count, exit);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_llm_cuda_clock(unsigned long long *out, cudaStream_t stream) {
  gs_llm_clock_kernel<<<1, 1, 0, stream>>>(out);
  return cudaGetLastError();
}


extern "C" cudaError_t gs_llm_cuda_load_kernels(void) {
  cudaFuncAttributes a;
  cudaError_t rc = cudaFuncGetAttributes(&a, gs_llm_stamp_kernel);
  if (rc == cudaSuccess) rc = cudaFuncGetAttributes(&a, gs_llm_clock_kernel);
  if (rc == cudaSuccess) rc = gs_fault_cuda_load_kernels();
  return rc;
}
