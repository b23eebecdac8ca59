/* Scaling maths, the single-vs-multi verdict from the speedup's interval,
 * the causes of a suspect result and the wording (see scaling.h and
 * docs/report.md). */
#include "core/scaling.h"

#include "core/format.h"

#include <math.h>
#include <stdarg.h>
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
const char *gs_scaling_part_name(int part) {
  static const char *const names[] = {"compute", "exposed communication", "load imbalance",
                                      "host overhead"};
  return part >= 0 && part < GS_PART_COUNT ? names[part] : "?";
}

/* See scaling.h. */
void gs_scaling_losses_of(gs_scaling kind, const double base[GS_PART_COUNT],
                          const double parts[GS_PART_COUNT], int world_size,
                          gs_scaling_losses *out) {
  out->main_loss = -1;
  double most = 0;
  for (int p = 0; p < GS_PART_COUNT; p++) {
    out->lost[p] = parts[p] - gs_scaling_ideal_step(kind, base[p], world_size);
    if (!isfinite(out->lost[p])) {
      out->main_loss = -1;
      most = INFINITY;  // one unknown part: no part is named the main loss
    } else if (out->lost[p] > most) {
      most = out->lost[p];
      out->main_loss = p;
    }
  }
  out->compute_ideal = gs_scaling_ideal_step(kind, base[GS_PART_COMPUTE], world_size);
  out->compute_efficiency = positive(parts[GS_PART_COMPUTE]) && positive(out->compute_ideal)
                                ? out->compute_ideal / parts[GS_PART_COMPUTE]
                                : NAN;
}

/* See scaling.h. */
gs_verdict gs_scaling_verdict(double speedup, double low, double high, int world_size) {
  if (!positive(speedup)) return GS_VERDICT_NONE;
  const double n = (double)world_size;
  if (world_size >= 1 && (speedup >= GS_SCALING_SUSPECT * n || (isfinite(low) && low > n)))
    return GS_VERDICT_SUSPECT;
  if (!isfinite(low) || !isfinite(high)) return GS_VERDICT_INCONCLUSIVE;
  if (low >= GS_SCALING_BENEFICIAL) return GS_VERDICT_BENEFICIAL;
  if (high < GS_SCALING_MARGINAL) return GS_VERDICT_SINGLE;
  if (low >= GS_SCALING_MARGINAL && high < GS_SCALING_BENEFICIAL) return GS_VERDICT_MARGINAL;
  return GS_VERDICT_INCONCLUSIVE;
}

/* See scaling.h. */
const char *gs_verdict_name(gs_verdict verdict) {
  switch (verdict) {
    case GS_VERDICT_BENEFICIAL: return "beneficial";
    case GS_VERDICT_MARGINAL: return "marginal";
    case GS_VERDICT_SINGLE: return "single GPU preferred";
    case GS_VERDICT_INCONCLUSIVE: return "inconclusive";
    case GS_VERDICT_SUSPECT: return "suspect";
    case GS_VERDICT_NONE: break;
  }
  return "none";
}

/* The rule `verdict` satisfies into `out`: "interval >= 1.10", "interval
 * in [0.95, 1.10)", "interval < 0.95", "interval across 1.10",
 * "efficiency above 100%", written from the thresholds themselves. */
static void verdict_rule(const gs_scaling_assessment *a, char *out, size_t size) {
  switch (a->verdict) {
    case GS_VERDICT_BENEFICIAL:
      snprintf(out, size, "interval >= %.2f", GS_SCALING_BENEFICIAL);
      return;
    case GS_VERDICT_MARGINAL:
      snprintf(out, size, "interval in [%.2f, %.2f)", GS_SCALING_MARGINAL, GS_SCALING_BENEFICIAL);
      return;
    case GS_VERDICT_SINGLE: snprintf(out, size, "interval < %.2f", GS_SCALING_MARGINAL); return;
    case GS_VERDICT_INCONCLUSIVE:
      if (!isfinite(a->speedup_low) || !isfinite(a->speedup_high))
        snprintf(out, size, "no interval");
      else
        snprintf(out, size, "interval across %.2f",
                 a->speedup_low < GS_SCALING_MARGINAL ? GS_SCALING_MARGINAL
                                                      : GS_SCALING_BENEFICIAL);
      return;
    case GS_VERDICT_SUSPECT: snprintf(out, size, "efficiency above 100%%"); return;
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
    case GS_VERDICT_INCONCLUSIVE: snprintf(out, size, "inconclusive"); return;
    case GS_VERDICT_SUSPECT: snprintf(out, size, "suspect"); return;
    case GS_VERDICT_NONE: break;
  }
  snprintf(out, size, "no verdict");
}

