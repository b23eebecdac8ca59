/* The CPU reference of the llm model (see llm_cpu.h). */
#include "workloads/llm/llm_cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "platform/trace.h"

typedef struct {
  float *w[GS_LLM_LAYER_KINDS];
} cpu_layer;

struct gs_llm_cpu_model {
  gs_llm_engine_config config;
  gs_llm_shard shard;
  gs_llm_shard_dims dims; /* what this shard holds */
  const gs_llm_tp_comm *comm; /* the stage's other shards; NULL for the whole model */
  uint64_t lo, hi;        /* decoder layers [lo, hi) (a pipeline stage's; else all) */
  float *embed, *final_norm, *lm_head; /* NULL where the stage has none */
  cpu_layer *layers;      /* hi - lo, layer l at l - lo */
  float *k_cache, *v_cache; /* [layer - lo][slot][position][shard kv_heads * head_dim] */
  /* Scratch for `rows` rows. */
  size_t scratch_rows;
  float *h, *x, *qkv, *att, *gu, *act, *part;
  float *scores; /* max_seq attention scores */
};

/* The shard's slice of a tensor, as floats. */
static float *make_tensor(const gs_llm_cpu_model *m, uint32_t tensor) {
  const gs_llm_shape *s = &m->config.shape;
  gs_llm_slice slice;
  gs_llm_shard_slice(s, tensor, m->shard, &slice);
  uint64_t n = slice.rows * slice.cols;
  float *t = malloc(n * sizeof *t);
  if (!t) return NULL;
  float scale, offset;
  gs_llm_tensor_init(s, tensor, &scale, &offset);
  for (uint64_t i = 0; i < n; i++)
    t[i] = gs_llm_float_from_bf16(
        gs_llm_weight_value(m->config.seed, tensor, gs_llm_slice_index(&slice, i), scale, offset));
  return t;
}

static size_t cache_floats(const gs_llm_cpu_model *m) {
  const gs_llm_engine_config *c = &m->config;
  return (size_t)(m->hi - m->lo) * c->max_batch * c->max_seq * m->dims.kv_heads *
         gs_llm_head_dim(&c->shape);
}

gs_status gs_llm_cpu_create(const gs_llm_engine_config *config, gs_llm_cpu_model **out) {
  return gs_llm_cpu_create_shard(config, (gs_llm_shard){0, 1}, NULL, out);
}

gs_status gs_llm_cpu_create_shard(const gs_llm_engine_config *config, gs_llm_shard shard,
                                  const gs_llm_tp_comm *comm, gs_llm_cpu_model **out) {
  *out = NULL;
  gs_llm_cpu_model *m = calloc(1, sizeof *m);
  if (!m) return gs_error(GS_ERR_NOMEM, "cannot allocate the CPU model");
  m->config = *config;
  m->shard = shard;
  m->comm = comm;
  const gs_llm_shape *s = &config->shape;
  gs_llm_shard_sizes(s, shard, &m->dims);
  gs_llm_engine_layers(config, &m->lo, &m->hi);
  const int first = m->lo == 0, last = m->hi == s->layers;
  m->embed = first ? make_tensor(m, GS_LLM_T_EMBED) : NULL;
  m->final_norm = last ? make_tensor(m, GS_LLM_T_FINAL_NORM) : NULL;
  m->lm_head = last ? make_tensor(m, GS_LLM_T_LM_HEAD) : NULL;
  m->layers = calloc(m->hi - m->lo + 1, sizeof *m->layers);
  m->k_cache = calloc(cache_floats(m) + 1, sizeof *m->k_cache);
  m->v_cache = calloc(cache_floats(m) + 1, sizeof *m->v_cache);
  m->scores = calloc(config->max_seq, sizeof *m->scores);
  int ok = (m->embed || !first) && ((m->final_norm && m->lm_head) || !last) && m->layers &&
           m->k_cache && m->v_cache && m->scores;
  for (uint64_t l = m->lo; ok && l < m->hi; l++) {
    for (int k = 0; ok && k < GS_LLM_LAYER_KINDS; k++) {
      m->layers[l - m->lo].w[k] = make_tensor(m, gs_llm_layer_tensor(l, k));
      ok = m->layers[l - m->lo].w[k] != NULL;
    }
  }
  if (!ok) {
    gs_llm_cpu_destroy(m);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the CPU model's weights (%llu parameters)",
                    (unsigned long long)gs_llm_parameter_count(s));
  }
  *out = m;
  return GS_OK;
}

