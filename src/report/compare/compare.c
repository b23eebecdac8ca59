/* `gpuscale compare`: pairs the measurements of two result documents and
 * tests each metric (step time, throughput, each rank's time) for a change:
 * relative change of the means with a Welch 95% interval, and a two-sided
 * Mann-Whitney U test on the raw samples. See docs/compare.md. */
#include "report/compare/compare.h"
#include "report/compare/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/json.h"
#include "core/result.h"
#include "report/render/render.h"

const char *const gs_compare_format_choices[] = {"text", "markdown", "json", NULL};

const char *gs_change_verdict_name(gs_change_verdict v) {
  switch (v) {
    case GS_CHANGE_WITHIN: return "within threshold";
    case GS_CHANGE_IMPROVEMENT: return "improvement";
    case GS_CHANGE_REGRESSION: return "regression";
    case GS_CHANGE_UNDECIDABLE: return "undecidable";
    default: return "not significant";
  }
}

/* See internal.h. */
int gs_compare_note(gs_compare *c, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  char **grown = realloc(c->notes, (c->n_notes + 1) * sizeof *grown);
  if (!grown) return 0;
  c->notes = grown;
  if (!(c->notes[c->n_notes] = strdup(buf))) return 0;
  c->n_notes++;
  return 1;
}

/* The index among the rows of `s` before `row` with the same point: repeats
 * of one measurement pair in order (the k-th of BASE with the k-th of NEW). */
static size_t repeat_index(const gs_report_series *s, size_t row) {
  size_t k = 0;
  for (size_t i = 0; i < row; i++) k += gs_report_point_same(&s->rows[i], &s->rows[row]);
  return k;
}

/* The row of `t` at the same point as `x` and with the same repeat index,
 * or NULL. */
static const gs_report_row *paired_row(const gs_report_series *t, const gs_report_row *x,
                                       size_t repeat) {
  for (size_t b = 0; b < t->n_rows; b++)
    if (gs_report_point_same(x, &t->rows[b]) && repeat-- == 0) return &t->rows[b];
  return NULL;
}

static void mean_var(const double *v, size_t n, double *mean, double *var) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += v[i];
  *mean = s / (double)n;
  double ss = 0;
  for (size_t i = 0; i < n; i++) ss += (v[i] - *mean) * (v[i] - *mean);
  *var = n > 1 ? ss / (double)(n - 1) : 0.0;
}

/* See internal.h. */
gs_compare_row *gs_compare_row_slot(gs_compare *c, size_t series, int world_size,
                                    const char *metric, const char *unit, int higher_is_better) {
  gs_compare_row *grown = realloc(c->rows, (c->n_rows + 1) * sizeof *grown);
  if (!grown) return NULL;
  c->rows = grown;
  gs_compare_row *row = &c->rows[c->n_rows];
  memset(row, 0, sizeof *row);
  row->series = series;
  row->world_size = world_size;
  snprintf(row->metric, sizeof row->metric, "%s", metric);
  row->unit = unit;
  row->higher_is_better = higher_is_better;
  return row;
}

/* The smallest two-sided p of the U test with m and n samples: the two
 * most extreme of the C(m + n, m) equally likely orders, 2 / C(m + n, m)
 * (the exact test without ties; the normal approximation gives no less). */
static double smallest_p(size_t m, size_t n) {
  double c = 1.0;  // C(m + n, m), built up factor by factor
  for (size_t k = 1; k <= m && c < 1e300; k++) c = c * (double)(n + k) / (double)k;
  return fmin(1.0, 2.0 / c);
}

/* Samples a side needs (equal counts) for the smallest p to fall below
 * alpha; 0 when more than 1000 would be needed. */
static size_t samples_needed(double alpha) {
  for (size_t k = 1; k <= 1000; k++)
    if (smallest_p(k, k) < alpha) return k;
  return 0;
}

/* Samples as the bootstrap's groups: `runs` run lengths summing to n (NULL:
 * one group of n). */
typedef struct {
  const double *v;
  size_t n;
  const size_t *run_n;
  size_t runs;
} sample_set;

static gs_stats_group *groups_of(const sample_set *x, size_t *count) {
  const size_t k = x->run_n && x->runs ? x->runs : 1;
  gs_stats_group *g = malloc(k * sizeof *g);
  if (!g) return NULL;
  if (!(x->run_n && x->runs)) {
    g[0] = (gs_stats_group){x->v, x->n};
  } else {
    size_t at = 0;
    for (size_t r = 0; r < k; r++) {
      const size_t len = at + x->run_n[r] <= x->n ? x->run_n[r] : x->n - at;
      g[r] = (gs_stats_group){x->v + at, len};
      at += len;
    }
  }
  *count = k;
  return g;
}

