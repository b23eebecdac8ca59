/* Levels 1 and 2 of `gpuscale check`: the measured figures (core/health.h,
 * gs_node_stress) against the GPU model's and against the node's other
 * GPUs, each a finding with an action. The fractions and why each is a
 * warning or a failure are in docs/check.md, "Level 2". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "report/verdict/check_private.h"

double gs_check_pcie_gbs(unsigned generation, unsigned width) {
  // Transfer rate per lane (GT/s) and the line code's payload share:
  // 8b/10b for gens 1-2, 128b/130b for gens 3-5, FLIT mode (242 of 256
  // bytes carry data) for gen 6.
  static const double rate[] = {0, 2.5, 5, 8, 16, 32, 64};
  if (generation == 0 || generation > 6 || width == 0) return NAN;
  const double code = generation <= 2 ? 0.8 : generation <= 5 ? 128.0 / 130.0 : 242.0 / 256.0;
  return rate[generation] * code * width / 8.0;
}

double gs_health_median(const double *x, size_t n) {
  double *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) return NAN;
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(x[i])) v[m++] = x[i];
  for (size_t i = 1; i < m; i++)  // insertion sort: a node has few GPUs
    for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  double med = m == 0 ? NAN : m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
  free(v);
  return med;
}

/* The NVML health entry of CUDA's bus id, or NULL. */
static const gs_gpu_health *health_of(const gs_node_state *s, const char *bus) {
  for (size_t i = 0; i < s->gpu_count; i++)
    if (gs_health_same_bus(bus, s->gpus[i].pci_bus_id)) return &s->gpus[i];
  return NULL;
}

/* The GPU number findings use: NVML's index when NVML knows the GPU (as
 * level 1's findings), else the CUDA ordinal. */
static int gpu_number(const gs_node_state *s, const gs_gpu_stress *g) {
  const gs_gpu_health *h = health_of(s, g->pci_bus_id);
  return h ? h->index : g->device;
}

static void judge_membw(gs_health_builder *b, const gs_node_state *s,
                        const gs_check_models *models, const gs_gpu_stress *g, double median) {
  const int gpu = gpu_number(s, g);
  char detail[400];
  if (!g->membw_done) return;
  if (g->membw_error[0] && g->membw_mismatches == 0) {
    snprintf(detail, sizeof detail, "triad failed: %s", g->membw_error);
    gs_health_action(gs_health_add(b, "membw", gpu, GS_CHECK_FAIL, detail),
                     "investigate: GPU %d's memory bandwidth test failed (%s)", gpu,
                     g->membw_error);
    return;
  }
  if (g->membw_mismatches) {
    snprintf(detail, sizeof detail, "%llu wrong elements after the triads",
             g->membw_mismatches);
    gs_health_action(gs_health_add(b, "membw", gpu, GS_CHECK_FAIL, detail),
                     "drain: GPU %d computed %llu wrong elements in the memory bandwidth test",
                     gpu, g->membw_mismatches);
    return;
  }
  gs_gpu_model model;
  const gs_gpu_health *h = health_of(s, g->pci_bus_id);
  const int known = h && gs_check_model_of(models, h, &model) &&
                    model.fig[GS_FIG_MEMORY_BANDWIDTH_GBS].has;
  const double spec = known ? model.fig[GS_FIG_MEMORY_BANDWIDTH_GBS].value : NAN;
  const double of_spec = g->membw_gbs / spec, of_median = g->membw_gbs / median;
  int n = snprintf(detail, sizeof detail, "STREAM triad %.0f GB/s", g->membw_gbs);
  if (n > 0 && known)
    n += snprintf(detail + n, sizeof detail - (size_t)n,
                  ", %.0f%% of the %s's %g GB/s (fail below %.0f%%: %.0f GB/s)", 100 * of_spec,
                  model.model, spec, 100 * GS_CHECK_MEMBW_FRACTION,
                  GS_CHECK_MEMBW_FRACTION * spec);
  if (n > 0 && isfinite(of_median))
    n += snprintf(detail + n, sizeof detail - (size_t)n,
                  ", %.0f%% of the node's median (fail below %.0f%%)", 100 * of_median,
                  100 * GS_CHECK_MEMBW_MEDIAN_FRACTION);
  if (n > 0 && g->membw_slowdown < 1)
    snprintf(detail + n, sizeof detail - (size_t)n, " (injected slowdown %g)", g->membw_slowdown);
  if (known && of_spec < GS_CHECK_MEMBW_FRACTION) {
    gs_health_action(gs_health_add(b, "membw", gpu, GS_CHECK_FAIL, detail),
                     "investigate: GPU %d memory bandwidth %.0f%% of the %s's (%.0f of %g GB/s)",
                     gpu, 100 * of_spec, model.model, g->membw_gbs, spec);
  } else if (of_median < GS_CHECK_MEMBW_MEDIAN_FRACTION) {
    gs_health_action(gs_health_add(b, "membw", gpu, GS_CHECK_FAIL, detail),
                     "investigate: GPU %d memory bandwidth %.0f%% of the node's median (%.0f of "
                     "%.0f GB/s)", gpu, 100 * of_median, g->membw_gbs, median);
  } else {
    gs_health_add(b, "membw", gpu, GS_CHECK_PASS, detail);
  }
}

