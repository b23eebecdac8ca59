/* One model replica on the CPU reference or on GPUs (see engine.h). The
 * CPU side keeps each sequence's last token and length here; the GPU keeps
 * them on the device so that a decode step is one graph launch.
 *
 * A tensor-parallel replica (config.tp > 1) is tp shards, each driven by
 * its own thread (shard 0 by the caller's): every call is posted to the
 * shards, which run it together (their all-reduces meet) and agree on the
 * tokens; the caller gets shard 0's. */
#include "workloads/llm/engine.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/barrier.h"
#include "core/check.h"
#include "platform/trace.h"
#include "workloads/llm/llm_cpu.h"
#include "workloads/llm/llm_gpu.h"

const char *const gs_llm_decode_gemm_names[] = {"auto", "simt", "mma", "cublas", NULL};

/* Seconds a shard waits in an all-reduce for the others before giving up:
 * only a failed shard makes one wait that long. */
#define GS_LLM_TP_TIMEOUT_SECONDS 300.0

typedef enum { OP_CREATE, OP_PREFILL, OP_DECODE, OP_LOGITS, OP_QUIT } engine_op;

typedef struct gs_llm_engine gs_llm_engine;

typedef struct {
  gs_llm_engine *engine;
  gs_llm_shard shard;
  int device;
  gs_comm *comm; /* NULL without tensor parallelism */
  gs_llm_gpu_model *gpu;
  gs_llm_cpu_model *cpu;
  float *logits;   /* CPU: max_batch x the shard's vocabulary rows */
  int32_t *tokens; /* this shard's tokens of the last call */
  gs_status status;
  char error[512];
  pthread_t thread;
  int started;
} engine_shard;

struct gs_llm_engine {
  gs_backend backend;
  gs_llm_engine_config config;
  gs_comm_world *world; /* the shards' communicators (tp > 1) */
  engine_shard *shards; /* config.tp */
  gs_barrier start, done;
  /* The call the shards run. */
  engine_op op;
  size_t n;
  size_t next; /* decode: rows the next decode will take (gs_llm_engine_decode) */
  const int32_t *const *prompts;
  const uint32_t *lengths;
  float *logits_out;
  /* CPU backend state, the same for every shard. */
  size_t active;
  int32_t *last_token; /* per slot */
  uint32_t *length;    /* per slot: tokens in the cache */
  uint32_t *rows;      /* scratch: slots, positions, output rows */
  int32_t *row_tokens;
  size_t logits_rows;
};

/* ---- the CPU backend's calls (one shard) ------------------------------------ */

/* The greedy token of each of n rows. Split over shards, each shard offers
 * its best (value, whole-vocabulary index); the larger value wins, the
 * lower index on ties, as gs_llm_cpu_argmax on the whole row. */
static gs_status cpu_pick_tokens(engine_shard *sh, size_t n) {
  const gs_llm_engine *e = sh->engine;
  gs_llm_shard_dims d;
  gs_llm_shard_sizes(&e->config.shape, sh->shard, &d);
  if (!sh->comm) {
    for (size_t i = 0; i < n; i++)
      sh->tokens[i] = (int32_t)gs_llm_cpu_argmax(sh->logits + i * d.vocab, d.vocab);
    return GS_OK;
  }
  const uint32_t tp = e->config.tp;
  float *offers = calloc(2 * n * (tp + 1), sizeof *offers);
  if (!offers) return gs_error(GS_ERR_NOMEM, "cannot allocate the token offers of %zu rows", n);
  float *mine = offers, *all = offers + 2 * n;
  for (size_t i = 0; i < n; i++) {
    uint32_t best = gs_llm_cpu_argmax(sh->logits + i * d.vocab, d.vocab);
    mine[2 * i] = sh->logits[i * d.vocab + best];
    mine[2 * i + 1] = (float)(d.vocab_offset + best); /* exact: make_shards caps vocab at 2^24 */
  }
  gs_status status = gs_comm_allgather(sh->comm, mine, all, 2 * n, GS_DTYPE_FLOAT, NULL);
  for (size_t i = 0; status == GS_OK && i < n; i++) {
    float value = -INFINITY, index = 0.0f;
    for (uint32_t k = 0; k < tp; k++) {
      const float *o = all + 2 * ((size_t)k * n + i);
      if (gs_llm_offer_beats(o[0], o[1], value, index)) value = o[0], index = o[1];
    }
    sh->tokens[i] = (int32_t)index;
  }
  free(offers);
  return status;
}

