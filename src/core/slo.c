/* Latency targets and goodput (see slo.h). */
#include "core/slo.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/stats.h"

const char *const gs_slo_metric_names[GS_SLO_METRICS] = {"ttft", "tpot", "latency"};

// mlcommons/inference_policies, inference_rules.adoc, the table of
// benchmarks' latency constraints: Llama3.1-8B "Conversational category:
// TTFT/TPOT: 2000 ms/100 ms. Interactive category: TTFT/TPOT: 500 ms/30 ms".
const gs_slo_preset gs_slo_presets[] = {
    {"conversational", 2.0, 0.100, "MLPerf Inference Llama-3.1-8B, conversational (server)"},
    {"interactive", 0.500, 0.030, "MLPerf Inference Llama-3.1-8B, interactive"},
    {NULL, 0.0, 0.0, NULL},
};

void gs_slo_none(gs_slo *out) {
  memset(out, 0, sizeof *out);
  for (int m = 0; m < GS_SLO_METRICS; m++) out->bound[m] = NAN;
  out->percentile = GS_SLO_DEFAULT_PERCENTILE;
}

int gs_slo_any(const gs_slo *slo) {
  for (int m = 0; m < GS_SLO_METRICS; m++)
    if (isfinite(slo->bound[m])) return 1;
  return 0;
}

/* A duration with its unit ("2s", "100ms", "250us") of `len` characters
 * into *seconds; 0 on anything else. */
static int parse_duration(const char *text, size_t len, double *seconds) {
  char buf[64];
  if (len == 0 || len >= sizeof buf) return 0;
  memcpy(buf, text, len);
  buf[len] = '\0';
  if (buf[0] == '+' || buf[0] == '-' || buf[0] == ' ') return 0;
  errno = 0;
  char *end = NULL;
  const double v = strtod(buf, &end);
  if (end == buf || errno != 0 || !isfinite(v) || !(v > 0.0)) return 0;
  double scale;
  if (strcmp(end, "s") == 0)
    scale = 1.0;
  else if (strcmp(end, "ms") == 0)
    scale = 1e-3;
  else if (strcmp(end, "us") == 0)
    scale = 1e-6;
  else
    return 0;
  *seconds = v * scale;
  return isfinite(*seconds) && *seconds > 0.0;
}

gs_status gs_slo_parse(const char *text, const char *option, gs_slo *out) {
  gs_slo_none(out);
  if (!text || !*text) return gs_error(GS_ERR_USAGE, "option %s: empty targets", option);
  for (const gs_slo_preset *p = gs_slo_presets; p->name; p++)
    if (strcmp(text, p->name) == 0) {
      snprintf(out->name, sizeof out->name, "%s", p->name);
      out->bound[GS_SLO_TTFT] = p->ttft;
      out->bound[GS_SLO_TPOT] = p->tpot;
      return GS_OK;
    }
  gs_slo s;
  gs_slo_none(&s);
  snprintf(s.name, sizeof s.name, "custom");
  const char *at = text;
  for (;;) {
    const char *comma = strchr(at, ',');
    const size_t len = comma ? (size_t)(comma - at) : strlen(at);
    const char *eq = memchr(at, '=', len);
    int metric = -1;
    for (int m = 0; eq && m < GS_SLO_METRICS; m++)
      if (strlen(gs_slo_metric_names[m]) == (size_t)(eq - at) &&
          strncmp(at, gs_slo_metric_names[m], (size_t)(eq - at)) == 0)
        metric = m;
    if (metric < 0)
      return gs_error(GS_ERR_USAGE,
                      "option %s: '%.*s' is not METRIC=DURATION (metrics ttft, tpot, latency) "
                      "nor a preset (conversational, interactive)",
                      option, (int)len, at);
    if (isfinite(s.bound[metric]))
      return gs_error(GS_ERR_USAGE, "option %s: %s is given twice", option,
                      gs_slo_metric_names[metric]);
    if (!parse_duration(eq + 1, len - (size_t)(eq + 1 - at), &s.bound[metric]))
      return gs_error(GS_ERR_USAGE,
                      "option %s: '%.*s': a duration is a positive number with a unit (s, ms or "
                      "us), e.g. %s=100ms",
                      option, (int)len, at, gs_slo_metric_names[metric]);
    if (!comma) break;
    at = comma + 1;
  }
  *out = s;
  return GS_OK;
}

