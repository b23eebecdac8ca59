/* The runner: one host thread per rank, iterations in lockstep behind an
 * abortable barrier, CUDA-event timing per iteration on GPUs and monotonic
 * wall time everywhere, raw samples kept, verification after each run.
 * In mpi mode (config->control) each process drives its one rank and the
 * lockstep is an allgather over the control world that also carries every
 * rank's latest sample to every process (docs/multinode.md). */
#include "bench/runner.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/barrier.h"
#include "bench/fault_cuda.h"
#include "bench/split.h"
#include "core/check.h"
#include "core/interrupt.h"
#include "core/process.h"
#include "core/rng.h"
#include "core/stats.h"
#include "core/timer.h"
#include "platform/comm.h"

/* mpi mode: what one process tells the others at a lockstep point. */
typedef struct {
  uint32_t flags;                /* LOCKSTEP_* */
  uint32_t run;                  /* run of the carried sample */
  uint64_t steps_completed;
  double device_seconds, wall_seconds, comm_seconds;
} lockstep_msg;

enum {
  LOCKSTEP_STOP = 1,             /* rank 0: the timed loop has run long enough */
  LOCKSTEP_FAILED = 2,           /* this rank failed: everyone stops */
  LOCKSTEP_FINISHED = 4,         /* every run done: idle processes stop waiting */
  LOCKSTEP_SAMPLE = 8,           /* carries a timed sample */
  LOCKSTEP_FIRST = 16,           /* carries the cold-start sample */
  LOCKSTEP_SAMPLE_FAILED = 32    /* the carried sample failed (fail fault) */
};

typedef struct {
  const gs_workload *workload;
  const void *opts;
  const gs_run_config *config;
  gs_measurement *m;
  gs_barrier barrier;
  gs_comm_world *comm_world;     /* when the workload communicates */
  int stop;                      /* written by rank 0 between barriers only */
  uint64_t unit_begin[GS_MAX_RANKS];
  uint64_t unit_count[GS_MAX_RANKS];
  /* mpi mode (one process, one rank; see lockstep_mpi). */
  int mpi;
  lockstep_msg *inbox;           /* one message per process */
  uint64_t lockstep_count;
  int finished;                  /* a FINISHED message arrived */
  int failed_rank;               /* a rank that sent FAILED, -1 none */
  int control_broken;            /* the control world timed out or was interrupted */
  size_t capacity[GS_MAX_RANKS]; /* sample capacity of rank k's record */
  uint64_t capacity_run[GS_MAX_RANKS]; /* ... in this run + 1 (0: none yet) */
} runner_shared;

typedef struct {
  runner_shared *shared;
  int rank;
  gs_status status;
  char error[GS_TEXT_ERROR];
  /* Per-rank resources. */
  gs_rank_context ctx;
  void *state;
  cudaEvent_t start, stop;
  double timed_wall_sum;         /* rank 0: wall seconds of this run's timed steps */
  double last_progress;
  double slow_factor;            /* slow fault on this rank; 1 = none */
  unsigned long long *fault_slot; /* CUDA slow fault: the step's start stamp (device memory) */
  int gate_passed;               /* rank 0: has met the config's start gate */
  /* Faults on this rank and the steps it has completed in the measurement. */
  uint64_t steps_completed;
  uint64_t current_run;
  const gs_fault *fail, *kill, *hang;
  double delay_seconds;
  int delay_pending;             /* the delay is still to be applied (cold-start step) */
  gs_rng fail_rng;
  lockstep_msg outbox;           /* mpi mode: sent at the next lockstep point */
} rank_job;

const char *gs_scaling_name(gs_scaling scaling) {
  switch (scaling) {
    case GS_SCALING_STRONG: return "strong";
    case GS_SCALING_WEAK: return "weak";
    case GS_SCALING_NONE: break;
  }
  return "none";
}

static int is_cuda(const rank_job *job) { return job->ctx.backend == GS_BACKEND_CUDA; }

/* Runs one step and waits for it. device_seconds is from CUDA events (0 on
 * the CPU backend), wall_seconds from the monotonic clock around it,
 * comm_seconds the step's exposed communication (0 without a communicator).
 * A slow fault stretches the step to slow_factor times its own work: on
 * CUDA by kernels around it on the stream, on the CPU by a sleep (a busy
 * wait would take a core from the other ranks and slow them too). */
static gs_status timed_step(rank_job *job, double *device_seconds, double *wall_seconds,
                            double *comm_seconds) {
  const gs_workload *w = job->shared->workload;
  const int slow = job->slow_factor > 1.0;
  double t0 = gs_time_seconds();
  if (is_cuda(job)) GS_CHECK_CUDA(cudaEventRecord(job->start, job->ctx.stream));
  if (job->delay_pending) {
    // Between the start event and the step: device and wall time both grow.
    job->delay_pending = 0;
    gs_sleep_seconds(job->delay_seconds);
  }
  if (slow && is_cuda(job)) GS_CHECK_CUDA(gs_fault_cuda_stamp(job->fault_slot, job->ctx.stream));
  GS_TRY(w->step(job->state));
  if (slow && is_cuda(job))
    GS_CHECK_CUDA(gs_fault_cuda_stretch(job->fault_slot, job->slow_factor, job->ctx.stream));
  if (slow && !is_cuda(job)) gs_sleep_seconds((job->slow_factor - 1.0) * (gs_time_seconds() - t0));
  if (is_cuda(job)) {
    GS_CHECK_CUDA(cudaEventRecord(job->stop, job->ctx.stream));
    GS_CHECK_CUDA(cudaEventSynchronize(job->stop));
  }
  double t1 = gs_time_seconds();
  *wall_seconds = t1 - t0;
  *comm_seconds = 0.0;
  if (job->ctx.comm) GS_TRY(gs_comm_exposed_take(job->ctx.comm, comm_seconds));
  *device_seconds = 0.0;
  if (is_cuda(job)) {
    float ms = 0.0f;
    GS_CHECK_CUDA(cudaEventElapsedTime(&ms, job->start, job->stop));
    *device_seconds = (double)ms * 1e-3;
  }
  job->steps_completed++;
  job->shared->m->runs[job->current_run].ranks[job->rank].steps_completed = job->steps_completed;
  return GS_OK;
}