/* The rows were laid out by gs_llm_engine_prefill before the call. */
static gs_status cpu_prefill(engine_shard *sh) {
  gs_llm_engine *e = sh->engine;
  const size_t n = e->n;
  size_t rows = 0;
  for (size_t i = 0; i < n; i++) rows += e->lengths[i];
  uint32_t *slots = e->rows, *positions = slots + rows, *outs = positions + rows;
  GS_TRY(gs_llm_cpu_forward(sh->cpu, rows, e->row_tokens, slots, positions, n, outs, sh->logits));
  return cpu_pick_tokens(sh, n);
}

static gs_status cpu_decode(engine_shard *sh) {
  gs_llm_engine *e = sh->engine;
  const size_t n = e->n;
  uint32_t *slots = e->rows, *positions = slots + n, *outs = positions + n;
  GS_TRY(gs_llm_cpu_forward(sh->cpu, n, e->last_token, slots, positions, n, outs, sh->logits));
  return cpu_pick_tokens(sh, n);
}

/* The logits of the last call in whole-vocabulary order, gathered from
 * every shard; shard 0 writes them to `out`. */
static gs_status cpu_logits(engine_shard *sh, float *out) {
  gs_llm_engine *e = sh->engine;
  const gs_llm_shape *s = &e->config.shape;
  const size_t n = e->n, tp = e->config.tp, part = s->vocab / tp;
  if (!sh->comm) {
    memcpy(out, sh->logits, n * s->vocab * sizeof(float));
    return GS_OK;
  }
  float *all = malloc(tp * n * part * sizeof *all);
  if (!all) return gs_error(GS_ERR_NOMEM, "cannot allocate the logits of %zu rows", n);
  gs_status status = gs_comm_allgather(sh->comm, sh->logits, all, n * part, GS_DTYPE_FLOAT, NULL);
  if (status == GS_OK && out)
    for (size_t k = 0; k < tp; k++)
      for (size_t i = 0; i < n; i++)
        memcpy(out + i * s->vocab + k * part, all + (k * n + i) * part, part * sizeof(float));
  free(all);
  return status;
}

/* ---- running a call on every shard ----------------------------------------- */

static gs_status create_shard(engine_shard *sh) {
  gs_llm_engine *e = sh->engine;
  const gs_llm_engine_config *c = &e->config;
  if (e->backend == GS_BACKEND_CUDA)
    return gs_llm_gpu_create_shard(c, sh->shard, sh->comm, sh->device, &sh->gpu);
  GS_TRY(gs_llm_cpu_create_shard(c, sh->shard, sh->comm, &sh->cpu));
  gs_llm_shard_dims d;
  gs_llm_shard_sizes(&c->shape, sh->shard, &d);
  sh->logits = calloc((size_t)c->max_batch * d.vocab, sizeof *sh->logits);
  if (!sh->logits) return gs_error(GS_ERR_NOMEM, "cannot allocate the CPU replica's logits");
  return GS_OK;
}

static gs_status run_op(engine_shard *sh) {
  gs_llm_engine *e = sh->engine;
  // Shard 0 runs on the caller's thread, whose current GPU may have changed
  // since the last call (creating the shards' NCCL communicators does).
  if (sh->device >= 0 && e->op != OP_QUIT) GS_CHECK_CUDA(cudaSetDevice(sh->device));
  switch (e->op) {
    case OP_CREATE:
      return create_shard(sh);
    case OP_PREFILL:
      if (sh->gpu) return gs_llm_gpu_prefill(sh->gpu, e->n, e->prompts, e->lengths, sh->tokens);
      return cpu_prefill(sh);
    case OP_DECODE:
      if (sh->gpu) return gs_llm_gpu_decode(sh->gpu, e->n, e->next, sh->tokens);
      return cpu_decode(sh);
    case OP_LOGITS: {
      float *out = sh->shard.index == 0 ? e->logits_out : NULL;
      if (sh->gpu) return gs_llm_gpu_logits(sh->gpu, e->n, out);
      return cpu_logits(sh, out);
    }
    case OP_QUIT:
      break;
  }
  return GS_OK;
}

