/* The measuring half of `gpuscale check pairs` (docs/check.md,
 * "Localization by pairs"): the ranks of the job (CPU rank threads, or one
 * rank per process under mpirun/srun) meet in the rounds of the
 * round-robin tournament (core/pair_schedule); in each round every pair
 * times a 2-member all-reduce (a group of the pair) and a copy each way
 * (point to point), the rest of the world idle. When the processes run on
 * several hosts, the units are the nodes instead: their leaders (the
 * lowest process of each host) meet in the ceil(log2 N) rounds of the node
 * bisection (node u meets u XOR 2^r). A round whose pairs would run more
 * ranks at once on a host than it has cores is measured in slots
 * (gs_pairs_slots). Then the confirming round: the pairs the caller
 * chooses, each measured alone. */
// getloadavg and the CPU affinity calls are outside POSIX: glibc declares
// them with _GNU_SOURCE, which the project-wide _POSIX_C_SOURCE would hide.
#define _GNU_SOURCE
#include "measure/check_pairs.h"

#include <math.h>
#include <sched.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/pair_schedule.h"
#include "core/timer.h"
#include "measure/check_pairs_rank.h"

/* How long an idle rank sleeps between looks at the barrier it waits in
 * (processes; threads sleep on a condition variable): short against a
 * round's exchanges, long enough that its wake-ups cost the working ranks
 * next to nothing. */
#define PAIRS_NAP_SECONDS 0.0005

/* The exchanges to run: pairs of ranks in order of their step (the pairs
 * of one step run at once and are disjoint), each in a round (one group
 * split per round: the pairs of a round are disjoint too). */
typedef struct {
  size_t n, n_rounds, n_steps;
  int *ra, *rb;        /* n: the ranks */
  int *ua, *ub;        /* n: the units they measure for, ua < ub */
  size_t *round, *step;
  size_t *slot_a, *slot_b; /* n: the pair's place among ra's (rb's) exchanges */
  int *cpu_a, *cpu_b;  /* n: the CPU (index into the allowed ones) ra (rb) runs on */
  int *one_host;       /* n: 1 when ra and rb are CPU ranks of one host (one clock, one set
                          of CPUs); 0 for GPU ranks, each timed by its own GPU's events */
  size_t per;          /* the most exchanges of one rank */
} plan;

static void plan_free(plan *p) {
  free(p->ra);
  free(p->rb);
  free(p->ua);
  free(p->ub);
  free(p->round);
  free(p->step);
  free(p->slot_a);
  free(p->slot_b);
  free(p->cpu_a);
  free(p->cpu_b);
  free(p->one_host);
  memset(p, 0, sizeof *p);
}

static gs_status plan_alloc(plan *p, size_t n) {
  memset(p, 0, sizeof *p);
  const size_t m = n ? n : 1;
  p->ra = malloc(m * sizeof *p->ra);
  p->rb = malloc(m * sizeof *p->rb);
  p->ua = malloc(m * sizeof *p->ua);
  p->ub = malloc(m * sizeof *p->ub);
  p->round = malloc(m * sizeof *p->round);
  p->step = malloc(m * sizeof *p->step);
  p->slot_a = malloc(m * sizeof *p->slot_a);
  p->slot_b = malloc(m * sizeof *p->slot_b);
  p->cpu_a = malloc(m * sizeof *p->cpu_a);
  p->cpu_b = malloc(m * sizeof *p->cpu_b);
  p->one_host = malloc(m * sizeof *p->one_host);
  if (p->ra && p->rb && p->ua && p->ub && p->round && p->step && p->slot_a && p->slot_b &&
      p->cpu_a && p->cpu_b && p->one_host)
    return GS_OK;
  plan_free(p);
  return gs_error(GS_ERR_NOMEM, "check pairs: out of memory for %zu pairs", n);
}

/* The job as the measurement sees it: the world, the units and the hosts
 * the ranks really run on (for the cores they share and for their clock). */