void gs_slo_describe(const gs_slo *slo, char *buf, size_t size) {
  if (!size) return;
  buf[0] = '\0';
  size_t used = 0;
  for (int m = 0; m < GS_SLO_METRICS; m++) {
    if (!isfinite(slo->bound[m]) || used + 1 >= size) continue;
    const double b = slo->bound[m];
    const double scale = b >= 1.0 ? 1.0 : b >= 1e-3 ? 1e3 : 1e6;
    const char *unit = b >= 1.0 ? "s" : b >= 1e-3 ? "ms" : "us";
    int w = snprintf(buf + used, size - used, "%s%s<=%g %s", used ? ", " : "",
                     gs_slo_metric_names[m], b * scale, unit);
    if (w < 0) return;
    used += (size_t)w < size - used ? (size_t)w : size - used - 1;
  }
}

int gs_slo_request_met(const gs_slo *slo, const gs_slo_request *q, int met[GS_SLO_METRICS]) {
  const double v[GS_SLO_METRICS] = {q->ttft, q->tpot, q->latency};
  int all = 1;
  for (int m = 0; m < GS_SLO_METRICS; m++) {
    if (!isfinite(slo->bound[m])) {
      met[m] = -1;
      continue;
    }
    if (!q->ok)
      met[m] = 0;
    else if (m == GS_SLO_TPOT && isnan(v[m]))
      met[m] = 1; // one output token: no time between tokens to bound
    else
      met[m] = isfinite(v[m]) && v[m] <= slo->bound[m];
    all = all && met[m];
  }
  return all;
}

/* Hyndman-Fan 7 percentile of sorted values that may hold +inf at the
 * top (a request that never got there). */
