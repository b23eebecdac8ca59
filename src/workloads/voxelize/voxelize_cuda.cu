/* CUDA kernels for voxelize and their launcher. One thread-block row per
 * cloud (blockIdx.y); inside a cloud a grid-stride loop reads four points
 * (48 bytes) per iteration as three 16-byte streaming loads and scatters
 * them with fire-and-forget atomics (RED) into the grid, which stays in L2
 * for typical sizes. Scattered L2 atomics, not DRAM, bound the count mode
 * (docs/workloads/voxelize.md, "Performance"). Small count grids are
 * privatized per block in shared memory, where atomics on few addresses are
 * cheap. Dropped points are counted per thread, reduced per warp and added
 * with one atomic per warp. The voxel index expression matches
 * gs_voxelize_classify in voxelize_cpu.c bit for bit. */
#include <math.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "workloads/voxelize/voxelize_cuda.h"

#define GS_VOXELIZE_THREADS 256
// Count grids up to this many cells (16 KiB) are accumulated per block in
// shared memory and added to the global grid once per block.
#define GS_VOXELIZE_SHARED_CELLS 4096u
// Blocks per SM-wave for the global-atomics path: a few waves keep more
// atomics in flight than one (measured ~2% faster on H100).
#define GS_VOXELIZE_WAVES 4u

// Returns cudaError_t from the enclosing launcher on failure.
#define GS_VOXELIZE_TRY_CUDA(expr)                                             \
  do {                                                                         \
    cudaError_t gs_vox_rc_ = (expr);                                           \
    if (gs_vox_rc_ != cudaSuccess) return gs_vox_rc_;                          \
  } while (0)

// ---- device helpers ---------------------------------------------------------

// Same float32 operations as the CPU reference, with the rounding spelled
// out so that no compiler flag (fast math, FMA contraction) can change it.
__device__ __forceinline__ gs_voxelize_class gs_voxelize_classify_device(
    const gs_voxelize_params &p, float x, float y, float z, uint32_t *cell) {
  if (!isfinite(x) || !isfinite(y) || !isfinite(z)) return GS_VOXELIZE_NONFINITE;
  const float fx = floorf(__fdiv_rn(__fsub_rn(x, p.origin[0]), p.voxel[0]));
  const float fy = floorf(__fdiv_rn(__fsub_rn(y, p.origin[1]), p.voxel[1]));
  const float fz = floorf(__fdiv_rn(__fsub_rn(z, p.origin[2]), p.voxel[2]));
  if (!(fx >= 0.0f && fx < (float)p.dims[0] && fy >= 0.0f && fy < (float)p.dims[1] &&
        fz >= 0.0f && fz < (float)p.dims[2]))
    return GS_VOXELIZE_OUTSIDE;
  // cells <= 2^32 (checked by the launcher), so the index fits in 32 bits.
  *cell = ((uint32_t)fx * p.dims[1] + (uint32_t)fy) * p.dims[2] + (uint32_t)fz;
  return GS_VOXELIZE_INSIDE;
}