typedef struct {
  gs_comm_job *job;
  gs_comm_world *world;
  int local;
  size_t ranks;
  int *node_of, *lead; /* ranks: its unit's node; units: the rank measuring for it */
  int *real_of;        /* ranks: its real host, 0 .. n_real-1 */
  int *cores;          /* n_real: each real host's logical cores */
  size_t n_real;
  int cuda;            /* GPU ranks: one GPU each, NCCL through the comm layer */
  int *device;         /* ranks: the CUDA ordinal of each (cuda) */
  double *slow;        /* ranks: the slow factor of each (a node's leader: its node's) */
  double *late;        /* ranks: the late fault's seconds (a node's leader: its node's) */
  int *cpus;           /* the CPUs this process may run on, in order */
  int n_cpus;
  int *pin_refused;    /* set when a rank could not be pinned */
} world_view;

/* Each pair's place among its ranks' exchanges, the most of one rank, and
 * the CPU each of its ranks runs on: the pairs of a step on one host take
 * its allowed CPUs in order (a step never holds more of a host's ranks
 * than it has CPUs, gs_pairs_slots), so that two ranks at work never share
 * one while another CPU sleeps. */
static gs_status plan_places(plan *p, const world_view *w) {
  size_t *count = calloc(w->ranks, sizeof *count);
  int *used = calloc(w->n_real + 1, sizeof *used);
  gs_status st = count && used ? GS_OK : gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  p->per = 0;
  for (size_t i = 0; st == GS_OK && i < p->n; i++) {
    if (i == 0 || p->step[i] != p->step[i - 1]) memset(used, 0, (w->n_real + 1) * sizeof *used);
    p->slot_a[i] = count[p->ra[i]]++;
    p->slot_b[i] = count[p->rb[i]]++;
    p->cpu_a[i] = used[w->real_of[p->ra[i]]]++;
    p->cpu_b[i] = used[w->real_of[p->rb[i]]]++;
    p->one_host[i] = !w->cuda && w->real_of[p->ra[i]] == w->real_of[p->rb[i]];
  }
  for (size_t k = 0; st == GS_OK && k < w->ranks; k++)
    if (count[k] > p->per) p->per = count[k];
  free(count);
  free(used);
  return st;
}

/* One rank's part: its exchanges (comm handle, buffers, faults), the plan
 * and where its own times go (per x 2 kinds x iters x {start, end}). */
typedef struct {
  gs_check_pairs_rank x;
  const gs_check_pairs_options *o;
  const plan *p;
  double *times;
  const int *cpus; /* the allowed CPUs; the one the thread is pinned to (-1 none) */
  int n_cpus, pinned, pin_refused;
  gs_status status;
  char error[512];
} rank_job;

/* Pins the calling rank thread to allowed CPU `index` for its next
 * exchanges; where the system refuses, the rank runs where the scheduler
 * puts it, and the measurement says so. */
static void pin(rank_job *j, int index) {
  if (index < 0 || index >= j->n_cpus || index == j->pinned) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(j->cpus[index], &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0)
    j->pinned = index;
  else
    j->pin_refused = 1;
}

/* The steps are interleaved: every timed iteration goes through every
 * step once, so that a load or drift of the machine falls on every step
 * alike instead of on the pairs of one. Each round's groups are made once,
 * before; a rank with no pair in a step waits in the barrier asleep. */