static void judge_host(gs_health_builder *b, const gs_node_state *s, const gs_gpu_stress *g) {
  const int gpu = gpu_number(s, g);
  char detail[400];
  if (!g->host_done && !g->host_error[0]) return;
  if (!isfinite(g->h2d_gbs) || !isfinite(g->d2h_gbs)) {
    snprintf(detail, sizeof detail, "host copies failed: %s",
             g->host_error[0] ? g->host_error : "not measured");
    gs_health_action(gs_health_add(b, "host_bw", gpu, GS_CHECK_FAIL, detail),
                     "investigate: GPU %d's host copies failed (%s)", gpu,
                     g->host_error[0] ? g->host_error : "not measured");
    return;
  }
  const gs_gpu_health *h = health_of(s, g->pci_bus_id);
  const double worst = fmin(g->h2d_gbs, g->d2h_gbs);
  int n = snprintf(detail, sizeof detail, "host to device %.1f GB/s, device to host %.1f GB/s",
                   g->h2d_gbs, g->d2h_gbs);
  if (!h || !h->has_pcie) {
    if (n > 0) snprintf(detail + n, sizeof detail - (size_t)n, " (PCIe link unknown: not judged)");
    gs_health_add(b, "host_bw", gpu, GS_CHECK_PASS, detail);
    return;
  }
  // The link as trained: the most generation (an idle link drops its
  // generation) at the width it has now.
  const double link = gs_check_pcie_gbs(h->pcie_gen_max, h->pcie_width);
  const double share = worst / link;
  if (n > 0)
    snprintf(detail + n, sizeof detail - (size_t)n, "; %.0f%% of PCIe gen %u x%u (%.1f GB/s; "
             "warn below %.0f%%, fail below %.0f%%)", 100 * share, h->pcie_gen_max,
             h->pcie_width, link, 100 * GS_CHECK_HOST_WARN_FRACTION,
             100 * GS_CHECK_HOST_FAIL_FRACTION);
  const gs_check_state st = share < GS_CHECK_HOST_FAIL_FRACTION   ? GS_CHECK_FAIL
                            : share < GS_CHECK_HOST_WARN_FRACTION ? GS_CHECK_WARN
                                                                  : GS_CHECK_PASS;
  if (st == GS_CHECK_PASS) {
    gs_health_add(b, "host_bw", gpu, st, detail);
    return;
  }
  gs_health_action(gs_health_add(b, "host_bw", gpu, st, detail),
                   "%s: GPU %d host copies at %.1f GB/s, %.0f%% of its PCIe gen %u x%u link",
                   st == GS_CHECK_FAIL ? "reseat or replace" : "investigate", gpu, worst,
                   100 * share, h->pcie_gen_max, h->pcie_width);
}

/* One finding per source GPU: its slowest copy to another GPU, against the
 * model's NVLink bandwidth and the node's median pair. Judged on NVLink
 * (SXM) models only: on PCIe the pairs differ by topology by design. */
