/* Analysis of result documents: groups measurements into series, recomputes
 * step-time statistics, throughput, speedup, efficiency and the Karp-Flatt
 * serial fraction from the raw samples, checks per-rank symmetry and derives
 * the recommendation. The formulas are those of docs/report.md. */
#include "report/report.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "core/result.h"
#include "core/scaling.h"
#include "report/analyze_internal.h"

/* Largest world size accepted from a document; far above any real machine,
 * it only bounds the allocation a corrupt file can ask for. */
#define MAX_WORLD_SIZE 1048576

typedef struct {
  double *v;
  size_t n, cap;
} dvec;

static int dvec_push(dvec *d, double x) {
  if (d->n == d->cap) {
    size_t cap = d->cap ? 2 * d->cap : 64;
    double *v = realloc(d->v, cap * sizeof *v);
    if (!v) return 0;
    d->v = v;
    d->cap = cap;
  }
  d->v[d->n++] = x;
  return 1;
}

const char *gs_rank_mark_name(gs_rank_mark mark) {
  switch (mark) {
    case GS_MARK_GOOD: return "good";
    case GS_MARK_MODERATE: return "moderate";
    case GS_MARK_CRITICAL: return "critical";
    default: return "n/a";
  }
}

const char *gs_report_file_name(const gs_report *r, size_t file) {
  const char *p = r->files[file];
  const char *slash = strrchr(p, '/');
  return slash ? slash + 1 : p;
}

/* See report.h. */
void gs_report_series_name(const gs_report_series *s, char *out, size_t size) {
  gs_scaling_series_name(s->workload, s->label, s->split, out, size);
}

static const char *json_string_or(const cJSON *obj, const char *name, const char *fallback) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, name);
  return cJSON_IsString(x) ? x->valuestring : fallback;
}

static void copy_text(char *dst, size_t size, const char *src) {
  snprintf(dst, size, "%s", src ? src : "");
}

/* ---- canonical JSON of the workload options ------------------------------ */

static int compare_items(const void *a, const void *b) {
  const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
  return strcmp(x->string ? x->string : "", y->string ? y->string : "");
}

/* Sorts the members of every object under `item` by name, in place. */
static int sort_members(cJSON *item) {
  if (!item) return 1;
  size_t n = 0;
  for (cJSON *c = item->child; c; c = c->next) {
    if (!sort_members(c)) return 0;
    n++;
  }
  if (!cJSON_IsObject(item) || n < 2) return 1;
  cJSON **all = malloc(n * sizeof *all);
  if (!all) return 0;
  size_t i = 0;
  for (cJSON *c = item->child; c; c = c->next) all[i++] = c;
  qsort(all, n, sizeof *all, compare_items);
  for (i = 0; i < n; i++) {
    all[i]->next = i + 1 < n ? all[i + 1] : NULL;
    // cJSON keeps the last element in the first element's prev.
    all[i]->prev = i > 0 ? all[i - 1] : all[n - 1];
  }
  item->child = all[0];
  free(all);
  return 1;
}

/* Canonical text (members sorted by name, no whitespace) of `options`;
 * "null" when absent. Caller frees. */
static char *canonical_json(const cJSON *options) {
  if (!options) return strdup("null");
  cJSON *copy = cJSON_Duplicate(options, 1);
  if (!copy) return NULL;
  char *text = sort_members(copy) ? cJSON_PrintUnformatted(copy) : NULL;
  cJSON_Delete(copy);
  if (!text) return NULL;
  // cJSON's allocator is malloc unless changed; copy to be sure free() is right.
  char *out = strdup(text);
  cJSON_free(text);
  return out;
}

/* ---- reading one measurement ---------------------------------------------- */

/* Appends the finite numbers of array `arr` to `d`; nulls are counted in
 * `*nulls`; any other element is a format error naming its path. */
static gs_status read_samples(const cJSON *arr, dvec *d, size_t *nulls, const char *file,
                              const char *path) {
  size_t k = 0;
  for (const cJSON *x = arr->child; x; x = x->next, k++) {
    if (cJSON_IsNull(x)) {
      if (nulls) (*nulls)++;
    } else if (cJSON_IsNumber(x)) {
      if (!isfinite(x->valuedouble)) {
        if (nulls) (*nulls)++;
      } else if (!dvec_push(d, x->valuedouble)) {
        return gs_error(GS_ERR_NOMEM, "%s: out of memory reading %s", file, path);
      }
    } else {
      return gs_error(GS_ERR_FORMAT, "%s: %s[%zu] must be a number or null", file, path, k);
    }
  }
  return GS_OK;
}

/* Reads an integral member in [lo, hi]; `*out` untouched when absent. */
static gs_status read_int(const cJSON *obj, const char *name, long lo, long hi, long *out,
                          const char *file, const char *path) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, name);
  if (!x || cJSON_IsNull(x)) return GS_OK;
  double v = cJSON_IsNumber(x) ? x->valuedouble : NAN;
  if (!isfinite(v) || v != floor(v) || v < (double)lo || v > (double)hi)
    return gs_error(GS_ERR_FORMAT, "%s: %s.%s must be an integer from %ld to %ld", file, path,
                    name, lo, hi);
  *out = (long)v;
  return GS_OK;
}

static uint64_t read_u64(const cJSON *obj, const char *name) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, name);
  if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < 0 ||
      x->valuedouble >= 18446744073709551616.0)
    return 0;
  return (uint64_t)x->valuedouble;
}

static double nan_value(void) { return NAN; }