/* Runs the posted call on one shard. A failed shard aborts its
 * communicator, so the others stop waiting for it in their collectives
 * (gs_comm_wait notices within a few polls) instead of timing out. */
static void run_shard_op(engine_shard *sh) {
  gs_clear_error();
  sh->status = run_op(sh);
  snprintf(sh->error, sizeof sh->error, "%s", sh->status == GS_OK ? "" : gs_last_error());
  if (sh->status != GS_OK && sh->comm) gs_comm_abort(sh->comm);
}

static void *shard_thread(void *arg) {
  engine_shard *sh = arg;
  gs_llm_engine *e = sh->engine;
  for (;;) {
    if (gs_barrier_wait(&e->start) != 0) break;
    if (e->op == OP_QUIT) break;
    run_shard_op(sh);
    if (gs_barrier_wait(&e->done) != 0) break;
  }
  return NULL;
}

static gs_status run_call_shards(gs_llm_engine *e, engine_op op);

/* Runs call `op` on every shard inside its trace range (prefill, decode
 * step, logits: the replica's phases; a tensor-parallel decode step holds
 * its all-reduces, whose NCCL kernels CUPTI shows). */
static gs_status run_call(gs_llm_engine *e, engine_op op) {
  static const char *const names[] = {[OP_PREFILL] = "prefill", [OP_DECODE] = "decode step",
                                      [OP_LOGITS] = "logits"};
  const int traced = op == OP_PREFILL || op == OP_DECODE || op == OP_LOGITS;
  if (traced) gs_trace_begin(GS_TRACE_COMPUTE, names[op], (int64_t)e->n, NULL);
  gs_status status = run_call_shards(e, op);
  if (traced) gs_trace_end();
  return status;
}

/* Runs the posted call on every shard and waits for all of them; the first
 * failing shard's error is the call's. */
static gs_status run_call_shards(gs_llm_engine *e, engine_op op) {
  e->op = op;
  const uint32_t tp = e->config.tp;
  if (tp > 1 && gs_barrier_wait(&e->start) != 0)
    GS_BUG("the llm replica's shard threads stopped");
  run_shard_op(&e->shards[0]);
  if (tp > 1 && gs_barrier_wait(&e->done) != 0)
    GS_BUG("the llm replica's shard threads stopped");
  for (uint32_t k = 0; k < tp; k++) {
    const engine_shard *sh = &e->shards[k];
    if (sh->status == GS_OK) continue;
    if (tp == 1) return sh->status;
    return gs_error(sh->status, "tensor-parallel shard %u (%s %d): %s", k,
                          e->backend == GS_BACKEND_CUDA ? "GPU" : "CPU rank",
                          e->backend == GS_BACKEND_CUDA ? sh->device : (int)k, sh->error);
  }
  return GS_OK;
}

/* ---- the interface -------------------------------------------------------- */

static gs_status make_cpu_state(gs_llm_engine *e) {
  const gs_llm_engine_config *c = &e->config;
  size_t rows = (size_t)c->max_batch * c->max_input;
  if (rows < c->max_batch) rows = c->max_batch;
  e->last_token = calloc(c->max_batch, sizeof *e->last_token);
  e->length = calloc(c->max_batch, sizeof *e->length);
  e->rows = calloc(3 * rows, sizeof *e->rows);
  e->row_tokens = calloc(rows, sizeof *e->row_tokens);
  if (!e->last_token || !e->length || !e->rows || !e->row_tokens)
    return gs_error(GS_ERR_NOMEM, "cannot allocate the CPU replica's buffers");
  return GS_OK;
}