static void free_scratch(gs_llm_cpu_model *m) {
  free(m->h);
  free(m->x);
  free(m->qkv);
  free(m->att);
  free(m->gu);
  free(m->act);
  free(m->part);
  m->h = m->x = m->qkv = m->att = m->gu = m->act = m->part = NULL;
  m->scratch_rows = 0;
}

void gs_llm_cpu_destroy(gs_llm_cpu_model *m) {
  if (!m) return;
  if (m->layers)
    for (uint64_t l = m->lo; l < m->hi; l++)
      for (int k = 0; k < GS_LLM_LAYER_KINDS; k++) free(m->layers[l - m->lo].w[k]);
  free(m->layers);
  free(m->embed);
  free(m->final_norm);
  free(m->lm_head);
  free(m->k_cache);
  free(m->v_cache);
  free(m->scores);
  free_scratch(m);
  free(m);
}

static gs_status ensure_scratch(gs_llm_cpu_model *m, size_t rows) {
  if (rows <= m->scratch_rows) return GS_OK;
  free_scratch(m);
  const gs_llm_shape *s = &m->config.shape;
  const gs_llm_shard_dims *d = &m->dims;
  size_t hd = gs_llm_head_dim(s);
  m->h = malloc(rows * s->hidden * sizeof(float));
  m->x = malloc(rows * s->hidden * sizeof(float));
  m->qkv = malloc(rows * (d->heads + 2 * d->kv_heads) * hd * sizeof(float));
  m->att = malloc(rows * d->heads * hd * sizeof(float));
  m->gu = malloc(rows * 2 * d->ffn * sizeof(float));
  m->act = malloc(rows * d->ffn * sizeof(float));
  m->part = malloc(rows * s->hidden * sizeof(float));
  if (!m->h || !m->x || !m->qkv || !m->att || !m->gu || !m->act || !m->part) {
    free_scratch(m);
    return gs_error(GS_ERR_NOMEM, "cannot allocate CPU scratch for %zu rows", rows);
  }
  m->scratch_rows = rows;
  return GS_OK;
}

void gs_llm_cpu_rmsnorm(const float *x, const float *w, size_t n, double eps, float *out) {
  double sum = 0.0;
  for (size_t i = 0; i < n; i++) sum += (double)x[i] * x[i];
  float inv = (float)(1.0 / sqrt(sum / (double)n + eps));
  for (size_t i = 0; i < n; i++) out[i] = x[i] * inv * w[i];
}

static void rope_angle(size_t head_dim, uint32_t position, size_t i, double theta, float *c,
                       float *s) {
  double angle = (double)position * pow(theta, -2.0 * (double)i / (double)head_dim);
  *c = (float)cos(angle);
  *s = (float)sin(angle);
}

void gs_llm_cpu_rope(float *v, size_t head_dim, uint32_t position, double theta) {
  size_t half = head_dim / 2;
  for (size_t i = 0; i < half; i++) {
    float c, s;
    rope_angle(head_dim, position, i, theta, &c, &s);
    float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = b * c + a * s;
  }
}

void gs_llm_rope_table(const gs_llm_shape *s, uint32_t positions, float *table) {
  size_t hd = gs_llm_head_dim(s), half = hd / 2;
  for (uint32_t p = 0; p < positions; p++)
    for (size_t i = 0; i < half; i++)
      rope_angle(hd, p, i, s->rope_theta, &table[(p * half + i) * 2],
                 &table[(p * half + i) * 2 + 1]);
}

void gs_llm_cpu_attention(const float *q, const float *keys, const float *values, size_t stride,
                          size_t len, size_t head_dim, float *score, float *out) {
  float scale = 1.0f / sqrtf((float)head_dim);
  float top = -INFINITY;
  for (size_t j = 0; j < len; j++) {
    float dot = 0.0f;
    for (size_t d = 0; d < head_dim; d++) dot += q[d] * keys[j * stride + d];
    score[j] = dot * scale;
    if (score[j] > top) top = score[j];
  }
  float total = 0.0f;
  for (size_t j = 0; j < len; j++) {
    score[j] = expf(score[j] - top);
    total += score[j];
  }
  for (size_t d = 0; d < head_dim; d++) {
    float acc = 0.0f;
    for (size_t j = 0; j < len; j++) acc += score[j] * values[j * stride + d];
    out[d] = acc / total;
  }
}

