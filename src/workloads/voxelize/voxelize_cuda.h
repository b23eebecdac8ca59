/* CUDA side of voxelize: device buffers of one rank and the launcher that
 * enqueues one complete step. Host code includes this header; only
 * voxelize_cuda.cu is compiled by nvcc. */
#ifndef GS_VOXELIZE_CUDA_H
#define GS_VOXELIZE_CUDA_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "workloads/voxelize/voxelize.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device buffers and launch shape of one rank. All pointers are device
 * memory from cudaMalloc (256-byte aligned). */
typedef struct {
  const float *points;         /* clouds x point_stride floats; cloud c at c*point_stride */
  uint64_t point_stride;       /* floats per cloud: 3*n rounded up to a multiple of 4, so
                                  every cloud starts 16-byte aligned */
  const float *features;       /* clouds x n x F floats, contiguous; NULL for count/occupancy */
  void *out;                   /* clouds x gs_voxelize_out_bytes, contiguous */
  uint32_t *counts;            /* clouds x cells points per voxel; mean mode only, else NULL */
  unsigned long long *dropped; /* clouds x 2: [c*2] non-finite, [c*2+1] outside */
  uint64_t n;                  /* points per cloud, < 2^32 */
  uint32_t clouds;             /* 1..65535 (one grid row of blocks per cloud) */
  int sm_count;                /* multiprocessors of the device (sizes the launch) */
  int max_threads_per_sm;
  void *workspace;             /* binned path's scratch (gs_voxelize_cuda_workspace_bytes),
                                  zero-filled once after allocation; NULL when that is 0 */
  uint64_t workspace_bytes;
  int kernels;                 /* 1: the first generation of kernels, 2: the second
                                  (docs/workloads/voxelize.md, "Two generations") */
} gs_voxelize_cuda_buffers;

/* Bytes of workspace for the binned path with `clouds` clouds of `n`
 * points each, or 0 where that path does not run: it runs for count and
 * occupancy on grids too large for shared memory, and, unless `always`,
 * only with enough points to pay off (docs/workloads/voxelize.md). The
 * step takes the binned path exactly when it is given a workspace of at
 * least this size (`always` set: tests). The caller allocates it once and
 * fills it with zeros; every step leaves it zero-filled again where it
 * needs zeros. Host only; no CUDA call. */
uint64_t gs_voxelize_cuda_workspace_bytes(const gs_voxelize_params *p, uint64_t n,
                                          uint64_t clouds, int always);

/* Enqueues on `stream` everything one step needs to produce the grids and
 * dropped counts from scratch: memsets of out, counts and dropped, the
 * point kernel, and for mean/max the finalize kernel; on the binned path
 * (workspace given and large enough) the binning and slab kernels alone,
 * which write every grid element and dropped count. Asynchronous; the
 * caller owns and checks the returned error (cudaErrorInvalidValue for a
 * problem the kernels cannot index: cells*F > 2^32, n >= 2^32, clouds
 * outside 1..65535). Call on the thread where the buffers' device is
 * current. */
cudaError_t gs_voxelize_cuda_step(const gs_voxelize_params *p, const gs_voxelize_cuda_buffers *b,
                                  cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