/* Per-rank statistics from its pooled samples. */
static gs_status finish_rank(gs_report_rank *k, const dvec *d, const char *file,
                             const char *path) {
  k->n = d->n;
  if (d->n == 0) return GS_OK;
  gs_stats s;
  gs_status st = gs_stats_compute(d->v, d->n, &s);
  if (st != GS_OK) return gs_error(st, "%s: %s: %s", file, path, gs_last_error());
  k->mean = s.mean;
  k->min = s.min;
  k->max = s.max;
  k->stddev = s.stddev;
  k->median = s.median;
  size_t stable = 0;
  for (size_t i = 0; i < d->n; i++)
    if (fabs(d->v[i] - s.mean) <= GS_REPORT_STABLE_BAND * fabs(s.mean)) stable++;
  k->stable_share = (double)stable / (double)d->n;
  if (s.mean > 0 && k->items_per_step > 0) k->throughput = (double)k->items_per_step / s.mean;
  if (s.median > 0) {
    k->first_sample_ratio = d->v[0] / s.median;
    k->first_sample_flag = k->first_sample_ratio > GS_REPORT_COLD_FLAG;
  }
  if (isfinite(k->first_seconds) && s.median > 0) {
    k->cold_ratio = k->first_seconds / s.median;
    k->cold_flag = k->cold_ratio > GS_REPORT_COLD_FLAG;
  }
  return GS_OK;
}

/* Fills `row` from measurement `m` (index `mi` of `file`): raw samples
 * pooled over runs, statistics, per-rank numbers. Cross-row numbers
 * (speedup and the like) are filled later. */
static gs_status read_measurement(const cJSON *m, size_t mi, const char *file, gs_report_row *row) {
  char path[160];
  snprintf(path, sizeof path, "measurements[%zu]", mi);
  double dnan = nan_value();
  row->throughput = row->speedup = row->efficiency = row->karp_flatt = dnan;
  row->ideal_throughput = row->spread_ratio = row->spread_cv = row->rank_median = dnan;
  row->straggler = -1;

  long ws = 0;
  gs_status st = read_int(m, "world_size", 1, MAX_WORLD_SIZE, &ws, file, path);
  if (st != GS_OK) return st;
  row->world_size = (int)ws;
  copy_text(row->status, sizeof row->status, json_string_or(m, "status", "-"));
  row->error = json_string_or(m, "error", NULL);
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(m, "verification");
  copy_text(row->verification, sizeof row->verification, json_string_or(ver, "status", "-"));
  row->items_per_step = read_u64(cJSON_GetObjectItemCaseSensitive(m, "cost"), "items_per_step");

  // A tensor-parallel llm replica spans GPUs: one rank record per replica.
  long tp = 1;
  const cJSON *llm = cJSON_GetObjectItemCaseSensitive(m, "llm");
  if (cJSON_GetObjectItemCaseSensitive(llm, "tensor_parallel")) {
    char lpath[180];
    snprintf(lpath, sizeof lpath, "%s.llm", path);
    if ((st = read_int(llm, "tensor_parallel", 1, ws, &tp, file, lpath)) != GS_OK) return st;
    if (ws % tp != 0)
      return gs_error(GS_ERR_FORMAT, "%s: %s: world_size %ld is not a multiple of "
                      "llm.tensor_parallel %ld", file, path, ws, tp);
  }
  row->n_ranks = (size_t)(ws / tp);
  row->ranks = calloc(row->n_ranks, sizeof *row->ranks);
  dvec *rank_samples = calloc(row->n_ranks, sizeof *rank_samples);
  unsigned char *clocks = calloc(row->n_ranks, 1);  // bit 1: device, bit 2: wall
  unsigned char *seen = calloc(row->n_ranks, 1);
  dvec steps = {0};
  if (!row->ranks || !rank_samples || !clocks || !seen) {
    st = gs_error(GS_ERR_NOMEM, "%s: out of memory for %ld ranks", file, ws);
    goto done;
  }
  for (size_t r = 0; r < row->n_ranks; r++) {
    gs_report_rank *k = &row->ranks[r];
    k->rank = (int)r;
    copy_text(k->status, sizeof k->status, "ok");
    k->clock = "-";
    k->mean = k->min = k->max = k->stddev = k->median = k->stable_share = dnan;
    k->throughput = k->deviation = k->first_seconds = k->cold_ratio = dnan;
    k->first_sample_ratio = dnan;
    k->mark = GS_MARK_NONE;
  }

  const cJSON *runs = cJSON_GetObjectItemCaseSensitive(m, "runs");
  size_t ri = 0;
  for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next, ri++) {
    char rpath[200];
    snprintf(rpath, sizeof rpath, "%s.runs[%zu]", path, ri);
    const cJSON *ss = cJSON_GetObjectItemCaseSensitive(run, "step_seconds");
    if (cJSON_IsArray(ss)) {
      char spath[220];
      snprintf(spath, sizeof spath, "%s.step_seconds", rpath);
      if ((st = read_samples(ss, &steps, &row->step_nulls, file, spath)) != GS_OK) goto done;
    } else if (ss && !cJSON_IsNull(ss)) {
      st = gs_error(GS_ERR_FORMAT, "%s: %s.step_seconds must be an array or null", file, rpath);
      goto done;
    }
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(run, "ranks");
    size_t count = (size_t)cJSON_GetArraySize(ranks);
    if (count != row->n_ranks) {
      st = gs_error(GS_ERR_FORMAT, "%s: %s has %zu ranks but world_size is %ld%s", file, rpath,
                    count, ws, tp > 1 ? " (over llm.tensor_parallel GPUs per rank)" : "");
      goto done;
    }
    memset(seen, 0, row->n_ranks);
    size_t ki = 0;
    for (const cJSON *rk = ranks->child; rk; rk = rk->next, ki++) {
      char kpath[240];
      snprintf(kpath, sizeof kpath, "%s.ranks[%zu]", rpath, ki);
      long rn = -1;
      if ((st = read_int(rk, "rank", 0, (long)row->n_ranks - 1, &rn, file, kpath)) != GS_OK)
        goto done;
      if (seen[rn]) {
        st = gs_error(GS_ERR_FORMAT, "%s: %s: rank %ld appears twice in the run", file, kpath, rn);
        goto done;
      }
      seen[rn] = 1;
      gs_report_rank *k = &row->ranks[rn];
      const char *rs = json_string_or(rk, "status", "-");
      if (strcmp(k->status, "ok") == 0 && strcmp(rs, "ok") != 0) {
        copy_text(k->status, sizeof k->status, rs);
        k->error = json_string_or(rk, "error", NULL);
      }
      if (ri == 0) k->items_per_step = read_u64(rk, "items_per_step");
      const cJSON *first = cJSON_GetObjectItemCaseSensitive(rk, "first_iteration_seconds");
      if (!isfinite(k->first_seconds) && cJSON_IsNumber(first) && isfinite(first->valuedouble))
        k->first_seconds = first->valuedouble;
      const cJSON *dev = cJSON_GetObjectItemCaseSensitive(rk, "device_seconds");
      const cJSON *wall = cJSON_GetObjectItemCaseSensitive(rk, "wall_seconds");
      if (cJSON_IsArray(dev) && cJSON_IsArray(wall) &&
          cJSON_GetArraySize(dev) != cJSON_GetArraySize(wall)) {
        st = gs_error(GS_ERR_FORMAT,
                      "%s: %s: device_seconds has %d samples but wall_seconds has %d", file,
                      kpath, cJSON_GetArraySize(dev), cJSON_GetArraySize(wall));
        goto done;
      }
      const cJSON *use = cJSON_IsArray(dev) ? dev : wall;
      if (cJSON_IsArray(use)) {
        clocks[rn] |= use == dev ? 1 : 2;
        char spath[260];
        snprintf(spath, sizeof spath, "%s.%s", kpath, use == dev ? "device_seconds" : "wall_seconds");
        if ((st = read_samples(use, &rank_samples[rn], NULL, file, spath)) != GS_OK) goto done;
      }
    }
  }

  if (steps.n > 0) {
    st = gs_stats_compute(steps.v, steps.n, &row->step);
    if (st != GS_OK) {
      st = gs_error(st, "%s: %s step_seconds: %s", file, path, gs_last_error());
      goto done;
    }
    row->has_step = 1;
    if (row->step.mean > 0 && row->items_per_step > 0)
      row->throughput = (double)row->items_per_step / row->step.mean;
  }
  for (size_t r = 0; r < row->n_ranks; r++) {
    gs_report_rank *k = &row->ranks[r];
    k->clock = clocks[r] == 1 ? "device" : clocks[r] == 2 ? "wall" : clocks[r] == 3 ? "mixed" : "-";
    char kpath[200];
    snprintf(kpath, sizeof kpath, "%s rank %zu", path, r);
    if ((st = finish_rank(k, &rank_samples[r], file, kpath)) != GS_OK) goto done;
  }

