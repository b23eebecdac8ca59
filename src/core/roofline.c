/* The roofline arithmetic of a measurement (see roofline.h): a declared
 * bound, one model's peak for it, and the achieved fraction. */
#include "core/roofline.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/format.h"

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

void gs_roofline_compute(const gs_cost *cost, double step_seconds, double peak, const char *model,
                         const char *why, gs_roofline_record *out) {
  memset(out, 0, sizeof *out);
  if (cost->bound <= GS_BOUND_NONE || cost->bound >= GS_BOUND_COUNT) return;
  out->bound = cost->bound;
  const double work = (double)(cost->bound == GS_BOUND_MEMORY ? cost->bytes : cost->flops);
  out->achieved = step_seconds > 0 && isfinite(step_seconds) && work > 0 ? work / step_seconds : NAN;
  const int known = peak > 0 && isfinite(peak);
  out->peak = known ? peak : NAN;
  out->fraction = known && isfinite(out->achieved) ? out->achieved / peak : NAN;
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
    snprintf(buf, size, "%s: %s = %.1f%% of %s (%s)", gs_bound_name(r->bound), achieved,
             100.0 * r->fraction, peak, r->model[0] ? r->model : "peak");
  } else {
    snprintf(buf, size, "%s: %s; no bound known: %s", gs_bound_name(r->bound), achieved,
             r->why[0] ? r->why : "no time measured");
  }
}