static double percentile_with_inf(const double *sorted, size_t n, double p) {
  if (n == 0) return NAN;
  const double h = (double)(n - 1) * p / 100.0;
  size_t lo = (size_t)floor(h);
  if (lo >= n - 1) return sorted[n - 1];
  const double frac = h - (double)lo;
  if (frac == 0.0) return sorted[lo];
  if (isinf(sorted[lo]) || isinf(sorted[lo + 1])) return INFINITY;
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

/* The 95% interval of the mean of per-request values x >= 0 (in runs).
 * gs_stats_ratio_interval drops replicates whose mean is not positive,
 * which for a share would drop every draw without a good request and
 * bias the interval up: it is given x + 1 over a constant 1 (a mean of at
 * least 1) and the 1 is taken off again. x is restored on return. */
static void mean_interval(double *x, const double *ones, size_t n, const size_t *run_sizes,
                          size_t n_runs, gs_stats_group *ga, gs_stats_group *gb, double *low,
                          double *high) {
  for (size_t i = 0; i < n; i++) x[i] += 1.0;
  size_t at = 0;
  for (size_t r = 0; r < n_runs; r++) {
    ga[r] = (gs_stats_group){x + at, run_sizes[r]};
    gb[r] = (gs_stats_group){ones + at, run_sizes[r]};
    at += run_sizes[r];
  }
  gs_stats_ratio_interval(ga, n_runs, gb, n_runs, low, high);
  for (size_t i = 0; i < n; i++) x[i] -= 1.0;
  *low -= 1.0;
  *high -= 1.0;
}

/* The share of indicator values ind[0..n) set, with its interval. */
static void share_of(double *ind, const double *ones, size_t n, const size_t *run_sizes,
                     size_t n_runs, gs_stats_group *ga, gs_stats_group *gb, gs_slo_figure *f) {
  double sum = 0.0;
  for (size_t i = 0; i < n; i++) sum += ind[i];
  f->value = sum / (double)n;
  mean_interval(ind, ones, n, run_sizes, n_runs, ga, gb, &f->low, &f->high);
}

static gs_slo_figure scaled(gs_slo_figure f, double by) {
  return (gs_slo_figure){f.value * by, f.low * by, f.high * by};
}

/* The load of the requests whose indices are pick[0..n) in runs
 * (GS_SLO_LOAD_SUSTAINED): 1 + the slope of TTFT against arrival over the
 * ok requests, each run about its means; run r holds run_sizes[r]
 * consecutive entries of pick. NaN when no arrival times differ. */
static double load_of(const gs_slo_request *q, const size_t *pick, const size_t *run_sizes,
                      size_t n_runs) {
  double sxy = 0.0, sxx = 0.0;
  size_t first = 0;
  for (size_t r = 0; r < n_runs; first += run_sizes[r], r++) {
    double sum_a = 0.0, sum_t = 0.0, count = 0.0;
    for (size_t i = first; i < first + run_sizes[r]; i++) {
      const gs_slo_request *x = &q[pick[i]];
      if (x->ok && isfinite(x->arrival) && isfinite(x->ttft)) {
        sum_a += x->arrival;
        sum_t += x->ttft;
        count += 1.0;
      }
    }
    if (count < 2.0) continue;
    const double mean_a = sum_a / count, mean_t = sum_t / count;
    for (size_t i = first; i < first + run_sizes[r]; i++) {
      const gs_slo_request *x = &q[pick[i]];
      if (x->ok && isfinite(x->arrival) && isfinite(x->ttft)) {
        sxy += (x->arrival - mean_a) * (x->ttft - mean_t);
        sxx += (x->arrival - mean_a) * (x->arrival - mean_a);
      }
    }
  }
  return sxx > 0.0 ? 1.0 + sxy / sxx : NAN;
}

/* The load and its 95% interval: a percentile bootstrap with the
 * project's replicates and seed (core/stats.h) that redraws each run's
 * requests with replacement, keeping the run's size. */
static gs_status load_with_interval(const gs_slo_request *q, size_t n, const size_t *run_sizes,
                                    size_t n_runs, gs_slo_figure *out) {
  *out = (gs_slo_figure){NAN, NAN, NAN};
  size_t *pick = malloc((n ? n : 1) * sizeof *pick);
  double *loads = malloc(GS_STATS_BOOTSTRAP_REPLICATES * sizeof *loads);
  if (!pick || !loads) {
    free(pick), free(loads);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the load's bootstrap of %zu requests", n);
  }
  for (size_t i = 0; i < n; i++) pick[i] = i;
  out->value = load_of(q, pick, run_sizes, n_runs);
  if (isfinite(out->value)) {
    gs_rng rng;
    gs_rng_seed(&rng, GS_STATS_BOOTSTRAP_SEED, 0);
    size_t kept = 0;
    for (size_t b = 0; b < GS_STATS_BOOTSTRAP_REPLICATES; b++) {
      size_t first = 0;
      for (size_t r = 0; r < n_runs; first += run_sizes[r], r++)
        for (size_t i = first; i < first + run_sizes[r]; i++)
          pick[i] = first + (size_t)gs_rng_below(&rng, run_sizes[r]);
      const double v = load_of(q, pick, run_sizes, n_runs);
      if (isfinite(v)) loads[kept++] = v;
    }
    if (kept >= 2) {
      gs_stats_sort(loads, kept);
      out->low = gs_stats_percentile_sorted(loads, kept, 2.5);
      out->high = gs_stats_percentile_sorted(loads, kept, 97.5);
    }
  }
  free(pick), free(loads);
  return GS_OK;
}

int gs_slo_stream_note(double stream, double slots, char *buf, size_t size) {
  if (size) buf[0] = '\0';
  if (!(stream < GS_SLO_STREAM_SLOTS * slots)) return 0;
  snprintf(buf, size,
           "each run's %.0f requests are %.2g times the %.0f the layout serves at once (replicas "
           "x batch): a rate above what it serves shows in the load only once the stream is "
           "longer (--samples %.0f or more)",
           stream, stream / slots, slots, GS_SLO_STREAM_SLOTS * slots);
  return 1;
}

int gs_slo_sustained(const gs_slo_goodput *g) { return !(g->load.value > GS_SLO_LOAD_SUSTAINED); }

int gs_slo_goodput_met(const gs_slo_goodput *g) {
  return g->percentile_met && gs_slo_sustained(g);
}

gs_status gs_slo_goodput_compute(const gs_slo *slo, const gs_slo_request *q, size_t n,
                                 const size_t *run_sizes, size_t n_runs, double seconds,
                                 gs_slo_goodput *out) {
  memset(out, 0, sizeof *out);
  const gs_slo_figure none = {NAN, NAN, NAN};
  for (int m = 0; m < GS_SLO_METRICS; m++) {
    out->share[m] = none;
    out->percentile_value[m] = NAN;
  }
  out->share_all = out->requests_per_second = out->tokens_per_second = none;
  out->requests = n;
  out->seconds = seconds;
  const gs_status loaded = load_with_interval(q, n, run_sizes, n_runs, &out->load);
  if (loaded != GS_OK || n == 0 || !gs_slo_any(slo)) return loaded;
  double *ind = malloc(n * sizeof *ind), *ones = malloc(n * sizeof *ones);
  double *vals = malloc(n * sizeof *vals);
  double *all = malloc(n * sizeof *all), *tokens = malloc(n * sizeof *tokens);
  gs_stats_group *ga = malloc((n_runs ? n_runs : 1) * sizeof *ga);
  gs_stats_group *gb = malloc((n_runs ? n_runs : 1) * sizeof *gb);
  gs_status status = GS_OK;
  if (!ind || !ones || !vals || !all || !tokens || !ga || !gb) {
    status = gs_error(GS_ERR_NOMEM, "cannot allocate the goodput of %zu requests", n);
    goto done;
  }
  double good_tokens = 0.0;
  for (size_t i = 0; i < n; i++) {
    int met[GS_SLO_METRICS];
    all[i] = gs_slo_request_met(slo, &q[i], met);
    ones[i] = 1.0;
    tokens[i] = all[i] ? q[i].tokens : 0.0;
    good_tokens += tokens[i];
    out->good += all[i] > 0.0;
  }
  out->percentile_met = 1;
  for (int m = 0; m < GS_SLO_METRICS; m++) {
    if (!isfinite(slo->bound[m])) continue;
    for (size_t i = 0; i < n; i++) {
      int met[GS_SLO_METRICS];
      gs_slo_request_met(slo, &q[i], met);
      ind[i] = met[m];
      const double v[GS_SLO_METRICS] = {q[i].ttft, q[i].tpot, q[i].latency};
      vals[i] = !q[i].ok || (m != GS_SLO_TPOT && !isfinite(v[m])) ? INFINITY
                : isnan(v[m]) ? 0.0 : v[m];
    }
    share_of(ind, ones, n, run_sizes, n_runs, ga, gb, &out->share[m]);
    gs_stats_sort(vals, n);
    out->percentile_value[m] = percentile_with_inf(vals, n, slo->percentile);
    out->percentile_met = out->percentile_met && out->percentile_value[m] <= slo->bound[m];
  }
  share_of(all, ones, n, run_sizes, n_runs, ga, gb, &out->share_all);
  const double per_second = seconds > 0.0 ? (double)n / seconds : NAN;
  out->requests_per_second = scaled(out->share_all, per_second);
  out->tokens_per_second.value = seconds > 0.0 ? good_tokens / seconds : NAN;
  mean_interval(tokens, ones, n, run_sizes, n_runs, ga, gb, &out->tokens_per_second.low,
                &out->tokens_per_second.high);
  out->tokens_per_second.low *= per_second;
  out->tokens_per_second.high *= per_second;
done:
  free(ind), free(ones), free(vals), free(all), free(tokens), free(ga), free(gb);
  return status;
}

static void put_figure(gs_json_build *b, cJSON *o, const char *name, const gs_slo_figure *f) {
  if (isnan(f->value)) {
    gs_json_put_null(b, o, name);
    return;
  }
  cJSON *j = gs_json_put_object(b, o, name);
  gs_json_put_number(b, j, "value", f->value);
  gs_json_put_number(b, j, "low", f->low);
  gs_json_put_number(b, j, "high", f->high);
}

void gs_slo_goodput_to_json(gs_json_build *b, cJSON *parent, const gs_slo *slo,
                            const gs_slo_goodput *g) {
  cJSON *o = gs_json_put_object(b, parent, "slo");
  gs_json_put_string_or_null(b, o, "name", slo->name);
  cJSON *t = gs_json_put_object(b, o, "targets_seconds");
  cJSON *share = NULL, *pct = NULL;
  gs_json_put_number(b, o, "percentile", slo->percentile);
  gs_json_put_u64(b, o, "requests", g->requests);
  gs_json_put_u64(b, o, "good", g->good);
  gs_json_put_number(b, o, "seconds", g->seconds);
  share = gs_json_put_object(b, o, "share_met");
  pct = gs_json_put_object(b, o, "percentile_seconds");
  for (int m = 0; m < GS_SLO_METRICS; m++) {
    gs_json_put_number(b, t, gs_slo_metric_names[m], slo->bound[m]);
    put_figure(b, share, gs_slo_metric_names[m], &g->share[m]);
    // An infinite percentile (requests that never finished) is null.
    gs_json_put_number(b, pct, gs_slo_metric_names[m], g->percentile_value[m]);
  }
  put_figure(b, share, "all", &g->share_all);
  put_figure(b, o, "goodput_requests_per_second", &g->requests_per_second);
  put_figure(b, o, "goodput_tokens_per_second", &g->tokens_per_second);
  gs_json_put_bool(b, o, "percentile_met", g->percentile_met);
  put_figure(b, o, "load", &g->load);
}

void gs_slo_from_json(const cJSON *j, gs_slo *out) {
  gs_slo_none(out);
  const cJSON *t = gs_json_member(j, "targets_seconds");
  for (int m = 0; m < GS_SLO_METRICS; m++) {
    const double v = gs_json_number_member(t, gs_slo_metric_names[m]);
    out->bound[m] = isfinite(v) && v > 0.0 ? v : NAN;
  }
  const double p = gs_json_number_member(j, "percentile");
  if (isfinite(p) && p > 0.0 && p <= 100.0) out->percentile = p;
  snprintf(out->name, sizeof out->name, "%s",
           gs_slo_any(out) ? gs_json_string_member(j, "name", "custom") : "");
}

/* "70.0% [52.3, 88.1]" */
static void share_text(const gs_slo_figure *f, char *buf, size_t size) {
  if (isfinite(f->low))
    snprintf(buf, size, "%.1f%% [%.1f, %.1f]", 100.0 * f->value, 100.0 * f->low,
             100.0 * f->high);
  else
    snprintf(buf, size, "%.1f%% (no interval)", 100.0 * f->value);
}

static void rate_text(const gs_slo_figure *f, const char *unit, char *buf, size_t size) {
  if (isfinite(f->low))
    snprintf(buf, size, "%.3g %s [%.3g, %.3g]", f->value, unit, f->low, f->high);
  else
    snprintf(buf, size, "%.3g %s (no interval)", f->value, unit);
}

void gs_slo_goodput_describe(const gs_slo *slo, const gs_slo_goodput *g, char *buf,
                             size_t size) {
  char rps[80], tps[80], all[64], each[GS_SLO_METRICS][64], pct[160] = "";
  rate_text(&g->requests_per_second, "requests/s", rps, sizeof rps);
  rate_text(&g->tokens_per_second, "tokens/s", tps, sizeof tps);
  share_text(&g->share_all, all, sizeof all);
  char per[3 * 80] = "";
  size_t used = 0, pused = 0;
  for (int m = 0; m < GS_SLO_METRICS; m++) {
    if (!isfinite(slo->bound[m])) continue;
    share_text(&g->share[m], each[m], sizeof each[m]);
    int w = snprintf(per + used, sizeof per - used, "%s%s %s", used ? ", " : "",
                     gs_slo_metric_names[m], each[m]);
    if (w > 0 && (size_t)w < sizeof per - used) used += (size_t)w;
    const double v = g->percentile_value[m];
    w = isfinite(v) ? snprintf(pct + pused, sizeof pct - pused, "%s%s %.4g ms", pused ? ", " : "",
                               gs_slo_metric_names[m], v * 1e3)
                    : snprintf(pct + pused, sizeof pct - pused, "%s%s never (unfinished requests)",
                               pused ? ", " : "", gs_slo_metric_names[m]);
    if (w > 0 && (size_t)w < sizeof pct - pused) pused += (size_t)w;
  }
  char targets[128], verdict[96];
  gs_slo_describe(slo, targets, sizeof targets);
  if (!g->percentile_met)
    snprintf(verdict, sizeof verdict, "TARGETS MISSED");
  else if (!gs_slo_sustained(g))
    snprintf(verdict, sizeof verdict,
             "targets met, but the rate NOT SUSTAINED (load %.2f [%.2f, %.2f] > %.2f)",
             g->load.value, g->load.low, g->load.high, GS_SLO_LOAD_SUSTAINED);
  else
    snprintf(verdict, sizeof verdict, "targets met");
  snprintf(buf, size,
           "targets %s (%s): goodput %s, %s; %s of %zu requests met every target (%s); p%g %s: "
           "%s",
           slo->name, targets, rps, tps, all, g->requests, per, slo->percentile, pct, verdict);
}

void gs_slo_frontier(const double *x, const double *y, size_t n, int *on) {
  for (size_t i = 0; i < n; i++) {
    on[i] = isfinite(x[i]) && isfinite(y[i]);
    for (size_t j = 0; on[i] && j < n; j++)
      if (j != i && isfinite(x[j]) && isfinite(y[j]) && x[j] >= x[i] && y[j] >= y[i] &&
          (x[j] > x[i] || y[j] > y[i]))
        on[i] = 0;
  }
}
