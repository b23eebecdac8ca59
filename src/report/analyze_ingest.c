/* What an ingested document's tool measured, read for the report: LoadGen's
 * throughput, latency percentiles, TTFT/TPOT and validity per rank
 * ("mlperf" objects, docs/ingest.md), and nccl-tests' time per op and NCCL
 * version. Such measurements have no step samples, so without this their
 * rows would show nothing (docs/report.md, "Ingested documents"). */
#include <math.h>
#include <string.h>

#include "report/analyze_internal.h"

static const cJSON *member(const cJSON *obj, const char *name) {
  return cJSON_GetObjectItemCaseSensitive(obj, name);
}

/* One rank's "mlperf" object into `lg`. */
static void loadgen_read(const cJSON *o, gs_report_loadgen *lg) {
  lg->present = 1;
  const cJSON *valid = member(o, "result_valid");
  lg->valid = cJSON_IsBool(valid) ? cJSON_IsTrue(valid) : -1;
  lg->scenario = gs_report_string_of(o, "scenario", NULL);
  lg->failed = gs_report_string_of(o, "failed_criteria", NULL);
  lg->samples_per_second = gs_report_number_or_nan(member(o, "throughput_samples_per_second"));
  lg->tokens_per_second = gs_report_number_or_nan(member(o, "tokens_per_second"));
  lg->query_count = gs_report_number_or_nan(member(o, "query_count"));
  const cJSON *lat = member(o, "latency_seconds");
  lg->lat_mean = gs_report_number_or_nan(member(lat, "mean"));
  lg->lat_p50 = gs_report_number_or_nan(member(lat, "p50"));
  lg->lat_p90 = gs_report_number_or_nan(member(lat, "p90"));
  lg->lat_p99 = gs_report_number_or_nan(member(lat, "p99"));
  lg->lat_max = gs_report_number_or_nan(member(lat, "max"));
  const cJSON *ttft = member(o, "first_token_latency_seconds");
  lg->ttft_p50 = gs_report_number_or_nan(member(ttft, "p50"));
  lg->ttft_p99 = gs_report_number_or_nan(member(ttft, "p99"));
  const cJSON *tpot = member(o, "time_per_output_token_seconds");
  lg->tpot_p50 = gs_report_number_or_nan(member(tpot, "p50"));
  lg->tpot_p99 = gs_report_number_or_nan(member(tpot, "p99"));
}

/* See analyze_internal.h. */
void gs_report_ingest_read(const cJSON *doc, const cJSON *m, gs_report_row *row) {
  row->coll_time = NAN;
  row->nccl_version = NULL;
  // Another tool's run (LoadGen, nccl-tests): a single run, never part of
  // a series measured together, so it never yields a speedup.
  row->ingested = cJSON_IsObject(member(m, "source"));
  const cJSON *coll = member(m, "collective");
  if (cJSON_IsObject(coll)) {
    row->coll_time = gs_report_number_or_nan(member(coll, "time_seconds"));
    const cJSON *src = member(m, "source");
    row->nccl_version = gs_report_string_of(src, "nccl_version", NULL);
    if (!row->nccl_version)
      row->nccl_version = gs_report_string_of(member(doc, "environment"), "nccl_version", NULL);
  }
  if (!cJSON_IsObject(member(m, "mlperf"))) return;
  row->loadgen = 1;
  const cJSON *runs = member(m, "runs");
  const cJSON *run = cJSON_IsArray(runs) ? runs->child : NULL;
  const cJSON *ranks = member(run, "ranks");
  for (const cJSON *rk = cJSON_IsArray(ranks) ? ranks->child : NULL; rk; rk = rk->next) {
    const cJSON *rn = member(rk, "rank");
    const cJSON *o = member(rk, "mlperf");
    if (!cJSON_IsNumber(rn) || !cJSON_IsObject(o)) continue;
    double k = rn->valuedouble;
    if (!(k >= 0 && k < (double)row->n_ranks) || k != floor(k)) continue;
    gs_report_rank *r = &row->ranks[(size_t)k];
    loadgen_read(o, &r->loadgen);
    if (!isfinite(r->throughput)) r->throughput = r->loadgen.samples_per_second;
  }
  if (!isfinite(row->throughput))
    row->throughput = gs_report_number_or_nan(member(member(m, "aggregate"), "throughput_items_per_second"));
}
