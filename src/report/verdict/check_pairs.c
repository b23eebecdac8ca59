/* Localization by pairs: pair times into slow units and slow links by
 * elimination (check_pairs.h; docs/check.md, "Localization by pairs"). */
#include "report/verdict/check_pairs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "core/stats.h"

/* The median of a pair's times (into a sorted copy at `buf`). */
static double pair_median(const gs_pairs_sample *p, double *buf) {
  memcpy(buf, p->seconds, p->n * sizeof *buf);
  gs_stats_sort(buf, p->n);
  return gs_stats_percentile_sorted(buf, p->n, 50.0);
}

/* The median of n draws with replacement from x (into buf). */
static double draw_median(const double *x, size_t n, double *buf, gs_rng *rng) {
  for (size_t i = 0; i < n; i++) buf[i] = x[gs_rng_below(rng, n)];
  gs_stats_sort(buf, n);
  return gs_stats_percentile_sorted(buf, n, 50.0);
}

/* The 95% percentile-bootstrap interval of median(x) / median(ref), each
 * side resampled on its own (GS_STATS_BOOTSTRAP_REPLICATES, fixed seed):
 * medians, because a CPU rank descheduled for a time slice makes one
 * exchange 10 times as long, which a mean carries and a median does not. */
static void median_ratio_interval(const double *x, size_t n, const double *ref, size_t n_ref,
                                  double *buf, double *low, double *high) {
  *low = *high = NAN;
  double *r = malloc(GS_STATS_BOOTSTRAP_REPLICATES * sizeof *r);
  if (!r) return;
  gs_rng rng;
  gs_rng_seed(&rng, GS_STATS_BOOTSTRAP_SEED, 30);
  for (size_t b = 0; b < GS_STATS_BOOTSTRAP_REPLICATES; b++) {
    const double a = draw_median(x, n, buf, &rng);
    r[b] = a / draw_median(ref, n_ref, buf, &rng);
  }
  gs_stats_sort(r, GS_STATS_BOOTSTRAP_REPLICATES);
  *low = gs_stats_percentile_sorted(r, GS_STATS_BOOTSTRAP_REPLICATES, 2.5);
  *high = gs_stats_percentile_sorted(r, GS_STATS_BOOTSTRAP_REPLICATES, 97.5);
  free(r);
}

/* Checks the pairs; the number of samples in all in *total. */
static gs_status check_pairs(const gs_pairs_sample *pairs, size_t n, size_t n_units,
                             size_t *most) {
  *most = 0;
  for (size_t i = 0; i < n; i++) {
    const gs_pairs_sample *p = &pairs[i];
    if (p->a < 0 || p->b < 0 || (size_t)p->a >= n_units || (size_t)p->b >= n_units ||
        p->a == p->b)
      return gs_error(GS_ERR_USAGE, "pairs: pair %zu (%d, %d) of %zu units", i, p->a, p->b,
                      n_units);
    if (p->n == 0 || !p->seconds)
      return gs_error(GS_ERR_USAGE, "pairs: pair (%d, %d) has no times", p->a, p->b);
    for (size_t k = 0; k < p->n; k++)
      if (!isfinite(p->seconds[k]) || p->seconds[k] <= 0.0)
        return gs_error(GS_ERR_USAGE, "pairs: time %zu of pair (%d, %d) is not positive", k + 1,
                        p->a, p->b);
    if (p->n > *most) *most = p->n;
  }
  return GS_OK;
}

/* Marks slow units and counts links and undecided pairs (check_pairs.h). */
static void eliminate(gs_pairs_verdict *v) {
  for (size_t u = 0; u < v->n_units; u++) {
    size_t measured = 0, slow = 0;
    for (size_t i = 0; i < v->n_pairs; i++) {
      const gs_pairs_result *p = &v->pairs[i];
      if ((size_t)p->a != u && (size_t)p->b != u) continue;
      measured++;
      slow += p->slow;
    }
    v->unit_slow[u] = measured >= 2 && slow == measured;
    v->units_named += (size_t)v->unit_slow[u];
  }
  for (size_t i = 0; i < v->n_pairs; i++) {
    const gs_pairs_result *p = &v->pairs[i];
    if (!p->slow || v->unit_slow[p->a] || v->unit_slow[p->b]) continue;
    // A link only when both its units were seen fine with another partner.
    int fine_a = 0, fine_b = 0;
    for (size_t j = 0; j < v->n_pairs; j++) {
      const gs_pairs_result *q = &v->pairs[j];
      if (j == i || q->slow) continue;
      fine_a |= q->a == p->a || q->b == p->a;
      fine_b |= q->a == p->b || q->b == p->b;
    }
    if (fine_a && fine_b)
      v->links_named++;
    else
      v->undecided++;
  }
}

/* See check_pairs.h. */
gs_status gs_pairs_judge(const gs_pairs_sample *pairs, size_t n, size_t n_units,
                         gs_pairs_verdict *out) {
  memset(out, 0, sizeof *out);
  size_t most = 0, total = 0;
  GS_TRY(check_pairs(pairs, n, n_units, &most));
  for (size_t i = 0; i < n; i++) total += pairs[i].n;
  most = total; /* the scratch holds the reference pairs' samples together */
  out->n_units = n_units;
  out->n_pairs = n;
  out->pairs = calloc(n ? n : 1, sizeof *out->pairs);
  out->unit_slow = calloc(n_units ? n_units : 1, sizeof *out->unit_slow);
  double *buf = malloc((most ? most : 1) * sizeof *buf);
  double *medians = malloc((n ? n : 1) * sizeof *medians);
  double *ref = malloc((most ? most : 1) * sizeof *ref);
  if (!out->pairs || !out->unit_slow || !buf || !medians || !ref) {
    free(buf);
    free(medians);
    free(ref);
    gs_pairs_verdict_free(out);
    return gs_error(GS_ERR_NOMEM, "pairs: out of memory for %zu pairs", n);
  }
  for (size_t i = 0; i < n; i++) {
    out->pairs[i] = (gs_pairs_result){.a = pairs[i].a, .b = pairs[i].b};
    out->pairs[i].median = medians[i] = pair_median(&pairs[i], buf);
  }
  size_t n_ref = 0;
  if (n > 0) {
    gs_stats_sort(medians, n);
    const double cut = n >= 6 ? gs_stats_percentile_sorted(medians, n, 25.0) : medians[0];
    for (size_t i = 0; i < n; i++)
      if (out->pairs[i].median <= cut)
        for (size_t k = 0; k < pairs[i].n; k++) ref[n_ref++] = pairs[i].seconds[k];
    memcpy(buf, ref, n_ref * sizeof *buf);
    gs_stats_sort(buf, n_ref);
    out->reference = gs_stats_percentile_sorted(buf, n_ref, 50.0);
  }
  for (size_t i = 0; i < n; i++) {
    gs_pairs_result *p = &out->pairs[i];
    p->ratio = p->median / out->reference;
    median_ratio_interval(pairs[i].seconds, pairs[i].n, ref, n_ref, buf, &p->low, &p->high);
    p->slow = isfinite(p->low) && p->low > 1.0 + GS_PAIRS_THRESHOLD;
  }
  free(buf);
  free(medians);
  free(ref);
  eliminate(out);
  return GS_OK;
}

/* See check_pairs.h. */
void gs_pairs_verdict_free(gs_pairs_verdict *v) {
  if (!v) return;
  free(v->pairs);
  free(v->unit_slow);
  memset(v, 0, sizeof *v);
}
