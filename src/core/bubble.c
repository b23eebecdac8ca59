/* The bubble of a pipeline, its stage imbalance, their intervals and the
 * verdict against (p-1)/m (bubble.h; docs/report.md, "Pipeline"). */
#include "core/bubble.h"

#include <math.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/stats.h"

/* See bubble.h. */
gs_bubble_verdict gs_bubble_verdict_of(double bubble, double low, double high, double formula) {
  if (!isfinite(bubble)) return GS_BUBBLE_UNKNOWN;
  if (!isfinite(low) || !isfinite(high) || !isfinite(formula)) return GS_BUBBLE_INCONCLUSIVE;
  const double lo = formula * (1.0 - GS_BUBBLE_TOLERANCE), hi = formula * (1.0 + GS_BUBBLE_TOLERANCE);
  if (low >= lo && high <= hi) return GS_BUBBLE_WITHIN;
  if (low > hi) return GS_BUBBLE_ABOVE;
  if (high < lo) return GS_BUBBLE_BELOW;
  return GS_BUBBLE_INCONCLUSIVE;
}

/* See bubble.h. */
const char *gs_bubble_verdict_name(gs_bubble_verdict v) {
  switch (v) {
  case GS_BUBBLE_WITHIN: return "within 15%";
  case GS_BUBBLE_ABOVE: return "above";
  case GS_BUBBLE_BELOW: return "below";
  case GS_BUBBLE_INCONCLUSIVE: return "inconclusive";
  case GS_BUBBLE_UNKNOWN: break;
  }
  return "-";
}

/* See bubble.h. */
char *gs_bubble_verdict_text(const gs_bubble *b, char *buf, size_t size) {
  const double lo = 100.0 * (1.0 - GS_BUBBLE_TOLERANCE), hi = 100.0 * (1.0 + GS_BUBBLE_TOLERANCE);
  switch (b->verdict) {
  case GS_BUBBLE_WITHIN:
    snprintf(buf, size, "within 15%% of (p-1)/m");
    break;
  case GS_BUBBLE_ABOVE:
    snprintf(buf, size, "above (p-1)/m by more than 15%% (the whole interval above %.0f%% of it)",
             hi);
    break;
  case GS_BUBBLE_BELOW:
    snprintf(buf, size, "below (p-1)/m by more than 15%% (the whole interval below %.0f%% of it)",
             lo);
    break;
  case GS_BUBBLE_INCONCLUSIVE:
    if (!isfinite(b->low))
      snprintf(buf, size, "inconclusive against (p-1)/m: no interval (fewer than 2 samples)");
    else
      snprintf(buf, size, "inconclusive against (p-1)/m: the interval straddles %.0f%% or %.0f%% "
               "of it (more runs or a longer measurement decide)", lo, hi);
    break;
  case GS_BUBBLE_UNKNOWN:
    if (size) buf[0] = '\0';
    break;
  }
  // Outside the formula's 15%: does the stages' imbalance explain it?
  const size_t used = strlen(buf);
  if ((b->verdict == GS_BUBBLE_ABOVE || b->verdict == GS_BUBBLE_BELOW) && isfinite(b->expected) &&
      used < size) {
    const char *against = b->expected_verdict == GS_BUBBLE_WITHIN ? "within 15% of it: the "
                                                                    "imbalance explains the gap"
                          : b->expected_verdict == GS_BUBBLE_ABOVE ? "above it too"
                          : b->expected_verdict == GS_BUBBLE_BELOW ? "below it too"
                                                                    : "inconclusive against it";
    snprintf(buf + used, size - used,
             "; with the measured imbalance, (p-1 + (m-1)(imbalance-1))/m = %.1f%%, and the "
             "bubble is %s",
             100.0 * b->expected, against);
  }
  return buf;
}

/* See bubble.h. */
double gs_bubble_expected(int stages, int micro, double imbalance) {
  return (stages - 1.0 + (micro - 1.0) * (imbalance - 1.0)) / micro;
}

