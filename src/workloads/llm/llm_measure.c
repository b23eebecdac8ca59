/* From llm scenario runs to the result document (see llm_measure.h). */
#include "workloads/llm/llm_measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/dvec.h"
#include "core/timer.h"

#define GS_LLM_NOTE \
  "random weights: the generated tokens are meaningless; timing is faithful to the model's shapes"

/* Ok samples outside the cold batch: the ones the statistics describe. */
static int counted(const gs_llm_request_record *q) {
  return q->status == GS_LLM_REQ_OK && !q->cold;
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
  double seconds = 0.0, tokens = 0.0, slowest_cold = -1.0;
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
    seconds += run->seconds;
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
      if (rep->cold_seconds > slowest_cold) slowest_cold = rep->cold_seconds;
      tokens += (double)rep->generated_tokens;
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
  m->aggregate.throughput = seconds > 0.0 ? tokens / seconds : 0.0;
  if (slowest_cold > 0.0 && m->aggregate.step.n)
    m->aggregate.cold_start_ratio =
        gs_stats_cold_start_ratio(slowest_cold, m->aggregate.step.median);
  // Combined verification: failed if any rank failed, passed if all passed.
  m->verification.status = GS_VERIFY_SKIPPED;
  snprintf(m->verification.detail, sizeof m->verification.detail, "%s",
           config->backend == GS_BACKEND_CPU ? "the CPU backend is the reference" : "not verified");
  const int replicas = config->world_size / (int)(o->tp ? o->tp : 1);
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
    snprintf(m->error, sizeof m->error, "GPU logits differ from the CPU reference: %s",
             m->verification.detail);
  }
  return status;
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
  out->weight_bytes_per_second = out->roofline_fraction = out->latency_p90 = NAN;
  double seconds = 0.0;
  outcome_samples total = {0};
  gs_status status = GS_OK;
  for (size_t r = 0; r < n_runs; r++) {
    seconds += runs[r].seconds;
    for (int k = 0; k < runs[r].world_size && status == GS_OK; k++)
      status = collect(&runs[r].replicas[k], &total);
  }
  outcome_of(&total, seconds, &out->total);
  samples_free(&total);
  GS_TRY(status);
  const gs_stats *ttft = &out->total.ttft, *tpot = &out->total.tpot, *lat = &out->total.latency;
  // Decode streams every weight once per step: at batch 1 the weight bytes
  // over the time per output token is the achieved weight bandwidth, of a
  // replica's GPUs together (tensor parallelism: tp of them).
  if (tpot->n > 0 && tpot->median > 0) {
    const double peak = peak_bandwidth * (double)o->tp;
    out->weight_stream = 1;
    out->weight_bytes_per_second = (double)out->decode_weight_bytes / tpot->median;
    out->roofline_fraction = finite_or_nan(peak > 0 ? out->weight_bytes_per_second / peak : NAN);
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
  const int world = n_runs ? runs[0].world_size : 0;
  for (int k = 0; k < world && k < GS_MAX_RANKS && status == GS_OK; k++) {
    status = rank_summary(runs, n_runs, k, out->tensor_parallel, m, &out->ranks[k]);
    out->n_ranks = k + 1;
  }
  return status;
}

/* ---- JSON members --------------------------------------------------------- */

static cJSON *number_or_null(double x) {
  return isfinite(x) ? cJSON_CreateNumber(x) : cJSON_CreateNull();
}

static cJSON *requests_json(const gs_llm_replica_result *rep) {
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; arr && i < rep->n_requests; i++) {
    const gs_llm_request_record *q = &rep->requests[i];
    cJSON *o = cJSON_CreateObject();
    if (!o) break;
    cJSON_AddNumberToObject(o, "id", q->id);
    cJSON_AddNumberToObject(o, "input_tokens", q->input_tokens);
    cJSON_AddNumberToObject(o, "output_tokens", q->output_tokens);
    cJSON_AddItemToObject(o, "ttft_seconds", number_or_null(q->ttft));
    cJSON_AddItemToObject(o, "tpot_seconds", number_or_null(q->tpot));
    cJSON_AddItemToObject(o, "latency_seconds", number_or_null(q->latency));
    cJSON_AddStringToObject(o, "status", gs_llm_request_status_name(q->status));
    cJSON_AddBoolToObject(o, "cold", q->cold);
    cJSON_AddItemToObject(o, "arrival_seconds", number_or_null(q->arrival));
    cJSON_AddItemToArray(arr, o);
  }
  return arr;
}

static cJSON *stats_json(const gs_stats *s) {
  return s->n ? gs_result_stats_to_json(s) : cJSON_CreateNull();
}

static void add_outcome(cJSON *o, const gs_llm_outcome *oc) {
  cJSON_AddNumberToObject(o, "samples", (double)oc->samples);
  cJSON_AddNumberToObject(o, "ok", (double)oc->ok);
  cJSON_AddNumberToObject(o, "timed_out", (double)oc->timed_out);
  cJSON_AddNumberToObject(o, "failed", (double)oc->failed);
  cJSON_AddItemToObject(o, "success_rate", number_or_null(oc->success_rate));
  cJSON_AddNumberToObject(o, "generated_tokens", (double)oc->generated_tokens);
  cJSON_AddItemToObject(o, "tokens_per_second", number_or_null(oc->tokens_per_second));
  cJSON_AddItemToObject(o, "ttft_seconds", stats_json(&oc->ttft));
  cJSON_AddItemToObject(o, "tpot_seconds", stats_json(&oc->tpot));
  cJSON_AddItemToObject(o, "latency_seconds", stats_json(&oc->latency));
}

