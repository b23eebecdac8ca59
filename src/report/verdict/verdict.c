/* The node verdict: one pass/warn/fail table of a machine, computed from the
 * documents of a suite (info.json, p2p.json, coll.json, the workload
 * files) by one function, so that `suite` and `report` give one machine one
 * verdict. Each check and its thresholds are described, with where each
 * figure comes from, in docs/verdict.md; a check that cannot apply (one
 * GPU, the CPU backend, a document that is missing) says "n/a" and why. */
#include "report/verdict/verdict.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/stats.h"
#include "core/json.h"
#include "report/analyze/quantile.h"

/* See verdict.h. */
const char *gs_check_state_name(gs_check_state state) {
  switch (state) {
    case GS_CHECK_PASS: return "pass";
    case GS_CHECK_WARN: return "warn";
    case GS_CHECK_FAIL: return "fail";
    default: return "n/a";
  }
}

static void add_check(gs_node_verdict *v, const char *name, gs_check_state state,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void add_check(gs_node_verdict *v, const char *name, gs_check_state state,
                      const char *fmt, ...) {
  if (v->n == GS_VERDICT_CHECKS_MAX) return;
  gs_node_check *c = &v->checks[v->n++];
  snprintf(c->name, sizeof c->name, "%s", name);
  c->state = state;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->detail, sizeof c->detail, fmt, ap);
  va_end(ap);
}

static const char *or_dash(const char *text) { return text ? text : "-"; }

/* "397 GB/s" (decimal, as links are rated), by the report's one unit rule. */
static void gbps(double bytes_per_s, char *buf, size_t size) {
  gs_format_value(GS_UNIT_BANDWIDTH, bytes_per_s, buf, size);
}

/* Pass at or above `pass`, fail below `fail`, warn between. */
static gs_check_state state_of_share(double share, double pass, double fail) {
  return share >= pass ? GS_CHECK_PASS : share < fail ? GS_CHECK_FAIL : GS_CHECK_WARN;
}

/* The position of CUDA ordinal `ordinal` in the inventory, or -1. */
static int gpu_position(const gs_machine *m, double ordinal) {
  for (size_t i = 0; i < m->n_shown; i++)
    if (m->gpus[i].index == ordinal) return (int)i;
  return -1;
}

/* 1 when some measurement of a document of the machine ran on `backend`. */
static int any_backend(const gs_report *r, const char *backend) {
  for (size_t i = 0; i < r->n_series; i++)
    for (size_t j = 0; j < r->series[i].n_rows; j++)
      if (!gs_machine_is_ingested(r, r->series[i].rows[j].file) &&
          strcmp(r->series[i].backend, backend) == 0)
        return 1;
  return 0;
}

/* ---- the inventory -------------------------------------------------------------- */

static void check_present(gs_node_verdict *v, const gs_report *r, const gs_machine *m) {
  const char *name = "GPUs present";
  if (m->n_gpus == 0) {
    if (any_backend(r, "cuda") || r->expect_gpus > 0)
      add_check(v, name, GS_CHECK_FAIL, "no GPU in the inventory (CUDA: %s)%s",
                or_dash(m->cuda_status),
                r->expect_gpus > 0 ? "; GPUs were expected (--expect-gpus)"
                                   : "; but measurements ran on the cuda backend");
    else
      add_check(v, name, GS_CHECK_NA, "no GPU (CUDA: %s): the measurements ran on the cpu backend",
                or_dash(m->cuda_status));
    return;
  }
  if (r->expect_gpus > 0 && m->n_gpus != (size_t)r->expect_gpus) {
    add_check(v, name, GS_CHECK_FAIL, "%zu GPU%s found by CUDA, %d expected (--expect-gpus)",
              m->n_gpus, m->n_gpus == 1 ? "" : "s", r->expect_gpus);
    return;
  }
  // Every GPU a measurement names must be one of the inventory's.
  for (size_t f = 0; f < r->n_files; f++) {
    if (gs_machine_is_ingested(r, f)) continue;
    const cJSON *ms = gs_json_member(r->docs[f], "measurements");
    for (const cJSON *x = ms ? ms->child : NULL; x; x = x->next) {
      const cJSON *devices = gs_json_member(x, "devices");
      for (const cJSON *d = cJSON_IsArray(devices) ? devices->child : NULL; d; d = d->next)
        if (cJSON_IsNumber(d) && m->n_gpus <= GS_MACHINE_GPUS_MAX &&
            gpu_position(m, d->valuedouble) < 0) {
          add_check(v, name, GS_CHECK_FAIL, "%s measured on GPU %.0f, which the inventory (%s) "
                    "does not list", gs_report_file_name(r, f), d->valuedouble,
                    gs_report_file_name(r, m->file));
          return;
        }
    }
  }
  if (r->expect_gpus > 0)
    add_check(v, name, GS_CHECK_PASS, "%zu GPUs found by CUDA, as expected", m->n_gpus);
  else
    add_check(v, name, GS_CHECK_PASS,
              "%zu GPU%s found by CUDA; every GPU measured is listed (--expect-gpus N also "
              "checks the count)", m->n_gpus, m->n_gpus == 1 ? "" : "s");
}

