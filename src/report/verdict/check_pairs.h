/* Localization by pairs (docs/check.md, "Localization by pairs"): the
 * times of an exchange (a 2-rank all-reduce or a copy) measured on pairs
 * of units (GPUs of a node, or nodes) turned into a judgement by
 * elimination: a unit slow with every partner it was measured with is the
 * slow GPU or node; a pair slow while both its units are fine with others
 * is the slow link. Every pair's slowness is a ratio of medians with its
 * 95% interval against the fastest quarter of the pairs, and only an interval that
 * clears the threshold counts, so noise names nothing. Data in, data out:
 * a test or a fleet can judge pair times built by hand or stored. */
#ifndef GS_REPORT_VERDICT_CHECK_PAIRS_H
#define GS_REPORT_VERDICT_CHECK_PAIRS_H

#include <stddef.h>

#include "core/status.h"

/* A pair is slow when the low end of its ratio's 95% interval is above
 * 1 + GS_PAIRS_THRESHOLD: 30% slower than the reference pairs. */
#define GS_PAIRS_THRESHOLD 0.30

/* The times of one measured pair: n seconds (finite, > 0) of one kind of
 * exchange between units a and b (a != b). */
typedef struct {
  int a, b;
  const double *seconds;
  size_t n;
} gs_pairs_sample;

/* One pair's judgement. */
typedef struct {
  int a, b;
  double median;           /* seconds */
  double ratio, low, high; /* median / the reference pairs' median, 95% interval */
  int slow;                /* low > 1 + GS_PAIRS_THRESHOLD */
} gs_pairs_result;

typedef struct {
  size_t n_units;
  size_t n_pairs;
  gs_pairs_result *pairs; /* owned, in the order given */
  double reference;       /* the median of the reference pairs' times, seconds */
  int *unit_slow;         /* owned, n_units: 1 when the unit is named */
  size_t units_named, links_named;
  size_t undecided;       /* slow pairs whose cause cannot be told apart
                             (a unit measured with one partner only) */
} gs_pairs_verdict;

/* Judges `n` pairs of units 0 .. n_units-1. The reference is the set of
 * pairs whose median is at or below the 25th percentile of the pairs'
 * medians (the fastest pair when fewer than 6 pairs were measured, so that
 * one slow unit's pairs, half of 6 among 4 units, stay out of it). A unit
 * is named when it has 2 or more measured pairs and every one is slow; a
 * slow pair whose units are both unnamed is a link when each of its units
 * has another measured pair that is not slow, else undecided.
 * GS_ERR_USAGE for a pair that names a unit out of range, twice the same
 * unit, or has a time that is not positive; GS_ERR_NOMEM. *out owned by the
 * caller (gs_pairs_verdict_free). */
gs_status gs_pairs_judge(const gs_pairs_sample *pairs, size_t n, size_t n_units,
                         gs_pairs_verdict *out);

/* Frees what `v` owns and zeroes it; safe on a zeroed struct. */
void gs_pairs_verdict_free(gs_pairs_verdict *v);

#endif
