/* From llm scenario runs to the result document (see llm_measure.h). */
#include "workloads/llm/llm_measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arrival.h"
#include "core/check.h"
#include "core/dvec.h"
#include "core/format.h"
#include "core/json.h"
#include "core/roofline.h"
#include "core/timer.h"

#define GS_LLM_NOTE \
  "random weights: the generated tokens are meaningless; timing is faithful to the model's shapes"

/* Ok samples outside the cold batch: the ones the statistics describe. */
/* The verification of a CPU measurement: there is nothing to check it against. */
static const char cpu_reference[] = "the CPU backend is the reference";

static int counted(const gs_llm_request_record *q) {
  return q->status == GS_LLM_REQ_OK && !q->cold;
}

/* The shards' arrivals at the tensor-parallel all-reduces, every run's:
 * one record over the groups' ranks (group g's shard k is rank
 * g x tp + k), grouped by replica and stage when there are several groups
 * ("arrival_groups", each summarized on its own), else the measurement's
 * "arrival"; kept where every shard recorded. */
static gs_status merge_arrivals(const gs_llm_run_result *runs, size_t n_runs,
                                gs_measurement *m) {
  const gs_llm_run_result *first = NULL;
  for (size_t r = 0; r < n_runs && !first; r++)
    if (runs[r].n_arrivals) first = &runs[r];
  if (!first) return GS_OK;
  const size_t n = first->n_arrivals, tp = first->arrivals[0].arrival->n_ranks;
  if (n * tp > GS_MAX_RANKS) GS_BUG("llm arrival groups: %zu of %zu shards", n, tp);
  const gs_arrival *a0 = first->arrivals[0].arrival;
  m->arrival = gs_arrival_new(n * tp, 64, a0->clock, a0->alignment);
  if (!m->arrival) return GS_ERR_NOMEM;
  int group[GS_MAX_RANKS];
  for (size_t r = 0; r < n_runs; r++) {
    if (runs[r].n_arrivals != n) continue; /* a run that recorded nothing */
    for (size_t g = 0; g < n; g++) {
      const gs_arrival *from = runs[r].arrivals[g].arrival;
      for (size_t k = 0; k < tp; k++) {
        gs_arrival_rank *into = &m->arrival->ranks[g * tp + k];
        const gs_arrival_rank *f = &from->ranks[k];
        for (size_t i = 0; i < f->n; i++) GS_TRY(gs_arrival_append(into, f->entry[i], f->exit[i]));
        into->offset_seconds = f->offset_seconds;
        if (f->error_seconds > into->error_seconds) into->error_seconds = f->error_seconds;
        group[g * tp + k] = (int)g;
      }
    }
  }
  if (n > 1) {
    gs_arrival_set_groups(m->arrival, group);
    m->arrival->group_stages = (int)(n / (size_t)first->world_size);
  }
  if (!gs_arrival_recorded(m->arrival)) {
    gs_arrival_free(m->arrival);
    m->arrival = NULL;
  }
  return GS_OK;
}

