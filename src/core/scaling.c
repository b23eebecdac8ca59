/* Scaling maths, the single-vs-multi verdict and its wording (see scaling.h
 * and docs/report.md). */
#include "core/scaling.h"

#include "core/format.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* See scaling.h. */
const char *gs_scaling_name(gs_scaling scaling) {
  switch (scaling) {
    case GS_SCALING_STRONG: return "strong";
    case GS_SCALING_WEAK: return "weak";
    case GS_SCALING_NONE: break;
  }
  return "none";
}

gs_scaling gs_scaling_of(const char *name) {
  if (name && strcmp(name, "strong") == 0) return GS_SCALING_STRONG;
  if (name && strcmp(name, "weak") == 0) return GS_SCALING_WEAK;
  return GS_SCALING_NONE;
}

static int positive(double x) { return isfinite(x) && x > 0.0; }

/* See scaling.h. */
double gs_scaling_speedup(double base_throughput, double throughput) {
  if (!positive(base_throughput) || !positive(throughput)) return NAN;
  return throughput / base_throughput;
}

/* See scaling.h. */
double gs_scaling_efficiency(double speedup, int world_size) {
  if (!positive(speedup) || world_size < 1) return NAN;
  return speedup / (double)world_size;
}

/* See scaling.h. */
double gs_scaling_karp_flatt(double speedup, int world_size) {
  if (!positive(speedup) || world_size < 2) return NAN;
  const double n = (double)world_size;
  return (1.0 / speedup - 1.0 / n) / (1.0 - 1.0 / n);
}

/* See scaling.h. */
double gs_scaling_ideal_step(gs_scaling kind, double base_step, int world_size) {
  if (!isfinite(base_step) || world_size < 1) return NAN;
  return kind == GS_SCALING_STRONG ? base_step / (double)world_size : base_step;
}

/* See scaling.h. */
gs_verdict gs_scaling_verdict(double speedup) {
  if (!positive(speedup)) return GS_VERDICT_NONE;
  if (speedup >= GS_SCALING_BENEFICIAL) return GS_VERDICT_BENEFICIAL;
  if (speedup >= GS_SCALING_MARGINAL) return GS_VERDICT_MARGINAL;
  return GS_VERDICT_SINGLE;
}

/* See scaling.h. */
const char *gs_verdict_name(gs_verdict verdict) {
  switch (verdict) {
    case GS_VERDICT_BENEFICIAL: return "beneficial";
    case GS_VERDICT_MARGINAL: return "marginal";
    case GS_VERDICT_SINGLE: return "single GPU preferred";
    case GS_VERDICT_NONE: break;
  }
  return "none";
}

/* The threshold rule `verdict` satisfies into `out`: ">= 1.10",
 * "in [0.95, 1.10)" or "< 0.95", written from the thresholds themselves. */
static void verdict_rule(gs_verdict verdict, char *out, size_t size) {
  switch (verdict) {
    case GS_VERDICT_BENEFICIAL: snprintf(out, size, ">= %.2f", GS_SCALING_BENEFICIAL); return;
    case GS_VERDICT_MARGINAL:
      snprintf(out, size, "in [%.2f, %.2f)", GS_SCALING_MARGINAL, GS_SCALING_BENEFICIAL);
      return;
    case GS_VERDICT_SINGLE: snprintf(out, size, "< %.2f", GS_SCALING_MARGINAL); return;
    case GS_VERDICT_NONE: break;
  }
  snprintf(out, size, "-");
}

/* See scaling.h. */
void gs_scaling_verdict_words(gs_verdict verdict, const char *backend, char *out, size_t size) {
  const char *unit = backend && strcmp(backend, "cuda") == 0 ? "GPU" : "rank";
  switch (verdict) {
    case GS_VERDICT_BENEFICIAL: snprintf(out, size, "multi-%s beneficial", unit); return;
    case GS_VERDICT_MARGINAL: snprintf(out, size, "multi-%s marginal", unit); return;
    case GS_VERDICT_SINGLE: snprintf(out, size, "single %s preferred", unit); return;
    case GS_VERDICT_NONE: break;
  }
  snprintf(out, size, "no verdict");
}

/* See scaling.h. */
gs_scaling_point gs_scaling_point_of(const gs_measurement *m) {
  return (gs_scaling_point){.world_size = m->world_size, .ok = m->status == GS_OK,
                            .throughput = m->aggregate.throughput};
}