/* Wall-clock seconds since the epoch: printed with an injected death so
 * that a script can time how long the others take to end. */
static double epoch_seconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* Before each step: a kill or hang fault due now, or a stop request. A kill
 * in mpi mode is a real abrupt death (SIGKILL); in threads mode the rank's
 * thread stops with a fatal error. A hang (mpi mode only) never returns. */
static gs_status fault_before_step(rank_job *job) {
  const uint64_t done = job->steps_completed;
  if (job->kill && done == (uint64_t)job->kill->params[0]) {
    if (job->shared->mpi) {
      fprintf(stderr, "gpuscale: rank %d: killed by fault injection after step %llu at %.3f s "
              "(epoch)\n", job->rank, (unsigned long long)done, epoch_seconds());
      fflush(stderr);
      raise(SIGKILL);
    }
    return gs_error(GS_ERR_RANK_LOST, "killed by fault injection (kill:rank=%d,after=%llu): the "
                    "rank's thread stopped after step %llu", job->rank, (unsigned long long)done,
                    (unsigned long long)done);
  }
  if (job->hang && done == (uint64_t)job->hang->params[0]) {
    fprintf(stderr, "gpuscale: rank %d: hangs by fault injection after step %llu at %.3f s "
            "(epoch)\n", job->rank, (unsigned long long)done, epoch_seconds());
    fflush(stderr);
    for (;;) sleep(1); /* ends when the job is aborted */
  }
  if (gs_interrupt_signal() != 0)
    return gs_error_quiet(GS_ERR_INTERRUPTED, "interrupted by signal %d after step %llu",
                          gs_interrupt_signal(), (unsigned long long)done);
  return GS_OK;
}

/* After a timed step: whether a fail fault declares its sample failed. */
static int sample_fails(rank_job *job) {
  return job->fail && gs_rng_double(&job->fail_rng) < job->fail->params[0];
}

static gs_status append_sample(gs_rank_record *rec, size_t *capacity, double device_seconds,
                               double wall_seconds, int with_device, double comm_seconds,
                               int with_comm) {
  if (rec->n_samples == *capacity) {
    size_t grown = *capacity ? *capacity * 2 : 256;
    double *wall = realloc(rec->wall_seconds, grown * sizeof *wall);
    if (!wall) return gs_error(GS_ERR_NOMEM, "cannot grow the sample buffer to %zu", grown);
    rec->wall_seconds = wall;
    if (with_device) {
      double *dev = realloc(rec->device_seconds, grown * sizeof *dev);
      if (!dev) return gs_error(GS_ERR_NOMEM, "cannot grow the sample buffer to %zu", grown);
      rec->device_seconds = dev;
    }
    if (with_comm) {
      double *comm = realloc(rec->comm_seconds, grown * sizeof *comm);
      if (!comm) return gs_error(GS_ERR_NOMEM, "cannot grow the sample buffer to %zu", grown);
      rec->comm_seconds = comm;
    }
    *capacity = grown;
  }
  rec->wall_seconds[rec->n_samples] = wall_seconds;
  if (with_device) rec->device_seconds[rec->n_samples] = device_seconds;
  if (with_comm) rec->comm_seconds[rec->n_samples] = comm_seconds;
  rec->n_samples++;
  return GS_OK;
}

static int timed_enough(const gs_run_config *c, uint64_t done, double wall_sum) {
  if (c->iters > 0) return done >= c->iters;
  if (done >= c->max_iters) return 1;
  return done >= c->min_iters && wall_sum >= c->min_time;
}

static void show_progress(rank_job *job, uint64_t run, uint64_t done, int final) {
  const gs_run_config *c = job->shared->config;
  if (job->rank != 0 || !c->show_progress || gs_is_quiet() || !isatty(STDERR_FILENO)) return;
  double now = gs_time_seconds();
  if (!final && now - job->last_progress < 0.25) return;
  job->last_progress = now;
  if (final) {
    fprintf(stderr, "\r\033[K");
  } else if (c->iters > 0) {
    fprintf(stderr, "\r\033[K  %s: run %llu/%llu, iteration %llu/%llu", c->label ? c->label : "",
            (unsigned long long)run + 1, (unsigned long long)c->runs, (unsigned long long)done,
            (unsigned long long)c->iters);
  } else {
    fprintf(stderr, "\r\033[K  %s: run %llu/%llu, iteration %llu, %.1f/%.1f s",
            c->label ? c->label : "", (unsigned long long)run + 1, (unsigned long long)c->runs,
            (unsigned long long)done, job->timed_wall_sum, c->min_time);
  }
  fflush(stderr);
}

#define BARRIER_OR_ABORT(job)                                                  \
  do {                                                                         \
    if (gs_barrier_wait(&(job)->shared->barrier) != 0)                         \
      return gs_error_quiet(GS_ERR_ABORTED, "stopped because another rank failed"); \
  } while (0)

/* mpi mode: files the samples the other ranks carried into their records.
 * Every process keeps every rank's records, so that any survivor can write
 * the document when process 0 is the rank that was lost. */
