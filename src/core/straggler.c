/* Straggler scores: the relative and individual score of each rank with
 * their 95% intervals (gs_stats_ratio_interval, runs as its groups) and the
 * naming rule. docs/statistics.md, "Straggler scores", defines them. */
#include "core/straggler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

/* Per-rank scratch: the iteration ratios and ones (as bootstrap groups),
 * the groups of the rank's own times. */
typedef struct {
  double *ratios, *ones, *others;
  gs_stats_group *ratio_groups, *one_groups, *time_groups;
} scratch;

static void scratch_free(scratch *s) {
  free(s->ratios);
  free(s->ones);
  free(s->others);
  free(s->ratio_groups);
  free(s->one_groups);
  free(s->time_groups);
}

static int scratch_alloc(scratch *s, size_t total, size_t n_runs, size_t n_ranks) {
  memset(s, 0, sizeof *s);
  s->ratios = malloc((total ? total : 1) * sizeof *s->ratios);
  s->ones = malloc((total ? total : 1) * sizeof *s->ones);
  s->others = malloc(n_ranks * sizeof *s->others);
  s->ratio_groups = calloc(n_runs ? n_runs : 1, sizeof *s->ratio_groups);
  s->one_groups = calloc(n_runs ? n_runs : 1, sizeof *s->one_groups);
  s->time_groups = calloc(n_runs ? n_runs : 1, sizeof *s->time_groups);
  if (!s->ratios || !s->ones || !s->others || !s->ratio_groups || !s->one_groups ||
      !s->time_groups)
    return 0;
  for (size_t i = 0; i < total; i++) s->ones[i] = 1.0;
  return 1;
}

/* The median of the times of every rank but k in iteration i of `run`. */
static double others_median(const gs_straggler_run *run, size_t n_ranks, size_t k, size_t i,
                            double *buf) {
  size_t m = 0;
  for (size_t j = 0; j < n_ranks; j++)
    if (j != k) buf[m++] = run->times[j][i];
  gs_stats_sort(buf, m);
  return gs_stats_percentile_sorted(buf, m, 50.0);
}

/* The smallest mean of GS_STRAGGLER_WINDOW consecutive times of one run
 * (the run's mean when it is shorter) over the runs; *run_of and *start
 * say where that window lies, *len its length. */
static double best_window(const gs_straggler_run *runs, size_t n_runs, size_t k, size_t *run_of,
                          size_t *start, size_t *len) {
  double best = INFINITY;
  for (size_t r = 0; r < n_runs; r++) {
    const size_t n = runs[r].n_iters;
    if (n == 0) continue;
    const double *t = runs[r].times[k];
    const size_t w = n < GS_STRAGGLER_WINDOW ? n : GS_STRAGGLER_WINDOW;
    double sum = 0.0;
    for (size_t i = 0; i < w; i++) sum += t[i];
    for (size_t i = w;; i++) {
      if (sum / (double)w < best) {
        best = sum / (double)w;
        *run_of = r;
        *start = i - w;
        *len = w;
      }
      if (i == n) break;
      sum += t[i] - t[i - w];
    }
  }
  return best;
}

/* Scores rank k into *sc. */
static void score_rank(const gs_straggler_run *runs, size_t n_runs, size_t n_ranks, size_t k,
                       scratch *s, gs_straggler_score *sc) {
  size_t at = 0, groups = 0;
  double ratio_sum = 0.0, time_sum = 0.0;
  for (size_t r = 0; r < n_runs; r++) {
    const size_t n = runs[r].n_iters;
    if (n == 0) continue;
    for (size_t i = 0; i < n; i++) {
      const double q = runs[r].times[k][i] / others_median(&runs[r], n_ranks, k, i, s->others);
      s->ratios[at + i] = q;
      ratio_sum += q;
      time_sum += runs[r].times[k][i];
    }
    s->ratio_groups[groups] = (gs_stats_group){s->ratios + at, n};
    s->one_groups[groups] = (gs_stats_group){s->ones + at, n};
    s->time_groups[groups] = (gs_stats_group){runs[r].times[k], n};
    groups++;
    at += n;
  }
  sc->n = at;
  sc->relative = sc->individual = NAN;
  sc->relative_low = sc->relative_high = sc->individual_low = sc->individual_high = NAN;
  sc->straggler = 0;
  if (at == 0) return;
  sc->relative = ratio_sum / (double)at;
  // The mean of the ratios over a side of ones (whose every resample has
  // mean 1): the ratio bootstrap then resamples the ratios alone, by run.
  gs_stats_ratio_interval(s->ratio_groups, groups, s->one_groups, groups, &sc->relative_low,
                          &sc->relative_high);
  size_t best_run = 0, start = 0, len = 0;
  const double best = best_window(runs, n_runs, k, &best_run, &start, &len);
  sc->individual = time_sum / (double)at / best;
  const gs_stats_group window = {runs[best_run].times[k] + start, len};
  gs_stats_ratio_interval(s->time_groups, groups, &window, 1, &sc->individual_low,
                          &sc->individual_high);
  sc->straggler = isfinite(sc->relative_low) && sc->relative_low > 1.0 + GS_STRAGGLER_THRESHOLD;
}

/* See straggler.h. */
gs_status gs_straggler_compute(const gs_straggler_run *runs, size_t n_runs, size_t n_ranks,
                               gs_straggler *out) {
  if (out == NULL) GS_BUG("straggler: no output structure");
  memset(out, 0, sizeof *out);
  out->named = -1;
  if (n_ranks < 2) return gs_error(GS_ERR_USAGE, "straggler scores need 2 or more ranks");
  size_t total = 0;
  for (size_t r = 0; r < n_runs; r++) {
    for (size_t k = 0; k < n_ranks; k++)
      for (size_t i = 0; i < runs[r].n_iters; i++) {
        const double t = runs[r].times[k][i];
        if (!isfinite(t) || t <= 0.0)
          return gs_error(GS_ERR_USAGE,
                          "straggler: time %zu of rank %zu in run %zu is not a positive number",
                          i + 1, k, r + 1);
      }
    total += runs[r].n_iters;
  }
  scratch s;
  out->scores = calloc(n_ranks, sizeof *out->scores);
  if (!out->scores || !scratch_alloc(&s, total, n_runs, n_ranks)) {
    if (out->scores) scratch_free(&s);
    gs_straggler_free(out);
    return gs_error(GS_ERR_NOMEM, "straggler: out of memory for %zu ranks", n_ranks);
  }
  out->n_ranks = n_ranks;
  for (size_t k = 0; k < n_ranks; k++) {
    gs_straggler_score *sc = &out->scores[k];
    score_rank(runs, n_runs, n_ranks, k, &s, sc);
    if (sc->straggler && (out->named < 0 || sc->relative > out->scores[out->named].relative))
      out->named = (int)k;
  }
  scratch_free(&s);
  return GS_OK;
}

/* See straggler.h. */
void gs_straggler_free(gs_straggler *s) {
  if (s == NULL) return;
  free(s->scores);
  memset(s, 0, sizeof *s);
  s->named = -1;
}
