/* From parsed MLPerf LoadGen logs and nccl-tests output to measurements of
 * a result document (see ingest.h and docs/ingest.md). The common members
 * come from core/result's builder; what only ingested runs have ("source",
 * "scenario", "mlperf", "collective") is added to the built JSON. */
#include "ingest/ingest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/coll_model.h"
#include "core/result.h"
#include "core/stats.h"
#include "ingest/consistency.h"
#include "ingest/text.h"

/* An ingested check has no error bound of ours: null, not a made-up 0. */
static void verification_init(gs_verification *v, gs_verify_status status) {
  v->status = status;
  v->max_abs_error = NAN;
  v->tolerance = NAN;
}

/* More GPUs than one process of nccl-tests could drive. */
#define GS_INGEST_MAX_PROCESS_RANKS 1024

static gs_status out_of_memory(void) {
  return gs_error(GS_ERR_NOMEM, "out of memory building the result document");
}

/* The measurement gs_result_add_measurement appended last. */
static cJSON *last_measurement(cJSON *doc) {
  cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
  int n = cJSON_GetArraySize(list);
  return n > 0 ? cJSON_GetArrayItem(list, n - 1) : NULL;
}

/* Ingested runs have no per-iteration clock of their own: "wall_seconds"
 * is null rather than an empty list. */
static void null_rank_clocks(cJSON *m) {
  cJSON *runs = cJSON_GetObjectItemCaseSensitive(m, "runs");
  for (cJSON *run = runs ? runs->child : NULL; run; run = run->next) {
    cJSON *ranks = cJSON_GetObjectItemCaseSensitive(run, "ranks");
    for (cJSON *rk = ranks ? ranks->child : NULL; rk; rk = rk->next) {
      cJSON *null = cJSON_CreateNull();
      if (null) cJSON_ReplaceItemInObjectCaseSensitive(rk, "wall_seconds", null);
    }
  }
}

static cJSON *rank_json(cJSON *m, size_t k) {
  cJSON *runs = cJSON_GetObjectItemCaseSensitive(m, "runs");
  cJSON *ranks = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(runs, 0), "ranks");
  return cJSON_GetArrayItem(ranks, (int)k);
}

/* ---- MLPerf ----------------------------------------------------------------- */

static double ns_to_s(double ns) { return gs_scale_decimal(ns, -9); }

/* {"min", "max", "mean", "p50", ..., "p99.9"} in seconds, or null. */
static void add_latency(gs_json_build *b, cJSON *o, const char *name,
                        const gs_mlperf_latency *l) {
  if (isnan(l->min_ns) && isnan(l->max_ns) && isnan(l->mean_ns) && l->n_percentiles == 0) {
    gs_json_put_null(b, o, name);
    return;
  }
  cJSON *d = gs_json_put_object(b, o, name);
  gs_json_put_number(b, d, "min", ns_to_s(l->min_ns));
  gs_json_put_number(b, d, "max", ns_to_s(l->max_ns));
  gs_json_put_number(b, d, "mean", ns_to_s(l->mean_ns));
  for (size_t i = 0; i < l->n_percentiles; i++) {
    char key[32];
    snprintf(key, sizeof key, "p%g", l->percentile[i]);
    gs_json_put_number(b, d, key, ns_to_s(l->value_ns[i]));
  }
}

/* The LoadGen criteria that failed, in our words ("min duration not
 * satisfied, min query count not satisfied"), or "" when none is recorded
 * as failed. */
static void failed_criteria(const gs_mlperf_log *log, char *buf, size_t size) {
  snprintf(buf, size, "%s%s%s%s",
           log->perf_constraints_met == 0 ? ", latency constraint not satisfied" : "",
           log->min_duration_met == 0 ? ", min duration not satisfied" : "",
           log->min_queries_met == 0 ? ", min query count not satisfied" : "",
           log->early_stopping_met == 0 ? ", early stopping not satisfied" : "");
  if (buf[0]) memmove(buf, buf + 2, strlen(buf + 2) + 1);
}

/* Why LoadGen called the run INVALID: the criteria that failed, in our
 * words; LoadGen's own reason (advice on the settings) only when no
 * criterion is recorded as failed. */
