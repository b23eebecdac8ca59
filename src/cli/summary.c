/* Summary table of measurements for the terminal and results/summary.txt. */
#include "cli/summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_driver.h"
#include "core/file.h"
#include "core/roofline.h"
#include "core/scaling.h"
#include "measure/sweep.h"
#include "report/render/render.h"

/* Measurements of one series a verdict looks at (rank counts x splits). */
#define GS_SUMMARY_MAX_SERIES_POINTS 256

static const char *verify_word(gs_verify_status s) {
  switch (s) {
    case GS_VERIFY_PASSED: return "passed";
    case GS_VERIFY_FAILED: return "FAILED";
    case GS_VERIFY_SKIPPED: break;
  }
  return "skipped";
}

static void device_names(const gs_measurement *m, const gs_environment *env, char *buf,
                         size_t size) {
  if (strcmp(m->backend, "cuda") != 0) {
    snprintf(buf, size, "%d CPU rank%s", m->world_size, m->world_size == 1 ? "" : "s");
    return;
  }
  size_t at = 0;
  buf[0] = '\0';
  for (int k = 0; k < m->world_size && at < size; k++) {
    int d = m->devices[k];
    at += (size_t)snprintf(buf + at, size - at, "%s%d", k ? "," : "GPU ", d);
  }
  if (env && env->gpu_count > 0 && m->devices[0] >= 0 && (size_t)m->devices[0] < env->gpu_count &&
      at < size)
    snprintf(buf + at, size - at, " (%s)", env->gpus[m->devices[0]].name);
}

static void speedup_cells(const gs_measurement *ms, size_t count, size_t i, char *speedup,
                          char *eff, size_t size);

void gs_summary_print(FILE *out, const char *title, const gs_measurement *ms, size_t count,
                      const gs_environment *env, const char *samples_note) {
  if (count == 0) return;
  const gs_measurement *first = &ms[0];
  char devices[GS_TEXT_LONG];
  device_names(&ms[count - 1], env, devices, sizeof devices);
  fprintf(out, "\n%s\n", title);
  char scaling[GS_TEXT_SHORT + 16] = "";
  if (strcmp(first->scaling, "none") != 0) snprintf(scaling, sizeof scaling, ", %s scaling", first->scaling);
  fprintf(out, "  backend %s%s, %s; throughput in %s/s\n\n", first->backend, scaling, devices,
          first->cost.item_unit ? first->cost.item_unit : "items");
  fprintf(out, "  %5s  %11s  %11s  %11s  %6s  %10s  %-19s  %-20s  %7s  %-8s %s\n", "ranks", "median",
          "p95", "p99", "cv", "throughput", "speedup", "effic", "cold", "verify", "status");
  // One unit per column (core/format's rule), as in the report's tables.
  double *column = malloc(count * sizeof *column);
  gs_unit unit[4];
  for (size_t c = 0; c < 4; c++) {
    for (size_t i = 0; column && i < count; i++) {
      const gs_stats *s = &ms[i].aggregate.step;
      const double v[4] = {s->median, s->p95, s->p99, ms[i].aggregate.throughput};
      column[i] = (c < 3 && s->n == 0) || !(v[c] > 0.0) ? NAN : v[c];
    }
    unit[c] = gs_unit_for(c < 3 ? GS_UNIT_SECONDS : GS_UNIT_RATE, column, column ? count : 0);
  }
  free(column);
  for (size_t i = 0; i < count; i++) {
    const gs_measurement *m = &ms[i];
    const gs_stats *s = &m->aggregate.step;
    char median[32], p95[32], p99[32], rate[32], speedup[64], eff[64], cold[32] = "-";
    gs_unit_format(&unit[0], s->n ? s->median : NAN, median, sizeof median);
    gs_unit_format(&unit[1], s->n ? s->p95 : NAN, p95, sizeof p95);
    gs_unit_format(&unit[2], s->n ? s->p99 : NAN, p99, sizeof p99);
    gs_unit_format(&unit[3], m->aggregate.throughput > 0.0 ? m->aggregate.throughput : NAN, rate,
                   sizeof rate);
    speedup_cells(ms, count, i, speedup, eff, sizeof speedup);
    if (m->aggregate.cold_start_ratio > 0.0)
      snprintf(cold, sizeof cold, "%.2fx", m->aggregate.cold_start_ratio);
    fprintf(out, "  %5d  %11s  %11s  %11s  %5.1f%%  %10s  %-19s  %-20s  %7s  %-8s %s\n", m->world_size,
            median, p95, p99, s->n ? 100.0 * s->cv : 0.0, rate, speedup, eff, cold,
            verify_word(m->verification.status), m->status == GS_OK ? "ok" : gs_status_name(m->status));
  }
  if (samples_note)
    fprintf(out, "\n  median/p95/p99: %s\n", samples_note);
  else
    fprintf(out, "\n  median/p95/p99: step time (slowest rank per iteration, %s); throughput: "
                 "items / mean step; cold: first iteration / median step\n",
            first->n_runs && first->runs[0].n_ranks && first->runs[0].ranks[0].device_seconds
                ? "CUDA events"
                : "monotonic clock");
  for (size_t i = 0; i < count; i++) {
    const gs_measurement *m = &ms[i];
    char text[GS_TEXT_LONG];
    gs_stats_describe_warnings(&m->aggregate.step, text, sizeof text);
    if (m->aggregate.step.n && text[0])
      fprintf(out, "  warning: %d rank%s: %s\n", m->world_size, m->world_size == 1 ? "" : "s", text);
    if (m->status != GS_OK)
      fprintf(out, "  error: %d rank%s: %s\n", m->world_size, m->world_size == 1 ? "" : "s",
              m->error);
  }
}

