/* The computed analysis as one JSON object (`gpuscale report --format
 * json`): every number of the text report with full precision, null where
 * not available. Layout in docs/report.md. */
#include <math.h>
#include <stdlib.h>

#include "core/json.h"
#include "core/result.h"
#include "report/analyze/machine.h"
#include "report/analyze/quantile.h"
#include "report/render/render.h"
#include "report/render/goodput.h"
#include "report/render/internal.h"

/* The row's step statistics in the result document's own shape. */
static void add_stats(gs_json_build *b, cJSON *obj, const char *name, const gs_report_row *row) {
  gs_json_put_item(b, obj, name,
                   row->has_step ? gs_result_stats_to_json(&row->step) : cJSON_CreateNull());
}

static cJSON *rank_json(gs_json_build *b, const gs_report_rank *k) {
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  if (!o) return NULL;
  gs_json_put_number(b, o, "rank", k->rank);
  gs_json_put_string(b, o, "status", k->status);
  gs_json_put_string_or_null(b, o, "error", k->error);
  gs_json_put_string(b, o, "clock", k->clock);
  gs_json_put_number(b, o, "items_per_step", (double)k->items_per_step);
  gs_json_put_number(b, o, "n", (double)k->n);
  gs_json_put_number(b, o, "mean", k->mean);
  gs_json_put_number(b, o, "median", k->median);
  gs_json_put_number(b, o, "min", k->min);
  gs_json_put_number(b, o, "max", k->max);
  gs_json_put_number(b, o, "stddev", k->stddev);
  gs_json_put_number(b, o, "stable_share", k->stable_share);
  gs_json_put_number(b, o, "throughput", k->throughput);
  gs_json_put_number(b, o, "deviation", k->deviation);
  if (k->mark == GS_MARK_NONE)
    gs_json_put_null(b, o, "mark");
  else
    gs_json_put_string(b, o, "mark", gs_rank_mark_name(k->mark));
  gs_json_put_number(b, o, "first_iteration_seconds", k->first_seconds);
  gs_json_put_number(b, o, "cold_start_ratio", k->cold_ratio);
  gs_json_put_bool(b, o, "cold_start_flagged", k->cold_flag);
  gs_json_put_number(b, o, "first_sample_ratio", k->first_sample_ratio);
  gs_json_put_bool(b, o, "first_sample_flagged", k->first_sample_flag);
  gs_json_put_string_or_null(b, o, "host", k->host);
  cJSON *req = gs_json_put_object(b, o, "requests");
  if (req) {
    gs_json_put_number(b, req, "total", (double)k->requests);
    gs_json_put_number(b, req, "ok", (double)k->requests_ok);
    gs_json_put_number(b, req, "failed", (double)k->requests_failed);
    gs_json_put_number(b, req, "timed_out", (double)k->requests_timed_out);
    gs_json_put_number(b, req, "cold", (double)k->cold_requests);
    gs_json_put_number(b, req, "cold_outliers", (double)k->cold_outliers);
    gs_json_put_number(b, req, "success_rate", k->success_rate);
    gs_json_put_number(b, req, "tokens_per_second", k->tokens_per_second);
  }
  const gs_report_loadgen *lg = &k->loadgen;
  if (lg->present) {
    // What the rank's LoadGen log says (docs/report.md, "Ingested documents").
    cJSON *x = gs_json_put_object(b, o, "loadgen");
    if (x) {
      gs_json_put_string_or_null(b, x, "scenario", lg->scenario);
      gs_json_put_bool_or_null(b, x, "valid", lg->valid);
      gs_json_put_string_or_null(b, x, "failed_criteria", lg->failed);
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
        gs_json_put_number(b, x, seconds[i].name, seconds[i].v);
    }
  } else {
    gs_json_put_null(b, o, "loadgen");
  }
  gs_json_put_bool(b, o, "injected", k->injected);
  gs_json_put_number(b, o, "memory_used_bytes", k->memory_used_bytes);
  gs_json_put_number(b, o, "memory_total_bytes", k->memory_total_bytes);
  gs_json_put_number(b, o, "utilization", k->utilization);
  return o;
}

