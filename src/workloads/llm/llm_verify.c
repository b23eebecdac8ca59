/* GPU against CPU reference for the llm model (see llm_verify.h). */
#include "workloads/llm/llm_verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/check.h"
#include "workloads/llm/engine.h"
#include "workloads/llm/requests.h"

#define VERIFY_SEQS 2
#define VERIFY_STEPS 4

typedef struct {
  double max_err, tolerance;
  uint64_t mismatches, tokens, ties;
  int diverged; /* a near-tie picked another token: later steps not comparable */
  uint64_t ahead_tokens, ahead_mismatches; /* replay with steps launched ahead */
  uint64_t inexact; /* logits not equal bit for bit */
} compare_state;

/* The GPU's decode steps of one run: rows and tokens per step. */
typedef struct {
  int steps;
  size_t rows[VERIFY_STEPS];
  int32_t tokens[VERIFY_STEPS][VERIFY_SEQS];
} decode_record;

static void compare_rows(const float *cpu, const float *gpu, const int32_t *cpu_tok,
                         const int32_t *gpu_tok, size_t rows, uint64_t vocab, compare_state *st) {
  for (size_t r = 0; r < rows; r++) {
    const float *c = cpu + r * vocab, *g = gpu + r * vocab;
    double top = 0.0;
    for (uint64_t i = 0; i < vocab; i++) top = fmax(top, fabs(c[i]));
    double tol = GS_LLM_VERIFY_RTOL * fmax(1.0, top);
    if (tol > st->tolerance) st->tolerance = tol;
    for (uint64_t i = 0; i < vocab; i++) {
      double e = fabs((double)c[i] - g[i]);
      if (!(e <= tol)) st->mismatches++;
      if (memcmp(&c[i], &g[i], sizeof c[i]) != 0) st->inexact++;
      if (e > st->max_err || isnan(e)) st->max_err = isnan(e) ? INFINITY : e;
    }
    st->tokens++;
    if (cpu_tok[r] != gpu_tok[r]) {
      // A different pick is wrong unless the two candidates are within the
      // tolerance of each other in the reference.
      if (fabs((double)c[cpu_tok[r]] - c[gpu_tok[r]]) <= 2.0 * tol) {
        st->ties++;
        st->diverged = 1;
      } else {
        st->mismatches++;
      }
    }
  }
}

/* Decodes the recorded steps again on `gpu` after a new prefill of the
 * same prompts, each decode naming the next step's rows so that the engine
 * launches it ahead (as the scenarios decode): every token must equal the
 * step-by-step run's. */
static gs_status replay_ahead(gs_llm_engine *gpu, const int32_t *const *prompts,
                              const uint32_t *lengths, const decode_record *rec,
                              compare_state *st) {
  int32_t t[VERIFY_SEQS];
  GS_TRY(gs_llm_engine_prefill(gpu, VERIFY_SEQS, prompts, lengths, t));
  for (int s = 0; s < rec->steps; s++) {
    size_t next = s + 1 < rec->steps ? rec->rows[s + 1] : 0;
    GS_TRY(gs_llm_engine_decode(gpu, rec->rows[s], next, t));
    for (size_t r = 0; r < rec->rows[s]; r++)
      if (t[r] != rec->tokens[s][r]) st->ahead_mismatches++;
    st->ahead_tokens += rec->rows[s];
  }
  return GS_OK;
}