static void *rank_main(void *arg) {
  rank_job *j = arg;
  const gs_check_pairs_options *o = j->o;
  const plan *p = j->p;
  const int me = gs_comm_rank(j->x.comm), cuda = j->x.cuda;
  gs_status st = gs_check_pairs_rank_open(&j->x);
  gs_comm_group **groups = calloc(p->n_rounds ? p->n_rounds : 1, sizeof *groups);
  long *in_step = malloc((p->n_steps ? p->n_steps : 1) * sizeof *in_step);
  if (st == GS_OK && (!groups || !in_step))
    st = gs_error(GS_ERR_NOMEM, "check pairs: out of memory for %zu steps", p->n_steps);
  for (size_t s = 0; st == GS_OK && s < p->n_steps; s++) in_step[s] = -1;
  for (size_t r = 0; st == GS_OK && r < p->n_rounds; r++) {
    int color = me;
    for (size_t i = 0; i < p->n; i++)
      if (p->round[i] == r && (p->ra[i] == me || p->rb[i] == me)) {
        color = p->ra[i] < p->rb[i] ? p->ra[i] : p->rb[i];
        in_step[p->step[i]] = (long)i;
      }
    st = gs_comm_group_create(j->x.comm, color, &groups[r]);
  }
  for (int it = -o->warmup; it < o->iters && st == GS_OK; it++)
    for (size_t s = 0; s < p->n_steps && st == GS_OK; s++)
      for (int kind = 0; kind < 2 && st == GS_OK; kind++) {
        const long i = in_step[s];
        if (i >= 0) {
          const size_t slot = p->ra[i] == me ? p->slot_a[i] : p->slot_b[i];
          // The pair's two CPUs change hands every iteration, so that a CPU
          // busy with other work slows both of its ranks alike. GPU ranks
          // are not pinned: their exchanges run on their GPUs.
          const int first = p->ra[i] == me, swap = (it & 1) && p->one_host[i];
          if (kind == 0 && !cuda) pin(j, first != swap ? p->cpu_a[i] : p->cpu_b[i]);
          const int peer = p->ra[i] == me ? p->rb[i] : p->ra[i];
          double t[2];
          st = gs_check_pairs_rank_timed(&j->x, groups[p->round[i]], peer, kind, t);
          double *at = j->times + ((slot * 2 + (size_t)kind) * (size_t)o->iters) * 2;
          if (st == GS_OK && it >= 0) memcpy(at + 2 * it, t, sizeof t);
        }
        // The step's barrier: every rank passes each step together (CPU
        // ranks without a pair asleep, leaving the CPUs to those at work).
        if (st == GS_OK) st = gs_comm_barrier_idle(j->x.comm, cuda ? 0.0 : PAIRS_NAP_SECONDS);
      }
  for (size_t r = 0; groups && r < p->n_rounds; r++) gs_comm_group_destroy(groups[r]);
  free(groups);
  free(in_step);
  // A rank that failed ends its partners' waits instead of leaving them
  // to the timeout.
  if (st != GS_OK) gs_comm_abort(j->x.comm);
  gs_check_pairs_rank_close(&j->x);
  j->status = st;
  if (st != GS_OK) snprintf(j->error, sizeof j->error, "%s", gs_last_error());
  return NULL;
}

/* Runs the rank threads of this process over the plan, then gathers every
 * rank's times into `all` (ranks x per x 2 x iters x 2). */