gs_status gs_llm_measurement_fill(const gs_llm_options *o, const gs_run_config *config,
                                  const gs_llm_run_result *runs, size_t n_runs,
                                  const gs_verification *verification, gs_measurement *m) {
  memset(m, 0, sizeof *m);
  snprintf(m->workload, sizeof m->workload, "llm");
  snprintf(m->backend, sizeof m->backend, "%s",
           config->backend == GS_BACKEND_CUDA ? "cuda" : "cpu");
  snprintf(m->scaling, sizeof m->scaling, "%s", gs_scaling_name(config->scaling));
  m->world_size = config->world_size;
  for (int k = 0; k < config->world_size; k++)
    m->devices[k] = config->backend == GS_BACKEND_CUDA ? config->devices[k] : -1;
  m->status = GS_OK;
  m->faults = gs_fault_at(&config->faults, config->world_size);
  GS_TRY(merge_arrivals(runs, n_runs, m));

  gs_llm_scenario_config sc;
  gs_llm_options_scenario(o, config, &sc);
  gs_llm_sample *samples = NULL;
  GS_TRY(gs_llm_stream_make(&sc.stream, &samples));
  uint64_t in_tokens = 0, out_tokens = 0;
  for (uint64_t i = 0; i < sc.stream.count; i++) {
    in_tokens += samples[i].input_tokens;
    out_tokens += samples[i].output_tokens;
  }
  free(samples);
  m->cost.items = out_tokens;
  m->cost.item_unit = "tokens";
  m->cost.flops = gs_llm_token_flops(&sc.engine.shape) * (in_tokens + out_tokens);
  uint64_t passes = 0;
  for (int k = 0; n_runs && k < runs[0].world_size; k++)
    passes += runs[0].replicas[k].forward_passes;
  m->cost.bytes = gs_llm_decode_weight_bytes(&sc.engine.shape) * passes;

  m->runs = calloc(n_runs, sizeof *m->runs);
  if (!m->runs) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu run records", n_runs);
  m->n_runs = n_runs;
  gs_dvec all = {0};
  gs_status status = GS_OK;
  for (size_t r = 0; r < n_runs && status == GS_OK; r++) {
    const gs_llm_run_result *run = &runs[r];
    gs_run_record *rr = &m->runs[r];
    rr->ranks = calloc((size_t)run->world_size, sizeof *rr->ranks);
    if (!rr->ranks) {
      status = gs_error(GS_ERR_NOMEM, "cannot allocate rank records");
      break;
    }
    rr->n_ranks = (size_t)run->world_size;
    gs_dvec steps = {0};
    for (int k = 0; k < run->world_size && status == GS_OK; k++) {
      const gs_llm_replica_result *rep = &run->replicas[k];
      gs_rank_record *rec = &rr->ranks[k];
      rec->rank = k;
      rec->device = rep->device;
      snprintf(rec->host, sizeof rec->host, "%s",
               config->places ? config->places[k].host : gs_hostname());
      rec->status = rep->status;
      snprintf(rec->error, sizeof rec->error, "%s", rep->error);
      if (rep->status != GS_OK && m->status == GS_OK && rep->status != GS_ERR_ABORTED) {
        m->status = rep->status;
        snprintf(m->error, sizeof m->error, "rank %d: %s", k, rep->error);
      }
      rec->items_per_step = rep->generated_tokens;
      rec->first_iteration_seconds = rep->cold_seconds;
      if (verification) rec->verification = verification[k];
      gs_dvec lat = {0};
      for (size_t i = 0; i < rep->n_requests && status == GS_OK; i++) {
        const gs_llm_request_record *q = &rep->requests[i];
        if (!counted(q)) continue;
        status = gs_dvec_push(&lat, q->latency);
        if (status == GS_OK) status = gs_dvec_push(&steps, q->latency);
        if (status == GS_OK) status = gs_dvec_push(&all, q->latency);
      }
      rec->wall_seconds = lat.v;
      rec->n_samples = lat.n;
    }
    rr->step_seconds = steps.v;
    rr->n_steps = steps.n;
  }
  if (status == GS_OK && all.n > 0) status = gs_stats_compute(all.v, all.n, &m->aggregate.step);
  gs_dvec_free(&all);
  gs_llm_measurement_totals(runs, n_runs, m);
  // Combined verification: failed if any rank failed, passed if all passed.
  m->verification.status = GS_VERIFY_SKIPPED;
  snprintf(m->verification.detail, sizeof m->verification.detail, "%s",
           config->backend == GS_BACKEND_CPU ? cpu_reference : "not verified");
  const int replicas = config->world_size / (int)gs_llm_options_replica_ranks(o);
  for (int k = 0; verification && k < replicas; k++) {
    const gs_verification *v = &verification[k];
    if (v->max_abs_error > m->verification.max_abs_error)
      m->verification.max_abs_error = v->max_abs_error;
    if (v->tolerance > m->verification.tolerance) m->verification.tolerance = v->tolerance;
    m->verification.mismatches += v->mismatches;
    if (v->status == GS_VERIFY_FAILED || m->verification.status == GS_VERIFY_SKIPPED) {
      if (m->verification.status != GS_VERIFY_FAILED) {
        m->verification.status = v->status;
        snprintf(m->verification.detail, sizeof m->verification.detail, "rank %d: %s", k,
                 v->detail);
      }
    }
  }
  if (status != GS_OK) m->status = status;
  if (m->status == GS_OK && m->verification.status == GS_VERIFY_FAILED) {
    m->status = GS_ERR_VERIFY;
    snprintf(m->error, sizeof m->error, "%s: %s",
             config->backend == GS_BACKEND_CUDA ? "GPU logits differ from the CPU reference"
                                                : "the split replica differs from the whole model",
             m->verification.detail);
  }
  return status;
}

