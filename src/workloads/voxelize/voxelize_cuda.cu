/* CUDA kernels for voxelize and their launcher. One thread-block row per
 * cloud (blockIdx.y); inside a cloud a grid-stride loop reads four points
 * (48 bytes) per iteration as three 16-byte streaming loads and scatters
 * them with fire-and-forget atomics (RED) into the grid, which stays in L2
 * for typical sizes. Scattered L2 atomics, not DRAM, bound the count mode
 * (docs/workloads/voxelize.md, "Performance"). Small count grids are
 * privatized per block in shared memory, where atomics on few addresses are
 * cheap. Dropped points are counted per thread, reduced per warp and added
 * with one atomic per warp. The voxel index expression matches
 * gs_voxelize_classify in voxelize_cpu.c bit for bit. Two generations of
 * kernels (buffers' `kernels`): the second classifies without divisions
 * (voxelize_floor.h) and bins with voxelize_bin2.cu's persistent kernel;
 * the first is kept for A/B measurements (bench/voxelize_kernels.sh --ab). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "workloads/voxelize/voxelize_cuda_common.h"

#define GS_VOXELIZE_THREADS 256
// Count grids up to this many cells (16 KiB) are accumulated per block in
// shared memory and added to the global grid once per block.
#define GS_VOXELIZE_SHARED_CELLS 4096u
// Blocks per SM-wave for the global-atomics path: a few waves keep more
// atomics in flight than one (measured ~2% faster on H100).
#define GS_VOXELIZE_WAVES 4u
// The binned path pays off from about this many points per step.
#define GS_VOXELIZE_BIN_MIN_POINTS 2000000ull


// ---- device helpers ---------------------------------------------------------


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
// memory of cells * 4 bytes): counts go to per-block bins first. FAST:
// the second generation's division-free classification.
template <int MODE, bool SHARED, bool FAST>
__global__ void __launch_bounds__(GS_VOXELIZE_THREADS)
    gs_voxelize_points_kernel(gs_voxelize_params p, gs_voxelize_cuda_buffers b) {
  const uint32_t cloud = blockIdx.y;
  const gs_voxelize_recip r = gs_voxelize_recip_of(p);
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
    const gs_voxelize_class c_ = gs_voxelize_classify_device<FAST>(p, r, x, y, z, &cell_); \
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

// ---- binned path (count and occupancy on large grids) -----------------------
//
// Pass 1 (gs_voxelize_bin_kernel): each block takes a chunk of
// GS_VOXELIZE_BIN_CHUNK points of one cloud, computes their cells, sorts
// them by slab (cell >> shift) in shared memory, reserves room in each
// slab's bucket with one global atomic per slab, and copies the 16-bit
// in-slab ids out in slab runs. Pass 2 (gs_voxelize_slab_kernel): one block
// per (slab, cloud) counts its bucket in shared memory and writes its part
// of the grid once, so no memset and no scattered L2 atomics. A bucket that
// fills up (clustered points) sends the rest of its ids to a per-cloud
// overflow grid with global atomics, which the slab kernel adds and
// re-zeroes: exact for any input, slow only for the overflowing part.

#define GS_VOXELIZE_SLAB_THREADS 512


template <int MODE>
__global__ void __launch_bounds__(GS_VOXELIZE_BIN_THREADS)
    gs_voxelize_bin_kernel(gs_voxelize_params p, gs_voxelize_cuda_buffers b,
                           gs_voxelize_bins w) {
  extern __shared__ uint32_t gs_voxelize_bin_smem[];
  uint32_t *cell_s = gs_voxelize_bin_smem;                  // chunk: cell or ~0u
  uint32_t *sorted_s = cell_s + GS_VOXELIZE_BIN_CHUNK;      // slab << 16 | id
  uint32_t *hist = sorted_s + GS_VOXELIZE_BIN_CHUNK;        // slabs
  uint32_t *offs = hist + GS_VOXELIZE_MAX_SLABS;            // slabs + 1
  uint32_t *cur = offs + GS_VOXELIZE_MAX_SLABS + 1;         // slabs
  uint32_t *base = cur + GS_VOXELIZE_MAX_SLABS;             // slabs
  uint32_t *scratch = base + GS_VOXELIZE_MAX_SLABS;         // warps x 2

  const uint32_t cloud = blockIdx.y;
  const uint32_t tid = threadIdx.x;
  const uint32_t warp = tid / 32, lane = tid % 32;
  const uint64_t first = (uint64_t)blockIdx.x * GS_VOXELIZE_BIN_CHUNK;
  const uint32_t count =
      (uint32_t)(b.n - first < GS_VOXELIZE_BIN_CHUNK ? b.n - first : GS_VOXELIZE_BIN_CHUNK);
  const uint64_t cells = (uint64_t)p.dims[0] * p.dims[1] * p.dims[2];
  const float *pts = b.points + (size_t)cloud * b.point_stride + 3 * first;
  uint32_t nonfinite = 0, outside = 0;

  if (tid < w.slabs) hist[tid] = 0;
  __syncthreads();

#define GS_VOXELIZE_BIN(i, x, y, z)                                             \
  do {                                                                          \
    uint32_t cell_ = 0;                                                         \
    const gs_voxelize_class c_ =                                                \
        gs_voxelize_classify_device<false>(p, gs_voxelize_recip(), x, y, z, &cell_); \
    if (c_ == GS_VOXELIZE_INSIDE) {                                             \
      atomicAdd(hist + (cell_ >> w.shift), 1u);                                 \
    } else {                                                                    \
      cell_ = ~0u;                                                              \
      if (c_ == GS_VOXELIZE_NONFINITE)                                          \
        nonfinite++;                                                            \
      else                                                                      \
        outside++;                                                              \
    }                                                                           \
    cell_s[i] = cell_;                                                          \
  } while (0)

  // The chunk starts at a multiple of 8192 points, 16-byte aligned. Four
  // groups of four points per iteration: twelve 16-byte loads in flight per
  // thread before the first use.
  const float4 *pts4 = reinterpret_cast<const float4 *>(pts);
  const uint32_t groups = count / 4;
  uint32_t g = tid;
  for (; g + 3 * GS_VOXELIZE_BIN_THREADS < groups; g += 4 * GS_VOXELIZE_BIN_THREADS) {
    float4 v[4][3];
#pragma unroll
    for (int k = 0; k < 4; k++)
#pragma unroll
      for (int j = 0; j < 3; j++) v[k][j] = __ldcs(pts4 + 3 * (g + k * GS_VOXELIZE_BIN_THREADS) + j);
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const uint32_t i = 4 * (g + k * GS_VOXELIZE_BIN_THREADS);
      GS_VOXELIZE_BIN(i, v[k][0].x, v[k][0].y, v[k][0].z);
      GS_VOXELIZE_BIN(i + 1, v[k][0].w, v[k][1].x, v[k][1].y);
      GS_VOXELIZE_BIN(i + 2, v[k][1].z, v[k][1].w, v[k][2].x);
      GS_VOXELIZE_BIN(i + 3, v[k][2].y, v[k][2].z, v[k][2].w);
    }
  }
  for (; g < groups; g += GS_VOXELIZE_BIN_THREADS) {
    const float4 a = __ldcs(pts4 + 3 * g), m = __ldcs(pts4 + 3 * g + 1),
                 c = __ldcs(pts4 + 3 * g + 2);
    GS_VOXELIZE_BIN(4 * g, a.x, a.y, a.z);
    GS_VOXELIZE_BIN(4 * g + 1, a.w, m.x, m.y);
    GS_VOXELIZE_BIN(4 * g + 2, m.z, m.w, c.x);
    GS_VOXELIZE_BIN(4 * g + 3, c.y, c.z, c.w);
  }
  for (uint32_t i = 4 * groups + tid; i < count; i += GS_VOXELIZE_BIN_THREADS)
    GS_VOXELIZE_BIN(i, pts[3 * i], pts[3 * i + 1], pts[3 * i + 2]);
#undef GS_VOXELIZE_BIN
  __syncthreads();

  // Exclusive scan of the slab histogram (one slab per thread), and one
  // reservation per non-empty slab in its bucket.
  const uint32_t mine = tid < w.slabs ? hist[tid] : 0;
  uint32_t incl = mine;
  for (int d = 1; d < 32; d <<= 1) {
    const uint32_t v = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= (uint32_t)d) incl += v;
  }
  if (lane == 31) scratch[warp] = incl;
  __syncthreads();
  uint32_t before = 0;
  for (uint32_t k = 0; k < warp; k++) before += scratch[k];
  if (tid < w.slabs) {
    offs[tid] = before + incl - mine;
    cur[tid] = before + incl - mine;
    if (mine) base[tid] = atomicAdd(w.cursor + (size_t)cloud * w.slabs + tid, mine);
  }
  if (tid == GS_VOXELIZE_BIN_THREADS - 1) offs[w.slabs] = before + incl;
  __syncthreads();

  // Counting sort by slab inside the chunk.
  const uint32_t mask = (1u << w.shift) - 1;
  for (uint32_t i = tid; i < count; i += GS_VOXELIZE_BIN_THREADS) {
    const uint32_t cell = cell_s[i];
    if (cell != ~0u) {
      const uint32_t slab = cell >> w.shift;
      sorted_s[atomicAdd(cur + slab, 1u)] = slab << 16 | (cell & mask);
    }
  }
  __syncthreads();

  // Slab runs to their buckets: consecutive threads write consecutive ids.
  const uint32_t inside = offs[w.slabs];
  for (uint32_t j = tid; j < inside; j += GS_VOXELIZE_BIN_THREADS) {
    const uint32_t e = sorted_s[j];
    const uint32_t slab = e >> 16;
    const uint32_t dest = base[slab] + (j - offs[slab]);
    const size_t bucket = (size_t)cloud * w.slabs + slab;
    if (dest < w.cap) {
      w.ids[bucket * w.cap + dest] = (uint16_t)(e & 0xffffu);
    } else {
      atomicAdd(w.overflow + (size_t)cloud * cells + ((size_t)slab << w.shift) + (e & 0xffffu), 1u);
      w.spilled[bucket] = 1u;
    }
  }

  // Dropped points: one atomic per block and reason, only when non-zero.
  for (int offset = 16; offset > 0; offset >>= 1) {
    nonfinite += __shfl_xor_sync(0xffffffffu, nonfinite, offset);
    outside += __shfl_xor_sync(0xffffffffu, outside, offset);
  }
  __syncthreads();  // scratch is reused
  if (lane == 0) {
    scratch[2 * warp] = nonfinite;
    scratch[2 * warp + 1] = outside;
  }
  __syncthreads();
  if (tid < 2) {
    unsigned long long sum = 0;
    for (uint32_t k = 0; k < GS_VOXELIZE_BIN_THREADS / 32; k++) sum += scratch[2 * k + tid];
    if (sum) atomicAdd(w.dropped + 2 * (size_t)cloud + tid, sum);
  }
}

// One block per (slab blockIdx.x, cloud blockIdx.y): counts the slab's
// bucket in shared memory (2^shift counters, dynamic) and writes the slab's
// part of the grid, adding any overflow. Re-zeroes the workspace words the
// bin kernel set; block 0 of each cloud also moves the dropped counts.
template <int MODE>
__global__ void __launch_bounds__(GS_VOXELIZE_SLAB_THREADS)
    gs_voxelize_slab_kernel(gs_voxelize_params p, gs_voxelize_cuda_buffers b,
                            gs_voxelize_bins w) {
  extern __shared__ uint32_t gs_voxelize_slab_counts[];
  const uint32_t slab = blockIdx.x, cloud = blockIdx.y, tid = threadIdx.x;
  const uint64_t cells = (uint64_t)p.dims[0] * p.dims[1] * p.dims[2];
  const uint64_t start = (uint64_t)slab << w.shift;
  const uint32_t len =
      (uint32_t)(cells - start < (1ull << w.shift) ? cells - start : (1ull << w.shift));
  const size_t bucket = (size_t)cloud * w.slabs + slab;
  for (uint32_t j = tid; j < len; j += GS_VOXELIZE_SLAB_THREADS) gs_voxelize_slab_counts[j] = 0;
  const uint32_t reserved = w.cursor[bucket];
  const uint32_t n_ids = reserved < w.cap ? reserved : w.cap;
  const bool spilled = w.spilled[bucket] != 0;
  __syncthreads();  // everyone has read cursor and spilled
  if (tid == 0) {
    w.cursor[bucket] = 0;
    w.spilled[bucket] = 0;
  }
  if (slab == 0 && tid < 2) {
    b.dropped[2 * (size_t)cloud + tid] = w.dropped[2 * (size_t)cloud + tid];
    w.dropped[2 * (size_t)cloud + tid] = 0;
  }

#define GS_VOXELIZE_TALLY(id)                                                   \
  do {                                                                          \
    if (MODE == GS_VOXELIZE_COUNT)                                              \
      atomicAdd(gs_voxelize_slab_counts + (id), 1u);                            \
    else                                                                        \
      gs_voxelize_slab_counts[id] = 1u;                                         \
  } while (0)
#define GS_VOXELIZE_TALLY8(v)                                                   \
  do {                                                                          \
    GS_VOXELIZE_TALLY((v).x & 0xffffu); GS_VOXELIZE_TALLY((v).x >> 16);         \
    GS_VOXELIZE_TALLY((v).y & 0xffffu); GS_VOXELIZE_TALLY((v).y >> 16);         \
    GS_VOXELIZE_TALLY((v).z & 0xffffu); GS_VOXELIZE_TALLY((v).z >> 16);         \
    GS_VOXELIZE_TALLY((v).w & 0xffffu); GS_VOXELIZE_TALLY((v).w >> 16);         \
  } while (0)
  // Buckets start 16-byte aligned (cap % 8 == 0): eight ids per load, two
  // loads in flight per thread.
  const uint16_t *ids = w.ids + bucket * w.cap;
  const uint4 *ids8 = reinterpret_cast<const uint4 *>(ids);
  const uint32_t octs = n_ids / 8;
  uint32_t q = tid;
  for (; q + GS_VOXELIZE_SLAB_THREADS < octs; q += 2 * GS_VOXELIZE_SLAB_THREADS) {
    const uint4 v = __ldcs(ids8 + q), v2 = __ldcs(ids8 + q + GS_VOXELIZE_SLAB_THREADS);
    GS_VOXELIZE_TALLY8(v);
    GS_VOXELIZE_TALLY8(v2);
  }
  for (; q < octs; q += GS_VOXELIZE_SLAB_THREADS) {
    const uint4 v = __ldcs(ids8 + q);
    GS_VOXELIZE_TALLY8(v);
  }
  for (uint32_t j = 8 * octs + tid; j < n_ids; j += GS_VOXELIZE_SLAB_THREADS)
    GS_VOXELIZE_TALLY(ids[j]);
#undef GS_VOXELIZE_TALLY8
#undef GS_VOXELIZE_TALLY
  __syncthreads();

  uint32_t *grid = static_cast<uint32_t *>(b.out) + (size_t)cloud * cells + start;
  uint32_t *over = w.overflow + (size_t)cloud * cells + start;
  for (uint32_t j = tid; j < len; j += GS_VOXELIZE_SLAB_THREADS) {
    uint32_t v = gs_voxelize_slab_counts[j];
    if (spilled) {
      v += over[j];
      over[j] = 0;
    }
    grid[j] = MODE == GS_VOXELIZE_COUNT ? v : (uint32_t)(v != 0);
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
// (each cloud at least one) and `shared_bytes` of dynamic shared memory,
// in the buffers' generation of kernels.
template <int MODE, bool SHARED>
static cudaError_t gs_voxelize_launch_points(const gs_voxelize_params *p,
                                             const gs_voxelize_cuda_buffers *b, uint64_t blocks,
                                             size_t shared_bytes, cudaStream_t stream) {
  const uint64_t per_cloud = blocks / b->clouds > 0 ? blocks / b->clouds : 1;
  const uint64_t work = b->n / 4 > 0 ? b->n / 4 : 1;
  const dim3 grid(gs_voxelize_blocks(work, per_cloud), b->clouds, 1);
  if (b->kernels == 1)
    gs_voxelize_points_kernel<MODE, SHARED, false>
        <<<grid, GS_VOXELIZE_THREADS, shared_bytes, stream>>>(*p, *b);
  else
    gs_voxelize_points_kernel<MODE, SHARED, true>
        <<<grid, GS_VOXELIZE_THREADS, shared_bytes, stream>>>(*p, *b);
  return cudaGetLastError();
}

// Where the binned path keeps what in the workspace, for clouds x n points.
struct gs_voxelize_bin_plan {
  uint32_t shift, slabs, cap;
  uint64_t dropped, cursor, spilled, overflow, ids, bytes;  // byte offsets, total
};

static uint64_t gs_voxelize_align256(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

// True when the step takes the binned path, with its workspace layout in
// *plan. The rule (docs/workloads/voxelize.md): count or occupancy, a grid
// larger than the shared-memory path's and of at most 256 slabs of 2^15
// cells, and (unless `always`) at least GS_VOXELIZE_BIN_MIN_POINTS points
// in the step.
static bool gs_voxelize_plan_bins(const gs_voxelize_params *p, uint64_t n, uint64_t clouds,
                                  bool always, gs_voxelize_bin_plan *plan) {
  const uint64_t cells = (uint64_t)p->dims[0] * p->dims[1] * p->dims[2];
  if (p->mode != GS_VOXELIZE_COUNT && p->mode != GS_VOXELIZE_OCCUPANCY) return false;
  if (cells <= GS_VOXELIZE_SHARED_CELLS || n < 1 || clouds < 1) return false;
  bool want = always || n * clouds >= GS_VOXELIZE_BIN_MIN_POINTS;
  const char *force = getenv("GS_VOXELIZE_BINNED");  // measurement only
  if (force != NULL) want = force[0] == '1';
  if (!want) return false;
  uint32_t log2 = 0;
  while ((1ull << log2) < cells) log2++;
  // At most 256 slabs: enough blocks for the slab kernel, few enough for
  // one histogram entry per binning thread.
  const uint32_t shift = log2 > 8 ? log2 - 8 : 0;
  if (shift > GS_VOXELIZE_SLAB_MAX_SHIFT) return false;
  plan->shift = shift;
  plan->slabs = (uint32_t)((cells + (1ull << shift) - 1) >> shift);
  // Twice the uniform share plus one full chunk; fuller buckets overflow.
  const uint64_t cap = (2 * ((n + plan->slabs - 1) / plan->slabs) + GS_VOXELIZE_BIN_CHUNK + 7) / 8 * 8;
  if (cap > UINT32_MAX) return false;
  plan->cap = (uint32_t)cap;
  const uint64_t buckets = clouds * plan->slabs;
  plan->dropped = 0;
  plan->cursor = gs_voxelize_align256(clouds * 2 * sizeof(unsigned long long));
  plan->spilled = plan->cursor + gs_voxelize_align256(buckets * sizeof(uint32_t));
  plan->overflow = plan->spilled + gs_voxelize_align256(buckets * sizeof(uint32_t));
  plan->ids = plan->overflow + gs_voxelize_align256(clouds * cells * sizeof(uint32_t));
  plan->bytes = plan->ids + gs_voxelize_align256(buckets * cap * sizeof(uint16_t));
  return true;
}

extern "C" uint64_t gs_voxelize_cuda_workspace_bytes(const gs_voxelize_params *p, uint64_t n,
                                                     uint64_t clouds, int always) {
  gs_voxelize_bin_plan plan;
  return gs_voxelize_plan_bins(p, n, clouds, always != 0, &plan) ? plan.bytes : 0;
}

// Enqueues the binning and slab kernels.
template <int MODE>
static cudaError_t gs_voxelize_launch_bins(const gs_voxelize_params *p,
                                           const gs_voxelize_cuda_buffers *b,
                                           const gs_voxelize_bin_plan *plan, cudaStream_t stream) {
  char *ws = static_cast<char *>(b->workspace);
  gs_voxelize_bins w;
  w.shift = plan->shift;
  w.slabs = plan->slabs;
  w.cap = plan->cap;
  w.dropped = reinterpret_cast<unsigned long long *>(ws + plan->dropped);
  w.cursor = reinterpret_cast<uint32_t *>(ws + plan->cursor);
  w.spilled = reinterpret_cast<uint32_t *>(ws + plan->spilled);
  w.overflow = reinterpret_cast<uint32_t *>(ws + plan->overflow);
  w.ids = reinterpret_cast<uint16_t *>(ws + plan->ids);
  const size_t bin_smem =
      (2 * GS_VOXELIZE_BIN_CHUNK + 4 * GS_VOXELIZE_MAX_SLABS + 1 + 2 * GS_VOXELIZE_BIN_THREADS / 32) *
      sizeof(uint32_t);
  const size_t slab_smem = ((size_t)1 << plan->shift) * sizeof(uint32_t);
  GS_VOXELIZE_TRY_CUDA(cudaFuncSetAttribute(gs_voxelize_bin_kernel<MODE>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)bin_smem));
  GS_VOXELIZE_TRY_CUDA(cudaFuncSetAttribute(gs_voxelize_slab_kernel<MODE>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)slab_smem));
  if (b->kernels == 1) {
    const dim3 bin_grid((unsigned int)((b->n + GS_VOXELIZE_BIN_CHUNK - 1) / GS_VOXELIZE_BIN_CHUNK),
                        b->clouds, 1);
    gs_voxelize_bin_kernel<MODE><<<bin_grid, GS_VOXELIZE_BIN_THREADS, bin_smem, stream>>>(*p, *b, w);
    GS_VOXELIZE_TRY_CUDA(cudaGetLastError());
  } else {
    GS_VOXELIZE_TRY_CUDA(gs_voxelize_launch_bin2(p, b, &w, stream));
  }
  const dim3 slab_grid(plan->slabs, b->clouds, 1);
  gs_voxelize_slab_kernel<MODE><<<slab_grid, GS_VOXELIZE_SLAB_THREADS, slab_smem, stream>>>(*p, *b, w);
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
      b->point_stride < 3 * b->n || b->sm_count < 1 || b->max_threads_per_sm < 1 ||
      (b->kernels != 1 && b->kernels != 2))
    return cudaErrorInvalidValue;

  // The binned path writes every grid element and dropped count itself.
  gs_voxelize_bin_plan plan;
  if (b->workspace != NULL && gs_voxelize_plan_bins(p, b->n, b->clouds, true, &plan) &&
      b->workspace_bytes >= plan.bytes)
    return p->mode == GS_VOXELIZE_COUNT
               ? gs_voxelize_launch_bins<GS_VOXELIZE_COUNT>(p, b, &plan, stream)
               : gs_voxelize_launch_bins<GS_VOXELIZE_OCCUPANCY>(p, b, &plan, stream);

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