static gs_status run_ranks(const gs_check_pairs_options *o, const world_view *w, const plan *p,
                           double *all) {
  const size_t per = p->per * 2 * (size_t)o->iters * 2;
  for (size_t k = 0; k < w->ranks * per; k++) all[k] = NAN;
  rank_job *jobs = calloc((size_t)w->local, sizeof *jobs);
  pthread_t *threads = calloc((size_t)w->local, sizeof *threads);
  gs_status st = jobs && threads ? GS_OK : gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  int started = 0;
  for (int k = 0; st == GS_OK && k < w->local; k++) {
    gs_comm *c = gs_comm_world_rank(w->world, k);
    const int me = gs_comm_rank(c);
    jobs[k] = (rank_job){.x = {.comm = c, .cuda = w->cuda, .device = w->device[me],
                               .count = o->bytes / sizeof(float), .slow = w->slow[me],
                               .slow_cap = o->timeout / 4.0, .late = w->late[me]},
                         .o = o, .p = p, .times = all + (size_t)me * per, .cpus = w->cpus,
                         .n_cpus = w->n_cpus, .pinned = -1};
    const int rc = pthread_create(&threads[k], NULL, rank_main, &jobs[k]);
    if (rc != 0)
      st = gs_error_system(rc, "check pairs: cannot start rank thread %d", k);
    else
      started++;
  }
  for (int k = 0; k < started; k++) pthread_join(threads[k], NULL);
  // The first failure that is not another rank's abort is the cause.
  int cause = -1;
  for (int k = 0; k < started; k++)
    if (jobs[k].status != GS_OK &&
        (cause < 0 || (jobs[cause].status == GS_ERR_ABORTED && jobs[k].status != GS_ERR_ABORTED)))
      cause = k;
  if (st == GS_OK && cause >= 0) st = gs_error(jobs[cause].status, "%s", jobs[cause].error);
  for (int k = 0; k < started; k++) *w->pin_refused |= jobs[k].pin_refused;
  free(jobs);
  free(threads);
  if (st == GS_OK && w->job->launch == GS_COMM_LAUNCH_MPI) {
    double *mine = malloc((per ? per : 1) * sizeof *mine);
    st = mine ? GS_OK : gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
    if (st == GS_OK) {
      memcpy(mine, all + (size_t)w->job->process_rank * per, per * sizeof *mine);
      st = gs_comm_world_allgather(w->world, mine, per * sizeof *mine, all);
    }
    free(mine);
  }
  return st;
}

/* The pairs of the plan with their times from every rank's (all): from
 * the later start to the later end of the two ranks on one host's clock,
 * else the longer of their own times. */
static gs_status collect(const plan *p, int iters, const double *all, gs_check_pairs_set *out) {
  const size_t per = p->per * 2 * (size_t)iters * 2;
  memset(out, 0, sizeof *out);
  out->iters = iters;
  const size_t m = p->n ? p->n : 1;
  out->a = malloc(m * sizeof *out->a);
  out->b = malloc(m * sizeof *out->b);
  out->seconds[0] = malloc(m * (size_t)iters * sizeof(double));
  out->seconds[1] = malloc(m * (size_t)iters * sizeof(double));
  if (!out->a || !out->b || !out->seconds[0] || !out->seconds[1])
    return gs_error(GS_ERR_NOMEM, "check pairs: out of memory for %zu pairs", p->n);
  out->n_pairs = p->n;
  for (size_t i = 0; i < p->n; i++) {
    out->a[i] = p->ua[i];
    out->b[i] = p->ub[i];
    const int one_clock = p->one_host[i];
    for (int kind = 0; kind < 2; kind++)
      for (int it = 0; it < iters; it++) {
        const size_t at = ((size_t)kind * (size_t)iters + (size_t)it) * 2;
        const double *x = all + (size_t)p->ra[i] * per + p->slot_a[i] * 2 * (size_t)iters * 2 + at;
        const double *y = all + (size_t)p->rb[i] * per + p->slot_b[i] * 2 * (size_t)iters * 2 + at;
        const double t = one_clock ? fmax(x[1], y[1]) - fmax(x[0], y[0])
                                   : fmax(x[1] - x[0], y[1] - y[0]);
        out->seconds[kind][i * (size_t)iters + (size_t)it] = t;
      }
  }
  return GS_OK;
}

/* Measures the plan's pairs into *out. */
static gs_status measure_plan(const gs_check_pairs_options *o, const world_view *w,
                              const plan *p, gs_check_pairs_set *out) {
  const size_t per = p->per * 2 * (size_t)o->iters * 2;
  double *all = calloc(w->ranks * per + 1, sizeof *all);
  gs_status st = all ? GS_OK : gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  if (st == GS_OK) st = run_ranks(o, w, p, all);
  if (st == GS_OK) st = collect(p, o->iters, all, out);
  free(all);
  return st;
}

