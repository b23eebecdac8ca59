/* The second generation of voxelize's binning kernel (count and occupancy
 * on large grids; docs/workloads/voxelize.md, "Two generations"). The
 * first (voxelize_cuda.cu) gives each block one chunk of 8192 points and
 * runs its phases one after the other, loads, classification, a counting
 * sort in 66 KB of shared memory, copy-out, with 3 blocks per SM: while a
 * block sorts, its SM's share of the loads is idle. This one is persistent:
 * each block walks chunks of 4096 points (of every cloud) and issues the
 * loads of its next chunk into registers as soon as the current chunk is
 * classified, so they are in flight while it sorts and copies out; the
 * cells stay in registers (16 per thread; 80 registers, 3 blocks of 256
 * threads per SM, 20 KB of shared memory each), and the
 * division-free floor (voxelize_floor.h) takes the three divisions off
 * almost every point. Same buckets, ids, overflow and dropped counts as
 * the first generation, so the same slab kernel finishes the step and the
 * grids are the same. */
#include "workloads/voxelize/voxelize_cuda_common.h"

// Points per chunk, and per thread (in groups of four points: three
// 16-byte loads each).
#define GS_VOXELIZE_BIN2_CHUNK 4096u
#define GS_VOXELIZE_BIN2_GROUPS (GS_VOXELIZE_BIN2_CHUNK / 4 / GS_VOXELIZE_BIN_THREADS)

// The groups of four points of thread `tid` in chunk `item` (of `chunks`
// per cloud) into v; a group past the chunk's end is loaded point by point
// (a cloud's last group may end before its 16-byte boundary), missing
// points as zeros that the caller never classifies. Returns the chunk's
// point count.
__device__ __forceinline__ uint32_t gs_voxelize_bin2_load(const gs_voxelize_cuda_buffers &b,
                                                          uint64_t item, uint32_t chunks,
                                                          uint32_t tid,
                                                          float4 (&v)[GS_VOXELIZE_BIN2_GROUPS][3]) {
  const uint32_t cloud = (uint32_t)(item / chunks), chunk = (uint32_t)(item % chunks);
  const uint64_t first = (uint64_t)chunk * GS_VOXELIZE_BIN2_CHUNK;
  const uint32_t count =
      (uint32_t)(b.n - first < GS_VOXELIZE_BIN2_CHUNK ? b.n - first : GS_VOXELIZE_BIN2_CHUNK);
  // The chunk starts at a multiple of 4096 points: 16-byte aligned.
  const float *pts = b.points + (size_t)cloud * b.point_stride + 3 * first;
  const float4 *pts4 = reinterpret_cast<const float4 *>(pts);
#pragma unroll
  for (uint32_t k = 0; k < GS_VOXELIZE_BIN2_GROUPS; k++) {
    const uint32_t g = tid + k * GS_VOXELIZE_BIN_THREADS;
    if (4 * g + 4 <= count) {
#pragma unroll
      for (int j = 0; j < 3; j++) v[k][j] = __ldcs(pts4 + 3 * g + j);
    } else {
      float t[12];
#pragma unroll
      for (uint32_t j = 0; j < 12; j++) t[j] = 12 * g + j < 3 * count ? pts[12 * g + j] : 0.0f;
      v[k][0] = make_float4(t[0], t[1], t[2], t[3]);
      v[k][1] = make_float4(t[4], t[5], t[6], t[7]);
      v[k][2] = make_float4(t[8], t[9], t[10], t[11]);
    }
  }
  return count;
}