/* See llm_measure.h. */
void gs_llm_measurement_totals(const gs_llm_run_result *runs, size_t n_runs, gs_measurement *m) {
  double seconds = 0.0, tokens = 0.0, slowest_cold = -1.0;
  for (size_t r = 0; r < n_runs; r++) {
    seconds += runs[r].seconds;
    for (int k = 0; k < runs[r].world_size; k++) {
      const gs_llm_replica_result *rep = &runs[r].replicas[k];
      if (rep->cold_seconds > slowest_cold) slowest_cold = rep->cold_seconds;
      tokens += (double)rep->generated_tokens;
    }
  }
  m->aggregate.throughput = seconds > 0.0 ? tokens / seconds : 0.0;
  m->aggregate.cold_start_ratio =
      slowest_cold > 0.0 && m->aggregate.step.n
          ? gs_stats_cold_start_ratio(slowest_cold, m->aggregate.step.median)
          : 0.0;
  if (m->verification.status == GS_VERIFY_SKIPPED && strcmp(m->backend, "cpu") == 0)
    snprintf(m->verification.detail, sizeof m->verification.detail, "%s", cpu_reference);
}

/* ---- the typed summary ----------------------------------------------------- */

/* x, or NaN when it is not finite: what the document's null reads as. */
static double finite_or_nan(double x) {
  return isfinite(x) ? x : NAN;
}

/* The samples of one outcome while they are gathered. */
typedef struct {
  gs_dvec ttft, tpot, latency;
  uint64_t ok, timed_out, failed, tokens;
} outcome_samples;

static gs_status collect(const gs_llm_replica_result *rep, outcome_samples *oc) {
  for (size_t i = 0; i < rep->n_requests; i++) {
    const gs_llm_request_record *q = &rep->requests[i];
    if (q->status == GS_LLM_REQ_OK)
      oc->ok++;
    else if (q->status == GS_LLM_REQ_TIMED_OUT)
      oc->timed_out++;
    else
      oc->failed++;
    if (q->status == GS_LLM_REQ_OK) oc->tokens += q->output_tokens;
    if (!counted(q)) continue;
    GS_TRY(gs_dvec_push(&oc->latency, q->latency));
    GS_TRY(gs_dvec_push(&oc->ttft, q->ttft));
    if (isfinite(q->tpot)) GS_TRY(gs_dvec_push(&oc->tpot, q->tpot));
  }
  return GS_OK;
}

static void samples_free(outcome_samples *oc) {
  gs_dvec_free(&oc->ttft);
  gs_dvec_free(&oc->tpot);
  gs_dvec_free(&oc->latency);
}

/* Statistics of `l`; n == 0 when there are none or they cannot be computed. */
static void stats_of(const gs_dvec *l, gs_stats *s) {
  memset(s, 0, sizeof *s);
  if (l->n > 0 && gs_stats_compute(l->v, l->n, s) != GS_OK) memset(s, 0, sizeof *s);
}

/* The outcome of gathered samples over `seconds` of work. */
static void outcome_of(const outcome_samples *oc, double seconds, gs_llm_outcome *out) {
  memset(out, 0, sizeof *out);
  out->ok = oc->ok;
  out->timed_out = oc->timed_out;
  out->failed = oc->failed;
  out->samples = oc->ok + oc->timed_out + oc->failed;
  out->success_rate = finite_or_nan(out->samples ? (double)oc->ok / (double)out->samples : NAN);
  out->generated_tokens = oc->tokens;
  out->tokens_per_second = finite_or_nan(seconds > 0 ? (double)oc->tokens / seconds : NAN);
  stats_of(&oc->ttft, &out->ttft);
  stats_of(&oc->tpot, &out->tpot);
  stats_of(&oc->latency, &out->latency);
}