static gs_status run_pair(gs_llm_engine *cpu, gs_llm_engine *gpu, const gs_llm_engine_config *cfg,
                          uint64_t seed, compare_state *st) {
  size_t vocab = cfg->shape.vocab;
  int32_t prompt_storage[VERIFY_SEQS][16];
  const int32_t *prompts[VERIFY_SEQS];
  uint32_t lengths[VERIFY_SEQS] = {7, 5};
  for (size_t i = 0; i < VERIFY_SEQS; i++) {
    gs_llm_prompt_tokens(seed, (uint32_t)i, lengths[i], vocab, prompt_storage[i]);
    prompts[i] = prompt_storage[i];
  }
  float *lc = malloc(VERIFY_SEQS * vocab * sizeof *lc),
        *lg = malloc(VERIFY_SEQS * vocab * sizeof *lg);
  if (!lc || !lg) {
    free(lc);
    free(lg);
    return gs_error(GS_ERR_NOMEM, "cannot allocate logits for verification");
  }
  int32_t tc[VERIFY_SEQS], tg[VERIFY_SEQS];
  decode_record rec = {0};
  gs_status status = gs_llm_engine_prefill(cpu, VERIFY_SEQS, prompts, lengths, tc);
  if (status == GS_OK) status = gs_llm_engine_prefill(gpu, VERIFY_SEQS, prompts, lengths, tg);
  size_t n = VERIFY_SEQS;
  for (int step = 0; status == GS_OK; step++) {
    status = gs_llm_engine_logits(cpu, n, lc);
    if (status == GS_OK) status = gs_llm_engine_logits(gpu, n, lg);
    if (status != GS_OK) break;
    compare_rows(lc, lg, tc, tg, n, vocab, st);
    if (st->diverged || step == VERIFY_STEPS) break;
    // The batch shrinks to one sequence halfway, as batches do when the
    // shorter outputs finish.
    n = step < VERIFY_STEPS / 2 ? VERIFY_SEQS : 1;
    status = gs_llm_engine_decode(cpu, n, 0, tc);
    if (status == GS_OK) status = gs_llm_engine_decode(gpu, n, 0, tg);
    if (status == GS_OK) {
      rec.rows[rec.steps] = n;
      memcpy(rec.tokens[rec.steps++], tg, n * sizeof *tg);
    }
  }
  free(lc);
  free(lg);
  if (status == GS_OK) status = replay_ahead(gpu, prompts, lengths, &rec, st);
  return status;
}

gs_status gs_llm_verify_gpu(const gs_llm_shape *shape, uint64_t seed, const int *devices,
                            uint32_t tp, gs_verification *out) {
  const gs_llm_engine_config layout = {.shape = *shape, .seed = seed, .tp = tp};
  return gs_llm_verify_replica(&layout, GS_BACKEND_CUDA, devices, out);
}

/* The replica checked in each pass: the engine made from the pass's
 * configuration, its shards threads of this process, or (place given)
 * the first shard of a replica over processes. */
static gs_status create_checked(const gs_llm_engine_config *gc, gs_backend backend,
                                const int *devices, const gs_llm_engine_place *place,
                                gs_llm_engine **out) {
  if (place) return gs_llm_engine_create_stage(gc, backend, place, out);
  return gs_llm_engine_create(gc, backend, devices, out);
}

/* The configuration of pass `pass` (a way of running decode's small
 * linear layers) of the replica of `layout`. */
static gs_llm_engine_config pass_config(const gs_llm_engine_config *layout, int pass) {
  gs_llm_engine_config gc = {.shape = layout->shape,
                             .seed = layout->seed,
                             .max_batch = VERIFY_SEQS,
                             .max_seq = 16,
                             .max_input = 8,
                             .decode_graphs = 1,
                             .overlap_launches = 1,
                             .decode_gemm = pass,
                             .tp = layout->tp ? layout->tp : 1,
                             .pp = layout->pp ? layout->pp : 1,
                             .micro_batches = layout->micro_batches};
  memcpy(gc.stage_first, layout->stage_first, sizeof gc.stage_first);
  return gc;
}

/* Every way of running small linear layers on CUDA: auto, SIMT, tensor
 * cores, cuBLAS; the CPU has one. */
static int last_pass(gs_backend backend) {
  return backend == GS_BACKEND_CUDA ? GS_LLM_GEMM_CUBLAS : GS_LLM_GEMM_AUTO;
}

static gs_status verify_with(const gs_llm_engine_config *layout, gs_backend backend,
                             const int *devices, const gs_llm_engine_place *place,
                             gs_verification *out);

gs_status gs_llm_verify_replica(const gs_llm_engine_config *layout, gs_backend backend,
                                const int *devices, gs_verification *out) {
  return verify_with(layout, backend, devices, NULL, out);
}

gs_status gs_llm_verify_processes(const gs_llm_engine_config *layout, gs_backend backend,
                                  const gs_llm_engine_place *place, gs_verification *out) {
  memset(out, 0, sizeof *out);
  if (place->stage == 0 && place->shard == 0) {
    const int device = place->device;
    return verify_with(layout, backend, &device, place, out);
  }
  gs_status status = GS_OK;
  for (int pass = GS_LLM_GEMM_AUTO; pass <= last_pass(backend) && status == GS_OK; pass++) {
    const gs_llm_engine_config gc = pass_config(layout, pass);
    gs_llm_engine *e = NULL;
    int clock = 0;
    status = gs_llm_engine_create_stage(&gc, backend, place, &e);
    if (status == GS_OK) status = gs_llm_engine_follow(e, &clock);
    if (status == GS_OK && clock) GS_BUG("llm verification: a clock announced");
    gs_llm_engine_destroy(e);
  }
  return status;
}

