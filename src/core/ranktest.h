/* The Mann-Whitney U test (Wilcoxon rank-sum) of two independent samples:
 * exact for small samples without ties, else the normal approximation with
 * tie and continuity correction. Formulas in docs/compare.md. */
#ifndef GS_RANKTEST_H
#define GS_RANKTEST_H

#include <stddef.h>

#include "core/status.h"

/* Both samples at most this size and no ties: the exact distribution. */
#define GS_RANKTEST_EXACT_MAX 20

typedef struct {
  double u;       /* U of the first sample: pairs (a_i, b_j) with a_i > b_j, ties count 1/2 */
  double z;       /* normal approximation's z (continuity corrected, signed as U - mean); 0 when exact */
  double p;       /* two-sided p-value */
  int exact;      /* 1: p from the exact distribution */
  int direction;  /* +1: the first sample tends to be larger (U > na nb / 2), -1 smaller
                     (U < na nb / 2), 0 neither; a change's direction is this sign */
  double median_a, median_b; /* the samples' medians (the mean of the two middle values
                                of an even count, as gs_stats_compute's), from the sort
                                the ranks need anyway */
} gs_ranktest;

/* Tests a[0..na) against b[0..nb) (na, nb >= 1, all finite; not modified).
 * GS_ERR_USAGE for an empty sample or a non-finite value, GS_ERR_NOMEM. */
gs_status gs_ranktest_mann_whitney(const double *a, size_t na, const double *b, size_t nb,
                                   gs_ranktest *out);

#endif
