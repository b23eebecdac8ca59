/* CUDA kernels of the llm model (see llm_cuda.h). Decode is bound by
 * reading the weights once per step, so the GEMV streams each weight row
 * with 16-byte loads, several in flight per lane, and applies it to up to 8
 * sequences at once. The small per-row kernels (norm, rotary embedding,
 * attention over the cache, SwiGLU, argmax) mirror llm_cpu.c operation for
 * operation; rounding to bfloat16 happens at the same places. */
#include <math.h>
#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "workloads/llm/llm_cuda.h"
#include "workloads/llm/model.h"

#define GS_LLM_THREADS 256
#define GS_LLM_GEMV_WARPS 8 /* rows of the output per GEMV block */
#define GS_LLM_ATTN_THREADS 256
#define GS_LLM_MMA_WARPS 8 /* warps of a tensor-core GEMV block; they split K */

static __device__ __forceinline__ float bf16_to_float(uint16_t b) {
  return __uint_as_float((uint32_t)b << 16);
}

static __device__ __forceinline__ uint16_t float_to_bf16(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

static __device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

static __device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/* Sum (or max) over the block; every thread gets the result. `scratch` holds
 * 32 floats. */
static __device__ float block_reduce(float v, float *scratch, bool is_max) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = is_max ? warp_max(v) : warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : (is_max ? -INFINITY : 0.0f);
  v = is_max ? warp_max(v) : warp_sum(v);
  return v;
}

__global__ void gs_llm_init_weights_kernel(uint16_t *w, gs_llm_slice slice, uint64_t seed,
                                           uint32_t tensor, float scale, float offset) {
  const uint64_t n = slice.rows * slice.cols;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x)
    w[i] = gs_llm_weight_value(seed, tensor, gs_llm_slice_index(&slice, i), scale, offset);
}

__global__ void gs_llm_embed_kernel(const int32_t *tokens, const uint16_t *table, int hidden,
                                    float *h) {
  const uint16_t *row = table + (uint64_t)tokens[blockIdx.x] * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x)
    h[(uint64_t)blockIdx.x * hidden + i] = bf16_to_float(row[i]);
}

__global__ void gs_llm_rmsnorm_kernel(const float *h, const uint32_t *row_map, const uint16_t *w,
                                      int hidden, float eps, uint16_t *out) {
  __shared__ float scratch[32];
  uint64_t src = row_map ? row_map[blockIdx.x] : blockIdx.x;
  const float *x = h + src * hidden;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) sum += x[i] * x[i];
  sum = block_reduce(sum, scratch, false);
  float inv = rsqrtf(sum / (float)hidden + eps);
  for (int i = threadIdx.x; i < hidden; i += blockDim.x)
    out[(uint64_t)blockIdx.x * hidden + i] = float_to_bf16(x[i] * inv * bf16_to_float(w[i]));
}

__global__ void gs_llm_rope_cache_kernel(float *qkv, const uint32_t *slots,
                                         const uint32_t *positions, const float *rope,
                                         gs_llm_cuda_attn_shape s, uint16_t *k_cache,
                                         uint16_t *v_cache) {
  int half = s.head_dim / 2, qw = s.heads * s.head_dim, kvw = s.kv_heads * s.head_dim;
  float *row = qkv + (uint64_t)blockIdx.x * (qw + 2 * kvw);
  uint32_t pos = positions[blockIdx.x];
  uint64_t at = ((uint64_t)slots[blockIdx.x] * s.max_seq + pos) * kvw;
  int pairs = (s.heads + s.kv_heads) * half;
  for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
    int head = p / half, i = p % half;
    const float *cs = rope + ((uint64_t)pos * half + i) * 2;
    float c = cs[0], sn = cs[1];
    float *v = row + head * s.head_dim;
    float a = v[i], b = v[i + half];
    float ra = a * c - b * sn, rb = b * c + a * sn;
    if (head < s.heads) {
      v[i] = ra;
      v[i + half] = rb;
    } else {
      int k = (head - s.heads) * s.head_dim;
      k_cache[at + k + i] = float_to_bf16(ra);
      k_cache[at + k + i + half] = float_to_bf16(rb);
    }
  }
  for (int i = threadIdx.x; i < kvw; i += blockDim.x)
    v_cache[at + i] = float_to_bf16(row[qw + kvw + i]);
}

