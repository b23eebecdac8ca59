/* Launchers of the p2p kernels (p2p_kernels.cu): the spin kernel that holds
 * a stream until the host releases it, the SM copy kernel, the fill/check
 * pair that verifies a copy, and the GPU-to-GPU ping-pong. Each launches on
 * the current device and returns the launch's CUDA error. See docs/p2p.md. */
#ifndef GS_P2P_KERNELS_H
#define GS_P2P_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __CUDACC__
#define GS_P2P_HOST_DEVICE __host__ __device__
#else
#define GS_P2P_HOST_DEVICE
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* One thread spins until *release (host-mapped) is non-zero or `timeout_ns`
 * passes (then *timed_out, device-visible, is set to 1). Queued work behind
 * it starts together when the host releases the flag. */
cudaError_t gs_p2p_spin(volatile int *release, uint64_t timeout_ns, int *timed_out,
                        cudaStream_t stream);

/* Copies `bytes` (a multiple of 16) from src to dst with `blocks` CTAs of
 * 512 threads doing 16-byte loads and stores, four in flight per thread.
 * src or dst may be a peer GPU's memory when peer access is enabled. */
cudaError_t gs_p2p_sm_copy(const void *src, void *dst, uint64_t bytes, unsigned blocks,
                           cudaStream_t stream);

/* Fills `bytes` (a multiple of 4) with the pattern gs_p2p_pattern(i, seed)
 * of each 32-bit word i. */
cudaError_t gs_p2p_fill(void *buf, uint64_t bytes, uint32_t seed, cudaStream_t stream);

/* Adds to *mismatches (device memory) the number of 32-bit words of `buf`
 * that differ from the pattern. */
cudaError_t gs_p2p_check(const void *buf, uint64_t bytes, uint32_t seed,
                         unsigned long long *mismatches, cudaStream_t stream);

/* Ping-pong between two GPUs, one thread each, `rounds` round trips. Each
 * side spins on its own flag (`local`, in its own memory) and writes the
 * other's (`remote`, in the peer's memory). The initiator writes first and
 * stores the elapsed nanoseconds (%globaltimer) in *elapsed_ns; the
 * responder answers. Either side gives up after `timeout_ns` and sets
 * *timed_out. Flags must start at 0. */
cudaError_t gs_p2p_pingpong(volatile int *local, volatile int *remote, int rounds, int initiator,
                            uint64_t timeout_ns, unsigned long long *elapsed_ns, int *timed_out,
                            cudaStream_t stream);

/* The 32-bit pattern word i of a buffer filled with `seed` (also the CPU
 * reference the GPU test compares with). */
GS_P2P_HOST_DEVICE static inline uint32_t gs_p2p_pattern(uint64_t i, uint32_t seed) {
  uint32_t x = (uint32_t)i * 2654435761u ^ (uint32_t)(i >> 32) ^ seed;
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  x ^= x >> 12;
  return x;
}

#ifdef __cplusplus
}
#endif

#endif