/* The 95% interval of mean(num) / mean(den) (gs_stats_ratio_interval);
 * NaN bounds when out of memory or a side has too few samples. */
static void ratio_interval(const sample_set *num, const sample_set *den, double *lo, double *hi) {
  size_t kn = 0, kd = 0;
  gs_stats_group *gn = groups_of(num, &kn), *gd = groups_of(den, &kd);
  *lo = *hi = NAN;
  if (gn && gd) gs_stats_ratio_interval(gn, kn, gd, kd, lo, hi);
  free(gn);
  free(gd);
}

/* One metric row from the raw samples of both sides: BASE `a`, NEW `b`.
 * A throughput row (`items` > 0) gets samples that are step times; its
 * figures are items / mean step, and its test runs on the per-step rates
 * (the same p as on the steps, the direction turned). */
static gs_status compare_metric(gs_compare *c, size_t series, int world_size, const char *metric,
                                const char *unit, int higher_is_better, const sample_set *a,
                                const sample_set *b, uint64_t items) {
  const size_t na = a->n, nb = b->n;
  if (na == 0 || nb == 0) {
    return gs_compare_note(c, "%s at %d ranks: no samples in %s", metric, world_size,
                    na == 0 ? "BASE" : "NEW")
               ? GS_OK
               : gs_error(GS_ERR_NOMEM, "out of memory");
  }
  gs_compare_row *row = gs_compare_row_slot(c, series, world_size, metric, unit, higher_is_better);
  if (!row) return gs_error(GS_ERR_NOMEM, "out of memory");
  row->n_base = na;
  row->n_new = nb;
  double va, vb, ma, mb;
  mean_var(a->v, na, &ma, &va);
  mean_var(b->v, nb, &mb, &vb);
  double *ra = NULL, *rb = NULL;
  gs_status st = GS_OK;
  if (items > 0) {
    ra = malloc(na * sizeof *ra);
    rb = malloc(nb * sizeof *rb);
    if (!ra || !rb) st = gs_error(GS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; ra && rb && i < na; i++) ra[i] = (double)items / a->v[i];
    for (size_t i = 0; ra && rb && i < nb; i++) rb[i] = (double)items / b->v[i];
  }
  if (st == GS_OK)
    st = items > 0 ? gs_ranktest_mann_whitney(rb, nb, ra, na, &row->test)
                   : gs_ranktest_mann_whitney(b->v, nb, a->v, na, &row->test);
  free(ra);
  free(rb);
  if (st != GS_OK) return st;
  c->n_rows++;
  row->change = row->ci_low = row->ci_high = row->detectable = NAN;
  double lo = NAN, hi = NAN;
  if (items > 0) {
    // The report's throughput: items / mean step, on both sides.
    row->base_mean = ma > 0 ? (double)items / ma : NAN;
    row->new_mean = mb > 0 ? (double)items / mb : NAN;
    if (mb > 0) row->change = ma / mb - 1.0;
    ratio_interval(a, b, &lo, &hi);
  } else {
    row->base_mean = ma;
    row->new_mean = mb;
    if (ma != 0) row->change = mb / ma - 1.0;
    ratio_interval(b, a, &lo, &hi);
  }
  if (isfinite(lo) && isfinite(hi)) {
    row->ci_low = lo - 1.0;
    row->ci_high = hi - 1.0;
    row->detectable = (hi - lo) / 2.0;
  }
  row->min_p = smallest_p(na, nb);
  // The test ran NEW (its first sample) against BASE and sorted both.
  const double base_median = row->test.median_b, new_median = row->test.median_a;
  row->median_change = base_median != 0 ? new_median / base_median - 1.0 : NAN;
  // The test decides: its p whether there is a change, its direction which
  // way (never the means, which one outlier can turn around), the change of
  // the medians whether the change is large enough. With too few samples
  // it cannot decide at all, and says so rather than "not significant".
  int dir = row->test.direction;
  int agrees = (dir > 0 && row->median_change > 0) || (dir < 0 && row->median_change < 0);
  if (!(row->min_p < c->alpha)) {
    // No interval half-width is "detectable" when no p can reach alpha.
    row->verdict = GS_CHANGE_UNDECIDABLE;
    row->samples_needed = samples_needed(c->alpha);
    row->detectable = NAN;
  }
  else if (!(row->test.p < c->alpha))
    row->verdict = GS_CHANGE_NOT_SIGNIFICANT;
  else if (!agrees || !(fabs(row->median_change) > c->threshold))
    row->verdict = GS_CHANGE_WITHIN;
  else
    row->verdict = (higher_is_better ? dir < 0 : dir > 0) ? GS_CHANGE_REGRESSION
                                                          : GS_CHANGE_IMPROVEMENT;
  if (row->verdict == GS_CHANGE_REGRESSION) c->regressions++;
  if (row->verdict == GS_CHANGE_UNDECIDABLE) c->undecidable++;
  return GS_OK;
}