/* One block per (row, head), GS_LLM_ATTN_THREADS threads. Shared memory: the
 * query (head_dim floats), the scores (max_seq floats) and the partial
 * outputs of the position groups (2 x blockDim floats). Scores: one cached
 * position per thread, its key read with 16-byte loads when head_dim is a
 * multiple of 8, so all positions' loads are in flight at once. Output: each
 * thread owns a pair of dimensions and every G-th position, G = threads /
 * (head_dim / 2); the G partial sums are added at the end. */
__global__ void __launch_bounds__(GS_LLM_ATTN_THREADS)
    gs_llm_attention_kernel(const float *qkv, const uint32_t *slots, const uint32_t *positions,
                            gs_llm_cuda_attn_shape s, const uint16_t *k_cache,
                            const uint16_t *v_cache, uint16_t *out) {
  extern __shared__ float shared[];
  __shared__ float scratch[32];
  float *q = shared, *score = shared + s.head_dim, *partial = score + s.max_seq;
  int row = blockIdx.x, head = blockIdx.y;
  int qw = s.heads * s.head_dim, kvw = s.kv_heads * s.head_dim;
  int kvh = head / (s.heads / s.kv_heads);
  const float *qsrc = qkv + (uint64_t)row * (qw + 2 * kvw) + head * s.head_dim;
  for (int d = threadIdx.x; d < s.head_dim; d += blockDim.x) q[d] = qsrc[d];
  __syncthreads();
  int len = (int)positions[row] + 1;
  uint64_t base = (uint64_t)slots[row] * s.max_seq * kvw + (uint64_t)kvh * s.head_dim;
  float scale = rsqrtf((float)s.head_dim);
  bool vec = (s.head_dim & 7) == 0;
  for (int j = threadIdx.x; j < len; j += blockDim.x) {
    const uint16_t *k = k_cache + base + (uint64_t)j * kvw;
    float dot = 0.0f;
    if (vec) {
#pragma unroll 4
      for (int d = 0; d < s.head_dim; d += 8) {
        uint4 kv = *reinterpret_cast<const uint4 *>(k + d);
        const uint32_t parts[4] = {kv.x, kv.y, kv.z, kv.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
          dot = fmaf(q[d + 2 * i], bf16_to_float((uint16_t)(parts[i] & 0xffffu)), dot);
          dot = fmaf(q[d + 2 * i + 1], bf16_to_float((uint16_t)(parts[i] >> 16)), dot);
        }
      }
    } else {
      for (int d = 0; d < s.head_dim; d++) dot = fmaf(q[d], bf16_to_float(k[d]), dot);
    }
    score[j] = dot * scale;
  }
  __syncthreads();
  float top = -INFINITY;
  for (int j = threadIdx.x; j < len; j += blockDim.x) top = fmaxf(top, score[j]);
  top = block_reduce(top, scratch, true);
  float total = 0.0f;
  for (int j = threadIdx.x; j < len; j += blockDim.x) {
    float e = __expf(score[j] - top);
    score[j] = e;
    total += e;
  }
  total = block_reduce(total, scratch, false);
  __syncthreads();
  int pairs = s.head_dim / 2;
  int groups = pairs < (int)blockDim.x ? (int)blockDim.x / pairs : 1;
  int group = threadIdx.x / pairs;
  if (group < groups) {
    for (int p = threadIdx.x % pairs; p < pairs; p += blockDim.x) {
      float a0 = 0.0f, a1 = 0.0f;
      const uint32_t *v = reinterpret_cast<const uint32_t *>(v_cache + base) + p;
#pragma unroll 4
      for (int j = group; j < len; j += groups) {
        uint32_t pv = v[(uint64_t)j * (kvw / 2)];
        a0 = fmaf(score[j], bf16_to_float((uint16_t)(pv & 0xffffu)), a0);
        a1 = fmaf(score[j], bf16_to_float((uint16_t)(pv >> 16)), a1);
      }
      if (groups > 1) {
        partial[group * s.head_dim + 2 * p] = a0;
        partial[group * s.head_dim + 2 * p + 1] = a1;
      } else {
        out[(uint64_t)row * qw + head * s.head_dim + 2 * p] = float_to_bf16(a0 / total);
        out[(uint64_t)row * qw + head * s.head_dim + 2 * p + 1] = float_to_bf16(a1 / total);
      }
    }
  }
  if (groups == 1) return;
  __syncthreads();
  for (int d = threadIdx.x; d < s.head_dim; d += blockDim.x) {
    float acc = 0.0f;
    for (int g = 0; g < groups; g++) acc += partial[g * s.head_dim + d];
    out[(uint64_t)row * qw + head * s.head_dim + d] = float_to_bf16(acc / total);
  }
}