/* See scaling.h. */
void gs_scaling_format_ratio(double value, double low, double high, double scale, int decimals,
                             const char *unit, char *out, size_t size) {
  if (!isfinite(value)) {
    snprintf(out, size, "-");
  } else if (!isfinite(low) || !isfinite(high)) {
    snprintf(out, size, "%.*f%s [-]", decimals, scale * value, unit);
  } else {
    snprintf(out, size, "%.*f%s [%.*f, %.*f]", decimals, scale * value, unit, decimals,
             scale * low, decimals, scale * high);
  }
}

/* See scaling.h. */
gs_scaling_point gs_scaling_point_of(const gs_measurement *m, gs_stats_group *groups) {
  gs_scaling_point p = {.world_size = m->world_size, .ok = m->status == GS_OK,
                        .throughput = m->aggregate.throughput, .faults = (int)m->faults.n,
                        .clock_mhz = NAN};
  if (m->world_size > 0) p.rank_bytes = (double)m->cost.bytes / m->world_size;
  for (size_t r = 0; r < m->n_runs; r++)
    if (m->runs[r].other_cores_known && m->runs[r].other_cores > p.other_cores)
      p.other_cores = m->runs[r].other_cores;
  if (groups) {
    for (size_t r = 0; r < m->n_runs; r++)
      groups[r] = (gs_stats_group){m->runs[r].step_seconds, m->runs[r].n_steps};
    p.runs = groups;
    p.n_runs = m->n_runs;
  }
  return p;
}

/* See scaling.h. */
void gs_scaling_point_add_document(gs_scaling_point *p, const cJSON *measurement) {
  const cJSON *tel = gs_json_member(gs_json_member(measurement, "telemetry"), "ranks");
  double sum = 0.0;
  size_t n = 0;
  int others = -1;
  for (const cJSON *t = cJSON_IsArray(tel) ? tel->child : NULL; t; t = t->next) {
    const double c = gs_json_number_member(gs_json_member(t, "sm_clock_mhz"), "mean");
    if (isfinite(c)) {
      sum += c;
      n++;
    }
    // The measuring process holds a context on each of its GPUs: the others
    // are the processes beyond it.
    const double seen = gs_json_number_member(gs_json_member(t, "compute_processes"), "max");
    if (isfinite(seen) && seen >= 1.0 && seen < 1e6 && (int)seen - 1 > others)
      others = (int)seen - 1;
  }
  if (n) p->clock_mhz = sum / (double)n;
  if (others >= 0) p->other_processes = others;
  const cJSON *runs = gs_json_member(measurement, "runs");
  for (const cJSON *r = cJSON_IsArray(runs) ? runs->child : NULL; r; r = r->next) {
    const double c = gs_json_number_member(r, "host_other_cores");
    if (isfinite(c) && c > p->other_cores) p->other_cores = c;
  }
  const double bytes = gs_json_number_member(gs_json_member(measurement, "cost"), "bytes_per_step");
  const double ranks = gs_json_number_member(measurement, "world_size");
  if (isfinite(bytes) && bytes > 0.0 && isfinite(ranks) && ranks >= 1.0) p->rank_bytes = bytes / ranks;
}

/* See scaling.h. */
int gs_scaling_cpu_ranks(const char *backend, const char *workload) {
  return backend && strcmp(backend, "cpu") == 0 && !(workload && strcmp(workload, "exec") == 0);
}

/* See scaling.h. */
void gs_scaling_host_add_document(gs_scaling_host *h, const cJSON *environment,
                                  const char *backend, int device) {
  if (backend && strcmp(backend, "cpu") == 0) {
    const double l2 = gs_json_number_member(gs_json_member(environment, "cpu"), "l2_cache_bytes");
    if (isfinite(l2) && l2 > 0.0) {
      h->cache_bytes = l2;
      h->cache_name = "L2 cache of a CPU core";
    }
    return;
  }
  const cJSON *gpus = gs_json_member(environment, "gpus");
  for (const cJSON *g = cJSON_IsArray(gpus) ? gpus->child : NULL; g; g = g->next) {
    const double index = gs_json_number_member(g, "index");
    const double l2 = gs_json_number_member(g, "l2_cache_bytes");
    if (isfinite(index) && (int)index == device && isfinite(l2) && l2 > 0.0) {
      h->cache_bytes = l2;
      h->cache_name = "GPU's L2 cache";
    }
  }
}

/* See scaling.h. */
int gs_scaling_baseline(const gs_scaling_point *points, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (points[i].world_size == 1 && points[i].ok && positive(points[i].throughput)) return (int)i;
  return -1;
}

