/* The CPU reference of the llm model: plain float loops over the same
 * bfloat16 weights as the GPU, rounding to bfloat16 exactly where the GPU
 * stores bfloat16 (GEMM inputs, KV cache). It is the no-GPU backend and the
 * oracle for the GPU tests. The primitives are public for the unit tests. */
#ifndef GS_LLM_CPU_H
#define GS_LLM_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "platform/comm.h"
#include "workloads/llm/engine.h"
#include "workloads/llm/llm_tp.h"

typedef struct gs_llm_cpu_model gs_llm_cpu_model;

/* The whole model. */
gs_status gs_llm_cpu_create(const gs_llm_engine_config *config, gs_llm_cpu_model **out);

/* Shard `shard` of a tensor-parallel replica (model.h, gs_llm_shard): the
 * partial sums of the attention output and MLP projections are added over
 * `comm` (a host all-reduce over the stage's shards, which call forward
 * together: threads of one process or processes), and its logits are those of its vocabulary rows. */
gs_status gs_llm_cpu_create_shard(const gs_llm_engine_config *config, gs_llm_shard shard,
                                  const gs_llm_tp_comm *comm, gs_llm_cpu_model **out);
void gs_llm_cpu_destroy(gs_llm_cpu_model *m);

/* Runs `rows` tokens through the model: row r is token tokens[r] of the
 * sequence in slot slots[r] at position positions[r]. Each row's key and
 * value enter the cache before attention, so rows of one sequence attend
 * causally to each other. Logits of rows out_rows[0..n_out) go to
 * logits (n_out x the shard's vocabulary rows). */
gs_status gs_llm_cpu_forward(gs_llm_cpu_model *m, size_t rows, const int32_t *tokens,
                             const uint32_t *slots, const uint32_t *positions, size_t n_out,
                             const uint32_t *out_rows, float *logits);

/* A pipeline stage's part of gs_llm_cpu_forward (config.layer_begin ..
 * layer_end): the first stage embeds `tokens`, a later one starts from the
 * residual stream h_in (rows x hidden floats, the stage before's h_out);
 * the last stage writes logits as gs_llm_cpu_forward does, the others the
 * stream after their layers to h_out. The whole model is its own first
 * and last stage. */
gs_status gs_llm_cpu_stage_forward(gs_llm_cpu_model *m, size_t rows, const int32_t *tokens,
                                   const float *h_in, const uint32_t *slots,
                                   const uint32_t *positions, size_t n_out,
                                   const uint32_t *out_rows, float *logits, float *h_out);

/* out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i], i < n. */
void gs_llm_cpu_rmsnorm(const float *x, const float *w, size_t n, double eps, float *out);

/* Rotates one head vector in place (Llama "rotate half" pairing: element i
 * with i + head_dim/2, angle position * theta^(-2i/head_dim)). */
void gs_llm_cpu_rope(float *v, size_t head_dim, uint32_t position, double theta);

/* The rotation gs_llm_cpu_rope applies, as a table: (cos, sin) of position p
 * and pair i at table[(p * head_dim / 2 + i) * 2], p < positions. The GPU
 * uses it, so both sides rotate by the same floats. */
void gs_llm_rope_table(const gs_llm_shape *s, uint32_t positions, float *table);

/* Attention of one query head over `len` cached positions: keys and values
 * at keys + j * stride, values + j * stride (head_dim floats each);
 * out = softmax(q.k_j / sqrt(head_dim)) weighted sum of v_j. `score` is
 * scratch for len floats. */
void gs_llm_cpu_attention(const float *q, const float *keys, const float *values, size_t stride,
                          size_t len, size_t head_dim, float *score, float *out);

/* silu(gate) * up. */
float gs_llm_cpu_swiglu(float gate, float up);

/* Index of the largest value (the first one on ties). */
uint32_t gs_llm_cpu_argmax(const float *x, size_t n);

#endif
