/* The computed analysis as one JSON object (`gpuscale report --format
 * json`): every number of the text report with full precision, null where
 * not available. Layout in docs/report.md. */
#include <math.h>
#include <stdlib.h>

#include "core/result.h"
#include "report/analyze/machine.h"
#include "report/render/render.h"
#include "report/render/internal.h"

/* The row's step statistics in the result document's own shape. */
static void add_stats(cJSON *obj, const char *name, const gs_report_row *row) {
  cJSON *stats = row->has_step ? gs_result_stats_to_json(&row->step) : NULL;
  cJSON_AddItemToObject(obj, name, stats ? stats : cJSON_CreateNull());
}

static void add_string_or_null(cJSON *obj, const char *name, const char *text) {
  if (text && text[0])
    cJSON_AddStringToObject(obj, name, text);
  else
    cJSON_AddNullToObject(obj, name);
}

/* true, false, or null for a flag that is not known (< 0). */
static void add_bool_or_null(cJSON *obj, const char *name, int flag) {
  if (flag >= 0)
    cJSON_AddBoolToObject(obj, name, flag);
  else
    cJSON_AddNullToObject(obj, name);
}

static cJSON *rank_json(const gs_report_rank *k) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, "rank", k->rank);
  cJSON_AddStringToObject(o, "status", k->status);
  add_string_or_null(o, "error", k->error);
  cJSON_AddStringToObject(o, "clock", k->clock);
  cJSON_AddNumberToObject(o, "items_per_step", (double)k->items_per_step);
  cJSON_AddNumberToObject(o, "n", (double)k->n);
  gs_json_add_number(o, "mean", k->mean);
  gs_json_add_number(o, "median", k->median);
  gs_json_add_number(o, "min", k->min);
  gs_json_add_number(o, "max", k->max);
  gs_json_add_number(o, "stddev", k->stddev);
  gs_json_add_number(o, "stable_share", k->stable_share);
  gs_json_add_number(o, "throughput", k->throughput);
  gs_json_add_number(o, "deviation", k->deviation);
  if (k->mark == GS_MARK_NONE)
    cJSON_AddNullToObject(o, "mark");
  else
    cJSON_AddStringToObject(o, "mark", gs_rank_mark_name(k->mark));
  gs_json_add_number(o, "first_iteration_seconds", k->first_seconds);
  gs_json_add_number(o, "cold_start_ratio", k->cold_ratio);
  cJSON_AddBoolToObject(o, "cold_start_flagged", k->cold_flag);
  gs_json_add_number(o, "first_sample_ratio", k->first_sample_ratio);
  cJSON_AddBoolToObject(o, "first_sample_flagged", k->first_sample_flag);
  add_string_or_null(o, "host", k->host);
  cJSON *req = cJSON_AddObjectToObject(o, "requests");
  if (req) {
    cJSON_AddNumberToObject(req, "total", (double)k->requests);
    cJSON_AddNumberToObject(req, "ok", (double)k->requests_ok);
    cJSON_AddNumberToObject(req, "failed", (double)k->requests_failed);
    cJSON_AddNumberToObject(req, "timed_out", (double)k->requests_timed_out);
    cJSON_AddNumberToObject(req, "cold", (double)k->cold_requests);
    cJSON_AddNumberToObject(req, "cold_outliers", (double)k->cold_outliers);
    gs_json_add_number(req, "success_rate", k->success_rate);
    gs_json_add_number(req, "tokens_per_second", k->tokens_per_second);
  }
  const gs_report_loadgen *lg = &k->loadgen;
  if (lg->present) {
    // What the rank's LoadGen log says (docs/report.md, "Ingested documents").
    cJSON *x = cJSON_AddObjectToObject(o, "loadgen");
    if (x) {
      add_string_or_null(x, "scenario", lg->scenario);
      add_bool_or_null(x, "valid", lg->valid);
      add_string_or_null(x, "failed_criteria", lg->failed);
      const struct {
        const char *name;
        double v;
      } seconds[] = {{"samples_per_second", lg->samples_per_second},
                     {"tokens_per_second", lg->tokens_per_second},
                     {"query_count", lg->query_count},
                     {"latency_mean_seconds", lg->lat_mean}, {"latency_p50_seconds", lg->lat_p50},
                     {"latency_p90_seconds", lg->lat_p90},   {"latency_p99_seconds", lg->lat_p99},
                     {"latency_max_seconds", lg->lat_max},   {"ttft_p50_seconds", lg->ttft_p50},
                     {"ttft_p99_seconds", lg->ttft_p99},     {"tpot_p50_seconds", lg->tpot_p50},
                     {"tpot_p99_seconds", lg->tpot_p99}};
      for (size_t i = 0; i < sizeof seconds / sizeof seconds[0]; i++)
        gs_json_add_number(x, seconds[i].name, seconds[i].v);
    }
  } else {
    cJSON_AddNullToObject(o, "loadgen");
  }
  cJSON_AddBoolToObject(o, "injected", k->injected);
  gs_json_add_number(o, "memory_used_bytes", k->memory_used_bytes);
  gs_json_add_number(o, "memory_total_bytes", k->memory_total_bytes);
  gs_json_add_number(o, "utilization", k->utilization);
  return o;
}