__global__ void gs_llm_swiglu_kernel(const float *gu, int rows, int ffn, uint16_t *out) {
  uint64_t n = (uint64_t)rows * ffn;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x) {
    uint64_t r = i / ffn, c = i % ffn;
    float g = gu[r * 2 * ffn + c], u = gu[r * 2 * ffn + ffn + c];
    out[i] = float_to_bf16(g / (1.0f + __expf(-g)) * u);
  }
}

/* One block per row; writes the token, or with `offers` the (value, index
 * + vocab_offset) pair. */
__global__ void gs_llm_argmax_kernel(const float *logits, int vocab, int32_t *tokens,
                                     uint32_t vocab_offset, float *offers) {
  __shared__ float best_value[32];
  __shared__ int best_index[32];
  const float *x = logits + (uint64_t)blockIdx.x * vocab;
  float value = -INFINITY;
  int index = vocab;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x)
    if (x[i] > value) {
      value = x[i];
      index = i;
    }
  // Larger value wins; equal values: lower index wins (as in the CPU).
  for (int o = 16; o > 0; o >>= 1) {
    float ov = __shfl_xor_sync(0xffffffffu, value, o);
    int oi = __shfl_xor_sync(0xffffffffu, index, o);
    if (ov > value || (ov == value && oi < index)) {
      value = ov;
      index = oi;
    }
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if (lane == 0) {
    best_value[warp] = value;
    best_index[warp] = index;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < warps; w++)
      if (best_value[w] > value || (best_value[w] == value && best_index[w] < index)) {
        value = best_value[w];
        index = best_index[w];
      }
    if (index >= vocab) index = 0;
    if (offers) {
      offers[2 * blockIdx.x] = value;
      offers[2 * blockIdx.x + 1] = (float)(vocab_offset + (uint32_t)index);
    } else {
      tokens[blockIdx.x] = index;
    }
  }
}

__global__ void gs_llm_pick_offer_kernel(const float *all, int shards, int rows, int32_t *tokens) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float value = -INFINITY, index = 0.0f;
  for (int k = 0; k < shards; k++) {
    const float *o = all + 2 * ((uint64_t)k * rows + r);
    if (gs_llm_offer_beats(o[0], o[1], value, index)) {
      value = o[0];
      index = o[1];
    }
  }
  tokens[r] = (int32_t)index;
}

__global__ void gs_llm_add_kernel(float *h, const float *part, uint64_t n) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x)
    h[i] += part[i];
}

__global__ void gs_llm_advance_kernel(uint32_t *positions, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) positions[i] += 1;
}

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
  if (o >= outs) return;
  int chunks = ins / 8;
  const uint4 *wrow = reinterpret_cast<const uint4 *>(w + (uint64_t)o * ins);
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
 * rows A and B and 16 inputs of its column, all at k offset 16 c. */
typedef struct {
  uint4 a_lo, a_hi, b_lo, b_hi, x_lo, x_hi;
} mma_operands;

static __device__ __forceinline__ void mma_load(mma_operands *o, const uint16_t *wa,
                                                const uint16_t *wb, const uint16_t *xn, bool has_x,
                                                int k) {
  o->a_lo = __ldcs(reinterpret_cast<const uint4 *>(wa + k));
  o->a_hi = __ldcs(reinterpret_cast<const uint4 *>(wa + k + 8));
  o->b_lo = __ldcs(reinterpret_cast<const uint4 *>(wb + k));
  o->b_hi = __ldcs(reinterpret_cast<const uint4 *>(wb + k + 8));
  o->x_lo = has_x ? __ldg(reinterpret_cast<const uint4 *>(xn + k)) : make_uint4(0, 0, 0, 0);
  o->x_hi = has_x ? __ldg(reinterpret_cast<const uint4 *>(xn + k + 8)) : make_uint4(0, 0, 0, 0);
}

/* Four m16n8k16 products over one k-block. A dot product does not care in
 * which order k is summed, so the fragments take k in the order the lane
 * loaded it: logical k (2c, 2c+1, 2c+8, 2c+9) of sub-product s is physical
 * 16c + 4s + (0, 1, 2, 3), the same map for weights and inputs. */
static __device__ __forceinline__ void mma_block(float *acc, const mma_operands *o) {
  mma_bf16_16816(acc, o->a_lo.x, o->b_lo.x, o->a_lo.y, o->b_lo.y, o->x_lo.x, o->x_lo.y);
  mma_bf16_16816(acc, o->a_lo.z, o->b_lo.z, o->a_lo.w, o->b_lo.w, o->x_lo.z, o->x_lo.w);
  mma_bf16_16816(acc, o->a_hi.x, o->b_hi.x, o->a_hi.y, o->b_hi.y, o->x_hi.x, o->x_hi.y);
  mma_bf16_16816(acc, o->a_hi.z, o->b_hi.z, o->a_hi.w, o->b_hi.w, o->x_hi.z, o->x_hi.w);
}