/* See internal.h. */
gs_status gs_compare_figure(gs_compare *c, size_t series, int world_size, const char *metric,
                            const char *unit, int higher_is_better, double x, double y) {
  if (!isfinite(x) || !isfinite(y) || x == 0) {
    return gs_compare_note(c, "%s at %d ranks: no samples and no figure in %s", metric, world_size,
                    !isfinite(x) || x == 0 ? "BASE" : "NEW")
               ? GS_OK
               : gs_error(GS_ERR_NOMEM, "out of memory");
  }
  gs_compare_row *row = gs_compare_row_slot(c, series, world_size, metric, unit, higher_is_better);
  if (!row) return gs_error(GS_ERR_NOMEM, "out of memory");
  c->n_rows++;
  row->figure = 1;
  row->n_base = row->n_new = 1;
  row->base_mean = x;
  row->new_mean = y;
  row->change = row->median_change = y / x - 1.0;
  row->ci_low = row->ci_high = row->detectable = row->min_p = NAN;
  row->test.u = row->test.z = row->test.p = NAN;
  double worse = higher_is_better ? -row->change : row->change;
  if (!(fabs(row->change) > c->figure_threshold))
    row->verdict = GS_CHANGE_WITHIN;
  else
    row->verdict = worse > 0 ? GS_CHANGE_REGRESSION : GS_CHANGE_IMPROVEMENT;
  if (row->verdict == GS_CHANGE_REGRESSION) c->regressions++;
  return GS_OK;
}

static double number_at(const cJSON *obj, const char *name) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, name);
  return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* A pair of measurements without raw samples on a side (ingested nccl-tests
 * or LoadGen results): their recorded figures, higher is better. A
 * collective's bus bandwidth (algorithm bandwidth where busbw is 0: one
 * rank); else the throughput (aggregate) and, where
 * both record it, LoadGen's tokens per second. */
static gs_status compare_figures(gs_compare *c, size_t si, const gs_report_series *s,
                                 const gs_report_row *x, const gs_report_row *y,
                                 const cJSON *mx, const cJSON *my) {
  int ranks = x->world_size;
  if (x->collective.present) {
    char metric[64], point[64];
    gs_report_point_name(x, point, sizeof point);
    // On one rank bus bandwidth is 0 by its formula: the algorithm's then.
    int bus = x->collective.busbw > 0 || y->collective.busbw > 0;
    snprintf(metric, sizeof metric, "%s %s", point, bus ? "busbw" : "algbw");
    return gs_compare_figure(c, si, ranks, metric, "B", 1,
                          bus ? x->collective.busbw : x->collective.algbw,
                          bus ? y->collective.busbw : y->collective.algbw);
  }
  const cJSON *ax = cJSON_GetObjectItemCaseSensitive(mx, "aggregate");
  const cJSON *ay = cJSON_GetObjectItemCaseSensitive(my, "aggregate");
  gs_status st = gs_compare_figure(c, si, ranks, "throughput", s->item_unit ? s->item_unit : "items",
                                1, number_at(ax, "throughput_items_per_second"),
                                number_at(ay, "throughput_items_per_second"));
  double tx = number_at(cJSON_GetObjectItemCaseSensitive(mx, "mlperf"), "tokens_per_second");
  double ty = number_at(cJSON_GetObjectItemCaseSensitive(my, "mlperf"), "tokens_per_second");
  if (st == GS_OK && isfinite(tx) && isfinite(ty))
    st = gs_compare_figure(c, si, ranks, "tokens/s", "tokens", 1, tx, ty);
  if (st == GS_OK && x->loadgen && y->loadgen) st = gs_compare_validity(c, si, x, y);
  if (st == GS_OK && x->loadgen && y->loadgen) st = gs_compare_tails(c, si, x, y, mx, my);
  return st;
}