/* A statistic's field, or NaN when it has no samples. */
static double stat_or_nan(const gs_stats *s, double field) {
  return s->n ? finite_or_nan(field) : NAN;
}

/* Rank k (replica) over all runs; devices[] from the measurement's. */
static gs_status rank_summary(const gs_llm_run_result *runs, size_t n_runs, int k, int tp,
                              const gs_measurement *m, gs_llm_rank_summary *out) {
  memset(out, 0, sizeof *out);
  outcome_samples oc = {0};
  gs_status status = GS_OK;
  for (size_t r = 0; r < n_runs && status == GS_OK; r++) {
    status = collect(&runs[r].replicas[k], &oc);
    out->busy_seconds += runs[r].replicas[k].busy_seconds;
  }
  out->rank = k;
  out->device = runs[0].replicas[k].device;
  for (int j = 0; tp > 1 && j < tp && j < GS_MAX_RANKS; j++) {
    const int at = k * tp + j;
    out->devices[j] = at < m->world_size && at < GS_MAX_RANKS && m->devices[at] >= 0
                          ? m->devices[at] : -1;
  }
  outcome_of(&oc, out->busy_seconds, &out->outcome);
  samples_free(&oc);
  return status;
}

gs_status gs_llm_goodput(const gs_slo *slo, const gs_llm_run_result *runs, size_t n_runs,
                         gs_slo_goodput *out) {
  size_t n = 0;
  double seconds = 0.0;
  for (size_t r = 0; r < n_runs; r++)
    for (int k = 0; k < runs[r].world_size; k++) n += runs[r].replicas[k].n_requests;
  gs_slo_request *q = malloc((n ? n : 1) * sizeof *q);
  size_t *sizes = calloc(n_runs ? n_runs : 1, sizeof *sizes);
  if (!q || !sizes) {
    free(q), free(sizes);
    return gs_error(GS_ERR_NOMEM, "cannot gather %zu requests for the goodput", n);
  }
  n = 0;
  for (size_t r = 0; r < n_runs; r++) {
    seconds += runs[r].seconds;
    for (int k = 0; k < runs[r].world_size; k++)
      for (size_t i = 0; i < runs[r].replicas[k].n_requests; i++) {
        const gs_llm_request_record *x = &runs[r].replicas[k].requests[i];
        if (x->cold) continue;
        q[n++] = (gs_slo_request){x->status == GS_LLM_REQ_OK, x->ttft, x->tpot, x->latency,
                                  (double)x->output_tokens, x->arrival};
        sizes[r]++;
      }
  }
  gs_status status = gs_slo_goodput_compute(slo, q, n, sizes, n_runs, seconds, out);
  free(q), free(sizes);
  return status;
}

