/* CUDA kernels of the llm model and their launchers. Host code (llm_gpu.c)
 * owns the buffers and the order of calls; each launcher enqueues one kernel
 * on its queue and returns the launch error, if any. Weights and the KV
 * cache are bfloat16 (as raw uint16_t bits), the residual stream and GEMM
 * outputs are float. Row r of a batch is token r of sequence slots[r] at
 * position positions[r]. */
#ifndef GS_LLM_CUDA_H
#define GS_LLM_CUDA_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "workloads/llm/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a launcher enqueues its kernel. With `overlap` (GPUs of compute
 * capability 9.0 and later) the kernel is launched as a programmatic
 * dependent of the previous one: it may start while that one finishes,
 * streams its first weights meanwhile and waits for the data it needs
 * (inside CUDA graphs too). Without, kernels run strictly one after another. */
typedef struct {
  cudaStream_t stream;
  int overlap;
} gs_llm_cuda_queue;

/* Shape of one attention layer as the kernels see it. */
typedef struct {
  int heads, kv_heads, head_dim;
  int max_seq; /* positions per slot in the cache */
} gs_llm_cuda_attn_shape;

/* w[i] = gs_llm_weight_value(seed, tensor, whole index of i, scale,
 * offset) for the i < rows x cols elements of `slice` (model.h). */
cudaError_t gs_llm_cuda_init_weights(uint16_t *w, const gs_llm_slice *slice, uint64_t seed,
                                     uint32_t tensor, float scale, float offset,
                                     gs_llm_cuda_queue q);

/* h[r] = table[tokens[r]] as float, r < rows. */
cudaError_t gs_llm_cuda_embed(const int32_t *tokens, const uint16_t *table, int rows, int hidden,
                              float *h, gs_llm_cuda_queue q);

/* out[r] = bf16(rmsnorm(h[row_map ? row_map[r] : r]) * w), r < rows. */
cudaError_t gs_llm_cuda_rmsnorm(const float *h, const uint32_t *row_map, const uint16_t *w,
                                int rows, int hidden, float eps, uint16_t *out,
                                gs_llm_cuda_queue q);

/* Rotates q and k of each row of qkv (rows x (heads + 2 kv) head_dim) in
 * place and stores k and v as bfloat16 in the layer's cache
 * ([slot][position][kv_heads * head_dim]). rope holds (cos, sin) of
 * position p and pair i at [(p * head_dim / 2 + i) * 2] (gs_llm_rope_table). */
cudaError_t gs_llm_cuda_rope_cache(float *qkv, const uint32_t *slots, const uint32_t *positions,
                                   const float *rope, int rows, gs_llm_cuda_attn_shape shape,
                                   uint16_t *k_cache, uint16_t *v_cache, gs_llm_cuda_queue q);

/* out[r] (rows x heads head_dim, bfloat16) = attention of row r's query
 * over cache positions 0..positions[r] of slots[r]. Without `rope`
 * (prefill) the queries in qkv are rotated and every position is in the
 * cache (gs_llm_cuda_rope_cache). With `rope` (decode: one row per
 * sequence) the kernel rotates the query and the row's key itself and
 * writes the row's key and value to the cache: the same results as
 * gs_llm_cuda_rope_cache followed by this without `rope`, one kernel fewer. */
cudaError_t gs_llm_cuda_attention(const float *qkv, const uint32_t *slots,
                                  const uint32_t *positions, const float *rope, int rows,
                                  gs_llm_cuda_attn_shape shape, uint16_t *k_cache,
                                  uint16_t *v_cache, uint16_t *out, gs_llm_cuda_queue q);

/* out[r][i] = bf16(silu(gu[r][i]) * gu[r][ffn + i]). */
cudaError_t gs_llm_cuda_swiglu(const float *gu, int rows, int ffn, uint16_t *out,
                               gs_llm_cuda_queue q);

/* tokens[r] = argmax of logits[r] (first index on ties), r < rows. */
cudaError_t gs_llm_cuda_argmax(const float *logits, int rows, int vocab, int32_t *tokens,
                               gs_llm_cuda_queue q);

/* A tensor-parallel shard's offer for each row's token: offers[2r] = the
 * largest of its logits[r] (vocab of them), offers[2r + 1] = its index
 * plus vocab_offset (as a float; exact below 2^24), first index on ties. */
cudaError_t gs_llm_cuda_argmax_offer(const float *logits, int rows, int vocab,
                                     uint32_t vocab_offset, float *offers, gs_llm_cuda_queue q);

/* tokens[r] = the index of the best of the shards' offers for row r
 * (all = shards x rows offers as gs_llm_cuda_argmax_offer writes them):
 * the larger value, the lower index on ties. */
cudaError_t gs_llm_cuda_pick_offer(const float *all, int shards, int rows, int32_t *tokens,
                                   gs_llm_cuda_queue q);