static cJSON *host_json(const gs_report_host *h) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "host", h->name);
  cJSON_AddNumberToObject(o, "ranks", (double)h->n_ranks);
  cJSON_AddNumberToObject(o, "n", (double)h->n);
  gs_json_add_number(o, "mean", h->mean);
  gs_json_add_number(o, "min", h->min);
  gs_json_add_number(o, "max", h->max);
  gs_json_add_number(o, "stddev", h->stddev);
  gs_json_add_number(o, "stable_share", h->stable_share);
  gs_json_add_number(o, "throughput", h->throughput);
  gs_json_add_number(o, "throughput_per_rank", h->per_rank);
  gs_json_add_number(o, "deviation", h->deviation);
  cJSON_AddNumberToObject(o, "requests", (double)h->requests);
  cJSON_AddNumberToObject(o, "requests_ok", (double)h->requests_ok);
  gs_json_add_number(o, "success_rate", h->success_rate);
  gs_json_add_number(o, "tokens_per_second", h->tokens_per_second);
  gs_json_add_number(o, "memory_used_bytes", h->memory_used_bytes);
  cJSON_AddNumberToObject(o, "cold_ranks", (double)h->cold_ranks);
  if (h->mark == GS_MARK_NONE)
    cJSON_AddNullToObject(o, "mark");
  else
    cJSON_AddStringToObject(o, "mark", gs_rank_mark_name(h->mark));
  return o;
}

static void add_breakdown(cJSON *o, const gs_report_breakdown *b) {
  if (!b->available) {
    cJSON_AddNullToObject(o, "breakdown");
    return;
  }
  cJSON *x = cJSON_AddObjectToObject(o, "breakdown");
  if (!x) return;
  gs_json_add_number(x, "step", b->step);
  gs_json_add_number(x, "ideal_step", b->ideal_step);
  gs_json_add_number(x, "compute", b->compute);
  gs_json_add_number(x, "comm", b->comm);
  gs_json_add_number(x, "imbalance", b->imbalance);
  gs_json_add_number(x, "host", b->host);
  cJSON_AddBoolToObject(x, "comm_measured", b->comm_measured);
  cJSON_AddBoolToObject(x, "device_clock", b->device_clock);
  cJSON_AddNumberToObject(x, "samples", (double)b->samples);
}

