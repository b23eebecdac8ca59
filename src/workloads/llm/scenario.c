/* The llm scenario driver (see scenario.h). */
#include "workloads/llm/scenario.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "core/arrival.h"
#include "core/barrier.h"
#include "core/fault.h"
#include "core/check.h"
#include "core/interrupt.h"
#include "core/timer.h"
#include "platform/comm.h"
#include "platform/trace.h"
#include "workloads/llm/llm_pp.h"
#include "workloads/llm/llm_pp_samples.h"
#include "workloads/llm/scenario_mpi.h"

const char *const gs_llm_scenario_names[] = {"offline", "server", "single-stream", NULL};
const char *const gs_llm_dispatch_names[] = {"static", "dynamic", NULL};

/* Warm-up prompts use their own token stream, apart from the samples'. */
#define GS_LLM_WARMUP_SEED_MIX UINT64_C(0x5741524D5550)

const char *gs_llm_request_status_name(gs_llm_request_status s) {
  switch (s) {
    case GS_LLM_REQ_OK:
      return "ok";
    case GS_LLM_REQ_TIMED_OUT:
      return "timed_out";
    case GS_LLM_REQ_FAILED:
      break;
  }
  return "failed";
}

typedef struct {
  const gs_llm_scenario_config *config;
  const gs_run_config *run;
  const gs_llm_sample *samples;
  gs_llm_queue shared_queue;
  gs_llm_queue rank_queue[GS_MAX_RANKS];
  int alive; /* replicas still pulling (dynamic), under shared_queue.mutex */
  gs_barrier barrier;
  double t0;                /* scenario start, monotonic seconds; set by rank 0 (threads
                               mode) or the process's main thread (mpi mode) */
  double end[GS_MAX_RANKS]; /* when each replica stopped, since t0 */
  gs_llm_run_result *out;
  // --max-concurrency: when each of its slots was freed (INFINITY: a
  // request holds it), under slots_mutex; NULL without a cap.
  pthread_mutex_t slots_mutex;
  double *slots;
  uint64_t n_slots;
  // Under a launcher with tp > 1: this process's stage's shards (a group
  // of the job's world), else {0}; on CUDA with stages its NCCL links to
  // the next and the previous stage, else NULL.
  gs_llm_tp_comm tp;
  gs_comm *link_out, *link_in;
} scenario_shared;

typedef struct {
  scenario_shared *sh;
  int rank;
  gs_llm_engine *engine;
  gs_llm_replica_result *result;
  size_t capacity;
  int32_t *prompt_storage; /* max_batch x max_input */
  const int32_t **prompts;
  uint32_t *lengths;
  int32_t *tokens;
  gs_llm_request_record *batch; /* max_batch records being processed */
  uint32_t *ids;
  int cold_pending; /* the next batch is the cold one (no warmup) */
  uint64_t batches; /* batches served: the steps of its trace */
  int warming;      /* in warm-up: the clock has not started, nothing times out */
  double slow;      /* --inject slow: every forward pass takes this many times its own time */
  double *issued;   /* per taken sample, when it was issued (with a concurrency cap) */
  const gs_llm_arrival_group *arrival; /* its stages' records of the shards' arrivals, or NULL */
} replica;

static double now_since(const scenario_shared *sh) {
  return gs_time_seconds() - sh->t0;
}

static gs_status append_record(replica *r, const gs_llm_request_record *rec) {
  gs_llm_replica_result *res = r->result;
  if (res->n_requests == r->capacity) {
    size_t grown = r->capacity ? 2 * r->capacity : 64;
    gs_llm_request_record *p = realloc(res->requests, grown * sizeof *p);
    if (!p) return gs_error(GS_ERR_NOMEM, "cannot grow the request records to %zu", grown);
    res->requests = p;
    r->capacity = grown;
  }
  res->requests[res->n_requests++] = *rec;
  if (rec->status == GS_LLM_REQ_OK) res->generated_tokens += rec->output_tokens;
  return GS_OK;
}

static void finish_record(gs_llm_request_record *rec) {
  rec->ttft = isnan(rec->first_token) ? NAN : rec->first_token - rec->arrival;
  rec->latency = rec->status == GS_LLM_REQ_OK ? rec->finish - rec->arrival : NAN;
  rec->tpot = rec->status == GS_LLM_REQ_OK && rec->output_tokens > 1
                  ? (rec->finish - rec->first_token) / (double)(rec->output_tokens - 1)
                  : NAN;
}

static gs_llm_request_record new_record(const gs_llm_sample *s, int rank, double arrival) {
  gs_llm_request_record rec = {.id = s->id,
                               .input_tokens = s->input_tokens,
                               .output_tokens = 0,
                               .rank = rank,
                               .arrival = arrival,
                               .start = NAN,
                               .first_token = NAN,
                               .finish = NAN,
                               .status = GS_LLM_REQ_FAILED};
  return rec;
}