/* The first property in which GPU `g` differs from GPU `ref` that makes
 * them different hardware, into `what`; 0 when none. */
static int gpu_differs(const gs_machine_gpu *ref, const gs_machine_gpu *g, char *what,
                       size_t size) {
  if (strcmp(or_dash(ref->name), or_dash(g->name)) != 0)
    return snprintf(what, size, "model %s vs %s", or_dash(g->name), or_dash(ref->name)), 1;
  if (strcmp(or_dash(ref->compute_capability), or_dash(g->compute_capability)) != 0)
    return snprintf(what, size, "compute capability %s vs %s", or_dash(g->compute_capability),
                    or_dash(ref->compute_capability)), 1;
  const struct {
    const char *label;
    double a, b, scale;
    const char *unit;
  } numbers[] = {
      {"memory", g->memory_bytes, ref->memory_bytes, 1.0 / 1073741824.0, " GiB"},
      {"SMs", g->sm_count, ref->sm_count, 1.0, ""},
      {"max SM clock", g->max_sm_clock_mhz, ref->max_sm_clock_mhz, 1.0, " MHz"},
      {"max memory clock", g->max_memory_clock_mhz, ref->max_memory_clock_mhz, 1.0, " MHz"},
  };
  for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
    double a = numbers[i].a, b = numbers[i].b;
    if (a == b || (isnan(a) && isnan(b))) continue;
    snprintf(what, size, "%s %.1f%s vs %.1f%s", numbers[i].label, a * numbers[i].scale,
             numbers[i].unit, b * numbers[i].scale, numbers[i].unit);
    return 1;
  }
  return 0;
}

static void check_identical(gs_node_verdict *v, const gs_machine *m) {
  const char *name = "GPUs identical";
  if (m->n_shown < 2) {
    add_check(v, name, GS_CHECK_NA, m->n_shown ? "one GPU: nothing to compare with" : "no GPU");
    return;
  }
  const gs_machine_gpu *ref = &m->gpus[0];
  char what[200];
  for (size_t i = 1; i < m->n_shown; i++)
    if (gpu_differs(ref, &m->gpus[i], what, sizeof what)) {
      add_check(v, name, GS_CHECK_FAIL, "GPU %d differs from GPU %d: %s", m->gpus[i].index,
                ref->index, what);
      return;
    }
  for (size_t i = 1; i < m->n_shown; i++)
    if (m->gpus[i].power_limit_watts != ref->power_limit_watts &&
        !(isnan(m->gpus[i].power_limit_watts) && isnan(ref->power_limit_watts))) {
      add_check(v, name, GS_CHECK_WARN, "same model, but GPU %d's power limit is %.0f W, GPU "
                "%d's %.0f W", m->gpus[i].index, m->gpus[i].power_limit_watts, ref->index,
                ref->power_limit_watts);
      return;
    }
  add_check(v, name, GS_CHECK_PASS, "%zu x %s, %.1f GiB, %.0f SMs, compute capability %s, max "
            "SM/memory clock %.0f/%.0f MHz, power limit %.0f W", m->n_shown, or_dash(ref->name),
            ref->memory_bytes / 1073741824.0, ref->sm_count, or_dash(ref->compute_capability),
            ref->max_sm_clock_mhz, ref->max_memory_clock_mhz, ref->power_limit_watts);
}

/* Host and driver of every document of the machine against the inventory's. */
static void check_software(gs_node_verdict *v, const gs_report *r, const gs_machine *m) {
  const char *name = "host and driver";
  size_t docs = 0;
  for (size_t f = 0; f < r->n_files; f++) {
    if (gs_machine_is_ingested(r, f)) continue;
    docs++;
    const cJSON *env = gs_json_member(r->docs[f], "environment");
    const char *host = gs_json_string_member(env, "host", NULL);
    const char *driver = gs_json_string_member(gs_json_member(env, "nvml"), "driver_version", NULL);
    if (host && m->host && strcmp(host, m->host) != 0) {
      add_check(v, name, GS_CHECK_WARN, "%s was written on host %s, the inventory on %s: not "
                "one machine", gs_report_file_name(r, f), host, m->host);
      return;
    }
    if (driver && m->driver && strcmp(driver, m->driver) != 0) {
      add_check(v, name, GS_CHECK_WARN, "%s was measured with driver %s, the inventory has %s",
                gs_report_file_name(r, f), driver, m->driver);
      return;
    }
  }
  add_check(v, name, GS_CHECK_PASS, "%zu document%s from host %s; NVIDIA driver %s, CUDA "
            "driver %s, runtime %s, NCCL %s", docs, docs == 1 ? "" : "s", or_dash(m->host),
            m->driver ? m->driver : "not recorded (no NVML)", or_dash(m->cuda_driver),
            or_dash(m->cuda_runtime), or_dash(m->nccl));
}

/* ---- links ------------------------------------------------------------------------ */