static void judge_pairs(gs_health_builder *b, const gs_node_state *s,
                        const gs_check_models *models, size_t i, double median) {
  const gs_node_stress *x = &s->stress;
  const gs_gpu_stress *g = &x->gpus[i];
  const int gpu = gpu_number(s, g);
  size_t worst = i;
  for (size_t j = 0; j < x->n; j++) {
    const double v = x->p2p_gbs[i * x->n + j];
    if (j == i || !isfinite(v)) continue;
    if (worst == i || v < x->p2p_gbs[i * x->n + worst]) worst = j;
  }
  char detail[400];
  // Level 1 copies from half the GPUs: one that is only a destination
  // has no pair of its own.
  if (x->level == 1 && !g->p2p_source) return;
  if (worst == i) {
    snprintf(detail, sizeof detail, "no pair measured: %s", x->p2p_error);
    gs_health_action(gs_health_add(b, "p2p", gpu, GS_CHECK_FAIL, detail),
                     "investigate: GPU %d's copies to other GPUs failed (%s)", gpu, x->p2p_error);
    return;
  }
  const double v = x->p2p_gbs[i * x->n + worst];
  const int peer = gpu_number(s, &x->gpus[worst]);
  gs_gpu_model model;
  const gs_gpu_health *h = health_of(s, g->pci_bus_id);
  const int nvlink = h && gs_check_model_of(models, h, &model) && model.sxm &&
                     model.fig[GS_FIG_NVLINK_GBS].has;
  const double spec = nvlink ? model.fig[GS_FIG_NVLINK_GBS].value : NAN;
  int n = snprintf(detail, sizeof detail, "slowest copy to GPU %d %.0f GB/s, node median %.0f GB/s",
                   peer, v, median);
  if (n > 0 && nvlink)
    snprintf(detail + n, sizeof detail - (size_t)n, "; %.0f%% of the %s's %g GB/s NVLink (warn "
             "below %.0f%% or %.0f%% of the median, fail below %.0f%%)", 100 * v / spec,
             model.model, spec, 100 * GS_CHECK_P2P_WARN_FRACTION,
             100 * GS_CHECK_P2P_MEDIAN_FRACTION, 100 * GS_CHECK_P2P_FAIL_FRACTION);
  else if (n > 0)
    snprintf(detail + n, sizeof detail - (size_t)n, " (no NVLink model figure: not judged)");
  if (nvlink && v < GS_CHECK_P2P_FAIL_FRACTION * spec) {
    gs_health_action(gs_health_add(b, "p2p", gpu, GS_CHECK_FAIL, detail),
                     "drain: GPU %d to GPU %d copies at %.0f GB/s, %.0f%% of the %g GB/s NVLink "
                     "of an %s", gpu, peer, v, 100 * v / spec, spec, model.model);
  } else if (nvlink && (v < GS_CHECK_P2P_WARN_FRACTION * spec ||
                        v < GS_CHECK_P2P_MEDIAN_FRACTION * median)) {
    gs_health_action(gs_health_add(b, "p2p", gpu, GS_CHECK_WARN, detail),
                     "investigate: GPU %d to GPU %d copies at %.0f GB/s (%.0f%% of the node's "
                     "median pair, %.0f%% of the NVLink)", gpu, peer, v, 100 * v / median,
                     100 * v / spec);
  } else {
    gs_health_add(b, "p2p", gpu, GS_CHECK_PASS, detail);
  }
}

/* The all-reduce sweep: every element right, and on NVLink (SXM) models
 * the bus bandwidth of the largest size against the NVLink bandwidth per
 * direction of the first GPU's model. */
