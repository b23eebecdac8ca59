/* The llm's decode GEMVs (see llm_cuda.h): y (+)= x w^T for a few rows,
 * bound by streaming the weights once per step. The SIMT GEMV takes one
 * weight row per warp; the tensor-core GEMV 16 rows per block, its warps
 * splitting K, each warp holding a ring of k-blocks in registers; its
 * SwiGLU form writes silu(gate) * up of the MLP's gate/up projection
 * directly; either may take a split RMSNorm's halves (llm_cuda.h). */
#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "workloads/llm/llm_cuda.h"
#include "workloads/llm/llm_cuda_common.h"

#define GS_LLM_GEMV_WARPS 8 /* rows of the output per GEMV block */
#define GS_LLM_MMA_WARPS 8 /* warps of a tensor-core GEMV block; they split K */
/* k-blocks per warp of the tensor-core GEMV asked for before the
 * predecessor ends: 1 made the step fastest of 0, 1, 2, 4, 8 and 16
 * (docs/workloads/llm.md, Speed). */
#define GS_LLM_MMA_PREFETCH 1
/* k-blocks in a warp's register ring of the tensor-core GEMV, by column
 * tiles: 4 for one tile (118 registers, 2 blocks per SM), 2 for two (a
 * 4-deep ring would take 160 registers, one block per SM). */
#define GS_LLM_MMA_RING(nt) ((nt) == 1 ? 4 : 2)

static __device__ __forceinline__ float dot8(uint4 a, uint4 b) {
  const __nv_bfloat162 *pa = reinterpret_cast<const __nv_bfloat162 *>(&a);
  const __nv_bfloat162 *pb = reinterpret_cast<const __nv_bfloat162 *>(&b);
  float acc = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; i++) {
    float2 fa = __bfloat1622float2(pa[i]), fb = __bfloat1622float2(pb[i]);
    acc = fmaf(fa.x, fb.x, acc);
    acc = fmaf(fa.y, fb.y, acc);
  }
  return acc;
}

/* One warp per output row; each lane streams 16-byte chunks of the row,
 * several of them in flight, and applies each to all ROWS inputs
 * (which stay in L1/L2: they are a few KiB). */
template <int ROWS>
__global__ void __launch_bounds__(GS_LLM_GEMV_WARPS * 32)
    gs_llm_gemv_kernel(const uint16_t *w, const uint16_t *x, float *y, int outs, int ins,
                       int accumulate) {
  // 16-byte weight loads in flight per lane: more where each feeds less math.
  constexpr int GS_LLM_GEMV_UNROLL = ROWS == 1 ? 8 : 4;
  int lane = threadIdx.x & 31;
  int o = blockIdx.x * GS_LLM_GEMV_WARPS + (threadIdx.x >> 5);
  int chunks = ins / 8;
  const uint4 *wrow = reinterpret_cast<const uint4 *>(w + (uint64_t)(o < outs ? o : 0) * ins);
  // The weights do not depend on the predecessor: the first 4 KiB of the
  // row are on their way while it finishes.
  if (o < outs && lane * 8 < chunks) prefetch_l2(wrow + lane * 8);
  start_after_predecessor();
  if (o >= outs) return;
  const uint4 *xv = reinterpret_cast<const uint4 *>(x);
  float acc[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; r++) acc[r] = 0.0f;
  for (int base = lane; base < chunks; base += 32 * GS_LLM_GEMV_UNROLL) {
    uint4 wv[GS_LLM_GEMV_UNROLL];
#pragma unroll
    for (int u = 0; u < GS_LLM_GEMV_UNROLL; u++) {
      int c = base + u * 32;
      wv[u] = c < chunks ? __ldcs(wrow + c) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < GS_LLM_GEMV_UNROLL; u++) {
      int c = base + u * 32;
      if (c < chunks) {
#pragma unroll
        for (int r = 0; r < ROWS; r++) acc[r] += dot8(wv[u], __ldg(xv + (uint64_t)r * chunks + c));
      }
    }
  }
#pragma unroll
  for (int r = 0; r < ROWS; r++) {
    float v = warp_sum(acc[r]);
    if (lane == 0) {
      float *dst = y + (uint64_t)r * outs + o;
      *dst = accumulate ? *dst + v : v;
    }
  }
}

