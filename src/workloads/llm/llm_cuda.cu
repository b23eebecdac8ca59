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

#define LLM_THREADS 256
#define LLM_GEMV_WARPS 8   /* rows of the output per GEMV block */
#define LLM_GEMV_UNROLL 4  /* 16-byte weight loads in flight per lane */

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

__global__ void llm_init_weights_kernel(uint16_t *w, uint64_t n, uint64_t seed, uint32_t tensor,
                                        float scale, float offset) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x)
    w[i] = llm_weight_value(seed, tensor, i, scale, offset);
}

__global__ void llm_embed_kernel(const int32_t *tokens, const uint16_t *table, int hidden,
                                 float *h) {
  const uint16_t *row = table + (uint64_t)tokens[blockIdx.x] * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x)
    h[(uint64_t)blockIdx.x * hidden + i] = bf16_to_float(row[i]);
}

__global__ void llm_rmsnorm_kernel(const float *h, const uint32_t *row_map, const uint16_t *w,
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

__global__ void llm_rope_cache_kernel(float *qkv, const uint32_t *slots,
                                      const uint32_t *positions, llm_cuda_attn_shape s,
                                      uint16_t *k_cache, uint16_t *v_cache) {
  int half = s.head_dim / 2, qw = s.heads * s.head_dim, kvw = s.kv_heads * s.head_dim;
  float *row = qkv + (uint64_t)blockIdx.x * (qw + 2 * kvw);
  uint32_t pos = positions[blockIdx.x];
  uint64_t at = ((uint64_t)slots[blockIdx.x] * s.max_seq + pos) * kvw;
  int pairs = (s.heads + s.kv_heads) * half;
  for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
    int head = p / half, i = p % half;
    double angle = (double)pos * pow(s.rope_theta, -2.0 * (double)i / (double)s.head_dim);
    float c = (float)cos(angle), sn = (float)sin(angle);
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
  for (int i = threadIdx.x; i < kvw; i += blockDim.x) v_cache[at + i] = float_to_bf16(row[qw + kvw + i]);
}

/* One block per (row, head). Scores live in shared memory (max_seq floats
 * after the head_dim query floats). */
__global__ void llm_attention_kernel(const float *qkv, const uint32_t *slots,
                                     const uint32_t *positions, llm_cuda_attn_shape s,
                                     const uint16_t *k_cache, const uint16_t *v_cache,
                                     uint16_t *out) {
  extern __shared__ float shared[];
  __shared__ float scratch[32];
  float *q = shared, *score = shared + s.head_dim;
  int row = blockIdx.x, head = blockIdx.y;
  int qw = s.heads * s.head_dim, kvw = s.kv_heads * s.head_dim;
  int kvh = head / (s.heads / s.kv_heads);
  const float *qsrc = qkv + (uint64_t)row * (qw + 2 * kvw) + head * s.head_dim;
  for (int d = threadIdx.x; d < s.head_dim; d += blockDim.x) q[d] = qsrc[d];
  __syncthreads();
  int len = (int)positions[row] + 1;
  uint64_t base = (uint64_t)slots[row] * s.max_seq * kvw + (uint64_t)kvh * s.head_dim;
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  float scale = rsqrtf((float)s.head_dim);
  for (int j = warp; j < len; j += warps) {
    const uint16_t *k = k_cache + base + (uint64_t)j * kvw;
    float dot = 0.0f;
    for (int d = lane; d < s.head_dim; d += 32) dot += q[d] * bf16_to_float(k[d]);
    dot = warp_sum(dot);
    if (lane == 0) score[j] = dot * scale;
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
  for (int d = threadIdx.x; d < s.head_dim; d += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < len; j++) acc += score[j] * bf16_to_float(v_cache[base + (uint64_t)j * kvw + d]);
    out[(uint64_t)row * qw + head * s.head_dim + d] = float_to_bf16(acc / total);
  }
}

__global__ void llm_swiglu_kernel(const float *gu, int rows, int ffn, uint16_t *out) {
  uint64_t n = (uint64_t)rows * ffn;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x) {
    uint64_t r = i / ffn, c = i % ffn;
    float g = gu[r * 2 * ffn + c], u = gu[r * 2 * ffn + ffn + c];
    out[i] = float_to_bf16(g / (1.0f + __expf(-g)) * u);
  }
}

__global__ void llm_argmax_kernel(const float *logits, int vocab, int32_t *tokens) {
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
    tokens[blockIdx.x] = index < vocab ? index : 0;
  }
}

