/* Presets and derived sizes of the llm model (see model.h). */
#include "workloads/llm/model.h"

#include <math.h>

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
    int kind = (int)((tensor - GS_LLM_T_LAYER0) % 8);
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
