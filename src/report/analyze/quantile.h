/* Intervals of ratios the bootstrap of core/stats cannot draw: of
 * percentiles between two sets of samples (compare's tail rows, the
 * tensor-against-data-parallel advice) with the per-request times they
 * are drawn from, and of two ranks' throughputs from their summaries
 * (the node verdict, the ranks' spread). docs/statistics.md. */
#ifndef GS_REPORT_ANALYZE_QUANTILE_H
#define GS_REPORT_ANALYZE_QUANTILE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "report/read/row.h"

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

/* The 95% interval of `ratio`, the throughput of rank `a` over rank `b`'s
 * (items / mean step each), from each rank's count n, mean m and standard
 * deviation s of its steps (a report keeps no more once the samples are
 * dropped): the bootstrap's large-sample limit, ratio x exp(+-1.96
 * sqrt(c_a^2 / n_a + c_b^2 / n_b)), c = s / m. NaN bounds when a rank has
 * fewer than 2 samples, a mean or the ratio is not positive. */
void gs_report_rank_ratio_interval(const gs_report_rank *a, const gs_report_rank *b, double ratio,
                                   double *low, double *high);

/* The 95% interval of row->spread_ratio (the fastest rank's throughput over
 * the slowest's) by gs_report_rank_ratio_interval; NaN bounds for
 * request-based rows (a rank's tokens/s is no mean of its samples) and
 * rows of fewer than two ranks with a throughput. */
void gs_report_spread_interval(const gs_report_row *row, double *low, double *high);

#endif
