/* One model replica on the CPU reference or one GPU (see engine.h). The
 * CPU side keeps each sequence's last token and length here; the GPU keeps
 * them on the device so that a decode step is one graph launch. */
#include "workloads/llm/engine.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "workloads/llm/llm_cpu.h"
#include "workloads/llm/llm_gpu.h"

const char *const gs_llm_decode_gemm_names[] = {"auto", "simt", "mma", "cublas", NULL};

struct gs_llm_engine {
  gs_backend backend;
  gs_llm_engine_config config;
  gs_llm_gpu_model *gpu;
  gs_llm_cpu_model *cpu;
  /* CPU backend state. */
  size_t active;
  int32_t *last_token; /* per slot */
  uint32_t *length;    /* per slot: tokens in the cache */
  uint32_t *rows;      /* scratch: slots, positions, output rows */
  int32_t *row_tokens;
  float *logits; /* max_batch x vocab */
  size_t logits_rows;
};

gs_status gs_llm_engine_create(const gs_llm_engine_config *config, gs_backend backend, int device,
                               gs_llm_engine **out) {
  *out = NULL;
  gs_llm_engine *e = calloc(1, sizeof *e);
  if (!e) return gs_error(GS_ERR_NOMEM, "cannot allocate an llm replica");
  e->backend = backend;
  e->config = *config;
  gs_status status;
  if (backend == GS_BACKEND_CUDA) {
    status = gs_llm_gpu_create(config, device, &e->gpu);
  } else {
    status = gs_llm_cpu_create(config, &e->cpu);
    size_t rows = (size_t)config->max_batch * config->max_input;
    if (rows < config->max_batch) rows = config->max_batch;
    e->last_token = calloc(config->max_batch, sizeof *e->last_token);
    e->length = calloc(config->max_batch, sizeof *e->length);
    e->rows = calloc(3 * rows, sizeof *e->rows);
    e->row_tokens = calloc(rows, sizeof *e->row_tokens);
    e->logits = calloc((size_t)config->max_batch * config->shape.vocab, sizeof *e->logits);
    if (status == GS_OK &&
        (!e->last_token || !e->length || !e->rows || !e->row_tokens || !e->logits))
      status = gs_error(GS_ERR_NOMEM, "cannot allocate the CPU replica's buffers");
  }
  if (status != GS_OK) {
    gs_llm_engine_destroy(e);
    return status;
  }
  *out = e;
  return GS_OK;
}

void gs_llm_engine_destroy(gs_llm_engine *e) {
  if (!e) return;
  gs_llm_gpu_destroy(e->gpu);
  gs_llm_cpu_destroy(e->cpu);
  free(e->last_token);
  free(e->length);
  free(e->rows);
  free(e->row_tokens);
  free(e->logits);
  free(e);
}

static void argmax_rows(gs_llm_engine *e, size_t n, int32_t *tokens) {
  for (size_t i = 0; i < n; i++)
    tokens[i] =
        (int32_t)gs_llm_cpu_argmax(e->logits + i * e->config.shape.vocab, e->config.shape.vocab);
  e->logits_rows = n;
}

gs_status gs_llm_engine_prefill(gs_llm_engine *e, size_t n, const int32_t *const *prompts,
                                const uint32_t *lengths, int32_t *first_tokens) {
  if (e->gpu) return gs_llm_gpu_prefill(e->gpu, n, prompts, lengths, first_tokens);
  const gs_llm_engine_config *c = &e->config;
  size_t rows = 0;
  for (size_t i = 0; i < n; i++) {
    if (lengths[i] == 0 || lengths[i] >= c->max_seq || lengths[i] > c->max_input)
      return gs_error(GS_ERR_INTERNAL,
                      "llm prefill: prompt %zu has %u tokens (at most %u, and fewer than the "
                      "cache's %u positions)",
                      i, lengths[i], c->max_input, c->max_seq);
    rows += lengths[i];
  }
  if (n == 0 || n > c->max_batch)
    return gs_error(GS_ERR_INTERNAL, "llm prefill of %zu sequences (max %u)", n, c->max_batch);
  uint32_t *slots = e->rows, *positions = slots + rows, *outs = positions + rows;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    for (uint32_t p = 0; p < lengths[i]; p++, at++) {
      e->row_tokens[at] = prompts[i][p];
      slots[at] = (uint32_t)i;
      positions[at] = p;
    }
    outs[i] = (uint32_t)(at - 1);
    e->length[i] = lengths[i];
  }
  GS_TRY(gs_llm_cpu_forward(e->cpu, rows, e->row_tokens, slots, positions, n, outs, e->logits));
  argmax_rows(e, n, first_tokens);
  for (size_t i = 0; i < n; i++) e->last_token[i] = first_tokens[i];
  e->active = n;
  return GS_OK;
}

gs_status gs_llm_engine_decode(gs_llm_engine *e, size_t n, int32_t *tokens) {
  if (e->gpu) return gs_llm_gpu_decode(e->gpu, n, tokens);
  if (n == 0 || n > e->active)
    return gs_error(GS_ERR_INTERNAL, "llm decode of %zu sequences after a prefill of %zu", n,
                    e->active);
  uint32_t *slots = e->rows, *positions = slots + n, *outs = positions + n;
  for (size_t i = 0; i < n; i++) {
    if (e->length[i] >= e->config.max_seq)
      return gs_error(GS_ERR_INTERNAL, "llm decode: sequence %zu is full (%u positions)", i,
                      e->length[i]);
    slots[i] = (uint32_t)i;
    positions[i] = e->length[i];
    outs[i] = (uint32_t)i;
  }
  GS_TRY(gs_llm_cpu_forward(e->cpu, n, e->last_token, slots, positions, n, outs, e->logits));
  argmax_rows(e, n, tokens);
  for (size_t i = 0; i < n; i++) {
    e->last_token[i] = tokens[i];
    e->length[i]++;
  }
  return GS_OK;
}

gs_status gs_llm_engine_logits(gs_llm_engine *e, size_t n, float *logits) {
  if (e->gpu) return gs_llm_gpu_logits(e->gpu, n, logits);
  if (n > e->logits_rows)
    return gs_error(GS_ERR_INTERNAL, "llm logits of %zu rows, %zu available", n, e->logits_rows);
  memcpy(logits, e->logits, n * e->config.shape.vocab * sizeof *logits);
  return GS_OK;
}