/* Longest target first. While a batch runs, `latency` holds the sample's
 * target output length (finish_record replaces it). */
static int by_output_desc(const void *a, const void *b) {
  const gs_llm_request_record *x = a, *y = b;
  if (x->latency != y->latency) return x->latency > y->latency ? -1 : 1;
  return x->id < y->id ? -1 : (x->id > y->id);
}

static int timed_out(const replica *r, const gs_llm_request_record *rec, double t) {
  return !r->warming && r->sh->config->timeout > 0.0 && t - rec->arrival > r->sh->config->timeout;
}

/* --inject slow: a forward pass that began at `began` (monotonic seconds)
 * is stretched to r->slow times its own duration. */
static void slow_down(const replica *r, double began) {
  if (r->slow > 1.0) gs_sleep_seconds((r->slow - 1.0) * (gs_time_seconds() - began));
}

/* --pp: the call just made, over n sequences whose residual stream is
 * `rows` rows, into the replica's bounded samples (none in warm-up). */
static void record_call(replica *r, double rows, size_t n) {
  gs_llm_pp_samples *s = r->result->pp_samples;
  if (!s || r->warming) return;
  double busy[GS_LLM_MAX_STAGES], calls = 0.0;
  uint32_t stages = 0;
  gs_llm_engine_stage_seconds(r->engine, busy, &stages, &calls);
  gs_llm_pp_samples_add(s, calls, busy, rows,
                        (double)gs_llm_pp_groups(&r->sh->config->engine, n), (double)n);
}

/* Prefills and decodes the n records in r->batch (their targets in
 * `latency`, see by_output_desc); fills their times and statuses.
 * GS_ERR_INTERRUPTED when SIGINT or SIGTERM cut the batch short after a
 * step (the records not finished keep a NaN finish). */
static gs_status generate(replica *r, size_t n, uint64_t prompt_seed) {
  scenario_shared *sh = r->sh;
  gs_llm_request_record *b = r->batch;
  size_t max_input = sh->config->engine.max_input;
  qsort(b, n, sizeof *b, by_output_desc);
  for (size_t i = 0; i < n; i++) {
    int32_t *p = r->prompt_storage + i * max_input;
    gs_llm_prompt_tokens(prompt_seed, b[i].id, b[i].input_tokens, sh->config->engine.shape.vocab,
                         p);
    r->prompts[i] = p;
    r->lengths[i] = b[i].input_tokens;
    b[i].start = now_since(sh);
  }
  double pass = gs_time_seconds(), rows = 0.0;
  GS_TRY(gs_llm_engine_prefill(r->engine, n, r->prompts, r->lengths, r->tokens));
  for (size_t i = 0; i < n; i++) rows += r->lengths[i];
  record_call(r, rows, n);
  slow_down(r, pass);
  r->result->forward_passes++;
  double t = now_since(sh);
  size_t running = 0;
  for (size_t i = 0; i < n; i++) {
    b[i].first_token = t;
    b[i].output_tokens = 1;
    b[i].status = GS_LLM_REQ_OK; /* provisional while running */
  }
  for (;;) {
    // Rows [0, active) are decoded: the last still-running sequence and
    // every one before it (finished ones in between ride along, ignored).
    size_t active = 0;
    running = 0;
    for (size_t i = 0; i < n; i++) {
      if (b[i].status != GS_LLM_REQ_OK || !isnan(b[i].finish)) continue;
      if ((double)b[i].output_tokens >= b[i].latency) {
        b[i].finish = t;
      } else if (timed_out(r, &b[i], t)) {
        b[i].status = GS_LLM_REQ_TIMED_OUT;
      } else {
        active = i + 1;
        running++;
      }
    }
    if (running == 0) break;
    // The rows the next step decodes unless a sequence times out: up to
    // the last one still short of its target after this step. The engine
    // starts that step before it hands back this one's tokens.
    size_t next = 0;
    for (size_t i = 0; i < active; i++)
      if (b[i].status == GS_LLM_REQ_OK && isnan(b[i].finish) &&
          (double)(b[i].output_tokens + 1) < b[i].latency)
        next = i + 1;
    // After SIGINT or SIGTERM this step is the batch's last: the engine
    // starts no further one, and sequences short of their targets stay
    // unfinished. A launcher kills the job a second after its SIGTERM
    // (Open MPI's odls_base_sigkill_timeout), sooner than a batch may end.
    const int stopping = gs_interrupt_signal() != 0;
    if (stopping) next = 0;
    pass = gs_time_seconds();
    GS_TRY(gs_llm_engine_decode(r->engine, active, next, r->tokens));
    record_call(r, (double)active, active);
    slow_down(r, pass);
    r->result->forward_passes++;
    t = now_since(sh);
    for (size_t i = 0; i < active; i++)
      if (b[i].status == GS_LLM_REQ_OK && isnan(b[i].finish)) b[i].output_tokens++;
    if (stopping)
      return gs_error(GS_ERR_INTERRUPTED, "interrupted by signal %d within a batch",
                      gs_interrupt_signal());
  }
  for (size_t i = 0; i < n; i++)
    if (b[i].status == GS_LLM_REQ_OK && timed_out(r, &b[i], b[i].finish))
      b[i].status = GS_LLM_REQ_TIMED_OUT;
  return GS_OK;
}