float gs_llm_cpu_swiglu(float gate, float up) {
  return gate / (1.0f + expf(-gate)) * up;
}

uint32_t gs_llm_cpu_argmax(const float *x, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return (uint32_t)best;
}

/* y[r][o] (+)= sum_k w[o][k] x[r][k] for rows r < rows, o < outs. */
static void linear(const float *w, const float *x, size_t rows, size_t outs, size_t ins, float *y,
                   int accumulate) {
  for (size_t r = 0; r < rows; r++) {
    const float *xr = x + r * ins;
    for (size_t o = 0; o < outs; o++) {
      const float *wo = w + o * ins;
      float acc = 0.0f;
      for (size_t k = 0; k < ins; k++) acc += wo[k] * xr[k];
      y[r * outs + o] = accumulate ? y[r * outs + o] + acc : acc;
    }
  }
}

static void round_bf16_all(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = gs_llm_round_bf16(x[i]);
}

static void norm_rows(const gs_llm_shape *s, const float *h, const float *w, size_t rows,
                      float *x) {
  for (size_t r = 0; r < rows; r++)
    gs_llm_cpu_rmsnorm(h + r * s->hidden, w, s->hidden, s->norm_eps, x + r * s->hidden);
  round_bf16_all(x, rows * s->hidden);
}

static void attention_block(gs_llm_cpu_model *m, uint64_t layer, size_t rows, const uint32_t *slots,
                            const uint32_t *positions) {
  const gs_llm_engine_config *c = &m->config;
  const gs_llm_shape *s = &c->shape;
  const size_t heads = m->dims.heads, kv_heads = m->dims.kv_heads;
  size_t hd = gs_llm_head_dim(s), kvw = kv_heads * hd, qw = heads * hd, row_w = qw + 2 * kvw;
  size_t layer_base = (size_t)(layer - m->lo) * c->max_batch * c->max_seq * kvw;
  // All rows enter the cache first: rows of one sequence see each other.
  for (size_t r = 0; r < rows; r++) {
    float *qkv = m->qkv + r * row_w;
    for (size_t h = 0; h < heads; h++) gs_llm_cpu_rope(qkv + h * hd, hd, positions[r], s->rope_theta);
    for (size_t h = 0; h < kv_heads; h++)
      gs_llm_cpu_rope(qkv + qw + h * hd, hd, positions[r], s->rope_theta);
    size_t at = layer_base + ((size_t)slots[r] * c->max_seq + positions[r]) * kvw;
    for (size_t i = 0; i < kvw; i++) {
      m->k_cache[at + i] = gs_llm_round_bf16(qkv[qw + i]);
      m->v_cache[at + i] = gs_llm_round_bf16(qkv[qw + kvw + i]);
    }
  }
  size_t group = s->heads / s->kv_heads;
  for (size_t r = 0; r < rows; r++) {
    size_t base = layer_base + (size_t)slots[r] * c->max_seq * kvw;
    for (size_t h = 0; h < heads; h++) {
      size_t kvh = h / group;
      gs_llm_cpu_attention(m->qkv + r * row_w + h * hd, m->k_cache + base + kvh * hd,
                           m->v_cache + base + kvh * hd, kvw, (size_t)positions[r] + 1, hd,
                           m->scores, m->att + r * qw + h * hd);
    }
  }
  round_bf16_all(m->att, rows * qw);
}

/* h += the sum over the shards of y = w x (rows x hidden): the shard's own
 * product, all-reduced when the model is split, then added. */
