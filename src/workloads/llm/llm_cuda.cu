/* CUDA kernels of the llm model (see llm_cuda.h). Decode is bound by
 * reading the weights once per step, so the GEMV streams each weight row
 * with 16-byte loads, several in flight per lane, and applies it to up to 8
 * sequences at once; and a step is a chain of ~230 dependent kernels, so
 * each kernel may start while its predecessor ends (programmatic dependent
 * launch) and some are fused (RoPE and the cache write into decode
 * attention; SwiGLU into the gate/up GEMV, ~1% faster on an H200). The small
 * per-row kernels (norm, rotary embedding, attention over the cache,
 * SwiGLU, argmax) mirror llm_cpu.c operation for operation; rounding to
 * bfloat16 happens at the same places. */
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
#define GS_LLM_MMA_PREFETCH 4 /* k-blocks per warp asked for before the predecessor ends */

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

/* Programmatic dependent launch (sm_90 and later). A kernel launched with
 * the overlap attribute (gs_llm_cuda_queue.overlap) may start while its
 * predecessor on the stream still runs: before wait_for_predecessor() it
 * may only read what no kernel writes (weights, the rotary table); after
 * it, everything the predecessor wrote is visible. allow_successor() lets
 * the next kernel start its blocks; every kernel here calls it right after
 * waiting, so at most one kernel runs ahead. Both are no-ops for a kernel
 * launched without the attribute and on older GPUs. */
static __device__ __forceinline__ void wait_for_predecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

static __device__ __forceinline__ void allow_successor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

static __device__ __forceinline__ void start_after_predecessor() {
  wait_for_predecessor();
  allow_successor();
}

/* Asks L2 for the 128-byte line holding p (no register is written). */
static __device__ __forceinline__ void prefetch_l2(const void *p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
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
  start_after_predecessor();
  const uint64_t n = slice.rows * slice.cols;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x)
    w[i] = gs_llm_weight_value(seed, tensor, gs_llm_slice_index(&slice, i), scale, offset);
}

__global__ void gs_llm_embed_kernel(const int32_t *tokens, const uint16_t *table, int hidden,
                                    float *h) {
  start_after_predecessor();
  const uint16_t *row = table + (uint64_t)tokens[blockIdx.x] * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x)
    h[(uint64_t)blockIdx.x * hidden + i] = bf16_to_float(row[i]);
}

