/* The measuring half of `gpuscale check pairs` (docs/check.md,
 * "Localization by pairs"): the ranks of the job (CPU rank threads, or one
 * rank per process under mpirun/srun) meet in the rounds of the
 * round-robin tournament (core/pair_schedule); in each round every pair
 * times a 2-member all-reduce (a group of the pair) and a copy each way
 * (point to point), the rest of the world idle. */
#include "measure/check_pairs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/pair_schedule.h"
#include "core/timer.h"

/* One rank's part: its comm handle, the job's shape and where its own
 * times go (rounds x 2 kinds x iters, -1 where it sat out). */
typedef struct {
  gs_comm *comm;
  const gs_check_pairs_options *o;
  size_t units;
  double *times;
  gs_status status;
  char error[512];
} rank_job;

/* One exchange of kind 0 (all-reduce) or 1 (copy each way) with `peer`. */
static gs_status exchange(gs_comm *c, gs_comm_group *g, int kind, int peer, float *send,
                          float *recv, size_t count) {
  if (kind == 0)
    return gs_comm_group_allreduce(g, send, recv, count, GS_DTYPE_FLOAT, GS_REDOP_SUM, NULL);
  gs_comm_p2p_op ops[2] = {
      {.send = 1, .buf = send, .count = count, .dtype = GS_DTYPE_FLOAT, .peer = peer},
      {.send = 0, .buf = recv, .count = count, .dtype = GS_DTYPE_FLOAT, .peer = peer}};
  GS_TRY(gs_comm_p2p(c, ops, 2, NULL));
  return gs_comm_p2p_drain(c);
}

/* The rounds are interleaved: every timed iteration goes through every
 * round once, so that a load or drift of the machine falls on every round
 * alike instead of on the pairs of one round. Each round's group is made
 * once, before. */
static void *rank_main(void *arg) {
  rank_job *j = arg;
  const gs_check_pairs_options *o = j->o;
  const int me = gs_comm_rank(j->comm);
  const size_t count = o->bytes / sizeof(float), rounds = gs_pairs_tournament_rounds(j->units);
  // A slowed rank (--inject slow) is slow with every partner.
  const double slow = gs_fault_slow_factor(o->faults, me);
  float *send = malloc((count ? count : 1) * sizeof *send);
  float *recv = calloc(count ? count : 1, sizeof *recv);
  gs_comm_group **groups = calloc(rounds ? rounds : 1, sizeof *groups);
  gs_status st = send && recv && groups
                     ? GS_OK
                     : gs_error(GS_ERR_NOMEM, "cannot allocate %zu bytes", o->bytes);
  for (size_t i = 0; st == GS_OK && i < count; i++) send[i] = (float)(me + 1);
  for (size_t r = 0; st == GS_OK && r < rounds; r++) {
    const int peer = gs_pairs_tournament_partner(j->units, r, (size_t)me);
    st = gs_comm_group_create(j->comm, peer < 0 ? me : (peer < me ? peer : me), &groups[r]);
  }
  for (int i = -o->warmup; i < o->iters && st == GS_OK; i++)
    for (size_t r = 0; r < rounds && st == GS_OK; r++) {
      const int peer = gs_pairs_tournament_partner(j->units, r, (size_t)me);
      double *t = j->times + r * 2 * (size_t)o->iters;
      for (int kind = 0; kind < 2 && st == GS_OK; kind++) {
        if (peer < 0) {
          if (i >= 0) t[kind * o->iters + i] = -1.0;
          // The round's barrier: every rank passes each round together.
          st = gs_comm_barrier(j->comm);
          continue;
        }
        const double t0 = gs_time_seconds();
        st = exchange(j->comm, groups[r], kind, peer, send, recv, count);
        if (st == GS_OK && slow > 1.0) gs_fault_late_wait((slow - 1.0) * (gs_time_seconds() - t0));
        if (st == GS_OK && i >= 0) t[kind * o->iters + i] = gs_time_seconds() - t0;
        const float want = kind == 0 ? (float)(me + peer + 2) : (float)(peer + 1);
        if (st == GS_OK && count > 0 && (recv[0] != want || recv[count - 1] != want))
          st = gs_error(GS_ERR_VERIFY, "rank %d: the %s with rank %d delivered %g, not %g", me,
                        kind == 0 ? "all-reduce" : "copy", peer, (double)recv[0], (double)want);
        if (st == GS_OK) st = gs_comm_barrier(j->comm);
      }
    }
  for (size_t r = 0; groups && r < rounds; r++) gs_comm_group_destroy(groups[r]);
  free(groups);
  free(send);
  free(recv);
  j->status = st;
  if (st != GS_OK) snprintf(j->error, sizeof j->error, "%s", gs_last_error());
  return NULL;
}

/* Builds the pairs from every rank's times (all[rank] = rounds x 2 x iters):
 * a pair's time in an iteration is the longer of its two ranks'. */