/* Tensor-core GEMV for 1..8 rows: a block computes 16 outputs for all rows
 * (the 8 columns of an m16n8k16 product; columns past `rows` read zeros);
 * its warps split K into contiguous ranges of 64-blocks and add their
 * partial sums through shared memory. Lane (g = lane / 4, c = lane % 4)
 * streams 32 bytes of weight rows g and g + 8 per k-block, so the four
 * lanes of a row read one full 128-byte line; the next block's loads are
 * issued before the current block's products. Requires ins % 64 == 0. */
__global__ void __launch_bounds__(GS_LLM_MMA_WARPS * 32)
    gs_llm_gemv_mma_kernel(const uint16_t *w, const uint16_t *x, float *y, int rows, int outs,
                           int ins, int accumulate) {
  __shared__ float partial[GS_LLM_MMA_WARPS][16][8];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int g = lane >> 2, c = lane & 3;
  int o0 = blockIdx.x * 16;
  int ra = o0 + g, rb = o0 + g + 8;
  // Rows past the end read row 0 (valid memory); their sums are dropped.
  const uint16_t *wa = w + (uint64_t)(ra < outs ? ra : 0) * ins + 16 * c;
  const uint16_t *wb = w + (uint64_t)(rb < outs ? rb : 0) * ins + 16 * c;
  bool has_x = g < rows;
  const uint16_t *xn = x + (uint64_t)(has_x ? g : 0) * ins + 16 * c;
  int kblocks = ins / 64;
  int per = (kblocks + GS_LLM_MMA_WARPS - 1) / GS_LLM_MMA_WARPS;
  int kb = warp * per, kend = min(kblocks, kb + per);
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (kb < kend) {
    mma_operands cur, next = {};
    mma_load(&cur, wa, wb, xn, has_x, kb * 64);
    for (; kb < kend; kb++) {
      if (kb + 1 < kend) mma_load(&next, wa, wb, xn, has_x, (kb + 1) * 64);
      mma_block(acc, &cur);
      cur = next;
    }
  }
  partial[warp][g][2 * c] = acc[0];
  partial[warp][g][2 * c + 1] = acc[1];
  partial[warp][g + 8][2 * c] = acc[2];
  partial[warp][g + 8][2 * c + 1] = acc[3];
  __syncthreads();
  if (threadIdx.x < 128) {
    int orow = threadIdx.x >> 3, col = threadIdx.x & 7;
    if (col < rows && o0 + orow < outs) {
      float sum = 0.0f;
#pragma unroll
      for (int i = 0; i < GS_LLM_MMA_WARPS; i++) sum += partial[i][orow][col];
      float *dst = y + (uint64_t)col * outs + o0 + orow;
      *dst = accumulate ? *dst + sum : sum;
    }
  }
}

static unsigned blocks_for(uint64_t n) {
  uint64_t b = (n + GS_LLM_THREADS - 1) / GS_LLM_THREADS;
  return (unsigned)(b > 65535u * 16u ? 65535u * 16u : (b ? b : 1));
}