static void invalid_text(const gs_mlperf_log *log, char *buf, size_t size) {
  char failed[160];
  failed_criteria(log, failed, sizeof failed);
  if (failed[0])
    snprintf(buf, size, "LoadGen result INVALID: %s", failed);
  else if (log->invalid_reason[0])
    snprintf(buf, size, "LoadGen result INVALID: %s", log->invalid_reason);
  else
    snprintf(buf, size, "LoadGen result INVALID");
}

static cJSON *mlperf_rank_json(const gs_ingest_mlperf_rank *r) {
  const gs_mlperf_log *log = &r->log;
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  gs_json_build b = {0};
  gs_json_put_string_or_null(&b, o, "directory", r->dir);
  gs_json_put_string_or_null(&b, o, "summary_file", r->summary_path);
  gs_json_put_string_or_null(&b, o, "detail_file", r->detail_path);
  gs_json_put_string_or_null(&b, o, "sut_name", log->sut_name);
  gs_json_put_string(&b, o, "scenario", gs_mlperf_scenario_loadgen_name(log->scenario));
  gs_json_put_string_or_null(&b, o, "mode", log->mode);
  gs_json_put_string_or_null(&b, o, "loadgen_version", log->loadgen_version);
  gs_json_put_string_or_null(&b, o, "test_datetime", log->test_datetime);
  gs_json_put_bool_or_null(&b, o, "result_valid", log->valid);
  gs_json_put_bool_or_null(&b, o, "performance_constraints_met", log->perf_constraints_met);
  gs_json_put_bool_or_null(&b, o, "min_duration_met", log->min_duration_met);
  gs_json_put_bool_or_null(&b, o, "min_queries_met", log->min_queries_met);
  gs_json_put_bool_or_null(&b, o, "early_stopping_met", log->early_stopping_met);
  gs_json_put_string_or_null(&b, o, "invalid_reason", log->invalid_reason);
  char failed[160];
  failed_criteria(log, failed, sizeof failed);
  gs_json_put_string_or_null(&b, o, "failed_criteria", failed);
  gs_json_put_number(&b, o, "throughput_samples_per_second", gs_mlperf_throughput(log));
  gs_json_put_number(&b, o, "samples_per_second", log->samples_per_second);
  gs_json_put_number(&b, o, "completed_samples_per_second", log->completed_samples_per_second);
  gs_json_put_number(&b, o, "scheduled_samples_per_second", log->scheduled_samples_per_second);
  gs_json_put_number(&b, o, "qps_with_loadgen_overhead", log->qps_with_loadgen_overhead);
  gs_json_put_number(&b, o, "qps_without_loadgen_overhead", log->qps_without_loadgen_overhead);
  gs_json_put_number(&b, o, "tokens_per_second", log->tokens_per_second);
  gs_json_put_number(&b, o, "completed_tokens_per_second", log->completed_tokens_per_second);
  gs_json_put_number(&b, o, "query_count", log->query_count < 0 ? NAN : (double)log->query_count);
  gs_json_put_number(&b, o, "target_latency_percentile", log->target_percentile);
  gs_json_put_number(&b, o, "target_latency_seconds", ns_to_s(log->target_latency_ns));
  add_latency(&b, o, "latency_seconds", &log->latency);
  add_latency(&b, o, "first_token_latency_seconds", &log->first_token);
  add_latency(&b, o, "time_per_output_token_seconds", &log->time_per_output_token);
  gs_json_put_number(&b, o, "errors", (double)log->n_errors);
  gs_json_put_string_or_null(&b, o, "first_error", log->first_error);
  if (b.failed) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* Sum over ranks, NAN when any rank lacks the number. */
static double rank_sum(const gs_ingest_mlperf_rank *ranks, size_t n, int tokens) {
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    double v = tokens ? ranks[i].log.tokens_per_second : gs_mlperf_throughput(&ranks[i].log);
    if (tokens && isnan(v)) v = ranks[i].log.completed_tokens_per_second;
    if (isnan(v)) return NAN;
    sum += v;
  }
  return sum;
}