static void check_links(gs_node_verdict *v, const gs_machine *m) {
  const char *name = "links";
  if (m->n_shown < 2) {
    add_check(v, name, GS_CHECK_NA, m->n_shown ? "one GPU: no links" : "no GPU");
    return;
  }
  int best = 0, known = 0;
  for (size_t i = 0; i < m->n_shown; i++)
    for (size_t j = 0; j < m->n_shown; j++)
      if (i != j && m->links[i][j]) {
        known++;
        int nv = gs_machine_nvlinks(m->links[i][j]);
        if (nv > best) best = nv;
      }
  if (!known) {
    add_check(v, name, GS_CHECK_NA, "link words unknown (%s)",
              m->nvml_status ? m->nvml_status : "NVML could not tell");
    return;
  }
  gs_check_state state = GS_CHECK_PASS;
  char why[300] = "";
  for (size_t i = 0; i < m->n_shown && state != GS_CHECK_FAIL; i++)
    for (size_t j = i + 1; j < m->n_shown && state != GS_CHECK_FAIL; j++) {
      const char *word = m->links[i][j];
      int nv = gs_machine_nvlinks(word), a = m->gpus[i].index, b = m->gpus[j].index;
      if (!word) {
        state = GS_CHECK_WARN;
        snprintf(why, sizeof why, "GPU %d - GPU %d: link unknown", a, b);
      } else if (nv > 0 && nv < best) {
        state = GS_CHECK_FAIL;
        snprintf(why, sizeof why, "GPU %d - GPU %d: %s where other pairs have NV%d (links down?)",
                 a, b, word, best);
      } else if (nv > 0 && (m->peer[i][j] == 0 || m->peer[j][i] == 0)) {
        state = GS_CHECK_FAIL;
        snprintf(why, sizeof why, "GPU %d - GPU %d: %s but CUDA refuses peer access", a, b, word);
      } else if (nv == 0 && best > 0 && state == GS_CHECK_PASS) {
        state = GS_CHECK_WARN;
        snprintf(why, sizeof why, "GPU %d - GPU %d: PCIe (%s) while other pairs have NV%d", a, b,
                 word, best);
      } else if (nv == 0 && (m->peer[i][j] == 0 || m->peer[j][i] == 0) &&
                 state == GS_CHECK_PASS) {
        state = GS_CHECK_WARN;
        snprintf(why, sizeof why, "GPU %d - GPU %d: %s without peer access: copies are staged "
                 "through the host", a, b, word);
      }
    }
  if (state == GS_CHECK_PASS) {
    if (best > 0)
      snprintf(why, sizeof why, "every pair NV%d with peer access", best);
    else
      snprintf(why, sizeof why, "every pair over PCIe (no NVLink), peer access on");
  }
  add_check(v, name, state, "%s", why);
}

/* The link figure of the pair at inventory positions (i, j): theoretical
 * NVLink bytes/s per direction, NaN when none (PCIe, unknown). */
static double nvlink_figure(const gs_machine *m, int i, int j) {
  if (i < 0 || j < 0) return NAN;
  double bw = m->nvlink_bw[i][j];
  return bw > 0 ? bw : NAN;
}

/* The median of `v[0..n)` (sorted in place). */
static double median_of(double *v, size_t n) {
  if (n == 0) return NAN;
  gs_stats_sort(v, n);
  return gs_stats_percentile_sorted(v, n, 50.0);
}

/* The median copy-engine figure of the pairs of `test` whose link word is
 * `word` (PCIe pairs have no theoretical figure: they are held against
 * each other). */
static double word_median(const gs_machine *m, const cJSON *devices, const cJSON *test,
                          const char *word) {
  double values[GS_MACHINE_GPUS_MAX * GS_MACHINE_GPUS_MAX];
  size_t n = 0, rows = (size_t)cJSON_GetArraySize(devices);
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < rows; j++) {
      int a = gpu_position(m, cJSON_GetArrayItem(devices, (int)i)->valuedouble);
      int b = gpu_position(m, cJSON_GetArrayItem(devices, (int)j)->valuedouble);
      double median;
      const char *state;
      gs_machine_p2p_cell(test, i, j, &median, &state);
      if (a < 0 || b < 0 || !state || strcmp(state, "ok") != 0 || !isfinite(median)) continue;
      if (m->links[a][b] && strcmp(m->links[a][b], word) == 0 && n < sizeof values / sizeof *values)
        values[n++] = median;
    }
  return median_of(values, n);
}

/* The median copy-engine figure over every measured pair of the first p2p
 * document, or NaN: the link's figure where info has no NVLink rate. */
static double median_pair(const gs_report *r) {
  double values[GS_MACHINE_GPUS_MAX * GS_MACHINE_GPUS_MAX];
  size_t n = 0;
  for (size_t f = 0; f < r->n_files; f++) {
    if (!gs_machine_is_p2p(r, f)) continue;
    const cJSON *test = gs_machine_p2p_test(r->docs[f], "ce_unidir_p2p");
    const cJSON *p2p = gs_json_member(r->docs[f], "p2p");
    size_t rows = (size_t)cJSON_GetArraySize(gs_json_member(p2p, "devices"));
    for (size_t i = 0; test && i < rows; i++)
      for (size_t j = 0; j < rows; j++) {
        double median;
        const char *state;
        gs_machine_p2p_cell(test, i, j, &median, &state);
        if (state && strcmp(state, "ok") == 0 && isfinite(median) &&
            n < sizeof values / sizeof *values)
          values[n++] = median;
      }
    break;
  }
  return median_of(values, n);
}