/* Gives the concurrency slots of n finished requests back, freed now. */
static void release_slots(scenario_shared *sh, size_t n) {
  if (!sh->slots) return;
  const double t = now_since(sh);
  pthread_mutex_lock(&sh->slots_mutex);
  for (uint64_t k = 0; k < sh->n_slots && n > 0; k++)
    if (isinf(sh->slots[k])) sh->slots[k] = t, n--;
  pthread_mutex_unlock(&sh->slots_mutex);
}

/* Takes up to `max` arrived samples of q into r->ids; with a concurrency
 * cap only as many as there are free slots, each taking the earliest freed
 * one and issued when both it and the slot were there (r->issued).
 * *slots_full is set when the cap held samples back. */
static size_t take_samples(replica *r, gs_llm_queue *q, double now, size_t max, double *next,
                           int *slots_full) {
  scenario_shared *sh = r->sh;
  *slots_full = 0;
  if (!sh->slots) return gs_llm_queue_take(q, now, max, r->ids, next);
  pthread_mutex_lock(&sh->slots_mutex);
  size_t free_slots = 0;
  for (uint64_t k = 0; k < sh->n_slots; k++) free_slots += !isinf(sh->slots[k]);
  const size_t n = gs_llm_queue_take(q, now, free_slots < max ? free_slots : max, r->ids, next);
  *slots_full = free_slots == 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t best = 0;
    for (uint64_t k = 1; k < sh->n_slots; k++)
      if (sh->slots[k] < sh->slots[best]) best = k;
    r->issued[i] = fmax(sh->samples[r->ids[i]].arrival, sh->slots[best]);
    sh->slots[best] = INFINITY;
  }
  pthread_mutex_unlock(&sh->slots_mutex);
  return n;
}

/* Runs the samples ids[0..n) as one batch and records them. */
static gs_status run_batch(replica *r, const uint32_t *ids, size_t n, double issued) {
  scenario_shared *sh = r->sh;
  int single = sh->config->scenario == GS_LLM_SINGLE_STREAM;
  size_t kept = 0;
  double t = now_since(sh);
  for (size_t i = 0; i < n; i++) {
    const gs_llm_sample *s = &sh->samples[ids[i]];
    gs_llm_request_record rec =
        new_record(s, r->rank, single ? issued : sh->slots ? r->issued[i] : s->arrival);
    rec.cold = r->cold_pending;
    if (timed_out(r, &rec, t)) {
      // Waited in the queue past its timeout: never started.
      rec.status = GS_LLM_REQ_TIMED_OUT;
      finish_record(&rec);
      GS_TRY(append_record(r, &rec));
      continue;
    }
    rec.latency = (double)s->output_tokens; /* target, until generate() is done */
    r->batch[kept++] = rec;
  }
  r->cold_pending = 0;
  release_slots(sh, n - kept); // timed out in the queue: done with their slots
  if (kept == 0) return GS_OK;
  gs_trace_step_open(0, (int64_t)r->batches++);
  gs_trace_begin(GS_TRACE_STEP, "batch", (int64_t)kept, NULL);
  gs_status status = generate(r, kept, sh->config->stream.seed);
  gs_trace_end();
  gs_trace_step_close();
  for (size_t i = 0; i < kept; i++) {
    gs_llm_request_record *rec = &r->batch[i];
    const int unfinished = rec->status == GS_LLM_REQ_OK && isnan(rec->finish);
    // Cut short by a stop request: not completed, and not failed either
    // (as the requests never issued after it).
    if (status == GS_ERR_INTERRUPTED && unfinished) continue;
    if (status != GS_OK && (rec->status != GS_LLM_REQ_OK || unfinished)) {
      rec->status = GS_LLM_REQ_FAILED;
    }
    finish_record(rec);
    gs_status appended = append_record(r, rec);
    if (status == GS_OK) status = appended;
  }
  release_slots(sh, kept);
  return status;
}