static const cJSON *measurement_of(const gs_report *r, const gs_report_row *row) {
  const cJSON *ms = cJSON_GetObjectItemCaseSensitive(r->docs[row->file], "measurements");
  return cJSON_GetArrayItem(ms, (int)row->measurement);
}

/* A copy of the step samples (rank < 0) or rank `rank`'s samples that the
 * analysis kept in `row` (GS_REPORT_ROW_SAMPLES), into *n; NULL only when
 * out of memory. */
static double *row_samples(const gs_report_row *row, int rank, size_t *n) {
  const double *from = NULL;
  *n = 0;
  if (rank < 0 && row->has_step) {
    from = row->step_samples;
    *n = row->step.n;
  } else if (rank >= 0 && (size_t)rank < row->n_ranks) {
    from = row->ranks[rank].samples;
    *n = row->ranks[rank].n;
  }
  if (!from) *n = 0;
  double *copy = malloc((*n ? *n : 1) * sizeof *copy);
  if (copy && *n) memcpy(copy, from, *n * sizeof *copy);
  return copy;
}

/* Step time, throughput and each rank's time of a matched pair of rows. */
static gs_status compare_rows(gs_compare *c, size_t si, const gs_report_series *s,
                              const gs_report_row *x, const gs_report_row *y) {
  const cJSON *mx = measurement_of(&c->base, x), *my = measurement_of(&c->next, y);
  if (!x->has_step || !y->has_step) return compare_figures(c, si, s, x, y, mx, my);
  gs_status st = GS_OK;
  int ranks = x->world_size;
  // A collective's ranks all wait for each other: its step time says it all.
  int last_rank = x->collective.present ? -1 : ranks - 1;
  for (int k = -1; k <= last_rank && st == GS_OK; k++) {
    size_t na = 0, nb = 0;
    double *a = row_samples(x, k, &na), *b = row_samples(y, k, &nb);
    if (!a || !b) {
      free(a), free(b);
      return gs_error(GS_ERR_NOMEM, "out of memory");
    }
    // Step samples keep their runs (the bootstrap draws runs, then steps);
    // a rank's samples are one group.
    const sample_set sa = {a, na, k < 0 ? x->step_run_n : NULL, k < 0 ? x->n_step_runs : 0};
    const sample_set sb = {b, nb, k < 0 ? y->step_run_n : NULL, k < 0 ? y->n_step_runs : 0};
    if (k < 0) {
      char step[64] = "step time";
      if (x->collective.present)  // one row per op, message size and form: name it
        gs_report_point_name(x, step, sizeof step);
      st = compare_metric(c, si, ranks, step, "s", 0, &sa, &sb, 0);
      // Throughput: items_per_step / mean step (the report's), when both
      // know the items. Request-based samples are latencies of overlapping
      // requests: items over one of them is no throughput.
      if (st == GS_OK && (x->requests.present || y->requests.present)) {
        char base_rate[32], new_rate[32];
        gs_format_rate(x->throughput, base_rate, sizeof base_rate);
        gs_format_rate(y->throughput, new_rate, sizeof new_rate);
        if (!gs_compare_note(c, "%s at %d ranks: request-based (per-request latencies): throughput "
                         "not compared per sample (BASE %s%s/s, NEW %s%s/s over the run time)",
                      s->workload, ranks, base_rate, s->item_unit ? s->item_unit : "items",
                      new_rate, s->item_unit ? s->item_unit : "items"))
          st = gs_error(GS_ERR_NOMEM, "out of memory");
        if (st == GS_OK) st = gs_compare_tails(c, si, x, y, mx, my);
      } else if (st == GS_OK && x->items_per_step > 0 && x->items_per_step == y->items_per_step) {
        st = compare_metric(c, si, ranks, "throughput", s->item_unit ? s->item_unit : "items", 1,
                            &sa, &sb, x->items_per_step);
      } else if (st == GS_OK && x->items_per_step != y->items_per_step) {
        if (!gs_compare_note(c, "%s at %d ranks: items per step differ (%llu in BASE, %llu in NEW): "
                         "throughput not compared",
                      s->workload, ranks, (unsigned long long)x->items_per_step,
                      (unsigned long long)y->items_per_step))
          st = gs_error(GS_ERR_NOMEM, "out of memory");
      }
    } else {
      char metric[64];
      snprintf(metric, sizeof metric, "rank %d time", k);
      st = compare_metric(c, si, ranks, metric, "s", 0, &sa, &sb, 0);
    }
    free(a), free(b);
  }
  return st;
}