done:
  if (rank_samples)
    for (size_t r = 0; r < row->n_ranks; r++) free(rank_samples[r].v);
  free(rank_samples);
  free(clocks);
  free(seen);
  free(steps.v);
  return st;
}

/* ---- cross-rank and cross-row numbers --------------------------------------- */

/* Median, deviation, marks, spread and straggler over the ranks of `row`. */
static gs_status rank_symmetry(gs_report_row *row, const gs_report_thresholds *th) {
  if (row->world_size < 2) return GS_OK;
  double *t = malloc(row->n_ranks * sizeof *t);
  if (!t) return gs_error(GS_ERR_NOMEM, "out of memory");
  size_t n = 0;
  for (size_t r = 0; r < row->n_ranks; r++)
    if (isfinite(row->ranks[r].throughput)) t[n++] = row->ranks[r].throughput;
  if (n >= 2) {
    gs_stats s;
    gs_status st = gs_stats_compute(t, n, &s);
    if (st != GS_OK) {
      free(t);
      return st;
    }
    row->rank_median = s.median;
    row->spread_ratio = s.min > 0 ? s.max / s.min : NAN;
    row->spread_cv = s.cv;
    int slowest = -1;
    for (size_t r = 0; r < row->n_ranks; r++) {
      gs_report_rank *k = &row->ranks[r];
      if (!isfinite(k->throughput) || !(s.median > 0)) continue;
      k->deviation = fabs(k->throughput - s.median) / s.median;
      k->mark = gs_report_mark_of(k->deviation, th);
      if (slowest < 0 || k->throughput < row->ranks[slowest].throughput) slowest = (int)r;
    }
    if (slowest >= 0 && row->ranks[slowest].deviation > th->critical) row->straggler = slowest;
  }
  free(t);
  for (size_t r = 0; r < row->n_ranks; r++)
    row->ranks[r].mark = gs_report_mark_success(row->ranks[r].mark, row->ranks[r].success_rate);
  return GS_OK;
}

static int compare_rows(const void *a, const void *b) {
  const gs_report_row *x = a, *y = b;
  if (x->world_size != y->world_size) return x->world_size < y->world_size ? -1 : 1;
  if (x->file != y->file) return x->file < y->file ? -1 : 1;
  return (x->measurement > y->measurement) - (x->measurement < y->measurement);
}

