/* The roofline arithmetic of a measurement (see roofline.h): a declared
 * bound, one model's peak for it, and the achieved fraction with its
 * interval from the median step's. */
#include "core/roofline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/scaling.h"

static const struct {
  const char *name;
  gs_figure figure;
  double scale;        /* the figure's unit in units per second */
} bounds[GS_BOUND_COUNT] = {
    [GS_BOUND_NONE] = {"none", GS_FIG_COUNT, 0.0},
    [GS_BOUND_MEMORY] = {"memory", GS_FIG_MEMORY_BANDWIDTH_GBS, 1e9},
    [GS_BOUND_FP32] = {"fp32", GS_FIG_FP32_TFLOPS, 1e12},
    [GS_BOUND_TF32] = {"tf32", GS_FIG_TF32_TENSOR_TFLOPS, 1e12},
    [GS_BOUND_BF16] = {"bf16", GS_FIG_BF16_TENSOR_TFLOPS, 1e12},
};

const char *gs_bound_name(gs_bound bound) {
  return (unsigned)bound < GS_BOUND_COUNT ? bounds[bound].name : "none";
}

int gs_bound_figure(gs_bound bound, gs_figure *figure, double *scale) {
  if (bound <= GS_BOUND_NONE || bound >= GS_BOUND_COUNT) return 0;
  *figure = bounds[bound].figure;
  *scale = bounds[bound].scale;
  return 1;
}

double gs_roofline_model_peak(const gs_gpu_model *model, gs_bound bound) {
  gs_figure f;
  double scale;
  if (!model || !gs_bound_figure(bound, &f, &scale) || !model->fig[f].has) return NAN;
  return model->fig[f].value * scale;
}

gs_status gs_roofline_step_of(const gs_stats_group *groups, size_t n_groups,
                              gs_roofline_step *out) {
  *out = (gs_roofline_step){.median = NAN, .low = NAN, .high = NAN};
  size_t n = 0;
  for (size_t g = 0; g < n_groups; g++) n += groups[g].n;
  if (n == 0) return GS_OK;
  double *v = malloc(n * sizeof *v);
  if (!v) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu step times", n);
  size_t at = 0;
  for (size_t g = 0; g < n_groups; g++) {
    if (groups[g].n) memcpy(v + at, groups[g].samples, groups[g].n * sizeof *v);
    at += groups[g].n;
  }
  double low, high;
  const int covers = gs_stats_median_interval(v, n, &out->median, &low, &high);
  free(v);
  out->too_few = !covers;
  if (covers) out->low = low, out->high = high;
  return GS_OK;
}

void gs_roofline_rate_interval(double rate, const gs_roofline_step *step, double *low,
                               double *high) {
  *low = *high = NAN;
  const double m = step->median, l = step->low, h = step->high;
  if (!(isfinite(rate) && rate > 0 && isfinite(m) && m > 0 && isfinite(l) && l > 0 &&
        isfinite(h) && h >= l))
    return;
  *low = rate * (m / h);
  *high = rate * (m / l);
}

void gs_roofline_fraction_text(double fraction, double low, double high, int too_few,
                               const char *samples, char *buf, size_t size) {
  if (isfinite(fraction) && too_few)
    snprintf(buf, size, "%.1f%% (too few %s for an interval)", 100.0 * fraction, samples);
  else if (isfinite(fraction) && !(isfinite(low) && isfinite(high)))
    snprintf(buf, size, "%.1f%%", 100.0 * fraction);
  else
    gs_scaling_format_ratio(fraction, low, high, 100.0, 1, "%", buf, size);
}

void gs_roofline_compute(const gs_cost *cost, const gs_roofline_step *step, double peak,
                         const char *model, const char *why, gs_roofline_record *out) {
  memset(out, 0, sizeof *out);
  out->achieved_low = out->achieved_high = out->fraction_low = out->fraction_high = NAN;
  if (cost->bound <= GS_BOUND_NONE || cost->bound >= GS_BOUND_COUNT) return;
  out->bound = cost->bound;
  const double work = (double)(cost->bound == GS_BOUND_MEMORY ? cost->bytes : cost->flops);
  const double median = step->median;
  out->achieved = median > 0 && isfinite(median) && work > 0 ? work / median : NAN;
  gs_roofline_rate_interval(out->achieved, step, &out->achieved_low, &out->achieved_high);
  out->too_few_steps = isfinite(out->achieved) && step->too_few;
  const int known = peak > 0 && isfinite(peak);
  out->peak = known ? peak : NAN;
  out->fraction = known && isfinite(out->achieved) ? out->achieved / peak : NAN;
  if (isfinite(out->fraction))
    gs_roofline_rate_interval(out->fraction, step, &out->fraction_low, &out->fraction_high);
  snprintf(out->model, sizeof out->model, "%s", known && model ? model : "");
  snprintf(out->why, sizeof out->why, "%s",
           known ? "" : (why && why[0] ? why : "no peak figure for this device"));
}

/* A rate of `bound`'s kind: "1.29 TB/s" or "39.2 TFLOP/s"; "-" when not finite. */
static void rate_text(gs_bound bound, double v, char *buf, size_t size) {
  if (bound == GS_BOUND_MEMORY) {
    gs_format_value(GS_UNIT_BANDWIDTH, v, buf, size);
    return;
  }
  char rate[32];
  gs_format_rate(v, rate, sizeof rate);
  snprintf(buf, size, "%s%s", rate, strcmp(rate, "-") == 0 ? "" : "FLOP/s");
}

void gs_roofline_describe(const gs_roofline_record *r, char *buf, size_t size) {
  char achieved[48], peak[48];
  rate_text(r->bound, r->achieved, achieved, sizeof achieved);
  if (!isfinite(r->achieved) && isfinite(r->peak)) {
    rate_text(r->bound, r->peak, peak, sizeof peak);
    snprintf(buf, size, "%s: no step timed (peak %s, %s)", gs_bound_name(r->bound), peak,
             r->model[0] ? r->model : "peak");
  } else if (isfinite(r->fraction)) {
    rate_text(r->bound, r->peak, peak, sizeof peak);
    char fraction[96];
    gs_roofline_fraction_text(r->fraction, r->fraction_low, r->fraction_high, r->too_few_steps,
                              "steps", fraction, sizeof fraction);
    snprintf(buf, size, "%s: %s = %s of %s (%s)", gs_bound_name(r->bound), achieved, fraction,
             peak, r->model[0] ? r->model : "peak");
  } else {
    snprintf(buf, size, "%s: %s; no bound known: %s", gs_bound_name(r->bound), achieved,
             r->why[0] ? r->why : "no time measured");
  }
}