// Persistent: block blockIdx.x takes chunks blockIdx.x, + gridDim.x, ... of
// clouds x chunks. Per chunk: classify the 16 prefetched points, start the
// next chunk's loads, histogram by slab, reserve in the buckets, sort by
// slab in shared memory, copy the ids out in slab runs. The workspace is
// as the first generation leaves it (zero but for ids); hist is zero on
// entry to each chunk.
__global__ void __launch_bounds__(GS_VOXELIZE_BIN_THREADS, 3)
    gs_voxelize_bin2_kernel(gs_voxelize_params p, gs_voxelize_cuda_buffers b, gs_voxelize_bins w,
                            uint32_t chunks) {
  __shared__ uint32_t sorted_s[GS_VOXELIZE_BIN2_CHUNK];    // slab << 16 | id
  __shared__ uint32_t hist[GS_VOXELIZE_MAX_SLABS];
  __shared__ uint32_t offs[GS_VOXELIZE_MAX_SLABS + 1];
  __shared__ uint32_t cur[GS_VOXELIZE_MAX_SLABS];
  __shared__ uint32_t base[GS_VOXELIZE_MAX_SLABS];
  __shared__ uint32_t scratch[GS_VOXELIZE_BIN_THREADS / 32];

  const uint32_t tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const uint64_t cells = (uint64_t)p.dims[0] * p.dims[1] * p.dims[2];
  const uint64_t items = (uint64_t)chunks * b.clouds;
  const uint32_t mask = (1u << w.shift) - 1;
  const gs_voxelize_recip r = gs_voxelize_recip_of(p);

  if (tid < GS_VOXELIZE_MAX_SLABS) hist[tid] = 0;
  float4 v[GS_VOXELIZE_BIN2_GROUPS][3];
  uint64_t item = blockIdx.x;
  uint32_t count = item < items ? gs_voxelize_bin2_load(b, item, chunks, tid, v) : 0;
  __syncthreads();  // hist zero

  while (item < items) {
    const uint32_t cloud = (uint32_t)(item / chunks);
    uint32_t cell[4 * GS_VOXELIZE_BIN2_GROUPS];
    uint32_t nonfinite = 0, outside = 0;
#pragma unroll
    for (uint32_t k = 0; k < GS_VOXELIZE_BIN2_GROUPS; k++) {
      const uint32_t i = 4 * (tid + k * GS_VOXELIZE_BIN_THREADS);
      const float x[4] = {v[k][0].x, v[k][0].w, v[k][1].z, v[k][2].y};
      const float y[4] = {v[k][0].y, v[k][1].x, v[k][1].w, v[k][2].z};
      const float z[4] = {v[k][0].z, v[k][1].y, v[k][2].x, v[k][2].w};
#pragma unroll
      for (uint32_t j = 0; j < 4; j++) {
        uint32_t c = ~0u;
        if (i + j < count) {
          const gs_voxelize_class cl = gs_voxelize_classify_device<true>(p, r, x[j], y[j], z[j], &c);
          if (cl == GS_VOXELIZE_INSIDE)
            atomicAdd(hist + (c >> w.shift), 1u);
          else {
            c = ~0u;
            if (cl == GS_VOXELIZE_NONFINITE)
              nonfinite++;
            else
              outside++;
          }
        }
        cell[4 * k + j] = c;
      }
    }
    // The next chunk's loads, in flight through the phases below.
    const uint64_t next = item + gridDim.x;
    const uint32_t next_count = next < items ? gs_voxelize_bin2_load(b, next, chunks, tid, v) : 0;
    // Dropped points of this chunk: one atomic per warp and reason, only
    // when non-zero (every thread of the warp is here).
    nonfinite = __reduce_add_sync(0xffffffffu, nonfinite);
    outside = __reduce_add_sync(0xffffffffu, outside);
    if (lane == 0 && nonfinite)
      atomicAdd(w.dropped + 2 * (size_t)cloud, (unsigned long long)nonfinite);
    if (lane == 0 && outside)
      atomicAdd(w.dropped + 2 * (size_t)cloud + 1, (unsigned long long)outside);
    __syncthreads();  // hist complete; the previous chunk's copy-out done

    // Exclusive scan of the slab histogram (one slab per thread; hist is
    // zeroed for the next chunk as it is read), one reservation per
    // non-empty slab in its bucket.
    const uint32_t mine = tid < w.slabs ? hist[tid] : 0;
    if (tid < w.slabs) hist[tid] = 0;
    uint32_t incl = mine;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const uint32_t u = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= (uint32_t)d) incl += u;
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

    // Counting sort by slab inside the chunk, from the registers.
#pragma unroll
    for (uint32_t j = 0; j < 4 * GS_VOXELIZE_BIN2_GROUPS; j++) {
      const uint32_t c = cell[j];
      if (c != ~0u) {
        const uint32_t slab = c >> w.shift;
        sorted_s[atomicAdd(cur + slab, 1u)] = slab << 16 | (c & mask);
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
        atomicAdd(w.overflow + (size_t)cloud * cells + ((size_t)slab << w.shift) + (e & 0xffffu),
                  1u);
        w.spilled[bucket] = 1u;
      }
    }
    item = next;
    count = next_count;
  }
}

cudaError_t gs_voxelize_launch_bin2(const gs_voxelize_params *p, const gs_voxelize_cuda_buffers *b,
                                    const gs_voxelize_bins *w, cudaStream_t stream) {
  const uint64_t chunks = (b->n + GS_VOXELIZE_BIN2_CHUNK - 1) / GS_VOXELIZE_BIN2_CHUNK;
  const uint64_t items = chunks * b->clouds;
  int per_sm = 0;
  GS_VOXELIZE_TRY_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, gs_voxelize_bin2_kernel, GS_VOXELIZE_BIN_THREADS, 0));
  const uint64_t resident = (uint64_t)b->sm_count * (uint64_t)(per_sm > 0 ? per_sm : 1);
  const unsigned int grid = (unsigned int)(items < resident ? items : resident);
  if (chunks < 1 || chunks > UINT32_MAX || grid < 1) return cudaErrorInvalidValue;
  gs_voxelize_bin2_kernel<<<grid, GS_VOXELIZE_BIN_THREADS, 0, stream>>>(*p, *b, *w,
                                                                        (uint32_t)chunks);
  return cudaGetLastError();
}