static cJSON *host_json(gs_json_build *b, const gs_report_host *h) {
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  if (!o) return NULL;
  gs_json_put_string(b, o, "host", h->name);
  gs_json_put_number(b, o, "ranks", (double)h->n_ranks);
  gs_json_put_number(b, o, "n", (double)h->n);
  gs_json_put_number(b, o, "mean", h->mean);
  gs_json_put_number(b, o, "min", h->min);
  gs_json_put_number(b, o, "max", h->max);
  gs_json_put_number(b, o, "stddev", h->stddev);
  gs_json_put_number(b, o, "stable_share", h->stable_share);
  gs_json_put_number(b, o, "throughput", h->throughput);
  gs_json_put_number(b, o, "throughput_per_rank", h->per_rank);
  gs_json_put_number(b, o, "deviation", h->deviation);
  gs_json_put_number(b, o, "requests", (double)h->requests);
  gs_json_put_number(b, o, "requests_ok", (double)h->requests_ok);
  gs_json_put_number(b, o, "success_rate", h->success_rate);
  gs_json_put_number(b, o, "tokens_per_second", h->tokens_per_second);
  gs_json_put_number(b, o, "memory_used_bytes", h->memory_used_bytes);
  gs_json_put_number(b, o, "cold_ranks", (double)h->cold_ranks);
  if (h->mark == GS_MARK_NONE)
    gs_json_put_null(b, o, "mark");
  else
    gs_json_put_string(b, o, "mark", gs_rank_mark_name(h->mark));
  return o;
}

static void add_breakdown(gs_json_build *b, cJSON *o, const gs_report_breakdown *d) {
  if (!d->available) {
    gs_json_put_null(b, o, "breakdown");
    return;
  }
  cJSON *x = gs_json_put_object(b, o, "breakdown");
  if (!x) return;
  gs_json_put_number(b, x, "step", d->step);
  gs_json_put_number(b, x, "ideal_step", d->ideal_step);
  gs_json_put_number(b, x, "compute", d->compute);
  gs_json_put_number(b, x, "comm", d->comm);
  gs_json_put_number(b, x, "imbalance", d->imbalance);
  gs_json_put_number(b, x, "host", d->host);
  gs_json_put_bool(b, x, "comm_measured", d->comm_measured);
  gs_json_put_bool(b, x, "device_clock", d->device_clock);
  gs_json_put_number(b, x, "samples", (double)d->samples);
  if (!d->has_losses) return;
  gs_json_put_number(b, x, "compute_ideal", d->losses.compute_ideal);
  gs_json_put_number(b, x, "compute_efficiency", d->losses.compute_efficiency);
  cJSON *lost = gs_json_put_object(b, x, "lost");
  static const char *const keys[GS_PART_COUNT] = {"compute", "comm", "imbalance", "host"};
  for (int p = 0; p < GS_PART_COUNT; p++) gs_json_put_number(b, lost, keys[p], d->losses.lost[p]);
  if (d->losses.main_loss >= 0)
    gs_json_put_string(b, x, "main_loss", keys[d->losses.main_loss]);
  else
    gs_json_put_null(b, x, "main_loss");
}

