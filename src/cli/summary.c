/* Summary table of measurements for the terminal and results/summary.txt. */
#include "cli/summary.h"

#include <math.h>
#include <string.h>

void gs_format_seconds(double seconds, char *buf, size_t size) {
  if (!(seconds >= 0.0) || !isfinite(seconds)) {
    snprintf(buf, size, "-");
  } else if (seconds < 1e-6) {
    snprintf(buf, size, "%.1f ns", seconds * 1e9);
  } else if (seconds < 1e-3) {
    snprintf(buf, size, "%.2f us", seconds * 1e6);
  } else if (seconds < 1.0) {
    snprintf(buf, size, "%.3f ms", seconds * 1e3);
  } else {
    snprintf(buf, size, "%.3f s", seconds);
  }
}

void gs_format_rate(double per_second, char *buf, size_t size) {
  static const char *const prefixes[] = {"", "K", "M", "G", "T", "P"};
  if (!(per_second > 0.0) || !isfinite(per_second)) {
    snprintf(buf, size, "-");
    return;
  }
  size_t p = 0;
  while (per_second >= 1000.0 && p + 1 < sizeof prefixes / sizeof prefixes[0]) {
    per_second /= 1000.0;
    p++;
  }
  snprintf(buf, size, "%.3g %s", per_second, prefixes[p]);
}

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

void gs_summary_print(FILE *out, const char *title, const gs_measurement *ms, size_t count,
                      const gs_environment *env) {
  if (count == 0) return;
  const gs_measurement *first = &ms[0];
  char devices[GS_TEXT_LONG];
  device_names(&ms[count - 1], env, devices, sizeof devices);
  fprintf(out, "\n%s\n", title);
  char scaling[GS_TEXT_SHORT + 16] = "";
  if (strcmp(first->scaling, "none") != 0) snprintf(scaling, sizeof scaling, ", %s scaling", first->scaling);
  fprintf(out, "  backend %s%s, %s; throughput in %s/s\n\n", first->backend, scaling, devices,
          first->cost.item_unit ? first->cost.item_unit : "items");
  fprintf(out, "  %5s  %11s  %11s  %11s  %6s  %10s  %8s  %6s  %7s  %-8s %s\n", "ranks", "median",
          "p95", "p99", "cv", "throughput", "speedup", "effic", "cold", "verify", "status");
  for (size_t i = 0; i < count; i++) {
    const gs_measurement *m = &ms[i];
    const gs_stats *s = &m->aggregate.step;
    char median[32], p95[32], p99[32], rate[32], speedup[32] = "-", eff[32] = "-", cold[32] = "-";
    gs_format_seconds(s->n ? s->median : -1.0, median, sizeof median);
    gs_format_seconds(s->n ? s->p95 : -1.0, p95, sizeof p95);
    gs_format_seconds(s->n ? s->p99 : -1.0, p99, sizeof p99);
    gs_format_rate(m->aggregate.throughput, rate, sizeof rate);
    if (m->aggregate.speedup > 0.0) {
      snprintf(speedup, sizeof speedup, "%.2fx", m->aggregate.speedup);
      snprintf(eff, sizeof eff, "%.1f%%", 100.0 * m->aggregate.efficiency);
    }
    if (m->aggregate.cold_start_ratio > 0.0)
      snprintf(cold, sizeof cold, "%.2fx", m->aggregate.cold_start_ratio);
    fprintf(out, "  %5d  %11s  %11s  %11s  %5.1f%%  %10s  %8s  %6s  %7s  %-8s %s\n", m->world_size,
            median, p95, p99, s->n ? 100.0 * s->cv : 0.0, rate, speedup, eff, cold,
            verify_word(m->verification.status), m->status == GS_OK ? "ok" : gs_status_name(m->status));
  }
  fprintf(out, "\n  median/p95/p99: step time (slowest rank per iteration, %s); cold: first "
               "iteration / median step\n",
          // Workloads that time whole requests (llm) keep no CUDA-event samples.
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
