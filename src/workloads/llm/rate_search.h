/* The search for the highest arrival rate at which a percentile of the
 * request latencies meets the latency targets (core/slo): bracketing, then
 * interpolation with bisection as its safeguard, stopped early once the
 * bracket is narrow enough or the probes are spent. It knows nothing of
 * models or GPUs: a probe is a callback that measures one rate and says
 * how far from the targets it was (a gs_slo_goodput's worst
 * percentile_value over its bound). */
#ifndef GS_LLM_RATE_SEARCH_H
#define GS_LLM_RATE_SEARCH_H

#include <stddef.h>

#include "core/status.h"

#define GS_RATE_SEARCH_MAX_PROBES 8

/* Measures `rate` (requests/s) and sets *ratio to the worst of the
 * targeted percentiles over its target (<= 1: every target met; +inf:
 * requests that never finished). */
typedef gs_status (*gs_rate_probe_fn)(void *ctx, double rate, double *ratio);

typedef struct {
  double start;      /* first rate probed, > 0 */
  double tolerance;  /* stop once (high - low) <= tolerance x high; e.g. 0.05 */
  size_t max_probes; /* 1 .. GS_RATE_SEARCH_MAX_PROBES */
} gs_rate_search_spec;

typedef struct {
  size_t n;                                /* probes made */
  double rate[GS_RATE_SEARCH_MAX_PROBES];  /* in the order probed */
  double ratio[GS_RATE_SEARCH_MAX_PROBES]; /* what each probe said */
  double best;  /* highest rate that met the targets; NaN when none did */
  double low;   /* bracket: the highest rate met (= best), NaN when none */
  double high;  /* the lowest rate above `low` that missed; NaN when none did */
  int converged; /* 1: the bracket is within the tolerance */
  int unreachable; /* 1: stopped early: a lower rate missed as much as a higher one */
} gs_rate_search_result;

/* Runs the search with `probe`: from spec->start, rates grow (or shrink)
 * until one meets the targets and one above it misses (the next rate from
 * the two last ones: the rate where the inverse ratio, linear in the rate
 * for a queue whose latency grows as 1 / (1 - utilization), reaches 1;
 * the step kept between 1.5x and 8x); then each probe is placed just
 * beside the interpolated crossing, on the side that would close the
 * bracket, or at the bracket's middle when that falls outside it. Where a
 * load rather than the latency misses (a flat met side, missed ratios in
 * proportion to their rates, or the first bracket of one rate a side) the
 * crossing is the lowest missed rate over its ratio instead, and going
 * down from one rate missed by a finite ratio divides by it. Stops
 * when the bracket is within spec->tolerance, after spec->max_probes, or
 * early (unreachable) when, with no rate met yet, a lower rate's finite
 * ratio is not below 0.9 of the previous one's: the latency is not the queue's
 * (one request alone misses the targets), so no rate will meet them.
 * A failing probe ends the search with its status (the probes so far are
 * kept in *out). */
gs_status gs_rate_search_run(const gs_rate_search_spec *spec, gs_rate_probe_fn probe, void *ctx,
                             gs_rate_search_result *out);

#endif