// Maps a float to an unsigned key with the same order (for atomicMax).
// Finite floats map to keys > 0, so key 0 (a memset grid) means "empty".
__device__ __forceinline__ uint32_t gs_voxelize_float_key(float v) {
  const uint32_t u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ float gs_voxelize_key_float(uint32_t key) {
  const uint32_t u = (key & 0x80000000u) ? (key & 0x7fffffffu) : ~key;
  return __uint_as_float(u);
}

// The per-block count grid of the shared-memory path.
extern __shared__ uint32_t gs_voxelize_block_bins[];

// Adds one inside point `i` of the cloud to its grid (to the block's bins
// when SHARED).
template <int MODE, bool SHARED>
__device__ __forceinline__ void gs_voxelize_scatter(void *out, uint32_t *counts,
                                                    const float *feat, uint32_t F,
                                                    uint64_t i, uint32_t cell) {
  if (MODE == GS_VOXELIZE_COUNT) {
    if (SHARED)
      atomicAdd(gs_voxelize_block_bins + cell, 1u);
    else
      atomicAdd(static_cast<uint32_t *>(out) + cell, 1u);  // result unused: RED
  } else if (MODE == GS_VOXELIZE_OCCUPANCY) {
    // RED.OR rather than a plain store: scattered 32-bit reductions ran
    // ~20% faster on H100 than plain stores (of bytes or words).
    atomicOr(static_cast<uint32_t *>(out) + cell, 1u);
  } else if (MODE == GS_VOXELIZE_MEAN) {
    float *sum = static_cast<float *>(out) + (size_t)cell * F;
    const float *src = feat + (size_t)i * F;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // Hopper adds four floats with one vector atomic; with F % 4 == 0 every
    // row of features and sums is 16-byte aligned (bases from cudaMalloc,
    // per-cloud offsets multiples of 4 floats).
    if (F % 4 == 0) {
      const float4 *src4 = reinterpret_cast<const float4 *>(src);
      float4 *sum4 = reinterpret_cast<float4 *>(sum);
      for (uint32_t f = 0; f < F / 4; f++) atomicAdd(sum4 + f, src4[f]);
    } else
#endif
    {
      for (uint32_t f = 0; f < F; f++) atomicAdd(sum + f, src[f]);
    }
    atomicAdd(counts + cell, 1u);
  } else {
    uint32_t *key = static_cast<uint32_t *>(out) + (size_t)cell * F;
    const float *src = feat + (size_t)i * F;
    for (uint32_t f = 0; f < F; f++) atomicMax(key + f, gs_voxelize_float_key(src[f]));
  }
}

// ---- kernels ----------------------------------------------------------------

// Scatters every point of cloud blockIdx.y into its grid and counts the
// dropped ones. The grid (and counts, dropped) must be zero on entry.
// SHARED (count mode, cells <= GS_VOXELIZE_SHARED_CELLS, dynamic shared
// memory of cells * 4 bytes): counts go to per-block bins first.
template <int MODE, bool SHARED>
__global__ void __launch_bounds__(GS_VOXELIZE_THREADS)
    gs_voxelize_points_kernel(gs_voxelize_params p, gs_voxelize_cuda_buffers b) {
  const uint32_t cloud = blockIdx.y;
  const uint32_t F = p.features;
  const uint64_t cells = (uint64_t)p.dims[0] * p.dims[1] * p.dims[2];
  const bool has_features = MODE == GS_VOXELIZE_MEAN || MODE == GS_VOXELIZE_MAX;
  const uint64_t out_elems = has_features ? cells * F : cells;
  const size_t elem_size = 4;

  const float *pts = b.points + (size_t)cloud * b.point_stride;
  const float *feat = has_features ? b.features + (size_t)cloud * b.n * F : nullptr;
  void *out = static_cast<char *>(b.out) + (size_t)cloud * out_elems * elem_size;
  uint32_t *counts = MODE == GS_VOXELIZE_MEAN ? b.counts + (size_t)cloud * cells : nullptr;

  const uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  uint32_t nonfinite = 0, outside = 0;
  if (SHARED) {
    for (uint32_t v = threadIdx.x; v < cells; v += blockDim.x) gs_voxelize_block_bins[v] = 0;
    __syncthreads();
  }

#define GS_VOXELIZE_POINT(i, x, y, z)                                          \
  do {                                                                         \
    uint32_t cell_ = 0;                                                        \
    const gs_voxelize_class c_ = gs_voxelize_classify_device(p, x, y, z, &cell_); \
    if (c_ == GS_VOXELIZE_INSIDE)                                              \
      gs_voxelize_scatter<MODE, SHARED>(out, counts, feat, F, (i), cell_);     \
    else if (c_ == GS_VOXELIZE_NONFINITE)                                      \
      nonfinite++;                                                             \
    else                                                                       \
      outside++;                                                               \
  } while (0)

  // Four points are 12 floats = three float4 at a 16-byte aligned offset
  // (the cloud starts 16-byte aligned). Streaming loads (evict-first): the
  // points are read once and should not push the grid out of L2.
  const float4 *pts4 = reinterpret_cast<const float4 *>(pts);
  const uint64_t groups = b.n / 4;
  for (uint64_t g = tid; g < groups; g += stride) {
    const float4 a = __ldcs(pts4 + 3 * g);
    const float4 m = __ldcs(pts4 + 3 * g + 1);
    const float4 c = __ldcs(pts4 + 3 * g + 2);
    const uint64_t i = 4 * g;
    GS_VOXELIZE_POINT(i, a.x, a.y, a.z);
    GS_VOXELIZE_POINT(i + 1, a.w, m.x, m.y);
    GS_VOXELIZE_POINT(i + 2, m.z, m.w, c.x);
    GS_VOXELIZE_POINT(i + 3, c.y, c.z, c.w);
  }
  // The last n % 4 points, one per thread.
  for (uint64_t i = 4 * groups + tid; i < b.n; i += stride)
    GS_VOXELIZE_POINT(i, pts[3 * i], pts[3 * i + 1], pts[3 * i + 2]);
#undef GS_VOXELIZE_POINT

  // Every thread reaches this point (no early return), so the barrier and
  // the full-mask shuffles below are safe.
  if (SHARED) {
    __syncthreads();
    uint32_t *grid = static_cast<uint32_t *>(out);
    for (uint32_t v = threadIdx.x; v < cells; v += blockDim.x)
      if (gs_voxelize_block_bins[v]) atomicAdd(grid + v, gs_voxelize_block_bins[v]);
  }
  // One atomic per warp and reason.
  for (int offset = 16; offset > 0; offset >>= 1) {
    nonfinite += __shfl_xor_sync(0xffffffffu, nonfinite, offset);
    outside += __shfl_xor_sync(0xffffffffu, outside, offset);
  }
  if ((threadIdx.x & 31u) == 0) {
    if (nonfinite) atomicAdd(b.dropped + 2 * (size_t)cloud, (unsigned long long)nonfinite);
    if (outside) atomicAdd(b.dropped + 2 * (size_t)cloud + 1, (unsigned long long)outside);
  }
}

// Turns per-voxel sums into means in place: out[e] /= counts[e / F]; empty
// voxels (count 0, sum 0) stay 0. `total` = clouds * cells * F.
__global__ void __launch_bounds__(GS_VOXELIZE_THREADS)
    gs_voxelize_mean_finalize_kernel(float *out, const uint32_t *counts, uint32_t F,
                                     uint64_t total) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    const uint32_t count = counts[e / F];
    out[e] = count ? __fdiv_rn(out[e], __uint2float_rn(count)) : 0.0f;
  }
}

