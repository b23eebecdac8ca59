/* The runner's mpi mode (docs/multinode.md): each process drives its one
 * rank, and every lockstep point is an allgather over the control world
 * that carries each rank's latest sample, failure flag and rank 0's stop
 * decision to every process, so that every process holds every rank's
 * records. After the runs the ranks' outcomes are exchanged; when the
 * control world broke, the lost rank is named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_private.h"
#include "core/check.h"

/* mpi mode: files the samples the other ranks carried into their records.
 * Every process keeps every rank's records, so that any survivor can write
 * the document when process 0 is the rank that was lost. */
static gs_status absorb(gs_runner_shared *sh) {
  const gs_run_config *c = sh->config;
  for (int k = 0; k < c->world_size; k++) {
    if (k == c->process_rank) continue;
    const gs_lockstep_msg *msg = &sh->inbox[k];
    if (msg->run >= c->runs) continue;
    gs_rank_record *rec = &sh->m->runs[msg->run].ranks[k];
    rec->steps_completed = msg->steps_completed;
    if (msg->flags & GS_LOCKSTEP_FIRST)
      rec->first_iteration_seconds =
          c->backend == GS_BACKEND_CUDA ? msg->device_seconds : msg->wall_seconds;
    if (msg->flags & GS_LOCKSTEP_SAMPLE_FAILED) rec->failed_samples++;
    if (!(msg->flags & GS_LOCKSTEP_SAMPLE)) continue;
    if (sh->capacity_run[k] != (uint64_t)msg->run + 1) {
      sh->capacity[k] = rec->n_samples;
      sh->capacity_run[k] = (uint64_t)msg->run + 1;
    }
    GS_TRY(gs_runner_append_sample(rec, &sh->capacity[k], msg->device_seconds, msg->wall_seconds,
                         c->backend == GS_BACKEND_CUDA, msg->comm_seconds,
                         sh->comm_world != NULL));
    if (sh->m->arrival) {
      gs_arrival_rank *r = &sh->m->arrival->ranks[k];
      GS_TRY(gs_arrival_append(r, msg->arrival_entry, msg->arrival_exit));
      r->host_checked = (size_t)msg->arrival_host_checked;
      r->host_bound = (size_t)msg->arrival_host_bound;
    }
  }
  return GS_OK;
}

gs_status gs_runner_lockstep_mpi(gs_rank_job *job, uint32_t flags) {
  gs_runner_shared *sh = job->shared;
  if (sh->control_broken)
    return gs_error(GS_ERR_ABORTED, "the job's communication already failed");
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
    if (sh->inbox[k].flags & GS_LOCKSTEP_FINISHED) sh->finished = 1;
    if ((sh->inbox[k].flags & GS_LOCKSTEP_FAILED) && sh->failed_rank < 0) sh->failed_rank = k;
  }
  if (sh->failed_rank >= 0)
    return gs_error(GS_ERR_ABORTED, "stopped because rank %d failed", sh->failed_rank);
  sh->stop = (sh->inbox[0].flags & GS_LOCKSTEP_STOP) != 0;
  return GS_OK;
}

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

/* " (ROLE)" of `rank` from the workload's rank_role, or "" (in buf). */
static const char *role_of(const gs_runner_shared *sh, int rank, char *buf, size_t size) {
  char role[GS_TEXT_LONG] = "";
  if (sh->workload->rank_role)
    sh->workload->rank_role(sh->opts, rank, sh->config->world_size, role, sizeof role);
  snprintf(buf, size, role[0] ? " (%s)" : "%s", role);
  return buf;
}

/* After the control world broke (a timeout, a signal, a peer that died or
 * was stopped): finds the lost rank (gs_comm_find_lost) and marks the
 * records of the ranks whose outcome cannot be gathered. Returns the lost
 * rank or -1. */
static int name_lost_rank(gs_runner_shared *sh, gs_status status, uint64_t run) {
  const gs_run_config *c = sh->config;
  const int me = c->process_rank;
  char how[GS_TEXT_LONG] = "", role[GS_TEXT_LONG + 4];
  int lost = gs_comm_find_lost(c->control, how, sizeof how);
  if (lost >= c->world_size) lost = -1; /* an idle process of a smaller count */
  for (uint64_t r = run; r < c->runs; r++) {
    gs_rank_record *own = me < c->world_size ? &sh->m->runs[r].ranks[me] : NULL;
    if (own && r > run) own->steps_completed = sh->m->runs[run].ranks[me].steps_completed;
    if (own && lost == me) {
      own->status = GS_ERR_RANK_LOST;
      snprintf(own->error, sizeof own->error, "rank %d%s on %s lost after step %llu: %s", me,
               role_of(sh, me, role, sizeof role), own->host,
               (unsigned long long)own->steps_completed, how);
    } else if (own && lost >= 0 && own->status != GS_OK) {
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
        snprintf(rec->error, sizeof rec->error, "rank %d%s on %s lost after step %llu: %s", k,
                 role_of(sh, k, role, sizeof role), rec->host,
                 (unsigned long long)rec->steps_completed, how);
      } else {
        rec->status =
            status == GS_ERR_INTERRUPTED && lost < 0 ? GS_ERR_INTERRUPTED : GS_ERR_ABORTED;
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
static gs_status gather_outcomes(gs_runner_shared *sh, const gs_rank_job *job) {
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
static gs_status measure_process(gs_runner_shared *sh) {
  const gs_run_config *c = sh->config;
  const int procs = gs_comm_world_size(c->control);
  sh->inbox = calloc((size_t)procs, sizeof *sh->inbox);
  gs_rank_job *job = calloc(1, sizeof *job);
  if (!sh->inbox || !job) {
    free(job);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the lockstep buffers");
  }
  job->shared = sh;
  job->rank = c->process_rank;
  gs_status status = GS_OK;
  if (job->rank < c->world_size) {
    gs_runner_rank_main(job);
    status = job->status;
  } else {
    while (!sh->finished && status == GS_OK) status = gs_runner_lockstep_mpi(job, 0);
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

gs_status gs_runner_measure_mpi(gs_runner_shared *sh) {
  gs_measurement *out = sh->m;
  gs_status status = measure_process(sh);
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
  gs_status s = gs_runner_summarize(out, sh->config->backend == GS_BACKEND_CUDA);
  if (s != GS_OK && status == GS_OK) status = s;
  return status;
}