static gs_status add_projection(gs_llm_cpu_model *m, const float *w, const float *x, size_t rows,
                                size_t ins) {
  const size_t hidden = m->config.shape.hidden, n = rows * hidden;
  linear(w, x, rows, hidden, ins, m->part, 0);
  if (m->comm) {
    gs_trace_begin(GS_TRACE_COMM, "tp allreduce", -1, NULL);
    gs_status st = gs_llm_tp_allreduce(m->comm, m->part, n, NULL);
    gs_trace_end();
    GS_TRY(st);
  }
  for (size_t i = 0; i < n; i++) m->h[i] += m->part[i];
  return GS_OK;
}

gs_status gs_llm_cpu_forward(gs_llm_cpu_model *m, size_t rows, const int32_t *tokens,
                             const uint32_t *slots, const uint32_t *positions, size_t n_out,
                             const uint32_t *out_rows, float *logits) {
  return gs_llm_cpu_stage_forward(m, rows, tokens, NULL, slots, positions, n_out, out_rows, logits,
                                  NULL);
}

gs_status gs_llm_cpu_stage_forward(gs_llm_cpu_model *m, size_t rows, const int32_t *tokens,
                                   const float *h_in, const uint32_t *slots,
                                   const uint32_t *positions, size_t n_out,
                                   const uint32_t *out_rows, float *logits, float *h_out) {
  const gs_llm_engine_config *c = &m->config;
  const gs_llm_shape *s = &c->shape;
  const gs_llm_shard_dims *d = &m->dims;
  const int first = m->embed != NULL, last = m->lm_head != NULL;
  if ((first && !tokens) || (!first && !h_in) || (last && !logits && n_out) || (!last && !h_out))
    GS_BUG("llm CPU stage of layers %llu..%llu called without its input or output",
           (unsigned long long)m->lo, (unsigned long long)m->hi);
  for (size_t r = 0; r < rows; r++) {
    const int32_t t = first ? tokens[r] : 0;
    if (t < 0 || (uint64_t)t >= s->vocab || slots[r] >= c->max_batch ||
        positions[r] >= c->max_seq)
      GS_BUG("llm CPU forward: row %zu has token %d, slot %u, position %u", r, t, slots[r],
             positions[r]);
  }
  for (size_t i = 0; i < n_out; i++)
    if (out_rows[i] >= rows)
      GS_BUG("llm CPU forward: output row %u of %zu", out_rows[i], rows);
  GS_TRY(ensure_scratch(m, rows));
  size_t hd = gs_llm_head_dim(s);
  if (first)
    for (size_t r = 0; r < rows; r++)
      memcpy(m->h + r * s->hidden, m->embed + (size_t)tokens[r] * s->hidden,
             s->hidden * sizeof(float));
  else
    memcpy(m->h, h_in, rows * s->hidden * sizeof(float));
  for (uint64_t l = m->lo; l < m->hi; l++) {
    float *const *w = m->layers[l - m->lo].w;
    norm_rows(s, m->h, w[GS_LLM_K_ATTN_NORM], rows, m->x);
    linear(w[GS_LLM_K_QKV], m->x, rows, (d->heads + 2 * d->kv_heads) * hd, s->hidden, m->qkv, 0);
    attention_block(m, l, rows, slots, positions);
    GS_TRY(add_projection(m, w[GS_LLM_K_WO], m->att, rows, d->heads * hd));
    norm_rows(s, m->h, w[GS_LLM_K_MLP_NORM], rows, m->x);
    linear(w[GS_LLM_K_GATE_UP], m->x, rows, 2 * d->ffn, s->hidden, m->gu, 0);
    for (size_t r = 0; r < rows; r++)
      for (size_t i = 0; i < d->ffn; i++)
        m->act[r * d->ffn + i] = gs_llm_round_bf16(
            gs_llm_cpu_swiglu(m->gu[r * 2 * d->ffn + i], m->gu[r * 2 * d->ffn + d->ffn + i]));
    GS_TRY(add_projection(m, w[GS_LLM_K_DOWN], m->act, rows, d->ffn));
  }
  if (!last) {
    memcpy(h_out, m->h, rows * s->hidden * sizeof(float));
    return GS_OK;
  }
  for (size_t i = 0; i < n_out; i++) {
    norm_rows(s, m->h + (size_t)out_rows[i] * s->hidden, m->final_norm, 1, m->x);
    linear(m->lm_head, m->x, 1, d->vocab, s->hidden, logits + i * d->vocab, 0);
  }
  return GS_OK;
}