/* "voxelize (backend cpu, strong, options {...})" for messages. */
static void series_label(char *buf, size_t size, const gs_report_series *s) {
  snprintf(buf, size, "%s (backend %s, scaling %s%s%s%s%s, options %s)", s->workload,
           s->backend[0] ? s->backend : "-", s->scaling[0] ? s->scaling : "-",
           s->label[0] ? ", " : "", s->label, s->split[0] ? ", split " : "", s->split, s->options);
}

/* See compare.h. */
gs_status gs_compare_load(const char *base_path, const char *new_path, double alpha,
                          double threshold, double figure_threshold, gs_compare *out) {
  return gs_compare_load_sets(&base_path, 1, &new_path, 1, base_path, new_path, alpha, threshold,
                              figure_threshold, out);
}

/* See compare.h. */
gs_status gs_compare_load_sets(const char *const *base, size_t n_base, const char *const *next,
                               size_t n_next, const char *base_name, const char *new_name,
                               double alpha, double threshold, double figure_threshold,
                               gs_compare *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->base_name, sizeof out->base_name, "%s", base_name);
  snprintf(out->new_name, sizeof out->new_name, "%s", new_name);
  out->alpha = alpha;
  out->threshold = threshold;
  out->figure_threshold = figure_threshold;
  gs_report_thresholds th = {GS_REPORT_MODERATE_DEFAULT, GS_REPORT_CRITICAL_DEFAULT};
  // The rows keep the samples the tests need; the documents' sample arrays
  // are dropped as each is analysed, as for a text report.
  const unsigned flags = GS_REPORT_DROP_SAMPLES | GS_REPORT_ROW_SAMPLES;
  gs_status st = gs_report_load_with(base, n_base, &th, NULL, flags, &out->base);
  if (st == GS_OK) st = gs_report_load_with(next, n_next, &th, NULL, flags, &out->next);
  for (size_t i = 0; i < out->base.n_series && st == GS_OK; i++) {
    const gs_report_series *s = &out->base.series[i];
    const gs_report_series *t = NULL;
    for (size_t j = 0; j < out->next.n_series && !t; j++)
      if (gs_report_series_same(s, &out->next.series[j], 0)) t = &out->next.series[j];
    char label[512];
    series_label(label, sizeof label, s);
    if (!t) {
      if (!gs_compare_note(out, "only in BASE: %s", label)) st = gs_error(GS_ERR_NOMEM, "out of memory");
      continue;
    }
    for (size_t a = 0; a < s->n_rows && st == GS_OK; a++) {
      const gs_report_row *x = &s->rows[a];
      const gs_report_row *y = paired_row(t, x, repeat_index(s, a));
      if (!y) {
        char point[128];
        gs_report_point_name(x, point, sizeof point);
        if (!gs_compare_note(out, "only in BASE: %s at %d ranks%s%s", label, x->world_size,
                      point[0] ? ", " : "", point))
          st = gs_error(GS_ERR_NOMEM, "out of memory");
        continue;
      }
      st = compare_rows(out, i, s, x, y);
    }
    for (size_t b = 0; b < t->n_rows && st == GS_OK; b++) {
      const gs_report_row *y = &t->rows[b];
      if (paired_row(s, y, repeat_index(t, b))) continue;
      char point[128];
      gs_report_point_name(y, point, sizeof point);
      if (!gs_compare_note(out, "only in NEW: %s at %d ranks%s%s", label, y->world_size,
                    point[0] ? ", " : "", point))
        st = gs_error(GS_ERR_NOMEM, "out of memory");
    }
  }
  for (size_t j = 0; j < out->next.n_series && st == GS_OK; j++) {
    int found = 0;
    for (size_t i = 0; i < out->base.n_series; i++)
      found |= gs_report_series_same(&out->base.series[i], &out->next.series[j], 0);
    char label[512];
    series_label(label, sizeof label, &out->next.series[j]);
    if (!found && !gs_compare_note(out, "only in NEW: %s", label))
      st = gs_error(GS_ERR_NOMEM, "out of memory");
  }
  if (st == GS_OK && out->base.n_series == 0 && out->next.n_series == 0) {
    // An info or p2p document: nothing measured per series, nothing changed.
    if (!gs_compare_note(out, "neither document holds a measurement (e.g. gpuscale info or p2p): "
                       "nothing to compare"))
      st = gs_error(GS_ERR_NOMEM, "out of memory");
  } else if (st == GS_OK && out->n_rows == 0) {
    char what[2048] = "";
    for (size_t i = 0; i < out->n_notes; i++) {
      size_t len = strlen(what);
      snprintf(what + len, sizeof what - len, "%s%s", i ? "; " : "", out->notes[i]);
    }
    st = gs_error(GS_ERR_FORMAT,
                  "%s and %s share no measurement to compare (workload, backend, scaling, "
                  "workload options, variant/scenario/task/split and rank count must "
                  "match): %s",
                  base_name, new_name, what[0] ? what : "no measurements");
  }
  if (st != GS_OK) gs_compare_free(out);
  return st;
}