static void check_p2p(gs_node_verdict *v, const gs_report *r, const gs_machine *m) {
  const char *name = "p2p bandwidth";
  if (m->n_gpus < 2) {
    add_check(v, name, GS_CHECK_NA, m->n_gpus ? "one GPU: no GPU pair" : "no GPU");
    return;
  }
  size_t f = 0;
  while (f < r->n_files && !gs_machine_is_p2p(r, f)) f++;
  if (f == r->n_files) {
    add_check(v, name, GS_CHECK_NA, "no p2p document (suite measures p2p.json with 2 or more "
              "GPUs; 'gpuscale p2p' writes one)");
    return;
  }
  const cJSON *test = gs_machine_p2p_test(r->docs[f], "ce_unidir_p2p");
  const char *status = gs_json_string_member(test, "status", "missing");
  if (strcmp(status, "ran") != 0) {
    add_check(v, name, GS_CHECK_NA, "%s: ce_unidir_p2p %s%s%s", gs_report_file_name(r, f),
              status, test ? ": " : "", test ? gs_json_string_member(test, "reason", "-") : "");
    return;
  }
  const cJSON *devices = gs_json_member(gs_json_member(r->docs[f], "p2p"), "devices");
  size_t rows = (size_t)cJSON_GetArraySize(devices), pairs = 0;
  int pcie = 0;  // the pair named is held against its peers, not a figure
  gs_check_state worst = GS_CHECK_NA;
  double worst_share = INFINITY;
  char why[300] = "";
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < rows; j++) {
      double median;
      const char *state;
      gs_machine_p2p_cell(test, i, j, &median, &state);
      if (!state || strcmp(state, "skipped") == 0) continue;
      int da = cJSON_GetArrayItem(devices, (int)i)->valueint;
      int db = cJSON_GetArrayItem(devices, (int)j)->valueint;
      int a = gpu_position(m, da), b = gpu_position(m, db);
      pairs++;
      if (strcmp(state, "ok") != 0 || !isfinite(median)) {
        // A failed cell is named before any slow one.
        if (worst_share > -1) snprintf(why, sizeof why, "GPU %d -> GPU %d: %s", da, db, state);
        worst = GS_CHECK_FAIL;
        worst_share = -1;
        continue;
      }
      double figure = nvlink_figure(m, a, b), share;
      gs_check_state st;
      char bw[32], ref[64];
      gbps(median, bw, sizeof bw);
      if (isfinite(figure)) {
        share = median / figure;
        st = state_of_share(share, GS_VERDICT_P2P_PASS, GS_VERDICT_P2P_FAIL);
        gbps(figure, ref, sizeof ref);
        strcat(ref, " ");
        strncat(ref, a >= 0 && b >= 0 && m->links[a][b] ? m->links[a][b] : "NVLink", 16);
      } else {
        const char *word = a >= 0 && b >= 0 ? m->links[a][b] : NULL;
        double mid = word ? word_median(m, devices, test, word) : NAN;
        if (!isfinite(mid)) continue;
        share = median / mid;
        st = state_of_share(share, GS_VERDICT_PEER_PASS, GS_VERDICT_PEER_FAIL);
        gbps(mid, ref, sizeof ref);
        snprintf(ref + strlen(ref), sizeof ref - strlen(ref), " (median %s pair)", word);
      }
      // The pair named is the worst: by state, then by its share.
      if (worst_share > -1 && (st > worst || (st == worst && share < worst_share))) {
        worst_share = share;
        pcie = !isfinite(figure);
        snprintf(why, sizeof why, "GPU %d -> GPU %d: %s, %.0f%% of %s", da, db, bw,
                 100.0 * share, ref);
      }
      if (st > worst) worst = st;
    }
  if (worst == GS_CHECK_NA) {
    add_check(v, name, GS_CHECK_NA, "no pair has a link figure (no NVLink rate in the "
              "inventory and no other pair of the same link)");
    return;
  }
  add_check(v, name, worst, "worst copy-engine copy (ce_unidir_p2p, %zu pairs) %s; pass >= "
            "%.0f%%, fail < %.0f%% of %s", pairs, why,
            100.0 * (pcie ? GS_VERDICT_PEER_PASS : GS_VERDICT_P2P_PASS),
            100.0 * (pcie ? GS_VERDICT_PEER_FAIL : GS_VERDICT_P2P_FAIL),
            pcie ? "the median pair of the same PCIe path" : "the NVLink figure");
}

