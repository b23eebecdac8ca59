/* Presets and derived sizes of the llm model (see model.h). */
#include "workloads/llm/model.h"

#include <math.h>
#include <stdio.h>

const gs_llm_preset gs_llm_presets[] = {
    {"llama-8b", {4096, 32, 32, 8, 14336, 128256, 500000.0, 1e-5}},
    {"llama-1b", {2048, 16, 32, 8, 8192, 128256, 500000.0, 1e-5}},
    {"tiny", {64, 2, 4, 2, 176, 512, 10000.0, 1e-5}},
};
const unsigned gs_llm_preset_count = sizeof gs_llm_presets / sizeof gs_llm_presets[0];

void gs_llm_layer_tensor_dims(const gs_llm_shape *s, int kind, uint64_t *rows, uint64_t *cols) {
  uint64_t hd = gs_llm_head_dim(s);
  *rows = s->hidden;
  *cols = 1;
  switch (kind) {
    case GS_LLM_K_QKV:
      *rows = gs_llm_qkv_rows(s);
      *cols = s->hidden;
      break;
    case GS_LLM_K_WO:
      *rows = s->hidden;
      *cols = s->heads * hd;
      break;
    case GS_LLM_K_GATE_UP:
      *rows = 2 * s->ffn;
      *cols = s->hidden;
      break;
    case GS_LLM_K_DOWN:
      *rows = s->hidden;
      *cols = s->ffn;
      break;
    default:
      break; /* the two norms: hidden x 1 */
  }
}

static uint64_t layer_parameters(const gs_llm_shape *s) {
  uint64_t total = 0;
  for (int k = 0; k < GS_LLM_LAYER_KINDS; k++) {
    uint64_t rows, cols;
    gs_llm_layer_tensor_dims(s, k, &rows, &cols);
    total += rows * cols;
  }
  return total;
}

uint64_t gs_llm_parameter_count(const gs_llm_shape *s) {
  return 2 * s->vocab * s->hidden + s->hidden + s->layers * layer_parameters(s);
}

uint64_t gs_llm_decode_weight_bytes(const gs_llm_shape *s) {
  return 2 * (gs_llm_parameter_count(s) - s->vocab * s->hidden);
}

uint64_t gs_llm_token_flops(const gs_llm_shape *s) {
  uint64_t norms = s->hidden * (2 * s->layers + 1);
  return 2 * (gs_llm_parameter_count(s) - s->vocab * s->hidden - norms);
}

void gs_llm_tensor_init(const gs_llm_shape *s, uint32_t tensor, float *scale, float *offset) {
  *offset = 0.0f;
  *scale = 1.0f;
  if (tensor == GS_LLM_T_EMBED) return;
  if (tensor == GS_LLM_T_FINAL_NORM) {
    *offset = 1.0f;
    *scale = 0.1f;
    return;
  }
  uint64_t cols = s->hidden;
  if (tensor >= GS_LLM_T_LAYER0) {
    int kind = gs_llm_layer_kind(tensor);
    uint64_t rows;
    gs_llm_layer_tensor_dims(s, kind, &rows, &cols);
    if (kind == GS_LLM_K_ATTN_NORM || kind == GS_LLM_K_MLP_NORM) {
      *offset = 1.0f;
      *scale = 0.1f;
      return;
    }
  }
  // Uniform on [-a, a] has variance a^2 / 3: a = sqrt(3 / cols) gives 1/cols.
  *scale = (float)sqrt(3.0 / (double)cols);
}

void gs_llm_shard_sizes(const gs_llm_shape *s, gs_llm_shard shard, gs_llm_shard_dims *out) {
  out->heads = s->heads / shard.count;
  out->kv_heads = s->kv_heads / shard.count;
  out->ffn = s->ffn / shard.count;
  out->vocab = s->vocab / shard.count;
  out->vocab_offset = shard.index * out->vocab;
}

int gs_llm_shard_fits(const gs_llm_shape *s, uint32_t count, char *why, size_t why_size) {
  const struct {
    const char *what;
    uint64_t n;
  } dims[] = {{"query heads", s->heads},
              {"key/value heads", s->kv_heads},
              {"FFN columns", s->ffn},
              {"vocabulary rows", s->vocab}};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
    if (count == 0 || dims[i].n % count != 0) {
      snprintf(why, why_size, "the model's %llu %s do not split evenly over %u shards",
               (unsigned long long)dims[i].n, dims[i].what, count);
      return 0;
    }
  return 1;
}

void gs_llm_shard_slice(const gs_llm_shape *s, uint32_t tensor, gs_llm_shard shard,
                        gs_llm_slice *out) {
  gs_llm_shard_dims d;
  gs_llm_shard_sizes(s, shard, &d);
  const uint64_t hd = gs_llm_head_dim(s), r = shard.index;
  memset(out, 0, sizeof *out);
  out->segments = 1;
  int kind = gs_llm_layer_kind(tensor);
  uint64_t rows = s->hidden, cols = 1;
  if (kind >= 0) gs_llm_layer_tensor_dims(s, kind, &rows, &cols);
  if (tensor == GS_LLM_T_EMBED || tensor == GS_LLM_T_LM_HEAD) rows = s->vocab, cols = s->hidden;
  out->rows = rows;
  out->cols = out->whole_cols = cols;
  switch (kind) {
    case GS_LLM_K_QKV:  // q rows of the shard's heads, then its k rows, then its v rows
      out->rows = (d.heads + 2 * d.kv_heads) * hd;
      out->segments = 3;
      out->local_row[1] = d.heads * hd;
      out->local_row[2] = (d.heads + d.kv_heads) * hd;
      out->whole_row[0] = r * d.heads * hd;
      out->whole_row[1] = s->heads * hd + r * d.kv_heads * hd;
      out->whole_row[2] = (s->heads + s->kv_heads) * hd + r * d.kv_heads * hd;
      return;
    case GS_LLM_K_WO:  // the columns of the shard's heads
      out->cols = d.heads * hd;
      out->col_offset = r * d.heads * hd;
      return;
    case GS_LLM_K_GATE_UP:  // gate rows of the shard's FFN columns, then up rows
      out->rows = 2 * d.ffn;
      out->segments = 2;
      out->local_row[1] = d.ffn;
      out->whole_row[0] = r * d.ffn;
      out->whole_row[1] = s->ffn + r * d.ffn;
      return;
    case GS_LLM_K_DOWN:  // the shard's FFN columns
      out->cols = d.ffn;
      out->col_offset = r * d.ffn;
      return;
    default:
      break;
  }
  if (tensor == GS_LLM_T_LM_HEAD) {  // the shard's vocabulary rows
    out->rows = d.vocab;
    out->whole_row[0] = d.vocab_offset;
  }
}