/* See compare.h. */
void gs_compare_free(gs_compare *c) {
  gs_report_free(&c->base);
  gs_report_free(&c->next);
  free(c->rows);
  for (size_t i = 0; i < c->n_notes; i++) free(c->notes[i]);
  free(c->notes);
  memset(c, 0, sizeof *c);
}

/* ---- output ------------------------------------------------------------------- */

static cJSON *compare_json(const gs_compare *c) {
  cJSON *doc = cJSON_CreateObject();
  if (!doc) return NULL;
  gs_json_build build = {0}, *b = &build;
  gs_json_put_string(b, doc, "schema", "gpuscale/compare/v1");
  gs_json_put_string(b, doc, "base", c->base_name);
  gs_json_put_string(b, doc, "new", c->new_name);
  gs_json_put_number(b, doc, "alpha", c->alpha);
  gs_json_put_number(b, doc, "threshold", c->threshold);
  gs_json_put_number(b, doc, "figure_threshold", c->figure_threshold);
  gs_json_put_number(b, doc, "regressions", (double)c->regressions);
  gs_json_put_number(b, doc, "undecidable", (double)c->undecidable);
  cJSON *rows = gs_json_put_array(b, doc, "metrics");
  for (size_t i = 0; rows && i < c->n_rows; i++) {
    const gs_compare_row *r = &c->rows[i];
    const gs_report_series *s = &c->base.series[r->series];
    cJSON *o = cJSON_CreateObject();
    gs_json_append(b, rows, o);
    if (b->failed) break;
    gs_json_put_string(b, o, "workload", s->workload);
    gs_json_put_string(b, o, "label", s->label);
    gs_json_put_string(b, o, "split", s->split);
    gs_json_put_string(b, o, "backend", s->backend);
    gs_json_put_string(b, o, "scaling", s->scaling);
    gs_json_put_number(b, o, "world_size", r->world_size);
    gs_json_put_string(b, o, "metric", r->metric);
    gs_json_put_string(b, o, "unit", r->unit);
    gs_json_put_bool(b, o, "higher_is_better", r->higher_is_better);
    gs_json_put_number(b, o, "n_base", (double)r->n_base);
    gs_json_put_number(b, o, "n_new", (double)r->n_new);
    gs_json_put_number(b, o, "base_mean", r->base_mean);
    gs_json_put_number(b, o, "new_mean", r->new_mean);
    gs_json_put_number(b, o, "change", r->change);
    gs_json_put_number(b, o, "change_ci95_low", r->ci_low);
    gs_json_put_number(b, o, "change_ci95_high", r->ci_high);
    gs_json_put_number(b, o, "median_change", r->median_change);
    gs_json_put_number(b, o, "detectable_change", r->detectable);
    gs_json_put_number(b, o, "samples_needed",
                       r->samples_needed ? (double)r->samples_needed : NAN);
    gs_json_put_string(b, o, "test", r->figure       ? "figure"
                                     : r->percentile ? "bootstrap p99"
                                                     : "mann-whitney u");
    gs_json_put_number(b, o, "smallest_p", r->min_p);
    gs_json_put_bool(b, o, "figure", r->figure);
    gs_json_put_number(b, o, "u", r->test.u);
    gs_json_put_number(b, o, "z", r->test.z);
    gs_json_put_number(b, o, "p", r->test.p);
    gs_json_put_bool(b, o, "exact", r->test.exact);
    gs_json_put_string(b, o, "verdict", gs_change_verdict_name(r->verdict));
  }
  cJSON *notes = gs_json_put_array(b, doc, "notes");
  for (size_t i = 0; notes && i < c->n_notes; i++)
    gs_json_append_string(b, notes, c->notes[i]);
  if (b->failed) {
    cJSON_Delete(doc);
    return NULL;
  }
  return doc;
}