gs_status gs_llm_summary_compute(const gs_llm_options *o, const gs_llm_run_result *runs,
                                 size_t n_runs, const gs_measurement *m, double peak_bandwidth,
                                 gs_llm_summary *out) {
  memset(out, 0, sizeof *out);
  const gs_llm_shape s = gs_llm_options_shape(o);
  out->scenario = o->scenario;
  out->world_size = m->world_size;
  out->status = m->status;
  out->parameters = gs_llm_parameter_count(&s);
  out->decode_weight_bytes = gs_llm_decode_weight_bytes(&s);
  out->dispatch = o->dispatch;
  out->batch = o->scenario == GS_LLM_SINGLE_STREAM ? 1 : o->batch;
  out->tensor_parallel = (int)o->tp;
  out->gpus_per_replica = (int)gs_llm_options_replica_ranks(o);
  gs_llm_scenario_config sc;
  const gs_run_config none = {.world_size = m->world_size, .runs = 1};
  gs_llm_options_scenario(o, &none, &sc);
  GS_TRY(gs_llm_pp_summarize(&sc.engine, runs, n_runs, &out->pipeline));
  out->weight_bytes_per_second = out->roofline_fraction = out->latency_p90 = NAN;
  out->weight_bytes_per_second_low = out->weight_bytes_per_second_high = NAN;
  out->roofline_fraction_low = out->roofline_fraction_high = NAN;
  double seconds = 0.0;
  outcome_samples total = {0};
  gs_status status = GS_OK;
  for (size_t r = 0; r < n_runs; r++) {
    seconds += runs[r].seconds;
    for (int k = 0; k < runs[r].world_size && status == GS_OK; k++)
      status = collect(&runs[r].replicas[k], &total);
  }
  outcome_of(&total, seconds, &out->total);
  // The TPOT median's interval (its median is tpot->median below: the
  // same samples' type 7 percentile), for the weight stream's.
  gs_roofline_step tpot_median = {.median = NAN, .low = NAN, .high = NAN};
  const gs_stats_group tpots = {total.tpot.v, total.tpot.n};
  if (status == GS_OK) status = gs_roofline_step_of(&tpots, 1, &tpot_median);
  samples_free(&total);
  GS_TRY(status);
  const gs_stats *ttft = &out->total.ttft, *tpot = &out->total.tpot, *lat = &out->total.latency;
  // Decode streams every weight once per step: at batch 1 the weight bytes
  // over the time per output token is the achieved weight bandwidth, of a
  // replica's GPUs together (tensor parallelism: tp of them).
  if (tpot->n > 0 && tpot->median > 0) {
    const double peak = peak_bandwidth * (double)out->gpus_per_replica;
    out->weight_stream = 1;
    out->weight_bytes_per_second = (double)out->decode_weight_bytes / tpot->median;
    out->roofline_fraction = finite_or_nan(peak > 0 ? out->weight_bytes_per_second / peak : NAN);
    out->tpot_too_few = tpot_median.too_few;
    gs_roofline_rate_interval(out->weight_bytes_per_second, &tpot_median,
                              &out->weight_bytes_per_second_low, &out->weight_bytes_per_second_high);
    gs_roofline_rate_interval(out->roofline_fraction, &tpot_median, &out->roofline_fraction_low,
                              &out->roofline_fraction_high);
    // The rate stands alone where no peak was read (docs/workloads/llm.md).
    if (isnan(out->roofline_fraction))
      out->peak_why = strcmp(m->backend, "cpu") == 0
                          ? "the cpu backend has no GPU memory bandwidth"
                          : "the GPU's memory clock or bus width was not read";
  }
  if (o->scenario == GS_LLM_SERVER) {
    out->server.target_rate = o->rate;
    out->server.achieved_rate =
        finite_or_nan(seconds > 0 ? (double)lat->n / seconds : NAN);
    out->server.ttft_bound = o->ttft_bound;
    out->server.tpot_bound = o->tpot_bound;
    out->server.ttft_p99 = stat_or_nan(ttft, ttft->p99);
    out->server.tpot_p99 = stat_or_nan(tpot, tpot->p99);
    out->server.bounds_met = ttft->n && ttft->p99 <= o->ttft_bound &&
                             (tpot->n == 0 || tpot->p99 <= o->tpot_bound) && m->status == GS_OK;
  }
  if (o->scenario == GS_LLM_SINGLE_STREAM) out->latency_p90 = stat_or_nan(lat, lat->p90);
  out->slo = o->slo;
  GS_TRY(gs_llm_goodput(&o->slo, runs, n_runs, &out->goodput));
  const int world = n_runs ? runs[0].world_size : 0;
  for (int k = 0; k < world && k < GS_MAX_RANKS && status == GS_OK; k++) {
    status = rank_summary(runs, n_runs, k, out->gpus_per_replica, m, &out->ranks[k]);
    out->n_ranks = k + 1;
  }
  return status;
}

/* ---- JSON members --------------------------------------------------------- */

/* Per request, whether it met each target ("slo": {"ttft": true, ...,
 * "all": true}); absent without targets. */
