/* Reading one measurement of a result document into a report row: the raw
 * samples pooled over runs and checked (world size, ranks per run, sample
 * types), the step and per-rank statistics, throughput, cold starts, and
 * the rank symmetry (median, deviation, marks, straggler). Formulas in
 * docs/report.md; the loading and the series are in analyze/load.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dvec.h"
#include "core/json.h"
#include "report/read/read.h"

/* Largest world size accepted from a document; far above any real machine,
 * it only bounds the allocation a corrupt file can ask for. */
#define MAX_WORLD_SIZE 1048576

/* ---- reading one measurement ---------------------------------------------- */

/* Appends the finite numbers of array `arr` (times) to `d`; nulls are
 * counted in `*nulls`; a negative number or any other element is a format
 * error naming its path and value. */
static gs_status read_samples(const cJSON *arr, gs_dvec *d, size_t *nulls, const char *file,
                              const char *path) {
  size_t k = 0;
  for (const cJSON *x = arr->child; x; x = x->next, k++) {
    if (cJSON_IsNull(x)) {
      if (nulls) (*nulls)++;
    } else if (cJSON_IsNumber(x)) {
      if (!isfinite(x->valuedouble)) {
        if (nulls) (*nulls)++;
      } else if (x->valuedouble < 0.0) {
        // Every sample is a time: a negative one is a broken document.
        return gs_error(GS_ERR_FORMAT, "%s: %s[%zu] is %g: a time cannot be negative", file, path,
                        k, x->valuedouble);
      } else if (gs_dvec_push(d, x->valuedouble) != GS_OK) {
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

/* The GPUs one rank record spans (docs/result-schema.md, "parallelism"):
 * the measurement's "parallelism" record written by its workload, else
 * (documents written before the record) llm.tensor_parallel, else 1. Sets
 * row->gpus_per_rank and row->parallel_option, *gpr and *name (the member
 * read, for errors; NULL when neither is present). GS_ERR_FORMAT when it is
 * not an integer from 1 to `ws` dividing `ws`. */
static gs_status parallelism_read(const cJSON *m, long ws, const char *file, const char *path,
                                  long *gpr, const char **name, gs_report_row *row) {
  const cJSON *par = gs_json_member(m, "parallelism");
  const char *obj_name = "parallelism", *member = "gpus_per_rank";
  row->parallel_option = gs_json_string_member(par, "option", NULL);
  if (!par && (par = gs_json_member(m, "llm")) != NULL) {
    obj_name = "llm";
    member = "tensor_parallel";
    row->parallel_option = "tp";  // llm's --tp, as those documents were written
  }
  row->gpus_per_rank = row->pipeline_stages = 1;
  if (!gs_json_member(par, member)) return GS_OK;
  *name = strcmp(obj_name, "llm") == 0 ? "llm.tensor_parallel" : "parallelism.gpus_per_rank";
  char ppath[180];
  snprintf(ppath, sizeof ppath, "%s.%s", path, obj_name);
  gs_status st = read_int(par, member, 1, ws, gpr, file, ppath);
  if (st != GS_OK) return st;
  if (ws % *gpr != 0)
    return gs_error(GS_ERR_FORMAT, "%s: %s: world_size %ld is not a multiple of %s %ld", file,
                    path, ws, *name, *gpr);
  row->gpus_per_rank = (int)*gpr;
  // llm --pp: the replica's GPUs are tp x stages (the layouts tell them apart).
  const cJSON *pl = gs_json_member(gs_json_member(m, "llm"), "pipeline");
  if (!gs_json_member(pl, "stages")) return GS_OK;
  long stages = 1;
  snprintf(ppath, sizeof ppath, "%s.llm.pipeline", path);
  if ((st = read_int(pl, "stages", 1, *gpr, &stages, file, ppath)) != GS_OK) return st;
  if (*gpr % stages != 0)
    return gs_error(GS_ERR_FORMAT, "%s: %s: %s %ld is not a multiple of llm.pipeline.stages %ld",
                    file, path, *name, *gpr, stages);
  row->pipeline_stages = (int)stages;
  return GS_OK;
}


/* Per-rank statistics from its pooled samples. */
static gs_status finish_rank(gs_report_rank *k, const gs_dvec *d, const char *file,
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

/* See read.h. */
gs_status gs_report_measurement_read(const cJSON *m, size_t mi, const char *file,
                                     int keep_samples, gs_report_row *row) {
  char path[160];
  snprintf(path, sizeof path, "measurements[%zu]", mi);
  double dnan = nan_value();
  row->throughput = row->speedup = row->efficiency = row->karp_flatt = dnan;
  row->speedup_low = row->speedup_high = dnan;
  row->ideal_throughput = row->spread_ratio = row->spread_cv = row->rank_median = dnan;
  row->straggler = -1;

  long ws = 0;
  gs_status st = read_int(m, "world_size", 1, MAX_WORLD_SIZE, &ws, file, path);
  if (st != GS_OK) return st;
  row->world_size = (int)ws;
  snprintf(row->status, sizeof row->status, "%s", gs_json_string_member(m, "status", "-"));
  row->error = gs_json_string_member(m, "error", NULL);
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(m, "verification");
  snprintf(row->verification, sizeof row->verification, "%s",
           gs_json_string_member(ver, "status", "-"));
  row->items_per_step = read_u64(cJSON_GetObjectItemCaseSensitive(m, "cost"), "items_per_step");

  // A replica that spans GPUs (tensor parallelism) is one rank record.
  long gpr = 1;
  const char *gpr_name = NULL;
  if ((st = parallelism_read(m, ws, file, path, &gpr, &gpr_name, row)) != GS_OK) return st;
  row->n_ranks = (size_t)(ws / gpr);
  row->variant = gs_json_string_member(m, "variant", NULL);
  row->ranks = calloc(row->n_ranks, sizeof *row->ranks);
  gs_dvec *rank_samples = calloc(row->n_ranks, sizeof *rank_samples);
  unsigned char *clocks = calloc(row->n_ranks, 1);  // bit 1: device, bit 2: wall
  unsigned char *seen = calloc(row->n_ranks, 1);
  gs_dvec steps = {0};
  if (!row->ranks || !rank_samples || !clocks || !seen) {
    st = gs_error(GS_ERR_NOMEM, "%s: out of memory for %ld ranks", file, ws);
    goto done;
  }
  for (size_t r = 0; r < row->n_ranks; r++) {
    gs_report_rank *k = &row->ranks[r];
    k->rank = (int)r;
    snprintf(k->status, sizeof k->status, "%s", "ok");
    k->clock = "-";
    k->mean = k->min = k->max = k->stddev = k->median = k->stable_share = dnan;
    k->throughput = k->deviation = k->first_seconds = k->cold_ratio = dnan;
    k->first_sample_ratio = dnan;
    k->mark = GS_MARK_NONE;
  }

  const cJSON *runs = cJSON_GetObjectItemCaseSensitive(m, "runs");
  const size_t n_runs = (size_t)cJSON_GetArraySize(runs);
  row->step_run_n = calloc(n_runs ? n_runs : 1, sizeof *row->step_run_n);
  if (!row->step_run_n) {
    st = gs_error(GS_ERR_NOMEM, "%s: out of memory for %zu runs", file, n_runs);
    goto done;
  }
  row->n_step_runs = n_runs;
  size_t ri = 0;
  for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next, ri++) {
    char rpath[200];
    snprintf(rpath, sizeof rpath, "%s.runs[%zu]", path, ri);
    const cJSON *ss = cJSON_GetObjectItemCaseSensitive(run, "step_seconds");
    if (cJSON_IsArray(ss)) {
      char spath[220];
      snprintf(spath, sizeof spath, "%s.step_seconds", rpath);
      const size_t before = steps.n;
      if ((st = read_samples(ss, &steps, &row->step_nulls, file, spath)) != GS_OK) goto done;
      if (ri < n_runs) row->step_run_n[ri] = steps.n - before;
    } else if (ss && !cJSON_IsNull(ss)) {
      st = gs_error(GS_ERR_FORMAT, "%s: %s.step_seconds must be an array or null", file, rpath);
      goto done;
    }
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(run, "ranks");
    size_t count = (size_t)cJSON_GetArraySize(ranks);
    if (count != row->n_ranks) {
      st = gs_error(GS_ERR_FORMAT, "%s: %s has %zu ranks but world_size is %ld%s%s%s", file, rpath,
                    count, ws, gpr > 1 ? " (over " : "", gpr > 1 ? gpr_name : "",
                    gpr > 1 ? " GPUs per rank)" : "");
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
      const char *rs = gs_json_string_member(rk, "status", "-");
      if (strcmp(k->status, "ok") == 0 && strcmp(rs, "ok") != 0) {
        snprintf(k->status, sizeof k->status, "%s", rs);
        k->error = gs_json_string_member(rk, "error", NULL);
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

  // The step samples stay with the row in run order (the speedup's
  // interval resamples them by run); the rank samples only when asked.
  row->step_samples = steps.v;
  steps.v = NULL;
  if (keep_samples) {
    for (size_t r = 0; r < row->n_ranks; r++) {
      row->ranks[r].samples = rank_samples[r].v;
      rank_samples[r].v = NULL;
    }
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

/* See read.h. */
void gs_report_row_free(gs_report_row *row) {
  for (size_t r = 0; row->ranks && r < row->n_ranks; r++) free(row->ranks[r].samples);
  free(row->ranks);
  free(row->hosts);
  free(row->step_samples);
  free(row->step_run_n);
  gs_straggler_free(&row->scores);
  free(row->arrival.groups);
  row->arrival.groups = NULL;
  row->arrival.n_groups = 0;
  free(row->rates.points);
  gs_report_pipeline_free(&row->pipeline);
  row->rates.points = NULL;
  row->rates.n = 0;
  row->step_run_n = NULL;
  row->ranks = NULL;
  row->hosts = NULL;
  row->step_samples = NULL;
}

/* ---- cross-rank and cross-row numbers --------------------------------------- */

/* See read.h. */
gs_status gs_report_rank_symmetry(gs_report_row *row, const gs_report_thresholds *th) {
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
