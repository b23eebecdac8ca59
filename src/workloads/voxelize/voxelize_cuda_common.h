/* What the voxelize kernels share (included by voxelize_cuda.cu and
 * voxelize_bin2.cu only; nvcc compiles both): the check macro of the
 * launchers, the classification of a point, the binned path's limits and
 * its workspace as the kernels see it, and the second-generation binning
 * launcher. docs/workloads/voxelize.md describes both generations. */
#ifndef GS_VOXELIZE_CUDA_COMMON_H
#define GS_VOXELIZE_CUDA_COMMON_H

#include <math.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "workloads/voxelize/voxelize_cuda.h"
#include "workloads/voxelize/voxelize_floor.h"

// Returns cudaError_t from the enclosing launcher on failure.
#define GS_VOXELIZE_TRY_CUDA(expr)                                             \
  do {                                                                         \
    cudaError_t gs_vox_rc_ = (expr);                                           \
    if (gs_vox_rc_ != cudaSuccess) return gs_vox_rc_;                          \
  } while (0)

// The reciprocals of the voxel edges for the division-free floor
// (voxelize_floor.h); 0 on an axis whose division is always made.
struct gs_voxelize_recip {
  float r[3];
};

__device__ __forceinline__ gs_voxelize_recip gs_voxelize_recip_of(const gs_voxelize_params &p) {
  gs_voxelize_recip r;
  for (int a = 0; a < 3; a++) r.r[a] = gs_voxelize_floor_reciprocal(p.voxel[a]);
  return r;
}

// Same float32 operations as the CPU reference, with the rounding spelled
// out so that no compiler flag (fast math, FMA contraction) can change it.
// FAST: the floor of each quotient by voxelize_floor.h, equal bit for bit
// (tests/test_voxelize_floor.c), dividing only near an integer boundary.
template <bool FAST>
__device__ __forceinline__ gs_voxelize_class gs_voxelize_classify_device(
    const gs_voxelize_params &p, const gs_voxelize_recip &r, float x, float y, float z,
    uint32_t *cell) {
  if (!isfinite(x) || !isfinite(y) || !isfinite(z)) return GS_VOXELIZE_NONFINITE;
  float fx, fy, fz;
  if (FAST) {
    fx = gs_voxelize_floor_quotient(__fsub_rn(x, p.origin[0]), p.voxel[0], r.r[0]);
    fy = gs_voxelize_floor_quotient(__fsub_rn(y, p.origin[1]), p.voxel[1], r.r[1]);
    fz = gs_voxelize_floor_quotient(__fsub_rn(z, p.origin[2]), p.voxel[2], r.r[2]);
  } else {
    fx = floorf(__fdiv_rn(__fsub_rn(x, p.origin[0]), p.voxel[0]));
    fy = floorf(__fdiv_rn(__fsub_rn(y, p.origin[1]), p.voxel[1]));
    fz = floorf(__fdiv_rn(__fsub_rn(z, p.origin[2]), p.voxel[2]));
  }
  if (!(fx >= 0.0f && fx < (float)p.dims[0] && fy >= 0.0f && fy < (float)p.dims[1] &&
        fz >= 0.0f && fz < (float)p.dims[2]))
    return GS_VOXELIZE_OUTSIDE;
  // cells <= 2^32 (checked by the launcher), so the index fits in 32 bits.
  *cell = ((uint32_t)fx * p.dims[1] + (uint32_t)fy) * p.dims[2] + (uint32_t)fz;
  return GS_VOXELIZE_INSIDE;
}

// Points per first-generation binning block; its shared memory holds 2
// words per point. The bucket capacity is sized by it in both generations.
#define GS_VOXELIZE_BIN_CHUNK 8192u
#define GS_VOXELIZE_BIN_THREADS 256
// At most this many slabs per cloud (one per binning thread), each of at
// most 2^GS_VOXELIZE_SLAB_MAX_SHIFT cells (16-bit ids, shared counters).
#define GS_VOXELIZE_MAX_SLABS 256u
#define GS_VOXELIZE_SLAB_MAX_SHIFT 15u

// Device view of the binned path's workspace. Everything but `ids` is kept
// zero between steps: the slab kernel re-zeroes what the bin kernel set.
struct gs_voxelize_bins {
  uint32_t shift;                // slab = cell >> shift
  uint32_t slabs;                // per cloud, <= GS_VOXELIZE_MAX_SLABS
  uint32_t cap;                  // ids per bucket, a multiple of 8
  unsigned long long *dropped;   // clouds x 2, like the buffers' dropped
  uint32_t *cursor;              // clouds x slabs: ids reserved in each bucket
  uint32_t *spilled;             // clouds x slabs: 1 when ids went to `overflow`
  uint32_t *overflow;            // clouds x cells: counts that missed their bucket
  uint16_t *ids;                 // clouds x slabs x cap in-slab cell ids
};

// Enqueues the second-generation binning kernel (voxelize_bin2.cu) for
// count (occupancy: same ids) into the workspace `w`; the slab kernel that
// follows is the first generation's. Host; asynchronous on `stream`.
cudaError_t gs_voxelize_launch_bin2(const gs_voxelize_params *p, const gs_voxelize_cuda_buffers *b,
                                    const gs_voxelize_bins *w, cudaStream_t stream);

#endif