gs_status gs_ingest_add_mlperf(cJSON *doc, const gs_ingest_mlperf_rank *ranks, size_t n_ranks) {
  if (n_ranks == 0) GS_BUG("gs_ingest_add_mlperf: no ranks");
  for (size_t i = 1; i < n_ranks; i++)
    if (ranks[i].log.scenario != ranks[0].log.scenario)
      return gs_error(GS_ERR_FORMAT,
                            "%s ran the %s scenario but %s ran %s: ingest one scenario at a time",
                            ranks[0].dir, gs_mlperf_scenario_loadgen_name(ranks[0].log.scenario),
                            ranks[i].dir, gs_mlperf_scenario_loadgen_name(ranks[i].log.scenario));
  gs_measurement m;
  memset(&m, 0, sizeof m);
  gs_run_record run;
  memset(&run, 0, sizeof run);
  gs_rank_record *rr = calloc(n_ranks, sizeof *rr);
  if (!rr) return out_of_memory();
  snprintf(m.workload, sizeof m.workload, "mlperf");
  snprintf(m.scaling, sizeof m.scaling, "none");
  m.world_size = (int)n_ranks;
  for (size_t i = 0; i < sizeof m.devices / sizeof m.devices[0]; i++) m.devices[i] = -1;
  m.cost.item_unit = "samples";
  size_t invalid = 0;
  for (size_t k = 0; k < n_ranks; k++) {
    const gs_mlperf_log *log = &ranks[k].log;
    gs_rank_record *r = &rr[k];
    r->rank = (int)k;
    r->device = -1;
    r->first_iteration_seconds = -1;
    snprintf(r->host, sizeof r->host, "%s", ranks[k].host ? ranks[k].host : "");
    verification_init(&r->verification, log->valid == 1 ? GS_VERIFY_PASSED : GS_VERIFY_FAILED);
    if (log->valid != 1) {
      invalid++;
      r->status = GS_ERR_VERIFY;
      invalid_text(log, r->error, sizeof r->error);
      snprintf(r->verification.detail, sizeof r->verification.detail, "%s", r->error);
      if (invalid == 1)
        snprintf(m.error, sizeof m.error, "rank %zu (%s): %s", k, ranks[k].dir, r->error);
    } else {
      snprintf(r->verification.detail, sizeof r->verification.detail,
               "LoadGen result VALID");
    }
  }
  m.status = invalid ? GS_ERR_VERIFY : GS_OK;
  verification_init(&m.verification, invalid ? GS_VERIFY_FAILED : GS_VERIFY_PASSED);
  m.verification.mismatches = invalid;
  snprintf(m.verification.detail, sizeof m.verification.detail,
           "LoadGen validity: %zu of %zu ranks VALID", n_ranks - invalid, n_ranks);
  run.n_ranks = n_ranks;
  run.ranks = rr;
  m.n_runs = 1;
  m.runs = &run;
  double throughput = rank_sum(ranks, n_ranks, 0);
  m.aggregate.throughput = isnan(throughput) ? 0 : throughput;

  gs_status st = gs_result_add_measurement(doc, &m);
  free(rr);
  if (st != GS_OK) return st;

  gs_json_build b = {0};
  cJSON *mj = last_measurement(doc);
  null_rank_clocks(mj);
  gs_json_put_string(&b, mj, "scenario", gs_mlperf_scenario_name(ranks[0].log.scenario));
  cJSON *source = gs_json_put_object(&b, mj, "source");
  gs_json_put_string(&b, source, "tool", "mlperf-loadgen");
  cJSON *dirs = gs_json_put_array(&b, source, "directories");
  for (size_t k = 0; dirs && k < n_ranks; k++) {
    gs_json_append_string(&b, dirs, ranks[k].dir);
  }
  cJSON *summary = gs_json_put_object(&b, mj, "mlperf");
  int same_sut = 1;
  for (size_t k = 1; k < n_ranks; k++)
    if (strcmp(ranks[k].log.sut_name, ranks[0].log.sut_name) != 0) same_sut = 0;
  gs_json_put_string_or_null(&b, summary, "sut_name", same_sut ? ranks[0].log.sut_name : NULL);
  gs_json_put_string(&b, summary, "scenario",
                     gs_mlperf_scenario_loadgen_name(ranks[0].log.scenario));
  gs_json_put_bool(&b, summary, "result_valid", invalid == 0);
  gs_json_put_number(&b, summary, "throughput_samples_per_second", throughput);
  gs_json_put_number(&b, summary, "tokens_per_second", rank_sum(ranks, n_ranks, 1));
  for (size_t k = 0; k < n_ranks; k++) {
    cJSON *rk = rank_json(mj, k);
    cJSON *o = mlperf_rank_json(&ranks[k]);
    if (!rk || !o || !cJSON_AddItemToObject(rk, "mlperf", o)) {
      cJSON_Delete(o);
      return out_of_memory();
    }
  }
  return b.failed ? out_of_memory() : GS_OK;
}

