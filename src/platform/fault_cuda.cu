/* Kernels of the slow fault (a clock stamp before the step and a spin after
 * it) and of the late fault (a spin of fixed length before it), all one
 * thread, reading the GPU's global nanosecond timer. */
#include "platform/fault_cuda.h"

__device__ __forceinline__ unsigned long long gs_fault_now(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void gs_fault_stamp_kernel(unsigned long long *slot) { *slot = gs_fault_now(); }

__global__ void gs_fault_stretch_kernel(const unsigned long long *slot, double factor) {
  const unsigned long long start = *slot;
  const unsigned long long now = gs_fault_now();
  const unsigned long long until =
      start + (unsigned long long)((double)(now - start) * factor);
  while (gs_fault_now() < until) {
  }
}

__global__ void gs_fault_spin_kernel(unsigned long long ns) {
  const unsigned long long until = gs_fault_now() + ns;
  while (gs_fault_now() < until) {
  }
}

extern "C" cudaError_t gs_fault_cuda_spin(double seconds, cudaStream_t stream) {
  gs_fault_spin_kernel<<<1, 1, 0, stream>>>((unsigned long long)(seconds * 1e9));
  return cudaGetLastError();
}

extern "C" cudaError_t gs_fault_cuda_stamp(unsigned long long *slot, cudaStream_t stream) {
  gs_fault_stamp_kernel<<<1, 1, 0, stream>>>(slot);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_fault_cuda_stretch(const unsigned long long *slot, double factor,
                                             cudaStream_t stream) {
  gs_fault_stretch_kernel<<<1, 1, 0, stream>>>(slot, factor);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_fault_cuda_load_kernels(void) {
  cudaFuncAttributes a;
  cudaError_t rc = cudaFuncGetAttributes(&a, gs_fault_stamp_kernel);
  if (rc == cudaSuccess) rc = cudaFuncGetAttributes(&a, gs_fault_stretch_kernel);
  if (rc == cudaSuccess) rc = cudaFuncGetAttributes(&a, gs_fault_spin_kernel);
  return rc;
}