static gs_status verify_with(const gs_llm_engine_config *layout, gs_backend backend,
                             const int *devices, const gs_llm_engine_place *place,
                             gs_verification *out) {
  memset(out, 0, sizeof *out);
  const gs_llm_shape *shape = &layout->shape;
  const uint64_t seed = layout->seed;
  const uint32_t tp = layout->tp ? layout->tp : 1, pp = layout->pp ? layout->pp : 1;
  const int cuda = backend == GS_BACKEND_CUDA, device = cuda ? devices[0] : -1;
  if (cuda) GS_CHECK_CUDA(cudaSetDevice(device));
  gs_llm_engine_config cfg = {.shape = *shape,
                              .seed = seed,
                              .max_batch = VERIFY_SEQS,
                              .max_seq = 16,
                              .max_input = 8,
                              .decode_graphs = 1,
                              .overlap_launches = 1,
                              .decode_gemm = GS_LLM_GEMM_AUTO};
  compare_state st = {0};
  gs_status status = GS_OK;
  for (int pass = GS_LLM_GEMM_AUTO; pass <= last_pass(backend) && status == GS_OK; pass++) {
    const gs_llm_engine_config gc = pass_config(layout, pass);
    gs_llm_engine *gpu = NULL, *ref = NULL;
    status = create_checked(&gc, backend, devices, place, &gpu);
    // A fresh reference per pass: each starts from empty caches.
    if (status == GS_OK) status = gs_llm_engine_create(&cfg, GS_BACKEND_CPU, NULL, &ref);
    if (status == GS_OK) status = run_pair(ref, gpu, &cfg, seed, &st);
    gs_llm_engine_destroy(gpu);
    gs_llm_engine_destroy(ref);
  }
  GS_TRY(status);
  // The CPU's split replica sums in the whole model's order, but for the
  // tensor-parallel partial sums: bit for bit there.
  const int exact = !cuda && tp == 1;
  out->max_abs_error = st.max_err;
  out->tolerance = exact ? 0.0 : st.tolerance;
  out->mismatches = st.mismatches + st.ahead_mismatches + (exact ? st.inexact : 0);
  if (!cuda) {
    out->status = out->mismatches == 0 ? GS_VERIFY_PASSED : GS_VERIFY_FAILED;
    snprintf(out->detail, sizeof out->detail,
             "CPU replica of %u pipeline stage%s x %u tensor-parallel shard%s%s vs the whole model "
             "on one rank, hidden %llu x %llu layers, vocab %llu: logits of %llu token positions "
             "(prefill and decode), max |diff| %.3g (%s), %llu mismatches; %llu of %llu tokens "
             "decoded again differ",
             pp, pp == 1 ? "" : "s", tp, tp == 1 ? "" : "s", place ? " (processes)" : "",
             (unsigned long long)shape->hidden,
             (unsigned long long)shape->layers, (unsigned long long)shape->vocab,
             (unsigned long long)st.tokens, st.max_err,
             exact ? "bit for bit" : "tolerance 2e-2 x max |logit|",
             (unsigned long long)out->mismatches, (unsigned long long)st.ahead_mismatches,
             (unsigned long long)st.ahead_tokens);
    return GS_OK;
  }
  out->status = out->mismatches == 0 ? GS_VERIFY_PASSED : GS_VERIFY_FAILED;
  snprintf(
      out->detail, sizeof out->detail,
      "GPU %d%s vs CPU reference, hidden %llu x %llu layers, vocab %llu: logits of %llu "
      "token positions (prefill and decode; SIMT, tensor-core and cuBLAS paths), max |diff| %.3g "
      "(tolerance %.3g = %.0e x max |logit|), %llu mismatches%s; decoding with each next step "
      "launched ahead: %llu of %llu tokens differ",
      device, pp > 1 && place ? " (first of a pipelined replica over processes)"
              : pp > 1 ? " (first of a pipelined replica)"
              : place  ? " (first of a tensor-parallel replica over processes)"
              : tp > 1 ? " (first of a tensor-parallel replica)"
                       : "",
      (unsigned long long)shape->hidden, (unsigned long long)shape->layers,
      (unsigned long long)shape->vocab, (unsigned long long)st.tokens, st.max_err, st.tolerance,
      GS_LLM_VERIFY_RTOL, (unsigned long long)st.mismatches,
      st.ties ? ", a near-tie picked another token (later steps not compared)" : "",
      (unsigned long long)st.ahead_mismatches, (unsigned long long)st.ahead_tokens);
  return GS_OK;
}
