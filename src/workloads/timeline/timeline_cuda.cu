/* CUDA kernel for the timeline workloads and its launcher. One block holds
 * a tile of target rows of one batch element (blockIdx.y). First each warp
 * locates targets in the streams' times with a 32-way search (one ballot
 * per round: 500 samples take 2 rounds) and leaves the row indices and
 * weights in shared memory; then the block writes the tile's output values
 * with vector loads and stores of up to 16 bytes. The float operations
 * repeat gs_timeline_locate and gs_timeline_lerp of timeline_cpu.c with
 * the rounding spelled out, so both agree bit for bit in float32. */
#include <stdint.h>
#include <string.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "workloads/timeline/timeline_cuda.h"

#define GS_TIMELINE_THREADS 256
#define GS_TIMELINE_WARPS (GS_TIMELINE_THREADS / 32)
// Vector elements per block that keep 256 threads busy for a few rounds.
#define GS_TIMELINE_TILE_ITEMS 2048u
#define GS_TIMELINE_MAX_ROWS 64u

// Where one target falls in one stream (see gs_timeline_locate).
struct gs_timeline_spot {
  uint32_t lo, hi;
  float w;
};

extern __shared__ gs_timeline_spot gs_timeline_spots[];

// Upper bound of t in times[0, samples) by the whole warp: each round the
// 32 lanes probe 32 evenly spaced positions and one ballot narrows the range
// to one gap. Returns the count of times <= t on every lane.
__device__ __forceinline__ uint32_t gs_timeline_warp_count(const float *times, uint32_t samples,
                                                           float t, uint32_t lane) {
  uint32_t begin = 0, end = samples;
  while (begin < end) {
    const uint32_t step = (end - begin + 31u) / 32u;
    const uint32_t probe = begin + (lane + 1u) * step - 1u;
    const bool le = probe < end && __ldg(times + probe) <= t;
    const uint32_t below = (uint32_t)__popc(__ballot_sync(0xffffffffu, le));
    const uint32_t next_end = begin + (below + 1u) * step - 1u;
    begin += below * step;
    end = next_end < end ? next_end : end;
  }
  return begin;
}

__device__ __forceinline__ float gs_timeline_to_float(float v) { return v; }
__device__ __forceinline__ float gs_timeline_to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ __forceinline__ void gs_timeline_from_float(float v, float *out) { *out = v; }
__device__ __forceinline__ void gs_timeline_from_float(float v, __nv_bfloat16 *out) {
  *out = __float2bfloat16_rn(v);
}

template <typename Elem, int VEC>
struct __align__(sizeof(Elem) * VEC) gs_timeline_vec {
  Elem v[VEC];
};

// A read-only load of an aligned vector struct as the built-in vector of
// its size (one 2- to 16-byte load).
template <typename V>
__device__ __forceinline__ V gs_timeline_load(const V *p) {
  V v;
  if constexpr (sizeof(V) == 16) {
    const uint4 raw = __ldg(reinterpret_cast<const uint4 *>(p));
    memcpy(&v, &raw, 16);
  } else if constexpr (sizeof(V) == 8) {
    const uint2 raw = __ldg(reinterpret_cast<const uint2 *>(p));
    memcpy(&v, &raw, 8);
  } else if constexpr (sizeof(V) == 4) {
    const unsigned int raw = __ldg(reinterpret_cast<const unsigned int *>(p));
    memcpy(&v, &raw, 4);
  } else {
    const unsigned short raw = __ldg(reinterpret_cast<const unsigned short *>(p));
    memcpy(&v, &raw, 2);
  }
  return v;
}

template <typename Elem, int VEC>
__global__ void __launch_bounds__(GS_TIMELINE_THREADS)
    gs_timeline_kernel(gs_timeline_cuda_buffers b, uint32_t rows_per_block) {
  typedef gs_timeline_vec<Elem, VEC> Vec;
  const uint32_t batch = blockIdx.y;
  const uint32_t row0 = blockIdx.x * rows_per_block;
  const uint32_t T = b.targets_count;
  const uint32_t ns = b.n_streams;
  const uint32_t rows = T - row0 < rows_per_block ? T - row0 : rows_per_block;
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;

  for (uint32_t job = warp; job < rows * ns; job += GS_TIMELINE_WARPS) {
    const uint32_t r = job / ns, s = job - r * ns;
    const gs_timeline_cuda_stream &st = b.streams[s];
    const float t = __ldg(b.targets + (uint64_t)batch * T + row0 + r);
    const float *times = st.times + (uint64_t)batch * st.samples;
    const uint32_t count = gs_timeline_warp_count(times, st.samples, t, lane);
    if (lane == 0) {
      gs_timeline_spot spot;
      if (count == 0 || count == st.samples) {
        spot.lo = spot.hi = count == 0 ? 0u : st.samples - 1u;
        spot.w = 0.0f;
      } else {
        const float t0 = __ldg(times + count - 1), t1 = __ldg(times + count);
        spot.lo = count - 1u;
        spot.hi = count;
        spot.w = __fdiv_rn(__fsub_rn(t, t0), __fsub_rn(t1, t0));
      }
      gs_timeline_spots[r * ns + s] = spot;
    }
  }
  __syncthreads();

  const uint32_t width_vecs = b.width / VEC;
  Elem *out = static_cast<Elem *>(b.out) + ((uint64_t)batch * T + row0) * b.width;
  for (uint32_t item = threadIdx.x; item < rows * width_vecs; item += GS_TIMELINE_THREADS) {
    const uint32_t r = item / width_vecs;
    const uint32_t col = (item - r * width_vecs) * VEC;
    uint32_t s = 0;
    while (s + 1 < ns && col >= b.streams[s + 1].column) s++;
    const gs_timeline_cuda_stream &st = b.streams[s];
    const gs_timeline_spot spot = gs_timeline_spots[r * ns + s];
    const Elem *data = static_cast<const Elem *>(st.data) + (uint64_t)batch * st.samples * st.dims;
    const uint32_t d = col - st.column;
    const Vec a = gs_timeline_load(reinterpret_cast<const Vec *>(data + (uint64_t)spot.lo * st.dims + d));
    const Vec c = gs_timeline_load(reinterpret_cast<const Vec *>(data + (uint64_t)spot.hi * st.dims + d));
    Vec o;
#pragma unroll
    for (int k = 0; k < VEC; k++) {
      const float x = gs_timeline_to_float(a.v[k]), y = gs_timeline_to_float(c.v[k]);
      gs_timeline_from_float(__fadd_rn(x, __fmul_rn(spot.w, __fsub_rn(y, x))), &o.v[k]);
    }
    *reinterpret_cast<Vec *>(out + (uint64_t)r * b.width + col) = o;
  }
}