static void put_request_slo(gs_json_build *b, cJSON *o, const gs_slo *slo,
                            const gs_llm_request_record *q) {
  if (!gs_slo_any(slo)) return;
  int met[GS_SLO_METRICS];
  const gs_slo_request r = {q->status == GS_LLM_REQ_OK, q->ttft, q->tpot, q->latency,
                            (double)q->output_tokens, q->arrival};
  const int all = gs_slo_request_met(slo, &r, met);
  cJSON *j = gs_json_put_object(b, o, "slo");
  for (int m = 0; m < GS_SLO_METRICS; m++)
    if (met[m] >= 0) gs_json_put_bool(b, j, gs_slo_metric_names[m], met[m]);
  gs_json_put_bool(b, j, "all", all);
}

static void append_requests(gs_json_build *b, cJSON *jrank, const gs_llm_replica_result *rep,
                            const gs_slo *slo) {
  cJSON *arr = gs_json_put_array(b, jrank, "requests");
  for (size_t i = 0; !b->failed && i < rep->n_requests; i++) {
    const gs_llm_request_record *q = &rep->requests[i];
    cJSON *o = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_number(b, o, "id", q->id);
    gs_json_put_number(b, o, "input_tokens", q->input_tokens);
    gs_json_put_number(b, o, "output_tokens", q->output_tokens);
    gs_json_put_number(b, o, "ttft_seconds", q->ttft);
    gs_json_put_number(b, o, "tpot_seconds", q->tpot);
    gs_json_put_number(b, o, "latency_seconds", q->latency);
    gs_json_put_string(b, o, "status", gs_llm_request_status_name(q->status));
    gs_json_put_bool(b, o, "cold", q->cold);
    gs_json_put_number(b, o, "arrival_seconds", q->arrival);
    put_request_slo(b, o, slo, q);
    gs_json_append(b, arr, o);
  }
}

static void put_outcome(gs_json_build *b, cJSON *o, const gs_llm_outcome *oc) {
  gs_json_put_u64(b, o, "samples", oc->samples);
  gs_json_put_u64(b, o, "ok", oc->ok);
  gs_json_put_u64(b, o, "timed_out", oc->timed_out);
  gs_json_put_u64(b, o, "failed", oc->failed);
  gs_json_put_number(b, o, "success_rate", oc->success_rate);
  gs_json_put_u64(b, o, "generated_tokens", oc->generated_tokens);
  gs_json_put_number(b, o, "tokens_per_second", oc->tokens_per_second);
  // gs_result_stats_to_json writes null for no samples.
  gs_json_put_item(b, o, "ttft_seconds", gs_result_stats_to_json(&oc->ttft));
  gs_json_put_item(b, o, "tpot_seconds", gs_result_stats_to_json(&oc->tpot));
  gs_json_put_item(b, o, "latency_seconds", gs_result_stats_to_json(&oc->latency));
}

