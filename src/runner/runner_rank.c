/* One rank of a measurement: its thread's setup, warmup, cold-start and
 * timed steps in lockstep (behind the abortable barrier in threads mode,
 * the control world's allgather in mpi mode), injected faults applied
 * around the steps, raw samples appended to its record, verification after
 * each run, and teardown. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runner/arrival.h"
#include "platform/fault_cuda.h"
#include "runner/runner_private.h"
#include "core/check.h"
#include "core/interrupt.h"
#include "core/timer.h"
#include "platform/trace.h"

static int is_cuda(const gs_rank_job *job) { return job->ctx.backend == GS_BACKEND_CUDA; }

/* Runs one step and waits for it. device_seconds is from CUDA events (0 on
 * the CPU backend), wall_seconds from the monotonic clock around it,
 * comm_seconds the step's exposed communication (0 without a communicator).
 * A slow fault stretches the step to slow_factor times its own work: on
 * CUDA by kernels around it on the stream, on the CPU by a sleep (a busy
 * wait would take a core from the other ranks and slow them too). A late
 * fault holds the step's start back by a fixed time (a spin on the stream,
 * a precise wait on the CPU). */
static gs_status timed_step(gs_rank_job *job, double *device_seconds, double *wall_seconds,
                            double *comm_seconds) {
  const gs_workload *w = job->shared->workload;
  const int slow = job->slow_factor > 1.0;
  double t0 = gs_time_seconds();
  // The step's range: its host span is the enqueue (on CUDA; the work on
  // the CPU), its device span the stream's work between the events.
  gs_trace_begin(GS_TRACE_STEP, "step", -1, job->ctx.stream);
  if (is_cuda(job)) GS_CHECK_CUDA(cudaEventRecord(job->start, job->ctx.stream));
  if (job->delay_pending) {
    // Between the start event and the step: device and wall time both grow.
    job->delay_pending = 0;
    gs_sleep_seconds(job->delay_seconds);
  }
  if (job->late_seconds > 0.0) {
    // Before the step's work: its collectives start late, the others wait.
    if (is_cuda(job))
      GS_CHECK_CUDA(gs_fault_cuda_spin(job->late_seconds, job->ctx.stream));
    else
      gs_fault_late_wait(job->late_seconds);
  }
  if (slow && is_cuda(job)) GS_CHECK_CUDA(gs_fault_cuda_stamp(job->fault_slot, job->ctx.stream));
  GS_TRY(w->step(job->state));
  if (slow && is_cuda(job))
    GS_CHECK_CUDA(gs_fault_cuda_stretch(job->fault_slot, job->slow_factor, job->ctx.stream));
  if (slow && !is_cuda(job)) gs_sleep_seconds((job->slow_factor - 1.0) * (gs_time_seconds() - t0));
  if (is_cuda(job)) {
    GS_CHECK_CUDA(cudaEventRecord(job->stop, job->ctx.stream));
    gs_trace_end();
    gs_trace_begin(GS_TRACE_WAIT, "device sync", -1, NULL);
    // A step whose collectives wait on its peers must not block this thread
    // in the CUDA runtime: the communicator's wait polls, so a signal, a
    // failed peer or --timeout aborts the collective and the samples taken
    // so far are written (a blocking synchronize would hang until the
    // launcher kills the process, and the document would be lost).
    if (job->ctx.comm) GS_TRY(gs_comm_wait(job->ctx.comm, job->ctx.stream));
    GS_CHECK_CUDA(cudaEventSynchronize(job->stop));
  }
  gs_trace_end();
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
static double epoch_seconds(void) { return gs_time_unix_seconds(); }

/* Before each step: a kill or hang fault due now, or a stop request. A kill
 * in mpi mode is a real abrupt death (SIGKILL); in threads mode the rank's
 * thread stops with a fatal error. A hang (mpi mode only) never returns. */
static gs_status fault_before_step(gs_rank_job *job) {
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
    return gs_error(GS_ERR_INTERRUPTED, "interrupted by signal %d after step %llu",
                          gs_interrupt_signal(), (unsigned long long)done);
  return GS_OK;
}

/* After a timed step: whether a fail fault declares its sample failed. */
static int sample_fails(gs_rank_job *job) {
  return job->fail && gs_rng_double(&job->fail_rng) < job->fail->params[0];
}

gs_status gs_runner_append_sample(gs_rank_record *rec, size_t *capacity, double device_seconds,
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

static void show_progress(gs_rank_job *job, uint64_t run, uint64_t done, int final) {
  const gs_run_config *c = job->shared->config;
  if (job->rank != 0 || !c->show_progress || gs_is_quiet() || !isatty(STDERR_FILENO)) return;
  double now = gs_time_seconds();
  if (!final && now - job->last_progress < 0.25) return;
  job->last_progress = now;
  if (final) {
    fprintf(stderr, "\r\033[K");
  } else {
    // One run per call (an interleaved sweep): its label says which run.
    char runs[48] = "";
    if (c->runs > 1)
      snprintf(runs, sizeof runs, "run %llu/%llu, ", (unsigned long long)run + 1,
               (unsigned long long)c->runs);
    if (c->iters > 0)
      fprintf(stderr, "\r\033[K  %s: %siteration %llu/%llu", c->label ? c->label : "", runs,
              (unsigned long long)done, (unsigned long long)c->iters);
    else
      fprintf(stderr, "\r\033[K  %s: %siteration %llu, %.1f/%.1f s", c->label ? c->label : "",
              runs, (unsigned long long)done, job->timed_wall_sum, c->min_time);
  }
  fflush(stderr);
}

#define BARRIER_OR_ABORT(job)                                                  \
  do {                                                                         \
    if (gs_barrier_wait(&(job)->shared->barrier) != 0)                         \
      return gs_error(GS_ERR_ABORTED, "stopped because another rank failed"); \
  } while (0)

/* A lockstep point of either mode. */
#define LOCKSTEP(job)                                                          \
  do {                                                                         \
    if ((job)->shared->mpi)                                                    \
      GS_TRY(gs_runner_lockstep_mpi((job), 0));                                          \
    else                                                                       \
      BARRIER_OR_ABORT(job);                                                   \
  } while (0)

/* After a step: the sample goes into the outbox (mpi mode) with the
 * step's arrival when one was taken, and a failed sample is counted. */
static void note_step(gs_rank_job *job, gs_rank_record *rec, uint32_t kind, double dev, double wall,
                      double comm) {
  const gs_arrival *a = job->shared->m->arrival;
  const gs_arrival_rank *ar = a && kind == GS_LOCKSTEP_SAMPLE ? &a->ranks[job->rank] : NULL;
  job->outbox.arrival_entry = ar && ar->n > 0 ? ar->entry[ar->n - 1] : NAN;
  job->outbox.arrival_exit = ar && ar->n > 0 ? ar->exit[ar->n - 1] : NAN;
  job->outbox.arrival_host_checked = ar ? ar->host_checked : 0;
  job->outbox.arrival_host_bound = ar ? ar->host_bound : 0;
  job->outbox.flags |= kind;
  job->outbox.device_seconds = dev;
  job->outbox.wall_seconds = wall;
  job->outbox.comm_seconds = comm;
  if (kind == GS_LOCKSTEP_SAMPLE && sample_fails(job)) {
    rec->failed_samples++;
    job->outbox.flags |= GS_LOCKSTEP_SAMPLE_FAILED;
  }
}

/* A lockstep point inside a recorded step: a wait of the trace. */
#define TRACED_LOCKSTEP(job)                                                   \
  do {                                                                         \
    gs_trace_begin(GS_TRACE_WAIT, "lockstep", -1, NULL);                       \
    LOCKSTEP(job);                                                             \
    gs_trace_end();                                                            \
  } while (0)

/* One run: warmup, the cold-start step (first run only), timed steps in
 * lockstep, then verification. Samples go straight into the rank's record. */
static gs_status run_steps(gs_rank_job *job, uint64_t run) {
  gs_runner_shared *sh = job->shared;
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
    gs_trace_begin(GS_TRACE_RUN, "cold start", -1, NULL);
    GS_TRY(timed_step(job, &dev, &wall, &comm));
    gs_trace_end();
    rec->first_iteration_seconds = is_cuda(job) ? dev : wall;
    note_step(job, rec, GS_LOCKSTEP_FIRST, dev, wall, comm);
  }
  gs_trace_begin(GS_TRACE_RUN, "warmup", (int64_t)c->warmup, NULL);
  for (uint64_t i = 0; i < c->warmup; i++) {
    LOCKSTEP(job);
    GS_TRY(fault_before_step(job));
    GS_TRY(timed_step(job, &dev, &wall, &comm));
  }
  gs_trace_end();
  // Rank 0 dates the run, so that a document shows when each run was measured.
  if (job->rank == 0) sh->m->runs[run].started_unix_seconds = epoch_seconds();
  job->timed_wall_sum = 0.0;
  // Each rank's arrival at the step's collectives (collective: the clocks
  // of processes on other hosts are aligned here).
  gs_arrival *arrival = job->ctx.comm ? sh->m->arrival : NULL;
  if (arrival)
    GS_TRY(gs_runner_arrival_begin(job->ctx.comm, 1, job->ctx.stream, arrival, job->rank,
                                   sh->mpi || job->rank == 0));
  for (uint64_t done = 0;; done++) {
    gs_trace_step_open((int64_t)run, (int64_t)done);
    TRACED_LOCKSTEP(job); /* threads: rank 0's decision below is visible after this;
                             mpi: carries the last sample and rank 0's decision */
    if (sh->stop) {
      gs_trace_step_close();
      break;
    }
    GS_TRY(fault_before_step(job));
    if (arrival) gs_comm_arrival_slot(job->ctx.comm);
    GS_TRY(timed_step(job, &dev, &wall, &comm));
    if (arrival) GS_TRY(gs_runner_arrival_collect(job->ctx.comm, 1, arrival, job->rank, 0));
    GS_TRY(gs_runner_append_sample(rec, &capacity, dev, wall, is_cuda(job), comm, job->ctx.comm != NULL));
    note_step(job, rec, GS_LOCKSTEP_SAMPLE, dev, wall, comm);
    /* nobody reads `stop` between here and the next wait */
    if (!sh->mpi) TRACED_LOCKSTEP(job);
    gs_trace_step_close();
    if (job->rank == 0) {
      job->timed_wall_sum += wall;
      const int enough = timed_enough(c, done + 1, job->timed_wall_sum);
      if (sh->mpi && enough) job->outbox.flags |= GS_LOCKSTEP_STOP;
      if (!sh->mpi) sh->stop = enough;
      show_progress(job, run, done + 1, 0);
    }
  }
  show_progress(job, run, 0, 1);
  if (arrival) gs_comm_arrival_stop(job->ctx.comm);
  gs_trace_begin(GS_TRACE_RUN, "verify", -1, NULL);
  GS_TRY(sh->workload->verify(job->state, &rec->verification));
  gs_trace_end();
  if (rec->verification.status == GS_VERIFY_FAILED)
    return gs_error(GS_ERR_VERIFY, "result differs from the CPU reference: %s",
                    rec->verification.detail);
  return GS_OK;
}

/* One run inside its trace range; a failure closes whatever it left open. */
static gs_status one_run(gs_rank_job *job, uint64_t run) {
  const int depth = gs_trace_depth();
  gs_trace_begin(GS_TRACE_RUN, "run", (int64_t)run, NULL);
  gs_status status = run_steps(job, run);
  if (status == GS_OK)
    gs_trace_end();
  else
    gs_trace_abandon(depth);
  return status;
}

static gs_status rank_setup(gs_rank_job *job) {
  gs_runner_shared *sh = job->shared;
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
  ctx->unit_total = sh->unit_total;
  ctx->comm = sh->comm_world ? gs_comm_world_rank(sh->comm_world, sh->mpi ? 0 : job->rank) : NULL;
  // The faults of this world size (world=N), as the measurement records.
  const gs_fault_list *faults = &sh->m->faults;
  job->slow_factor = gs_fault_slow_factor(faults, job->rank);
  job->late_seconds = gs_fault_late_seconds(faults, job->rank);
  job->fail = gs_fault_find(faults, GS_FAULT_FAIL, job->rank);
  job->kill = gs_fault_find(faults, GS_FAULT_KILL, job->rank);
  job->hang = gs_fault_find(faults, GS_FAULT_HANG, job->rank);
  const gs_fault *delay = gs_fault_find(faults, GS_FAULT_DELAY, job->rank);
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
    GS_CHECK_CUDA(gs_fault_cuda_load_kernels()); /* before the first NCCL transfer */
  }
  GS_TRY(gs_trace_attach(c->trace, c->trace_measurement, job->rank, ctx->device, ctx->stream));
  gs_trace_begin(GS_TRACE_RUN, "setup", -1, NULL);
  gs_status status = sh->workload->setup(sh->opts, ctx, &job->state);
  gs_trace_end();
  return status;
}