/* Throttle reason names seen, comma-separated; "-" when none, "?" unknown. */
static void throttle_text(const gs_telemetry_rank *r, char *buf, size_t size) {
  snprintf(buf, size, "%s", r->throttle_known ? "-" : "?");
  size_t at = 0;
  for (unsigned b = 0; r->throttle_known && b < 64; b++) {
    unsigned long long bit = 1ull << b;
    if (!(r->throttle_seen & bit) || at >= size) continue;
    const char *name = gs_nvml_throttle_name(bit);
    at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? "," : "", name ? name : "other");
  }
}

/* A mean (or max) with its unit, "-" when the field was never given. */
static void format_field(const gs_telemetry_range *r, int peak, double scale, const char *unit,
                         char *buf, size_t size) {
  if (r->n == 0)
    snprintf(buf, size, "-");
  else
    snprintf(buf, size, "%.1f %s", (peak ? r->max : gs_telemetry_range_mean(r)) * scale, unit);
}

void gs_summary_print_telemetry(FILE *out, const gs_measurement *ms, const gs_telemetry *tm,
                                size_t count) {
  if (count == 0) return;
  int any = 0;
  for (size_t i = 0; i < count; i++) any |= tm[i].available;
  if (!any) {
    fprintf(out, "  telemetry: unavailable: %s\n", tm[count - 1].reason);
    return;
  }
  fprintf(out, "\n  GPU telemetry (NVML every %g s over the whole measurement)\n",
          tm[count - 1].interval_seconds);
  fprintf(out, "  %5s  %4s  %8s  %10s  %12s  %10s  %10s  %s\n", "ranks", "GPU", "samples",
          "util mean", "memory peak", "power mean", "SM clock", "throttle reasons seen");
  for (size_t i = 0; i < count; i++) {
    if (!tm[i].available) {
      fprintf(out, "  %5d  telemetry unavailable: %s\n", ms[i].world_size, tm[i].reason);
      continue;
    }
    for (size_t k = 0; k < tm[i].n_ranks; k++) {
      const gs_telemetry_rank *r = &tm[i].ranks[k];
      char util[32], mem[32], power[32], clock[32], thr[GS_TEXT_LONG];
      format_field(&r->range[GS_TELEMETRY_UTILIZATION], 0, 1.0, "%", util, sizeof util);
      format_field(&r->range[GS_TELEMETRY_MEMORY_USED], 1, 1.0 / 1073741824.0, "GiB", mem,
                   sizeof mem);
      format_field(&r->range[GS_TELEMETRY_POWER], 0, 1.0, "W", power, sizeof power);
      format_field(&r->range[GS_TELEMETRY_SM_CLOCK], 0, 1.0, "MHz", clock, sizeof clock);
      throttle_text(r, thr, sizeof thr);
      fprintf(out, "  %5d  %4d  %8zu  %10s  %12s  %10s  %10s  %s\n", ms[i].world_size, r->device,
              r->samples, util, mem, power, clock, thr);
    }
  }
}