static void add_advice(gs_report_series *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add_advice(gs_report_series *s, const char *fmt, ...) {
  if (s->n_advice >= GS_REPORT_ADVICE_MAX) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  char *copy = strdup(buf);
  if (copy) s->advice[s->n_advice++] = copy;
}

static int row_usable(const gs_report_row *row) {
  return strcmp(row->status, "ok") == 0 && isfinite(row->throughput);
}

/* "Why not N x": the largest part lost against the ideal step of `row`. */
static void why_not_advice(gs_report_series *s, const gs_report_row *row) {
  const gs_report_breakdown *b = &row->breakdown;
  if (row->request_based) {
    add_advice(s, "why not %d.0x: the compute/communication/imbalance/host split does not apply "
                  "to request-based measurements (overlapping requests, not lockstep steps)",
               row->world_size);
    return;
  }
  if (!b->available || !isfinite(b->ideal_step)) return;
  add_advice(s,
             "why not %d.0x at %d ranks: the step is %.4g ms against an ideal %.4g ms; per rank "
             "it splits into compute %.4g ms, exposed communication %.4g ms%s, load imbalance "
             "%.4g ms and host overhead %.4g ms%s",
             row->world_size, row->world_size, 1e3 * b->step, 1e3 * b->ideal_step,
             1e3 * b->compute, 1e3 * b->comm, b->comm_measured ? "" : " (not recorded)",
             1e3 * b->imbalance, 1e3 * b->host, b->device_clock ? "" : " (no device clock)");
}

/* "Consider a larger batch" from the telemetry of the largest row that has it. */
static void batch_advice(gs_report_series *s) {
  for (size_t i = s->n_rows; i-- > 0;) {
    const gs_report_row *row = &s->rows[i];
    double util = 0, mem = 0, total = 0;
    size_t nu = 0, nm = 0;
    for (size_t k = 0; k < row->n_ranks; k++) {
      const gs_report_rank *rk = &row->ranks[k];
      if (isfinite(rk->utilization)) util += rk->utilization, nu++;
      if (isfinite(rk->memory_used_bytes) && rk->memory_total_bytes > 0)
        mem += rk->memory_used_bytes, total += rk->memory_total_bytes, nm++;
    }
    if (nu == 0 && nm == 0) continue;
    double u = nu ? util / (double)nu : NAN, share = nm ? mem / total : NAN;
    if (!(u < GS_REPORT_LOW_USE || share < GS_REPORT_LOW_USE)) return;
    char used[96] = "not recorded", busy[64] = "not recorded";
    if (nu) snprintf(busy, sizeof busy, "%.1f%%", 100.0 * u);
    if (nm)
      snprintf(used, sizeof used, "%.1f%% of %.4g GiB", 100.0 * share,
               total / (double)nm / 1073741824.0);
    add_advice(s,
               "consider a larger batch size: at %d ranks mean GPU utilization is %s and memory "
               "use %s (below %.0f%%)",
               row->world_size, busy, used, 100.0 * GS_REPORT_LOW_USE);
    return;
  }
}

/* Transport: the best bus bandwidth of a collective series against the link. */
static void collective_advice(gs_report_series *s) {
  const gs_report_row *best = NULL;
  for (size_t i = 0; i < s->n_rows; i++)
    if (isfinite(s->rows[i].coll_busbw) && (!best || s->rows[i].coll_busbw > best->coll_busbw))
      best = &s->rows[i];
  if (!best) {
    add_advice(s, "collective: no bus bandwidth recorded");
    return;
  }
  if (!isfinite(best->link_bandwidth)) {
    add_advice(s, "collective %s: best bus bandwidth %.4g GB/s at %.4g bytes; the link's "
                  "theoretical bandwidth is not recorded (run gpuscale info for the topology)",
               best->coll_op ? best->coll_op : "?", best->coll_busbw / 1e9, best->coll_bytes);
    return;
  }
  double share = best->coll_busbw / best->link_bandwidth;
  if (share < GS_REPORT_LOW_BUSBW)
    add_advice(s,
               "investigate the transport: collective %s reaches at best %.4g GB/s bus bandwidth "
               "(at %.4g bytes), %.1f%% of the link's theoretical %.4g GB/s (below %.0f%%); check "
               "that NCCL uses NVLink/P2P (NCCL_DEBUG=INFO) and not PCIe or the network",
               best->coll_op ? best->coll_op : "?", best->coll_busbw / 1e9, best->coll_bytes,
               100.0 * share, best->link_bandwidth / 1e9, 100.0 * GS_REPORT_LOW_BUSBW);
  else
    add_advice(s, "collective %s: best bus bandwidth %.4g GB/s is %.1f%% of the link's "
                  "theoretical %.4g GB/s: the transport is fine",
               best->coll_op ? best->coll_op : "?", best->coll_busbw / 1e9, 100.0 * share,
               best->link_bandwidth / 1e9);
}

/* The unit of a rank's throughput in `row`: tokens for request-based rows. */
static const char *rank_unit(const gs_report_series *s, const gs_report_row *row) {
  if (row->request_based) return "tokens";
  return s->item_unit ? s->item_unit : "items";
}

/* Load balancing, failed ranks, failed requests and cold starts, per row. */
static void rank_advice(gs_report_series *s, const gs_report *r) {
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    const gs_report_rank *worst = NULL;
    if (row->straggler >= 0) {
      worst = &row->ranks[row->straggler];
    } else {
      // Throughput asymmetry only: a mark made critical by failures has its own advice.
      for (size_t k = 0; k < row->n_ranks; k++)
        if (row->ranks[k].deviation > r->thresholds.critical &&
            (!worst || row->ranks[k].deviation > worst->deviation))
          worst = &row->ranks[k];
    }
    if (worst)
      add_advice(s,
                 "%s: at %d ranks rank %d %s %.4g %s/s, %.1f%% from the median rank "
                 "throughput %.4g (critical > %.0f%%); ranks max/min %.2fx%s%s%s",
                 worst->injected ? "injected straggler" : "consider dynamic load balancing",
                 row->world_size, worst->rank,
                 row->straggler >= 0 ? "is the straggler at" : "runs at", worst->throughput,
                 rank_unit(s, row), 100.0 * worst->deviation, row->rank_median,
                 100.0 * r->thresholds.critical, row->spread_ratio,
                 worst->injected ? " (injected: " : "", worst->injected ? row->faults : "",
                 worst->injected ? ")" : "");
    for (size_t k = 0; k < row->n_ranks; k++) {
      const gs_report_rank *rk = &row->ranks[k];
      if (strcmp(rk->status, "ok") == 0) continue;
      add_advice(s, "investigate rank %d: status %s at %d ranks (%s)%s%s", rk->rank, rk->status,
                 row->world_size, gs_report_file_name(r, row->file), rk->error ? ": " : "",
                 rk->error ? rk->error : "");
    }
    for (size_t k = 0; k < row->n_ranks; k++) {
      const gs_report_rank *rk = &row->ranks[k];
      if (rk->requests > rk->requests_ok)
        add_advice(s,
                   "investigate rank %d (host %s): %zu of %zu requests did not succeed at %d "
                   "ranks (%zu failed, %zu timed out; success rate %.1f%%)",
                   rk->rank, rk->host ? rk->host : "-", rk->requests - rk->requests_ok,
                   rk->requests, row->world_size, rk->requests_failed, rk->requests_timed_out,
                   100.0 * rk->success_rate);
      if (rk->requests == 0 && rk->failed_samples > 0)
        add_advice(s,
                   "investigate rank %d (host %s): %llu of %llu timed samples failed at %d ranks "
                   "(success rate %.1f%%)%s",
                   rk->rank, rk->host ? rk->host : "-", (unsigned long long)rk->failed_samples,
                   (unsigned long long)rk->samples_taken, row->world_size,
                   100.0 * rk->success_rate, rk->injected ? "; injected by --inject fail" : "");
      if (rk->first_sample_flag || rk->cold_flag || rk->cold_outliers) {
        char first[64] = "", requests[96] = "";
        if (isfinite(rk->cold_ratio))
          snprintf(first, sizeof first, " and first iteration %.2fx", rk->cold_ratio);
        if (rk->requests > 0)
          snprintf(requests, sizeof requests, "; %zu of %zu cold request(s) above %.0fx the "
                   "median latency", rk->cold_outliers, rk->cold_requests, GS_REPORT_COLD_FLAG);
        add_advice(s,
                   "cold start on rank %d (host %s) at %d ranks: first timed sample %.2fx%s the "
                   "median%s; %s",
                   rk->rank, rk->host ? rk->host : "-", row->world_size, rk->first_sample_ratio,
                   first, requests,
                   rk->injected_delay ? "injected by --inject delay, as planned"
                                      : "warm up longer before timing");
      }
    }
  }
}

