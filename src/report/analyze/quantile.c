/* Intervals of percentiles and the per-request times they are drawn from
 * (the change of a p99 between two documents in compare's tail rows, of a
 * TPOT median between two series in the tensor-against-data-parallel
 * advice), and of two ranks' throughputs from their summaries. Methods in
 * docs/statistics.md, "Intervals of ratios". */
#include "report/analyze/quantile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/rng.h"
#include "core/stats.h"

/* The k-th smallest of v[0..n) (k < n), v reordered: Hoare's selection
 * with the middle element as pivot, O(n) on average, so that a replicate
 * of 10^5 requests costs no sort. */
static double select_kth(double *v, size_t n, size_t k) {
  size_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const double pivot = v[lo + (hi - lo) / 2];
    size_t i = lo, j = hi;
    while (i <= j) {
      while (v[i] < pivot) i++;
      while (v[j] > pivot) j--;
      if (i <= j) {
        const double t = v[i];
        v[i] = v[j];
        v[j] = t;
        i++;
        if (j == 0) break;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return v[k];
  }
  return v[k];
}

/* The q-th percentile (Hyndman-Fan 7, as gs_stats_percentile_sorted) of
 * `n` draws with replacement from `v`, drawn into `work`. */
static double resampled_percentile(gs_rng *rng, const double *v, size_t n, double *work,
                                   double q) {
  for (size_t i = 0; i < n; i++) work[i] = v[gs_rng_below(rng, n)];
  const double h = (double)(n - 1) * q / 100.0;
  const size_t lo = (size_t)floor(h);
  if (lo >= n - 1) return select_kth(work, n, n - 1);
  const double x = select_kth(work, n, lo);
  // After the selection everything above position lo is >= x: the next
  // order statistic is their smallest.
  double next = work[lo + 1];
  for (size_t i = lo + 2; i < n; i++)
    if (work[i] < next) next = work[i];
  return x + (h - (double)lo) * (next - x);
}

/* See quantile.h. */
void gs_report_percentile_interval(const double *a, size_t na, const double *b, size_t nb,
                                   double q, double *low, double *high) {
  *low = *high = NAN;
  if (na < 2 || nb < 2) return;
  const size_t reps = GS_STATS_BOOTSTRAP_REPLICATES;
  double *work = malloc((na > nb ? na : nb) * sizeof *work);
  double *ratio = malloc(reps * sizeof *ratio);
  gs_rng rng;
  gs_rng_seed(&rng, GS_STATS_BOOTSTRAP_SEED, 0);
  size_t k = 0;
  for (size_t r = 0; work && ratio && r < reps; r++) {
    double pa = resampled_percentile(&rng, a, na, work, q);
    double pb = resampled_percentile(&rng, b, nb, work, q);
    if (!(pa > 0.0) || !isfinite(pb)) break;
    ratio[k++] = pb / pa;
  }
  if (k == reps) {
    gs_stats_sort(ratio, k);
    *low = gs_stats_percentile_sorted(ratio, k, 2.5);
    *high = gs_stats_percentile_sorted(ratio, k, 97.5);
  }
  free(work);
  free(ratio);
}

/* See quantile.h. */
gs_status gs_report_request_times(const cJSON *m, const char *field, double **out, size_t *n) {
  size_t cap = 64;
  *n = 0;
  *out = malloc(cap * sizeof **out);
  if (!*out) return gs_error(GS_ERR_NOMEM, "out of memory");
  const cJSON *runs = gs_json_member(m, "runs");
  for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next) {
    const cJSON *ranks = gs_json_member(run, "ranks");
    for (const cJSON *rk = ranks ? ranks->child : NULL; rk; rk = rk->next) {
      const cJSON *reqs = gs_json_member(rk, "requests");
      for (const cJSON *q = cJSON_IsArray(reqs) ? reqs->child : NULL; q; q = q->next) {
        const char *status = gs_json_string_member(q, "status", "");
        double v = gs_json_number_member(q, field);
        if (strcmp(status, "ok") != 0 || cJSON_IsTrue(gs_json_member(q, "cold")) || !isfinite(v))
          continue;
        if (*n == cap) {
          double *grown = realloc(*out, 2 * cap * sizeof *grown);
          if (!grown) return gs_error(GS_ERR_NOMEM, "out of memory");
          *out = grown;
          cap *= 2;
        }
        (*out)[(*n)++] = v;
      }
    }
  }
  return GS_OK;
}

/* See quantile.h. */
void gs_report_rank_ratio_interval(const gs_report_rank *a, const gs_report_rank *b, double ratio,
                                   double *low, double *high) {
  *low = *high = NAN;
  if (a->n < 2 || b->n < 2 || !(a->mean > 0.0) || !(b->mean > 0.0) || !(ratio > 0.0)) return;
  const double ca = a->stddev / a->mean, cb = b->stddev / b->mean;
  const double spread = 1.96 * sqrt(ca * ca / (double)a->n + cb * cb / (double)b->n);
  *low = ratio * exp(-spread);
  *high = ratio * exp(spread);
}

/* See quantile.h. */
void gs_report_spread_interval(const gs_report_row *row, double *low, double *high) {
  const gs_report_rank *hi = NULL, *lo = NULL;
  *low = *high = NAN;
  for (size_t k = 0; k < row->n_ranks; k++) {
    const gs_report_rank *rk = &row->ranks[k];
    if (!isfinite(rk->throughput)) continue;
    if (!hi || rk->throughput > hi->throughput) hi = rk;
    if (!lo || rk->throughput < lo->throughput) lo = rk;
  }
  if (hi && lo && hi != lo && !row->requests.present)
    gs_report_rank_ratio_interval(hi, lo, row->spread_ratio, low, high);
}