/* See scaling.h. */
int gs_scaling_baseline(const gs_scaling_point *points, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (points[i].world_size == 1 && points[i].ok && positive(points[i].throughput)) return (int)i;
  return -1;
}

/* See scaling.h. */
void gs_scaling_assess(const gs_scaling_point *points, size_t n, double base_throughput,
                       gs_scaling_assessment *out) {
  memset(out, 0, sizeof *out);
  out->point = -1;
  out->speedup = out->efficiency = out->karp_flatt = NAN;
  out->base_throughput = base_throughput;
  out->throughput = out->ideal_throughput = NAN;
  for (size_t i = 0; i < n; i++)
    if (points[i].world_size > out->largest) out->largest = points[i].world_size;
  for (size_t i = n; i-- > 0 && out->point < 0;)
    if (points[i].world_size > 1 && points[i].ok && positive(points[i].throughput))
      out->point = (int)i;
  if (out->largest < 2) {
    out->none_reason = "no scaling verdict: only 1 rank was measured";
  } else if (!positive(base_throughput)) {
    out->none_reason = "no scaling verdict: no usable 1-rank measurement (status ok with step "
                       "samples) to compute the speedup against";
  } else if (out->point < 0) {
    out->none_reason = "no scaling verdict: no measurement with more than 1 rank has status ok "
                       "and step samples";
  }
  if (out->none_reason) {
    out->point = -1;
    return;
  }
  const gs_scaling_point *p = &points[out->point];
  out->world_size = p->world_size;
  out->throughput = p->throughput;
  out->ideal_throughput = (double)p->world_size * base_throughput;
  out->speedup = gs_scaling_speedup(base_throughput, p->throughput);
  out->efficiency = gs_scaling_efficiency(out->speedup, p->world_size);
  out->karp_flatt = gs_scaling_karp_flatt(out->speedup, p->world_size);
  out->verdict = gs_scaling_verdict(out->speedup);
}

/* See scaling.h. */
void gs_scaling_verdict_sentence(const gs_scaling_assessment *a, const char *series,
                                 const char *backend, const char *item_unit, char *out,
                                 size_t size) {
  char words[64], rule[32], rate[32], ideal[32];
  gs_scaling_verdict_words(a->verdict, backend, words, sizeof words);
  verdict_rule(a->verdict, rule, sizeof rule);
  // Rates with an SI prefix ("12.9 G"), never e-notation.
  gs_format_rate(a->throughput, rate, sizeof rate);
  gs_format_rate(a->ideal_throughput, ideal, sizeof ideal);
  snprintf(out, size,
           "%s: %s: speedup %.2fx at %d ranks (%s), efficiency %.1f%%, Karp-Flatt serial "
           "fraction %.3f, throughput %s%s/s of ideal %s%s/s",
           series, words, a->speedup, a->world_size, rule, 100.0 * a->efficiency, a->karp_flatt,
           rate, item_unit ? item_unit : "items", ideal, item_unit ? item_unit : "items");
}

/* See scaling.h. */
void gs_scaling_series_label(const char *variant, const char *scenario, int task,
                             const char *task_spec, char *out, size_t size) {
  char task_text[160] = "";
  if (task >= 0)
    snprintf(task_text, sizeof task_text, "task %d%s%s%s", task, task_spec ? " (" : "",
             task_spec ? task_spec : "", task_spec ? ")" : "");
  const char *parts[3][2] = {{"variant ", variant}, {"scenario ", scenario}, {"", task_text}};
  size_t at = 0;
  out[0] = '\0';
  for (size_t i = 0; i < 3 && at < size; i++) {
    if (!parts[i][1] || !parts[i][1][0]) continue;
    at += (size_t)snprintf(out + at, size - at, "%s%s%s", at ? ", " : "", parts[i][0],
                           parts[i][1]);
  }
}

/* See scaling.h. */
void gs_scaling_series_name(const char *workload, const char *label, const char *split,
                            char *out, size_t size) {
  const int has_label = label && label[0], has_split = split && split[0];
  snprintf(out, size, "%s%s%s%s%s%s", workload, has_label || has_split ? " (" : "",
           has_label ? label : "", has_label && has_split ? ", " : "",
           has_split ? "split " : "", has_split ? split : "");
  if (has_label || has_split) {
    size_t len = strlen(out);
    if (len + 1 < size) snprintf(out + len, size - len, ")");
  }
}
