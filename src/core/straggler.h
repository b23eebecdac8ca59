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
  int straggler;            /* 1: relative_low > 1 + GS_STRAGGLER_THRESHOLD */
} gs_straggler_score;

typedef struct {
  size_t n_ranks;
  gs_straggler_score *scores; /* n_ranks entries; owned */
  int named;                  /* the straggler with the largest relative score; -1 nobody */
} gs_straggler;

/* Scores the n_ranks (>= 2) ranks of runs[0..n_runs) (runs with fewer than
 * 1 iteration are left out). GS_ERR_USAGE for fewer than 2 ranks or a time
 * that is not finite and positive, GS_ERR_NOMEM. On success *out owns its
 * scores (gs_straggler_free). Thread-safe. */
gs_status gs_straggler_compute(const gs_straggler_run *runs, size_t n_runs, size_t n_ranks,
                               gs_straggler *out);

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
