/* Level 3's data kernels: kernels first, their launchers after. The GEMM's
 * inputs are all ones, so every output element is the inner dimension
 * (8192 at most: exact in FP32, and every partial sum of ones is exact in
 * FP32 whatever order the tensor cores add in); one wrong bit anywhere
 * shows. */
#include <stdint.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "p2p/burn_kernels.h"

__global__ void gs_burn_fill_half_kernel(__half *buf, uint64_t n, float value) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  const __half v = __float2half(value);
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    buf[i] = v;
}

__global__ void gs_burn_check_float_kernel(const float *buf, uint64_t n, float expected,
                                           unsigned long long *mismatches) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  unsigned long long bad = 0;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    bad += buf[i] != expected;
  if (bad) atomicAdd(mismatches, bad);
}

enum { THREADS = 256, BLOCKS = 1024 };

extern "C" cudaError_t gs_burn_fill_half(void *buf, uint64_t n, float value,
                                         cudaStream_t stream) {
  gs_burn_fill_half_kernel<<<BLOCKS, THREADS, 0, stream>>>((__half *)buf, n, value);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_burn_check_float(const float *buf, uint64_t n, float expected,
                                           unsigned long long *mismatches,
                                           cudaStream_t stream) {
  gs_burn_check_float_kernel<<<BLOCKS, THREADS, 0, stream>>>(buf, n, expected, mismatches);
  return cudaGetLastError();
}
