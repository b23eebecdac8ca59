/* CUDA kernels of the llm model other than the GEMVs (llm_gemv.cu); see
 * llm_cuda.h. A decode step is a chain of ~230 dependent kernels, so each
 * kernel may start while its predecessor ends (programmatic dependent
 * launch), reading ahead what the predecessor does not write (norm weights,
 * cached keys and values), and some are fused (RoPE and the cache write
 * into decode attention; SwiGLU into the gate/up GEMV). The small per-row
 * kernels (norm, rotary embedding, attention over the cache, SwiGLU,
 * argmax) mirror llm_cpu.c operation for operation; rounding to bfloat16
 * happens at the same places. */
#include <math.h>
#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "workloads/llm/llm_cuda.h"
#include "workloads/llm/llm_cuda_common.h"
#include "workloads/llm/model.h"

#define GS_LLM_THREADS 256
#define GS_LLM_ATTN_THREADS 256

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

/* With nout.w also the first split norm's producer half (llm_cuda.h). */
__global__ void gs_llm_embed_kernel(const int32_t *tokens, const uint16_t *table, int hidden,
                                    float *h, gs_llm_cuda_norm_out nout, int slots, int stride) {
  start_after_predecessor();
  __shared__ float scratch[32];
  const uint16_t *row = table + (uint64_t)tokens[blockIdx.x] * hidden;
  const uint64_t at = (uint64_t)blockIdx.x * hidden;
  float squares = 0.0f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    float v = bf16_to_float(row[i]);
    h[at + i] = v;
    if (nout.w) {
      nout.u[at + i] = float_to_bf16(v * bf16_to_float(nout.w[i]));
      squares += v * v;
    }
  }
  if (!nout.w) return;
  squares = block_reduce(squares, scratch, false);
  if (threadIdx.x == 0) nout.squares[blockIdx.x] = squares;
  for (int k = 1 + threadIdx.x; k < slots; k += blockDim.x)
    nout.squares[blockIdx.x + (uint64_t)k * stride] = 0.0f;
}