static gs_status make_shards(gs_llm_engine *e, const int *devices) {
  const gs_llm_engine_config *c = &e->config;
  const uint32_t tp = c->tp;
  char why[160];
  if (!gs_llm_shard_fits(&c->shape, tp, why, sizeof why))
    return gs_error(GS_ERR_USAGE, "llm tensor parallelism over %u shards: %s", tp, why);
  // Shards exchange token indices as floats, exact up to 2^24 (--vocab
  // stops at 2^20).
  if (tp > 1 && c->shape.vocab > (UINT64_C(1) << 24))
    return gs_error(GS_ERR_USAGE, "llm tensor parallelism: a vocabulary of %llu is above 2^24",
                    (unsigned long long)c->shape.vocab);
  e->shards = calloc(tp, sizeof *e->shards);
  if (!e->shards) return gs_error(GS_ERR_NOMEM, "cannot allocate %u llm shards", tp);
  for (uint32_t k = 0; k < tp; k++) {
    engine_shard *sh = &e->shards[k];
    sh->engine = e;
    sh->shard = (gs_llm_shard){k, tp};
    sh->device = e->backend == GS_BACKEND_CUDA ? devices[k] : -1;
    sh->tokens = calloc(c->max_batch, sizeof *sh->tokens);
    if (!sh->tokens) return gs_error(GS_ERR_NOMEM, "cannot allocate the shards' tokens");
  }
  if (tp == 1) return GS_OK;
  gs_comm_job job = {.launch = GS_COMM_LAUNCH_THREADS, .process_count = 1, .local_count = 1};
  gs_comm_world_config wc = {.backend = e->backend, .local_ranks = (int)tp, .devices = devices,
                             .timeout_seconds = GS_LLM_TP_TIMEOUT_SECONDS};
  GS_TRY(gs_comm_world_create(&job, &wc, &e->world));
  for (uint32_t k = 0; k < tp; k++) e->shards[k].comm = gs_comm_world_rank(e->world, (int)k);
  int rc = gs_barrier_init(&e->start, (int)tp);
  if (rc == 0) rc = gs_barrier_init(&e->done, (int)tp);
  if (rc != 0) return gs_error_system(rc, "cannot create the llm shard barriers");
  for (uint32_t k = 1; k < tp; k++) {
    if ((rc = pthread_create(&e->shards[k].thread, NULL, shard_thread, &e->shards[k])) != 0)
      return gs_error_system(rc, "cannot start the thread of llm shard %u", k);
    e->shards[k].started = 1;
  }
  return GS_OK;
}

gs_status gs_llm_engine_create(const gs_llm_engine_config *config, gs_backend backend,
                               const int *devices, gs_llm_engine **out) {
  *out = NULL;
  gs_llm_engine *e = calloc(1, sizeof *e);
  if (!e) return gs_error(GS_ERR_NOMEM, "cannot allocate an llm replica");
  e->backend = backend;
  e->config = *config;
  if (e->config.tp == 0) e->config.tp = 1;
  gs_status status = make_shards(e, devices);
  if (status == GS_OK && backend != GS_BACKEND_CUDA) status = make_cpu_state(e);
  if (status == GS_OK) status = run_call(e, OP_CREATE);
  if (status != GS_OK) {
    gs_llm_engine_destroy(e);
    return status;
  }
  *out = e;
  return GS_OK;
}

void gs_llm_engine_destroy(gs_llm_engine *e) {
  if (!e) return;
  const uint32_t tp = e->config.tp;
  int threads = 0;
  for (uint32_t k = 1; e->shards && k < tp; k++) threads += e->shards[k].started;
  if (threads > 0) {
    if (threads == (int)tp - 1) {
      e->op = OP_QUIT;
      if (gs_barrier_wait(&e->start) != 0) gs_barrier_abort(&e->start);
    } else {
      gs_barrier_abort(&e->start);  // not every thread started: none may wait
    }
    for (uint32_t k = 1; k < tp; k++)
      if (e->shards[k].started) pthread_join(e->shards[k].thread, NULL);
  }
  if (tp > 1 && e->world) {
    gs_barrier_destroy(&e->start);
    gs_barrier_destroy(&e->done);
  }
  for (uint32_t k = 0; e->shards && k < tp; k++) {
    engine_shard *sh = &e->shards[k];
    if (sh->device >= 0 && sh->gpu) cudaSetDevice(sh->device);
    gs_llm_gpu_destroy(sh->gpu);
    gs_llm_cpu_destroy(sh->cpu);
    free(sh->logits);
    free(sh->tokens);
  }
  if (e->shards && e->shards[0].device >= 0) cudaSetDevice(e->shards[0].device);
  gs_comm_world_destroy(e->world);
  free(e->shards);
  free(e->last_token);
  free(e->length);
  free(e->rows);
  free(e->row_tokens);
  free(e);
}