/* The split policy of measurement `m` ("even", "proportional"; "" unsplit). */
static const char *split_policy(const gs_measurement *m) {
  return gs_split_policy_name(m->split.policy);
}

/* 1 when `a` and `b` belong to one series (docs/report.md: in one sweep the
 * workload, backend, scaling and options agree; variant and split policy
 * tell series apart), ignoring the split when `any_split`. */
static int same_series(const gs_measurement *a, const gs_measurement *b, int any_split) {
  return strcmp(a->workload, b->workload) == 0 && strcmp(a->backend, b->backend) == 0 &&
         strcmp(a->scaling, b->scaling) == 0 && strcmp(a->variant, b->variant) == 0 &&
         (any_split || strcmp(split_policy(a), split_policy(b)) == 0);
}

/* Index of the 1-rank baseline of the series of ms[first]: its own, else
 * (a split series has no 1-rank row: one rank has nothing to split) that
 * of the unsplit series, else of the even one, as the report does. -1
 * when none. */
static long series_baseline(const gs_measurement *ms, size_t count, size_t first) {
  const char *order[3] = {split_policy(&ms[first]), "", "even"};
  for (size_t o = 0; o < 3; o++) {
    for (size_t k = 0; k < count; k++) {
      if (!same_series(&ms[k], &ms[first], 1) || strcmp(split_policy(&ms[k]), order[o]) != 0)
        continue;
      const gs_scaling_point p = gs_scaling_point_of(&ms[k], NULL);
      if (gs_scaling_baseline(&p, 1) == 0) return (long)k;
    }
  }
  return -1;
}

/* What the verdict rule knows of the host (core/scaling.h). */
static gs_scaling_host host_of(const gs_environment *env, const gs_measurement *m) {
  gs_scaling_host h = {.cores = env ? env->cpu_logical_cores : 0,
                       .load_average = env ? env->load_average : NAN,
                       .cpu_ranks = gs_scaling_cpu_ranks(m->backend, m->workload)};
  // The cache a rank has to itself, as the report reads it from the
  // document (gs_scaling_host_add_document).
  const int cpu = strcmp(m->backend, "cpu") == 0;
  if (env && cpu && env->cpu_l2_cache_bytes > 0) {
    h.cache_bytes = (double)env->cpu_l2_cache_bytes;
    h.cache_name = "L2 cache of a CPU core";
  }
  for (size_t g = 0; env && !cpu && g < env->gpu_count; g++)
    if (env->gpus[g].index == m->devices[0] && env->gpus[g].l2_cache_bytes > 0) {
      h.cache_bytes = (double)env->gpus[g].l2_cache_bytes;
      h.cache_name = "GPU's L2 cache";
    }
  return h;
}

/* Adds what measurement `m`'s telemetry `tm` (may be NULL) tells its point:
 * read from the telemetry's document member by the function the report
 * uses, so that both name the same causes. */