/* Runs of `p` that hold samples. */
static size_t runs_with_samples(const gs_scaling_point *p) {
  size_t n = 0;
  for (size_t r = 0; p->runs && r < p->n_runs; r++) n += p->runs[r].n > 0;
  return n;
}

/* Coefficient of variation of all samples of `p` pooled, and the spread
 * of its run means (largest / smallest - 1); NaN when unknown. */
static void point_noise(const gs_scaling_point *p, double *cv, double *run_spread) {
  double sum = 0.0, ss = 0.0, lo = INFINITY, hi = 0.0;
  size_t n = 0;
  for (size_t r = 0; p->runs && r < p->n_runs; r++) {
    double s = 0.0;
    for (size_t i = 0; i < p->runs[r].n; i++) s += p->runs[r].samples[i];
    if (p->runs[r].n == 0) continue;
    sum += s;
    n += p->runs[r].n;
    const double m = s / (double)p->runs[r].n;
    lo = fmin(lo, m);
    hi = fmax(hi, m);
  }
  *cv = *run_spread = NAN;
  if (n < 2 || !(sum > 0.0)) return;
  const double mean = sum / (double)n;
  for (size_t r = 0; r < p->n_runs; r++)
    for (size_t i = 0; i < p->runs[r].n; i++)
      ss += (p->runs[r].samples[i] - mean) * (p->runs[r].samples[i] - mean);
  *cv = sqrt(ss / (double)(n - 1)) / mean;
  *run_spread = lo > 0.0 ? hi / lo - 1.0 : NAN;
}