static const gs_report_series *split_sibling(const gs_report *r, const gs_report_series *s,
                                             const char *split);

/* The usable 1-rank row of `s`, or NULL. */
static const gs_report_row *one_rank_row(const gs_report_series *s) {
  for (size_t i = 0; s && i < s->n_rows; i++)
    if (s->rows[i].world_size == 1 && row_usable(&s->rows[i])) return &s->rows[i];
  return NULL;
}

/* "split at N ranks: even X, proportional (units ...) Y: gain Zx" for each
 * proportional row of `s` with an even row of the same world size. */
static void split_advice(gs_report_series *s, const gs_report *r) {
  const gs_report_series *even = split_sibling(r, s, "even");
  for (size_t i = 0; even && i < s->n_rows; i++) {
    const gs_report_row *p = &s->rows[i];
    for (size_t j = 0; j < even->n_rows; j++) {
      const gs_report_row *e = &even->rows[j];
      if (e->world_size != p->world_size || !row_usable(e) || !row_usable(p)) continue;
      add_advice(s, "split at %d ranks: even %.4g %s/s, proportional (units %s) %.4g %s/s: gain "
                    "%.2fx", p->world_size, e->throughput, s->item_unit ? s->item_unit : "items",
                 p->split_units, p->throughput, s->item_unit ? s->item_unit : "items",
                 p->throughput / e->throughput);
      break;
    }
  }
}

/* The "tp" of an llm series' options (1 when absent), and the options with
 * it set to 1 into `out`: the key of the data-parallel twin. */
static long tensor_parallel_of(const char *options, char *out, size_t size) {
  snprintf(out, size, "%s", options);
  char *at = strstr(out, "\"tp\":");
  if (!at) return 1;
  char *digits = at + 5, *end = NULL;
  long tp = strtol(digits, &end, 10);
  if (end == digits || tp < 1) return 1;
  // Rewrite the value as 1 in place: the rest of the text shifts left.
  digits[0] = '1';
  memmove(digits + 1, end, strlen(end) + 1);
  return tp;
}

/* The series that differs from tensor-parallel `s` only in --tp 1 (data
 * parallelism on the same GPUs), or NULL; *tp gets s's --tp (1: not
 * tensor-parallel). */
static const gs_report_series *data_parallel_twin(const gs_report_series *s, const gs_report *r,
                                                  long *tp) {
  const size_t size = strlen(s->options) + 1;
  char *dp_options = malloc(size);
  *tp = dp_options ? tensor_parallel_of(s->options, dp_options, size) : 1;
  const gs_report_series *twin = NULL;
  for (size_t i = 0; *tp > 1 && !twin && i < r->n_series; i++) {
    const gs_report_series *o = &r->series[i];
    if (o != s && strcmp(o->workload, s->workload) == 0 && strcmp(o->backend, s->backend) == 0 &&
        strcmp(o->label, s->label) == 0 && strcmp(o->split, s->split) == 0 &&
        strcmp(o->options, dp_options) == 0)
      twin = o;
  }
  free(dp_options);
  return twin;
}

/* For a tensor-parallel llm series: each world size against its data
 * parallel twin's. */