__global__ void llm_advance_kernel(uint32_t *positions, int n) {
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
 * LLM_GEMV_UNROLL of them in flight, and applies each to all ROWS inputs
 * (which stay in L1/L2: they are a few KiB). */
template <int ROWS>
__global__ void __launch_bounds__(LLM_GEMV_WARPS * 32)
    llm_gemv_kernel(const uint16_t *w, const uint16_t *x, float *y, int outs, int ins,
                    int accumulate) {
  int lane = threadIdx.x & 31;
  int o = blockIdx.x * LLM_GEMV_WARPS + (threadIdx.x >> 5);
  if (o >= outs) return;
  int chunks = ins / 8;
  const uint4 *wrow = reinterpret_cast<const uint4 *>(w + (uint64_t)o * ins);
  const uint4 *xv = reinterpret_cast<const uint4 *>(x);
  float acc[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; r++) acc[r] = 0.0f;
  for (int base = lane; base < chunks; base += 32 * LLM_GEMV_UNROLL) {
    uint4 wv[LLM_GEMV_UNROLL];
#pragma unroll
    for (int u = 0; u < LLM_GEMV_UNROLL; u++) {
      int c = base + u * 32;
      wv[u] = c < chunks ? __ldcs(wrow + c) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < LLM_GEMV_UNROLL; u++) {
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

static unsigned blocks_for(uint64_t n) {
  uint64_t b = (n + LLM_THREADS - 1) / LLM_THREADS;
  return (unsigned)(b > 65535u * 16u ? 65535u * 16u : (b ? b : 1));
}

extern "C" cudaError_t llm_cuda_init_weights(uint16_t *w, uint64_t n, uint64_t seed,
                                             uint32_t tensor, float scale, float offset,
                                             cudaStream_t stream) {
  llm_init_weights_kernel<<<blocks_for(n), LLM_THREADS, 0, stream>>>(w, n, seed, tensor, scale, offset);
  return cudaGetLastError();
}

extern "C" cudaError_t llm_cuda_embed(const int32_t *tokens, const uint16_t *table, int rows,
                                      int hidden, float *h, cudaStream_t stream) {
  llm_embed_kernel<<<rows, LLM_THREADS, 0, stream>>>(tokens, table, hidden, h);
  return cudaGetLastError();
}

extern "C" cudaError_t llm_cuda_rmsnorm(const float *h, const uint32_t *row_map, const uint16_t *w,
                                        int rows, int hidden, float eps, uint16_t *out,
                                        cudaStream_t stream) {
  llm_rmsnorm_kernel<<<rows, 512, 0, stream>>>(h, row_map, w, hidden, eps, out);
  return cudaGetLastError();
}

extern "C" cudaError_t llm_cuda_rope_cache(float *qkv, const uint32_t *slots,
                                           const uint32_t *positions, int rows,
                                           llm_cuda_attn_shape shape, uint16_t *k_cache,
                                           uint16_t *v_cache, cudaStream_t stream) {
  llm_rope_cache_kernel<<<rows, LLM_THREADS, 0, stream>>>(qkv, slots, positions, shape, k_cache, v_cache);
  return cudaGetLastError();
}

extern "C" cudaError_t llm_cuda_attention(const float *qkv, const uint32_t *slots,
                                          const uint32_t *positions, int rows,
                                          llm_cuda_attn_shape shape, const uint16_t *k_cache,
                                          const uint16_t *v_cache, uint16_t *out,
                                          cudaStream_t stream) {
  size_t shared = (size_t)(shape.head_dim + shape.max_seq) * sizeof(float);
  if (shared > 48 * 1024) {
    cudaError_t e = cudaFuncSetAttribute(llm_attention_kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared);
    if (e != cudaSuccess) return e;
  }
  dim3 grid((unsigned)rows, (unsigned)shape.heads);
  llm_attention_kernel<<<grid, 128, shared, stream>>>(qkv, slots, positions, shape, k_cache, v_cache, out);
  return cudaGetLastError();
}

extern "C" cudaError_t llm_cuda_swiglu(const float *gu, int rows, int ffn, uint16_t *out,
                                       cudaStream_t stream) {
  llm_swiglu_kernel<<<blocks_for((uint64_t)rows * ffn), LLM_THREADS, 0, stream>>>(gu, rows, ffn, out);
  return cudaGetLastError();
}

extern "C" cudaError_t llm_cuda_argmax(const float *logits, int rows, int vocab, int32_t *tokens,
                                       cudaStream_t stream) {
  llm_argmax_kernel<<<rows, 1024, 0, stream>>>(logits, vocab, tokens);
  return cudaGetLastError();
}

extern "C" cudaError_t llm_cuda_advance(uint32_t *positions, int n, cudaStream_t stream) {
  llm_advance_kernel<<<(n + 255) / 256, 256, 0, stream>>>(positions, n);
  return cudaGetLastError();
}

extern "C" cudaError_t llm_cuda_gemv(const uint16_t *w, const uint16_t *x, float *y, int rows,
                                     int outs, int ins, int accumulate, cudaStream_t stream) {
  unsigned grid = (unsigned)((outs + LLM_GEMV_WARPS - 1) / LLM_GEMV_WARPS);
  unsigned threads = LLM_GEMV_WARPS * 32;
  switch (rows) {
    case 1: llm_gemv_kernel<1><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate); break;
    case 2: llm_gemv_kernel<2><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate); break;
    case 3: llm_gemv_kernel<3><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate); break;
    case 4: llm_gemv_kernel<4><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate); break;
    case 5: llm_gemv_kernel<5><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate); break;
    case 6: llm_gemv_kernel<6><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate); break;
    case 7: llm_gemv_kernel<7><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate); break;
    case 8: llm_gemv_kernel<8><<<grid, threads, 0, stream>>>(w, x, y, outs, ins, accumulate); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}