/* The partner of unit u in round r of the schedule: the tournament of
 * ranks, or the bisection of nodes. */
static int unit_partner(int nodes, size_t units, size_t r, size_t u) {
  return nodes ? gs_pairs_bisection_partner(units, r, u) : gs_pairs_tournament_partner(units, r, u);
}

/* The rounds' plan: each round's pairs of units between their measuring
 * ranks, split into slots on hosts with too few cores for all at once (CPU
 * ranks; a round's GPU pairs run at once, each on its own two GPUs), in
 * the order of their steps. */
static gs_status plan_rounds(const world_view *w, gs_check_pairs_times *t, plan *p) {
  const size_t units = t->n_units, half = units / 2 + 1;
  GS_TRY(plan_alloc(p, units * t->rounds / 2 + 1));
  int *scratch = malloc(half * (w->n_real + 1) * sizeof *scratch);
  int *pair = malloc(4 * half * sizeof *pair); /* a round's ua, ub, ra, rb */
  size_t *slot = malloc(half * sizeof *slot);
  gs_status st = scratch && pair && slot ? GS_OK
                                         : gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  int *ua = pair, *ub = pair + half, *ra = pair + 2 * half, *rb = pair + 3 * half;
  p->n_rounds = t->rounds;
  for (size_t r = 0; st == GS_OK && r < t->rounds; r++) {
    size_t n = 0;
    for (size_t u = 0; u < units; u++) {
      const int q = unit_partner(t->nodes, units, r, u);
      if (q < 0 || (size_t)q < u) continue;
      ua[n] = (int)u;
      ub[n] = q;
      ra[n] = w->lead[u];
      rb[n++] = w->lead[q];
    }
    size_t slots = n > 0;
    for (size_t i = 0; w->cuda && i < n; i++) slot[i] = 0;
    if (!w->cuda) slots = gs_pairs_slots(n, ra, rb, w->real_of, w->cores, w->n_real, scratch, slot);
    for (size_t s = 0; s < slots; s++)
      for (size_t i = 0; i < n; i++) {
        if (slot[i] != s) continue;
        p->ua[p->n] = ua[i];
        p->ub[p->n] = ub[i];
        p->ra[p->n] = ra[i];
        p->rb[p->n] = rb[i];
        p->round[p->n] = r;
        p->step[p->n++] = p->n_steps + s;
      }
    p->n_steps += slots;
  }
  t->slots = p->n_steps;
  free(scratch);
  free(pair);
  free(slot);
  if (st == GS_OK) st = plan_places(p, w);
  if (st != GS_OK) plan_free(p);
  return st;
}

/* 1 when a pair before pair i of the plan is in round r with a rank of
 * pair i. */
static int round_taken(const plan *p, size_t i, size_t r) {
  for (size_t k = 0; k < i; k++)
    if (p->round[k] == r && (p->ra[k] == p->ra[i] || p->ra[k] == p->rb[i] ||
                             p->rb[k] == p->ra[i] || p->rb[k] == p->rb[i]))
      return 1;
  return 0;
}

/* The confirming round's plan: each pair of units alone, in its own
 * step. CPU ranks: each pair in a round (a group split) of its own. GPU
 * ranks share the rounds where their pairs are disjoint (each pair into the
 * first round free of both its ranks): a split of a GPU world makes NCCL
 * communicators, which takes far longer than the pair's exchanges. */
