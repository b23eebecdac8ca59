/* Launchers of the memory-bandwidth kernels (membw_kernels.cu): STREAM's
 * triad a = b + s * c on doubles, the fill of its inputs and the check of
 * its output. Each launches on the current device and returns the launch's
 * CUDA error. See docs/check.md, "Level 2". */
#ifndef GS_MEMBW_KERNELS_H
#define GS_MEMBW_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* a[i] = b[i] + scalar * c[i] for i < n (n even), `blocks` CTAs of 256
 * threads, 16-byte loads and stores. */
cudaError_t gs_membw_triad(double *a, const double *b, const double *c, double scalar,
                           uint64_t n, unsigned blocks, cudaStream_t stream);

/* b[i] = gs_membw_b(i), c[i] = gs_membw_c(i) (membw.h) for i < n. */
cudaError_t gs_membw_fill(double *b, double *c, uint64_t n, cudaStream_t stream);

/* Adds to *mismatches (device memory) the count of i < n where a[i] is not
 * exactly gs_membw_b(i) + scalar * gs_membw_c(i). */
cudaError_t gs_membw_check(const double *a, uint64_t n, double scalar,
                           unsigned long long *mismatches, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