gs_status gs_llm_measurement_annotate(cJSON *mjson, const gs_llm_summary *s,
                                      const gs_llm_run_result *runs, size_t n_runs) {
  gs_json_build b = {0};
  gs_json_put_string(&b, mjson, "scenario", gs_llm_scenario_names[s->scenario]);
  // The generic record report and predict read (docs/result-schema.md,
  // "parallelism"): one rank record is a replica of --tp GPUs.
  cJSON *par = gs_json_put_object(&b, mjson, "parallelism");
  gs_json_put_number(&b, par, "gpus_per_rank", s->gpus_per_replica);
  gs_json_put_string(&b, par, "option", s->pipeline.stages > 1 ? "pp" : "tp");
  cJSON *l = gs_json_put_object(&b, mjson, "llm");
  gs_json_put_string(&b, l, "note", GS_LLM_NOTE);
  gs_json_put_u64(&b, l, "parameters", s->parameters);
  gs_json_put_number(&b, l, "weight_bytes", 2.0 * (double)s->parameters);
  gs_json_put_u64(&b, l, "decode_weight_bytes", s->decode_weight_bytes);
  gs_json_put_string(&b, l, "dispatch", gs_llm_dispatch_names[s->dispatch]);
  gs_json_put_number(&b, l, "batch", (double)s->batch);
  cJSON *secs = gs_json_put_array(&b, l, "run_seconds");
  for (size_t r = 0; r < n_runs; r++) gs_json_append_number(&b, secs, runs[r].seconds);
  put_outcome(&b, l, &s->total);
  if (s->weight_stream) {
    gs_json_put_number(&b, l, "weight_bytes_per_second", s->weight_bytes_per_second);
    gs_json_put_number(&b, l, "roofline_fraction", s->roofline_fraction);
    gs_json_put_number(&b, l, "weight_bytes_per_second_low", s->weight_bytes_per_second_low);
    gs_json_put_number(&b, l, "weight_bytes_per_second_high", s->weight_bytes_per_second_high);
    gs_json_put_number(&b, l, "roofline_fraction_low", s->roofline_fraction_low);
    gs_json_put_number(&b, l, "roofline_fraction_high", s->roofline_fraction_high);
  }
  if (s->scenario == GS_LLM_SERVER) {
    cJSON *sv = gs_json_put_object(&b, l, "server");
    gs_json_put_number(&b, sv, "target_rate", s->server.target_rate);
    gs_json_put_number(&b, sv, "achieved_rate", s->server.achieved_rate);
    gs_json_put_number(&b, sv, "ttft_bound", s->server.ttft_bound);
    gs_json_put_number(&b, sv, "tpot_bound", s->server.tpot_bound);
    gs_json_put_number(&b, sv, "ttft_p99", s->server.ttft_p99);
    gs_json_put_number(&b, sv, "tpot_p99", s->server.tpot_p99);
    gs_json_put_bool(&b, sv, "bounds_met", s->server.bounds_met);
  }
  if (s->scenario == GS_LLM_SINGLE_STREAM)
    gs_json_put_number(&b, l, "latency_p90", s->latency_p90);
  if (gs_slo_any(&s->slo)) gs_slo_goodput_to_json(&b, l, &s->slo, &s->goodput);
  // Per rank (replica) over all runs, and the requests into each rank
  // record. A tensor-parallel replica names all its GPUs.
  gs_json_put_number(&b, l, "tensor_parallel", s->tensor_parallel);
  cJSON *ranks = gs_json_put_array(&b, l, "ranks");
  for (int k = 0; !b.failed && k < s->n_ranks; k++) {
    const gs_llm_rank_summary *rs = &s->ranks[k];
    cJSON *ro = gs_json_check(&b, cJSON_CreateObject());
    gs_json_put_number(&b, ro, "rank", rs->rank);
    gs_json_put_number(&b, ro, "device", rs->device);
    if (s->gpus_per_replica > 1) {
      cJSON *devs = gs_json_put_array(&b, ro, "devices");
      for (int j = 0; j < s->gpus_per_replica && j < GS_MAX_RANKS; j++)
        gs_json_append_number(&b, devs, rs->devices[j]);
    }
    put_outcome(&b, ro, &rs->outcome);
    gs_json_put_number(&b, ro, "busy_seconds", rs->busy_seconds);
    gs_json_append(&b, ranks, ro);
  }
  gs_llm_pp_to_json(&b, l, &s->pipeline);
  cJSON *jruns = cJSON_GetObjectItemCaseSensitive(mjson, "runs");
  size_t r = 0;
  for (cJSON *jr = jruns ? jruns->child : NULL; !b.failed && jr && r < n_runs; jr = jr->next, r++) {
    cJSON *jranks = cJSON_GetObjectItemCaseSensitive(jr, "ranks");
    int k = 0;
    for (cJSON *jk = jranks ? jranks->child : NULL; jk && k < runs[r].world_size;
         jk = jk->next, k++)
    {
      append_requests(&b, jk, &runs[r].replicas[k], &s->slo);
      gs_llm_pp_replica_to_json(&b, jk, &runs[r].replicas[k]);
    }
  }
  return gs_json_build_status(&b, "the llm members");
}

/* ---- the terminal paragraph ------------------------------------------------ */