static cJSON *row_json(const gs_report *r, const gs_report_row *row) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "file", r->files[row->file]);
  cJSON_AddNumberToObject(o, "measurement", (double)row->measurement);
  cJSON_AddNumberToObject(o, "world_size", row->world_size);
  cJSON_AddStringToObject(o, "status", row->status);
  add_string_or_null(o, "error", row->error);
  cJSON_AddStringToObject(o, "verification", row->verification);
  cJSON_AddNumberToObject(o, "items_per_step", (double)row->items_per_step);
  add_stats(o, "step", row);
  cJSON_AddNumberToObject(o, "step_nulls", (double)row->step_nulls);
  gs_json_add_number(o, "throughput", row->throughput);
  gs_json_add_number(o, "ideal_throughput", row->ideal_throughput);
  gs_json_add_number(o, "speedup", row->speedup);
  gs_json_add_number(o, "speedup_low", row->speedup_low);
  gs_json_add_number(o, "speedup_high", row->speedup_high);
  gs_json_add_number(o, "efficiency", row->efficiency);
  gs_json_add_number(o, "efficiency_low", row->speedup_low / (double)row->world_size);
  gs_json_add_number(o, "efficiency_high", row->speedup_high / (double)row->world_size);
  gs_json_add_number(o, "karp_flatt", row->karp_flatt);
  if (row->world_size > 1) {
    cJSON *sym = cJSON_AddObjectToObject(o, "symmetry");
    if (sym) {
      gs_json_add_number(sym, "median_throughput", row->rank_median);
      gs_json_add_number(sym, "max_min_ratio", row->spread_ratio);
      gs_json_add_number(sym, "cv", row->spread_cv);
      if (row->straggler >= 0)
        cJSON_AddNumberToObject(sym, "straggler", row->straggler);
      else
        cJSON_AddNullToObject(sym, "straggler");
    }
  }
  add_breakdown(o, &row->breakdown);
  if (row->requests.present) {
    cJSON *q = cJSON_AddObjectToObject(o, "requests");
    if (q) {
      add_string_or_null(q, "scenario", row->requests.scenario);
      gs_json_add_number(q, "generated_tokens", row->requests.generated_tokens);
      gs_json_add_number(q, "run_seconds", row->requests.run_seconds);
      cJSON *ttft = row->requests.ttft.n ? gs_result_stats_to_json(&row->requests.ttft) : NULL;
      cJSON *tpot = row->requests.tpot.n ? gs_result_stats_to_json(&row->requests.tpot) : NULL;
      cJSON_AddItemToObject(q, "ttft_seconds", ttft ? ttft : cJSON_CreateNull());
      cJSON_AddItemToObject(q, "tpot_seconds", tpot ? tpot : cJSON_CreateNull());
    }
  } else {
    cJSON_AddNullToObject(o, "requests");
  }
  add_string_or_null(o, "split_units", row->placement.split_units);
  add_string_or_null(o, "faults", row->placement.faults);
  if (row->placement.task >= 0)
    cJSON_AddNumberToObject(o, "task", row->placement.task);
  else
    cJSON_AddNullToObject(o, "task");
  add_string_or_null(o, "gpu_model", row->cost.gpu_model);
  gs_json_add_number(o, "price_per_hour", row->cost.price_per_hour);
  gs_json_add_number(o, "items_per_dollar", row->cost.items_per_dollar);
  gs_json_add_number(o, "dollars_per_million_items", row->cost.dollars_per_million);
  if (row->collective.present) {
    cJSON *c = cJSON_AddObjectToObject(o, "collective");
    if (c) {
      add_string_or_null(c, "op", row->collective.op);
      gs_json_add_number(c, "bytes", row->collective.bytes);
      add_string_or_null(c, "dtype", row->collective.dtype);
      add_string_or_null(c, "redop", row->collective.redop);
      gs_json_add_number(c, "root", row->collective.root);
      add_bool_or_null(c, "in_place", row->collective.in_place);
      cJSON_AddStringToObject(c, "form", gs_report_coll_form(row->collective.in_place));
      gs_json_add_number(c, "algbw_bytes_per_second", row->collective.algbw);
      gs_json_add_number(c, "busbw_bytes_per_second", row->collective.busbw);
      gs_json_add_number(c, "link_bytes_per_s", row->collective.link_bandwidth);
      gs_json_add_number(c, "time_seconds", row->has_step ? row->step.mean : row->collective.time);
      add_string_or_null(c, "nccl_version", row->collective.nccl_version);
      gs_json_add_number(c, "busbw_factor", row->collective.busbw_factor);
      gs_json_add_number(c, "busbw_expected_bytes_per_second", row->collective.busbw_expected);
      add_bool_or_null(c, "busbw_consistent",
                       isfinite(row->collective.busbw_expected) && isfinite(row->collective.busbw)
                           ? !row->collective.busbw_mismatch
                           : -1);
    }
  }
  cJSON *hosts = cJSON_AddArrayToObject(o, "hosts");
  for (size_t h = 0; hosts && h < row->n_hosts; h++) {
    cJSON *x = host_json(&row->hosts[h]);
    if (x) cJSON_AddItemToArray(hosts, x);
  }
  gs_json_add_number(o, "host_cv", row->host_spread_cv);
  cJSON *ranks = cJSON_AddArrayToObject(o, "ranks");
  for (size_t k = 0; ranks && k < row->n_ranks; k++) {
    cJSON *x = rank_json(&row->ranks[k]);
    if (x) cJSON_AddItemToArray(ranks, x);
  }
  return o;
}