static void add_telemetry(gs_scaling_point *p, const gs_telemetry *tm) {
  if (!tm) return;
  cJSON *m = cJSON_CreateObject();
  cJSON *t = gs_telemetry_to_json(tm);
  if (m && t && cJSON_AddItemToObject(m, "telemetry", t)) {
    t = NULL;
    gs_scaling_point_add_document(p, m);
  }
  cJSON_Delete(t);
  cJSON_Delete(m);
}

/* The step-sample groups of measurement `m` (freed by the caller), NULL
 * when memory runs out; the point then has no interval. */
static gs_stats_group *groups_of(const gs_measurement *m) {
  return malloc((m->n_runs ? m->n_runs : 1) * sizeof(gs_stats_group));
}

/* The verdict of the series that starts at ms[first] (see scaling.h), its
 * name (with `scenario`, may be NULL) into `name`; 0 when it has none. */
static int series_verdict(const gs_measurement *ms, const gs_telemetry *tm, size_t count,
                          size_t first, const gs_environment *env, const char *scenario,
                          gs_scaling_assessment *a, char *name, size_t name_size) {
  gs_scaling_point points[GS_SUMMARY_MAX_SERIES_POINTS];
  gs_stats_group *groups[GS_SUMMARY_MAX_SERIES_POINTS];
  size_t n = 0;
  for (size_t k = first; k < count && n < GS_SUMMARY_MAX_SERIES_POINTS; k++) {
    if (!same_series(&ms[k], &ms[first], 0)) continue;
    groups[n] = groups_of(&ms[k]);
    points[n] = gs_scaling_point_of(&ms[k], groups[n]);
    add_telemetry(&points[n], tm ? &tm[k] : NULL);
    n++;
  }
  const long b = series_baseline(ms, count, first);
  gs_stats_group *base_groups = b >= 0 ? groups_of(&ms[b]) : NULL;
  gs_scaling_point base = b >= 0 ? gs_scaling_point_of(&ms[b], base_groups) : (gs_scaling_point){0};
  if (b >= 0) add_telemetry(&base, tm ? &tm[b] : NULL);
  const gs_scaling_host host = host_of(env, &ms[first]);
  gs_scaling_assess(points, n, b >= 0 ? &base : NULL, &host, a);
  for (size_t k = 0; k < n; k++) free(groups[k]);
  free(base_groups);
  if (a->verdict == GS_VERDICT_NONE) return 0;
  char label[GS_TEXT_LONG];
  gs_scaling_series_label(ms[first].variant, scenario, -1, NULL, label, sizeof label);
  gs_scaling_series_name(ms[first].workload, label, split_policy(&ms[first]), name, name_size);
  return 1;
}

/* The speedup and efficiency cells of ms[i] with their 95% intervals
 * against its series' baseline ("1.72x [1.69, 1.75]"); "-" when it has no
 * speedup. */
static void speedup_cells(const gs_measurement *ms, size_t count, size_t i, char *speedup,
                          char *eff, size_t size) {
  snprintf(speedup, size, "-");
  snprintf(eff, size, "-");
  const gs_measurement *m = &ms[i];
  const long b = series_baseline(ms, count, i);
  // A series is what was measured together: one rank count alone is a
  // single run, with no speedup.
  int sweep = 0;
  for (size_t k = 0; k < count; k++) sweep |= same_series(&ms[k], m, 1) && ms[k].world_size > 1;
  if (b < 0 || m->status != GS_OK || !sweep) return;
  const double speedup_value = gs_scaling_speedup(ms[b].aggregate.throughput, m->aggregate.throughput);
  double lo = NAN, hi = NAN;
  if ((size_t)b != i) {
    gs_stats_group *gb = groups_of(&ms[b]), *gm = groups_of(m);
    if (gb && gm) {
      const gs_scaling_point base = gs_scaling_point_of(&ms[b], gb), p = gs_scaling_point_of(m, gm);
      gs_scaling_interval(&base, &p, speedup_value, &lo, &hi);
    }
    free(gb);
    free(gm);
  } else if ((size_t)b == i) {
    lo = hi = 1.0;  // the baseline against itself
  }
  const double n = (double)m->world_size;
  gs_scaling_format_ratio(speedup_value, lo, hi, 1.0, 2, "x", speedup, size);
  gs_scaling_format_ratio(gs_scaling_efficiency(speedup_value, m->world_size), lo / n, hi / n,
                          100.0, 1, "%", eff, size);
}