static gs_status warm_up(replica *r) {
  scenario_shared *sh = r->sh;
  const gs_llm_scenario_config *c = sh->config;
  r->result->cold_seconds = -1.0;
  for (uint64_t w = 0; w < c->warmup; w++) {
    if (gs_interrupt_signal() != 0)
      return gs_error(GS_ERR_INTERRUPTED, "interrupted by signal %d during warm-up",
                            gs_interrupt_signal());
    size_t n = c->engine.max_batch;
    for (size_t i = 0; i < n; i++) {
      gs_llm_request_record rec = {.id = (uint32_t)(w * n + i),
                                   .input_tokens = c->stream.input_max,
                                   .latency = (double)c->stream.output_max,
                                   .arrival = 0.0,
                                   .first_token = NAN,
                                   .finish = NAN,
                                   .start = NAN};
      r->batch[i] = rec;
    }
    double t0 = gs_time_seconds();
    r->warming = 1;
    gs_status status = generate(r, n, c->stream.seed ^ GS_LLM_WARMUP_SEED_MIX);
    r->warming = 0;
    GS_TRY(status);
    if (w == 0) r->result->cold_seconds = gs_time_seconds() - t0;
  }
  r->result->forward_passes = 0;
  gs_llm_engine_reset_seconds(r->engine);
  // Per-call samples of a pipeline whose stages are all in this process.
  if (c->engine.pp > 1 && !sh->run->control && !r->result->pp_samples &&
      !(r->result->pp_samples = gs_llm_pp_samples_new((uint32_t)c->engine.pp)))
    return gs_error(GS_ERR_NOMEM, "cannot allocate the pipeline's samples");
  return GS_OK;
}

static gs_status replica_setup(replica *r) {
  scenario_shared *sh = r->sh;
  const gs_llm_scenario_config *c = sh->config;
  size_t b = c->engine.max_batch;
  r->prompt_storage = calloc(b * c->engine.max_input, sizeof *r->prompt_storage);
  r->prompts = calloc(b, sizeof *r->prompts);
  r->lengths = calloc(b, sizeof *r->lengths);
  r->tokens = calloc(b, sizeof *r->tokens);
  r->batch = calloc(b, sizeof *r->batch);
  r->ids = calloc(b, sizeof *r->ids);
  r->issued = calloc(b, sizeof *r->issued);
  if (!r->prompt_storage || !r->prompts || !r->lengths || !r->tokens || !r->batch || !r->ids ||
      !r->issued)
    return gs_error(GS_ERR_NOMEM, "cannot allocate the replica's batch buffers");
  // Replica k drives GPUs k g .. k g + g - 1 (g = tp x pp: its shards and
  // stages), or GPU k.
  const uint32_t g = (c->engine.tp ? c->engine.tp : 1) * (c->engine.pp ? c->engine.pp : 1);
  const int *devices = sh->run->devices + (size_t)r->rank * g;
  if (sh->run->backend == GS_BACKEND_CUDA) GS_CHECK_CUDA(cudaSetDevice(devices[0]));
  // Host lane only: the replica's kernels come from CUPTI where it loads.
  GS_TRY(gs_trace_attach(sh->run->trace, sh->run->trace_measurement, r->rank,
                         sh->run->backend == GS_BACKEND_CUDA ? devices[0] : -1, NULL));
  // Under a launcher the replica's other shards and stages are the
  // processes after this one; --inject late names this process's rank.
  if (sh->run->control && g > 1) {
    const gs_llm_engine_place place = {.control = gs_comm_world_rank(sh->run->control, 0),
                                       .tp = sh->tp, .first_rank = sh->run->process_rank,
                                       .out = sh->link_out, .in = sh->link_in,
                                       .device = devices[0]};
    GS_TRY(gs_llm_engine_create_stage(&c->engine, sh->run->backend, &place, &r->engine));
    gs_llm_engine_set_late(r->engine, 0,
                           gs_fault_late_seconds(&sh->run->faults, sh->run->process_rank));
    return GS_OK;
  }
  GS_TRY(gs_llm_engine_create(&c->engine, sh->run->backend, devices, &r->engine));
  // --inject late: ranks are the world's GPUs (CPU ranks), shard j of
  // replica k is rank k g + j.
  for (uint32_t j = 0; j < g; j++)
    gs_llm_engine_set_late(r->engine, j,
                           gs_fault_late_seconds(&sh->run->faults, r->rank * (int)g + (int)j));
  return GS_OK;
}

/* Pulls and runs batches until the rank's queue is empty, or until SIGINT
 * or SIGTERM (core/interrupt.h): then no further request is issued, the
 * batch in flight stops after its current step, and the completed requests
 * are kept. */