// ---- launcher ------------------------------------------------------------------

template <typename Elem>
static cudaError_t gs_timeline_launch(const gs_timeline_cuda_buffers *b, int vec, dim3 grid,
                                      uint32_t rows, size_t shared, cudaStream_t stream) {
  switch (vec) {
    case 8: gs_timeline_kernel<Elem, 8><<<grid, GS_TIMELINE_THREADS, shared, stream>>>(*b, rows); break;
    case 4: gs_timeline_kernel<Elem, 4><<<grid, GS_TIMELINE_THREADS, shared, stream>>>(*b, rows); break;
    case 2: gs_timeline_kernel<Elem, 2><<<grid, GS_TIMELINE_THREADS, shared, stream>>>(*b, rows); break;
    default: gs_timeline_kernel<Elem, 1><<<grid, GS_TIMELINE_THREADS, shared, stream>>>(*b, rows); break;
  }
  return cudaGetLastError();
}

extern "C" cudaError_t gs_timeline_cuda_step(const gs_timeline_cuda_buffers *b,
                                             cudaStream_t stream) {
  if (b->n_streams < 1 || b->n_streams > GS_TIMELINE_MAX_STREAMS || b->batch < 1 ||
      b->batch > GS_TIMELINE_MAX_BATCH || b->targets_count < 1 ||
      b->targets_count > GS_TIMELINE_MAX_TARGETS || b->width < 1)
    return cudaErrorInvalidValue;
  const size_t elem = b->dtype == GS_TIMELINE_BF16 ? 2 : 4;
  // The widest vector (at most 16 bytes) that divides every stream's dims,
  // so that no vector crosses a stream and every access is aligned.
  int vec = (int)(16 / elem);
  for (uint32_t s = 0; s < b->n_streams; s++) {
    const gs_timeline_cuda_stream *st = &b->streams[s];
    if (st->samples < 1 || st->samples > GS_TIMELINE_MAX_SAMPLES || st->dims < 1 ||
        st->dims > GS_TIMELINE_MAX_DIMS || (uint64_t)st->samples * st->dims > UINT32_MAX)
      return cudaErrorInvalidValue;
    while (st->dims % (uint32_t)vec != 0) vec /= 2;
  }
  const uint32_t width_vecs = b->width / (uint32_t)vec;
  uint32_t rows = GS_TIMELINE_TILE_ITEMS / width_vecs;
  if (rows < 1) rows = 1;
  if (rows > GS_TIMELINE_MAX_ROWS) rows = GS_TIMELINE_MAX_ROWS;
  // Fewer rows per block where that is what fills every SM with eight
  // blocks (64 warps): the searches are chains of dependent loads, so many
  // warps in flight hide their latency (H200, resample B=32 S=500 T=256
  // D=256 bf16: 11.6 us median per step with two blocks per SM, 9.0 us
  // with eight).
  const uint64_t all_rows = (uint64_t)b->batch * b->targets_count;
  const uint64_t want_blocks = 8ull * (uint64_t)(b->sm_count > 0 ? b->sm_count : 1);
  if (all_rows / rows < want_blocks) {
    uint64_t fewer = (all_rows + want_blocks - 1) / want_blocks;
    rows = fewer < rows ? (uint32_t)(fewer > 0 ? fewer : 1) : rows;
  }
  if (rows > b->targets_count) rows = b->targets_count;
  const dim3 grid((b->targets_count + rows - 1) / rows, b->batch);
  const size_t shared = (size_t)rows * b->n_streams * sizeof(gs_timeline_spot);
  return b->dtype == GS_TIMELINE_BF16
             ? gs_timeline_launch<__nv_bfloat16>(b, vec, grid, rows, shared, stream)
             : gs_timeline_launch<float>(b, vec, grid, rows, shared, stream);
}
