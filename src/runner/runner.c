/* The runner: measures one workload at one world size. This file plans
 * the split of work units (runner/split.c), allocates the rank records and
 * runs the measurement: one host thread per rank (runner_rank.c) in threads mode,
 * or this process's one rank in mpi mode (runner_mpi.c); the step times,
 * verification and statistics come from runner_summary.c. */
#include "runner/runner.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_private.h"
#include "runner/split.h"
#include "core/check.h"
#include "core/process.h"

/* The measurement member "work_units": the unit, the step's total and each
 * rank's share [begin, begin + count), so that a document shows which
 * units every rank owned (under weak scaling: distinct units of its own). */
static void record_work_units(gs_measurement *m, const gs_workload *w,
                              const gs_runner_shared *sh, int ranks) {
  gs_work_units_record *u = &m->work_units;
  u->unit = w->unit_name;
  u->total = sh->unit_total;
  u->ranks = ranks;
  for (int k = 0; k < ranks; k++) {
    u->begin[k] = sh->unit_begin[k];
    u->count[k] = sh->unit_count[k];
  }
}

static gs_status allocate_records(gs_measurement *m, const gs_runner_shared *sh,
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

/* The groups of ranks whose collectives meet apart (workload's
 * collective_group), set on `a` when every rank is in one. */
static void arrival_groups(const gs_workload *w, const void *opts, int world, gs_arrival *a) {
  if (!w->collective_group) return;
  int group[GS_MAX_RANKS];
  for (int k = 0; k < world; k++)
    if ((group[k] = w->collective_group(opts, k, world)) < 0) return;
  gs_arrival_set_groups(a, group);
}

gs_status gs_runner_measure(const gs_workload *workload, const void *opts,
                            const gs_run_config *config, gs_measurement *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->workload, sizeof out->workload, "%s", workload->key);
  snprintf(out->backend, sizeof out->backend, "%s",
           config->backend == GS_BACKEND_CUDA ? "cuda" : "cpu");
  snprintf(out->scaling, sizeof out->scaling, "%s", gs_scaling_name(config->scaling));
  out->world_size = config->world_size;
  // A workload with its own timing loop is measured by its own driver
  // (gs_runner_driver_of), never by this one.
  if (!workload->step) GS_BUG("the runner was asked to measure %s, which has no step", workload->key);
  if (config->world_size < 1 || config->world_size > GS_MAX_RANKS || config->runs < 1)
    GS_BUG("runner called with %d ranks and %llu runs", config->world_size,
           (unsigned long long)config->runs);
  for (int k = 0; k < config->world_size; k++)
    out->devices[k] = config->backend == GS_BACKEND_CUDA ? config->devices[k] : -1;

  gs_runner_shared *sh = calloc(1, sizeof *sh);
  gs_rank_job *jobs = calloc((size_t)config->world_size, sizeof *jobs);
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
  out->faults = gs_fault_at(&config->faults, config->world_size);
  status = gs_split_plan(workload, opts, config, sh->unit_begin, sh->unit_count, &sh->unit_total);
  if (status != GS_OK) goto done;
  // The whole problem of every rank: under weak scaling N times the units.
  workload->cost(opts, sh->unit_total, &out->cost);
  record_work_units(out, workload, sh, config->world_size);
  status = allocate_records(out, sh, config);
  if (status != GS_OK) goto done;
  if (workload->communicates && config->world_size >= 2 && !config->no_arrival_times) {
    // Each rank's arrival at its collectives (docs/stragglers.md), room
    // made for a fixed count of timed steps before they start; none with
    // --arrival-times 0.
    out->arrival = gs_arrival_new((size_t)config->world_size, config->runs * config->iters,
                                  config->backend == GS_BACKEND_CUDA ? "device" : "host",
                                  "shared");
    if (!out->arrival) {
      status = GS_ERR_NOMEM;
      goto done;
    }
    arrival_groups(workload, opts, config->world_size, out->arrival);
  }
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
                               .timeout_seconds = config->comm_timeout_seconds,
                               .faults = &config->faults,
                               .nccl_max_ctas = config->nccl_max_ctas};
    status = gs_comm_world_create(&job, &wc, &sh->comm_world);
    if (status != GS_OK) goto done;
  }
  if (sh->mpi) {
    status = gs_runner_measure_mpi(sh);
    goto done;
  }
  if (workload->communicates) {
    // Communicators of all ranks are created together, before the threads.
    gs_comm_job job;
    gs_comm_job_detect(&job);
    job.launch = GS_COMM_LAUNCH_THREADS;
    gs_comm_world_config wc = {.backend = config->backend, .local_ranks = config->world_size,
                               .devices = config->devices, .timeout_seconds = config->comm_timeout_seconds,
                               .faults = &config->faults,
                               .nccl_max_ctas = config->nccl_max_ctas};
    status = gs_comm_world_create(&job, &wc, &sh->comm_world);
    if (status != GS_OK) goto done;
  }
  const int rc = gs_barrier_init(&sh->barrier, config->world_size);
  if (rc != 0) {
    status = gs_error_system(rc, "cannot create the rank barrier");
    goto done;
  }

  for (; started < config->world_size; started++) {
    jobs[started].shared = sh;
    jobs[started].rank = started;
    const int created =
        pthread_create(&threads[started], NULL, gs_runner_rank_main, &jobs[started]);
    if (created != 0) {
      gs_barrier_abort(&sh->barrier);
      status = gs_error_system(created, "cannot start the thread of rank %d", started);
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
    gs_error_kept kept;  // a failure before it (a thread that did not start) keeps its text
    gs_error_keep(&kept);
    gs_status s = gs_runner_summarize(out, config->backend == GS_BACKEND_CUDA);
    if (s != GS_OK && status == GS_OK) status = s;
    else gs_error_restore(&kept);
  }

done:
  // Nothing started: still meet the plan's other measurements at the gate.
  if (started == 0 && config->start_gate && !config->control) (void)gs_barrier_wait(config->start_gate);
  out->status = status;
  if (status != GS_OK && out->error[0] == '\0')
    snprintf(out->error, sizeof out->error, "%s", gs_last_error());
  // A rank thread's error is recorded on the calling thread too.
  if (status != GS_OK) gs_error(status, "%s", out->error);
  if (status != GS_OK) gs_runner_name_failure(out);
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