static gs_status serve(replica *r) {
  scenario_shared *sh = r->sh;
  const gs_llm_scenario_config *c = sh->config;
  gs_llm_queue *q =
      c->dispatch == GS_LLM_DISPATCH_DYNAMIC ? &sh->shared_queue : &sh->rank_queue[r->rank];
  int single = c->scenario == GS_LLM_SINGLE_STREAM;
  size_t max = c->engine.max_batch;
  double first = NAN;
  for (;;) {
    if (gs_interrupt_signal() != 0)
      return gs_error(GS_ERR_INTERRUPTED, "interrupted by signal %d: no further request "
                            "issued", gs_interrupt_signal());
    // Under a launcher a peer stopped by a signal ends the job: stop too.
    int peer_signal = 0;
    const int peer = sh->run->control ? gs_comm_stopped_peer(sh->run->control, &peer_signal) : -1;
    if (peer >= 0)
      return gs_error(GS_ERR_INTERRUPTED, "stopped: rank %d was stopped by signal %d; no further "
                      "request issued", peer, peer_signal);
    double now = now_since(sh), next = 0.0;
    // Single-stream issues the next sample the moment the previous is done.
    int slots_full = 0;
    size_t n = take_samples(r, q, single ? INFINITY : now, max, &next, &slots_full);
    if (n == 0) {
      if (next < 0.0) break;
      if (slots_full) { // a request in flight frees its slot when done
        gs_sleep_seconds(0.0005);
        continue;
      }
      // In short naps, so that a stop request is seen between arrivals.
      gs_sleep_seconds(fmin(next - now, 0.05));
      continue;
    }
    if (isnan(first)) first = now;
    GS_TRY(run_batch(r, r->ids, n, now));
    r->result->busy_seconds = now_since(sh) - first;
  }
  return GS_OK;
}

/* A replica that stops early: with static dispatch its remaining samples
 * fail with it; with dynamic dispatch the others take them, unless it was
 * the last one pulling. */
static void fail_leftovers(replica *r) {
  scenario_shared *sh = r->sh;
  gs_llm_queue *q = &sh->rank_queue[r->rank];
  if (sh->config->dispatch == GS_LLM_DISPATCH_DYNAMIC) {
    pthread_mutex_lock(&sh->shared_queue.mutex);
    int last = --sh->alive == 0;
    pthread_mutex_unlock(&sh->shared_queue.mutex);
    if (!last) return;
    q = &sh->shared_queue;
  }
  double next = 0.0;
  uint32_t id;
  while (gs_llm_queue_take(q, INFINITY, 1, &id, &next) == 1) {
    gs_llm_request_record rec = new_record(&sh->samples[id], r->rank, sh->samples[id].arrival);
    finish_record(&rec);
    if (append_record(r, &rec) != GS_OK) break;
  }
}

static void *replica_main(void *arg) {
  replica *r = arg;
  scenario_shared *sh = r->sh;
  gs_set_thread_rank(r->rank);
  gs_clear_error();
  r->cold_pending = sh->config->warmup == 0;
  gs_status status = replica_setup(r);
  if (status == GS_OK) status = warm_up(r);
  if (status == GS_OK && r->arrival) status = gs_llm_engine_record_arrival(r->engine, r->arrival);
  if (status == GS_OK) status = gs_llm_engine_start_clock(r->engine);
  if (status != GS_OK) gs_barrier_abort(&sh->barrier);
  // Every replica is ready before the clock starts; under a launcher the
  // main thread starts it with the other processes between the two waits.
  const int ready = gs_barrier_wait(&sh->barrier) == 0;
  if (ready && r->rank == 0 && !sh->run->control) sh->t0 = gs_time_seconds();
  const int started = ready && gs_barrier_wait(&sh->barrier) == 0;
  if (started && status == GS_OK)
    status = serve(r);
  else if (status == GS_OK)
    status = gs_error(GS_ERR_ABORTED, ready ? "stopped before its first request: the clock did "
                      "not start (a process of the job failed or was lost)"
                                            : "stopped because another replica failed");
  sh->end[r->rank] = sh->t0 > 0.0 ? now_since(sh) : 0.0; /* 0: the clock never started */
  if (status != GS_OK) {
    snprintf(r->result->error, sizeof r->result->error, "%s", gs_last_error());
    // Requests never issued because of a stop request, or because the
    // job broke before its clock started, did not fail.
    if (status != GS_ERR_INTERRUPTED && (started || !ready)) fail_leftovers(r);
  }
  r->result->status = status;
  gs_trace_abandon(0);
  gs_trace_detach();
  if (r->engine)
    gs_llm_engine_stage_seconds(r->engine, r->result->stage_busy, &r->result->stages,
                                &r->result->pass_seconds);
  gs_llm_engine_destroy(r->engine);
  r->engine = NULL;
  gs_set_thread_rank(-1);
  return NULL;
}