static cJSON *row_json(gs_json_build *b, const gs_report *r, const gs_report_row *row) {
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  if (!o) return NULL;
  gs_json_put_string(b, o, "file", r->files[row->file]);
  gs_json_put_number(b, o, "measurement", (double)row->measurement);
  gs_json_put_number(b, o, "world_size", row->world_size);
  gs_json_put_string(b, o, "status", row->status);
  gs_json_put_string_or_null(b, o, "error", row->error);
  gs_json_put_string(b, o, "verification", row->verification);
  gs_json_put_number(b, o, "items_per_step", (double)row->items_per_step);
  add_stats(b, o, "step", row);
  gs_json_put_number(b, o, "step_nulls", (double)row->step_nulls);
  gs_json_put_number(b, o, "throughput", row->throughput);
  gs_json_put_number(b, o, "ideal_throughput", row->ideal_throughput);
  gs_json_put_number(b, o, "speedup", row->speedup);
  gs_json_put_number(b, o, "speedup_low", row->speedup_low);
  gs_json_put_number(b, o, "speedup_high", row->speedup_high);
  gs_json_put_number(b, o, "efficiency", row->efficiency);
  gs_json_put_number(b, o, "efficiency_low", row->speedup_low / (double)row->world_size);
  gs_json_put_number(b, o, "efficiency_high", row->speedup_high / (double)row->world_size);
  gs_json_put_number(b, o, "karp_flatt", row->karp_flatt);
  if (row->world_size > 1) {
    cJSON *sym = gs_json_put_object(b, o, "symmetry");
    if (sym) {
      gs_json_put_number(b, sym, "median_throughput", row->rank_median);
      gs_json_put_number(b, sym, "max_min_ratio", row->spread_ratio);
      double spread_low, spread_high;
      gs_report_spread_interval(row, &spread_low, &spread_high);
      gs_json_put_number(b, sym, "max_min_ratio_low", spread_low);
      gs_json_put_number(b, sym, "max_min_ratio_high", spread_high);
      gs_json_put_number(b, sym, "cv", row->spread_cv);
      if (row->straggler >= 0)
        gs_json_put_number(b, sym, "straggler", row->straggler);
      else
        gs_json_put_null(b, sym, "straggler");
    }
  }
  gs_render_stragglers_json(b, o, row);
  gs_render_arrival_json(b, o, row);
  add_breakdown(b, o, &row->breakdown);
  gs_render_pipeline_json(b, o, row);
  if (row->requests.present) {
    cJSON *q = gs_json_put_object(b, o, "requests");
    if (q) {
      gs_json_put_string_or_null(b, q, "scenario", row->requests.scenario);
      gs_json_put_number(b, q, "generated_tokens", row->requests.generated_tokens);
      gs_json_put_number(b, q, "run_seconds", row->requests.run_seconds);
      // A statistic without samples is JSON null (gs_result_stats_to_json).
      gs_json_put_item(b, q, "ttft_seconds", gs_result_stats_to_json(&row->requests.ttft));
      gs_json_put_item(b, q, "tpot_seconds", gs_result_stats_to_json(&row->requests.tpot));
      if (gs_slo_any(&row->requests.slo))
        gs_slo_goodput_to_json(b, q, &row->requests.slo, &row->requests.goodput);
      gs_render_rates_json(b, q, row);
    }
  } else {
    gs_json_put_null(b, o, "requests");
  }
  gs_json_put_string_or_null(b, o, "split_units", row->placement.split_units);
  gs_json_put_string_or_null(b, o, "faults", row->placement.faults);
  if (row->placement.task >= 0)
    gs_json_put_number(b, o, "task", row->placement.task);
  else
    gs_json_put_null(b, o, "task");
  gs_json_put_string_or_null(b, o, "gpu_model", row->cost.gpu_model);
  gs_json_put_number(b, o, "price_per_hour", row->cost.price_per_hour);
  gs_json_put_number(b, o, "items_per_dollar", row->cost.items_per_dollar);
  gs_json_put_number(b, o, "dollars_per_million_items", row->cost.dollars_per_million);
  const gs_report_roofline *rl = &row->roofline;
  if (rl->present) {
    cJSON *ro = gs_json_put_object(b, o, "roofline");
    gs_json_put_string(b, ro, "bound", rl->bound);
    gs_json_put_number(b, ro, "achieved_per_second", rl->achieved);
    gs_json_put_number(b, ro, "achieved_low_per_second", rl->achieved_low);
    gs_json_put_number(b, ro, "achieved_high_per_second", rl->achieved_high);
    gs_json_put_number(b, ro, "peak_per_second", rl->peak);
    gs_json_put_number(b, ro, "fraction", rl->fraction);
    gs_json_put_number(b, ro, "fraction_low", rl->fraction_low);
    gs_json_put_number(b, ro, "fraction_high", rl->fraction_high);
    gs_json_put_string_or_null(b, ro, "model", rl->model);
    gs_json_put_string_or_null(b, ro, "why", rl->why);
  } else {
    gs_json_put_null(b, o, "roofline");
  }
  if (row->collective.present) {
    cJSON *c = gs_json_put_object(b, o, "collective");
    if (c) {
      gs_json_put_string_or_null(b, c, "op", row->collective.op);
      gs_json_put_number(b, c, "bytes", row->collective.bytes);
      gs_json_put_string_or_null(b, c, "dtype", row->collective.dtype);
      gs_json_put_string_or_null(b, c, "redop", row->collective.redop);
      gs_json_put_number(b, c, "root", row->collective.root);
      gs_json_put_bool_or_null(b, c, "in_place", row->collective.in_place);
      gs_json_put_string(b, c, "form", gs_report_coll_form(row->collective.in_place));
      gs_json_put_number(b, c, "algbw_bytes_per_second", row->collective.algbw);
      gs_json_put_number(b, c, "busbw_bytes_per_second", row->collective.busbw);
      gs_json_put_number(b, c, "link_bytes_per_s", row->collective.link_bandwidth);
      gs_json_put_number(b, c, "time_seconds", row->has_step ? row->step.mean : row->collective.time);
      gs_json_put_string_or_null(b, c, "nccl_version", row->collective.nccl_version);
      gs_json_put_number(b, c, "busbw_factor", row->collective.busbw_factor);
      gs_json_put_number(b, c, "busbw_expected_bytes_per_second", row->collective.busbw_expected);
      gs_json_put_bool_or_null(b, c, "busbw_consistent",
                       isfinite(row->collective.busbw_expected) && isfinite(row->collective.busbw)
                           ? !row->collective.busbw_mismatch
                           : -1);
    }
  }
  cJSON *hosts = gs_json_put_array(b, o, "hosts");
  for (size_t h = 0; hosts && h < row->n_hosts; h++) {
    cJSON *x = host_json(b, &row->hosts[h]);
    gs_json_append(b, hosts, x);
  }
  gs_json_put_number(b, o, "host_cv", row->host_spread_cv);
  cJSON *ranks = gs_json_put_array(b, o, "ranks");
  for (size_t k = 0; ranks && k < row->n_ranks; k++) {
    cJSON *x = rank_json(b, &row->ranks[k]);
    gs_json_append(b, ranks, x);
  }
  return o;
}