/* Milliseconds with `digits` decimals, or "-" when there is no value. */
static const char *ms_text(double seconds, int digits, char *buf, size_t size) {
  if (isfinite(seconds))
    snprintf(buf, size, "%.*f ms", digits, 1e3 * seconds);
  else
    snprintf(buf, size, "-");
  return buf;
}

void gs_llm_measurement_print(FILE *out, const gs_llm_summary *s) {
  const gs_llm_outcome *t = &s->total;
  fprintf(out,
          "  llm %s on %d rank(s) (the table's median/p95/p99 are per-request latencies): "
          "%.1f tokens/s; samples %llu ok, %llu timed out, %llu failed\n",
          gs_llm_scenario_names[s->scenario], s->world_size, t->tokens_per_second,
          (unsigned long long)t->ok, (unsigned long long)t->timed_out,
          (unsigned long long)t->failed);
  char x[7][32];
  fprintf(out, "    TTFT p50 %s p99 %s; TPOT p50 %s p99 %s; latency p50 %s p90 %s p99 %s\n",
          ms_text(stat_or_nan(&t->ttft, t->ttft.p50), 2, x[0], sizeof x[0]),
          ms_text(stat_or_nan(&t->ttft, t->ttft.p99), 2, x[1], sizeof x[1]),
          ms_text(stat_or_nan(&t->tpot, t->tpot.p50), 3, x[2], sizeof x[2]),
          ms_text(stat_or_nan(&t->tpot, t->tpot.p99), 3, x[3], sizeof x[3]),
          ms_text(stat_or_nan(&t->latency, t->latency.p50), 1, x[4], sizeof x[4]),
          ms_text(stat_or_nan(&t->latency, t->latency.p90), 1, x[5], sizeof x[5]),
          ms_text(stat_or_nan(&t->latency, t->latency.p99), 1, x[6], sizeof x[6]));
  if (s->weight_stream && isfinite(s->roofline_fraction)) {
    char fraction[96];
    gs_roofline_fraction_text(s->roofline_fraction, s->roofline_fraction_low,
                              s->roofline_fraction_high, s->tpot_too_few, "requests", fraction,
                              sizeof fraction);
    fprintf(out,
            "    weight stream %.0f GB/s per replica at the median TPOT = %s of peak memory "
            "bandwidth\n",
            s->weight_bytes_per_second / 1e9, fraction);
  } else if (s->weight_stream) {
    char rate[32];
    gs_format_value(GS_UNIT_BANDWIDTH, s->weight_bytes_per_second, rate, sizeof rate);
    fprintf(out, "    weight stream %s per replica at the median TPOT; no peak known: %s\n", rate,
            s->peak_why ? s->peak_why : "no peak bandwidth");
  }
  if (s->scenario == GS_LLM_SERVER)
    fprintf(out,
            "    server: target %.3g/s, achieved %.3g/s; p99 TTFT %.3f s (bound %.3g), p99 TPOT "
            "%.4f s (bound %.3g): %s\n",
            s->server.target_rate, s->server.achieved_rate, s->server.ttft_p99,
            s->server.ttft_bound, s->server.tpot_p99, s->server.tpot_bound,
            s->server.bounds_met ? "bounds met" : "BOUNDS MISSED");
  gs_llm_pp_print(out, &s->pipeline);
  if (gs_slo_any(&s->slo)) {
    char line[1024];
    gs_slo_goodput_describe(&s->slo, &s->goodput, line, sizeof line);
    fprintf(out, "    %s\n", line);
  }
  for (int k = 0; s->n_ranks > 1 && k < s->n_ranks; k++) {
    const gs_llm_rank_summary *r = &s->ranks[k];
    fprintf(out, "    rank %d (device %d): %.1f tokens/s busy, %llu/%llu ok, latency p90 %s\n",
            r->rank, r->device, r->outcome.tokens_per_second, (unsigned long long)r->outcome.ok,
            (unsigned long long)r->outcome.samples,
            ms_text(stat_or_nan(&r->outcome.latency, r->outcome.latency.p90), 1, x[1],
                    sizeof x[1]));
  }
  fprintf(out, "    note: %s\n", GS_LLM_NOTE);
}