static void judge_allreduce(gs_health_builder *b, const gs_node_state *s,
                            const gs_check_models *models) {
  const gs_node_stress *x = &s->stress;
  char detail[400];
  if (!x->allreduce_done) {
    if (x->allreduce_error[0]) gs_health_add(b, "allreduce", -1, GS_CHECK_NA, x->allreduce_error);
    return;
  }
  if (x->allreduce_error[0]) {
    snprintf(detail, sizeof detail, "all-reduce failed: %s", x->allreduce_error);
    gs_health_action(gs_health_add(b, "allreduce", -1, GS_CHECK_FAIL, detail),
                     "investigate: the all-reduce over %zu GPUs failed (%s)", x->n,
                     x->allreduce_error);
    return;
  }
  int n = snprintf(detail, sizeof detail, "bus bandwidth over %zu GPUs:", x->n);
  for (size_t i = 0; n > 0 && i < x->allreduce_n; i++)
    n += snprintf(detail + n, sizeof detail - (size_t)n, "%s %llu MiB %.0f GB/s", i ? "," : "",
                  (unsigned long long)(x->allreduce_bytes[i] >> 20), x->allreduce_busbw_gbs[i]);
  if (x->allreduce_wrong) {
    gs_health_action(gs_health_add(b, "allreduce", -1, GS_CHECK_FAIL, detail),
                     "drain: the all-reduce over %zu GPUs returned %llu wrong elements", x->n,
                     x->allreduce_wrong);
    return;
  }
  gs_gpu_model model;
  const gs_gpu_health *h = x->n ? health_of(s, x->gpus[0].pci_bus_id) : NULL;
  const int nvlink = h && gs_check_model_of(models, h, &model) && model.sxm &&
                     model.fig[GS_FIG_NVLINK_GBS].has && x->allreduce_n > 0;
  const double last = x->allreduce_n ? x->allreduce_busbw_gbs[x->allreduce_n - 1] : NAN;
  const double spec = nvlink ? model.fig[GS_FIG_NVLINK_GBS].value : NAN;
  // Level 1's one 64 MiB size is held to a looser fraction than level 2's
  // 512 MiB (docs/check.md).
  const double fraction =
      x->level == 1 ? GS_CHECK_ALLREDUCE_SHORT_FRACTION : GS_CHECK_ALLREDUCE_FRACTION;
  if (n > 0 && nvlink)
    snprintf(detail + n, sizeof detail - (size_t)n,
             "; %.0f%% of the %s's %g GB/s NVLink (warn below %.0f%%: %.0f GB/s)",
             100 * last / spec, model.model, spec, 100 * fraction, fraction * spec);
  if (nvlink && last < fraction * spec) {
    gs_health_action(gs_health_add(b, "allreduce", -1, GS_CHECK_WARN, detail),
                     "investigate: all-reduce bus bandwidth %.0f GB/s over %zu GPUs, %.0f%% of "
                     "the %g GB/s NVLink of an %s", last, x->n, 100 * last / spec, spec,
                     model.model);
  } else {
    gs_health_add(b, "allreduce", -1, GS_CHECK_PASS, detail);
  }
}

int gs_check_workload_ratio(const gs_node_stress *x, size_t w, size_t i, double *ratio,
                            double *low, double *high) {
  *ratio = *low = *high = NAN;
  if (!x->workload_rate || w >= x->workload_n || i >= x->n) return 0;
  const double *rate = &x->workload_rate[w * x->n];
  const double median = gs_health_median(rate, x->n);
  size_t ref = x->n;
  for (size_t j = 0; j < x->n; j++)
    if (j != i && isfinite(rate[j]) &&
        (ref == x->n || fabs(rate[j] - median) < fabs(rate[ref] - median)))
      ref = j;
  if (ref == x->n || !isfinite(rate[i]) || !(rate[ref] > 0)) return 0;
  *ratio = rate[i] / rate[ref];
  if (!x->workload_steps) return 1;
  // The reference's mean step over GPU i's is GPU i's rate over the
  // reference's: rounds are the bootstrap's runs, steps within them.
  gs_stats_group a[GS_HEALTH_WORKLOAD_ROUNDS], b[GS_HEALTH_WORKLOAD_ROUNDS];
  size_t na = 0, nb = 0;
  for (size_t r = 0; r < x->workload_rounds && r < GS_HEALTH_WORKLOAD_ROUNDS; r++) {
    const size_t round = GS_HEALTH_WORKLOAD_ROUNDS;
    const gs_health_steps *ga = &x->workload_steps[(w * x->n + ref) * round + r];
    const gs_health_steps *gb = &x->workload_steps[(w * x->n + i) * round + r];
    if (ga->n) a[na++] = (gs_stats_group){.samples = ga->seconds, .n = ga->n};
    if (gb->n) b[nb++] = (gs_stats_group){.samples = gb->seconds, .n = gb->n};
  }
  if (na && nb) gs_stats_ratio_interval(a, na, b, nb, low, high);
  return 1;
}

/* Each GPU's throughput of every workload against the node's median GPU
 * for that workload, judged from the ratio's interval: warn when it lies
 * wholly below GS_CHECK_WORKLOAD_MEDIAN_FRACTION, fail when wholly below
 * GS_CHECK_WORKLOAD_FAIL_FRACTION, "inconclusive" (a pass) when it
 * straddles the first or there is none. One finding per GPU, naming its
 * worst workload. */