/* See render.h. */
cJSON *gs_report_to_json(const gs_report *r) {
  cJSON *doc = cJSON_CreateObject();
  if (!doc) return NULL;
  gs_json_build build = {0}, *b = &build;
  gs_json_put_string(b, doc, "schema", "gpuscale/report/v1");
  cJSON *files = gs_json_put_array(b, doc, "files");
  for (size_t i = 0; files && i < r->n_files; i++)
    gs_json_append_string(b, files, r->files[i]);
  cJSON *th = gs_json_put_object(b, doc, "thresholds");
  if (th) {
    gs_json_put_number(b, th, "moderate", r->thresholds.moderate);
    gs_json_put_number(b, th, "critical", r->thresholds.critical);
  }
  // The overview first, as the text report has it: one entry per series.
  cJSON *overview = gs_json_put_array(b, doc, "overview");
  for (size_t i = 0; overview && i < r->n_series; i++) {
    const gs_report_series *s = &r->series[i];
    gs_render_overview ov;
    gs_render_overview_cells(s, &ov);
    cJSON *o = cJSON_CreateObject();
    gs_json_append(b, overview, o);
    if (b->failed) break;
    gs_json_put_string(b, o, "series", s->title);
    gs_json_put_string_or_null(b, o, "backend", s->backend);
    cJSON *ranks = gs_json_put_array(b, o, "ranks");
    for (size_t j = 0; ranks && j < s->n_rows; j++)
      if (j == 0 || s->rows[j].world_size != s->rows[j - 1].world_size)
        gs_json_append_number(b, ranks, s->rows[j].world_size);
    if (ov.world_size > 0)
      gs_json_put_number(b, o, "world_size", ov.world_size);
    else
      gs_json_put_null(b, o, "world_size");
    gs_json_put_string_or_null(b, o, "figure", ov.figure);
    gs_json_put_number(b, o, "value", ov.throughput);
    gs_json_put_number(b, o, "speedup", ov.speedup);
    gs_json_put_number(b, o, "speedup_low", ov.speedup_low);
    gs_json_put_number(b, o, "speedup_high", ov.speedup_high);
    gs_json_put_number(b, o, "efficiency", ov.efficiency);
    gs_json_put_number(b, o, "efficiency_low", ov.speedup_low / (double)ov.world_size);
    gs_json_put_number(b, o, "efficiency_high", ov.speedup_high / (double)ov.world_size);
    gs_json_put_string(b, o, "verdict", ov.verdict);
  }
  cJSON *series = gs_json_put_array(b, doc, "series");
  for (size_t i = 0; series && i < r->n_series; i++) {
    const gs_report_series *s = &r->series[i];
    cJSON *o = cJSON_CreateObject();
    gs_json_append(b, series, o);
    if (b->failed) break;
    gs_json_put_string(b, o, "title", s->title);
    gs_json_put_string(b, o, "workload", s->workload);
    gs_json_put_string_or_null(b, o, "backend", s->backend);
    gs_json_put_string_or_null(b, o, "scaling", s->scaling);
    cJSON *opts = cJSON_Parse(s->options);
    gs_json_put_item(b, o, "workload_options", opts ? opts : cJSON_CreateNull());
    gs_json_put_string_or_null(b, o, "item_unit", s->item_unit);
    gs_json_put_string_or_null(b, o, "label", s->label);
    gs_json_put_string_or_null(b, o, "split", s->split);
    cJSON *rows = gs_json_put_array(b, o, "rows");
    for (size_t j = 0; rows && j < s->n_rows; j++) {
      cJSON *x = row_json(b, r, &s->rows[j]);
      gs_json_append(b, rows, x);
    }
    cJSON *rec = gs_json_put_object(b, o, "recommendation");
    if (rec) {
      if (s->verdict == GS_VERDICT_NONE)
        gs_json_put_null(b, rec, "verdict");
      else
        gs_json_put_string(b, rec, "verdict", gs_verdict_name(s->verdict));
      if (s->verdict_world_size > 0)
        gs_json_put_number(b, rec, "world_size", s->verdict_world_size);
      else
        gs_json_put_null(b, rec, "world_size");
      cJSON *adv = gs_json_put_array(b, rec, "advice");
      for (size_t k = 0; adv && k < s->n_advice; k++)
        gs_json_append_string(b, adv, s->advice[k]);
    }
  }
  gs_render_layouts_json(b, doc, r);
  gs_report_machine_json(b, r, doc);
  if (b->failed) {
    cJSON_Delete(doc);
    return NULL;
  }
  return doc;
}