static void replica_free(replica *r) {
  free(r->prompt_storage);
  free(r->prompts);
  free(r->lengths);
  free(r->tokens);
  free(r->batch);
  free(r->ids);
  free(r->issued);
}

/* Under a launcher: the clock starts for every process together. The main
 * thread meets its replica (when it runs one) at the in-process barrier,
 * then every process at the control world's barrier, then releases the
 * replica. A replica that failed its setup aborted the barrier; its process
 * still meets the others, so nobody waits for it. */
static gs_status start_clock_with_processes(scenario_shared *sh, int local) {
  int ready = local == 0 || gs_barrier_wait(&sh->barrier) == 0;
  gs_status status = gs_comm_barrier(gs_comm_world_rank(sh->run->control, 0));
  sh->t0 = gs_time_seconds();
  if (status != GS_OK) {
    gs_barrier_abort(&sh->barrier);
    return status;
  }
  if (local && ready) (void)gs_barrier_wait(&sh->barrier);
  return GS_OK;
}

/* Under a launcher, the process of a shard other than a replica's first
 * (part->per ranks per replica, part->tp shards per stage): builds its
 * shard and follows the replica's first shard, the process `at` ranks
 * before it, through warm-up, the clock's start (met with every process:
 * *clock) and the stream, until it quits. Its stage's busy seconds after
 * warm-up (a stage's first shard's) and its outcome go into *part. */
static void follow_stage(scenario_shared *sh, gs_llm_process_part *part, gs_status *clock) {
  const gs_run_config *run = sh->run;
  const int me = run->process_rank, at = me % part->per;
  gs_set_thread_rank(me);
  gs_llm_engine *e = NULL;
  const gs_llm_engine_place place = {.control = gs_comm_world_rank(run->control, 0),
                                     .tp = sh->tp, .first_rank = me - at,
                                     .out = sh->link_out, .in = sh->link_in,
                                     .stage = (uint32_t)(at / part->tp),
                                     .shard = (uint32_t)(at % part->tp),
                                     .device = run->devices[me]};
  gs_status st = gs_llm_engine_create_stage(&sh->config->engine, run->backend, &place, &e);
  if (st == GS_OK) gs_llm_engine_set_late(e, 0, gs_fault_late_seconds(&run->faults, me));
  int at_clock = 0;
  if (st == GS_OK) st = gs_llm_engine_follow(e, &at_clock);
  if (st == GS_OK) gs_llm_engine_reset_seconds(e); /* warm-up is over */
  if (st == GS_OK && sh->out->arrivals)
    st = gs_llm_engine_record_arrival(
        e, &sh->out->arrivals[(size_t)(me / part->per) * (size_t)(part->per / part->tp)]);
  *clock = start_clock_with_processes(sh, 0);
  if (st == GS_OK && *clock == GS_OK && at_clock) st = gs_llm_engine_follow(e, &at_clock);
  if (e && at % part->tp == 0) {
    double busy[GS_LLM_MAX_STAGES], calls = 0.0;
    uint32_t stages = 0;
    gs_llm_engine_stage_seconds(e, busy, &stages, &calls);
    part->stage_busy = busy[place.stage];
  }
  gs_llm_engine_destroy(e);
  part->status = st;
  snprintf(part->error, sizeof part->error, "%s", st == GS_OK ? "" : gs_last_error());
  gs_set_thread_rank(-1);
}

/* The run's arrival records: one per replica and stage (group
 * replica * pp + stage) of tp ranks each, on `clock` aligned by
 * `alignment`. */
static gs_status new_arrivals(int replicas, uint32_t pp, uint32_t tp, const char *clock,
                              const char *alignment, gs_llm_run_result *out) {
  const size_t n = (size_t)replicas * pp;
  out->arrivals = calloc(n, sizeof *out->arrivals);
  if (!out->arrivals) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu arrival records", n);
  out->n_arrivals = n;
  for (size_t g = 0; g < n; g++) {
    out->arrivals[g] = (gs_llm_arrival_group){.replica = (int)(g / pp), .stage = (int)(g % pp),
                                          .first_rank = (int)(g * tp)};
    out->arrivals[g].arrival = gs_arrival_new(tp, 64, clock, alignment);
    if (!out->arrivals[g].arrival) return GS_ERR_NOMEM;
  }
  return GS_OK;
}

/* Under a launcher: every process starts an arrival recorder on its handle
 * of the job's world (its clock aligned with process 0's), and its
 * shard's record (group process / tp, rank process % tp) gets its
 * offset. */