/* ---- nccl-tests ----------------------------------------------------------- */

static gs_status add_collective(cJSON *doc, const gs_nccl_tests_output *out, const char *op,
                                const char *source, const gs_nccl_tests_row *row,
                                const gs_nccl_tests_half *h, int in_place) {
  size_t ws = gs_nccl_tests_world_size(out);
  gs_measurement m;
  memset(&m, 0, sizeof m);
  gs_run_record run;
  memset(&run, 0, sizeof run);
  gs_rank_record *rr = calloc(ws, sizeof *rr);
  double *steps = NULL;
  if (!rr) return out_of_memory();
  snprintf(m.workload, sizeof m.workload, "coll");
  snprintf(m.backend, sizeof m.backend, "cuda");
  snprintf(m.scaling, sizeof m.scaling, "none");
  m.world_size = (int)ws;
  for (size_t i = 0; i < sizeof m.devices / sizeof m.devices[0]; i++) m.devices[i] = -1;
  m.cost.items = row->count;
  m.cost.item_unit = "elements";
  m.cost.bytes = row->bytes;
  const char *placement = in_place ? "in-place" : "out-of-place";
  if (h->wrong < 0) {
    verification_init(&m.verification, GS_VERIFY_SKIPPED);
    snprintf(m.verification.detail, sizeof m.verification.detail,
             "nccl-tests did not check the data (#wrong N/A: run with -c 1 to check)");
  } else {
    verification_init(&m.verification, h->wrong == 0 ? GS_VERIFY_PASSED : GS_VERIFY_FAILED);
    m.verification.mismatches = (uint64_t)h->wrong;
    snprintf(m.verification.detail, sizeof m.verification.detail,
             "nccl-tests data check: %lld wrong elements", (long long)h->wrong);
  }
  if (h->wrong > 0) {
    m.status = GS_ERR_VERIFY;
    snprintf(m.error, sizeof m.error, "%s %s of %llu bytes: %lld wrong elements", op, placement,
             (unsigned long long)row->bytes, (long long)h->wrong);
  }
  for (size_t k = 0; k < ws; k++) {
    gs_rank_record *r = &rr[k];
    r->rank = (int)k;
    r->device = -1;
    r->first_iteration_seconds = -1;
    r->items_per_step = row->count;
    verification_init(&r->verification, GS_VERIFY_SKIPPED);
    snprintf(r->verification.detail, sizeof r->verification.detail,
             "nccl-tests reports the check for all ranks together");
  }
  for (size_t i = 0; i < out->n_ranks; i++) {
    const gs_nccl_tests_rank *src = &out->ranks[i];
    if (src->rank < 0 || (size_t)src->rank >= ws) continue;
    gs_rank_record *r = &rr[src->rank];
    r->device = src->device;
    snprintf(r->host, sizeof r->host, "%s", src->host);
    if ((size_t)src->rank < sizeof m.devices / sizeof m.devices[0]) m.devices[src->rank] = src->device;
  }
  if (h->n_iter_times > 0) {
    steps = malloc(h->n_iter_times * sizeof *steps);
    if (!steps) {
      free(rr);
      return out_of_memory();
    }
    for (size_t i = 0; i < h->n_iter_times; i++) steps[i] = gs_scale_decimal(h->iter_times_us[i], -6);
    run.n_steps = h->n_iter_times;
    run.step_seconds = steps;
    gs_status st = gs_stats_compute(steps, run.n_steps, &m.aggregate.step);
    if (st != GS_OK) memset(&m.aggregate.step, 0, sizeof m.aggregate.step);
  }
  run.n_ranks = ws;
  run.ranks = rr;
  m.n_runs = 1;
  m.runs = &run;
  gs_status st = gs_result_add_measurement(doc, &m);
  free(rr);
  free(steps);
  if (st != GS_OK) return st;

  gs_json_build b = {0};
  cJSON *mj = last_measurement(doc);
  null_rank_clocks(mj);
  cJSON *c = gs_json_put_object(&b, mj, "collective");
  gs_json_put_string(&b, c, "op", op);
  gs_json_put_string(&b, c, "dtype", row->type);
  // nccl-tests writes "none" where the collective has no reduction.
  gs_json_put_string_or_null(&b, c, "redop", strcmp(row->redop, "none") == 0 ? NULL : row->redop);
  if (row->root < 0)
    gs_json_put_null(&b, c, "root");
  else
    gs_json_put_number(&b, c, "root", (double)row->root);
  gs_json_put_bool(&b, c, "in_place", in_place);
  gs_json_put_number(&b, c, "bytes", (double)row->bytes);
  gs_json_put_number(&b, c, "count", (double)row->count);
  gs_json_put_number(&b, c, "time_seconds", gs_scale_decimal(h->time_us, -6));
  gs_json_put_number(&b, c, "algbw_bytes_per_second", gs_scale_decimal(h->algbw_gbs, 9));
  gs_json_put_number(&b, c, "busbw_bytes_per_second", gs_scale_decimal(h->busbw_gbs, 9));
  gs_json_put_number(&b, c, "busbw_factor", gs_coll_busbw_factor_of(op, (int)ws));
  if (h->wrong < 0)
    gs_json_put_null(&b, c, "wrong_elements");
  else
    gs_json_put_number(&b, c, "wrong_elements", (double)h->wrong);
  // Several ranks per process (threads) or one process per rank (MPI).
  size_t per_process = gs_nccl_tests_process_ranks(out);
  const char *launch = per_process && ws > per_process ? "mpi" : "threads";
  gs_json_put_string(&b, c, "launch", launch);
  gs_json_put_string(&b, c, "transport", "auto");
  cJSON *s = gs_json_put_object(&b, mj, "source");
  gs_json_put_string(&b, s, "tool", "nccl-tests");
  gs_json_put_string(&b, s, "file", source);
  gs_json_put_string(&b, s, "format", out->format);
  if (row->line > 0)
    gs_json_put_number(&b, s, "line", (double)row->line);
  else
    gs_json_put_null(&b, s, "line");
  gs_json_put_string_or_null(&b, s, "program", out->program);
  gs_json_put_string_or_null(&b, s, "nccl_tests_version", out->version);
  gs_json_put_string_or_null(&b, s, "nccl_version", out->nccl_version);
  gs_json_put_string(&b, s, "time_clock", out->cpu_time ? "host" : "device");
  gs_json_put_number(&b, s, "iterations", out->iters < 0 ? NAN : out->iters);
  gs_json_put_number(&b, s, "warmup_iterations", out->warmup_iters < 0 ? NAN : out->warmup_iters);
  gs_json_put_number(&b, s, "avg_busbw_bytes_per_second", gs_scale_decimal(out->avg_busbw_gbs, 9));
  return b.failed ? out_of_memory() : GS_OK;
}