/* A mean with its unit by core/format's rule ("8.13 us", "20.3 Mpoints/s");
 * rows mix metrics, so each value is scaled on its own. */
static void fmt_value(char *buf, size_t size, double v, const char *unit) {
  char number[32];
  if (strcmp(unit, "validity") == 0) {
    snprintf(buf, size, "%s", v == 1.0 ? "VALID" : v == 0.0 ? "INVALID" : "-");
    return;
  }
  if (strcmp(unit, "s") == 0) {
    gs_format_seconds(v, buf, size);
    return;
  }
  gs_format_rate(v, number, sizeof number);
  snprintf(buf, size, "%s%s/s", number, unit);
}

/* What "undecidable" means for the rows that are: U-test rows whose
 * sample counts cannot reach alpha, and p99 rows with too few requests. */
static void undecidable_notes(FILE *out, const gs_compare *c, int md) {
  size_t by_test = 0, by_tail = 0, m = 0, n = 0, tm = 0, tn = 0;
  double minp = NAN;
  for (size_t i = 0; i < c->n_rows; i++) {
    const gs_compare_row *r = &c->rows[i];
    if (r->verdict != GS_CHANGE_UNDECIDABLE) continue;
    if (r->percentile && by_tail++ == 0) {
      tm = r->n_base;
      tn = r->n_new;
    } else if (!r->percentile && by_test++ == 0) {
      m = r->n_base;
      n = r->n_new;
      minp = r->min_p;
    }
  }
  if (by_test) {
    const size_t need = samples_needed(c->alpha);
    fprintf(out, "%s%zu metric%s undecidable: with %zu against %zu samples the U test's smallest "
                 "two-sided p is %.3g, not below the significance level %g, so no change could "
                 "be significant, whatever its size; %zu samples a side are needed (e.g. --runs "
                 "%zu for exec, whose samples are one per run).\n",
            md ? "- " : "", by_test, by_test == 1 ? " is" : "s are", m, n, minp, c->alpha, need,
            need);
  }
  if (by_tail)
    fprintf(out, "%s%zu tail metric%s undecidable: a p99 is tested once the tail beyond it "
                 "holds two requests, %d a side, and %zu against %zu requests were measured, so "
                 "no interval of its change can be drawn (more requests: a longer run).\n",
            md ? "- " : "", by_tail, by_tail == 1 ? " is" : "s are", GS_COMPARE_TAIL_SAMPLES, tm,
            tn);
}