gs_status gs_llm_engine_prefill(gs_llm_engine *e, size_t n, const int32_t *const *prompts,
                                const uint32_t *lengths, int32_t *first_tokens) {
  const gs_llm_engine_config *c = &e->config;
  if (n == 0 || n > c->max_batch)
    GS_BUG("llm prefill of %zu sequences (max %u)", n, c->max_batch);
  for (size_t i = 0; i < n; i++)
    if (lengths[i] == 0 || lengths[i] >= c->max_seq || lengths[i] > c->max_input)
      return gs_error(GS_ERR_UNSUPPORTED,
                      "llm prefill: prompt %zu has %u tokens (at most %u, and fewer than the "
                      "cache's %u positions)",
                      i, lengths[i], c->max_input, c->max_seq);
  e->n = n;
  e->prompts = prompts;
  e->lengths = lengths;
  if (e->backend != GS_BACKEND_CUDA) {
    size_t rows = 0;
    for (size_t i = 0; i < n; i++) rows += lengths[i];
    uint32_t *slots = e->rows, *positions = slots + rows, *outs = positions + rows;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
      for (uint32_t p = 0; p < lengths[i]; p++, at++) {
        e->row_tokens[at] = prompts[i][p];
        slots[at] = (uint32_t)i;
        positions[at] = p;
      }
      outs[i] = (uint32_t)(at - 1);
    }
  }
  GS_TRY(run_call(e, OP_PREFILL));
  memcpy(first_tokens, e->shards[0].tokens, n * sizeof *first_tokens);
  if (e->backend != GS_BACKEND_CUDA) {
    for (size_t i = 0; i < n; i++) {
      e->length[i] = lengths[i];
      e->last_token[i] = first_tokens[i];
    }
    e->logits_rows = n;
  }
  e->active = n;
  return GS_OK;
}

gs_status gs_llm_engine_decode(gs_llm_engine *e, size_t n, size_t next, int32_t *tokens) {
  if (n == 0 || n > e->active || next > n)
    GS_BUG("llm decode of %zu sequences (next %zu) after a prefill of %zu", n, next, e->active);
  e->n = n;
  e->next = next;
  if (e->backend != GS_BACKEND_CUDA) {
    uint32_t *slots = e->rows, *positions = slots + n, *outs = positions + n;
    for (size_t i = 0; i < n; i++) {
      if (e->length[i] >= e->config.max_seq)
        GS_BUG("llm decode: sequence %zu is full (%u positions)", i, e->length[i]);
      slots[i] = (uint32_t)i;
      positions[i] = e->length[i];
      outs[i] = (uint32_t)i;
    }
  }
  GS_TRY(run_call(e, OP_DECODE));
  memcpy(tokens, e->shards[0].tokens, n * sizeof *tokens);
  if (e->backend != GS_BACKEND_CUDA) {
    for (size_t i = 0; i < n; i++) {
      e->last_token[i] = tokens[i];
      e->length[i]++;
    }
    e->logits_rows = n;
  }
  return GS_OK;
}

gs_status gs_llm_engine_logits(gs_llm_engine *e, size_t n, float *logits) {
  if (e->backend != GS_BACKEND_CUDA && n > e->logits_rows)
    GS_BUG("llm logits of %zu rows, %zu available", n, e->logits_rows);
  e->n = n;
  e->logits_out = logits;
  return run_call(e, OP_LOGITS);
}