static void tensor_parallel_advice(gs_report_series *s, const gs_report *r) {
  long tp;
  const gs_report_series *o = data_parallel_twin(s, r, &tp);
  const char *unit = s->item_unit ? s->item_unit : "items";
  for (size_t a = 0; o && a < s->n_rows; a++) {
    const gs_report_row *t = &s->rows[a];
    for (size_t b = 0; b < o->n_rows; b++) {
      const gs_report_row *d = &o->rows[b];
      if (d->world_size != t->world_size || !row_usable(t) || !row_usable(d)) continue;
      add_advice(s,
                 "tensor against data parallelism at %d %s: tp %ld (%d replica%s) %.4g %s/s, "
                 "TPOT p50 %.3g ms; data parallel (%d replicas) %.4g %s/s, TPOT p50 %.3g ms: "
                 "throughput %.2fx, time per token %.2fx",
                 t->world_size, strcmp(s->backend, "cpu") == 0 ? "ranks" : "GPUs", tp,
                 t->world_size / (int)tp, t->world_size / tp == 1 ? "" : "s", t->throughput, unit,
                 1e3 * t->tpot.median, d->world_size, d->throughput, unit, 1e3 * d->tpot.median,
                 t->throughput / d->throughput, t->tpot.median / d->tpot.median);
      break;
    }
  }
}

/* Speedup and friends against the series' 1-rank row, then the verdict. */
static gs_status analyse_series(gs_report_series *s, const gs_report *r) {
  qsort(s->rows, s->n_rows, sizeof *s->rows, compare_rows);
  // With one rank there is nothing to split: a split series without its own
  // 1-rank row compares against that of its sibling (or the unsplit series).
  const gs_report_row *base = one_rank_row(s);
  if (!base && s->split[0]) base = one_rank_row(split_sibling(r, s, ""));
  if (!base && s->split[0]) base = one_rank_row(split_sibling(r, s, "even"));
  // A tensor-parallel series has no 1-GPU row: it compares against the
  // whole model on one GPU, its data-parallel twin's.
  long tp;
  if (!base) base = one_rank_row(data_parallel_twin(s, r, &tp));
  const gs_scaling kind = gs_scaling_of(s->scaling);
  for (size_t i = 0; i < s->n_rows && base; i++) {
    gs_report_row *row = &s->rows[i];
    row->ideal_throughput = (double)row->world_size * base->throughput;
    if (row->breakdown.available && base->breakdown.available)
      row->breakdown.ideal_step =
          gs_scaling_ideal_step(kind, base->breakdown.step, row->world_size);
    // A failed measurement's timings are shown, but never compared.
    if (!row_usable(row)) continue;
    row->speedup = gs_scaling_speedup(base->throughput, row->throughput);
    row->efficiency = gs_scaling_efficiency(row->speedup, row->world_size);
    row->karp_flatt = gs_scaling_karp_flatt(row->speedup, row->world_size);
  }
  if (s->n_rows > 0 && s->rows[0].is_coll) {
    collective_advice(s);
    rank_advice(s, r);
    return GS_OK;
  }

  gs_scaling_point *points = malloc((s->n_rows ? s->n_rows : 1) * sizeof *points);
  if (!points) return gs_error(GS_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < s->n_rows; i++)
    points[i] = (gs_scaling_point){.world_size = s->rows[i].world_size,
                                   .ok = strcmp(s->rows[i].status, "ok") == 0,
                                   .throughput = s->rows[i].throughput};
  gs_scaling_assessment a;
  gs_scaling_assess(points, s->n_rows, base ? base->throughput : NAN, &a);
  free(points);
  if (a.verdict == GS_VERDICT_NONE) {
    add_advice(s, "%s", a.none_reason);
  } else {
    const gs_report_row *pick = &s->rows[a.point];
    s->verdict = a.verdict;
    s->verdict_world_size = a.world_size;
    if (a.world_size != a.largest)
      add_advice(s, "the largest world size (%d) has no usable measurement; the verdict uses %d",
                 a.largest, a.world_size);
    char name[512], sentence[1024];
    gs_report_series_name(s, name, sizeof name);
    gs_scaling_verdict_sentence(&a, name, s->backend, s->item_unit, sentence, sizeof sentence);
    add_advice(s, "%s", sentence);
    why_not_advice(s, pick);
  }
  if (strcmp(s->split, "proportional") == 0) split_advice(s, r);
  tensor_parallel_advice(s, r);
  batch_advice(s);
  rank_advice(s, r);
  return GS_OK;
}

/* ---- loading --------------------------------------------------------------- */

/* 1 when `a` and `b` have the same key apart from the split policy. */
static int same_but_split(const gs_report_series *a, const char *workload, const char *backend,
                          const char *scaling, const char *options, const char *label) {
  return strcmp(a->workload, workload) == 0 && strcmp(a->backend, backend) == 0 &&
         strcmp(a->scaling, scaling) == 0 && strcmp(a->options, options) == 0 &&
         strcmp(a->label, label) == 0;
}

static gs_report_series *find_series(gs_report *r, const char *workload, const char *backend,
                                     const char *scaling, const char *options, const char *label,
                                     const char *split) {
  for (size_t i = 0; i < r->n_series; i++) {
    gs_report_series *s = &r->series[i];
    if (same_but_split(s, workload, backend, scaling, options, label) &&
        strcmp(s->split, split) == 0)
      return s;
  }
  return NULL;
}

/* The series that differs from `s` only in its split policy `split`, or NULL. */
static const gs_report_series *split_sibling(const gs_report *r, const gs_report_series *s,
                                             const char *split) {
  for (size_t i = 0; i < r->n_series; i++) {
    const gs_report_series *o = &r->series[i];
    if (o != s && strcmp(o->split, split) == 0 &&
        same_but_split(o, s->workload, s->backend, s->scaling, s->options, s->label))
      return o;
  }
  return NULL;
}

