/* The p2p kernels: kernels first, their launchers after. Only this file is
 * CUDA; p2p_measure.c drives it. */
#include <stdint.h>

#include <cuda_runtime.h>

#include "p2p/p2p_kernels.h"

__device__ static uint64_t gs_p2p_now_ns(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void gs_p2p_spin_kernel(volatile int *release, uint64_t timeout_ns, int *timed_out) {
  uint64_t start = gs_p2p_now_ns();
  while (*release == 0) {
    if (gs_p2p_now_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

/* Four 16-byte words per thread per pass: loads issued before stores keep
 * enough requests in flight to cover NVLink latency. */
__global__ void gs_p2p_sm_copy_kernel(const int4 *__restrict__ src, int4 *__restrict__ dst,
                                      uint64_t words) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < words; i += 4 * stride) {
    int4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < words; i += stride) dst[i] = src[i];
}

__global__ void gs_p2p_fill_kernel(uint32_t *buf, uint64_t words, uint32_t seed) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride)
    buf[i] = gs_p2p_pattern(i, seed);
}

__global__ void gs_p2p_check_kernel(const uint32_t *buf, uint64_t words, uint32_t seed,
                                    unsigned long long *mismatches) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  unsigned long long bad = 0;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride)
    bad += buf[i] != gs_p2p_pattern(i, seed);
  if (bad) atomicAdd(mismatches, bad);
}

/* Spins until *flag == want; 0 on time-out. */
__device__ static int gs_p2p_wait(volatile int *flag, int want, uint64_t deadline) {
  while (*flag != want)
    if (gs_p2p_now_ns() > deadline) return 0;
  return 1;
}

__global__ void gs_p2p_pingpong_kernel(volatile int *local, volatile int *remote, int rounds,
                                       int initiator, uint64_t timeout_ns,
                                       unsigned long long *elapsed_ns, int *timed_out) {
  uint64_t deadline = gs_p2p_now_ns() + timeout_ns;
  uint64_t start = gs_p2p_now_ns();
  for (int r = 1; r <= rounds; r++) {
    if (initiator) {
      *remote = r;
      if (!gs_p2p_wait(local, r, deadline)) {
        *timed_out = 1;
        return;
      }
    } else {
      if (!gs_p2p_wait(local, r, deadline)) {
        *timed_out = 1;
        return;
      }
      *remote = r;
    }
  }
  if (initiator) *elapsed_ns = gs_p2p_now_ns() - start;
}

/* ---- launchers ------------------------------------------------------------ */

static unsigned gs_p2p_grid(uint64_t words) {
  uint64_t blocks = (words + 255) / 256;
  if (blocks > 4096) blocks = 4096;
  return blocks ? (unsigned)blocks : 1u;
}

extern "C" cudaError_t gs_p2p_spin(volatile int *release, uint64_t timeout_ns, int *timed_out,
                                   cudaStream_t stream) {
  gs_p2p_spin_kernel<<<1, 1, 0, stream>>>(release, timeout_ns, timed_out);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_p2p_sm_copy(const void *src, void *dst, uint64_t bytes,
                                      unsigned blocks, cudaStream_t stream) {
  if (bytes % 16 != 0 || blocks == 0) return cudaErrorInvalidValue;
  gs_p2p_sm_copy_kernel<<<blocks, 512, 0, stream>>>((const int4 *)src, (int4 *)dst, bytes / 16);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_p2p_fill(void *buf, uint64_t bytes, uint32_t seed,
                                   cudaStream_t stream) {
  if (bytes % 4 != 0) return cudaErrorInvalidValue;
  gs_p2p_fill_kernel<<<gs_p2p_grid(bytes / 4), 256, 0, stream>>>((uint32_t *)buf, bytes / 4, seed);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_p2p_check(const void *buf, uint64_t bytes, uint32_t seed,
                                    unsigned long long *mismatches, cudaStream_t stream) {
  if (bytes % 4 != 0) return cudaErrorInvalidValue;
  gs_p2p_check_kernel<<<gs_p2p_grid(bytes / 4), 256, 0, stream>>>((const uint32_t *)buf,
                                                                   bytes / 4, seed, mismatches);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_p2p_pingpong(volatile int *local, volatile int *remote, int rounds,
                                       int initiator, uint64_t timeout_ns,
                                       unsigned long long *elapsed_ns, int *timed_out,
                                       cudaStream_t stream) {
  gs_p2p_pingpong_kernel<<<1, 1, 0, stream>>>(local, remote, rounds, initiator, timeout_ns,
                                              elapsed_ns, timed_out);
  return cudaGetLastError();
}