__global__ void gs_llm_rmsnorm_kernel(const float *h, const uint32_t *row_map, const uint16_t *w,
                                      int hidden, float eps, uint16_t *out) {
  start_after_predecessor();
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

/* The rotary embedding of pair (x[i], x[i + half]) at position pos. */
static __device__ __forceinline__ void rotate_pair(const float *rope, uint32_t pos, int half, int i,
                                                   float a, float b, float *ra, float *rb) {
  const float *cs = rope + ((uint64_t)pos * half + i) * 2;
  float c = cs[0], sn = cs[1];
  *ra = a * c - b * sn;
  *rb = b * c + a * sn;
}

static __device__ __forceinline__ float round_bf16(float f) {
  return bf16_to_float(float_to_bf16(f));
}

__global__ void gs_llm_rope_cache_kernel(float *qkv, const uint32_t *slots,
                                         const uint32_t *positions, const float *rope,
                                         gs_llm_cuda_attn_shape s, uint16_t *k_cache,
                                         uint16_t *v_cache) {
  start_after_predecessor();
  int half = s.head_dim / 2, qw = s.heads * s.head_dim, kvw = s.kv_heads * s.head_dim;
  float *row = qkv + (uint64_t)blockIdx.x * (qw + 2 * kvw);
  uint32_t pos = positions[blockIdx.x];
  uint64_t at = ((uint64_t)slots[blockIdx.x] * s.max_seq + pos) * kvw;
  int pairs = (s.heads + s.kv_heads) * half;
  for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
    int head = p / half, i = p % half;
    float *v = row + head * s.head_dim;
    float ra, rb;
    rotate_pair(rope, pos, half, i, v[i], v[i + half], &ra, &rb);
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

/* The dot product of q (head_dim floats, shared) with the bfloat16 key at
 * k, in increasing order of dimension; 16-byte loads when head_dim is a
 * multiple of 8. */
static __device__ __forceinline__ float key_dot(const float *q, const uint16_t *k, int head_dim) {
  float dot = 0.0f;
  if ((head_dim & 7) == 0) {
#pragma unroll 4
    for (int d = 0; d < head_dim; d += 8) {
      uint4 kv = *reinterpret_cast<const uint4 *>(k + d);
      const uint32_t parts[4] = {kv.x, kv.y, kv.z, kv.w};
#pragma unroll
      for (int i = 0; i < 4; i++) {
        dot = fmaf(q[d + 2 * i], bf16_to_float((uint16_t)(parts[i] & 0xffffu)), dot);
        dot = fmaf(q[d + 2 * i + 1], bf16_to_float((uint16_t)(parts[i] >> 16)), dot);
      }
    }
  } else {
    for (int d = 0; d < head_dim; d++) dot = fmaf(q[d], bf16_to_float(k[d]), dot);
  }
  return dot;
}

/* One block per (row, head), GS_LLM_ATTN_THREADS threads. Shared memory: the
 * query, the row's own key and value (head_dim floats each), the scores
 * (max_seq floats) and the partial outputs of the position groups (2 x
 * blockDim floats). Scores: one cached position per thread, so all
 * positions' loads are in flight at once. Output: each thread owns a pair of
 * dimensions and every G-th position, G = threads / (head_dim / 2); the G
 * partial sums are added at the end.
 * ROTATE (decode, one row per sequence): the block rotates its query and
 * the row's key itself and takes the row's own position (the last) from
 * shared memory; the first query head of each KV head writes that key and
 * value to the cache. The arithmetic is the same as rotating first
 * (gs_llm_rope_cache_kernel) and reading every position from the cache. */
template <bool ROTATE>
__global__ void __launch_bounds__(GS_LLM_ATTN_THREADS)
    gs_llm_attention_kernel(const float *qkv, const uint32_t *slots, const uint32_t *positions,
                            const float *rope, gs_llm_cuda_attn_shape s, uint16_t *k_cache,
                            uint16_t *v_cache, uint16_t *out) {
  start_after_predecessor();
  extern __shared__ float shared[];
  __shared__ float scratch[32];
  float *q = shared, *own_k = q + s.head_dim, *own_v = own_k + s.head_dim;
  float *score = own_v + s.head_dim, *partial = score + s.max_seq;
  int row = blockIdx.x, head = blockIdx.y, half = s.head_dim / 2;
  int qw = s.heads * s.head_dim, kvw = s.kv_heads * s.head_dim;
  int group_size = s.heads / s.kv_heads, kvh = head / group_size;
  const float *src = qkv + (uint64_t)row * (qw + 2 * kvw);
  const float *qsrc = src + head * s.head_dim;
  uint32_t pos = positions[row];
  int len = (int)pos + 1;
  uint64_t base = (uint64_t)slots[row] * s.max_seq * kvw + (uint64_t)kvh * s.head_dim;
  if (ROTATE) {
    const float *ksrc = src + qw + kvh * s.head_dim, *vsrc = ksrc + kvw;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
      rotate_pair(rope, pos, half, i, qsrc[i], qsrc[i + half], &q[i], &q[i + half]);
      float ka, kb;
      rotate_pair(rope, pos, half, i, ksrc[i], ksrc[i + half], &ka, &kb);
      own_k[i] = round_bf16(ka);
      own_k[i + half] = round_bf16(kb);
    }
    for (int d = threadIdx.x; d < s.head_dim; d += blockDim.x) own_v[d] = round_bf16(vsrc[d]);
    __syncthreads();
    if (head % group_size == 0) {
      uint64_t at = base + (uint64_t)pos * kvw;
      for (int d = threadIdx.x; d < s.head_dim; d += blockDim.x) {
        k_cache[at + d] = float_to_bf16(own_k[d]);
        v_cache[at + d] = float_to_bf16(own_v[d]);
      }
    }
  } else {
    for (int d = threadIdx.x; d < s.head_dim; d += blockDim.x) q[d] = qsrc[d];
    __syncthreads();
  }
  // Positions read from the cache; with ROTATE the last is the block's own.
  const int cached = ROTATE ? len - 1 : len;
  float scale = rsqrtf((float)s.head_dim);
  for (int j = threadIdx.x; j < len; j += blockDim.x) {
    float dot;
    if (j < cached) {
      dot = key_dot(q, k_cache + base + (uint64_t)j * kvw, s.head_dim);
    } else {
      dot = 0.0f;
      for (int d = 0; d < s.head_dim; d++) dot = fmaf(q[d], own_k[d], dot);
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
  int pairs = half;
  int groups = pairs < (int)blockDim.x ? (int)blockDim.x / pairs : 1;
  int group = threadIdx.x / pairs;
  if (group < groups) {
    for (int p = threadIdx.x % pairs; p < pairs; p += blockDim.x) {
      float a0 = 0.0f, a1 = 0.0f;
      const uint32_t *v = reinterpret_cast<const uint32_t *>(v_cache + base) + p;
#pragma unroll 4
      for (int j = group; j < cached; j += groups) {
        uint32_t pv = v[(uint64_t)j * (kvw / 2)];
        a0 = fmaf(score[j], bf16_to_float((uint16_t)(pv & 0xffffu)), a0);
        a1 = fmaf(score[j], bf16_to_float((uint16_t)(pv >> 16)), a1);
      }
      // The own position is the last this group would have read.
      if (cached < len && (len - 1) % groups == group) {
        a0 = fmaf(score[len - 1], own_v[2 * p], a0);
        a1 = fmaf(score[len - 1], own_v[2 * p + 1], a1);
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

static __device__ __forceinline__ uint16_t swiglu_value(float g, float u) {
  return float_to_bf16(g / (1.0f + __expf(-g)) * u);
}

__global__ void gs_llm_swiglu_kernel(const float *gu, int rows, int ffn, uint16_t *out) {
  start_after_predecessor();
  uint64_t n = (uint64_t)rows * ffn;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x) {
    uint64_t r = i / ffn, c = i % ffn;
    float g = gu[r * 2 * ffn + c], u = gu[r * 2 * ffn + ffn + c];
    out[i] = swiglu_value(g, u);
  }
}

/* One block per row; writes the token, or with `offers` the (value, index
 * + vocab_offset) pair. */
__global__ void gs_llm_argmax_kernel(const float *logits, int vocab, int32_t *tokens,
                                     uint32_t vocab_offset, float *offers) {
  start_after_predecessor();
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
  start_after_predecessor();
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
  start_after_predecessor();
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x)
    h[i] += part[i];
}

__global__ void gs_llm_advance_kernel(uint32_t *positions, int n) {
  start_after_predecessor();
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

/* Tensor-core GEMV for 1..8 rows: a block computes 16 outputs for all rows
 * (the 8 columns of an m16n8k16 product; columns past `rows` read zeros);
 * its warps split K into contiguous ranges of 64-blocks and add their
 * partial sums through shared memory. Lane (g = lane / 4, c = lane % 4)
 * streams 32 bytes of weight rows g and g + 8 per k-block, so the four
 * lanes of a row read one full 128-byte line; the next block's loads are
 * issued before the current block's products. Requires ins % 64 == 0.
 * Plain: y (rows x outs floats) (+)= the products. SWIGLU: the block's
 * rows are gate and up of 8 FFN columns (mma_weight_row) and it writes
 * act[r][j] = bf16(silu(gate) * up) (rows x outs / 2) instead, the same
 * values as the products followed by gs_llm_swiglu_kernel. */
template <bool SWIGLU>
__global__ void __launch_bounds__(GS_LLM_MMA_WARPS * 32)
    gs_llm_gemv_mma_kernel(const uint16_t *w, const uint16_t *x, float *y, uint16_t *act,
                           int rows, int outs, int ins, int accumulate) {
  __shared__ float partial[GS_LLM_MMA_WARPS][16][8];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int g = lane >> 2, c = lane & 3;
  int ra = mma_weight_row<SWIGLU>(blockIdx.x, g, outs);
  int rb = mma_weight_row<SWIGLU>(blockIdx.x, g + 8, outs);
  // Rows past the end read row 0 (valid memory); their sums are dropped.
  const uint16_t *wa = w + (uint64_t)(ra >= 0 ? ra : 0) * ins + 16 * c;
  const uint16_t *wb = w + (uint64_t)(rb >= 0 ? rb : 0) * ins + 16 * c;
  bool has_x = g < rows;
  const uint16_t *xn = x + (uint64_t)(has_x ? g : 0) * ins + 16 * c;
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
  if (SWIGLU) {
    if (threadIdx.x >= 64) return;
    int orow = threadIdx.x >> 3, col = threadIdx.x & 7, ffn = outs / 2;
    int j = blockIdx.x * 8 + orow;
    if (col >= rows || j >= ffn) return;
    float gate = 0.0f, up = 0.0f;
#pragma unroll
    for (int i = 0; i < GS_LLM_MMA_WARPS; i++) {
      gate += partial[i][orow][col];
      up += partial[i][orow + 8][col];
    }
    act[(uint64_t)col * ffn + j] = swiglu_value(gate, up);
    return;
  }
  if (threadIdx.x < 128) {
    int orow = threadIdx.x >> 3, col = threadIdx.x & 7, o = blockIdx.x * 16 + orow;
    if (col < rows && o < outs) {
      float sum = 0.0f;
#pragma unroll
      for (int i = 0; i < GS_LLM_MMA_WARPS; i++) sum += partial[i][orow][col];
      float *dst = y + (uint64_t)col * outs + o;
      *dst = accumulate ? *dst + sum : sum;
    }
  }
}

static unsigned blocks_for(uint64_t n) {
  uint64_t b = (n + GS_LLM_THREADS - 1) / GS_LLM_THREADS;
  return (unsigned)(b > 65535u * 16u ? 65535u * 16u : (b ? b : 1));
}

/* Enqueues kernel<<<grid, block, shared>>>(args) on q.stream, allowed to
 * overlap its predecessor when q.overlap is set. */
template <typename... Params, typename... Args>
static cudaError_t launch(gs_llm_cuda_queue q, void (*kernel)(Params...), dim3 grid, dim3 block,
                          size_t shared, Args... args) {
  cudaLaunchAttribute overlap = {};
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = q.stream;
  config.attrs = &overlap;
  config.numAttrs = q.overlap ? 1 : 0;
  cudaError_t rc = cudaLaunchKernelEx(&config, kernel, (Params)args...);
  return rc != cudaSuccess ? rc : cudaGetLastError();
}

extern "C" cudaError_t gs_llm_cuda_init_weights(uint16_t *w, const gs_llm_slice *slice,
                                                uint64_t seed, uint32_t tensor, float scale,
                                                float offset, gs_llm_cuda_queue q) {
  return launch(q, gs_llm_init_weights_kernel, blocks_for(slice->rows * slice->cols),
                GS_LLM_THREADS, 0, w, *slice, seed, tensor, scale, offset);
}

extern "C" cudaError_t gs_llm_cuda_embed(const int32_t *tokens, const uint16_t *table, int rows,
                                         int hidden, float *h, gs_llm_cuda_queue q) {
  return launch(q, gs_llm_embed_kernel, rows, GS_LLM_THREADS, 0, tokens, table, hidden, h);
}

extern "C" cudaError_t gs_llm_cuda_rmsnorm(const float *h, const uint32_t *row_map,
                                           const uint16_t *w, int rows, int hidden, float eps,
                                           uint16_t *out, gs_llm_cuda_queue q) {
  return launch(q, gs_llm_rmsnorm_kernel, rows, 512, 0, h, row_map, w, hidden, eps, out);
}

extern "C" cudaError_t gs_llm_cuda_rope_cache(float *qkv, const uint32_t *slots,
                                              const uint32_t *positions, const float *rope,
                                              int rows, gs_llm_cuda_attn_shape shape,
                                              uint16_t *k_cache, uint16_t *v_cache,
                                              gs_llm_cuda_queue q) {
  return launch(q, gs_llm_rope_cache_kernel, rows, GS_LLM_THREADS, 0, qkv, slots, positions, rope,
                shape, k_cache, v_cache);
}

extern "C" cudaError_t gs_llm_cuda_attention(const float *qkv, const uint32_t *slots,
                                             const uint32_t *positions, const float *rope,
                                             int rows, gs_llm_cuda_attn_shape shape,
                                             uint16_t *k_cache, uint16_t *v_cache, uint16_t *out,
                                             gs_llm_cuda_queue q) {
  void (*kernel)(const float *, const uint32_t *, const uint32_t *, const float *,
                 gs_llm_cuda_attn_shape, uint16_t *, uint16_t *, uint16_t *) =
      rope ? gs_llm_attention_kernel<true> : gs_llm_attention_kernel<false>;
  size_t shared =
      (size_t)(3 * shape.head_dim + shape.max_seq + 2 * GS_LLM_ATTN_THREADS) * sizeof(float);
  if (shared > 48 * 1024) {
    cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared);
    if (e != cudaSuccess) return e;
  }
  dim3 grid((unsigned)rows, (unsigned)shape.heads);
  return launch(q, kernel, grid, GS_LLM_ATTN_THREADS, shared, qkv, slots, positions, rope, shape,
                k_cache, v_cache, out);
}

extern "C" cudaError_t gs_llm_cuda_swiglu(const float *gu, int rows, int ffn, uint16_t *out,
                                          gs_llm_cuda_queue q) {
  return launch(q, gs_llm_swiglu_kernel, blocks_for((uint64_t)rows * ffn), GS_LLM_THREADS, 0, gu,
                rows, ffn, out);
}

extern "C" cudaError_t gs_llm_cuda_argmax(const float *logits, int rows, int vocab, int32_t *tokens,
                                          gs_llm_cuda_queue q) {
  return launch(q, gs_llm_argmax_kernel, rows, 1024, 0, logits, vocab, tokens, 0u,
                (float *)NULL);
}

extern "C" cudaError_t gs_llm_cuda_argmax_offer(const float *logits, int rows, int vocab,
                                                uint32_t vocab_offset, float *offers,
                                                gs_llm_cuda_queue q) {
  return launch(q, gs_llm_argmax_kernel, rows, 1024, 0, logits, vocab, (int32_t *)NULL,
                vocab_offset, offers);
}

extern "C" cudaError_t gs_llm_cuda_pick_offer(const float *all, int shards, int rows,
                                              int32_t *tokens, gs_llm_cuda_queue q) {
  return launch(q, gs_llm_pick_offer_kernel, (rows + 255) / 256, 256, 0, all, shards, rows,
                tokens);
}

extern "C" cudaError_t gs_llm_cuda_add(float *h, const float *part, uint64_t n,
                                       gs_llm_cuda_queue q) {
  return launch(q, gs_llm_add_kernel, blocks_for(n), GS_LLM_THREADS, 0, h, part, n);
}

extern "C" cudaError_t gs_llm_cuda_advance(uint32_t *positions, int n, gs_llm_cuda_queue q) {
  return launch(q, gs_llm_advance_kernel, (n + 255) / 256, 256, 0, positions, n);
}

extern "C" cudaError_t gs_llm_cuda_gemv_mma(const uint16_t *w, const uint16_t *x, float *y,
                                            int rows, int outs, int ins, int accumulate,
                                            gs_llm_cuda_queue q) {
  if (rows < 1 || rows > 8 || ins % 64 != 0) return cudaErrorInvalidValue;
  return launch(q, gs_llm_gemv_mma_kernel<false>, (outs + 15) / 16, GS_LLM_MMA_WARPS * 32, 0, w, x,
                y, (uint16_t *)NULL, rows, outs, ins, accumulate);
}

extern "C" cudaError_t gs_llm_cuda_gemv_mma_swiglu(const uint16_t *w, const uint16_t *x,
                                                   uint16_t *out, int rows, int ffn, int ins,
                                                   gs_llm_cuda_queue q) {
  if (rows < 1 || rows > 8 || ins % 64 != 0) return cudaErrorInvalidValue;
  return launch(q, gs_llm_gemv_mma_kernel<true>, (ffn + 7) / 8, GS_LLM_MMA_WARPS * 32, 0, w, x,
                (float *)NULL, out, rows, 2 * ffn, ins, 0);
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
