/* The measuring half of `gpuscale check pairs` (docs/check.md,
 * "Localization by pairs"): the ranks of the job (CPU rank threads, or one
 * rank per process under mpirun/srun) meet in the rounds of the
 * round-robin tournament (core/pair_schedule); in each round every pair
 * times a 2-member all-reduce (a group of the pair) and a copy each way
 * (point to point), the rest of the world idle. When the processes run on
 * several hosts, the units are the nodes instead: their leaders (the
 * lowest process of each host) meet in the ceil(log2 N) rounds of the node
 * bisection (node u meets u XOR 2^r). */
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
  size_t rounds;
  const int *partner; /* rounds x ranks: the rank met in round r, -1 out */
  int ranks;
  double slow;        /* the slow factor of this rank (its node's, by nodes) */
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
  const size_t count = o->bytes / sizeof(float), rounds = j->rounds;
  // A slowed rank (--inject slow) is slow with every partner.
  const double slow = j->slow;
  float *send = malloc((count ? count : 1) * sizeof *send);
  float *recv = calloc(count ? count : 1, sizeof *recv);
  gs_comm_group **groups = calloc(rounds ? rounds : 1, sizeof *groups);
  gs_status st = send && recv && groups
                     ? GS_OK
                     : gs_error(GS_ERR_NOMEM, "cannot allocate %zu bytes", o->bytes);
  for (size_t i = 0; st == GS_OK && i < count; i++) send[i] = (float)(me + 1);
  for (size_t r = 0; st == GS_OK && r < rounds; r++) {
    const int peer = j->partner[r * (size_t)j->ranks + (size_t)me];
    st = gs_comm_group_create(j->comm, peer < 0 ? me : (peer < me ? peer : me), &groups[r]);
  }
  for (int i = -o->warmup; i < o->iters && st == GS_OK; i++)
    for (size_t r = 0; r < rounds && st == GS_OK; r++) {
      const int peer = j->partner[r * (size_t)j->ranks + (size_t)me];
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

/* The partner of unit u in round r of the schedule: the tournament of
 * ranks, or the bisection of nodes. */
static int unit_partner(int nodes, size_t units, size_t r, size_t u) {
  return nodes ? gs_pairs_bisection_partner(units, r, u) : gs_pairs_tournament_partner(units, r, u);
}

/* Builds the pairs of units from every rank's times (all[rank] = rounds x
 * 2 x iters; lead[u] the rank that measured for unit u): a pair's time in
 * an iteration is the longer of its two ranks'. */
static gs_status collect(const double *all, const int *lead, int iters,
                         gs_check_pairs_times *out) {
  const size_t units = out->n_units, rounds = out->rounds, per = rounds * 2 * (size_t)iters;
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
      const int p = unit_partner(out->nodes, units, r, u);
      if (p < 0 || (size_t)p < u) continue;
      const size_t k = out->n_pairs++, ru = (size_t)lead[u], rp = (size_t)lead[p];
      out->a[k] = (int)u;
      out->b[k] = p;
      for (int kind = 0; kind < 2; kind++)
        for (int i = 0; i < iters; i++) {
          const double x = all[ru * per + (r * 2 + (size_t)kind) * (size_t)iters + (size_t)i];
          const double y = all[rp * per + (r * 2 + (size_t)kind) * (size_t)iters + (size_t)i];
          out->seconds[kind][k * (size_t)iters + (size_t)i] = x > y ? x : y;
        }
    }
  return GS_OK;
}

static gs_status measure_world(const gs_check_pairs_options *o, gs_comm_job *job, int local,
                               size_t ranks, gs_check_pairs_times *out);