/* See render.h. */
cJSON *gs_report_to_json(const gs_report *r) {
  cJSON *doc = cJSON_CreateObject();
  if (!doc) return NULL;
  cJSON_AddStringToObject(doc, "schema", "gpuscale/report/v1");
  cJSON *files = cJSON_AddArrayToObject(doc, "files");
  for (size_t i = 0; files && i < r->n_files; i++)
    cJSON_AddItemToArray(files, cJSON_CreateString(r->files[i]));
  cJSON *th = cJSON_AddObjectToObject(doc, "thresholds");
  if (th) {
    gs_json_add_number(th, "moderate", r->thresholds.moderate);
    gs_json_add_number(th, "critical", r->thresholds.critical);
  }
  // The overview first, as the text report has it: one entry per series.
  cJSON *overview = cJSON_AddArrayToObject(doc, "overview");
  for (size_t i = 0; overview && i < r->n_series; i++) {
    const gs_report_series *s = &r->series[i];
    gs_render_overview ov;
    gs_render_overview_cells(s, &ov);
    cJSON *o = cJSON_CreateObject();
    if (!o) break;
    cJSON_AddItemToArray(overview, o);
    cJSON_AddStringToObject(o, "series", s->title);
    add_string_or_null(o, "backend", s->backend);
    cJSON *ranks = cJSON_AddArrayToObject(o, "ranks");
    for (size_t j = 0; ranks && j < s->n_rows; j++)
      if (j == 0 || s->rows[j].world_size != s->rows[j - 1].world_size)
        cJSON_AddItemToArray(ranks, cJSON_CreateNumber(s->rows[j].world_size));
    if (ov.world_size > 0)
      cJSON_AddNumberToObject(o, "world_size", ov.world_size);
    else
      cJSON_AddNullToObject(o, "world_size");
    add_string_or_null(o, "figure", ov.figure);
    gs_json_add_number(o, "value", ov.throughput);
    gs_json_add_number(o, "speedup", ov.speedup);
    gs_json_add_number(o, "speedup_low", ov.speedup_low);
    gs_json_add_number(o, "speedup_high", ov.speedup_high);
    gs_json_add_number(o, "efficiency", ov.efficiency);
    gs_json_add_number(o, "efficiency_low", ov.speedup_low / (double)ov.world_size);
    gs_json_add_number(o, "efficiency_high", ov.speedup_high / (double)ov.world_size);
    cJSON_AddStringToObject(o, "verdict", ov.verdict);
  }
  cJSON *series = cJSON_AddArrayToObject(doc, "series");
  for (size_t i = 0; series && i < r->n_series; i++) {
    const gs_report_series *s = &r->series[i];
    cJSON *o = cJSON_CreateObject();
    if (!o) break;
    cJSON_AddItemToArray(series, o);
    cJSON_AddStringToObject(o, "title", s->title);
    cJSON_AddStringToObject(o, "workload", s->workload);
    add_string_or_null(o, "backend", s->backend);
    add_string_or_null(o, "scaling", s->scaling);
    cJSON *opts = cJSON_Parse(s->options);
    cJSON_AddItemToObject(o, "workload_options", opts ? opts : cJSON_CreateNull());
    add_string_or_null(o, "item_unit", s->item_unit);
    add_string_or_null(o, "label", s->label);
    add_string_or_null(o, "split", s->split);
    cJSON *rows = cJSON_AddArrayToObject(o, "rows");
    for (size_t j = 0; rows && j < s->n_rows; j++) {
      cJSON *x = row_json(r, &s->rows[j]);
      if (x) cJSON_AddItemToArray(rows, x);
    }
    cJSON *rec = cJSON_AddObjectToObject(o, "recommendation");
    if (rec) {
      if (s->verdict == GS_VERDICT_NONE)
        cJSON_AddNullToObject(rec, "verdict");
      else
        cJSON_AddStringToObject(rec, "verdict", gs_verdict_name(s->verdict));
      if (s->verdict_world_size > 0)
        cJSON_AddNumberToObject(rec, "world_size", s->verdict_world_size);
      else
        cJSON_AddNullToObject(rec, "world_size");
      cJSON *adv = cJSON_AddArrayToObject(rec, "advice");
      for (size_t k = 0; adv && k < s->n_advice; k++)
        cJSON_AddItemToArray(adv, cJSON_CreateString(s->advice[k]));
    }
  }
  gs_report_machine_json(r, doc);
  return doc;
}