static void judge_workloads(gs_health_builder *b, const gs_node_state *s) {
  const gs_node_stress *x = &s->stress;
  if (x->workload_error[0]) {
    char detail[400];
    snprintf(detail, sizeof detail, "a workload failed: %s", x->workload_error);
    gs_health_action(gs_health_add(b, "workloads", -1, GS_CHECK_FAIL, detail),
                     "investigate: %s", x->workload_error);
  }
  if (!x->workload_rate || x->workload_n == 0) return;
  for (size_t i = 0; i < x->n; i++) {
    char detail[400] = "";
    int used = 0;
    size_t worst = x->workload_n;
    gs_check_state worst_state = GS_CHECK_PASS;
    double worst_ratio = INFINITY, worst_low = NAN, worst_high = NAN;
    for (size_t w = 0; w < x->workload_n; w++) {
      double ratio, low, high;
      if (!gs_check_workload_ratio(x, w, i, &ratio, &low, &high)) continue;
      const int interval = isfinite(low) && isfinite(high);
      const gs_check_state st = !interval ? GS_CHECK_PASS
                                : high < GS_CHECK_WORKLOAD_FAIL_FRACTION ? GS_CHECK_FAIL
                                : high < GS_CHECK_WORKLOAD_MEDIAN_FRACTION ? GS_CHECK_WARN
                                                                           : GS_CHECK_PASS;
      const int inconclusive = !interval || (st == GS_CHECK_PASS &&
                                             low < GS_CHECK_WORKLOAD_MEDIAN_FRACTION);
      int k = interval ? snprintf(detail + used, sizeof detail - (size_t)used,
                                  "%s%s %.0f%% [%.0f, %.0f]%s", used ? ", " : "",
                                  x->workload_keys[w], 100 * ratio, 100 * low, 100 * high,
                                  inconclusive ? " inconclusive" : "")
                       : snprintf(detail + used, sizeof detail - (size_t)used,
                                  "%s%s %.0f%% [-] inconclusive", used ? ", " : "",
                                  x->workload_keys[w], 100 * ratio);
      if (k > 0 && (size_t)k < sizeof detail - (size_t)used) used += k;
      if (st > worst_state || (st == worst_state && ratio < worst_ratio)) {
        worst_state = st;
        worst_ratio = ratio;
        worst_low = low;
        worst_high = high;
        worst = w;
      }
    }
    if (worst == x->workload_n) continue;
    snprintf(detail + used, sizeof detail - (size_t)used, " of the node's median GPU over %zu "
             "rounds (warn when the interval lies below %.0f%%, fail below %.0f%%)",
             x->workload_rounds, 100 * GS_CHECK_WORKLOAD_MEDIAN_FRACTION,
             100 * GS_CHECK_WORKLOAD_FAIL_FRACTION);
    const int gpu = gpu_number(s, &x->gpus[i]);
    gs_health_finding *f = gs_health_add(b, "workloads", gpu, worst_state, detail);
    if (worst_state != GS_CHECK_PASS)
      gs_health_action(f, "investigate: GPU %d runs %s at %.0f%% [%.0f, %.0f] of the node's "
                       "median GPU", gpu, x->workload_keys[worst], 100 * worst_ratio,
                       100 * worst_low, 100 * worst_high);
  }
}

/* NVLink errors counted during the check (after the load less before it),
 * per GPU and kind, summed over its ports as DCGM's *_TOTAL fields are:
 * a recovery fails (the link went down and retrained); CRC flit or CRC
 * data errors fail at GS_CHECK_NVLINK_CRC_RATE_FAIL per second over the
 * window and pass below it (a healthy H200 link counts some under load);
 * a replay warns. Sources and reasons in docs/check.md. Counts since boot
 * stay level 1's. */
enum { LINK_REPLAY, LINK_RECOVERY, LINK_CRC_FLIT, LINK_CRC_DATA, LINK_KINDS };

/* The change of one counter, 0 when it went down (a driver reload). */
static unsigned long long link_delta(unsigned long long before, unsigned long long after) {
  return after >= before ? after - before : 0;
}

