/* One model replica on the CPU reference or on GPUs (see engine.h). The
 * CPU side keeps each sequence's last token and length here; the GPU keeps
 * them on the device so that a decode step is one graph launch.
 *
 * A tensor-parallel replica (config.tp > 1) is tp shards, a pipelined one
 * (config.pp > 1) pp stages of tp shards (engine_internal.h), each shard
 * driven by its own thread (shard 0 by the caller's): every call is posted
 * to the shards, which run it together (their all-reduces and transfers
 * meet) and agree on the tokens; the caller gets shard 0's. */
#include "workloads/llm/engine.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/check.h"
#include "core/fault.h"
#include "core/timer.h"
#include "platform/trace.h"
#include "workloads/llm/engine_internal.h"
#include "workloads/llm/llm_pp.h"

const char *const gs_llm_decode_gemm_names[] = {"auto", "simt", "mma", "cublas", NULL};

/* Seconds a shard waits in an all-reduce for the others before giving up:
 * only a failed shard makes one wait that long. */
#define GS_LLM_TP_TIMEOUT_SECONDS 300.0

/* ---- the CPU backend's calls (one shard) ------------------------------------ */

void gs_llm_engine_layers(const gs_llm_engine_config *c, uint64_t *begin, uint64_t *end) {
  *begin = c->layer_end ? c->layer_begin : 0;
  *end = c->layer_end ? c->layer_end : c->shape.layers;
}

/* Split over shards, each shard offers its best (value, whole-vocabulary
 * index); the larger value wins, the lower index on ties, as
 * gs_llm_cpu_argmax on the whole row. */