static gs_status plan_alone(const world_view *w, const gs_check_pairs_times *t,
                            const gs_check_pairs_list *l, plan *p) {
  GS_TRY(plan_alloc(p, l->n));
  for (size_t i = 0; i < l->n; i++) {
    const int a = l->a[i] < l->b[i] ? l->a[i] : l->b[i], b = l->a[i] < l->b[i] ? l->b[i] : l->a[i];
    if (a < 0 || a == b || (size_t)b >= t->n_units)
      GS_BUG("a confirming pair (%d, %d) of %zu units", l->a[i], l->b[i], t->n_units);
    p->ua[i] = a;
    p->ub[i] = b;
    p->ra[i] = w->lead[a];
    p->rb[i] = w->lead[b];
    p->step[i] = i;
    size_t r = w->cuda ? 0 : i;
    while (w->cuda && round_taken(p, i, r)) r++;
    p->round[i] = r;
    if (r + 1 > p->n_rounds) p->n_rounds = r + 1;
  }
  p->n = p->n_steps = l->n;
  gs_status st = plan_places(p, w);
  if (st != GS_OK) plan_free(p);
  return st;
}

/* What every process tells the others of itself. */
typedef struct {
  char name[GS_PAIRS_HOST_MAX]; /* its host as the job sees it */
  char real[GS_PAIRS_HOST_MAX]; /* the machine's host name */
  int cores;
  int device;                   /* its GPU (cuda; under a launcher) */
  char pci[GS_PAIRS_PCI_MAX];
} process_card;

/* The PCI bus id of CUDA device `device` into pci ("?" where CUDA cannot
 * tell). */
static void gpu_pci(int device, char pci[GS_PAIRS_PCI_MAX]) {
  if (cudaDeviceGetPCIBusId(pci, GS_PAIRS_PCI_MAX, device) != cudaSuccess)
    snprintf(pci, GS_PAIRS_PCI_MAX, "?");
}

/* The job's nodes and real hosts from every process's card (gathered):
 * host[k] of node k in the order first met, node_of[rank], lead[k] its
 * lowest rank; one node in threads mode. Tests make each process its own
 * host (GPUSCALE_TEST_SEPARATE_HOSTS=1); their real host stays the one
 * they share, with its cores. */
static gs_status find_nodes(world_view *w, gs_check_pairs_times *out) {
  const int mpi = w->job->launch == GS_COMM_LAUNCH_MPI;
  process_card mine = {.cores = w->n_cpus, .device = w->device[mpi ? w->job->process_rank : 0]};
  snprintf(mine.real, sizeof mine.real, "%s", gs_hostname());
  if (w->cuda && mpi) gpu_pci(mine.device, mine.pci);
  if (gs_comm_separate_hosts() && mpi)
    snprintf(mine.name, sizeof mine.name, "%.40s-p%d", gs_hostname(), w->job->process_rank);
  else
    snprintf(mine.name, sizeof mine.name, "%s", gs_hostname());
  const size_t n_cards = mpi ? w->ranks : 1;
  process_card *cards = calloc(n_cards, sizeof *cards);
  int *real_seen = calloc(n_cards, sizeof *real_seen);
  gs_status st = cards && real_seen ? GS_OK : gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  if (st == GS_OK && mpi) st = gs_comm_world_allgather(w->world, &mine, sizeof mine, cards);
  if (st == GS_OK && !mpi) cards[0] = mine;
  out->n_nodes = 0;
  w->n_real = 0;
  for (size_t k = 0; st == GS_OK && k < w->ranks; k++) {
    const process_card *c = &cards[mpi ? k : 0];
    size_t n = 0;
    while (n < out->n_nodes && strcmp(out->host[n], c->name) != 0) n++;
    if (n == out->n_nodes) {
      w->lead[n] = (int)k;
      memcpy(out->host[out->n_nodes++], c->name, GS_PAIRS_HOST_MAX);
    }
    w->node_of[k] = out->node_of[k] = (int)n;
    if (w->cuda && mpi) {
      w->device[k] = out->device[k] = c->device;
      memcpy(out->pci[k], c->pci, GS_PAIRS_PCI_MAX);
    } else if (w->cuda) {
      out->device[k] = w->device[k];
      gpu_pci(w->device[k], out->pci[k]);
    }
    size_t h = 0;
    while (h < w->n_real && strcmp(cards[real_seen[h]].real, c->real) != 0) h++;
    if (h == w->n_real) {
      real_seen[w->n_real++] = mpi ? (int)k : 0;
      w->cores[h] = c->cores;
    }
    w->real_of[k] = (int)h;
  }
  // The host with the most ranks per core.
  for (size_t h = 0; st == GS_OK && h < w->n_real; h++) {
    int ranks = 0;
    for (size_t k = 0; k < w->ranks; k++) ranks += w->real_of[k] == (int)h;
    if (h == 0 || (double)ranks / w->cores[h] >
                      (double)out->busiest_ranks / out->busiest_cores) {
      out->busiest_ranks = ranks;
      out->busiest_cores = w->cores[h];
      snprintf(out->busiest_host, sizeof out->busiest_host, "%s", cards[real_seen[h]].real);
    }
  }
  free(cards);
  free(real_seen);
  return st;
}

