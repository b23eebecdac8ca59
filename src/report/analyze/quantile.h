/* Intervals of percentiles between two sets of samples, and the
 * per-request times of a measurement they are drawn from (compare's tail
 * rows, the tensor-against-data-parallel advice). docs/statistics.md. */
#ifndef GS_REPORT_ANALYZE_QUANTILE_H
#define GS_REPORT_ANALYZE_QUANTILE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/status.h"

/* The 95% interval of q-th percentile(b) / q-th percentile(a) (q in
 * [0, 100], Hyndman-Fan 7): a percentile bootstrap with
 * GS_STATS_BOOTSTRAP_REPLICATES replicates and GS_STATS_BOOTSTRAP_SEED,
 * each replicate drawing na from `a` and nb from `b` with replacement.
 * Both NaN with fewer than 2 samples a side, a non-positive percentile,
 * or no memory. Deterministic; thread-safe. */
void gs_report_percentile_interval(const double *a, size_t na, const double *b, size_t nb,
                                   double q, double *low, double *high);

/* The `field` ("ttft_seconds", "tpot_seconds") of every ok, not cold
 * request of measurement `m` (the requests the report's statistics use),
 * into a new array *out (the caller frees it, also on failure) of *n;
 * GS_ERR_NOMEM. */
gs_status gs_report_request_times(const cJSON *m, const char *field, double **out, size_t *n);

#endif