/* One measurement read and analysed on its own, waiting for its series. */
typedef struct {
  char workload[64], backend[64], scaling[64];
  char label[192], split[16]; /* the rest of the series key (gs_report_series) */
  char *options;              /* canonical JSON; owned until placed */
  const char *item_unit;
  gs_report_row row;          /* its ranks and hosts owned until placed */
} prepared_row;

/* The measurements of one document, prepared by a worker thread. */
typedef struct {
  size_t n;
  prepared_row *rows;
  gs_status status;
  char error[1024];           /* the worker's error message when status != GS_OK */
} prepared_doc;

static void prepared_free(prepared_doc *d) {
  for (size_t i = 0; i < d->n; i++) {
    free(d->rows[i].options);
    free(d->rows[i].row.ranks);
    free(d->rows[i].row.hosts);
  }
  free(d->rows);
  d->rows = NULL;
  d->n = 0;
}

/* Frees the sample arrays of every run and rank of `doc`; nothing else (the
 * rows keep pointers to strings elsewhere in the document). Freed memory is
 * reused by the next document this thread parses. */
static void drop_samples(cJSON *doc) {
  static const char *const rank_arrays[] = {"device_seconds", "wall_seconds", "comm_seconds"};
  const cJSON *ms = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
  for (const cJSON *m = ms ? ms->child : NULL; m; m = m->next) {
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(m, "runs");
    for (cJSON *run = runs ? runs->child : NULL; run; run = run->next) {
      cJSON_DeleteItemFromObjectCaseSensitive(run, "step_seconds");
      const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(run, "ranks");
      for (cJSON *rk = ranks ? ranks->child : NULL; rk; rk = rk->next)
        for (size_t i = 0; i < 3; i++) cJSON_DeleteItemFromObjectCaseSensitive(rk, rank_arrays[i]);
    }
  }
}

/* The part of the series key beyond workload, backend, scaling, options and
 * split: variant, scenario and plan task, e.g. "variant batch=8" or
 * "task 0 (0:resample)"; "" when the measurement has none of them. */
static void series_label(const cJSON *m, const gs_report_row *row, char *out, size_t size) {
  gs_scaling_series_label(json_string_or(m, "variant", NULL), json_string_or(m, "scenario", NULL),
                          row->task, row->task_spec, out, size);
}

/* Reads document `fi` and analyses each of its measurements as a row
 * (everything that does not need other rows). Thread-safe: it writes only
 * r->docs[fi] and `out`. */
static gs_status prepare_document(gs_report *r, size_t fi, prepared_doc *out) {
  const char *file = r->files[fi];
  gs_status st = gs_result_read(file, &r->docs[fi]);
  if (st != GS_OK) return st;
  const cJSON *doc = r->docs[fi];
  const cJSON *config = cJSON_GetObjectItemCaseSensitive(doc, "config");
  const cJSON *doc_options = cJSON_GetObjectItemCaseSensitive(config, "workload_options");
  const cJSON *ms = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
  size_t count = (size_t)cJSON_GetArraySize(ms);
  out->rows = calloc(count ? count : 1, sizeof *out->rows);
  if (!out->rows) return gs_error(GS_ERR_NOMEM, "%s: out of memory", file);
  size_t mi = 0;
  for (const cJSON *m = ms->child; m; m = m->next, mi++) {
    prepared_row *p = &out->rows[out->n++];
    copy_text(p->workload, sizeof p->workload, json_string_or(m, "workload", ""));
    copy_text(p->backend, sizeof p->backend, json_string_or(m, "backend", ""));
    copy_text(p->scaling, sizeof p->scaling, json_string_or(m, "scaling", ""));
    gs_report_row *row = &p->row;
    row->file = fi;
    row->measurement = mi;
    if ((st = read_measurement(m, mi, file, row)) != GS_OK) return st;
    gs_report_placement_read(doc, m, row);
    // A measurement's own options (should a writer add them) win over the
    // document's; a plan task's are those of its entry in config.tasks.
    const cJSON *own = cJSON_GetObjectItemCaseSensitive(m, "workload_options");
    if (!own && row->task >= 0)
      own = cJSON_GetObjectItemCaseSensitive(
          cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(config, "tasks"), row->task),
          "workload_options");
    p->options = canonical_json(own ? own : doc_options);
    if (!p->options) return gs_error(GS_ERR_NOMEM, "%s: out of memory", file);
    series_label(m, row, p->label, sizeof p->label);
    copy_text(p->split, sizeof p->split,
              json_string_or(cJSON_GetObjectItemCaseSensitive(m, "split"), "policy", ""));
    p->item_unit = json_string_or(cJSON_GetObjectItemCaseSensitive(m, "cost"), "item_unit", NULL);
    if ((st = gs_report_breakdown_read(m, file, row)) != GS_OK) return st;
    if ((st = gs_report_rank_extras(doc, m, file, &r->thresholds, row)) != GS_OK) return st;
    // Requests overlap and are not steps in lockstep: no split of a step.
    if (row->request_based) row->breakdown.available = 0;
    if ((st = rank_symmetry(row, &r->thresholds)) != GS_OK) return st;
    gs_report_row_extras(doc, m, &r->prices, row);
  }
  if (r->flags & GS_REPORT_DROP_SAMPLES) drop_samples(r->docs[fi]);
  return GS_OK;
}