/* h[i] += part[i], i < n. */
cudaError_t gs_llm_cuda_add(float *h, const float *part, uint64_t n, gs_llm_cuda_queue q);

/* positions[i] += 1, i < n. */
cudaError_t gs_llm_cuda_advance(uint32_t *positions, int n, gs_llm_cuda_queue q);

/* y[r][o] (+)= sum_k w[o][k] x[r][k] for r < rows (1..8), o < outs: a
 * weight-streaming GEMV that reads each weight once for all rows.
 * ins must be a multiple of 8 and the pointers 16-byte aligned. */
cudaError_t gs_llm_cuda_gemv(const uint16_t *w, const uint16_t *x, float *y, int rows, int outs,
                             int ins, int accumulate, gs_llm_cuda_queue q);

/* Rows the tensor-core GEMV takes at most (two column tiles of 8). Beyond,
 * each block would read the inputs of more rows from L2 than it streams
 * weights: on an H100 cuBLAS is faster at 32 rows, the GEMV at 16
 * (docs/workloads/llm.md, Speed). */
#define GS_LLM_MMA_MAX_ROWS 16

/* The same product on tensor cores (mma m16n8k16, fp32 accumulate): 16
 * outputs per block for up to 16 rows (8 per column tile), K split over its
 * warps. rows 1..GS_LLM_MMA_MAX_ROWS, ins % 64 == 0. */
cudaError_t gs_llm_cuda_gemv_mma(const uint16_t *w, const uint16_t *x, float *y, int rows, int outs,
                                 int ins, int accumulate, gs_llm_cuda_queue q);

/* An RMSNorm split over the two GEMVs around it, so that no kernel of its
 * own runs: rmsnorm(h) w x = rsqrt(mean(h^2) + eps) (h * w) x. The GEMV
 * that updates h (the producer) also writes u = bf16(h * w) and adds each
 * row's h^2 into `squares` (one float per row, zero before); the GEMV that
 * reads u (the consumer) scales each output of row r by
 * rsqrt(squares[r] / ins + eps). The product differs from normalizing
 * first only in where it rounds to bfloat16 (u before the scale). */
typedef struct {
  const uint16_t *w; /* the norm's weights (outs of the producer) */
  uint16_t *u;       /* rows x outs: bf16(h * w) */
  float *squares;    /* rows: sum of h^2 over the row, accumulated */
} gs_llm_cuda_norm_out;

typedef struct {
  const float *squares; /* rows: as the producer left them */
  float eps;
} gs_llm_cuda_norm_in;

/* gs_llm_cuda_gemv_mma with either half of a split norm (NULL: none):
 * `in` scales the outputs (x is a producer's u), `out` (with accumulate:
 * y is the residual stream h) writes the next norm's u and squares. */
cudaError_t gs_llm_cuda_gemv_mma_norm(const uint16_t *w, const uint16_t *x, float *y, int rows,
                                      int outs, int ins, int accumulate,
                                      const gs_llm_cuda_norm_in *in,
                                      const gs_llm_cuda_norm_out *out, gs_llm_cuda_queue q);

/* h[r] = table[tokens[r]] as float and, as a split norm's producer,
 * out->u[r] = bf16(h[r] * out->w) and out->squares[r] = sum of h[r]^2;
 * also zeroes squares[r + k * stride] for 0 < k < slots (the rows of the
 * step's later norms). */
cudaError_t gs_llm_cuda_embed_norm(const int32_t *tokens, const uint16_t *table, int rows,
                                   int hidden, float *h, const gs_llm_cuda_norm_out *out,
                                   int slots, int stride, gs_llm_cuda_queue q);

/* The MLP's gate/up projection and SwiGLU in one tensor-core GEMV: with w
 * the 2 ffn x ins gate-then-up matrix, out[r][i] = bf16(silu(g) * u) for
 * g, u = rows i and ffn + i of w times x[r] (the values of gs_llm_cuda_gemv_mma
 * followed by gs_llm_cuda_swiglu). rows 1..GS_LLM_MMA_MAX_ROWS, ins % 64 == 0. */
cudaError_t gs_llm_cuda_gemv_mma_swiglu(const uint16_t *w, const uint16_t *x, uint16_t *out,
                                        int rows, int ffn, int ins, gs_llm_cuda_queue q);

/* The same with a split norm's consumer half (gs_llm_cuda_norm_in): gate
 * and up are scaled before the SwiGLU. */
cudaError_t gs_llm_cuda_gemv_mma_swiglu_norm(const uint16_t *w, const uint16_t *x, uint16_t *out,
                                             int rows, int ffn, int ins,
                                             const gs_llm_cuda_norm_in *in, gs_llm_cuda_queue q);

#ifdef __cplusplus
}
#endif

#endif