static void rank_teardown(gs_rank_job *job) {
  gs_trace_detach();
  if (job->ctx.comm) gs_comm_arrival_stop(job->ctx.comm); /* a run that failed left it */
  job->shared->workload->teardown(job->state);
  job->state = NULL;
  if (is_cuda(job)) {
    if (job->start) cudaEventDestroy(job->start);
    if (job->stop) cudaEventDestroy(job->stop);
    if (job->ctx.stream) cudaStreamDestroy(job->ctx.stream);
    if (job->fault_slot) cudaFree(job->fault_slot);
  }
}

void *gs_runner_rank_main(void *arg) {
  gs_rank_job *job = arg;
  gs_runner_shared *sh = job->shared;
  gs_set_thread_rank(job->rank);
  gs_clear_error();
  uint64_t run = 0;
  job->current_run = 0;
  gs_status status = rank_setup(job);
  for (; status == GS_OK && run < sh->config->runs; run++) status = one_run(job, run);
  if (status == GS_OK && sh->mpi) {
    // Idle processes wait for this; a failure seen here ends no run.
    gs_status last = gs_runner_lockstep_mpi(job, GS_LOCKSTEP_FINISHED);
    if (last != GS_OK && last != GS_ERR_ABORTED) status = last;
  }
  if (status != GS_OK) {
    snprintf(job->error, sizeof job->error, "%s", gs_last_error());
    if (sh->mpi && status != GS_ERR_ABORTED) (void)gs_runner_lockstep_mpi(job, GS_LOCKSTEP_FAILED);
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