static gs_status collect(const double *all, size_t units, int iters, gs_check_pairs_times *out) {
  const size_t rounds = gs_pairs_tournament_rounds(units), per = rounds * 2 * (size_t)iters;
  out->n_units = units;
  out->rounds = rounds;
  out->iters = iters;
  out->n_pairs = 0;
  out->a = malloc(units * units * sizeof *out->a);
  out->b = malloc(units * units * sizeof *out->b);
  out->seconds[0] = malloc(units * units * (size_t)iters * sizeof(double));
  out->seconds[1] = malloc(units * units * (size_t)iters * sizeof(double));
  if (!out->a || !out->b || !out->seconds[0] || !out->seconds[1])
    return gs_error(GS_ERR_NOMEM, "check pairs: out of memory for %zu units", units);
  for (size_t r = 0; r < rounds; r++)
    for (size_t u = 0; u < units; u++) {
      const int p = gs_pairs_tournament_partner(units, r, u);
      if (p < 0 || (size_t)p < u) continue;
      const size_t k = out->n_pairs++;
      out->a[k] = (int)u;
      out->b[k] = p;
      for (int kind = 0; kind < 2; kind++)
        for (int i = 0; i < iters; i++) {
          const double x = all[u * per + (r * 2 + (size_t)kind) * (size_t)iters + (size_t)i];
          const double y = all[(size_t)p * per + (r * 2 + (size_t)kind) * (size_t)iters + (size_t)i];
          out->seconds[kind][k * (size_t)iters + (size_t)i] = x > y ? x : y;
        }
    }
  return GS_OK;
}

static gs_status measure_world(const gs_check_pairs_options *o, gs_comm_job *job, int local,
                               size_t units, gs_check_pairs_times *out);

/* See check_pairs.h. */
gs_status gs_check_pairs_measure(const gs_check_pairs_options *o, gs_check_pairs_times *out) {
  memset(out, 0, sizeof *out);
  gs_comm_job job;
  gs_comm_job_detect(&job);
  const int mpi = job.launch == GS_COMM_LAUNCH_MPI;
  const int local = mpi ? 1 : o->ranks;
  const size_t units = mpi ? (size_t)job.process_count : (size_t)o->ranks;
  if (units < 2)
    return gs_error(GS_ERR_USAGE, "check pairs: needs 2 or more ranks (--ranks, or mpirun -np)");
  GS_TRY(gs_fault_check_ranks(o->faults, (int)units));
  GS_TRY(gs_comm_job_start(&job));
  gs_status st = measure_world(o, &job, local, units, out);
  gs_comm_job_finish(&job);
  return st;
}

/* The measurement in a started job. */
static gs_status measure_world(const gs_check_pairs_options *o, gs_comm_job *job, int local,
                               size_t units, gs_check_pairs_times *out) {
  const int mpi = job->launch == GS_COMM_LAUNCH_MPI;
  gs_comm_world_config wc = {.backend = GS_BACKEND_CPU, .local_ranks = local,
                             .timeout_seconds = o->timeout, .faults = o->faults};
  gs_comm_world *world = NULL;
  GS_TRY(gs_comm_world_create(job, &wc, &world));
  const size_t per = gs_pairs_tournament_rounds(units) * 2 * (size_t)o->iters;
  double *all = calloc(units * per, sizeof *all);
  rank_job *jobs = calloc((size_t)local, sizeof *jobs);
  pthread_t *threads = calloc((size_t)local, sizeof *threads);
  gs_status st = all && jobs && threads ? GS_OK : gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  int started = 0;
  for (int k = 0; st == GS_OK && k < local; k++) {
    gs_comm *c = gs_comm_world_rank(world, k);
    jobs[k] = (rank_job){.comm = c, .o = o, .units = units,
                         .times = all + (size_t)gs_comm_rank(c) * per};
    const int rc = pthread_create(&threads[k], NULL, rank_main, &jobs[k]);
    if (rc != 0)
      st = gs_error_system(rc, "check pairs: cannot start rank thread %d", k);
    else
      started++;
  }
  for (int k = 0; k < started; k++) pthread_join(threads[k], NULL);
  for (int k = 0; k < started && st == GS_OK; k++)
    if (jobs[k].status != GS_OK) st = gs_error(jobs[k].status, "%s", jobs[k].error);
  if (st == GS_OK && mpi) {
    double *mine = malloc(per * sizeof *mine);
    st = mine ? GS_OK : gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
    if (st == GS_OK) {
      memcpy(mine, all + (size_t)job->process_rank * per, per * sizeof *mine);
      st = gs_comm_world_allgather(world, mine, per * sizeof *mine, all);
    }
    free(mine);
  }
  if (st == GS_OK) st = collect(all, units, o->iters, out);
  free(all);
  free(jobs);
  free(threads);
  gs_comm_world_destroy(world);
  out->process_rank = job->process_rank;
  return st;
}

/* See check_pairs.h. */
void gs_check_pairs_times_free(gs_check_pairs_times *t) {
  if (!t) return;
  free(t->a);
  free(t->b);
  free(t->seconds[0]);
  free(t->seconds[1]);
  memset(t, 0, sizeof *t);
}
