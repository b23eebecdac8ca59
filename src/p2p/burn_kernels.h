/* Launchers of level 3's data kernels (burn_kernels.cu): the fill of a
 * GEMM's FP16 inputs and the check of its FP32 output. Each launches on the
 * current device and returns the launch's CUDA error. See docs/check.md,
 * "Level 3". */
#ifndef GS_BURN_KERNELS_H
#define GS_BURN_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sets `n` FP16 elements of `buf` to `value` (a small whole number). */
cudaError_t gs_burn_fill_half(void *buf, uint64_t n, float value, cudaStream_t stream);

/* Adds to *mismatches (device memory) the count of the `n` FP32 elements
 * of `buf` that are not exactly `expected`. */
cudaError_t gs_burn_check_float(const float *buf, uint64_t n, float expected,
                                unsigned long long *mismatches, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