static void check_allreduce(gs_node_verdict *v, const gs_report *r, const gs_machine *m) {
  const char *name = "allreduce busbw";
  if (m->n_gpus < 2) {
    add_check(v, name, GS_CHECK_NA, m->n_gpus ? "one GPU: no collective between GPUs" :
              "no GPU: the cpu backend's collectives cross no GPU link");
    return;
  }
  const gs_report_row *best = NULL;
  for (size_t i = 0; i < r->n_series; i++)
    for (size_t j = 0; j < r->series[i].n_rows; j++) {
      const gs_report_row *row = &r->series[i].rows[j];
      if (!row->collective.present || gs_machine_is_ingested(r, row->file) || !row->collective.op ||
          strcmp(row->collective.op, "allreduce") != 0 || strcmp(r->series[i].backend,
                                                                 "cuda") != 0 ||
          !isfinite(row->collective.busbw))
        continue;
      if (!best || row->world_size > best->world_size ||
          (row->world_size == best->world_size && row->collective.busbw > best->collective.busbw))
        best = row;
    }
  if (!best) {
    add_check(v, name, GS_CHECK_NA, "no allreduce on GPUs among the documents (suite writes "
              "coll.json with 2 or more GPUs)");
    return;
  }
  double figure = best->collective.link_bandwidth;
  const char *whose = "theoretical NVLink";
  if (!isfinite(figure)) figure = median_pair(r), whose = "median measured p2p pair";
  char bw[32], ref[32], size[32];
  gbps(best->collective.busbw, bw, sizeof bw);
  gs_format_value(GS_UNIT_BYTES, best->collective.bytes, size, sizeof size);
  if (!isfinite(figure)) {
    add_check(v, name, GS_CHECK_NA, "best %s at %s, %d GPUs; no link figure (no NVLink rate "
              "in the topology, no p2p document)", bw, size, best->world_size);
    return;
  }
  gbps(figure, ref, sizeof ref);
  double share = best->collective.busbw / figure;
  add_check(v, name, state_of_share(share, GS_VERDICT_ALLREDUCE_PASS, GS_VERDICT_ALLREDUCE_FAIL),
            "best %s at %s, %d GPUs: %.0f%% of %s (%s); pass >= %.0f%%, fail < %.0f%%", bw,
            size, best->world_size, 100.0 * share, ref, whose, 100.0 * GS_VERDICT_ALLREDUCE_PASS,
            100.0 * GS_VERDICT_ALLREDUCE_FAIL);
}

/* ---- what the GPUs did ------------------------------------------------------------ */

/* The CUDA ordinal of `rank` in measurement `row` (its "devices"), or -1. */
static int rank_device(const gs_report *r, const gs_report_row *row, int rank) {
  const cJSON *m = cJSON_GetArrayItem(gs_json_member(r->docs[row->file], "measurements"),
                                      (int)row->measurement);
  const cJSON *d = cJSON_GetArrayItem(gs_json_member(m, "devices"), rank);
  return cJSON_IsNumber(d) ? d->valueint : -1;
}

/* The 95% interval of rank `w`'s throughput over the median GPU's
 * (`ratio`), the median GPU being the rank of `row` nearest the median
 * throughput other than `w` (gs_report_rank_ratio_interval). NaN bounds
 * for request-based rows: a rank's tokens/s is no mean of its samples. */
static void rank_interval(const gs_report_row *row, const gs_report_rank *w, double ratio,
                          double *low, double *high) {
  *low = *high = NAN;
  const gs_report_rank *m = NULL;
  for (size_t k = 0; k < row->n_ranks; k++) {
    const gs_report_rank *rk = &row->ranks[k];
    if (rk == w || !isfinite(rk->throughput)) continue;
    if (!m || fabs(rk->throughput - row->rank_median) < fabs(m->throughput - row->rank_median))
      m = rk;
  }
  if (!row->requests.present && m) gs_report_rank_ratio_interval(w, m, ratio, low, high);
}

/* Per workload: each GPU's throughput at the largest GPU count against the
 * median GPU, with the report's rank marks (--moderate, --critical). */
static int check_name_order(const void *a, const void *b) {
  return strcmp(((const gs_node_check *)a)->name, ((const gs_node_check *)b)->name);
}