/* See check_pairs.h. */
gs_status gs_check_pairs_measure(const gs_check_pairs_options *o, gs_check_pairs_times *out) {
  memset(out, 0, sizeof *out);
  gs_comm_job job;
  gs_comm_job_detect(&job);
  const int mpi = job.launch == GS_COMM_LAUNCH_MPI;
  const int local = mpi ? 1 : o->ranks;
  const size_t ranks = mpi ? (size_t)job.process_count : (size_t)o->ranks;
  if (ranks < 2)
    return gs_error(GS_ERR_USAGE, "check pairs: needs 2 or more ranks (--ranks, or mpirun -np)");
  GS_TRY(gs_fault_check_ranks(o->faults, (int)ranks));
  GS_TRY(gs_comm_job_start(&job));
  gs_status st = measure_world(o, &job, local, ranks, out);
  gs_comm_job_finish(&job);
  return st;
}

/* The job's nodes from every process's host name (gathered): host[k] of
 * node k in the order first met, node_of[rank], lead[k] its lowest rank;
 * one node in threads mode. Tests make each process its own host
 * (GPUSCALE_TEST_SEPARATE_HOSTS=1). */
static gs_status find_nodes(gs_comm_world *world, const gs_comm_job *job, size_t ranks,
                            gs_check_pairs_times *out, int *node_of, int *lead) {
  out->n_nodes = 1;
  memset(node_of, 0, ranks * sizeof *node_of);
  lead[0] = 0;
  if (job->launch != GS_COMM_LAUNCH_MPI) return GS_OK;
  char mine[GS_PAIRS_HOST_MAX];
  if (gs_comm_separate_hosts())
    snprintf(mine, sizeof mine, "%.40s-p%d", gs_hostname(), job->process_rank);
  else
    snprintf(mine, sizeof mine, "%s", gs_hostname());
  char(*names)[GS_PAIRS_HOST_MAX] = calloc(ranks, sizeof *names);
  if (!names) return gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  gs_status st = gs_comm_world_allgather(world, mine, sizeof mine, names);
  out->n_nodes = 0;
  for (size_t k = 0; st == GS_OK && k < ranks; k++) {
    size_t n = 0;
    while (n < out->n_nodes && strcmp(out->host[n], names[k]) != 0) n++;
    if (n == out->n_nodes) {
      lead[n] = (int)k;
      memcpy(out->host[out->n_nodes++], names[k], GS_PAIRS_HOST_MAX);
    }
    node_of[k] = (int)n;
  }
  free(names);
  return st;
}

/* The partners of every rank in every round (rounds x ranks) and the slow
 * factor of each: the tournament of ranks, or, over several nodes, the
 * bisection of the nodes between their leaders (the others sit out; a
 * node is as slow as its slowest rank). */
static void plan_rounds(const gs_check_pairs_options *o, size_t ranks, const int *node_of,
                        const int *lead, gs_check_pairs_times *out, int *partner, double *slow) {
  for (size_t k = 0; k < ranks; k++) slow[k] = gs_fault_slow_factor(o->faults, (int)k);
  for (size_t k = 0; out->nodes && k < ranks; k++) {
    const double s = slow[k];
    if (s > slow[lead[node_of[k]]]) slow[lead[node_of[k]]] = s;
  }
  for (size_t r = 0; r < out->rounds; r++)
    for (size_t k = 0; k < ranks; k++) {
      int p = -1;
      if (!out->nodes)
        p = unit_partner(0, ranks, r, k);
      else if (lead[node_of[k]] == (int)k) {
        const int q = unit_partner(1, out->n_units, r, (size_t)node_of[k]);
        p = q < 0 ? -1 : lead[q];
      }
      partner[r * ranks + k] = p;
    }
}

