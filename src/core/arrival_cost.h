/* The cost of recording arrival times, measured inside one process and one
 * communicator (docs/stragglers.md, "Arrival skew", its cost): the timed
 * iterations of a collective run in blocks, the recorder on in some and
 * off in the others, in the Thue-Morse order (quartets ABBA, BAAB, BAAB,
 * ABBA, ...); each quartet is one pair (its two recording blocks against
 * its two others, which cancels a drift linear over the quartet), and the
 * cost is the median of the pairs' relative differences with its 95%
 * distribution-free interval (gs_stats_median_interval), decided against
 * a target. Separate processes with and without recording differ among
 * themselves by more than the cost to be shown; blocks side by side in one
 * process share their clocks, their placement and the GPU's state. */
#ifndef GS_ARRIVAL_COST_H
#define GS_ARRIVAL_COST_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* The target of issue 29: recording costs under 1% of the collective. */
#define GS_ARRIVAL_COST_TARGET 0.01
/* Pairs below which the interval covers less than 95% ([min, max] of 5
 * pairs covers 93.75%, of 6 pairs 96.9%). */
#define GS_ARRIVAL_COST_MIN_PAIRS 6
/* Pairs measured when the iteration count is not given. */
#define GS_ARRIVAL_COST_DEFAULT_PAIRS 24

typedef enum {
  GS_ARRIVAL_COST_UNDER = 0,   /* the interval lies below the target */
  GS_ARRIVAL_COST_OVER,        /* the interval lies above it */
  GS_ARRIVAL_COST_UNDECIDED    /* the interval holds the target */
} gs_arrival_cost_verdict;

typedef struct {
  size_t block;                /* iterations per block (its first one not counted) */
  size_t pairs;                /* quartets of blocks with a positive time without recording */
  double cost, low, high;      /* median relative difference and its 95% interval (0.01: 1%) */
  double on_seconds, off_seconds; /* mean time per iteration with and without recording */
  double min, max;             /* the smallest and largest pair's difference */
  double target;               /* GS_ARRIVAL_COST_TARGET */
  gs_arrival_cost_verdict verdict;
} gs_arrival_cost;

/* Whether block `index` (from 0) of a cost measurement records arrival
 * times: the Thue-Morse sequence's 0s (an even count of set bits), so
 * that every aligned quartet holds two recording blocks and two others. */
int gs_arrival_cost_records(uint64_t index);

/* The cost from the per-iteration times step_seconds[0..n) (the slowest
 * rank's time of each iteration, blocks of `block` in order, recording as
 * gs_arrival_cost_records says): a block's time is the mean of its
 * iterations but the first (the ranks' skew leaving the barrier that
 * begins it); block >= 2 and n a multiple of 4 * block (GS_BUG
 * otherwise). A quartet whose blocks without recording have no positive
 * finite mean is left out; GS_ERR_UNSUPPORTED naming the count when fewer
 * than GS_ARRIVAL_COST_MIN_PAIRS are left, GS_ERR_NOMEM. Thread-safe. */
gs_status gs_arrival_cost_of(const double *step_seconds, size_t n, size_t block,
                             gs_arrival_cost *out);

/* "under", "over" or "undecided". */
const char *gs_arrival_cost_verdict_name(gs_arrival_cost_verdict verdict);

#endif