static void check_throughput(gs_node_verdict *v, const gs_report *r) {
  const size_t first = v->n;
  size_t cpu_series = 0;
  int any_workload = 0;
  for (size_t i = 0; i < r->n_series; i++) {
    const gs_report_series *s = &r->series[i];
    const gs_report_row *row = NULL;
    for (size_t j = 0; j < s->n_rows; j++) {
      const gs_report_row *x = &s->rows[j];
      if (x->collective.present || x->loadgen || gs_machine_is_ingested(r, x->file)) continue;
      if (!row || x->world_size >= row->world_size) row = x;
    }
    if (!row) continue;
    any_workload = 1;
    if (strcmp(s->backend, "cuda") != 0) {
      cpu_series++;
      continue;
    }
    char name[48], series[96];
    gs_report_series_name(s, series, sizeof series);
    snprintf(name, sizeof name, "throughput %.36s", series);
    if (row->world_size < 2) {
      add_check(v, name, GS_CHECK_NA, "measured on one GPU only: no other GPU to compare with");
      continue;
    }
    if (strcmp(row->status, "ok") != 0) {
      add_check(v, name, GS_CHECK_NA, "the %d-GPU measurement is %s (see measurements)",
                row->world_size, row->status);
      continue;
    }
    const gs_report_rank *worst = NULL;
    for (size_t k = 0; k < row->n_ranks; k++) {
      const gs_report_rank *rk = &row->ranks[k];
      if (rk->mark == GS_MARK_NONE) continue;
      if (!worst || rk->mark > worst->mark ||
          (rk->mark == worst->mark && rk->deviation > worst->deviation))
        worst = rk;
    }
    if (!worst) {
      add_check(v, name, GS_CHECK_NA, "no per-GPU throughput at %d GPUs", row->world_size);
      continue;
    }
    gs_check_state st = worst->mark == GS_MARK_GOOD       ? GS_CHECK_PASS
                        : worst->mark == GS_MARK_MODERATE ? GS_CHECK_WARN
                                                          : GS_CHECK_FAIL;
    char rate[32], ratio_text[64];
    gs_format_rate(row->rank_median, rate, sizeof rate);
    const double ratio = worst->throughput / row->rank_median;
    double lo, hi;
    rank_interval(row, worst, ratio, &lo, &hi);
    gs_scaling_format_ratio(ratio, lo, hi, 1.0, 2, "x", ratio_text, sizeof ratio_text);
    const char *unit = row->requests.present ? "tokens" : s->item_unit ? s->item_unit : "items";
    add_check(v, name, st, "at %d GPUs the farthest GPU %d (rank %d) is %s%.1f%% from the "
              "median GPU (%s %s/s), %s of it%s; pass <= %.0f%%, fail > %.0f%%", row->world_size,
              rank_device(r, row, worst->rank), worst->rank,
              worst->throughput < row->rank_median ? "-" : "+", 100.0 * worst->deviation, rate,
              unit, ratio_text, worst->success_rate < 1.0 ? " or requests failed" : "",
              100.0 * r->thresholds.moderate, 100.0 * r->thresholds.critical);
  }
  // By workload name, so that the table does not depend on the order of
  // the files (suite's order and a shell glob's give the same verdict).
  qsort(v->checks + first, v->n - first, sizeof *v->checks, check_name_order);
  if (!any_workload)
    add_check(v, "throughput per GPU", GS_CHECK_NA, "no workload document among the files");
  if (cpu_series)
    add_check(v, "throughput per GPU", GS_CHECK_NA, "cpu backend (%zu workload%s): ranks are "
              "threads sharing the host's cores, not GPUs", cpu_series, cpu_series == 1 ? "" : "s");
}

/* Throttle reasons that mean the GPU was slowed (fail) or capped (warn);
 * the others (idle, application clocks, sync boost, display) are normal. A
 * software power cap is judged by the clock it left (telemetry_rank). */
static gs_check_state throttle_state(const char *reason) {
  static const char *const slowed[] = {"hw_slowdown", "hw_thermal_slowdown",
                                       "hw_power_brake_slowdown", "sw_thermal_slowdown"};
  static const char *const benign[] = {"gpu_idle", "applications_clocks_setting", "sync_boost",
                                       "display_clock_setting"};
  for (size_t i = 0; i < sizeof slowed / sizeof *slowed; i++)
    if (strcmp(reason, slowed[i]) == 0) return GS_CHECK_FAIL;
  for (size_t i = 0; i < sizeof benign / sizeof *benign; i++)
    if (strcmp(reason, benign[i]) == 0) return GS_CHECK_PASS;
  return GS_CHECK_WARN;  // sw_power_cap and bits NVML does not name
}

/* What the telemetry of every measurement saw, for the throttling and ECC
 * checks. */
typedef struct {
  size_t readings, ecc_ranks;      /* NVML readings; rank summaries with ECC counts */
  size_t capped_held;              /* GPU summaries at the power cap with the clock held */
  const char *unavailable;         /* the first reason telemetry was not available */
  gs_check_state throttle, ecc;    /* worst state of each */
  char throttle_why[300], ecc_why[300], held_why[300];
} telemetry_seen;

/* "mlp at 4 GPUs: GPU 2" for telemetry rank `rk` of measurement `x`. */
static void telemetry_place(const cJSON *x, const cJSON *rk, char *buf, size_t size) {
  const cJSON *dev = gs_json_member(rk, "device"), *world = gs_json_member(x, "world_size");
  snprintf(buf, size, "%s at %d GPUs: GPU %d", gs_json_string_member(x, "workload", "?"),
           cJSON_IsNumber(world) ? world->valueint : 0, cJSON_IsNumber(dev) ? dev->valueint : -1);
}

/* The maximum SM clock of GPU `device` in the environment of `doc`, else
 * of any document of the report (the inventory of `gpuscale info` has it
 * where a measurement's environment may not); NaN when none records it. */
static double max_sm_clock(const gs_report *r, const cJSON *doc, const cJSON *device) {
  for (size_t f = 0; f <= r->n_files && cJSON_IsNumber(device); f++) {
    const cJSON *d = f == 0 ? doc : r->docs[f - 1];
    const cJSON *gpus = gs_json_member(gs_json_member(d, "environment"), "gpus");
    for (const cJSON *g = gpus ? gpus->child : NULL; g; g = g->next) {
      const cJSON *index = gs_json_member(g, "index");
      const double top = gs_json_number_member(g, "max_sm_clock_mhz");
      if (cJSON_IsNumber(index) && index->valuedouble == device->valuedouble && top > 0)
        return top;
    }
  }
  return NAN;
}