extern "C" cudaError_t gs_llm_cuda_init_weights(uint16_t *w, const gs_llm_slice *slice,
                                                uint64_t seed, uint32_t tensor, float scale,
                                                float offset, cudaStream_t stream) {
  gs_llm_init_weights_kernel<<<blocks_for(slice->rows * slice->cols), GS_LLM_THREADS, 0, stream>>>(
      w, *slice, seed, tensor, scale, offset);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_llm_cuda_embed(const int32_t *tokens, const uint16_t *table, int rows,
                                         int hidden, float *h, cudaStream_t stream) {
  gs_llm_embed_kernel<<<rows, GS_LLM_THREADS, 0, stream>>>(tokens, table, hidden, h);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_llm_cuda_rmsnorm(const float *h, const uint32_t *row_map,
                                           const uint16_t *w, int rows, int hidden, float eps,
                                           uint16_t *out, cudaStream_t stream) {
  gs_llm_rmsnorm_kernel<<<rows, 512, 0, stream>>>(h, row_map, w, hidden, eps, out);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_llm_cuda_rope_cache(float *qkv, const uint32_t *slots,
                                              const uint32_t *positions, const float *rope,
                                              int rows, gs_llm_cuda_attn_shape shape,
                                              uint16_t *k_cache, uint16_t *v_cache,
                                              cudaStream_t stream) {
  gs_llm_rope_cache_kernel<<<rows, GS_LLM_THREADS, 0, stream>>>(qkv, slots, positions, rope, shape,
                                                                k_cache, v_cache);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_llm_cuda_attention(const float *qkv, const uint32_t *slots,
                                             const uint32_t *positions, int rows,
                                             gs_llm_cuda_attn_shape shape, const uint16_t *k_cache,
                                             const uint16_t *v_cache, uint16_t *out,
                                             cudaStream_t stream) {
  size_t shared =
      (size_t)(shape.head_dim + shape.max_seq + 2 * GS_LLM_ATTN_THREADS) * sizeof(float);
  if (shared > 48 * 1024) {
    cudaError_t e = cudaFuncSetAttribute(gs_llm_attention_kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared);
    if (e != cudaSuccess) return e;
  }
  dim3 grid((unsigned)rows, (unsigned)shape.heads);
  gs_llm_attention_kernel<<<grid, GS_LLM_ATTN_THREADS, shared, stream>>>(
      qkv, slots, positions, shape, k_cache, v_cache, out);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_llm_cuda_swiglu(const float *gu, int rows, int ffn, uint16_t *out,
                                          cudaStream_t stream) {
  gs_llm_swiglu_kernel<<<blocks_for((uint64_t)rows * ffn), GS_LLM_THREADS, 0, stream>>>(gu, rows,
                                                                                        ffn, out);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_llm_cuda_argmax(const float *logits, int rows, int vocab, int32_t *tokens,
                                          cudaStream_t stream) {
  gs_llm_argmax_kernel<<<rows, 1024, 0, stream>>>(logits, vocab, tokens, 0, NULL);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_llm_cuda_argmax_offer(const float *logits, int rows, int vocab,
                                                uint32_t vocab_offset, float *offers,
                                                cudaStream_t stream) {
  gs_llm_argmax_kernel<<<rows, 1024, 0, stream>>>(logits, vocab, NULL, vocab_offset, offers);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_llm_cuda_pick_offer(const float *all, int shards, int rows,
                                              int32_t *tokens, cudaStream_t stream) {
  gs_llm_pick_offer_kernel<<<(rows + 255) / 256, 256, 0, stream>>>(all, shards, rows, tokens);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_llm_cuda_add(float *h, const float *part, uint64_t n,
                                       cudaStream_t stream) {
  gs_llm_add_kernel<<<blocks_for(n), GS_LLM_THREADS, 0, stream>>>(h, part, n);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_llm_cuda_advance(uint32_t *positions, int n, cudaStream_t stream) {
  gs_llm_advance_kernel<<<(n + 255) / 256, 256, 0, stream>>>(positions, n);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_llm_cuda_gemv_mma(const uint16_t *w, const uint16_t *x, float *y,
                                            int rows, int outs, int ins, int accumulate,
                                            cudaStream_t stream) {
  if (rows < 1 || rows > 8 || ins % 64 != 0) return cudaErrorInvalidValue;
  unsigned grid = (unsigned)((outs + 15) / 16);
  gs_llm_gemv_mma_kernel<<<grid, GS_LLM_MMA_WARPS * 32, 0, stream>>>(w, x, y, rows, outs, ins,
                                                                     accumulate);
  return cudaGetLastError();
}

extern "C" cudaError_t gs_llm_cuda_gemv(const uint16_t *w, const uint16_t *x, float *y, int rows,
                                        int outs, int ins, int accumulate, cudaStream_t stream) {
  unsigned grid = (unsigned)((outs + GS_LLM_GEMV_WARPS - 1) / GS_LLM_GEMV_WARPS);
  unsigned threads = GS_LLM_GEMV_WARPS * 32;
  switch (rows) {
    case 1:
      gs_llm_gemv_kernel<1><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate);
      break;
    case 2:
      gs_llm_gemv_kernel<2><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate);
      break;
    case 3:
      gs_llm_gemv_kernel<3><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate);
      break;
    case 4:
      gs_llm_gemv_kernel<4><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate);
      break;
    case 5:
      gs_llm_gemv_kernel<5><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate);
      break;
    case 6:
      gs_llm_gemv_kernel<6><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate);
      break;
    case 7:
      gs_llm_gemv_kernel<7><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate);
      break;
    case 8:
      gs_llm_gemv_kernel<8><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}