static gs_status absorb(runner_shared *sh) {
  const gs_run_config *c = sh->config;
  for (int k = 0; k < c->world_size; k++) {
    if (k == c->process_rank) continue;
    const lockstep_msg *msg = &sh->inbox[k];
    if (msg->run >= c->runs) continue;
    gs_rank_record *rec = &sh->m->runs[msg->run].ranks[k];
    rec->steps_completed = msg->steps_completed;
    if (msg->flags & LOCKSTEP_FIRST)
      rec->first_iteration_seconds =
          c->backend == GS_BACKEND_CUDA ? msg->device_seconds : msg->wall_seconds;
    if (msg->flags & LOCKSTEP_SAMPLE_FAILED) rec->failed_samples++;
    if (!(msg->flags & LOCKSTEP_SAMPLE)) continue;
    if (sh->capacity_run[k] != (uint64_t)msg->run + 1) {
      sh->capacity[k] = rec->n_samples;
      sh->capacity_run[k] = (uint64_t)msg->run + 1;
    }
    GS_TRY(append_sample(rec, &sh->capacity[k], msg->device_seconds, msg->wall_seconds,
                         c->backend == GS_BACKEND_CUDA, msg->comm_seconds,
                         sh->comm_world != NULL));
  }
  return GS_OK;
}

/* mpi mode: one lockstep point. Every process sends its outbox (plus
 * `flags`) and receives everyone's, which makes it a barrier too; bounded
 * by the control world's timeout and ended by SIGINT/SIGTERM. Sets
 * sh->stop from rank 0's decision; GS_ERR_ABORTED when a rank failed. */
static gs_status lockstep_mpi(rank_job *job, uint32_t flags) {
  runner_shared *sh = job->shared;
  if (sh->control_broken)
    return gs_error_quiet(GS_ERR_ABORTED, "the job's communication already failed");
  gs_comm *c = gs_comm_world_rank(sh->config->control, 0);
  job->outbox.flags |= flags;
  job->outbox.run = (uint32_t)job->current_run;
  job->outbox.steps_completed = job->steps_completed;
  gs_comm_progress(c, sh->lockstep_count++);
  gs_status status = gs_comm_allgather(c, &job->outbox, sh->inbox, sizeof job->outbox,
                                       GS_DTYPE_UINT8, NULL);
  memset(&job->outbox, 0, sizeof job->outbox);
  if (status != GS_OK) {
    sh->control_broken = 1;
    return status;
  }
  GS_TRY(absorb(sh));
  const int procs = gs_comm_world_size(sh->config->control);
  for (int k = 0; k < procs; k++) {
    if (sh->inbox[k].flags & LOCKSTEP_FINISHED) sh->finished = 1;
    if ((sh->inbox[k].flags & LOCKSTEP_FAILED) && sh->failed_rank < 0) sh->failed_rank = k;
  }
  if (sh->failed_rank >= 0)
    return gs_error_quiet(GS_ERR_ABORTED, "stopped because rank %d failed", sh->failed_rank);
  sh->stop = (sh->inbox[0].flags & LOCKSTEP_STOP) != 0;
  return GS_OK;
}

/* A lockstep point of either mode. */
#define LOCKSTEP(job)                                                          \
  do {                                                                         \
    if ((job)->shared->mpi)                                                    \
      GS_TRY(lockstep_mpi((job), 0));                                          \
    else                                                                       \
      BARRIER_OR_ABORT(job);                                                   \
  } while (0)

/* After a step: the sample goes into the outbox (mpi mode) and a failed
 * sample is counted. */
static void note_step(rank_job *job, gs_rank_record *rec, uint32_t kind, double dev, double wall,
                      double comm) {
  job->outbox.flags |= kind;
  job->outbox.device_seconds = dev;
  job->outbox.wall_seconds = wall;
  job->outbox.comm_seconds = comm;
  if (kind == LOCKSTEP_SAMPLE && sample_fails(job)) {
    rec->failed_samples++;
    job->outbox.flags |= LOCKSTEP_SAMPLE_FAILED;
  }
}

/* One run: warmup, the cold-start step (first run only), timed steps in
 * lockstep, then verification. Samples go straight into the rank's record. */
static gs_status one_run(rank_job *job, uint64_t run) {
  runner_shared *sh = job->shared;
  const gs_run_config *c = sh->config;
  gs_rank_record *rec = &sh->m->runs[run].ranks[job->rank];
  size_t capacity = 0;
  double dev = 0.0, wall = 0.0, comm = 0.0;

  job->current_run = run;
  rec->steps_completed = job->steps_completed;
  LOCKSTEP(job);
  if (job->rank == 0 || sh->mpi) sh->stop = 0;
  if (run == 0 && c->start_gate && !sh->mpi) {
    // Every rank is set up: wait for the other measurements of a plan.
    if (job->rank == 0) {
      job->gate_passed = 1;
      (void)gs_barrier_wait(c->start_gate);
    }
    BARRIER_OR_ABORT(job);
  }
  if (run == 0) {
    GS_TRY(fault_before_step(job));
    GS_TRY(timed_step(job, &dev, &wall, &comm));
    rec->first_iteration_seconds = is_cuda(job) ? dev : wall;
    note_step(job, rec, LOCKSTEP_FIRST, dev, wall, comm);
  }
  for (uint64_t i = 0; i < c->warmup; i++) {
    LOCKSTEP(job);
    GS_TRY(fault_before_step(job));
    GS_TRY(timed_step(job, &dev, &wall, &comm));
  }
  job->timed_wall_sum = 0.0;
  for (uint64_t done = 0;; done++) {
    LOCKSTEP(job); /* threads: rank 0's decision below is visible after this;
                      mpi: carries the last sample and rank 0's decision */
    if (sh->stop) break;
    GS_TRY(fault_before_step(job));
    GS_TRY(timed_step(job, &dev, &wall, &comm));
    GS_TRY(append_sample(rec, &capacity, dev, wall, is_cuda(job), comm, job->ctx.comm != NULL));
    note_step(job, rec, LOCKSTEP_SAMPLE, dev, wall, comm);
    if (!sh->mpi) BARRIER_OR_ABORT(job); /* nobody reads `stop` between here and the next wait */
    if (job->rank == 0) {
      job->timed_wall_sum += wall;
      const int enough = timed_enough(c, done + 1, job->timed_wall_sum);
      if (sh->mpi && enough) job->outbox.flags |= LOCKSTEP_STOP;
      if (!sh->mpi) sh->stop = enough;
      show_progress(job, run, done + 1, 0);
    }
  }
  show_progress(job, run, 0, 1);
  GS_TRY(sh->workload->verify(job->state, &rec->verification));
  if (rec->verification.status == GS_VERIFY_FAILED)
    return gs_error(GS_ERR_VERIFY, "result differs from the CPU reference: %s",
                    rec->verification.detail);
  return GS_OK;
}