static void telemetry_rank(telemetry_seen *seen, const gs_report *r, const cJSON *doc,
                           const cJSON *x, const cJSON *rk) {
  const cJSON *n = gs_json_member(rk, "samples");
  seen->readings += cJSON_IsNumber(n) ? (size_t)n->valuedouble : 0;
  char place[128];
  // The SM clock the GPU held over the measurement against its maximum: a
  // power cap that holds it at GS_VERDICT_CLOCK_HELD or more is a GPU at
  // its power limit doing its work, not a sick one.
  const double clock = gs_json_number_member(gs_json_member(rk, "sm_clock_mhz"), "mean");
  const double top = max_sm_clock(r, doc, gs_json_member(rk, "device"));
  const double share = top > 0 ? clock / top : NAN;
  const double util = gs_json_number_member(gs_json_member(rk, "utilization_percent"), "mean");
  int idle = 0, capped = 0;
  const cJSON *reasons = gs_json_member(rk, "throttle_reasons");
  for (const cJSON *why = reasons ? reasons->child : NULL; why; why = why->next) {
    if (!cJSON_IsString(why)) continue;
    const int cap = strcmp(why->valuestring, "sw_power_cap") == 0;
    idle |= strcmp(why->valuestring, "gpu_idle") == 0;
    capped |= cap;
    if (cap && isfinite(share) && share >= GS_VERDICT_CLOCK_HELD) {
      if (seen->capped_held++ == 0) {
        telemetry_place(x, rk, place, sizeof place);
        snprintf(seen->held_why, sizeof seen->held_why,
                 "%s held its SM clock at %.0f%% of its %.0f MHz", place, 100.0 * share, top);
      }
      continue;
    }
    const gs_check_state st = throttle_state(why->valuestring);
    if (st <= seen->throttle) continue;
    seen->throttle = st;
    telemetry_place(x, rk, place, sizeof place);
    if (cap && isfinite(share))
      snprintf(seen->throttle_why, sizeof seen->throttle_why,
               "%s reported sw_power_cap with its SM clock down to %.0f%% of its %.0f MHz", place,
               100.0 * share, top);
    else
      snprintf(seen->throttle_why, sizeof seen->throttle_why, "%s reported %s", place,
               why->valuestring);
  }
  // A busy GPU whose clock fell with no power cap and no idleness reported.
  if (!capped && !idle && isfinite(share) && share < GS_VERDICT_CLOCK_HELD && util >= 50.0 &&
      seen->throttle < GS_CHECK_WARN) {
    seen->throttle = GS_CHECK_WARN;
    telemetry_place(x, rk, place, sizeof place);
    snprintf(seen->throttle_why, sizeof seen->throttle_why,
             "%s ran %.0f%% busy at an SM clock of %.0f%% of its %.0f MHz with no power cap "
             "reported", place, util, 100.0 * share, top);
  }
  const cJSON *ecc = gs_json_member(rk, "ecc_errors");
  const cJSON *corrected = gs_json_member(ecc, "corrected");
  const cJSON *uncorrected = gs_json_member(ecc, "uncorrected");
  if (!cJSON_IsNumber(corrected) || !cJSON_IsNumber(uncorrected)) return;
  seen->ecc_ranks++;
  // Uncorrected errors lose data; corrected ones are memory starting to wear.
  gs_check_state st = uncorrected->valuedouble > 0 ? GS_CHECK_FAIL
                      : corrected->valuedouble > 0 ? GS_CHECK_WARN
                                                   : GS_CHECK_PASS;
  if (st <= seen->ecc) return;
  seen->ecc = st;
  telemetry_place(x, rk, place, sizeof place);
  snprintf(seen->ecc_why, sizeof seen->ecc_why, "%s: %.0f uncorrected, %.0f corrected "
           "(volatile counts since the driver loaded)", place, uncorrected->valuedouble,
           corrected->valuedouble);
}