gs_status gs_llm_engine_pick_tokens(engine_shard *sh, const float *logits, size_t n,
                                    int32_t *tokens) {
  const gs_llm_engine *e = sh->engine;
  gs_llm_shard_dims d;
  gs_llm_shard_sizes(&e->config.shape, sh->shard, &d);
  if (!sh->tp.comm) {
    for (size_t i = 0; i < n; i++)
      tokens[i] = (int32_t)gs_llm_cpu_argmax(logits + i * d.vocab, d.vocab);
    return GS_OK;
  }
  const uint32_t tp = e->config.tp;
  float *offers = calloc(2 * n * (tp + 1), sizeof *offers);
  if (!offers) return gs_error(GS_ERR_NOMEM, "cannot allocate the token offers of %zu rows", n);
  float *mine = offers, *all = offers + 2 * n;
  for (size_t i = 0; i < n; i++) {
    uint32_t best = gs_llm_cpu_argmax(logits + i * d.vocab, d.vocab);
    mine[2 * i] = logits[i * d.vocab + best];
    mine[2 * i + 1] = (float)(d.vocab_offset + best); /* exact: make_shards caps vocab at 2^24 */
  }
  gs_status status = gs_llm_tp_allgather(&sh->tp, mine, all, 2 * n, GS_DTYPE_FLOAT, NULL);
  for (size_t i = 0; status == GS_OK && i < n; i++) {
    float value = -INFINITY, index = 0.0f;
    for (uint32_t k = 0; k < tp; k++) {
      const float *o = all + 2 * ((size_t)k * n + i);
      if (gs_llm_offer_beats(o[0], o[1], value, index)) value = o[0], index = o[1];
    }
    tokens[i] = (int32_t)index;
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
  return gs_llm_engine_pick_tokens(sh, sh->logits, n, sh->tokens);
}

static gs_status cpu_decode(engine_shard *sh) {
  gs_llm_engine *e = sh->engine;
  const size_t n = e->n;
  uint32_t *slots = e->rows, *positions = slots + n, *outs = positions + n;
  GS_TRY(gs_llm_cpu_forward(sh->cpu, n, e->last_token, slots, positions, n, outs, sh->logits));
  return gs_llm_engine_pick_tokens(sh, sh->logits, n, sh->tokens);
}

gs_status gs_llm_engine_cpu_logits(engine_shard *sh, float *out) {
  gs_llm_engine *e = sh->engine;
  const gs_llm_shape *s = &e->config.shape;
  const size_t n = e->n, tp = e->config.tp, part = s->vocab / tp;
  if (!sh->tp.comm) {
    memcpy(out, sh->logits, n * s->vocab * sizeof(float));
    return GS_OK;
  }
  float *all = malloc(tp * n * part * sizeof *all);
  if (!all) return gs_error(GS_ERR_NOMEM, "cannot allocate the logits of %zu rows", n);
  gs_status status =
      gs_llm_tp_allgather(&sh->tp, sh->logits, all, n * part, GS_DTYPE_FLOAT, NULL);
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
  const gs_llm_engine_config *c = &sh->config;
  if (e->backend == GS_BACKEND_CUDA)
    return gs_llm_gpu_create_shard(c, sh->shard, sh->tp.comm ? &sh->tp : NULL, sh->device,
                                   &sh->gpu);
  GS_TRY(gs_llm_cpu_create_shard(c, sh->shard, sh->tp.comm ? &sh->tp : NULL, &sh->cpu));
  gs_llm_shard_dims d;
  gs_llm_shard_sizes(&c->shape, sh->shard, &d);
  sh->logits = calloc((size_t)c->max_batch * d.vocab, sizeof *sh->logits);
  if (!sh->logits) return gs_error(GS_ERR_NOMEM, "cannot allocate the CPU replica's logits");
  if (e->stages == 1) return GS_OK;
  size_t rows = (size_t)c->max_batch * c->max_input;
  if (rows < c->max_batch) rows = c->max_batch;
  sh->hidden = malloc(rows * c->shape.hidden * sizeof *sh->hidden);
  sh->outs = malloc((size_t)c->max_batch * sizeof *sh->outs);
  if (!sh->hidden || !sh->outs)
    return gs_error(GS_ERR_NOMEM, "cannot allocate pipeline stage %u's buffers", sh->stage);
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
      // On a GPU the late spin lies on the stream (gs_llm_gpu_set_late).
      if (sh->late > 0.0 && !sh->gpu) gs_fault_late_wait(sh->late);
      if (e->stages > 1) return gs_llm_pp_call(sh);
      if (sh->gpu) return gs_llm_gpu_prefill(sh->gpu, e->n, e->prompts, e->lengths, sh->tokens);
      return cpu_prefill(sh);
    case OP_DECODE:
      if (sh->late > 0.0 && !sh->gpu) gs_fault_late_wait(sh->late);
      if (e->stages > 1) return gs_llm_pp_call(sh);
      if (sh->gpu) return gs_llm_gpu_decode(sh->gpu, e->n, e->next, sh->tokens);
      return cpu_decode(sh);
    case OP_LOGITS: {
      if (e->remote && e->stages > 1) return gs_llm_pp_logits(sh);
      // With stages, the logits are the last stage's.
      if (sh->stage + 1 < e->stages) return GS_OK;
      float *out = sh->shard.index == 0 ? e->logits_out : NULL;
      if (sh->gpu) return gs_llm_gpu_logits(sh->gpu, e->n, out);
      return gs_llm_engine_cpu_logits(sh, out);
    }
    case OP_QUIT:
    case OP_CLOCK:
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
  // Between processes the links and the shards' group are the job's
  // world: its end is the job's.
  if (sh->status != GS_OK && sh->tp.comm && !sh->engine->remote) gs_comm_abort(sh->tp.comm);
  if (sh->status != GS_OK && sh->out && !sh->engine->remote) gs_comm_abort(sh->out);
  if (sh->status != GS_OK && sh->in && !sh->engine->remote) gs_comm_abort(sh->in);
}

/* The shards leave a call's start barrier together (CPU backend, and on
 * CUDA while arrivals are recorded, where a step's launch can set when its
 * GPU reaches the all-reduces): each one out of it
 * waits, yielding its core, until every shard is out, and the last one
 * out lets them all go. Without it the shard that arrives last and wakes
 * the others (the caller's, shard 0) left the barrier after its wake-up
 * and unlock calls returned, 11-49 us after the shards it woke had
 * started (loaded 2-core machine), and arrived last at the first
 * all-reduce for that reason alone. */
static void leave_start_together(gs_llm_engine *e) {
  if ((e->backend != GS_BACKEND_CPU && !e->arrival) || e->n_shards < 2) return;
  const uint64_t call = atomic_load(&e->started_calls);
  if (atomic_fetch_add(&e->out_of_start, 1) + 1 == e->n_shards) {
    atomic_store(&e->out_of_start, 0);
    atomic_store(&e->started_calls, call + 1);
    return;
  }
  while (atomic_load(&e->started_calls) == call) sched_yield();
}

static void *shard_thread(void *arg) {
  engine_shard *sh = arg;
  gs_llm_engine *e = sh->engine;
  for (;;) {
    if (gs_barrier_wait(&e->start) != 0) break;
    if (e->op == OP_QUIT) break;
    leave_start_together(e);
    run_shard_op(sh);
    if (gs_barrier_wait(&e->done) != 0) break;
  }
  return NULL;
}

static gs_status run_call_shards(gs_llm_engine *e, engine_op op);

/* Over processes: the replica's first shard (stage 0, shard 0) of a
 * stage split over tp processes, which tells the others its calls. */
static int leads(const gs_llm_engine *e) {
  return e->remote && e->config.tp > 1 && e->shards[0].stage == 0 && e->shards[0].shard.index == 0;
}

/* Runs call `op` on every shard inside its trace range (prefill, decode
 * step, logits: the replica's phases; a tensor-parallel decode step holds
 * its all-reduces, whose NCCL kernels CUPTI shows). */
static gs_status run_call(gs_llm_engine *e, engine_op op) {
  static const char *const names[] = {[OP_PREFILL] = "prefill", [OP_DECODE] = "decode step",
                                      [OP_LOGITS] = "logits"};
  const int traced = op == OP_PREFILL || op == OP_DECODE || op == OP_LOGITS;
  if (traced) gs_trace_begin(GS_TRACE_COMPUTE, names[op], (int64_t)e->n, NULL);
  const double began = gs_time_seconds();
  // Over processes the first shard tells its stage's other shards the
  // call; every shard's sends are received by the call's end.
  gs_status status = traced && leads(e) ? gs_llm_pp_call_announce(&e->shards[0], op) : GS_OK;
  if (status == GS_OK) status = run_call_shards(e, op);
  if (status == GS_OK && traced && e->remote) status = gs_comm_p2p_drain(e->control);
  if (op == OP_PREFILL || op == OP_DECODE) e->call_seconds += gs_time_seconds() - began;
  // A stage over processes that failed a call leaves the others alone: a
  // send to a lost process is not safe, and the job's end stops them.
  if (status != GS_OK) e->quit_pending = 0;
  if (traced) gs_trace_end();
  return status;
}

/* Runs the posted call on every shard and waits for all of them; the first
 * failing shard's error is the call's. */
static gs_status run_call_shards(gs_llm_engine *e, engine_op op) {
  e->op = op;
  const uint32_t shards = e->n_shards;
  // The shards wait at the barrier: their recorders are the caller's to use.
  const int recorded = e->arrival && (op == OP_PREFILL || op == OP_DECODE);
  const int on_cpu = e->backend == GS_BACKEND_CPU;
  for (uint32_t k = 0; recorded && on_cpu && k < shards; k++)
    gs_comm_arrival_slot(e->shards[k].tp.comm);
  if (shards > 1 && gs_barrier_wait(&e->start) != 0)
    GS_BUG("the llm replica's shard threads stopped");
  leave_start_together(e);
  run_shard_op(&e->shards[0]);
  if (shards > 1 && gs_barrier_wait(&e->done) != 0)
    GS_BUG("the llm replica's shard threads stopped");
  for (uint32_t k = 0; recorded && k < shards; k++) {
    engine_shard *sh = &e->shards[k];
    gs_arrival_rank *r = &e->arrival[sh->stage].arrival->ranks[sh->shard.index];
    // A GPU stamped each step it finished (llm_gpu.h); a failed call's
    // steps are left out, as the others' are.
    if (!on_cpu) {
      if (sh->status == GS_OK) GS_TRY(gs_llm_gpu_take_arrivals(sh->gpu, r->offset_seconds, r));
      continue;
    }
    double entry = NAN, exit = NAN;
    size_t n = 0;
    gs_status st = gs_comm_arrival_take(sh->tp.comm, &entry, &exit, &n, NULL, NULL);
    if (st == GS_OK && n == 1) st = gs_arrival_append(r, entry, exit);
    if (st != GS_OK) return st;
  }
  // A shard stopped by another's abort reports GS_ERR_ABORTED: the first
  // other failure is the cause.
  const engine_shard *failed = NULL;
  for (uint32_t k = 0; k < shards; k++) {
    const engine_shard *sh = &e->shards[k];
    if (sh->status != GS_OK && (!failed || (failed->status == GS_ERR_ABORTED &&
                                            sh->status != GS_ERR_ABORTED)))
      failed = sh;
  }
  if (!failed) return GS_OK;
  if (shards == 1) return failed->status;
  const uint32_t k = (uint32_t)(failed - e->shards);
  char stage[64] = "";
  if (e->stages > 1) snprintf(stage, sizeof stage, "pipeline stage %u of %u, ", failed->stage,
                              e->stages);
  return gs_error(failed->status, "%sshard %u (%s %d): %s", stage, failed->shard.index,
                  e->backend == GS_BACKEND_CUDA ? "GPU" : "CPU rank",
                  e->backend == GS_BACKEND_CUDA ? failed->device : (int)k, failed->error);
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

/* The world of `count` threads over devices[0..count) (threads mode). */
static gs_status make_world(const gs_llm_engine *e, int count, const int *devices,
                            gs_comm_world **out) {
  gs_comm_job job = {.launch = GS_COMM_LAUNCH_THREADS, .process_count = 1, .local_count = 1};
  gs_comm_world_config wc = {.backend = e->backend, .local_ranks = count, .devices = devices,
                             .timeout_seconds = GS_LLM_TP_TIMEOUT_SECONDS,
                             .nccl_max_ctas = e->config.nccl_max_ctas};
  return gs_comm_world_create(&job, &wc, out);
}

/* Shard i = stage * tp + k drives devices[i]: a stage's tp shards have a
 * world of their own (their all-reduces), and with stages every shard is
 * in one more world (the transfers between stages). */
static gs_status make_shards(gs_llm_engine *e, const int *devices) {
  const gs_llm_engine_config *c = &e->config;
  const uint32_t tp = c->tp, stages = e->stages, n = e->n_shards;
  char why[160];
  if (!gs_llm_shard_fits(&c->shape, tp, why, sizeof why))
    return gs_error(GS_ERR_USAGE, "llm tensor parallelism over %u shards: %s", tp, why);
  // Shards exchange token indices as floats, exact up to 2^24 (--vocab
  // stops at 2^20).
  if (tp > 1 && c->shape.vocab > (UINT64_C(1) << 24))
    return gs_error(GS_ERR_USAGE, "llm tensor parallelism: a vocabulary of %llu is above 2^24",
                    (unsigned long long)c->shape.vocab);
  e->shards = calloc(n, sizeof *e->shards);
  e->worlds = calloc(stages, sizeof *e->worlds);
  if (!e->shards || !e->worlds) return gs_error(GS_ERR_NOMEM, "cannot allocate %u llm shards", n);
  for (uint32_t i = 0; i < n; i++) {
    engine_shard *sh = &e->shards[i];
    sh->engine = e;
    sh->stage = i / tp;
    sh->shard = (gs_llm_shard){i % tp, tp};
    sh->config = *c;
    if (stages > 1) {
      sh->config.layer_begin = c->stage_first[sh->stage];
      sh->config.layer_end = c->stage_first[sh->stage + 1];
    }
    sh->device = e->backend == GS_BACKEND_CUDA ? devices[i] : -1;
    sh->tokens = calloc(c->max_batch, sizeof *sh->tokens);
    if (!sh->tokens) return gs_error(GS_ERR_NOMEM, "cannot allocate the shards' tokens");
  }
  if (n == 1) return GS_OK;
  for (uint32_t st = 0; tp > 1 && st < stages; st++) {
    GS_TRY(make_world(e, (int)tp, devices ? devices + (size_t)st * tp : NULL, &e->worlds[st]));
    for (uint32_t k = 0; k < tp; k++)
      e->shards[st * tp + k].tp.comm = gs_comm_world_rank(e->worlds[st], (int)k);
  }
  // Shard i sends to shard (i + tp) mod n: the same shard of the next
  // stage, the last stage's to the first's. One world per link, so that
  // each world carries one direction and a shard's sends and receives
  // never queue behind each other.
  if (stages > 1) {
    e->links = calloc(n, sizeof *e->links);
    if (!e->links) return gs_error(GS_ERR_NOMEM, "cannot allocate the pipeline's links");
    for (uint32_t i = 0; i < n; i++) {
      const uint32_t to = (i + tp) % n;
      const int pair[2] = {devices ? devices[i] : -1, devices ? devices[to] : -1};
      GS_TRY(make_world(e, 2, devices ? pair : NULL, &e->links[i]));
      e->shards[i].out = gs_comm_world_rank(e->links[i], 0);
      e->shards[i].out_peer = 1;
      e->shards[to].in = gs_comm_world_rank(e->links[i], 1);
      e->shards[to].in_peer = 0;
    }
  }
  int rc = gs_barrier_init(&e->start, (int)n);
  if (rc == 0) {
    rc = gs_barrier_init(&e->done, (int)n);
    if (rc != 0) gs_barrier_destroy(&e->start);
  }
  if (rc != 0) return gs_error_system(rc, "cannot create the llm shard barriers");
  e->barriers = 1;
  for (uint32_t k = 1; k < n; k++) {
    if ((rc = pthread_create(&e->shards[k].thread, NULL, shard_thread, &e->shards[k])) != 0)
      return gs_error_system(rc, "cannot start the thread of llm shard %u", k);
    e->shards[k].started = 1;
  }
  return GS_OK;
}

gs_status gs_llm_engine_create_stage(const gs_llm_engine_config *config, gs_backend backend,
                                     const gs_llm_engine_place *place, gs_llm_engine **out) {
  *out = NULL;
  const uint32_t pp = config->pp ? config->pp : 1, tp = config->tp ? config->tp : 1;
  const uint32_t stage = place->stage;
  // Between processes the CPU stages send over the job's world, the GPU
  // stages over their NCCL links.
  if (pp * tp < 2 || stage >= pp || place->shard >= tp || (tp > 1 && !place->tp.comm) ||
      (backend == GS_BACKEND_CUDA && pp > 1 && (!place->out || !place->in)))
    GS_BUG("llm shard %u of stage %u (tp %u, pp %u, %s) over processes", place->shard, stage, tp,
           pp, backend == GS_BACKEND_CUDA ? "cuda" : "cpu");
  gs_llm_engine *e = calloc(1, sizeof *e);
  engine_shard *sh = calloc(1, sizeof *sh);
  if (!e || !sh) {
    free(e);
    free(sh);
    return gs_error(GS_ERR_NOMEM, "cannot allocate an llm shard");
  }
  e->backend = backend;
  e->config = *config;
  e->config.tp = tp;
  e->stages = pp;
  e->n_shards = 1;
  e->remote = 1;
  e->control = place->control;
  e->first_rank = place->first_rank;
  e->shards = sh;
  sh->engine = e;
  sh->stage = stage;
  sh->shard = (gs_llm_shard){place->shard, tp};
  sh->config = e->config;
  if (pp > 1) {
    sh->config.layer_begin = config->stage_first[stage];
    sh->config.layer_end = config->stage_first[stage + 1];
    // Process first_rank + s tp + j is shard j of stage s: a shard's
    // column is the same shard of every stage.
    sh->out = backend == GS_BACKEND_CUDA ? place->out : place->control;
    sh->in = backend == GS_BACKEND_CUDA ? place->in : place->control;
    sh->out_peer = place->first_rank + (int)(((stage + 1) % pp) * tp + place->shard);
    sh->in_peer = place->first_rank + (int)(((stage + pp - 1) % pp) * tp + place->shard);
  }
  if (tp > 1) sh->tp = place->tp;
  sh->device = backend == GS_BACKEND_CUDA ? place->device : -1;
  sh->tokens = calloc(config->max_batch, sizeof *sh->tokens);
  gs_status status = sh->tokens ? GS_OK
                                : gs_error(GS_ERR_NOMEM, "cannot allocate the shard's tokens");
  if (status == GS_OK && backend != GS_BACKEND_CUDA) status = make_cpu_state(e);
  if (status == GS_OK) status = run_call(e, OP_CREATE);
  if (status != GS_OK) {
    gs_llm_engine_destroy(e);
    return status;
  }
  e->quit_pending = stage == 0 && place->shard == 0;
  *out = e;
  return GS_OK;
}

/* The first shard over processes: call `op` (the clock, quit) to its
 * stage's other shards and down its stage's column. */
static gs_status tell_others(gs_llm_engine *e, engine_op op) {
  if (leads(e)) GS_TRY(gs_llm_pp_call_announce(&e->shards[0], op));
  if (e->stages > 1) GS_TRY(gs_llm_pp_header_send(&e->shards[0], op));
  return gs_comm_p2p_drain(e->control);
}

gs_status gs_llm_engine_start_clock(gs_llm_engine *e) {
  if (!e->quit_pending) return GS_OK;
  return tell_others(e, OP_CLOCK);
}

gs_status gs_llm_engine_follow(gs_llm_engine *e, int *clock) {
  *clock = 0;
  engine_shard *sh = e->shards;
  if (!e->remote || (sh->stage == 0 && sh->shard.index == 0))
    GS_BUG("llm follow on the first shard or in one process");
  const gs_llm_engine_config *c = &e->config;
  uint32_t lengths[GS_LLM_MAX_BATCH];
  int32_t tokens[GS_LLM_MAX_BATCH];
  const int32_t *prompts[GS_LLM_MAX_BATCH];
  // The first stage's shards embed the prompts, which the first shard sends.
  int32_t *storage = sh->stage == 0 ? calloc((size_t)c->max_batch * c->max_input, sizeof *storage)
                                    : NULL;
  if (sh->stage == 0 && !storage) return gs_error(GS_ERR_NOMEM, "cannot allocate the prompts");
  gs_status st = GS_OK;
  while (st == GS_OK) {
    engine_op op = OP_QUIT;
    size_t n = 0, next = 0;
    st = sh->stage == 0 ? gs_llm_pp_call_receive(sh, &op, &n, &next, lengths, storage)
                        : gs_llm_pp_header_next(sh, &op, &n, &next, lengths);
    if (st != GS_OK) break;
    if (op == OP_QUIT || op == OP_CLOCK) {
      *clock = op == OP_CLOCK;
      if (sh->stage == 0 && e->stages > 1) st = gs_llm_pp_header_send(sh, op);
      if (st == GS_OK) st = gs_comm_p2p_drain(e->control);
      break;
    }
    if (op == OP_PREFILL) {
      size_t at = 0;
      for (size_t i = 0; i < n; at += lengths[i], i++) prompts[i] = storage ? storage + at : NULL;
      st = gs_llm_engine_prefill(e, n, storage ? prompts : NULL, lengths, tokens);
    } else if (op == OP_DECODE) {
      st = gs_llm_engine_decode(e, n, next, tokens);
    } else {
      st = gs_llm_engine_logits(e, n, NULL);
    }
  }
  free(storage);
  return st;
}

gs_status gs_llm_engine_create(const gs_llm_engine_config *config, gs_backend backend,
                               const int *devices, gs_llm_engine **out) {
  *out = NULL;
  gs_llm_engine *e = calloc(1, sizeof *e);
  if (!e) return gs_error(GS_ERR_NOMEM, "cannot allocate an llm replica");
  e->backend = backend;
  e->config = *config;
  if (e->config.tp == 0) e->config.tp = 1;
  e->stages = e->config.pp ? e->config.pp : 1;
  e->n_shards = e->config.tp * e->stages;
  gs_status status = GS_OK;
  if (e->stages > 1) {
    const uint32_t *f = e->config.stage_first;
    // The options checked the split (gs_llm_pp_split); a caller that did not is a bug.
    if (e->stages > GS_LLM_MAX_STAGES || f[0] != 0 || f[e->stages] != e->config.shape.layers)
      GS_BUG("llm replica of %u stages without its split of %llu layers", e->stages,
             (unsigned long long)e->config.shape.layers);
    for (uint32_t st = 0; st < e->stages; st++)
      if (f[st] >= f[st + 1]) GS_BUG("llm pipeline stage %u has no layer", st);
  }
  if (status == GS_OK) status = make_shards(e, devices);
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
  // The other stages' processes follow until stage 0 quits; a failed send
  // leaves them to their timeout.
  if (e->remote && e->quit_pending) {
    gs_error_kept kept;
    gs_error_keep(&kept);
    (void)tell_others(e, OP_QUIT);
    gs_error_restore(&kept);
  }
  const uint32_t n = e->n_shards;
  int threads = 0;
  for (uint32_t k = 1; e->shards && k < n; k++) threads += e->shards[k].started;
  if (threads > 0) {
    if (threads == (int)n - 1) {
      e->op = OP_QUIT;
      if (gs_barrier_wait(&e->start) != 0) gs_barrier_abort(&e->start);
    } else {
      gs_barrier_abort(&e->start);  // not every thread started: none may wait
    }
    for (uint32_t k = 1; k < n; k++)
      if (e->shards[k].started) pthread_join(e->shards[k].thread, NULL);
  }
  if (e->barriers) {
    gs_barrier_destroy(&e->start);
    gs_barrier_destroy(&e->done);
  }
  for (uint32_t k = 0; e->shards && k < n; k++) {
    engine_shard *sh = &e->shards[k];
    if (sh->device >= 0 && sh->gpu) cudaSetDevice(sh->device);
    gs_llm_pp_release(sh);
    gs_llm_gpu_destroy(sh->gpu);
    gs_llm_cpu_destroy(sh->cpu);
    free(sh->logits);
    free(sh->tokens);
    free(sh->hidden);
    free(sh->outs);
  }
  if (e->shards && e->shards[0].device >= 0) cudaSetDevice(e->shards[0].device);
  for (uint32_t st = 0; e->worlds && st < e->stages; st++) gs_comm_world_destroy(e->worlds[st]);
  for (uint32_t i = 0; e->links && i < n; i++) gs_comm_world_destroy(e->links[i]);
  free(e->links);
  free(e->worlds);
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
        e->row_tokens[at] = prompts ? prompts[i][p] : 0; /* a later stage has none */
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

void gs_llm_engine_stage_seconds(const gs_llm_engine *e, double *busy, uint32_t *stages,
                                 double *calls) {
  *stages = e->stages;
  *calls = e->call_seconds;
  for (uint32_t st = 0; st < e->stages; st++)
    busy[st] = e->remote ? (st == e->shards[0].stage ? e->shards[0].busy : 0.0)
                         : e->shards[st * e->config.tp].busy;
}

/* CUDA: each shard's GPU stamps its steps from now on, its clock anchored
 * on the host's (its error added to the host clock's). */
static gs_status record_on_gpus(gs_llm_engine *e, const gs_llm_arrival_group *stages) {
  for (uint32_t k = 0; k < e->n_shards; k++) {
    engine_shard *sh = &e->shards[k];
    double error = 0.0;
    GS_CHECK_CUDA(cudaSetDevice(sh->device));
    GS_TRY(gs_llm_gpu_record_arrivals(sh->gpu, &error));
    stages[sh->stage].arrival->ranks[sh->shard.index].error_seconds += error;
  }
  GS_CHECK_CUDA(cudaSetDevice(e->shards[0].device));
  return GS_OK;
}

gs_status gs_llm_engine_record_arrival(gs_llm_engine *e, const gs_llm_arrival_group *stages) {
  const int on_cpu = e->backend == GS_BACKEND_CPU;
  for (uint32_t st = 0; st < e->stages; st++)
    if ((!on_cpu && e->stages > 1) || e->config.tp < 2 || !stages[st].arrival ||
        stages[st].arrival->n_ranks != e->config.tp)
      GS_BUG("llm arrival times: %u shards of stage %u of %u (%s) for a record of %zu ranks",
             e->config.tp, st, e->stages, e->backend == GS_BACKEND_CUDA ? "cuda" : "cpu",
             stages[st].arrival ? stages[st].arrival->n_ranks : 0);
  if (!on_cpu) {
    GS_TRY(record_on_gpus(e, stages));
    e->arrival = stages;
    return GS_OK;
  }
  // Between processes the caller started the recorder on the shard's
  // handle, the job's world (collective over its processes).
  for (uint32_t k = 0; !e->remote && k < e->n_shards; k++) {
    gs_comm_arrival_clock clock;
    GS_TRY(gs_comm_arrival_start(e->shards[k].tp.comm, 1, NULL, &clock));
    gs_arrival *into = stages[e->shards[k].stage].arrival;
    gs_arrival_rank *r = &into->ranks[e->shards[k].shard.index];
    r->offset_seconds = clock.offset_seconds;
    if (clock.error_seconds > r->error_seconds) r->error_seconds = clock.error_seconds;
    if (e->shards[k].shard.index == 0) into->alignment = clock.alignment;
  }
  e->arrival = stages;
  return GS_OK;
}

void gs_llm_engine_set_late(gs_llm_engine *e, uint32_t shard, double seconds) {
  if (shard >= e->n_shards) return;
  e->shards[shard].late = seconds;
  if (e->shards[shard].gpu) gs_llm_gpu_set_late(e->shards[shard].gpu, seconds);
}

void gs_llm_engine_reset_seconds(gs_llm_engine *e) {
  e->call_seconds = 0.0;
  for (uint32_t k = 0; k < e->n_shards; k++) e->shards[k].busy = 0.0;
}