/* 1 when ms[i] is the first measurement of its series. */
static int series_start(const gs_measurement *ms, size_t i) {
  for (size_t k = 0; k < i; k++)
    if (same_series(&ms[k], &ms[i], 0)) return 0;
  return 1;
}

void gs_decision_table_print(FILE *out, const gs_measurement *ms, const gs_telemetry *tm,
                             size_t count, const gs_environment *env, const char *scenario) {
  int width = 6, any = 0;
  char name[GS_TEXT_LONG];
  gs_scaling_assessment a;
  for (size_t i = 0; i < count; i++) {
    if (!series_start(ms, i) || !series_verdict(ms, tm, count, i, env, scenario, &a, name, sizeof name)) continue;
    if ((int)strlen(name) > width) width = (int)strlen(name);
    any = 1;
  }
  if (!any) return;
  const char *unit = ms[0].cost.item_unit ? ms[0].cost.item_unit : "items";
  fprintf(out,
          "\n  single vs multi (%s/s; speedup and efficiency with their 95%% intervals; "
          "beneficial when the whole interval is >= %.2fx, marginal within [%.2fx, %.2fx))\n",
          unit, GS_SCALING_BENEFICIAL, GS_SCALING_MARGINAL, GS_SCALING_BENEFICIAL);
  fprintf(out, "  %-*s %5s %10s %10s %-19s %-20s  %s\n", width, "series", "ranks", "single",
          "multi", "speedup", "effic", "recommendation");
  // One unit per column (core/format's rule), as in the report's tables.
  double *column = malloc(2 * count * sizeof *column);
  size_t rows = 0;
  for (size_t i = 0; column && i < count; i++) {
    if (!series_start(ms, i) || !series_verdict(ms, tm, count, i, env, scenario, &a, name, sizeof name)) continue;
    column[rows] = a.base_throughput;
    column[count + rows++] = a.throughput;
  }
  const gs_unit single_unit = gs_unit_for(GS_UNIT_RATE, column, column ? rows : 0);
  const gs_unit multi_unit = gs_unit_for(GS_UNIT_RATE, column ? column + count : NULL,
                                         column ? rows : 0);
  free(column);
  for (size_t i = 0; i < count; i++) {
    if (!series_start(ms, i) || !series_verdict(ms, tm, count, i, env, scenario, &a, name, sizeof name)) continue;
    char one[32], many[32], words[64], speedup[64], eff[64];
    gs_unit_format(&single_unit, a.base_throughput, one, sizeof one);
    gs_unit_format(&multi_unit, a.throughput, many, sizeof many);
    gs_scaling_verdict_words(a.verdict, ms[i].backend, words, sizeof words);
    gs_scaling_format_ratio(a.speedup, a.speedup_low, a.speedup_high, 1.0, 2, "x", speedup,
                            sizeof speedup);
    gs_scaling_format_ratio(a.efficiency, a.efficiency_low, a.efficiency_high, 100.0, 1, "%", eff,
                            sizeof eff);
    fprintf(out, "  %-*s %5d %10s %10s %-19s %-20s  %s\n", width, name, a.world_size, one, many,
            speedup, eff, words);
  }
  fprintf(out, "\n  Verdict (as `gpuscale report` gives it for the result file):\n");
  for (size_t i = 0; i < count; i++) {
    if (!series_start(ms, i) || !series_verdict(ms, tm, count, i, env, scenario, &a, name, sizeof name)) continue;
    char sentence[2048];
    gs_scaling_verdict_sentence(&a, name, ms[i].backend, ms[i].cost.item_unit, sentence,
                                sizeof sentence);
    fprintf(out, "  - %s\n", sentence);
  }
}