/* The throttling and the ECC check, from every measurement's telemetry. */
static void check_telemetry(gs_node_verdict *v, const gs_report *r) {
  telemetry_seen seen = {.throttle = GS_CHECK_PASS, .ecc = GS_CHECK_PASS};
  for (size_t f = 0; f < r->n_files; f++) {
    if (gs_machine_is_ingested(r, f)) continue;
    const cJSON *ms = gs_json_member(r->docs[f], "measurements");
    for (const cJSON *x = ms ? ms->child : NULL; x; x = x->next) {
      const cJSON *t = gs_json_member(x, "telemetry");
      if (!t) continue;
      if (!cJSON_IsTrue(gs_json_member(t, "available"))) {
        if (!seen.unavailable)
          seen.unavailable = gs_json_string_member(t, "reason", "not available");
        continue;
      }
      const cJSON *ranks = gs_json_member(t, "ranks");
      for (const cJSON *rk = ranks ? ranks->child : NULL; rk; rk = rk->next)
        telemetry_rank(&seen, r, r->docs[f], x, rk);
    }
  }
  if (seen.readings == 0) {
    const char *why = seen.unavailable ? seen.unavailable : "no measurement recorded telemetry";
    add_check(v, "throttling", GS_CHECK_NA, "no telemetry readings (%s)", why);
    add_check(v, "ECC errors", GS_CHECK_NA, "no telemetry readings (%s)", why);
    return;
  }
  if (seen.throttle == GS_CHECK_PASS && seen.capped_held)
    snprintf(seen.throttle_why, sizeof seen.throttle_why,
             "no slowdown in %zu NVML readings; %zu GPU summar%s at the software power cap "
             "with the clock held (%s)", seen.readings, seen.capped_held,
             seen.capped_held == 1 ? "y" : "ies", seen.held_why);
  else if (seen.throttle == GS_CHECK_PASS)
    snprintf(seen.throttle_why, sizeof seen.throttle_why,
             "no slowdown or power cap in %zu NVML readings", seen.readings);
  add_check(v, "throttling", seen.throttle, "%s (fail: hardware, thermal or power-brake "
            "slowdown; warn: software power cap with the SM clock below %.0f%% of its maximum, "
            "or a busy GPU that slow without one)", seen.throttle_why,
            100.0 * GS_VERDICT_CLOCK_HELD);
  if (seen.ecc_ranks == 0)
    add_check(v, "ECC errors", GS_CHECK_NA, "NVML gave no ECC counts (ECC off or not "
              "supported, or documents written before gpuscale sampled them)");
  else if (seen.ecc == GS_CHECK_PASS)
    add_check(v, "ECC errors", GS_CHECK_PASS, "no ECC error in %zu GPU summaries (volatile "
              "counts since the driver loaded)", seen.ecc_ranks);
  else
    add_check(v, "ECC errors", seen.ecc, "%s (fail: uncorrected; warn: corrected)",
              seen.ecc_why);
}

/* Every measurement of the machine's documents ok and verified. */
static void check_measurements(gs_node_verdict *v, const gs_report *r) {
  const char *name = "measurements";
  size_t n = 0, docs = 0;
  for (size_t f = 0; f < r->n_files; f++) {
    if (gs_machine_is_ingested(r, f)) continue;
    docs++;
    const char *doc_status = gs_json_string_member(r->docs[f], "status", "ok");
    if (strcmp(doc_status, "ok") != 0) {
      add_check(v, name, GS_CHECK_FAIL, "%s: status %s", gs_report_file_name(r, f), doc_status);
      return;
    }
    const cJSON *ms = gs_json_member(r->docs[f], "measurements");
    for (const cJSON *x = ms ? ms->child : NULL; x; x = x->next, n++) {
      const char *status = gs_json_string_member(x, "status", "?");
      const char *verified =
          gs_json_string_member(gs_json_member(x, "verification"), "status", "-");
      if (strcmp(status, "ok") != 0 || strcmp(verified, "failed") == 0) {
        add_check(v, name, GS_CHECK_FAIL, "%s measurement %zu (%s): status %s, verification %s",
                  gs_report_file_name(r, f), n, gs_json_string_member(x, "workload", "?"), status,
                  verified);
        return;
      }
    }
  }
  if (n == 0)
    add_check(v, name, GS_CHECK_NA, "no workload or collective measurement among the %zu "
              "document%s (their status is ok)", docs, docs == 1 ? "" : "s");
  else
    add_check(v, name, GS_CHECK_PASS, "%zu measurement%s in %zu document%s ok, none failed "
              "verification", n, n == 1 ? "" : "s", docs, docs == 1 ? "" : "s");
}

/* See verdict.h. */
void gs_report_node_verdict(const gs_report *r, gs_node_verdict *out) {
  memset(out, 0, sizeof *out);
  gs_machine *m = calloc(1, sizeof *m);
  if (!m) return;
  gs_machine_read(r, m);
  if (m->present) {
    out->present = 1;
    out->host = m->host;
    check_present(out, r, m);
    check_identical(out, m);
    check_software(out, r, m);
    check_links(out, m);
    check_p2p(out, r, m);
    check_allreduce(out, r, m);
    check_throughput(out, r);
    check_telemetry(out, r);
    check_measurements(out, r);
    for (size_t i = 0; i < out->n; i++)
      if (out->checks[i].state > out->overall) out->overall = out->checks[i].state;
    // Without a GPU the machine checks cannot apply: a passing document
    // check alone does not make a GPU node healthy (--expect-gpus fails it).
    if (m->n_gpus == 0 && out->overall != GS_CHECK_FAIL) out->overall = GS_CHECK_NA;
  }
  free(m);
}

/* See verdict.h. */
gs_status gs_node_verdict_status(const gs_node_verdict *v) {
  if (!v->present || v->overall != GS_CHECK_FAIL) return GS_OK;
  char failed[512] = "";
  for (size_t i = 0; i < v->n; i++) {
    if (v->checks[i].state != GS_CHECK_FAIL) continue;
    size_t len = strlen(failed);
    snprintf(failed + len, sizeof failed - len, "%s%s", len ? ", " : "", v->checks[i].name);
  }
  return gs_error(GS_NODE_FAIL, "node verdict: fail (%s)", failed);
}