/* See compare.h. */
gs_status gs_compare_render(FILE *out, const gs_compare *c, gs_compare_format format) {
  if (format == GS_COMPARE_JSON) return gs_report_print_json(out, compare_json(c));
  int md = format == GS_COMPARE_MARKDOWN;
  fprintf(out, md ? "# gpuscale compare\n\nBASE `%s`, NEW `%s`; significance level %g, "
                    "threshold %g%%\n\n"
                  : "gpuscale compare: BASE %s, NEW %s; significance level %g, threshold %g%%\n\n",
          c->base_name, c->new_name, c->alpha, 100.0 * c->threshold);
  int metric_width = 20, figures = 0, tails = 0;
  for (size_t i = 0; i < c->n_rows; i++) {
    int len = (int)strlen(c->rows[i].metric);
    if (len > metric_width) metric_width = len;
    figures |= c->rows[i].figure;
    tails |= c->rows[i].percentile && c->rows[i].verdict != GS_CHANGE_UNDECIDABLE;
  }
  if (md)
    fputs("| workload | ranks | metric | base | new | change | 95% CI | detectable | median | U | p "
          "| verdict |\n"
          "|:---|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|:---|\n", out);
  else
    fprintf(out, "%-12s %5s %-*s %18s %18s %8s %19s %10s %8s %9s %9s  %s\n", "workload", "ranks",
            metric_width, "metric", "base", "new", "change", "95% CI", "detectable", "median", "U",
            "p", "verdict");
  for (size_t i = 0; i < c->n_rows; i++) {
    const gs_compare_row *r = &c->rows[i];
    char base[64], next[64], change[32], ci[48], median[32], u[32], p[32], det[32] = "-";
    fmt_value(base, sizeof base, r->base_mean, r->unit);
    fmt_value(next, sizeof next, r->new_mean, r->unit);
    snprintf(change, sizeof change, "%+.2f%%", 100.0 * r->change);
    snprintf(median, sizeof median, "%+.2f%%", 100.0 * r->median_change);
    // The detectable column says on every row what these samples can find.
    if (r->figure)
      snprintf(det, sizeof det, "no samples");
    else if (r->verdict == GS_CHANGE_UNDECIDABLE)
      snprintf(det, sizeof det, "needs n=%zu", r->samples_needed);
    else if (isfinite(r->detectable))
      snprintf(det, sizeof det, "+-%.2f%%", 100.0 * r->detectable);
    if (!r->figure && isfinite(r->ci_low))
      snprintf(ci, sizeof ci, "[%+.2f%%, %+.2f%%]", 100.0 * r->ci_low, 100.0 * r->ci_high);
    else
      snprintf(ci, sizeof ci, "-");
    if (r->figure || r->percentile) {  // no U test: one figure a side, or a p99's interval
      snprintf(u, sizeof u, "-");
      snprintf(p, sizeof p, "-");
    } else {
      // U is a whole or half number; never e-notation.
      snprintf(u, sizeof u, r->test.u == floor(r->test.u) ? "%.0f" : "%.1f", r->test.u);
      // %.3g is fixed notation from 0.0001 up; below, the digits say nothing more.
      if (r->test.p < 0.0001)
        snprintf(p, sizeof p, "<0.0001%s", r->test.exact ? "*" : "");
      else
        snprintf(p, sizeof p, "%.3g%s", r->test.p, r->test.exact ? "*" : "");
    }
    const gs_report_series *s = &c->base.series[r->series];
    char wl[256];
    gs_report_series_name(s, wl, sizeof wl);
    if (md)
      fprintf(out, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", wl,
              r->world_size, r->metric, base, next, change, ci, det, median, u, p,
              gs_change_verdict_name(r->verdict));
    else
      fprintf(out, "%-12s %5d %-*s %18s %18s %8s %19s %10s %8s %9s %9s  %s\n", wl, r->world_size,
              metric_width, r->metric, base, next, change, ci, det, median, u, p,
              gs_change_verdict_name(r->verdict));
  }
  fprintf(out, "\np: two-sided Mann-Whitney U test of NEW against BASE (* exact, else normal "
               "approximation with tie and continuity correction); change = NEW/BASE - 1 of the "
               "means (throughput: items / mean step, as the report) with its 95%% interval "
               "(bootstrap over runs and steps, docs/statistics.md); detectable: the smallest "
               "change these samples tell from noise (half the interval); the verdict takes its "
               "direction from the U test and its size from the change of the medians.\n");
  if (tails)
    fprintf(out, "%sTail rows with U '-' and an interval (p99 latency, TTFT p99, TPOT p99 of "
                 "requests) compare the p99s: the interval is a bootstrap of their ratio over "
                 "the requests and decides (significant when it leaves out 0).\n",
            md ? "- " : "");
  undecidable_notes(out, c, md);
  if (figures)
    fprintf(out, "Rows detectable 'no samples' have no raw samples (ingested results): their recorded "
                 "figures are compared, no significance test was possible; a change beyond "
                 "%g%% (--figure-threshold) counts.\n", 100.0 * c->figure_threshold);
  for (size_t i = 0; i < c->n_notes; i++) fprintf(out, md ? "- note: %s\n" : "note: %s\n", c->notes[i]);
  char rule[160];
  snprintf(rule, sizeof rule, "p < %g and worse by more than %g%%%s", c->alpha,
           100.0 * c->threshold, figures ? "; figures worse by more than " : "");
  if (figures) {
    size_t len = strlen(rule);
    snprintf(rule + len, sizeof rule - len, "%g%%", 100.0 * c->figure_threshold);
  }
  char undecided[96] = "";
  if (c->undecidable)
    snprintf(undecided, sizeof undecided, "; %zu metric%s undecidable (too few samples)",
             c->undecidable, c->undecidable == 1 ? "" : "s");
  if (c->regressions)
    fprintf(out, "\n%zu significant regression%s (%s)%s\n", c->regressions,
            c->regressions == 1 ? "" : "s", rule, undecided);
  else
    fprintf(out, "\nno significant regression (%s)%s\n", rule, undecided);
  return ferror(out) ? GS_ERR_IO : GS_OK;
}
