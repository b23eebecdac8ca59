/* Straggler scores of a multi-rank measurement: each rank's relative score
 * (its time against the median of the other ranks in the same iterations)
 * with an interval simultaneous over the ranks from a block bootstrap, and
 * individual score (its time against its own best sustained time) with a
 * 95% interval from core/stats' bootstrap, and the rule that names a
 * straggler only when the relative interval clears the threshold. The
 * definitions are in docs/statistics.md, "Straggler scores". */
#ifndef GS_STRAGGLER_H
#define GS_STRAGGLER_H

#include <stddef.h>

#include "core/status.h"

/* A rank is named a straggler when the lower end of its relative score's
 * interval is above 1 + GS_STRAGGLER_THRESHOLD (4% slower than the median
 * of the others, with 95% confidence over all the ranks at once). */
#define GS_STRAGGLER_THRESHOLD 0.04
/* The individual score's best sustained time is the smallest mean of
 * GS_STRAGGLER_WINDOW consecutive iterations of one run (the whole run when
 * it is shorter). */
#define GS_STRAGGLER_WINDOW 8

/* One run: n_ranks ranks' times of the same n_iters iterations,
 * times[k][i] seconds of rank k in iteration i (finite, > 0). */
typedef struct {
  size_t n_iters;
  const double *const *times;
} gs_straggler_run;

/* One rank's scores; NaN where there is nothing to compute (an interval
 * needs at least 2 iterations). */
typedef struct {
  size_t n;                 /* iterations scored (over all runs) */
  double relative;          /* mean over iterations of t / median of the others' t;
                               its interval: relative -+ gs_straggler_z(n_ranks) x the
                               block bootstrap's standard error */
  double relative_low, relative_high;
  double individual;        /* mean t / best sustained window mean */
  double individual_low, individual_high;
  int straggler;            /* 1: relative_low > the judgement's threshold, on a host where
                               ranks may be named (gs_straggler_judge) */
} gs_straggler_score;

typedef struct {
  size_t n_ranks;
  gs_straggler_score *scores; /* n_ranks entries; owned */
  double threshold;           /* what a relative score's low end must clear to name a rank */
  int named;                  /* the straggler with the largest relative score; -1 nobody */
  int grouped;                /* 1: each rank was scored against the others of its peer
                                 group only (gs_straggler_compute_peers) */
  int suspect;                /* a judgement that names nobody where a rank's low end clears
                                 the threshold (its ranks shared the cores): the rank with the
                                 largest relative score among those (the judgement is
                                 inconclusive); else -1 */
} gs_straggler;

/* The host a measurement's judgement is made for: its busiest host and
 * what the document recorded of it. */
typedef struct {
  const char *host;    /* the host running the most ranks, or NULL (unknown) */
  int cpu;             /* 1: the ranks compute on the CPU (the cpu backend) */
  int ranks;           /* the most ranks on one host */
  int cores;           /* that host's logical cores; 0 unknown */
  double load_average; /* its 1-minute load average as recorded; NaN unknown */
} gs_straggler_host;

/* Scores the n_ranks (>= 2) ranks of runs[0..n_runs) (runs with fewer than
 * 1 iteration are left out) and judges them for an unknown host
 * (gs_straggler_judge(out, NULL)). GS_ERR_USAGE for fewer than 2 ranks or
 * a time that is not finite and positive, GS_ERR_NOMEM. On success *out
 * owns its scores (gs_straggler_free). Thread-safe. */
gs_status gs_straggler_compute(const gs_straggler_run *runs, size_t n_runs, size_t n_ranks,
                               gs_straggler *out);

/* As gs_straggler_compute, where ranks that do different work are not
 * peers (the stages of a pipeline): rank k's relative score is against the
 * median of the other ranks j with peer_group[j] == peer_group[k] in the
 * same iterations, NaN (never named) where it has no such peer; its
 * individual score is as before. peer_group NULL: every rank one group. */
gs_status gs_straggler_compute_peers(const gs_straggler_run *runs, size_t n_runs, size_t n_ranks,
                                     const size_t *peer_group, gs_straggler *out);

/* 1 when the CPU ranks of h's busiest host outnumber its logical cores
 * (both known): the scheduler's shares of the cores then decide each
 * rank's time, for a whole run. */
int gs_straggler_shared_cores(const gs_straggler_host *h);

/* Judges the scores of `s` for host h (NULL: unknown) at 1 +
 * GS_STRAGGLER_THRESHOLD: a rank whose relative low end is above it is a
 * straggler, `named` the one with the largest relative score (the lowest
 * rank on a tie). Where gs_straggler_shared_cores(h) nobody is named: a
 * clean rank there scored as far above 1 as a slowed one (1.33x [1.26]
 * against 1.41-1.63x; docs/stragglers.md), so the rank that would have
 * been named is the `suspect` of an inconclusive judgement instead. */
void gs_straggler_judge(gs_straggler *s, const gs_straggler_host *h);

/* "4 ranks share 2 CPUs of host vm (load average 7.2)" into buf where
 * gs_straggler_shared_cores(h) (the load average where known), else "". */
void gs_straggler_host_text(const gs_straggler_host *h, char *buf, size_t size);

/* The reason of an inconclusive judgement (s->suspect >= 0) into buf:
 * "4 ranks share 2 CPUs of host vm (load average 7.2): rank 1 scored
 * 1.31x [1.12, 1.50], above 1.04, and the scheduler's shares of the CPUs
 * can explain it"; "" when the judgement is not inconclusive. */
void gs_straggler_reason(const gs_straggler *s, const gs_straggler_host *h, char *buf,
                         size_t size);

/* The block length of the relative score's bootstrap for a run of n
 * iterations: ceil(n^(1/3)), at least 1. */
size_t gs_straggler_block_length(size_t n);

/* The normal quantile of 1 - 0.025 / n_ranks (1.96 for 1 rank, 2.50 for
 * 4): the relative intervals of n_ranks ranks then hold together with 95%
 * confidence (Bonferroni). */
double gs_straggler_z(size_t n_ranks);

/* Frees what `s` owns and zeroes it (named -1). Safe on a zeroed struct. */
void gs_straggler_free(gs_straggler *s);

#endif
