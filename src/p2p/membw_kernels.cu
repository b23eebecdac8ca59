/* The memory-bandwidth kernels: kernels first, their launchers after. Only
 * this file is CUDA; membw.c drives it. The inputs are small whole numbers
 * (b below 1024, c below 512, the scalar 3), so b + 3 * c is exact in
 * double whether the compiler fuses it into an FMA or not: the GPU's
 * result equals the CPU reference bit for bit. */
#include <stdint.h>

#include <cuda_runtime.h>

#include "p2p/membw.h"
#include "p2p/membw_kernels.h"

/* Two doubles per 16-byte access: fewer, wider requests keep HBM busy with
 * a modest grid (nvbandwidth and BabelStream do the same). */
__global__ void gs_membw_triad_kernel(double2 *__restrict__ a, const double2 *__restrict__ b,
                                      const double2 *__restrict__ c, double scalar,
                                      uint64_t pairs) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += stride) {
    const double2 x = b[i], y = c[i];
    a[i] = make_double2(x.x + scalar * y.x, x.y + scalar * y.y);
  }
}

__global__ void gs_membw_fill_kernel(double *b, double *c, uint64_t n) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    b[i] = gs_membw_b(i);
    c[i] = gs_membw_c(i);
  }
}

__global__ void gs_membw_check_kernel(const double *a, uint64_t n, double scalar,
                                      unsigned long long *mismatches) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  unsigned long long bad = 0;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    bad += a[i] != gs_membw_b(i) + scalar * gs_membw_c(i);
  if (bad) atomicAdd(mismatches, bad);
}

enum { THREADS = 256, SETUP_BLOCKS = 1024 };

extern "C" cudaError_t gs_membw_triad(double *a, const double *b, const double *c, double scalar,
                                      uint64_t n, unsigned blocks, cudaStream_t stream) {
  gs_membw_triad_kernel<<<blocks, THREADS, 0, stream>>>(
      (double2 *)a, (const double2 *)b, (const double2 *)c, scalar, n / 2);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_membw_fill(double *b, double *c, uint64_t n, cudaStream_t stream) {
  gs_membw_fill_kernel<<<SETUP_BLOCKS, THREADS, 0, stream>>>(b, c, n);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_membw_check(const double *a, uint64_t n, double scalar,
                                      unsigned long long *mismatches, cudaStream_t stream) {
  gs_membw_check_kernel<<<SETUP_BLOCKS, THREADS, 0, stream>>>(a, n, scalar, mismatches);
  return cudaGetLastError();
}