// Turns ordered keys back into floats in place; key 0 (empty voxel) -> 0.
__global__ void __launch_bounds__(GS_VOXELIZE_THREADS)
    gs_voxelize_max_finalize_kernel(uint32_t *out, uint64_t total) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    const uint32_t key = out[e];
    const float v = key ? gs_voxelize_key_float(key) : 0.0f;
    out[e] = __float_as_uint(v);
  }
}

// ---- launchers --------------------------------------------------------------

// Blocks for a grid-stride loop over `work` items: enough to fill the GPU
// once (`wave` blocks), never more than the work needs, at least one.
static unsigned int gs_voxelize_blocks(uint64_t work, uint64_t wave) {
  uint64_t need = (work + GS_VOXELIZE_THREADS - 1) / GS_VOXELIZE_THREADS;
  uint64_t blocks = need < wave ? need : wave;
  return blocks < 1 ? 1u : (unsigned int)blocks;
}

// Launches the point kernel with `blocks` blocks split over the clouds
// (each cloud at least one) and `shared_bytes` of dynamic shared memory.
template <int MODE, bool SHARED>
static cudaError_t gs_voxelize_launch_points(const gs_voxelize_params *p,
                                             const gs_voxelize_cuda_buffers *b, uint64_t blocks,
                                             size_t shared_bytes, cudaStream_t stream) {
  const uint64_t per_cloud = blocks / b->clouds > 0 ? blocks / b->clouds : 1;
  const uint64_t work = b->n / 4 > 0 ? b->n / 4 : 1;
  const dim3 grid(gs_voxelize_blocks(work, per_cloud), b->clouds, 1);
  gs_voxelize_points_kernel<MODE, SHARED>
      <<<grid, GS_VOXELIZE_THREADS, shared_bytes, stream>>>(*p, *b);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_voxelize_cuda_step(const gs_voxelize_params *p,
                                             const gs_voxelize_cuda_buffers *b,
                                             cudaStream_t stream) {
  // The sizes follow gs_voxelize_cells/out_elems/elem_size; they are
  // recomputed here because voxelize.h declares them with C linkage only.
  const uint64_t cells = (uint64_t)p->dims[0] * p->dims[1] * p->dims[2];
  const bool has_features = p->mode == GS_VOXELIZE_MEAN || p->mode == GS_VOXELIZE_MAX;
  const uint64_t out_elems = has_features ? cells * p->features : cells;
  const size_t elem_size = 4;
  if (b->clouds < 1 || b->clouds > 65535 || b->n > UINT32_MAX || out_elems > (1ull << 32) ||
      (has_features && (p->features < 1 || b->features == NULL)) ||
      (p->mode == GS_VOXELIZE_MEAN && b->counts == NULL) || b->point_stride % 4 != 0 ||
      b->point_stride < 3 * b->n || b->sm_count < 1 || b->max_threads_per_sm < 1)
    return cudaErrorInvalidValue;

  const uint64_t total = (uint64_t)b->clouds * out_elems;
  const uint64_t blocks_per_sm = (uint64_t)b->max_threads_per_sm / GS_VOXELIZE_THREADS;
  const uint64_t wave = (uint64_t)b->sm_count * (blocks_per_sm > 0 ? blocks_per_sm : 1);

  GS_VOXELIZE_TRY_CUDA(
      cudaMemsetAsync(b->out, 0, (size_t)total * elem_size, stream));
  GS_VOXELIZE_TRY_CUDA(cudaMemsetAsync(
      b->dropped, 0, (size_t)b->clouds * 2 * sizeof(unsigned long long), stream));
  if (p->mode == GS_VOXELIZE_MEAN)
    GS_VOXELIZE_TRY_CUDA(cudaMemsetAsync(
        b->counts, 0, (size_t)b->clouds * (size_t)cells * sizeof(uint32_t), stream));

  // The shared-memory path runs one wave, so that each block sees many
  // points per bin it flushes; the global path runs a few waves.
  const uint64_t blocks = GS_VOXELIZE_WAVES * wave;
  switch (p->mode) {
    case GS_VOXELIZE_COUNT:
      if (cells <= GS_VOXELIZE_SHARED_CELLS)
        return gs_voxelize_launch_points<GS_VOXELIZE_COUNT, true>(
            p, b, wave, (size_t)cells * sizeof(uint32_t), stream);
      return gs_voxelize_launch_points<GS_VOXELIZE_COUNT, false>(p, b, blocks, 0, stream);
    case GS_VOXELIZE_OCCUPANCY:
      return gs_voxelize_launch_points<GS_VOXELIZE_OCCUPANCY, false>(p, b, blocks, 0, stream);
    case GS_VOXELIZE_MEAN:
      GS_VOXELIZE_TRY_CUDA(
          (gs_voxelize_launch_points<GS_VOXELIZE_MEAN, false>(p, b, blocks, 0, stream)));
      gs_voxelize_mean_finalize_kernel<<<gs_voxelize_blocks(total, wave), GS_VOXELIZE_THREADS,
                                         0, stream>>>(static_cast<float *>(b->out), b->counts,
                                                      p->features, total);
      return cudaGetLastError();
    case GS_VOXELIZE_MAX:
      GS_VOXELIZE_TRY_CUDA(
          (gs_voxelize_launch_points<GS_VOXELIZE_MAX, false>(p, b, blocks, 0, stream)));
      gs_voxelize_max_finalize_kernel<<<gs_voxelize_blocks(total, wave), GS_VOXELIZE_THREADS,
                                        0, stream>>>(static_cast<uint32_t *>(b->out), total);
      return cudaGetLastError();
  }
  return cudaErrorInvalidValue;
}