static void judge_link_deltas(gs_health_builder *b, const gs_gpu_health *h) {
  if (!h->has_link_errors_after) return;
  unsigned long long total[LINK_KINDS] = {0}, most[LINK_KINDS] = {0};
  int port[LINK_KINDS] = {-1, -1, -1, -1};  // the port with the most of each kind
  for (size_t l = 0; l < h->port_count; l++) {
    const gs_health_link_errors *a = &h->link_errors[l], *z = &h->link_errors_after[l];
    if (!h->port_present[l] || !a->has_counters || !z->has_counters) continue;
    const unsigned long long d[LINK_KINDS] = {
        link_delta(a->replay, z->replay), link_delta(a->recovery, z->recovery),
        link_delta(a->crc_flit, z->crc_flit), link_delta(a->crc_data, z->crc_data)};
    for (int k = 0; k < LINK_KINDS; k++) {
      total[k] += d[k];
      if (d[k] > most[k]) {
        most[k] = d[k];
        port[k] = (int)l;
      }
    }
  }
  // The window is at least a millisecond, so that a rate is finite.
  const double seconds = fmax(h->link_errors_seconds, 1e-3);
  const double flit = (double)total[LINK_CRC_FLIT] / seconds;
  const double data = (double)total[LINK_CRC_DATA] / seconds;
  char detail[400];
  snprintf(detail, sizeof detail, "during the check (%.1f s): %llu replays, %llu recoveries, "
           "%llu CRC flit errors (%.1f/s), %llu CRC data errors (%.1f/s); fail at %g CRC "
           "errors/s of a kind", seconds, total[LINK_REPLAY], total[LINK_RECOVERY],
           total[LINK_CRC_FLIT], flit, total[LINK_CRC_DATA], data,
           GS_CHECK_NVLINK_CRC_RATE_FAIL);
  const int crc_kind = flit >= data ? LINK_CRC_FLIT : LINK_CRC_DATA;
  if (total[LINK_RECOVERY] > 0) {
    gs_health_action(gs_health_add(b, "nvlink_errors", h->index, GS_CHECK_FAIL, detail),
                     "drain: NVLink %d of GPU %d recovered %llu times under load",
                     port[LINK_RECOVERY], h->index, most[LINK_RECOVERY]);
  } else if (fmax(flit, data) >= GS_CHECK_NVLINK_CRC_RATE_FAIL) {
    gs_health_action(gs_health_add(b, "nvlink_errors", h->index, GS_CHECK_FAIL, detail),
                     "drain: GPU %d's NVLinks counted %.0f CRC %s errors per second under load "
                     "(limit %g/s; NVLink %d the most)", h->index, fmax(flit, data),
                     crc_kind == LINK_CRC_FLIT ? "flit" : "data", GS_CHECK_NVLINK_CRC_RATE_FAIL,
                     port[crc_kind]);
  } else if (total[LINK_REPLAY] > 0) {
    gs_health_action(gs_health_add(b, "nvlink_errors", h->index, GS_CHECK_WARN, detail),
                     "investigate: NVLink %d of GPU %d replayed %llu times under load (its peer "
                     "received corrupted flits)", port[LINK_REPLAY], h->index, most[LINK_REPLAY]);
  } else {
    gs_health_add(b, "nvlink_errors", h->index, GS_CHECK_PASS, detail);
  }
}

void gs_health_judge_stress(gs_health_builder *b, const gs_node_state *s,
                            const gs_check_models *models) {
  const gs_node_stress *x = &s->stress;
  if (x->level < 1) return;
  for (size_t i = 0; i < s->gpu_count; i++) judge_link_deltas(b, &s->gpus[i]);
  if (x->why[0]) {
    gs_health_add(b, "stress", -1, GS_CHECK_NA, x->why);
    return;
  }
  if (x->over_budget[0]) {
    char detail[400];
    snprintf(detail, sizeof detail, "the %g s budget was spent before: %s", s->budget_s,
             x->over_budget);
    gs_health_action(gs_health_add(b, "budget", -1, GS_CHECK_FAIL, detail),
                     "investigate: level %d did not finish within %g s (not run: %s)", x->level,
                     s->budget_s, x->over_budget);
  }
  double *bw = calloc(x->n ? x->n : 1, sizeof *bw);
  if (!bw) {
    b->failed = 1;
    return;
  }
  for (size_t i = 0; i < x->n; i++)
    bw[i] = x->gpus[i].membw_done && !x->gpus[i].membw_error[0] ? x->gpus[i].membw_gbs : NAN;
  const double membw_median = gs_health_median(bw, x->n);
  free(bw);
  for (size_t i = 0; i < x->n; i++) judge_membw(b, s, models, &x->gpus[i], membw_median);
  for (size_t i = 0; i < x->n; i++) judge_host(b, s, &x->gpus[i]);
  judge_allreduce(b, s, models);
  judge_workloads(b, s);
  if (x->n < 2 || strstr(x->over_budget, "p2p")) return;
  const double pair_median = gs_health_median(x->p2p_gbs, x->n * x->n);
  for (size_t i = 0; i < x->n; i++) judge_pairs(b, s, models, i, pair_median);
}