/* See bubble.h. */
gs_status gs_bubble_compute(const gs_bubble_samples *in, gs_bubble *out) {
  const int P = in->stages;
  if (P < 2 || in->micro < 1)
    GS_BUG("pipeline bubble of %d stages and %d micro-batches", in->stages, in->micro);
  *out = (gs_bubble){.bubble = NAN, .low = NAN, .high = NAN, .imbalance = NAN,
                     .imbalance_low = NAN, .imbalance_high = NAN, .slowest = -1,
                     .expected = NAN};
  out->formula = (P - 1.0) / in->micro;
  size_t n = 0;
  for (size_t r = 0; r < in->n_runs; r++) n += in->run_samples[r];
  out->samples = n;
  if (n == 0) return GS_OK;
  // The slowest stage and the point figures from the sums.
  double busy = 0.0, idle = 0.0, slowest = -INFINITY;
  for (int s = 0; s < P; s++) {
    double b = 0.0;
    for (size_t i = 0; i < n; i++) {
      b += in->busy[i * P + s];
      idle += in->idle[i * P + s];
    }
    busy += b;
    if (b > slowest) slowest = b, out->slowest = s;
  }
  if (!(busy > 0.0) || !isfinite(idle)) return GS_OK;
  out->bubble = idle / busy;
  out->imbalance = slowest / (busy / P);
  // Per sample: Σ idle and Σ busy (the bubble), the slowest stage's busy
  // and the mean busy (the imbalance); the runs are the groups.
  double *x = malloc(4 * n * sizeof *x);
  gs_stats_group *g = malloc(4 * (in->n_runs ? in->n_runs : 1) * sizeof *g);
  if (!x || !g) {
    free(x), free(g);
    return gs_error(GS_ERR_NOMEM, "out of memory for a pipeline's bubble interval");
  }
  double *si = x, *sb = x + n, *top = x + 2 * n, *mean = x + 3 * n;
  for (size_t i = 0; i < n; i++) {
    si[i] = sb[i] = 0.0;
    for (int s = 0; s < P; s++) si[i] += in->idle[i * P + s], sb[i] += in->busy[i * P + s];
    top[i] = in->busy[i * P + out->slowest];
    mean[i] = sb[i] / P;
  }
  const size_t R = in->n_runs;
  size_t at = 0;
  for (size_t r = 0; r < R; r++) {
    const size_t k = in->run_samples[r];
    g[r] = (gs_stats_group){si + at, k};
    g[R + r] = (gs_stats_group){sb + at, k};
    g[2 * R + r] = (gs_stats_group){top + at, k};
    g[3 * R + r] = (gs_stats_group){mean + at, k};
    at += k;
  }
  gs_stats_paired_ratio_interval(g, g + R, R, &out->low, &out->high);
  gs_stats_paired_ratio_interval(g + 2 * R, g + 3 * R, R, &out->imbalance_low,
                                 &out->imbalance_high);
  free(x), free(g);
  out->verdict = gs_bubble_verdict_of(out->bubble, out->low, out->high, out->formula);
  out->expected = gs_bubble_expected(P, in->micro, out->imbalance);
  out->expected_verdict = gs_bubble_verdict_of(out->bubble, out->low, out->high, out->expected);
  return GS_OK;
}

/* See bubble.h. */
void gs_bubble_to_json(gs_json_build *b, cJSON *o, const gs_bubble *x) {
  gs_json_put_number(b, o, "bubble", x->bubble);
  gs_json_put_number(b, o, "bubble_low", x->low);
  gs_json_put_number(b, o, "bubble_high", x->high);
  gs_json_put_number(b, o, "bubble_formula", x->formula);
  if (x->verdict != GS_BUBBLE_UNKNOWN)
    gs_json_put_string(b, o, "bubble_verdict", gs_bubble_verdict_name(x->verdict));
  else
    gs_json_put_null(b, o, "bubble_verdict");
  gs_json_put_number(b, o, "imbalance", x->imbalance);
  gs_json_put_number(b, o, "imbalance_low", x->imbalance_low);
  gs_json_put_number(b, o, "imbalance_high", x->imbalance_high);
  gs_json_put_number(b, o, "bubble_expected", x->expected);
  if (x->expected_verdict != GS_BUBBLE_UNKNOWN)
    gs_json_put_string(b, o, "bubble_expected_verdict",
                       gs_bubble_verdict_name(x->expected_verdict));
  else
    gs_json_put_null(b, o, "bubble_expected_verdict");
}