/* Moves the prepared rows of a document into their series (in order). */
static gs_status place_document(gs_report *r, prepared_doc *d) {
  for (size_t i = 0; i < d->n; i++) {
    prepared_row *p = &d->rows[i];
    gs_report_series *s =
        find_series(r, p->workload, p->backend, p->scaling, p->options, p->label, p->split);
    if (!s) {
      gs_report_series *grown = realloc(r->series, (r->n_series + 1) * sizeof *grown);
      if (!grown) return gs_error(GS_ERR_NOMEM, "out of memory");
      r->series = grown;
      s = &r->series[r->n_series++];
      memset(s, 0, sizeof *s);
      copy_text(s->workload, sizeof s->workload, p->workload);
      copy_text(s->backend, sizeof s->backend, p->backend);
      copy_text(s->scaling, sizeof s->scaling, p->scaling);
      copy_text(s->label, sizeof s->label, p->label);
      copy_text(s->split, sizeof s->split, p->split);
      s->options = p->options;
    } else {
      free(p->options);
    }
    p->options = NULL;
    if (!s->item_unit) s->item_unit = p->item_unit;
    gs_report_row *rows = realloc(s->rows, (s->n_rows + 1) * sizeof *rows);
    if (!rows) return gs_error(GS_ERR_NOMEM, "out of memory");
    s->rows = rows;
    s->rows[s->n_rows++] = p->row;
    memset(&p->row, 0, sizeof p->row);  // now owned by the series
  }
  return GS_OK;
}

typedef struct {
  gs_report *r;
  prepared_doc *docs;
  size_t n;
  size_t next;             /* next document to take; guarded by lock */
  pthread_mutex_t lock;
} prepare_pool;

static void *prepare_worker(void *arg) {
  prepare_pool *pool = arg;
  for (;;) {
    pthread_mutex_lock(&pool->lock);
    size_t i = pool->next++;
    pthread_mutex_unlock(&pool->lock);
    if (i >= pool->n) return NULL;
    prepared_doc *d = &pool->docs[i];
    d->status = prepare_document(pool->r, i, d);
    if (d->status != GS_OK) copy_text(d->error, sizeof d->error, gs_last_error());
  }
}

/* Reads and prepares all documents, several at once on a multi-core host
 * (parsing dominates the time of a large report). */
static void prepare_all(gs_report *r, prepared_doc *docs, size_t n) {
  prepare_pool pool = {.r = r, .docs = docs, .n = n};
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t threads = cores > 1 ? (size_t)cores : 1;
  if (threads > 8) threads = 8;
  if (threads > n) threads = n;
  pthread_t tid[8];
  size_t started = 0;
  if (threads > 1 && pthread_mutex_init(&pool.lock, NULL) == 0) {
    for (; started < threads; started++)
      if (pthread_create(&tid[started], NULL, prepare_worker, &pool) != 0) break;
    for (size_t t = 0; t < started; t++) pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&pool.lock);
  }
  // Without threads (one core, or none could start) this thread does it all.
  for (size_t i = started ? n : 0; i < n; i++) {
    docs[i].status = prepare_document(r, i, &docs[i]);
    if (docs[i].status != GS_OK) copy_text(docs[i].error, sizeof docs[i].error, gs_last_error());
  }
}

/* See report.h. */
gs_status gs_report_load(const char *const *paths, size_t n, const gs_report_thresholds *th,
                         gs_report *out) {
  return gs_report_load_with(paths, n, th, NULL, 0, out);
}

/* See report.h. */
gs_status gs_report_load_with(const char *const *paths, size_t n, const gs_report_thresholds *th,
                              const gs_report_prices *prices, unsigned flags, gs_report *out) {
  memset(out, 0, sizeof *out);
  out->flags = flags;
  if (prices) out->prices = *prices;
  if (n == 0) return gs_error(GS_ERR_USAGE, "gpuscale report: no result files given");
  if (!(th->moderate > 0) || !(th->critical > th->moderate))
    return gs_error(GS_ERR_USAGE,
                    "gpuscale report: thresholds must satisfy 0 < moderate (%g%%) < critical "
                    "(%g%%)", 100.0 * th->moderate, 100.0 * th->critical);
  out->thresholds = *th;
  out->files = calloc(n, sizeof *out->files);
  out->docs = calloc(n, sizeof *out->docs);
  if (!out->files || !out->docs) {
    gs_report_free(out);
    return gs_error(GS_ERR_NOMEM, "out of memory");
  }
  gs_status st = GS_OK;
  for (size_t i = 0; i < n && st == GS_OK; i++) {
    out->files[i] = strdup(paths[i]);
    out->n_files = i + 1;
    if (!out->files[i]) st = gs_error(GS_ERR_NOMEM, "out of memory");
  }
  prepared_doc *docs = st == GS_OK ? calloc(n, sizeof *docs) : NULL;
  if (st == GS_OK && !docs) st = gs_error(GS_ERR_NOMEM, "out of memory");
  if (st == GS_OK) {
    // Workers print their errors as they happen; the first in file order
    // is the one recorded for the caller.
    prepare_all(out, docs, n);
    for (size_t i = 0; i < n && st == GS_OK; i++) {
      if (docs[i].status != GS_OK)
        st = gs_error_quiet(docs[i].status, "%s", docs[i].error);
      else
        st = place_document(out, &docs[i]);
    }
  }
  for (size_t i = 0; docs && i < n; i++) prepared_free(&docs[i]);
  free(docs);
  for (size_t i = 0; i < out->n_series && st == GS_OK; i++) st = analyse_series(&out->series[i], out);
  if (st != GS_OK) gs_report_free(out);
  return st;
}

/* See report.h. */
void gs_report_free(gs_report *r) {
  for (size_t i = 0; i < r->n_series; i++) {
    gs_report_series *s = &r->series[i];
    for (size_t j = 0; j < s->n_rows; j++) {
      free(s->rows[j].ranks);
      free(s->rows[j].hosts);
    }
    free(s->rows);
    free(s->options);
    for (size_t j = 0; j < s->n_advice; j++) free(s->advice[j]);
  }
  free(r->series);
  for (size_t i = 0; i < r->n_files; i++) {
    free(r->files ? r->files[i] : NULL);
    if (r->docs) cJSON_Delete(r->docs[i]);
  }
  free(r->files);
  free(r->docs);
  memset(r, 0, sizeof *r);
}