static gs_status start_arrivals(const gs_run_config *run, int replicas, uint32_t pp, uint32_t tp,
                                gs_llm_run_result *out) {
  gs_comm_arrival_clock clock;
  GS_TRY(gs_comm_arrival_start(gs_comm_world_rank(run->control, 0), 1, NULL, &clock));
  // The job's world is on the host; GPUs stamp on their own clocks.
  const char *on = run->backend == GS_BACKEND_CUDA ? "device" : clock.clock;
  const gs_status st = new_arrivals(replicas, pp, tp, on, clock.alignment, out);
  if (st != GS_OK) {
    gs_comm_arrival_stop(gs_comm_world_rank(run->control, 0));
    return st;
  }
  if (run->process_rank < run->world_size) {
    gs_arrival_rank *r =
        &out->arrivals[run->process_rank / (int)tp].arrival->ranks[run->process_rank % (int)tp];
    r->offset_seconds = clock.offset_seconds;
    r->error_seconds = clock.error_seconds;
  }
  return GS_OK;
}

gs_status gs_llm_scenario_run(const gs_llm_scenario_config *config, const gs_run_config *run,
                              gs_llm_run_result *out) {
  memset(out, 0, sizeof *out);
  const int tp = (config->engine.tp ? (int)config->engine.tp : 1) *
                 (config->engine.pp ? (int)config->engine.pp : 1); /* ranks per replica */
  const int shards = config->engine.tp ? (int)config->engine.tp : 1; /* per stage */
  // The CLI measures whole replicas only.
  if (run->world_size % tp != 0)
    GS_BUG("llm scenario: %d ranks%s are not whole replicas of %d", run->world_size,
           run->control ? " under a launcher" : "", tp);
  int world = run->world_size / tp; /* replicas */
  out->world_size = world;
  // Arrival skew at the tensor-parallel all-reduces, each replica's
  // stages on their own (docs/stragglers.md, "Arrival skew"; on CUDA the
  // GPUs stamp them, without --pp); under a launcher once every process
  // started its recorder, below.
  const uint32_t stages = config->engine.pp ? config->engine.pp : 1;
  const int on_gpus = run->backend == GS_BACKEND_CUDA;
  const int arrivals = shards >= 2 && config->arrival_times && (!on_gpus || stages == 1);
  if (arrivals && !run->control) {
    const gs_status st =
        new_arrivals(world, stages, (uint32_t)shards, on_gpus ? "device" : "host", "shared", out);
    if (st != GS_OK) {
      gs_llm_run_result_free(out);
      return st;
    }
  }
  // Threads mode runs every replica here; under a launcher (run->control)
  // this process runs the replica of its own rank (with pipeline stages:
  // the first rank of each replica does, the others follow it), or none
  // when the world is smaller than the job, and the others' results are
  // gathered after.
  const int mpi = run->control != NULL;
  const int head = !mpi || run->process_rank % tp == 0, inside = run->process_rank < run->world_size;
  const int first = mpi ? run->process_rank / tp : 0;
  const int local = mpi ? (head && inside ? 1 : 0) : world;
  gs_llm_process_part part = {.per = tp, .tp = shards};
  out->replicas = calloc((size_t)world, sizeof *out->replicas);
  scenario_shared *sh = calloc(1, sizeof *sh);
  replica *reps = calloc((size_t)world, sizeof *reps);
  pthread_t *threads = calloc((size_t)world, sizeof *threads);
  gs_llm_sample *samples = NULL;
  gs_status status = GS_OK;
  if (!out->replicas || !sh || !reps || !threads) {
    status = gs_error(GS_ERR_NOMEM, "cannot allocate the scenario's replica state");
    goto done;
  }
  gs_llm_stream_spec spec = config->stream;
  if (config->scenario != GS_LLM_SERVER) spec.rate = 0.0;
  status = gs_llm_stream_make(&spec, &samples);
  if (status != GS_OK) goto done;
  sh->config = config;
  sh->run = run;
  sh->samples = samples;
  sh->out = out;
  sh->alive = world;
  int queues_ready = gs_llm_queue_init(&sh->shared_queue, samples, 0, spec.count) == 0;
  for (int k = 0; k < world && queues_ready; k++) {
    uint64_t begin, n;
    gs_llm_dispatch_static(spec.count, world, k, &begin, &n);
    queues_ready = gs_llm_queue_init(&sh->rank_queue[k], samples, begin, begin + n) == 0;
  }
  if (config->max_concurrency > 0 && config->scenario == GS_LLM_SERVER) {
    sh->slots = calloc(config->max_concurrency, sizeof *sh->slots);
    if (!sh->slots) {
      status = gs_error(GS_ERR_NOMEM, "cannot allocate %llu concurrency slots",
                        (unsigned long long)config->max_concurrency);
      goto done;
    }
    sh->n_slots = config->max_concurrency;
    queues_ready = queues_ready && pthread_mutex_init(&sh->slots_mutex, NULL) == 0;
  }
  // Under a launcher a stage's shards, consecutive processes, have a group
  // of their own, and GPU stages their links (every process takes part).
  gs_llm_process_comms groups = {0};
  if (mpi && (shards > 1 || (stages > 1 && run->backend == GS_BACKEND_CUDA))) {
    status = gs_llm_process_join(run->control, run->backend, run->devices[run->process_rank],
                                 (uint32_t)shards, stages, run->comm_timeout_seconds,
                                 run->nccl_max_ctas, &groups);
    if (status != GS_OK) goto done;
    sh->tp = groups.tp;
    sh->link_out = groups.out;
    sh->link_in = groups.in;
  }
  // Each shard's process records its own arrivals on the job's world,
  // whose clocks the recorders align (collective over every process).
  if (mpi && arrivals) {
    status = start_arrivals(run, world, stages, (uint32_t)shards, out);
    if (status != GS_OK) goto done;
  }
  // Under a launcher the main thread meets its replica at the barrier too.
  if (!queues_ready || gs_barrier_init(&sh->barrier, mpi ? local + 1 : world) != 0) {
    // Process-wide limits only (mutexes, condition variables); nothing ran.
    status = gs_error(GS_ERR_SYSTEM, "cannot create the scenario's queues and barrier");
    goto done;
  }
  for (int k = 0; k < world; k++) {
    out->replicas[k].rank = k;
    out->replicas[k].device = run->backend == GS_BACKEND_CUDA ? run->devices[k * tp] : -1;
    out->replicas[k].cold_seconds = -1.0;
    reps[k].sh = sh;
    reps[k].rank = k;
    reps[k].result = &out->replicas[k];
    const gs_fault_list faults = gs_fault_at(&run->faults, world);
    reps[k].slow = gs_fault_slow_factor(&faults, k);
    reps[k].arrival = out->arrivals ? &out->arrivals[(size_t)k * stages] : NULL;
  }
  int started = 0;
  for (; started < local; started++) {
    const int rc = pthread_create(&threads[started], NULL, replica_main, &reps[first + started]);
    if (rc != 0) {
      gs_barrier_abort(&sh->barrier);
      status = gs_error_system(rc, "cannot start the thread of replica %d", first + started);
      break;
    }
  }
  gs_status clock = GS_OK;
  if (mpi && !head && inside)
    follow_stage(sh, &part, &clock);
  else if (mpi)
    clock = start_clock_with_processes(sh, started);
  for (int k = 0; k < started; k++) pthread_join(threads[k], NULL);
  if (mpi && arrivals) gs_comm_arrival_stop(gs_comm_world_rank(run->control, 0));
  for (int k = first; k < first + started; k++)
    if (sh->end[k] > out->seconds) out->seconds = sh->end[k];
  gs_status gathered = mpi ? gs_llm_scenario_gather(run, &part, out) : GS_OK;
  if (gathered == GS_OK && mpi && out->arrivals)
    gathered = gs_llm_scenario_gather_arrival(run, out->arrivals, out->n_arrivals);
  // A replica's error was recorded on its thread: recorded here with it.
  if (mpi && gathered != GS_OK) gathered = gs_llm_scenario_salvage(run, &part, out, gathered);
  for (int k = 0; k < world; k++) {
    gs_status s = out->replicas[k].status;
    if (status == GS_OK && s != GS_OK && s != GS_ERR_ABORTED)
      status = gs_error(s, "replica %d: %s", k, out->replicas[k].error);
  }
  for (int k = 0; k < world && status == GS_OK; k++)
    if (out->replicas[k].status != GS_OK)
      status = gs_error(out->replicas[k].status, "replica %d: %s", k, out->replicas[k].error);
  if (status == GS_OK) status = clock != GS_OK ? clock : gathered;
  gs_llm_process_leave(&groups, status != GS_OK);
  for (int k = 0; k < world; k++) {
    gs_llm_queue_destroy(&sh->rank_queue[k]);
    replica_free(&reps[k]);
  }
  gs_llm_queue_destroy(&sh->shared_queue);
  gs_barrier_destroy(&sh->barrier);
  if (sh->slots) pthread_mutex_destroy(&sh->slots_mutex);
done:
  if (sh) free(sh->slots);
  free(samples);
  free(threads);
  free(reps);
  free(sh);
  return status;
}

void gs_llm_run_result_free(gs_llm_run_result *r) {
  for (size_t g = 0; r->arrivals && g < r->n_arrivals; g++) gs_arrival_free(r->arrivals[g].arrival);
  free(r->arrivals);
  r->arrivals = NULL;
  r->n_arrivals = 0;
  if (!r->replicas) return;
  for (int k = 0; k < r->world_size; k++) {
    free(r->replicas[k].requests);
    gs_llm_pp_samples_free(r->replicas[k].pp_samples);
  }
  free(r->replicas);
  r->replicas = NULL;
}