/* Appends "; "-separated printf text to a->why. */
static void why_add(gs_scaling_assessment *a, const char *fmt, ...) {
  size_t at = strlen(a->why);
  if (at + 3 >= sizeof a->why) return;
  if (at) at += (size_t)snprintf(a->why + at, sizeof a->why - at, "; ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->why + at, sizeof a->why - at, fmt, ap);
  va_end(ap);
}

/* 1 when other work contended with the CPU ranks of `p` for the host's
 * cores (see gs_scaling_assess). */
static int contended(const gs_scaling_point *p, const gs_scaling_host *host) {
  return host && host->cpu_ranks && host->cores > 0 &&
         p->other_cores >= GS_SCALING_OTHER_WORK_CORES &&
         (double)p->world_size + p->other_cores > (double)host->cores;
}

/* The contention of the runs at 1 and N ranks, as a reason. */
static void contention_why(gs_scaling_assessment *a, const gs_scaling_point *base,
                           const gs_scaling_point *p, const gs_scaling_host *host,
                           const char *lead) {
  why_add(a, "%s: other work kept up to %.2f of the host's %d cores busy during the runs at 1 "
             "rank and %.2f at %d ranks, and with the ranks it needed more cores than there "
             "are: the scheduler's shares of the CPUs, not the division of the work, decide "
             "these times; a quieter machine would decide it",
          lead, base->other_cores, host->cores, p->other_cores, p->world_size);
}

/* A suspect verdict: how far above 100% and the likely causes found among
 * those checked (docs/report.md, "Suspect results"). */
static void suspect_causes(gs_scaling_assessment *a, const gs_scaling_point *base,
                           const gs_scaling_point *p, const gs_scaling_host *host) {
  if (isfinite(a->efficiency_low) && a->efficiency_low > 1.0)
    why_add(a, "suspect: the whole interval of the efficiency lies above 100%%, which "
               "dividing the work cannot give");
  else
    why_add(a, "suspect: efficiency above 100%% (Karp-Flatt %.3f < 0); %s", a->karp_flatt,
            isfinite(a->efficiency_low) ? "the interval reaches 100%, so noise may explain part "
                                          "of it"
                                        : "no interval to tell it from noise");
  const size_t before = strlen(a->why);
  // Faults slow what they are injected into: only the baseline's make the
  // speedup too high.
  if (base->faults > 0)
    why_add(a, "likely cause: injected faults slow the 1-rank baseline (%d at 1 rank, %d at %d "
               "ranks)",
            base->faults, p->faults, p->world_size);
  double cv1, spread1, cvn, spreadn;
  point_noise(base, &cv1, &spread1);
  point_noise(p, &cvn, &spreadn);
  if (isfinite(cv1) && isfinite(cvn) && cv1 > GS_STATS_NOISY_CV && cv1 > 2.0 * cvn)
    why_add(a, "likely cause: a noisier 1-rank baseline (cv %.1f%% against %.1f%% at %d ranks)",
            100.0 * cv1, 100.0 * cvn, p->world_size);
  if (isfinite(spread1) && spread1 > 0.10 && !(isfinite(spreadn) && spreadn >= spread1 / 2.0))
    why_add(a, "likely cause: the 1-rank runs disagree (their mean steps differ by %.0f%%): the "
               "machine changed while the baseline was measured",
            100.0 * spread1);
  if (host && host->cpu_ranks && host->cores > 0 && p->world_size > host->cores)
    why_add(a, "likely cause: %d CPU ranks on %d cores", p->world_size, host->cores);
  if (host && host->cores > 0 && isfinite(host->load_average) &&
      host->load_average > 0.5 * host->cores)
    why_add(a, "likely cause: a busy host (load average %.2f on %d cores when measured)",
            host->load_average, host->cores);
  if (isfinite(base->clock_mhz) && isfinite(p->clock_mhz) &&
      fabs(base->clock_mhz - p->clock_mhz) > 0.05 * fmax(base->clock_mhz, p->clock_mhz))
    why_add(a, "likely cause: the SM clock differed (%.0f MHz at 1 rank, %.0f MHz at %d ranks)",
            base->clock_mhz, p->clock_mhz, p->world_size);
  if (base->other_processes > 0)
    why_add(a, "likely cause: other processes shared the 1-rank baseline's GPU (up to %d "
               "besides gpuscale's; %d at %d ranks)",
            base->other_processes, p->other_processes, p->world_size);
  const int cache_known = host && host->cache_bytes > 0.0 && base->rank_bytes > 0.0 &&
                          p->rank_bytes > 0.0;
  if (cache_known && base->rank_bytes > host->cache_bytes && p->rank_bytes <= host->cache_bytes) {
    char one[32], each[32], cache[32];
    gs_format_value(GS_UNIT_BYTES, base->rank_bytes, one, sizeof one);
    gs_format_value(GS_UNIT_BYTES, p->rank_bytes, each, sizeof each);
    gs_format_value(GS_UNIT_BYTES, host->cache_bytes, cache, sizeof cache);
    why_add(a, "likely cause: a rank's data fits the %s at %d ranks (%s of %s) but not at 1 rank "
               "(%s): each rank then works from its cache, which is faster than dividing the "
               "work alone can be",
            host->cache_name ? host->cache_name : "cache", p->world_size, each, cache, one);
  }
  if (contended(base, host) || contended(p, host))
    contention_why(a, base, p, host, "likely cause");
  if (strlen(a->why) == before)
    why_add(a, "no cause found among those checked (injected faults, a noisier or drifting "
               "baseline, CPU ranks against cores, host load, other work on the CPUs, SM "
               "clocks, other processes on the GPUs, a rank's data against its cache where "
               "recorded)");
}

/* An inconclusive verdict: what would decide it. With an interval, the runs
 * a side that would narrow it enough if its width falls as 1/sqrt(runs). */
static void inconclusive_why(gs_scaling_assessment *a) {
  if (!isfinite(a->speedup_low) || !isfinite(a->speedup_high)) {
    why_add(a, "inconclusive: no step samples to put an interval on the speedup");
    return;
  }
  const double t = a->speedup_low < GS_SCALING_MARGINAL && a->speedup_high >= GS_SCALING_MARGINAL
                       ? GS_SCALING_MARGINAL
                       : GS_SCALING_BENEFICIAL;
  const double half = (a->speedup_high - a->speedup_low) / 2.0, d = fabs(a->speedup - t);
  const size_t have = a->base_runs < a->runs ? a->base_runs : a->runs;
  char need[96] = "more runs (--runs)";
  if (d > 0.0 && have > 0) {
    const double k = ceil((double)have * (half / d) * (half / d));
    if (k <= 100.0)
      snprintf(need, sizeof need, "about %.0f runs a side (--runs %.0f)", fmax(k, have + 1.0),
               fmax(k, have + 1.0));
    else
      snprintf(need, sizeof need, "more than 100 runs a side at this noise");
  }
  why_add(a, "inconclusive: the interval [%.2f, %.2f] reaches across %.2f; %s, a quieter "
             "machine or longer runs (--min-time, or --samples for a request stream) would "
             "decide it",
          a->speedup_low, a->speedup_high, t, need);
}

/* Mean of all samples of `p`; NaN when it has none. */
static double pooled_mean(const gs_scaling_point *p) {
  double sum = 0.0;
  size_t n = 0;
  for (size_t r = 0; p->runs && r < p->n_runs; r++)
    for (size_t i = 0; i < p->runs[r].n; i++, n++) sum += p->runs[r].samples[i];
  return n ? sum / (double)n : NAN;
}

/* See scaling.h. The interval of T(1) / T(N), the ratio of mean steps,
 * scaled to the speedup: the items per step cancel in the relative
 * spread. */
void gs_scaling_interval(const gs_scaling_point *base, const gs_scaling_point *p, double speedup,
                         double *low, double *high) {
  double lo, hi;
  *low = *high = NAN;
  if (!positive(speedup)) return;
  gs_stats_ratio_interval(base->runs, base->n_runs, p->runs, p->n_runs, &lo, &hi);
  const double ratio = pooled_mean(base) / pooled_mean(p);
  if (!isfinite(lo) || !isfinite(hi) || !positive(ratio)) return;
  *low = speedup * lo / ratio;
  *high = speedup * hi / ratio;
}

/* See scaling.h. */
void gs_scaling_assess(const gs_scaling_point *points, size_t n, const gs_scaling_point *base,
                       const gs_scaling_host *host, gs_scaling_assessment *out) {
  memset(out, 0, sizeof *out);
  out->point = -1;
  out->speedup = out->efficiency = out->karp_flatt = NAN;
  out->speedup_low = out->speedup_high = out->efficiency_low = out->efficiency_high = NAN;
  out->karp_flatt_low = out->karp_flatt_high = NAN;
  const double base_throughput = base ? base->throughput : NAN;
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
  const double nn = (double)p->world_size;
  out->world_size = p->world_size;
  out->throughput = p->throughput;
  out->ideal_throughput = nn * base_throughput;
  out->speedup = gs_scaling_speedup(base_throughput, p->throughput);
  out->efficiency = gs_scaling_efficiency(out->speedup, p->world_size);
  out->karp_flatt = gs_scaling_karp_flatt(out->speedup, p->world_size);
  out->base_runs = runs_with_samples(base);
  out->runs = runs_with_samples(p);
  gs_scaling_interval(base, p, out->speedup, &out->speedup_low, &out->speedup_high);
  if (isfinite(out->speedup_low)) {
    out->efficiency_low = out->speedup_low / nn;
    out->efficiency_high = out->speedup_high / nn;
    out->karp_flatt_low = gs_scaling_karp_flatt(out->speedup_high, p->world_size);
    out->karp_flatt_high = gs_scaling_karp_flatt(out->speedup_low, p->world_size);
  }
  out->verdict =
      gs_scaling_verdict(out->speedup, out->speedup_low, out->speedup_high, p->world_size);
  if (out->verdict == GS_VERDICT_SUSPECT) {
    suspect_causes(out, base, p, host);
  } else if (contended(base, host) || contended(p, host)) {
    out->verdict = GS_VERDICT_INCONCLUSIVE;
    contention_why(out, base, p, host, "inconclusive");
  } else if (out->verdict == GS_VERDICT_INCONCLUSIVE) {
    inconclusive_why(out);
  }
}

/* See scaling.h. */
void gs_scaling_verdict_sentence(const gs_scaling_assessment *a, const char *series,
                                 const char *backend, const char *item_unit, char *out,
                                 size_t size) {
  char words[64], rule[48], rate[32], ideal[32], speedup[64], eff[64], kf[64];
  gs_scaling_verdict_words(a->verdict, backend, words, sizeof words);
  verdict_rule(a, rule, sizeof rule);
  // Rates with an SI prefix ("12.9 G"), never e-notation.
  gs_format_rate(a->throughput, rate, sizeof rate);
  gs_format_rate(a->ideal_throughput, ideal, sizeof ideal);
  gs_scaling_format_ratio(a->speedup, a->speedup_low, a->speedup_high, 1.0, 2, "x", speedup,
                          sizeof speedup);
  gs_scaling_format_ratio(a->efficiency, a->efficiency_low, a->efficiency_high, 100.0, 1, "%",
                          eff, sizeof eff);
  gs_scaling_format_ratio(a->karp_flatt, a->karp_flatt_low, a->karp_flatt_high, 1.0, 3, "", kf,
                          sizeof kf);
  char basis[96] = "";
  if (isfinite(a->speedup_low))
    snprintf(basis, sizeof basis, "; 95%% interval over %zu + %zu runs", a->base_runs, a->runs);
  const size_t at = (size_t)snprintf(
      out, size,
      "%s: %s: speedup %s at %d ranks (%s%s), efficiency %s, Karp-Flatt serial fraction %s, "
      "throughput %s%s/s of ideal %s%s/s",
      series, words, speedup, a->world_size, rule, basis, eff, kf, rate,
      item_unit ? item_unit : "items", ideal, item_unit ? item_unit : "items");
  if (a->why[0] && at < size) snprintf(out + at, size - at, "; %s", a->why);
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
