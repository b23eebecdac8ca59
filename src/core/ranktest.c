/* Mann-Whitney U test: mid-ranks of the pooled samples, U of the first
 * sample, and its two-sided p-value (exact distribution by recurrence for
 * small samples without ties; else the normal approximation with tie and
 * continuity correction). See docs/compare.md. */
#include "core/ranktest.h"

#include <math.h>
#include <stdlib.h>

#include "core/stats.h"

/* P(U <= u) and P(U >= u) under the null hypothesis for sizes m, n, from
 * counts f(m, n, k) = f(m - 1, n, k - n) + f(m, n - 1, k). */
static gs_status exact_tails(size_t m, size_t n, double u, double *low, double *high) {
  size_t kmax = m * n;
  size_t stride_n = kmax + 1, stride_m = (n + 1) * stride_n;
  double *f = calloc((m + 1) * stride_m, sizeof *f);
  if (!f) return gs_error(GS_ERR_NOMEM, "Mann-Whitney test: out of memory");
  for (size_t i = 0; i <= m; i++)
    for (size_t j = 0; j <= n; j++) {
      double *cell = f + i * stride_m + j * stride_n;
      if (i == 0 || j == 0) {
        cell[0] = 1.0;
        continue;
      }
      const double *drop_a = f + (i - 1) * stride_m + j * stride_n;  // largest is from a: +j pairs
      const double *drop_b = f + i * stride_m + (j - 1) * stride_n;
      for (size_t k = 0; k <= i * j; k++)
        cell[k] = (k >= j ? drop_a[k - j] : 0.0) + (k <= i * (j - 1) ? drop_b[k] : 0.0);
    }
  const double *dist = f + m * stride_m + n * stride_n;
  double total = 0, below = 0, above = 0;
  for (size_t k = 0; k <= kmax; k++) {
    total += dist[k];
    if ((double)k <= u) below += dist[k];
    if ((double)k >= u) above += dist[k];
  }
  free(f);
  *low = below / total;
  *high = above / total;
  return GS_OK;
}

/* See ranktest.h. */
gs_status gs_ranktest_mann_whitney(const double *a, size_t na, const double *b, size_t nb,
                                   gs_ranktest *out) {
  if (na == 0 || nb == 0)
    return gs_error(GS_ERR_USAGE, "Mann-Whitney test: a sample is empty (%zu and %zu values)", na,
                    nb);
  size_t n = na + nb;
  // Each sample sorted on its own (radix sort, gs_stats_sort), then merged:
  // every run of equal values, from either side, shares the mean of its ranks.
  double *all = malloc(n * sizeof *all);
  if (!all) return gs_error(GS_ERR_NOMEM, "Mann-Whitney test: out of memory");
  for (size_t i = 0; i < n; i++) {
    all[i] = i < na ? a[i] : b[i - na];
    if (!isfinite(all[i])) {
      free(all);
      return gs_error(GS_ERR_USAGE, "Mann-Whitney test: a value is not finite");
    }
  }
  double *sa = all, *sb = all + na;
  gs_stats_sort(sa, na);
  gs_stats_sort(sb, nb);
  out->median_a = na % 2 ? sa[na / 2] : 0.5 * (sa[na / 2 - 1] + sa[na / 2]);
  out->median_b = nb % 2 ? sb[nb / 2] : 0.5 * (sb[nb / 2 - 1] + sb[nb / 2]);
  double rank_sum = 0.0, tie_term = 0.0;
  size_t i = 0, j = 0;
  while (i < na || j < nb) {
    double v = j == nb || (i < na && sa[i] <= sb[j]) ? sa[i] : sb[j];
    size_t ia = i, jb = j;
    while (i < na && sa[i] == v) i++;
    while (j < nb && sb[j] == v) j++;
    const size_t before = ia + jb, run = (i - ia) + (j - jb);
    double mid = 0.5 * (double)(before + 1 + before + run);  // ranks before+1 .. before+run
    rank_sum += (double)(i - ia) * mid;
    double t = (double)run;
    tie_term += t * t * t - t;
  }
  free(all);
  double n1 = (double)na, n2 = (double)nb, total = (double)n;
  out->u = rank_sum - n1 * (n1 + 1.0) / 2.0;
  // The side the test leans to: U above its null mean n1 n2 / 2 means the
  // first sample's values tend to be the larger ones.
  out->direction = out->u > n1 * n2 / 2.0 ? 1 : out->u < n1 * n2 / 2.0 ? -1 : 0;
  out->z = 0.0;
  out->exact = 0;
  if (tie_term == 0.0 && na <= GS_RANKTEST_EXACT_MAX && nb <= GS_RANKTEST_EXACT_MAX) {
    double low = 1.0, high = 1.0;
    gs_status st = exact_tails(na, nb, out->u, &low, &high);
    if (st != GS_OK) return st;
    out->p = fmin(1.0, 2.0 * fmin(low, high));
    out->exact = 1;
    return GS_OK;
  }
  double mean = n1 * n2 / 2.0;
  double var = n1 * n2 / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
  if (!(var > 0)) {  // every value equal: no evidence of a difference
    out->p = 1.0;
    return GS_OK;
  }
  double d = fabs(out->u - mean) - 0.5;
  if (d < 0) d = 0;
  out->z = (out->u >= mean ? d : -d) / sqrt(var);
  out->p = fmin(1.0, erfc(fabs(out->z) / sqrt(2.0)));
  return GS_OK;
}
