/* What LoadGen judges a run by, compared: its VALID/INVALID result and the
 * tail latencies (p99 latency, TTFT p99, TPOT p99) of the Server and
 * SingleStream scenarios. Ingested LoadGen documents give one figure a
 * side; our own request-based documents give every request's times, and
 * their p99 is tested by a bootstrap interval of its change
 * (docs/compare.md, "Tail latencies"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "report/analyze/quantile.h"
#include "report/compare/internal.h"

/* See internal.h. */
gs_status gs_compare_validity(gs_compare *c, size_t si, const gs_report_row *x,
                              const gs_report_row *y) {
  for (size_t k = 0; k < x->n_ranks && k < y->n_ranks; k++) {
    const gs_report_loadgen *a = &x->ranks[k].loadgen, *b = &y->ranks[k].loadgen;
    if (!a->present || !b->present || a->valid < 0 || b->valid < 0) continue;
    char metric[64];
    snprintf(metric, sizeof metric, "LoadGen result rank %zu", k);
    gs_compare_row *row = gs_compare_row_slot(c, si, x->world_size, metric, "validity", 1);
    if (!row) return gs_error(GS_ERR_NOMEM, "out of memory");
    c->n_rows++;
    row->figure = 1;
    row->n_base = row->n_new = 1;
    row->base_mean = a->valid;
    row->new_mean = b->valid;
    row->change = row->median_change = (double)(b->valid - a->valid);
    row->ci_low = row->ci_high = row->detectable = row->min_p = NAN;
    row->test.u = row->test.z = row->test.p = NAN;
    row->verdict = a->valid == b->valid ? GS_CHANGE_WITHIN
                   : b->valid == 0      ? GS_CHANGE_REGRESSION
                                        : GS_CHANGE_IMPROVEMENT;
    if (row->verdict == GS_CHANGE_REGRESSION) {
      c->regressions++;
      if (!gs_compare_note(c, "LoadGen result at %d ranks, rank %zu: VALID in BASE, INVALID in "
                           "NEW (%s)", x->world_size, k,
                           b->failed ? b->failed : "criteria not recorded"))
        return gs_error(GS_ERR_NOMEM, "out of memory");
    }
  }
  return GS_OK;
}

/* The largest of f over the LoadGen ranks of `row` (NaN when none has it). */
static double loadgen_max(const gs_report_row *row, size_t field) {
  double m = NAN;
  for (size_t k = 0; k < row->n_ranks; k++) {
    const gs_report_loadgen *lg = &row->ranks[k].loadgen;
    const double v[] = {lg->lat_p99, lg->ttft_p99, lg->tpot_p99};
    if (lg->present && isfinite(v[field]) && !(v[field] <= m)) m = v[field];
  }
  return m;
}

/* A tail row from both sides' samples: the p99 of each, the bootstrap
 * interval of their ratio, and the verdict the interval gives. */
static gs_status tail_row(gs_compare *c, size_t si, int world_size, const char *metric,
                          double *a, size_t na, double *b, size_t nb) {
  gs_compare_row *row = gs_compare_row_slot(c, si, world_size, metric, "s", 0);
  if (!row) return gs_error(GS_ERR_NOMEM, "out of memory");
  c->n_rows++;
  row->percentile = 1;
  row->n_base = na;
  row->n_new = nb;
  gs_stats_sort(a, na);
  gs_stats_sort(b, nb);
  row->base_mean = gs_stats_percentile_sorted(a, na, 99.0);
  row->new_mean = gs_stats_percentile_sorted(b, nb, 99.0);
  row->change = row->median_change =
      row->base_mean > 0.0 ? row->new_mean / row->base_mean - 1.0 : NAN;
  row->ci_low = row->ci_high = row->detectable = row->min_p = NAN;
  row->test.u = row->test.z = row->test.p = NAN;
  if (na < GS_COMPARE_TAIL_SAMPLES || nb < GS_COMPARE_TAIL_SAMPLES) {
    row->samples_needed = GS_COMPARE_TAIL_SAMPLES;
    row->verdict = GS_CHANGE_UNDECIDABLE;
    c->undecidable++;
    return GS_OK;
  }
  double lo, hi;
  gs_report_percentile_interval(a, na, b, nb, 99.0, &lo, &hi);
  if (isfinite(lo) && isfinite(hi)) {
    row->ci_low = lo - 1.0;
    row->ci_high = hi - 1.0;
    row->detectable = (hi - lo) / 2.0;
  }
  // Significant when the interval leaves out no change; then the p99's
  // change against --threshold, as the medians' for the U test's rows.
  if (!(row->ci_low > 0.0) && !(row->ci_high < 0.0))
    row->verdict = GS_CHANGE_NOT_SIGNIFICANT;
  else if (!(fabs(row->change) > c->threshold) || (row->change > 0.0) != (row->ci_low > 0.0))
    row->verdict = GS_CHANGE_WITHIN;
  else
    row->verdict = row->change > 0.0 ? GS_CHANGE_REGRESSION : GS_CHANGE_IMPROVEMENT;
  if (row->verdict == GS_CHANGE_REGRESSION) c->regressions++;
  return GS_OK;
}

/* See internal.h. */
gs_status gs_compare_tails(gs_compare *c, size_t si, const gs_report_row *x,
                           const gs_report_row *y, const cJSON *mx, const cJSON *my) {
  static const char *const names[] = {"p99 latency", "TTFT p99", "TPOT p99"};
  static const char *const fields[] = {NULL, "ttft_seconds", "tpot_seconds"};
  // Offline has no latency bound (its "latency" is the batch's): LoadGen
  // judges tails in the Server and SingleStream scenarios only.
  const char *scenario =
      x->loadgen && x->n_ranks ? x->ranks[0].loadgen.scenario : x->requests.scenario;
  if (scenario && (strcmp(scenario, "Offline") == 0 || strcmp(scenario, "offline") == 0))
    return GS_OK;
  gs_status st = GS_OK;
  for (size_t f = 0; f < 3 && st == GS_OK; f++) {
    if (x->loadgen) {
      double bx = loadgen_max(x, f), by = loadgen_max(y, f);
      if (bx > 0 && isfinite(by))
        st = gs_compare_figure(c, si, x->world_size, names[f], "s", 0, bx, by);
      continue;
    }
    double *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    if (f == 0) {  // the request latencies are the row's step samples
      na = x->has_step && x->step_samples ? x->step.n : 0;
      nb = y->has_step && y->step_samples ? y->step.n : 0;
      a = malloc((na + 1) * sizeof *a);
      b = malloc((nb + 1) * sizeof *b);
      if (!a || !b) st = gs_error(GS_ERR_NOMEM, "out of memory");
      else {
        if (na) memcpy(a, x->step_samples, na * sizeof *a);
        if (nb) memcpy(b, y->step_samples, nb * sizeof *b);
      }
    } else {
      st = gs_report_request_times(mx, fields[f], &a, &na);
      if (st == GS_OK) st = gs_report_request_times(my, fields[f], &b, &nb);
    }
    if (st == GS_OK && na > 0 && nb > 0)
      st = tail_row(c, si, x->world_size, names[f], a, na, b, nb);
    free(a);
    free(b);
  }
  return st;
}