/* The slow factor and the lateness of each rank; by nodes a leader takes
 * its node's slowest (latest) rank's. */
static void slow_factors(const gs_check_pairs_options *o, const world_view *w, int nodes) {
  for (size_t k = 0; k < w->ranks; k++) {
    w->slow[k] = gs_fault_slow_factor(o->faults, (int)k);
    w->late[k] = gs_fault_late_seconds(o->faults, (int)k);
  }
  for (size_t k = 0; nodes && k < w->ranks; k++) {
    const int lead = w->lead[w->node_of[k]];
    if (w->slow[k] > w->slow[lead]) w->slow[lead] = w->slow[k];
    if (w->late[k] > w->late[lead]) w->late[lead] = w->late[k];
  }
}

/* The measurement in a started world: the rounds, then the confirming
 * round. */
static gs_status measure_world(const gs_check_pairs_options *o, world_view *w,
                               gs_check_pairs_times *out) {
  out->process_rank = w->job->process_rank;
  out->n_ranks = w->ranks;
  GS_TRY(find_nodes(w, out));
  out->nodes = out->n_nodes >= 2;
  out->n_units = out->nodes ? out->n_nodes : w->ranks;
  out->rounds = out->nodes ? gs_pairs_bisection_rounds(out->n_units)
                           : gs_pairs_tournament_rounds(out->n_units);
  for (size_t u = 0; !out->nodes && u < w->ranks; u++) w->lead[u] = (int)u;
  slow_factors(o, w, out->nodes);
  plan p;
  GS_TRY(plan_rounds(w, out, &p));
  gs_status st = measure_plan(o, w, &p, &out->pairs);
  plan_free(&p);
  gs_check_pairs_list again = {0};
  if (st == GS_OK && o->confirm) st = o->confirm(o->confirm_ctx, out, &again);
  if (st == GS_OK && again.n > 0) st = plan_alone(w, out, &again, &p);
  if (st == GS_OK && again.n > 0) {
    st = measure_plan(o, w, &p, &out->confirm);
    plan_free(&p);
  }
  free(again.a);
  free(again.b);
  return st;
}

/* The CPUs this process may run on (its affinity mask, which a cpuset or
 * taskset narrows from the host's logical cores), in order. */
static gs_status allowed_cpus(world_view *w) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    CPU_ZERO(&set);
    for (long c = 0; c < online && c < CPU_SETSIZE; c++) CPU_SET((int)c, &set);
  }
  w->cpus = malloc(CPU_SETSIZE * sizeof *w->cpus);
  if (!w->cpus) return gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  w->n_cpus = 0;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set)) w->cpus[w->n_cpus++] = c;
  if (w->n_cpus == 0) w->cpus[w->n_cpus++] = 0;
  return GS_OK;
}