static gs_status rank_setup(rank_job *job) {
  runner_shared *sh = job->shared;
  const gs_run_config *c = sh->config;
  gs_rank_context *ctx = &job->ctx;
  ctx->rank = job->rank;
  ctx->world_size = c->world_size;
  ctx->backend = c->backend;
  ctx->device = c->backend == GS_BACKEND_CUDA ? c->devices[job->rank] : -1;
  ctx->stream = NULL;
  ctx->seed = c->seed;
  ctx->unit_begin = sh->unit_begin[job->rank];
  ctx->unit_count = sh->unit_count[job->rank];
  ctx->comm = sh->comm_world ? gs_comm_world_rank(sh->comm_world, sh->mpi ? 0 : job->rank) : NULL;
  job->slow_factor = gs_fault_slow_factor(&c->faults, job->rank);
  job->fail = gs_fault_find(&c->faults, GS_FAULT_FAIL, job->rank);
  job->kill = gs_fault_find(&c->faults, GS_FAULT_KILL, job->rank);
  job->hang = gs_fault_find(&c->faults, GS_FAULT_HANG, job->rank);
  const gs_fault *delay = gs_fault_find(&c->faults, GS_FAULT_DELAY, job->rank);
  job->delay_seconds = delay ? delay->params[0] : 0.0;
  job->delay_pending = delay != NULL;
  gs_rng_seed(&job->fail_rng, c->seed, 0x6661696cULL + (uint64_t)job->rank);
  if (is_cuda(job)) {
    GS_CHECK_CUDA(cudaSetDevice(ctx->device));
    GS_CHECK_CUDA(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    GS_CHECK_CUDA(cudaEventCreate(&job->start));
    GS_CHECK_CUDA(cudaEventCreate(&job->stop));
    if (job->slow_factor > 1.0)
      GS_CHECK_CUDA(cudaMalloc((void **)&job->fault_slot, sizeof *job->fault_slot));
  }
  return sh->workload->setup(sh->opts, ctx, &job->state);
}

static void rank_teardown(rank_job *job) {
  job->shared->workload->teardown(job->state);
  job->state = NULL;
  if (is_cuda(job)) {
    if (job->start) cudaEventDestroy(job->start);
    if (job->stop) cudaEventDestroy(job->stop);
    if (job->ctx.stream) cudaStreamDestroy(job->ctx.stream);
    if (job->fault_slot) cudaFree(job->fault_slot);
  }
}

static void *rank_main(void *arg) {
  rank_job *job = arg;
  runner_shared *sh = job->shared;
  gs_set_thread_rank(job->rank);
  gs_clear_error();
  uint64_t run = 0;
  job->current_run = 0;
  gs_status status = rank_setup(job);
  for (; status == GS_OK && run < sh->config->runs; run++) status = one_run(job, run);
  if (status == GS_OK && sh->mpi) {
    // Idle processes wait for this; a failure seen here ends no run.
    gs_status last = lockstep_mpi(job, LOCKSTEP_FINISHED);
    if (last != GS_OK && last != GS_ERR_ABORTED) status = last;
  }
  if (status != GS_OK) {
    snprintf(job->error, sizeof job->error, "%s", gs_last_error());
    if (sh->mpi && status != GS_ERR_ABORTED) (void)lockstep_mpi(job, LOCKSTEP_FAILED);
    if (!sh->mpi) gs_barrier_abort(&sh->barrier);
    if (job->ctx.comm) gs_comm_abort(job->ctx.comm);
    // The run that failed and every later one carry the failure.
    for (uint64_t r = job->current_run; r < sh->config->runs; r++) {
      gs_rank_record *rec = &sh->m->runs[r].ranks[job->rank];
      rec->status = status;
      rec->steps_completed = job->steps_completed;
      snprintf(rec->error, sizeof rec->error, "%s", job->error);
    }
  }
  // A plan's other measurements wait at the gate for this one's rank 0.
  if (job->rank == 0 && sh->config->start_gate && !job->gate_passed)
    (void)gs_barrier_wait(sh->config->start_gate);
  job->status = status;
  rank_teardown(job);
  gs_set_thread_rank(-1);
  return NULL;
}

static gs_status split_work(const gs_workload *w, const void *opts, const gs_run_config *c,
                            runner_shared *sh, uint64_t *total_units) {
  uint64_t units = w->work_units(opts);
  uint64_t n = (uint64_t)c->world_size;
  if (c->scaling == GS_SCALING_WEAK && c->unit_counts)
    return gs_error(GS_ERR_USAGE, "a proportional split applies to strong scaling only");
  if (c->scaling == GS_SCALING_WEAK) {
    for (uint64_t r = 0; r < n; r++) {
      sh->unit_begin[r] = r * units;
      sh->unit_count[r] = units;
    }
    *total_units = units * n;
    return GS_OK;
  }
  if (units < n)
    return gs_error(GS_ERR_USAGE,
                    "cannot split %llu %s over %d ranks: give the workload more %s or use "
                    "weak scaling",
                    (unsigned long long)units, w->unit_name, c->world_size, w->unit_name);
  if (c->unit_counts) {
    uint64_t sum = 0;
    for (uint64_t r = 0; r < n; r++) {
      if (c->unit_counts[r] < 1 || c->unit_counts[r] > units)
        return gs_error(GS_ERR_INTERNAL, "rank %llu is given %llu of %llu %s",
                        (unsigned long long)r, (unsigned long long)c->unit_counts[r],
                        (unsigned long long)units, w->unit_name);
      sh->unit_count[r] = c->unit_counts[r];
      sum += c->unit_counts[r];
    }
    if (sum != units)
      return gs_error(GS_ERR_INTERNAL, "the ranks' %s add up to %llu, not %llu", w->unit_name,
                      (unsigned long long)sum, (unsigned long long)units);
  } else {
    gs_split_even(units, c->world_size, sh->unit_count);
  }
  uint64_t begin = 0;
  for (uint64_t r = 0; r < n; r++) {
    sh->unit_begin[r] = begin;
    begin += sh->unit_count[r];
  }
  *total_units = units;
  return GS_OK;
}

/* ---- mpi mode ---------------------------------------------------------------- */

/* What each process tells the others about its rank's runs once the
 * measurement is over (the samples came with the lockstep already). */
typedef struct {
  int32_t status;
  int32_t device;
  uint64_t steps_completed;
  uint64_t failed_samples;
  gs_verification verification;
  char error[GS_TEXT_ERROR];
} rank_outcome;

/* After the control world broke (a timeout, or mpirun's SIGTERM after a
 * rank died): finds the lost rank — a process of this host that is gone,
 * else the rank the timeout found behind — and marks the records of the
 * ranks whose outcome cannot be gathered. Returns the lost rank or -1. */
static int name_lost_rank(runner_shared *sh, gs_status status, uint64_t run) {
  const gs_run_config *c = sh->config;
  const int me = c->process_rank;
  int lost = -1;
  const char *how = "";
  for (int k = 0; k < c->world_size && lost < 0; k++)
    if (k != me && strcmp(c->places[k].host, c->places[me].host) == 0 &&
        !gs_process_alive(c->places[k].pid))
      lost = k, how = "its process died (crash, kill or lost GPU)";
  if (lost < 0 && status == GS_ERR_TIMEOUT) {
    int behind[GS_MAX_RANKS];
    int n = gs_comm_behind(gs_comm_world_rank(c->control, 0), behind, GS_MAX_RANKS);
    for (int i = 0; i < n && lost < 0; i++)
      if (behind[i] < c->world_size) lost = behind[i], how = "it stopped answering";
  }
  for (uint64_t r = run; r < c->runs; r++) {
    gs_rank_record *own = me < c->world_size ? &sh->m->runs[r].ranks[me] : NULL;
    if (own && r > run) own->steps_completed = sh->m->runs[run].ranks[me].steps_completed;
    if (own && lost >= 0 && own->status != GS_OK) {
      // This rank's timeout or signal was the lost rank's doing.
      own->status = GS_ERR_ABORTED;
      snprintf(own->error, sizeof own->error, "stopped after step %llu because rank %d was lost",
               (unsigned long long)own->steps_completed, lost);
    }
    for (int k = 0; k < c->world_size; k++) {
      if (k == me) continue;
      gs_rank_record *rec = &sh->m->runs[r].ranks[k];
      if (r > run) rec->steps_completed = sh->m->runs[run].ranks[k].steps_completed;
      if (rec->status != GS_OK) continue;
      if (k == lost) {
        rec->status = GS_ERR_RANK_LOST;
        snprintf(rec->error, sizeof rec->error, "rank %d on %s lost after step %llu: %s", k,
                 rec->host, (unsigned long long)rec->steps_completed, how);
      } else {
        rec->status = status == GS_ERR_INTERRUPTED ? GS_ERR_INTERRUPTED : GS_ERR_ABORTED;
        snprintf(rec->error, sizeof rec->error,
                 "the job ended before this rank's outcome was gathered (%s); its samples "
                 "up to step %llu are kept", gs_status_name(status),
                 (unsigned long long)rec->steps_completed);
      }
    }
  }
  return lost;
}

/* Brings every rank's outcome to every process and files it into the
 * records of the other ranks. */
static gs_status gather_outcomes(runner_shared *sh, const rank_job *job) {
  const gs_run_config *c = sh->config;
  const int procs = gs_comm_world_size(c->control);
  const size_t bytes = c->runs * sizeof(rank_outcome);
  rank_outcome *mine = calloc(c->runs, sizeof *mine);
  rank_outcome *all = calloc((size_t)procs * c->runs, sizeof *all);
  gs_status status = GS_OK;
  if (!mine || !all) {
    status = gs_error(GS_ERR_NOMEM, "cannot allocate the rank outcomes");
  } else {
    for (uint64_t r = 0; r < c->runs && job->rank < c->world_size; r++) {
      const gs_rank_record *rec = &sh->m->runs[r].ranks[job->rank];
      mine[r].status = (int32_t)rec->status;
      mine[r].device = rec->device;
      mine[r].steps_completed = rec->steps_completed;
      mine[r].failed_samples = rec->failed_samples;
      mine[r].verification = rec->verification;
      snprintf(mine[r].error, sizeof mine[r].error, "%s", rec->error);
    }
    gs_comm *control = gs_comm_world_rank(c->control, 0);
    status = gs_comm_allgather(control, mine, all, bytes, GS_DTYPE_UINT8, NULL);
  }
  for (int k = 0; status == GS_OK && k < c->world_size; k++) {
    for (uint64_t r = 0; r < c->runs && k != c->process_rank; r++) {
      const rank_outcome *o = &all[(size_t)k * c->runs + r];
      gs_rank_record *rec = &sh->m->runs[r].ranks[k];
      rec->status = (gs_status)o->status;
      rec->device = o->device;
      rec->steps_completed = o->steps_completed;
      rec->failed_samples = o->failed_samples;
      rec->verification = o->verification;
      snprintf(rec->error, sizeof rec->error, "%s", o->error);
    }
  }
  free(mine);
  free(all);
  return status;
}

/* This process's part of an mpi-mode measurement: its rank's runs (or
 * lockstep without measuring when it has no rank at this count), then the
 * outcome exchange; after a broken lockstep it names the lost rank.
 * Returns this process's view of the measurement's status. */
static gs_status measure_mpi(runner_shared *sh) {
  const gs_run_config *c = sh->config;
  const int procs = gs_comm_world_size(c->control);
  sh->inbox = calloc((size_t)procs, sizeof *sh->inbox);
  rank_job *job = calloc(1, sizeof *job);
  if (!sh->inbox || !job) {
    free(job);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the lockstep buffers");
  }
  job->shared = sh;
  job->rank = c->process_rank;
  gs_status status = GS_OK;
  if (job->rank < c->world_size) {
    rank_main(job);
    status = job->status;
  } else {
    while (!sh->finished && status == GS_OK) status = lockstep_mpi(job, 0);
    if (status == GS_ERR_ABORTED && !sh->control_broken) status = GS_OK;
  }
  if (!sh->control_broken) {
    gs_status g = gather_outcomes(sh, job);
    if (g != GS_OK) {
      sh->control_broken = 1;
      if (status == GS_OK || status == GS_ERR_ABORTED) status = g;
    }
  }
  if (sh->control_broken) {
    int lost = name_lost_rank(sh, status, job->current_run);
    if (lost >= 0) status = GS_ERR_RANK_LOST;
  }
  free(job);
  return status;
}

/* The measurement member "failure" of a failed measurement: the first rank
 * that really failed (not one only stopped, timed out or interrupted
 * because of it), with its host and last completed step; when no rank can
 * be named (a stop request, a rank lost on another host), rank, host and
 * step are null and the reason is the measurement's error. */
static gs_status add_failure_member(gs_measurement *m) {
  const gs_rank_record *failed = NULL;
  for (size_t r = 0; r < m->n_runs && !failed; r++)
    for (size_t k = 0; k < m->runs[r].n_ranks && !failed; k++) {
      const gs_rank_record *rec = &m->runs[r].ranks[k];
      // A timeout or a signal is what a waiting rank sees, not its fault.
      if (rec->status != GS_OK && rec->status != GS_ERR_ABORTED &&
          rec->status != GS_ERR_INTERRUPTED && rec->status != GS_ERR_TIMEOUT)
        failed = rec;
    }
  if (!m->extra && !(m->extra = cJSON_CreateObject()))
    return gs_error(GS_ERR_NOMEM, "cannot describe the failure");
  cJSON *f = cJSON_AddObjectToObject(m->extra, "failure");
  if (!f) return gs_error(GS_ERR_NOMEM, "cannot describe the failure");
  if (failed) {
    cJSON_AddNumberToObject(f, "rank", failed->rank);
    cJSON_AddStringToObject(f, "host", failed->host);
    cJSON_AddNumberToObject(f, "last_completed_step", (double)failed->steps_completed);
    cJSON_AddStringToObject(f, "status", gs_status_name(failed->status));
    cJSON_AddStringToObject(f, "reason", failed->error);
  } else {
    cJSON_AddNullToObject(f, "rank");
    cJSON_AddNullToObject(f, "host");
    cJSON_AddNullToObject(f, "last_completed_step");
    cJSON_AddStringToObject(f, "status", gs_status_name(m->status));
    cJSON_AddStringToObject(f, "reason", m->error);
  }
  return GS_OK;
}

static gs_status allocate_records(gs_measurement *m, const runner_shared *sh,
                                  const gs_run_config *c) {
  m->runs = calloc(c->runs, sizeof *m->runs);
  if (!m->runs) return gs_error(GS_ERR_NOMEM, "cannot allocate %llu runs", (unsigned long long)c->runs);
  m->n_runs = c->runs;
  for (uint64_t r = 0; r < c->runs; r++) {
    gs_run_record *run = &m->runs[r];
    run->ranks = calloc((size_t)c->world_size, sizeof *run->ranks);
    if (!run->ranks) return gs_error(GS_ERR_NOMEM, "cannot allocate rank records");
    run->n_ranks = (size_t)c->world_size;
    for (int k = 0; k < c->world_size; k++) {
      gs_rank_record *rec = &run->ranks[k];
      rec->rank = k;
      rec->device = c->backend == GS_BACKEND_CUDA ? c->devices[k] : -1;
      snprintf(rec->host, sizeof rec->host, "%s", c->places ? c->places[k].host : gs_hostname());
      rec->first_iteration_seconds = -1.0;
      gs_cost share;
      sh->workload->cost(sh->opts, sh->unit_count[k], &share);
      rec->items_per_step = share.items;
    }
  }
  return GS_OK;
}

/* Step time of each iteration = the slowest rank's time for it, over the
 * iterations that every rank completed. */
static gs_status derive_steps(gs_run_record *run, int use_device) {
  size_t n = SIZE_MAX;
  for (size_t k = 0; k < run->n_ranks; k++)
    if (run->ranks[k].n_samples < n) n = run->ranks[k].n_samples;
  if (n == SIZE_MAX || n == 0) return GS_OK;
  run->step_seconds = malloc(n * sizeof *run->step_seconds);
  if (!run->step_seconds) return gs_error(GS_ERR_NOMEM, "cannot allocate step times");
  for (size_t i = 0; i < n; i++) {
    double slowest = 0.0;
    for (size_t k = 0; k < run->n_ranks; k++) {
      const gs_rank_record *rec = &run->ranks[k];
      double t = use_device ? rec->device_seconds[i] : rec->wall_seconds[i];
      if (t > slowest) slowest = t;
    }
    run->step_seconds[i] = slowest;
  }
  run->n_steps = n;
  return GS_OK;
}

static void combine_verification(gs_measurement *m) {
  gs_verification *v = &m->verification;
  memset(v, 0, sizeof *v);
  v->status = GS_VERIFY_SKIPPED;
  snprintf(v->detail, sizeof v->detail, "no rank verified a result");
  size_t passed = 0, total = 0;
  for (size_t r = 0; r < m->n_runs; r++) {
    for (size_t k = 0; k < m->runs[r].n_ranks; k++) {
      const gs_verification *rv = &m->runs[r].ranks[k].verification;
      if (rv->max_abs_error > v->max_abs_error) v->max_abs_error = rv->max_abs_error;
      if (rv->tolerance > v->tolerance) v->tolerance = rv->tolerance;
      v->mismatches += rv->mismatches;
      if (rv->status == GS_VERIFY_SKIPPED) continue;
      total++;
      if (rv->status == GS_VERIFY_PASSED) {
        passed++;
      } else if (v->status != GS_VERIFY_FAILED) {
        v->status = GS_VERIFY_FAILED;
        snprintf(v->detail, sizeof v->detail, "run %zu rank %zu: %s", r, k, rv->detail);
      }
    }
  }
  if (v->status != GS_VERIFY_FAILED && total > 0) {
    v->status = GS_VERIFY_PASSED;
    snprintf(v->detail, sizeof v->detail, "%zu of %zu rank results verified; rank 0: %s",
             passed, total, m->runs[0].ranks[0].verification.detail);
  }
}

static gs_status aggregate(gs_measurement *m) {
  size_t total = 0;
  for (size_t r = 0; r < m->n_runs; r++) total += m->runs[r].n_steps;
  if (total == 0) return GS_OK;
  double *all = malloc(total * sizeof *all);
  if (!all) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu step times", total);
  size_t at = 0;
  for (size_t r = 0; r < m->n_runs; r++) {
    memcpy(all + at, m->runs[r].step_seconds, m->runs[r].n_steps * sizeof *all);
    at += m->runs[r].n_steps;
  }
  gs_status status = gs_stats_compute(all, total, &m->aggregate.step);
  free(all);
  GS_TRY(status);
  gs_aggregate *a = &m->aggregate;
  a->throughput = a->step.mean > 0.0 ? (double)m->cost.items / a->step.mean : 0.0;
  double slowest_first = -1.0;
  for (size_t k = 0; k < m->runs[0].n_ranks; k++)
    if (m->runs[0].ranks[k].first_iteration_seconds > slowest_first)
      slowest_first = m->runs[0].ranks[k].first_iteration_seconds;
  a->cold_start_ratio = slowest_first > 0.0 ? gs_stats_cold_start_ratio(slowest_first, a->step.median) : 0.0;
  return GS_OK;
}

gs_status gs_runner_summarize(gs_measurement *m, int use_device) {
  gs_status status = GS_OK;
  for (size_t r = 0; r < m->n_runs; r++) {
    gs_status s = derive_steps(&m->runs[r], use_device);
    if (s != GS_OK && status == GS_OK) status = s;
  }
  combine_verification(m);
  gs_status s = aggregate(m);
  return status != GS_OK ? status : s;
}

gs_status gs_runner_measure(const gs_workload *workload, const void *opts,
                            const gs_run_config *config, gs_measurement *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->workload, sizeof out->workload, "%s", workload->key);
  snprintf(out->backend, sizeof out->backend, "%s",
           config->backend == GS_BACKEND_CUDA ? "cuda" : "cpu");
  snprintf(out->scaling, sizeof out->scaling, "%s", gs_scaling_name(config->scaling));
  out->world_size = config->world_size;
  if (config->world_size < 1 || config->world_size > GS_MAX_RANKS || config->runs < 1)
    return gs_error(GS_ERR_INTERNAL, "runner called with %d ranks and %llu runs",
                    config->world_size, (unsigned long long)config->runs);
  for (int k = 0; k < config->world_size; k++)
    out->devices[k] = config->backend == GS_BACKEND_CUDA ? config->devices[k] : -1;

  runner_shared *sh = calloc(1, sizeof *sh);
  rank_job *jobs = calloc((size_t)config->world_size, sizeof *jobs);
  int started = 0;
  pthread_t *threads = calloc((size_t)config->world_size, sizeof *threads);
  gs_status status = GS_OK;
  if (!sh || !jobs || !threads) {
    status = gs_error(GS_ERR_NOMEM, "cannot allocate the runner's rank state");
    goto done;
  }
  sh->workload = workload;
  sh->opts = opts;
  sh->config = config;
  sh->m = out;
  if (config->faults.n > 0) {
    cJSON *faults = gs_fault_list_to_json(&config->faults, config->world_size);
    out->extra = cJSON_CreateObject();
    if (!faults || !out->extra || !cJSON_AddItemToObject(out->extra, "faults", faults)) {
      cJSON_Delete(faults);
      status = gs_error(GS_ERR_NOMEM, "cannot describe the injected faults");
      goto done;
    }
  }
  uint64_t total_units = 0;
  status = split_work(workload, opts, config, sh, &total_units);
  if (status != GS_OK) goto done;
  workload->cost(opts, total_units, &out->cost);
  status = allocate_records(out, sh, config);
  if (status != GS_OK) goto done;
  sh->mpi = config->control != NULL;
  sh->failed_rank = -1;
  if (sh->mpi && workload->communicates) {
    // One communicator over every process: a smaller count would need a
    // sub-communicator (docs/multinode.md, "Scale sweeps").
    gs_comm_job job;
    gs_comm_job_detect(&job);
    if (config->world_size != job.process_count) {
      status = gs_error(GS_ERR_UNSUPPORTED,
                        "%s communicates: under a launcher it is measured at the full job of %d "
                        "processes only (asked for %d; use --counts %d)",
                        workload->key, job.process_count, config->world_size, job.process_count);
      goto done;
    }
    const int device = config->devices[config->process_rank];
    gs_comm_world_config wc = {.backend = config->backend, .local_ranks = 1, .devices = &device,
                               .timeout_seconds = config->comm_timeout_seconds};
    status = gs_comm_world_create(&job, &wc, &sh->comm_world);
    if (status != GS_OK) goto done;
  }
  if (sh->mpi) {
    status = measure_mpi(sh);
    {
      // The first real failure wins over ranks that only stopped because of it.
      for (size_t k = 0; k < out->runs[0].n_ranks && status != GS_ERR_RANK_LOST; k++)
        for (size_t r = 0; r < out->n_runs; r++) {
          const gs_rank_record *rec = &out->runs[r].ranks[k];
          if (rec->status != GS_OK && rec->status != GS_ERR_ABORTED && out->error[0] == '\0') {
            status = rec->status;
            snprintf(out->error, sizeof out->error, "rank %zu on %s: %s", k, rec->host, rec->error);
          }
        }
      for (size_t r = 0; status == GS_ERR_RANK_LOST && r < out->n_runs && !out->error[0]; r++)
        for (size_t k = 0; k < out->runs[r].n_ranks && out->error[0] == '\0'; k++)
          if (out->runs[r].ranks[k].status == GS_ERR_RANK_LOST)
            snprintf(out->error, sizeof out->error, "%s", out->runs[r].ranks[k].error);
      gs_status s = gs_runner_summarize(out, config->backend == GS_BACKEND_CUDA);
      if (s != GS_OK && status == GS_OK) status = s;
    }
    goto done;
  }
  if (workload->communicates) {
    // Communicators of all ranks are created together, before the threads.
    gs_comm_job job;
    gs_comm_job_detect(&job);
    job.launch = GS_COMM_LAUNCH_THREADS;
    gs_comm_world_config wc = {.backend = config->backend, .local_ranks = config->world_size,
                               .devices = config->devices, .timeout_seconds = config->comm_timeout_seconds};
    status = gs_comm_world_create(&job, &wc, &sh->comm_world);
    if (status != GS_OK) goto done;
  }
  if (gs_barrier_init(&sh->barrier, config->world_size) != 0) {
    status = gs_error(GS_ERR_INTERNAL, "cannot create the rank barrier");
    goto done;
  }

  for (; started < config->world_size; started++) {
    jobs[started].shared = sh;
    jobs[started].rank = started;
    if (pthread_create(&threads[started], NULL, rank_main, &jobs[started]) != 0) {
      gs_barrier_abort(&sh->barrier);
      status = gs_error(GS_ERR_INTERNAL, "cannot start the thread of rank %d", started);
      break;
    }
  }
  for (int k = 0; k < started; k++) pthread_join(threads[k], NULL);
  gs_barrier_destroy(&sh->barrier);

  // The first real failure wins over ranks that only stopped because of it.
  for (int k = 0; k < started && status == GS_OK; k++) {
    if (jobs[k].status != GS_OK && jobs[k].status != GS_ERR_ABORTED) {
      status = jobs[k].status;
      snprintf(out->error, sizeof out->error, "rank %d: %s", k, jobs[k].error);
    }
  }
  {
    gs_status s = gs_runner_summarize(out, config->backend == GS_BACKEND_CUDA);
    if (s != GS_OK && status == GS_OK) status = s;
  }

done:
  // Nothing started: still meet the plan's other measurements at the gate.
  if (started == 0 && config->start_gate && !config->control) (void)gs_barrier_wait(config->start_gate);
  out->status = status;
  if (status != GS_OK && out->error[0] == '\0')
    snprintf(out->error, sizeof out->error, "%s", gs_last_error());
  if (status != GS_OK) (void)add_failure_member(out);
  free(threads);
  free(jobs);
  if (sh) {
    // A communicator with a dead peer cannot be destroyed collectively.
    // (its shared window), so it is only aborted; the process ends soon.
    if (sh->control_broken && sh->comm_world) gs_comm_abort(gs_comm_world_rank(sh->comm_world, 0));
    if (!sh->control_broken) gs_comm_world_destroy(sh->comm_world);
    free(sh->inbox);
  }
  free(sh);
  return status;
}

void gs_runner_relate(gs_measurement *measurements, size_t count) {
  for (size_t i = 0; i < count; i++) {
    gs_measurement *m = &measurements[i];
    m->aggregate.speedup = 0.0;
    m->aggregate.efficiency = 0.0;
    // A failed measurement's timings are kept, but never compared.
    if (m->status != GS_OK) continue;
    double base = NAN;
    for (size_t j = 0; j < count && isnan(base); j++) {
      const gs_measurement *b = &measurements[j];
      const gs_scaling_point p = gs_scaling_point_of(b);
      if (strcmp(b->workload, m->workload) == 0 && gs_scaling_baseline(&p, 1) == 0)
        base = p.throughput;
    }
    const double speedup = gs_scaling_speedup(base, m->aggregate.throughput);
    if (!isfinite(speedup)) continue;
    m->aggregate.speedup = speedup;
    m->aggregate.efficiency = gs_scaling_efficiency(speedup, m->world_size);
  }
}