/* One line per proportional measurement: both splits' throughput and the
 * gain of proportional over even. */
static void print_split_gains(FILE *out, const gs_measurement *ms, size_t count) {
  for (size_t i = 0; i + 1 < count; i++) {
    const gs_split_record *prop = &ms[i + 1].split;
    if (ms[i].split.policy == GS_SPLIT_NONE || prop->policy == GS_SPLIT_NONE) continue;
    char rate_even[32], rate_prop[32], list[GS_TEXT_LONG] = "";
    gs_format_rate(ms[i].aggregate.throughput, rate_even, sizeof rate_even);
    gs_format_rate(ms[i + 1].aggregate.throughput, rate_prop, sizeof rate_prop);
    size_t at = 0;
    for (int k = 0; k < prop->ranks && at < sizeof list; k++)
      at += (size_t)snprintf(list + at, sizeof list - at, "%s%llu", k ? "," : "",
                             (unsigned long long)prop->units[k]);
    // The gain is a ratio like a speedup: its interval by the same bootstrap.
    gs_stats_group *even_groups = groups_of(&ms[i]), *prop_groups = groups_of(&ms[i + 1]);
    const gs_scaling_point even = gs_scaling_point_of(&ms[i], even_groups);
    const gs_scaling_point proportional = gs_scaling_point_of(&ms[i + 1], prop_groups);
    const double gain = gs_scaling_speedup(even.throughput, proportional.throughput);
    double low = NAN, high = NAN;
    if (even_groups && prop_groups) gs_scaling_interval(&even, &proportional, gain, &low, &high);
    free(even_groups);
    free(prop_groups);
    char gain_text[64];
    gs_scaling_format_ratio(gain, low, high, 1.0, 2, "x", gain_text, sizeof gain_text);
    fprintf(out, "  split at %d ranks: even %s/s, proportional (units %s) %s/s: gain %s\n",
            ms[i].world_size, rate_even, list, rate_prop, gain_text);
  }
}

void gs_summary_print_roofline(FILE *out, const gs_measurement *ms, size_t count) {
  size_t bound = 0;
  for (size_t i = 0; i < count; i++) bound += ms[i].roofline.bound != GS_BOUND_NONE;
  if (bound == 0) return;
  fprintf(out, "  roofline: %s per step / median step, against the peak of the GPU model "
               "(data/gpu-models.json; docs/workloads/); the fraction's 95%% interval from "
               "the median step's\n",
          ms[0].roofline.bound == GS_BOUND_MEMORY ? "bytes" : "flops");
  for (size_t i = 0; i < count; i++) {
    if (ms[i].roofline.bound == GS_BOUND_NONE) continue;
    char text[2 * GS_TEXT_LONG];
    gs_roofline_describe(&ms[i].roofline, text, sizeof text);
    const int cuda = strcmp(ms[i].backend, "cuda") == 0;
    fprintf(out, "    %d %s%s%s%s: %s\n", ms[i].world_size, cuda ? "GPU" : "rank",
            ms[i].world_size == 1 ? "" : "s", ms[i].variant[0] ? ", " : "", ms[i].variant, text);
  }
}

static void summary_title(const gs_sweep *sw, char *buf, size_t size) {
  cJSON *opts = sw->workload->options_to_json(sw->workload_opts);
  char *text = opts ? cJSON_PrintUnformatted(opts) : NULL;
  snprintf(buf, size, "%s %s", sw->workload->key, text ? text : "");
  free(text);
  cJSON_Delete(opts);
}

/* Summary, telemetry and split lines of one variant's measurements. */
static void print_group(FILE *out, const gs_sweep *sw, const gs_measurement *ms,
                        const gs_telemetry *tm, size_t count) {
  char title[2 * GS_TEXT_LONG];
  summary_title(sw, title, sizeof title);
  gs_summary_print(out, title, ms, count, sw->env,
                   gs_runner_driver_of(sw->workload)->samples_note);
  gs_summary_print_roofline(out, ms, count);
  gs_summary_print_telemetry(out, ms, tm, count);
  print_split_gains(out, ms, count);
}