static __device__ __forceinline__ void mma_bf16_16816(float *c, uint32_t a0, uint32_t a1,
                                                      uint32_t a2, uint32_t a3, uint32_t b0,
                                                      uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* One k-block of 64 for the tensor-core GEMV: this lane's 16 weights of
 * rows A and B and 16 inputs of its column in each of the NT column
 * tiles (8 sequences each), all at k offset 16 c. */
template <int NT>
struct mma_operands {
  uint4 a_lo, a_hi, b_lo, b_hi;
  uint4 x_lo[NT], x_hi[NT];
};

/* Loads the operands at k; x_tiles has bit t set where this lane's column
 * of tile t is a sequence (8 t + g < rows), x_step = 8 ins. */
template <int NT>
static __device__ __forceinline__ void mma_load(mma_operands<NT> *o, const uint16_t *wa,
                                                const uint16_t *wb, const uint16_t *xn,
                                                uint64_t x_step, unsigned x_tiles, int k) {
  o->a_lo = __ldcs(reinterpret_cast<const uint4 *>(wa + k));
  o->a_hi = __ldcs(reinterpret_cast<const uint4 *>(wa + k + 8));
  o->b_lo = __ldcs(reinterpret_cast<const uint4 *>(wb + k));
  o->b_hi = __ldcs(reinterpret_cast<const uint4 *>(wb + k + 8));
#pragma unroll
  for (int t = 0; t < NT; t++) {
    const bool has_x = (x_tiles >> t) & 1u;
    const uint16_t *xt = xn + t * x_step + k;
    o->x_lo[t] = has_x ? __ldg(reinterpret_cast<const uint4 *>(xt)) : make_uint4(0, 0, 0, 0);
    o->x_hi[t] = has_x ? __ldg(reinterpret_cast<const uint4 *>(xt + 8)) : make_uint4(0, 0, 0, 0);
  }
}

/* Four m16n8k16 products per column tile over one k-block. A dot product
 * does not care in which order k is summed, so the fragments take k in the
 * order the lane loaded it: logical k (2c, 2c+1, 2c+8, 2c+9) of sub-product
 * s is physical 16c + 4s + (0, 1, 2, 3), the same map for weights and
 * inputs. */
template <int NT>
static __device__ __forceinline__ void mma_block(float (*acc)[4], const mma_operands<NT> *o) {
#pragma unroll
  for (int t = 0; t < NT; t++) {
    mma_bf16_16816(acc[t], o->a_lo.x, o->b_lo.x, o->a_lo.y, o->b_lo.y, o->x_lo[t].x,
                   o->x_lo[t].y);
    mma_bf16_16816(acc[t], o->a_lo.z, o->b_lo.z, o->a_lo.w, o->b_lo.w, o->x_lo[t].z,
                   o->x_lo[t].w);
    mma_bf16_16816(acc[t], o->a_hi.x, o->b_hi.x, o->a_hi.y, o->b_hi.y, o->x_hi[t].x,
                   o->x_hi[t].y);
    mma_bf16_16816(acc[t], o->a_hi.z, o->b_hi.z, o->a_hi.w, o->b_hi.w, o->x_hi[t].z,
                   o->x_hi[t].w);
  }
}

/* The weight row behind local row r (0..15) of GEMV block `block`, or -1
 * past the end. Plain: rows 16 block + r. SWIGLU (outs = 2 ffn rows, gate
 * then up): r < 8 is gate row 8 block + r, r >= 8 the up row of the same
 * FFN column, so a block holds both halves of 8 SwiGLU inputs. */
template <bool SWIGLU>
static __device__ __forceinline__ int mma_weight_row(int block, int r, int outs) {
  if (!SWIGLU) {
    int row = block * 16 + r;
    return row < outs ? row : -1;
  }
  int ffn = outs / 2, j = block * 8 + (r & 7);
  if (j >= ffn) return -1;
  return r < 8 ? j : ffn + j;
}

/* The consumer half of a split norm: the scale of sequence col's outputs. */
static __device__ __forceinline__ float norm_scale(gs_llm_cuda_norm_in nin, int col, int ins) {
  return rsqrtf(nin.squares[col] / (float)ins + nin.eps);
}

/* Tensor-core GEMV for 1..8 NT rows (NT = 1 or 2, up to GS_LLM_MMA_MAX_ROWS): a block computes 16 outputs for all
 * rows (NT column tiles of an m16n8k16 product, 8 rows each; columns past
 * `rows` read zeros); its warps split K into contiguous ranges of
 * 64-blocks and add their partial sums through shared memory. Lane (g =
 * lane / 4, c = lane % 4) streams 32 bytes of weight rows g and g + 8 per
 * k-block, so the four lanes of a row read one full 128-byte line, and
 * the inputs of row 8 t + g of each tile t; the loads of the ring's last
 * k-block are issued before the products of its first. Requires
 * ins % 64 == 0.
 * Plain: y (rows x outs floats) (+)= the products. SWIGLU: the block's
 * rows are gate and up of 8 FFN columns (mma_weight_row) and it writes
 * act[r][j] = bf16(silu(gate) * up) (rows x outs / 2) instead, the same
 * values as the products followed by gs_llm_swiglu_kernel. */
template <bool SWIGLU, int NT>
__global__ void __launch_bounds__(GS_LLM_MMA_WARPS * 32, 2)
    gs_llm_gemv_mma_kernel(const uint16_t *w, const uint16_t *x, float *y, uint16_t *act,
                           int rows, int outs, int ins, int accumulate, gs_llm_cuda_norm_in nin,
                           gs_llm_cuda_norm_out nout) {
  __shared__ float partial[GS_LLM_MMA_WARPS][16][8 * NT];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int g = lane >> 2, c = lane & 3;
  int ra = mma_weight_row<SWIGLU>(blockIdx.x, g, outs);
  int rb = mma_weight_row<SWIGLU>(blockIdx.x, g + 8, outs);
  // Rows past the end read row 0 (valid memory); their sums are dropped.
  const uint16_t *wa = w + (uint64_t)(ra >= 0 ? ra : 0) * ins + 16 * c;
  const uint16_t *wb = w + (uint64_t)(rb >= 0 ? rb : 0) * ins + 16 * c;
  unsigned x_tiles = 0;
#pragma unroll
  for (int t = 0; t < NT; t++)
    if (8 * t + g < rows) x_tiles |= 1u << t;
  const uint16_t *xn = x + (uint64_t)g * ins + 16 * c;
  const uint64_t x_step = 8 * (uint64_t)ins;
  int kblocks = ins / 64;
  int per = (kblocks + GS_LLM_MMA_WARPS - 1) / GS_LLM_MMA_WARPS;
  int kb = warp * per, kend = min(kblocks, kb + per);
  // The weights do not depend on the predecessor: the warp's first
  // GS_LLM_MMA_PREFETCH k-blocks of its 16 rows are on their way while it
  // finishes (one 128-byte line per row and k-block).
  for (int i = lane; i < 16 * GS_LLM_MMA_PREFETCH; i += 32) {
    int row = mma_weight_row<SWIGLU>(blockIdx.x, i & 15, outs), k = kb + (i >> 4);
    if (row >= 0 && k < kend) prefetch_l2(w + (uint64_t)row * ins + (uint64_t)k * 64);
  }
  start_after_predecessor();
  float acc[NT][4];
#pragma unroll
  for (int t = 0; t < NT; t++) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
  // A ring of S k-blocks in registers: the loads of k-block k + S - 1 are
  // issued before the products of k-block k; the ring is indexed by
  // compile-time constants only. With the norms split over the GEMVs the
  // 4-deep ring of one tile made the whole step 2-3% faster than the
  // 2-deep one (docs/workloads/llm.md, Speed).
  constexpr int S = GS_LLM_MMA_RING(NT);
  mma_operands<NT> ring[S];
#pragma unroll
  for (int i = 0; i < S - 1; i++)
    if (kb + i < kend) mma_load(&ring[i], wa, wb, xn, x_step, x_tiles, (kb + i) * 64);
  for (; kb < kend; kb += S) {
#pragma unroll
    for (int i = 0; i < S; i++) {
      if (kb + i < kend) {
        if (kb + i + S - 1 < kend)
          mma_load(&ring[(i + S - 1) % S], wa, wb, xn, x_step, x_tiles, (kb + i + S - 1) * 64);
        mma_block(acc, &ring[i]);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < NT; t++) {
    partial[warp][g][8 * t + 2 * c] = acc[t][0];
    partial[warp][g][8 * t + 2 * c + 1] = acc[t][1];
    partial[warp][g + 8][8 * t + 2 * c] = acc[t][2];
    partial[warp][g + 8][8 * t + 2 * c + 1] = acc[t][3];
  }
  __syncthreads();
  if (SWIGLU) {
    // Thread i: FFN column i % 8 of the block, sequence i / 8.
    const int ffn = outs / 2;
    for (int i = threadIdx.x; i < 8 * 8 * NT; i += blockDim.x) {
      int orow = i & 7, col = i >> 3, j = blockIdx.x * 8 + orow;
      if (col >= rows || j >= ffn) continue;
      float gate = 0.0f, up = 0.0f;
#pragma unroll
      for (int p = 0; p < GS_LLM_MMA_WARPS; p++) {
        gate += partial[p][orow][col];
        up += partial[p][orow + 8][col];
      }
      if (nin.squares) {
        float scale = norm_scale(nin, col, ins);
        gate *= scale;
        up *= scale;
      }
      act[(uint64_t)col * ffn + j] = swiglu_value(gate, up);
    }
    return;
  }
  // Thread i: output i % 16 of the block, sequence i / 16 (16 * 8 * NT <=
  // the block's threads: one pass; the 16 lanes of a sequence are
  // consecutive, so a half-warp sums their squares).
  static_assert(16 * 8 * NT <= GS_LLM_MMA_WARPS * 32, "one output per thread");
  const int i = threadIdx.x, orow = i & 15, col = i >> 4, o = blockIdx.x * 16 + orow;
  if (i >= 16 * 8 * NT) return;
  const bool valid = col < rows && o < outs;
  float value = 0.0f;
  if (valid) {
    float sum = 0.0f;
#pragma unroll
    for (int p = 0; p < GS_LLM_MMA_WARPS; p++) sum += partial[p][orow][col];
    if (nin.squares) sum *= norm_scale(nin, col, ins);
    float *dst = y + (uint64_t)col * outs + o;
    value = accumulate ? *dst + sum : sum;
    *dst = value;
    if (nout.w) nout.u[(uint64_t)col * outs + o] = float_to_bf16(value * bf16_to_float(nout.w[o]));
  }
  if (nout.w) {
    float sq = value * value;
    for (int off = 8; off > 0; off >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, off);
    if ((i & 15) == 0 && col < rows) atomicAdd(nout.squares + col, sq);
  }
}

/* The tensor-core GEMV instance for `rows` rows: ceil(rows / 8) column
 * tiles. */
template <bool SWIGLU>
static void (*mma_kernel(int rows))(const uint16_t *, const uint16_t *, float *, uint16_t *, int,
                                    int, int, int, gs_llm_cuda_norm_in, gs_llm_cuda_norm_out) {
  static_assert(GS_LLM_MMA_MAX_ROWS == 16, "one instance per column tile");
  return rows <= 8 ? gs_llm_gemv_mma_kernel<SWIGLU, 1> : gs_llm_gemv_mma_kernel<SWIGLU, 2>;
}

extern "C" cudaError_t gs_llm_cuda_gemv_mma_norm(const uint16_t *w, const uint16_t *x, float *y,
                                                 int rows, int outs, int ins, int accumulate,
                                                 const gs_llm_cuda_norm_in *in,
                                                 const gs_llm_cuda_norm_out *out,
                                                 gs_llm_cuda_queue q) {
  if (rows < 1 || rows > GS_LLM_MMA_MAX_ROWS || ins % 64 != 0 || (out && !accumulate))
    return cudaErrorInvalidValue;
  const gs_llm_cuda_norm_in nin = in ? *in : gs_llm_cuda_norm_in{};
  const gs_llm_cuda_norm_out nout = out ? *out : gs_llm_cuda_norm_out{};
  return launch(q, mma_kernel<false>(rows), (outs + 15) / 16, GS_LLM_MMA_WARPS * 32, 0, w, x, y,
                (uint16_t *)NULL, rows, outs, ins, accumulate, nin, nout);
}

extern "C" cudaError_t gs_llm_cuda_gemv_mma(const uint16_t *w, const uint16_t *x, float *y,
                                            int rows, int outs, int ins, int accumulate,
                                            gs_llm_cuda_queue q) {
  return gs_llm_cuda_gemv_mma_norm(w, x, y, rows, outs, ins, accumulate, NULL, NULL, q);
}

extern "C" cudaError_t gs_llm_cuda_gemv_mma_swiglu_norm(const uint16_t *w, const uint16_t *x,
                                                        uint16_t *out, int rows, int ffn, int ins,
                                                        const gs_llm_cuda_norm_in *in,
                                                        gs_llm_cuda_queue q) {
  if (rows < 1 || rows > GS_LLM_MMA_MAX_ROWS || ins % 64 != 0) return cudaErrorInvalidValue;
  const gs_llm_cuda_norm_in nin = in ? *in : gs_llm_cuda_norm_in{};
  return launch(q, mma_kernel<true>(rows), (ffn + 7) / 8, GS_LLM_MMA_WARPS * 32, 0, w, x,
                (float *)NULL, out, rows, 2 * ffn, ins, 0, nin, gs_llm_cuda_norm_out{});
}

extern "C" cudaError_t gs_llm_cuda_gemv_mma_swiglu(const uint16_t *w, const uint16_t *x,
                                                   uint16_t *out, int rows, int ffn, int ins,
                                                   gs_llm_cuda_queue q) {
  return gs_llm_cuda_gemv_mma_swiglu_norm(w, x, out, rows, ffn, ins, NULL, q);
}

extern "C" cudaError_t gs_llm_cuda_gemv(const uint16_t *w, const uint16_t *x, float *y, int rows,
                                        int outs, int ins, int accumulate, gs_llm_cuda_queue q) {
  static void (*const kernels[])(const uint16_t *, const uint16_t *, float *, int, int, int) = {
      gs_llm_gemv_kernel<1>, gs_llm_gemv_kernel<2>, gs_llm_gemv_kernel<3>, gs_llm_gemv_kernel<4>,
      gs_llm_gemv_kernel<5>, gs_llm_gemv_kernel<6>, gs_llm_gemv_kernel<7>, gs_llm_gemv_kernel<8>};
  if (rows < 1 || rows > 8) return cudaErrorInvalidValue;
  return launch(q, kernels[rows - 1], (outs + GS_LLM_GEMV_WARPS - 1) / GS_LLM_GEMV_WARPS,
                GS_LLM_GEMV_WARPS * 32, 0, w, x, y, outs, ins, accumulate);
}
