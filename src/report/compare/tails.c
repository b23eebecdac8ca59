/* What LoadGen judges a run by, compared: its VALID/INVALID result and the
 * tail latencies (p99 latency, TTFT p99, TPOT p99) of the Server and
 * SingleStream scenarios. Ingested LoadGen documents give one figure a
 * side; our own request-based documents give every request's times, and
 * their p99 is tested by a bootstrap interval of its change
 * (docs/compare.md, "Tail latencies"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/rng.h"
#include "core/stats.h"
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

/* The q-th percentile of `n` draws with replacement from `v` into `work`. */
static double resampled_percentile(gs_rng *rng, const double *v, size_t n, double *work,
                                   double q) {
  for (size_t i = 0; i < n; i++) work[i] = v[gs_rng_below(rng, n)];
  gs_stats_sort(work, n);
  return gs_stats_percentile_sorted(work, n, q);
}

/* See internal.h. */
void gs_compare_percentile_interval(const double *a, size_t na, const double *b, size_t nb,
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

/* The `field` ("ttft_seconds", "tpot_seconds") of every ok, not cold
 * request of measurement `m` (the requests the report's statistics use),
 * into a new array *out of *n; GS_ERR_NOMEM. */
static gs_status request_times(const cJSON *m, const char *field, double **out, size_t *n) {
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
  gs_compare_percentile_interval(a, na, b, nb, 99.0, &lo, &hi);
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
      st = request_times(mx, fields[f], &a, &na);
      if (st == GS_OK) st = request_times(my, fields[f], &b, &nb);
    }
    if (st == GS_OK && na > 0 && nb > 0)
      st = tail_row(c, si, x->world_size, names[f], a, na, b, nb);
    free(a);
    free(b);
  }
  return st;
}
