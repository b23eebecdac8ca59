/* What an ingested document's tool measured, read for the report: LoadGen's
 * throughput, latency percentiles, TTFT/TPOT and validity per rank
 * ("mlperf" objects, docs/ingest.md), and nccl-tests' time per op and NCCL
 * version. Such measurements have no step samples, so without this their
 * rows would show nothing (docs/report.md, "Ingested documents"). */
#include <math.h>
#include <string.h>

#include "core/json.h"
#include "report/read/read.h"

/* One rank's "mlperf" object into `lg`. */
static void loadgen_read(const cJSON *o, gs_report_loadgen *lg) {
  lg->present = 1;
  const cJSON *valid = gs_json_member(o, "result_valid");
  lg->valid = cJSON_IsBool(valid) ? cJSON_IsTrue(valid) : -1;
  lg->scenario = gs_json_string_member(o, "scenario", NULL);
  lg->failed = gs_json_string_member(o, "failed_criteria", NULL);
  lg->samples_per_second = gs_json_number_member(o, "throughput_samples_per_second");
  lg->tokens_per_second = gs_json_number_member(o, "tokens_per_second");
  lg->query_count = gs_json_number_member(o, "query_count");
  const cJSON *lat = gs_json_member(o, "latency_seconds");
  lg->lat_mean = gs_json_number_member(lat, "mean");
  lg->lat_p50 = gs_json_number_member(lat, "p50");
  lg->lat_p90 = gs_json_number_member(lat, "p90");
  lg->lat_p99 = gs_json_number_member(lat, "p99");
  lg->lat_max = gs_json_number_member(lat, "max");
  const cJSON *ttft = gs_json_member(o, "first_token_latency_seconds");
  lg->ttft_p50 = gs_json_number_member(ttft, "p50");
  lg->ttft_p99 = gs_json_number_member(ttft, "p99");
  const cJSON *tpot = gs_json_member(o, "time_per_output_token_seconds");
  lg->tpot_p50 = gs_json_number_member(tpot, "p50");
  lg->tpot_p99 = gs_json_number_member(tpot, "p99");
}

/* See read.h. */
void gs_report_ingest_read(const cJSON *doc, const cJSON *m, gs_report_row *row) {
  row->collective.time = NAN;
  row->collective.nccl_version = NULL;
  // Another tool's run (LoadGen, nccl-tests): a single run, never part of
  // a series measured together, so it never yields a speedup.
  row->ingested = cJSON_IsObject(gs_json_member(m, "source"));
  const cJSON *coll = gs_json_member(m, "collective");
  if (cJSON_IsObject(coll)) {
    row->collective.time = gs_json_number_member(coll, "time_seconds");
    const cJSON *src = gs_json_member(m, "source");
    row->collective.nccl_version = gs_json_string_member(src, "nccl_version", NULL);
    if (!row->collective.nccl_version)
      row->collective.nccl_version = gs_json_string_member(gs_json_member(doc, "environment"),
                                                           "nccl_version", NULL);
  }
  if (!cJSON_IsObject(gs_json_member(m, "mlperf"))) return;
  row->loadgen = 1;
  const cJSON *runs = gs_json_member(m, "runs");
  const cJSON *run = cJSON_IsArray(runs) ? runs->child : NULL;
  const cJSON *ranks = gs_json_member(run, "ranks");
  for (const cJSON *rk = cJSON_IsArray(ranks) ? ranks->child : NULL; rk; rk = rk->next) {
    const cJSON *rn = gs_json_member(rk, "rank");
    const cJSON *o = gs_json_member(rk, "mlperf");
    if (!cJSON_IsNumber(rn) || !cJSON_IsObject(o)) continue;
    double k = rn->valuedouble;
    if (!(k >= 0 && k < (double)row->n_ranks) || k != floor(k)) continue;
    gs_report_rank *r = &row->ranks[(size_t)k];
    loadgen_read(o, &r->loadgen);
    if (!isfinite(r->throughput)) r->throughput = r->loadgen.samples_per_second;
  }
  if (!isfinite(row->throughput))
    row->throughput =
        gs_json_number_member(gs_json_member(m, "aggregate"), "throughput_items_per_second");
}