gs_status gs_ingest_add_nccl_tests(cJSON *doc, const gs_nccl_tests_output *out, const char *op,
                                   const char *source) {
  size_t ws = gs_nccl_tests_world_size(out);
  if (ws == 0)
    return gs_error(GS_ERR_FORMAT,
                          "%s: cannot tell how many ranks ran: no device list and no "
                          "'nThread N nGpus M' settings", source);
  // Without a device list, or with one naming processes, each process's
  // ranks are its threads x GPUs.
  size_t per_process = gs_nccl_tests_process_ranks(out);
  if ((out->n_ranks == 0 || out->lists_processes) && per_process > GS_INGEST_MAX_PROCESS_RANKS)
    return gs_error(GS_ERR_FORMAT,
                          "%s: nThread %d x nGpus %d = %zu ranks in one process is not "
                          "plausible (at most %d)", source, out->threads, out->gpus_per_thread,
                          per_process, GS_INGEST_MAX_PROCESS_RANKS);
  for (size_t i = 0; i < out->n_rows; i++) {
    const gs_nccl_tests_row *row = &out->rows[i];
    gs_status st = gs_nccl_tests_check_row(out, op, source, i, row);
    if (st == GS_OK && row->out_of_place.present)
      st = add_collective(doc, out, op, source, row, &row->out_of_place, 0);
    if (st == GS_OK && row->in_place.present)
      st = add_collective(doc, out, op, source, row, &row->in_place, 1);
    if (st != GS_OK) return st;
  }
  return GS_OK;
}

gs_status gs_ingest_set_document_status(cJSON *doc) {
  cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
  size_t ok = 0, total = 0;
  for (cJSON *m = list ? list->child : NULL; m; m = m->next, total++) {
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(m, "status");
    if (cJSON_IsString(st) && strcmp(st->valuestring, "ok") == 0) ok++;
  }
  return gs_result_set_status(doc, gs_result_status_rule(total, total - ok, 0, 1));
}