__global__ void gs_llm_rmsnorm_kernel(const float *h, const uint32_t *row_map, const uint16_t *w,
                                      int hidden, float eps, uint16_t *out) {
  // The norm weights do not depend on the predecessor: on their way to L2
  // while it finishes (one 128-byte line per thread).
  for (int i = threadIdx.x * 64; i < hidden; i += blockDim.x * 64) prefetch_l2(w + i);
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

/* Attention's chunked path, for head_dim = 8 C with C a power of two up to
 * 32: thread t takes 8 dimensions (chunk t % C, one 16-byte load) of
 * position t / C + P i (P = threads / C positions per round), and
 * GS_LLM_ATTN_ROUNDS rounds of loads are issued before the first is used,
 * so a block has all its cache lines in flight at once instead of walking
 * a position's dimensions one after another. */
#define GS_LLM_ATTN_ROUNDS 4

static __device__ __forceinline__ bool attn_chunked(int head_dim) {
  int c = head_dim / 8;
  return (head_dim & 7) == 0 && c <= 32 && (c & (c - 1)) == 0;
}

static __device__ __forceinline__ void bf16x8_to_float(uint4 v, float *f) {
  const uint32_t parts[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; i++) {
    f[2 * i] = bf16_to_float((uint16_t)(parts[i] & 0xffffu));
    f[2 * i + 1] = bf16_to_float((uint16_t)(parts[i] >> 16));
  }
}

/* Chunk ch of cache rows j = j0 + u * per + slot (row stride kvw), for the
 * GS_LLM_ATTN_ROUNDS rounds u, all issued before any is used; zeros past
 * `cached`. */
static __device__ __forceinline__ void attn_load_rounds(const uint16_t *rows, int kvw, int j0,
                                                        int per, int slot, int ch, int cached,
                                                        uint4 *out) {
#pragma unroll
  for (int u = 0; u < GS_LLM_ATTN_ROUNDS; u++) {
    int j = j0 + u * per + slot;
    out[u] = j < cached ? __ldg(reinterpret_cast<const uint4 *>(rows + (uint64_t)j * kvw) + ch)
                        : make_uint4(0, 0, 0, 0);
  }
}

/* score[j] = scale * q . key j for j < len: keys j < cached from the cache
 * (row stride kvw), key len - 1 from own_k when cached < len. */
static __device__ __forceinline__ void attn_scores_chunked(const float *q, const uint16_t *keys,
                                                           int kvw, const float *own_k, int cached,
                                                           int len, int head_dim, float scale,
                                                           float *score) {
  const int chunks = head_dim / 8, per = blockDim.x / chunks;
  const int ch = threadIdx.x % chunks, slot = threadIdx.x / chunks;
  float qv[8];
#pragma unroll
  for (int i = 0; i < 8; i++) qv[i] = q[8 * ch + i];
  for (int j0 = 0; j0 < len; j0 += per * GS_LLM_ATTN_ROUNDS) {
    uint4 kv[GS_LLM_ATTN_ROUNDS];
    attn_load_rounds(keys, kvw, j0, per, slot, ch, cached, kv);
    // Round u holds position j0 + u * per + slot; the own key (position
    // len - 1 when cached < len) comes from shared memory.
#pragma unroll
    for (int u = 0, j = j0 + slot; u < GS_LLM_ATTN_ROUNDS; u++, j += per) {
      float k[8];
      bf16x8_to_float(kv[u], k);
      if (j >= cached && j < len) {
#pragma unroll
        for (int i = 0; i < 8; i++) k[i] = own_k[8 * ch + i];
      }
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < 8; i++) dot = fmaf(qv[i], k[i], dot);
      for (int o = chunks / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      if (ch == 0 && j < len) score[j] = dot * scale;
    }
  }
}

/* Each thread's share of sum_j weight[j] value j over its 8 dimensions and
 * every P-th position, into partial[slot][head_dim] (P slots); values
 * j < cached from the cache, value len - 1 from own_v when cached < len. */
static __device__ __forceinline__ void attn_values_chunked(const float *weight,
                                                           const uint16_t *values, int kvw,
                                                           const float *own_v, int cached, int len,
                                                           int head_dim, float *partial) {
  const int chunks = head_dim / 8, per = blockDim.x / chunks;
  const int ch = threadIdx.x % chunks, slot = threadIdx.x / chunks;
  float a[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  for (int j0 = 0; j0 < cached; j0 += per * GS_LLM_ATTN_ROUNDS) {
    uint4 vv[GS_LLM_ATTN_ROUNDS];
    attn_load_rounds(values, kvw, j0, per, slot, ch, cached, vv);
#pragma unroll
    for (int u = 0; u < GS_LLM_ATTN_ROUNDS; u++) {
      int j = j0 + u * per + slot;
      if (j >= cached) break;
      float v[8];
      bf16x8_to_float(vv[u], v);
      float p = weight[j];
#pragma unroll
      for (int i = 0; i < 8; i++) a[i] = fmaf(p, v[i], a[i]);
    }
  }
  if (cached < len && (len - 1) % per == slot) {
    float p = weight[len - 1];
#pragma unroll
    for (int i = 0; i < 8; i++) a[i] = fmaf(p, own_v[8 * ch + i], a[i]);
  }
#pragma unroll
  for (int i = 0; i < 8; i++) partial[slot * head_dim + 8 * ch + i] = a[i];
}

/* One block per (row, head), GS_LLM_ATTN_THREADS threads. Shared memory: the
 * query, the row's own key and value (head_dim floats each), the scores
 * (max_seq floats) and the partial outputs of the position groups (8 x
 * blockDim floats). Where head_dim / 8 is a power of two up to 32 (llama:
 * 128) scores and output take the chunked path (attn_scores_chunked,
 * attn_values_chunked: 16-byte loads, many positions in flight per round).
 * Otherwise, scores: one cached position per thread, so all positions'
 * loads are in flight at once; output: each thread owns a pair of
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
  if (ROTATE) {
    // Decode: the cached positions were written by earlier steps, not by
    // the predecessor: their keys and values are on their way to L2 while
    // it finishes (one 128-byte line per thread and round).
    int kvw = s.kv_heads * s.head_dim, kvh = blockIdx.y / (s.heads / s.kv_heads);
    const uint16_t *kb = k_cache + (uint64_t)slots[blockIdx.x] * s.max_seq * kvw + kvh * s.head_dim;
    int lines = (s.head_dim * 2 + 127) / 128, cached = (int)positions[blockIdx.x];
    for (int i = threadIdx.x; i < 2 * cached * lines; i += blockDim.x) {
      int j = (i / lines) % cached, l = i % lines;
      const uint16_t *row = (i < cached * lines ? kb : kb - k_cache + v_cache) + (uint64_t)j * kvw;
      prefetch_l2(row + 64 * l);
    }
  }
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
  const bool chunked = attn_chunked(s.head_dim);
  if (chunked)
    attn_scores_chunked(q, k_cache + base, kvw, own_k, cached, len, s.head_dim, scale, score);
  for (int j = threadIdx.x; !chunked && j < len; j += blockDim.x) {
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
  if (chunked) {
    attn_values_chunked(score, v_cache + base, kvw, own_v, cached, len, s.head_dim, partial);
    __syncthreads();
    const int slots = blockDim.x / (s.head_dim / 8);
    for (int d = threadIdx.x; d < s.head_dim; d += blockDim.x) {
      float acc = 0.0f;
      for (int g = 0; g < slots; g++) acc += partial[g * s.head_dim + d];
      out[(uint64_t)row * qw + head * s.head_dim + d] = float_to_bf16(acc / total);
    }
    return;
  }
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

/* Keeps (v, i) where v is larger than the best so far; a thread offers its
 * positions in increasing order, so among equal values its first stays. */
static __device__ __forceinline__ void argmax_take(float v, int i, float *value, int *index) {
  if (v > *value) {
    *value = v;
    *index = i;
  }
}

/* Loads of 16 bytes each thread has in flight in the argmax scan. */
#define GS_LLM_ARGMAX_LOADS 4

/* One block per row; writes the token, or with `offers` the (value, index
 * + vocab_offset) pair. A row is one block's: where it is 16-byte aligned
 * (vocab % 4 == 0) each thread reads GS_LLM_ARGMAX_LOADS 16-byte chunks per
 * round, so a row of 128256 logits takes 8 rounds instead of 125 reads one
 * after another. */
__global__ void gs_llm_argmax_kernel(const float *logits, int vocab, int32_t *tokens,
                                     uint32_t vocab_offset, float *offers) {
  start_after_predecessor();
  __shared__ float best_value[32];
  __shared__ int best_index[32];
  const float *x = logits + (uint64_t)blockIdx.x * vocab;
  float value = -INFINITY;
  int index = vocab;
  if (vocab % 4 == 0) {
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    const int chunks = vocab / 4, stride = blockDim.x * GS_LLM_ARGMAX_LOADS;
    for (int base = threadIdx.x; base < chunks; base += stride) {
      float4 v[GS_LLM_ARGMAX_LOADS];
#pragma unroll
      for (int u = 0; u < GS_LLM_ARGMAX_LOADS; u++) {
        int c = base + u * (int)blockDim.x;
        v[u] = c < chunks ? x4[c] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
      }
#pragma unroll
      for (int u = 0; u < GS_LLM_ARGMAX_LOADS; u++) {
        int i = 4 * (base + u * (int)blockDim.x);
        argmax_take(v[u].x, i, &value, &index);
        argmax_take(v[u].y, i + 1, &value, &index);
        argmax_take(v[u].z, i + 2, &value, &index);
        argmax_take(v[u].w, i + 3, &value, &index);
      }
    }
  } else {
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) argmax_take(x[i], i, &value, &index);
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

static unsigned blocks_for(uint64_t n) {
  uint64_t b = (n + GS_LLM_THREADS - 1) / GS_LLM_THREADS;
  return (unsigned)(b > 65535u * 16u ? 65535u * 16u : (b ? b : 1));
}

extern "C" cudaError_t gs_llm_cuda_init_weights(uint16_t *w, const gs_llm_slice *slice,
                                                uint64_t seed, uint32_t tensor, float scale,
                                                float offset, gs_llm_cuda_queue q) {
  return launch(q, gs_llm_init_weights_kernel, blocks_for(slice->rows * slice->cols),
                GS_LLM_THREADS, 0, w, *slice, seed, tensor, scale, offset);
}

extern "C" cudaError_t gs_llm_cuda_embed(const int32_t *tokens, const uint16_t *table, int rows,
                                         int hidden, float *h, gs_llm_cuda_queue q) {
  return launch(q, gs_llm_embed_kernel, rows, GS_LLM_THREADS, 0, tokens, table, hidden, h,
                gs_llm_cuda_norm_out{}, 0, 0);
}

extern "C" cudaError_t gs_llm_cuda_embed_norm(const int32_t *tokens, const uint16_t *table,
                                              int rows, int hidden, float *h,
                                              const gs_llm_cuda_norm_out *out, int slots,
                                              int stride, gs_llm_cuda_queue q) {
  if (!out || !out->w || slots < 1 || stride < rows) return cudaErrorInvalidValue;
  return launch(q, gs_llm_embed_kernel, rows, GS_LLM_THREADS, 0, tokens, table, hidden, h, *out,
                slots, stride);
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
  // Partial sums: 2 per thread (pairs of dimensions), or 8 (the chunked path).
  size_t shared =
      (size_t)(3 * shape.head_dim + shape.max_seq + 8 * GS_LLM_ATTN_THREADS) * sizeof(float);
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