/* See check_pairs.h. */
gs_status gs_check_pairs_measure(const gs_check_pairs_options *o, gs_check_pairs_times *out) {
  memset(out, 0, sizeof *out);
  double load[1];
  out->load_average = getloadavg(load, 1) == 1 ? load[0] : NAN;
  gs_comm_job job;
  gs_comm_job_detect(&job);
  const int mpi = job.launch == GS_COMM_LAUNCH_MPI, cuda = o->backend == GS_BACKEND_CUDA;
  world_view w = {.job = &job, .local = mpi ? 1 : o->ranks,
                  .ranks = mpi ? (size_t)job.process_count : (size_t)o->ranks, .cuda = cuda,
                  .pin_refused = &out->pin_refused};
  out->cuda = cuda;
  if (w.ranks < 2)
    return gs_error(GS_ERR_USAGE, cuda ? "check pairs: needs 2 or more GPUs (--gpus, or mpirun -np)"
                                       : "check pairs: needs 2 or more ranks (--ranks, or mpirun -np)");
  if (cuda && (o->n_devices < 1 || (!mpi && o->n_devices != o->ranks)))
    GS_BUG("check pairs on %d GPUs for %d rank threads", o->n_devices, o->ranks);
  GS_TRY(gs_fault_check_ranks(o->faults, (int)w.ranks));
  GS_TRY(gs_comm_job_start(&job));
  w.node_of = calloc(w.ranks, sizeof *w.node_of);
  w.lead = calloc(w.ranks, sizeof *w.lead);
  w.real_of = calloc(w.ranks, sizeof *w.real_of);
  w.cores = calloc(w.ranks, sizeof *w.cores);
  w.device = calloc(w.ranks, sizeof *w.device);
  w.slow = calloc(w.ranks, sizeof *w.slow);
  w.late = calloc(w.ranks, sizeof *w.late);
  out->host = calloc(w.ranks, sizeof *out->host);
  out->node_of = calloc(w.ranks, sizeof *out->node_of);
  out->device = calloc(w.ranks, sizeof *out->device);
  out->pci = calloc(w.ranks, sizeof *out->pci);
  gs_status st = GS_OK;
  if (!w.node_of || !w.lead || !w.real_of || !w.cores || !w.device || !w.slow || !w.late ||
      !out->host || !out->node_of || !out->device || !out->pci)
    st = gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  // Each rank's GPU: threads mode, rank k drives devices[k]; under a
  // launcher this process drives the GPU its local rank picks.
  const int me = mpi ? job.process_rank : 0;
  for (size_t k = 0; st == GS_OK && k < w.ranks; k++) w.device[k] = -1;
  for (int k = 0; st == GS_OK && cuda && k < w.local; k++)
    w.device[me + k] = o->devices[mpi ? job.local_rank % o->n_devices : k];
  gs_comm_world_config wc = {.backend = o->backend, .local_ranks = w.local,
                             .devices = cuda && st == GS_OK ? &w.device[me] : NULL,
                             .timeout_seconds = o->timeout, .faults = o->faults};
  if (st == GS_OK) st = gs_comm_world_create(&job, &wc, &w.world);
  if (st == GS_OK) st = allowed_cpus(&w);
  if (st == GS_OK) st = measure_world(o, &w, out);
  free(w.cpus);
  free(w.node_of);
  free(w.lead);
  free(w.real_of);
  free(w.cores);
  free(w.device);
  free(w.slow);
  free(w.late);
  gs_comm_world_destroy(w.world);
  gs_comm_job_finish(&job);
  return st;
}

static void set_free(gs_check_pairs_set *s) {
  free(s->a);
  free(s->b);
  free(s->seconds[0]);
  free(s->seconds[1]);
}

/* See check_pairs.h. */
void gs_check_pairs_times_free(gs_check_pairs_times *t) {
  if (!t) return;
  set_free(&t->pairs);
  set_free(&t->confirm);
  free(t->host);
  free(t->node_of);
  free(t->device);
  free(t->pci);
  memset(t, 0, sizeof *t);
}