/* Runs the rank threads of this process over the planned rounds. */
static gs_status run_ranks(const gs_check_pairs_options *o, gs_comm_world *world, int local,
                           size_t ranks, const gs_check_pairs_times *out, const int *partner,
                           const double *slow, double *all, size_t per) {
  rank_job *jobs = calloc((size_t)local, sizeof *jobs);
  pthread_t *threads = calloc((size_t)local, sizeof *threads);
  gs_status st = jobs && threads ? GS_OK : gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  int started = 0;
  for (int k = 0; st == GS_OK && k < local; k++) {
    gs_comm *c = gs_comm_world_rank(world, k);
    const int me = gs_comm_rank(c);
    jobs[k] = (rank_job){.comm = c, .o = o, .rounds = out->rounds, .partner = partner,
                         .ranks = (int)ranks, .slow = slow[me], .times = all + (size_t)me * per};
    const int rc = pthread_create(&threads[k], NULL, rank_main, &jobs[k]);
    if (rc != 0)
      st = gs_error_system(rc, "check pairs: cannot start rank thread %d", k);
    else
      started++;
  }
  for (int k = 0; k < started; k++) pthread_join(threads[k], NULL);
  for (int k = 0; k < started && st == GS_OK; k++)
    if (jobs[k].status != GS_OK) st = gs_error(jobs[k].status, "%s", jobs[k].error);
  free(jobs);
  free(threads);
  return st;
}

/* The measurement in a started job. */
static gs_status measure_world(const gs_check_pairs_options *o, gs_comm_job *job, int local,
                               size_t ranks, gs_check_pairs_times *out) {
  const int mpi = job->launch == GS_COMM_LAUNCH_MPI;
  gs_comm_world_config wc = {.backend = GS_BACKEND_CPU, .local_ranks = local,
                             .timeout_seconds = o->timeout, .faults = o->faults};
  gs_comm_world *world = NULL;
  GS_TRY(gs_comm_world_create(job, &wc, &world));
  out->process_rank = job->process_rank;
  out->n_ranks = ranks;
  int *node_of = calloc(ranks, sizeof *node_of), *lead = calloc(ranks, sizeof *lead);
  gs_status st = node_of && lead ? GS_OK : gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  out->host = st == GS_OK ? calloc(ranks, sizeof *out->host) : NULL;
  if (st == GS_OK && !out->host) st = gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  if (st == GS_OK) st = find_nodes(world, job, ranks, out, node_of, lead);
  if (st == GS_OK) {
    out->nodes = out->n_nodes >= 2;
    out->n_units = out->nodes ? out->n_nodes : ranks;
    out->rounds = out->nodes ? gs_pairs_bisection_rounds(out->n_units)
                             : gs_pairs_tournament_rounds(out->n_units);
    for (size_t u = 0; !out->nodes && u < ranks; u++) lead[u] = (int)u;
  }
  const size_t per = out->rounds * 2 * (size_t)o->iters;
  double *all = st == GS_OK ? calloc(ranks * per + 1, sizeof *all) : NULL;
  int *partner = st == GS_OK ? calloc(out->rounds * ranks + 1, sizeof *partner) : NULL;
  double *slow = st == GS_OK ? calloc(ranks, sizeof *slow) : NULL;
  if (st == GS_OK && (!all || !partner || !slow))
    st = gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  if (st == GS_OK) plan_rounds(o, ranks, node_of, lead, out, partner, slow);
  if (st == GS_OK) st = run_ranks(o, world, local, ranks, out, partner, slow, all, per);
  if (st == GS_OK && mpi) {
    double *mine = malloc((per ? per : 1) * sizeof *mine);
    st = mine ? GS_OK : gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
    if (st == GS_OK) {
      memcpy(mine, all + (size_t)job->process_rank * per, per * sizeof *mine);
      st = gs_comm_world_allgather(world, mine, per * sizeof *mine, all);
    }
    free(mine);
  }
  if (st == GS_OK) st = collect(all, lead, o->iters, out);
  free(all);
  free(partner);
  free(slow);
  free(node_of);
  free(lead);
  gs_comm_world_destroy(world);
  return st;
}

/* See check_pairs.h. */
void gs_check_pairs_times_free(gs_check_pairs_times *t) {
  if (!t) return;
  free(t->a);
  free(t->b);
  free(t->seconds[0]);
  free(t->seconds[1]);
  free(t->host);
  memset(t, 0, sizeof *t);
}