gs_status gs_llm_measurement_annotate(cJSON *mjson, const gs_llm_summary *s,
                                      const gs_llm_run_result *runs, size_t n_runs) {
  cJSON_AddStringToObject(mjson, "scenario", gs_llm_scenario_names[s->scenario]);
  // The generic record report and predict read (docs/result-schema.md,
  // "parallelism"): one rank record is a replica of --tp GPUs.
  cJSON *par = cJSON_AddObjectToObject(mjson, "parallelism");
  if (!par || !cJSON_AddNumberToObject(par, "gpus_per_rank", s->tensor_parallel) ||
      !cJSON_AddStringToObject(par, "option", "tp"))
    return gs_error(GS_ERR_NOMEM, "cannot build the parallelism member");
  cJSON *l = cJSON_AddObjectToObject(mjson, "llm");
  if (!l) return gs_error(GS_ERR_NOMEM, "cannot build the llm member");
  cJSON_AddStringToObject(l, "note", GS_LLM_NOTE);
  cJSON_AddNumberToObject(l, "parameters", (double)s->parameters);
  cJSON_AddNumberToObject(l, "weight_bytes", 2.0 * (double)s->parameters);
  cJSON_AddNumberToObject(l, "decode_weight_bytes", (double)s->decode_weight_bytes);
  cJSON_AddStringToObject(l, "dispatch", gs_llm_dispatch_names[s->dispatch]);
  cJSON_AddNumberToObject(l, "batch", (double)s->batch);
  cJSON *secs = cJSON_AddArrayToObject(l, "run_seconds");
  for (size_t r = 0; r < n_runs; r++) cJSON_AddItemToArray(secs, cJSON_CreateNumber(runs[r].seconds));
  add_outcome(l, &s->total);
  if (s->weight_stream) {
    cJSON_AddNumberToObject(l, "weight_bytes_per_second", s->weight_bytes_per_second);
    cJSON_AddItemToObject(l, "roofline_fraction", number_or_null(s->roofline_fraction));
  }
  if (s->scenario == GS_LLM_SERVER) {
    cJSON *sv = cJSON_AddObjectToObject(l, "server");
    cJSON_AddNumberToObject(sv, "target_rate", s->server.target_rate);
    cJSON_AddItemToObject(sv, "achieved_rate", number_or_null(s->server.achieved_rate));
    cJSON_AddNumberToObject(sv, "ttft_bound", s->server.ttft_bound);
    cJSON_AddNumberToObject(sv, "tpot_bound", s->server.tpot_bound);
    cJSON_AddItemToObject(sv, "ttft_p99", number_or_null(s->server.ttft_p99));
    cJSON_AddItemToObject(sv, "tpot_p99", number_or_null(s->server.tpot_p99));
    cJSON_AddBoolToObject(sv, "bounds_met", s->server.bounds_met);
  }
  if (s->scenario == GS_LLM_SINGLE_STREAM)
    cJSON_AddItemToObject(l, "latency_p90", number_or_null(s->latency_p90));
  // Per rank (replica) over all runs, and the requests into each rank
  // record. A tensor-parallel replica names all its GPUs.
  cJSON_AddNumberToObject(l, "tensor_parallel", s->tensor_parallel);
  cJSON *ranks = cJSON_AddArrayToObject(l, "ranks");
  for (int k = 0; k < s->n_ranks; k++) {
    const gs_llm_rank_summary *rs = &s->ranks[k];
    cJSON *ro = cJSON_CreateObject();
    cJSON_AddNumberToObject(ro, "rank", rs->rank);
    cJSON_AddNumberToObject(ro, "device", rs->device);
    if (s->tensor_parallel > 1) {
      cJSON *devs = cJSON_AddArrayToObject(ro, "devices");
      for (int j = 0; j < s->tensor_parallel && j < GS_MAX_RANKS; j++)
        cJSON_AddItemToArray(devs, cJSON_CreateNumber(rs->devices[j]));
    }
    add_outcome(ro, &rs->outcome);
    cJSON_AddNumberToObject(ro, "busy_seconds", rs->busy_seconds);
    cJSON_AddItemToArray(ranks, ro);
  }
  cJSON *jruns = cJSON_GetObjectItemCaseSensitive(mjson, "runs");
  size_t r = 0;
  for (cJSON *jr = jruns ? jruns->child : NULL; jr && r < n_runs; jr = jr->next, r++) {
    cJSON *jranks = cJSON_GetObjectItemCaseSensitive(jr, "ranks");
    int k = 0;
    for (cJSON *jk = jranks ? jranks->child : NULL; jk && k < runs[r].world_size;
         jk = jk->next, k++)
      cJSON_AddItemToObject(jk, "requests", requests_json(&runs[r].replicas[k]));
  }
  return GS_OK;
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
  if (s->weight_stream && isfinite(s->roofline_fraction))
    fprintf(out,
            "    weight stream %.0f GB/s per replica at the median TPOT = %.1f%% of peak memory "
            "bandwidth\n",
            s->weight_bytes_per_second / 1e9, 100.0 * s->roofline_fraction);
  if (s->scenario == GS_LLM_SERVER)
    fprintf(out,
            "    server: target %.3g/s, achieved %.3g/s; p99 TTFT %.3f s (bound %.3g), p99 TPOT "
            "%.4f s (bound %.3g): %s\n",
            s->server.target_rate, s->server.achieved_rate, s->server.ttft_p99,
            s->server.ttft_bound, s->server.tpot_p99, s->server.tpot_bound,
            s->server.bounds_met ? "bounds met" : "BOUNDS MISSED");
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