static void print_variant(void *ctx, const gs_sweep *sw, const gs_measurement *ms,
                          const gs_telemetry *tm, size_t count) {
  FILE *copy = ctx;
  print_group(stdout, sw, ms, tm, count);
  if (copy) print_group(copy, sw, ms, tm, count);
}

/* The pipeline sections of the document the sweep wrote, read back and
 * analysed by the report's own code (report/read/pipeline.c,
 * report/analyze/pipeline.c, core/bubble.c) and rendered by it
 * (report/render/pipeline.c), so that the terminal's bubble, interval,
 * verdict, stages and transfers are those `gpuscale report` gives for the
 * file: for a workload whose options hold a "pipeline" (mlp --pp), the
 * member the report reads. llm's pipeline is printed by its driver's own
 * print hook, from the same core/bubble. Nothing when the file at the
 * sweep's path is not the one this process wrote (nothing measured and
 * an older document kept); a document that cannot be read back is a
 * note, and the error recorded before it stays. */
static void print_pipelines(FILE *copy, const gs_sweep *sw, const cJSON *opts) {
  if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(opts, "pipeline")) || !sw->job ||
      !gs_file_stamp_names(&sw->job->written, sw->path))
    return;
  const gs_report_thresholds th = {.moderate = GS_REPORT_MODERATE_DEFAULT,
                                   .critical = GS_REPORT_CRITICAL_DEFAULT};
  const char *paths[1] = {sw->path};
  gs_error_kept kept;
  gs_error_keep(&kept);
  gs_report rep;
  gs_status st = gs_report_load_with(paths, 1, &th, NULL, GS_REPORT_DROP_SAMPLES, &rep);
  for (size_t i = 0; st == GS_OK && i < rep.n_series; i++) {
    if (!gs_report_series_pipelined(&rep, i)) continue;
    FILE *outs[2] = {stdout, copy};
    for (int k = 0; k < 2 && st == GS_OK; k++) {
      if (!outs[k]) continue;
      fprintf(outs[k], "\n  %s (as `gpuscale report` gives it for the result file):\n",
              rep.series[i].title);
      st = gs_report_render_pipeline(outs[k], &rep, i, GS_REPORT_TEXT);
    }
  }
  if (st != GS_OK) gs_note("the pipeline of %s is not shown: %s", sw->path, gs_last_error());
  gs_report_free(&rep);
  gs_error_restore(&kept);
}

static void print_sweep_end(void *ctx, const gs_sweep *sw, void *driver_ctx,
                            const gs_measurement *ms, const gs_telemetry *tm, size_t count) {
  FILE *copy = ctx;
  const gs_workload_driver *driver = gs_runner_driver_of(sw->workload);
  if (driver->print) {
    driver->print(driver_ctx, stdout, count);
    if (copy) driver->print(driver_ctx, copy, count);
  }
  // The series label names the scenario of a request-based workload, as
  // the report's does from the same option (the measurement's "scenario").
  cJSON *opts = sw->workload->options_to_json(sw->workload_opts);
  print_pipelines(copy, sw, opts);
  const cJSON *scenario = cJSON_GetObjectItemCaseSensitive(opts, "scenario");
  const char *label = cJSON_IsString(scenario) ? scenario->valuestring : NULL;
  gs_decision_table_print(stdout, ms, tm, count, sw->env, label);
  if (copy) gs_decision_table_print(copy, ms, tm, count, sw->env, label);
  cJSON_Delete(opts);
}

gs_sweep_observer gs_summary_observer(FILE *copy) {
  return (gs_sweep_observer){.ctx = copy, .variant_done = print_variant,
                             .sweep_done = print_sweep_end};
}
