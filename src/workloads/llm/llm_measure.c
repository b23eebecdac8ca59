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
      snprintf(rec->host, sizeof rec->host, "%s", gs_hostname());
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

typedef struct {
  gs_dvec ttft, tpot, latency;
  uint64_t ok, timed_out, failed, tokens;
} outcome;

static gs_status collect(const gs_llm_replica_result *rep, outcome *oc) {
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

static void outcome_free(outcome *oc) {
  gs_dvec_free(&oc->ttft);
  gs_dvec_free(&oc->tpot);
  gs_dvec_free(&oc->latency);
}

static cJSON *stats_json(const gs_dvec *l, gs_stats *s) {
  memset(s, 0, sizeof *s);
  if (l->n == 0 || gs_stats_compute(l->v, l->n, s) != GS_OK) {
    memset(s, 0, sizeof *s);
    return cJSON_CreateNull();
  }
  return gs_result_stats_to_json(s);
}

static void add_outcome(cJSON *o, const outcome *oc, double seconds, gs_stats *ttft, gs_stats *tpot,
                        gs_stats *lat) {
  uint64_t total = oc->ok + oc->timed_out + oc->failed;
  cJSON_AddNumberToObject(o, "samples", (double)total);
  cJSON_AddNumberToObject(o, "ok", (double)oc->ok);
  cJSON_AddNumberToObject(o, "timed_out", (double)oc->timed_out);
  cJSON_AddNumberToObject(o, "failed", (double)oc->failed);
  cJSON_AddItemToObject(o, "success_rate",
                        number_or_null(total ? (double)oc->ok / (double)total : NAN));
  cJSON_AddNumberToObject(o, "generated_tokens", (double)oc->tokens);
  cJSON_AddItemToObject(o, "tokens_per_second",
                        number_or_null(seconds > 0 ? (double)oc->tokens / seconds : NAN));
  cJSON_AddItemToObject(o, "ttft_seconds", stats_json(&oc->ttft, ttft));
  cJSON_AddItemToObject(o, "tpot_seconds", stats_json(&oc->tpot, tpot));
  cJSON_AddItemToObject(o, "latency_seconds", stats_json(&oc->latency, lat));
}

gs_status gs_llm_measurement_annotate(cJSON *mjson, const gs_llm_options *o,
                                      const gs_llm_run_result *runs, size_t n_runs,
                                      const gs_measurement *m, double peak_bandwidth) {
  gs_llm_shape s = gs_llm_options_shape(o);
  cJSON_AddStringToObject(mjson, "scenario", gs_llm_scenario_names[o->scenario]);
  cJSON *l = cJSON_AddObjectToObject(mjson, "llm");
  if (!l) return gs_error(GS_ERR_NOMEM, "cannot build the llm member");
  cJSON_AddStringToObject(l, "note", GS_LLM_NOTE);
  cJSON_AddNumberToObject(l, "parameters", (double)gs_llm_parameter_count(&s));
  cJSON_AddNumberToObject(l, "weight_bytes", 2.0 * (double)gs_llm_parameter_count(&s));
  cJSON_AddNumberToObject(l, "decode_weight_bytes", (double)gs_llm_decode_weight_bytes(&s));
  cJSON_AddStringToObject(l, "dispatch", gs_llm_dispatch_names[o->dispatch]);
  cJSON_AddNumberToObject(l, "batch", o->scenario == GS_LLM_SINGLE_STREAM ? 1.0 : (double)o->batch);
  cJSON *secs = cJSON_AddArrayToObject(l, "run_seconds");
  double seconds = 0.0;
  outcome total = {0};
  gs_status status = GS_OK;
  for (size_t r = 0; r < n_runs; r++) {
    seconds += runs[r].seconds;
    cJSON_AddItemToArray(secs, cJSON_CreateNumber(runs[r].seconds));
    for (int k = 0; k < runs[r].world_size && status == GS_OK; k++)
      status = collect(&runs[r].replicas[k], &total);
  }
  gs_stats ttft, tpot, lat;
  add_outcome(l, &total, seconds, &ttft, &tpot, &lat);
  outcome_free(&total);
  GS_TRY(status);
  // Decode streams every weight once per step: at batch 1 the weight bytes
  // over the time per output token is the achieved weight bandwidth, of a
  // replica's GPUs together (tensor parallelism: tp of them).
  if (tpot.n > 0 && tpot.median > 0) {
    double bw = (double)gs_llm_decode_weight_bytes(&s) / tpot.median;
    double peak = peak_bandwidth * (double)o->tp;
    cJSON_AddNumberToObject(l, "weight_bytes_per_second", bw);
    cJSON_AddItemToObject(l, "roofline_fraction", number_or_null(peak > 0 ? bw / peak : NAN));
  }
  if (o->scenario == GS_LLM_SERVER) {
    cJSON *sv = cJSON_AddObjectToObject(l, "server");
    cJSON_AddNumberToObject(sv, "target_rate", o->rate);
    cJSON_AddItemToObject(sv, "achieved_rate",
                          number_or_null(seconds > 0 ? (double)(lat.n) / seconds : NAN));
    cJSON_AddNumberToObject(sv, "ttft_bound", o->ttft_bound);
    cJSON_AddNumberToObject(sv, "tpot_bound", o->tpot_bound);
    cJSON_AddItemToObject(sv, "ttft_p99", number_or_null(ttft.n ? ttft.p99 : NAN));
    cJSON_AddItemToObject(sv, "tpot_p99", number_or_null(tpot.n ? tpot.p99 : NAN));
    cJSON_AddBoolToObject(sv, "bounds_met",
                          ttft.n && ttft.p99 <= o->ttft_bound &&
                              (tpot.n == 0 || tpot.p99 <= o->tpot_bound) && m->status == GS_OK);
  }
  if (o->scenario == GS_LLM_SINGLE_STREAM)
    cJSON_AddItemToObject(l, "latency_p90", number_or_null(lat.n ? lat.p90 : NAN));
  // Per rank (replica) over all runs, and the requests into each rank
  // record. A tensor-parallel replica names all its GPUs.
  const int tp = (int)o->tp;
  cJSON_AddNumberToObject(l, "tensor_parallel", tp);
  const cJSON *all_devices = cJSON_GetObjectItemCaseSensitive(mjson, "devices");
  cJSON *ranks = cJSON_AddArrayToObject(l, "ranks");
  int world = n_runs ? runs[0].world_size : 0;
  for (int k = 0; k < world && status == GS_OK; k++) {
    outcome oc = {0};
    double busy = 0.0;
    for (size_t r = 0; r < n_runs && status == GS_OK; r++) {
      status = collect(&runs[r].replicas[k], &oc);
      busy += runs[r].replicas[k].busy_seconds;
    }
    cJSON *ro = cJSON_CreateObject();
    cJSON_AddNumberToObject(ro, "rank", k);
    cJSON_AddNumberToObject(ro, "device", runs[0].replicas[k].device);
    if (tp > 1) {
      cJSON *devs = cJSON_AddArrayToObject(ro, "devices");
      for (int j = 0; j < tp; j++) {
        const cJSON *dev = cJSON_GetArrayItem(all_devices, k * tp + j);
        cJSON_AddItemToArray(devs, cJSON_CreateNumber(cJSON_IsNumber(dev) ? dev->valuedouble : -1));
      }
    }
    gs_stats a, b, c;
    add_outcome(ro, &oc, busy, &a, &b, &c);
    cJSON_AddNumberToObject(ro, "busy_seconds", busy);
    cJSON_AddItemToArray(ranks, ro);
    outcome_free(&oc);
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
  return status;
}

static double member(const cJSON *o, const char *a, const char *b) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
  if (b) x = cJSON_GetObjectItemCaseSensitive(x, b);
  return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* Milliseconds with `digits` decimals, or "-" when there is no value. */
static const char *ms_text(double seconds, int digits, char *buf, size_t size) {
  if (isfinite(seconds))
    snprintf(buf, size, "%.*f ms", digits, 1e3 * seconds);
  else
    snprintf(buf, size, "-");
  return buf;
}

void gs_llm_measurement_print(FILE *out, const cJSON *mjson) {
  const cJSON *l = cJSON_GetObjectItemCaseSensitive(mjson, "llm");
  const cJSON *sc = cJSON_GetObjectItemCaseSensitive(mjson, "scenario");
  if (!l) return;
  fprintf(out,
          "  llm %s on %g rank(s) (the table's median/p95/p99 are per-sample latencies): "
          "%.1f tokens/s; samples %g ok, %g timed out, %g failed\n",
          cJSON_IsString(sc) ? sc->valuestring : "?", member(mjson, "world_size", NULL),
          member(l, "tokens_per_second", NULL), member(l, "ok", NULL), member(l, "timed_out", NULL),
          member(l, "failed", NULL));
  char t[7][32];
  fprintf(out, "    TTFT p50 %s p99 %s; TPOT p50 %s p99 %s; latency p50 %s p90 %s p99 %s\n",
          ms_text(member(l, "ttft_seconds", "p50"), 2, t[0], sizeof t[0]),
          ms_text(member(l, "ttft_seconds", "p99"), 2, t[1], sizeof t[1]),
          ms_text(member(l, "tpot_seconds", "p50"), 3, t[2], sizeof t[2]),
          ms_text(member(l, "tpot_seconds", "p99"), 3, t[3], sizeof t[3]),
          ms_text(member(l, "latency_seconds", "p50"), 1, t[4], sizeof t[4]),
          ms_text(member(l, "latency_seconds", "p90"), 1, t[5], sizeof t[5]),
          ms_text(member(l, "latency_seconds", "p99"), 1, t[6], sizeof t[6]));
  double frac = member(l, "roofline_fraction", NULL);
  if (isfinite(frac))
    fprintf(out,
            "    weight stream %.0f GB/s per replica at the median TPOT = %.1f%% of peak memory "
            "bandwidth\n",
            member(l, "weight_bytes_per_second", NULL) / 1e9, 100.0 * frac);
  const cJSON *sv = cJSON_GetObjectItemCaseSensitive(l, "server");
  if (sv)
    fprintf(out,
            "    server: target %.3g/s, achieved %.3g/s; p99 TTFT %.3f s (bound %.3g), p99 TPOT "
            "%.4f s (bound %.3g): %s\n",
            member(sv, "target_rate", NULL), member(sv, "achieved_rate", NULL),
            member(sv, "ttft_p99", NULL), member(sv, "ttft_bound", NULL),
            member(sv, "tpot_p99", NULL), member(sv, "tpot_bound", NULL),
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sv, "bounds_met")) ? "bounds met"
                                                                             : "BOUNDS MISSED");
  const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(l, "ranks");
  if (cJSON_GetArraySize(ranks) > 1)
    for (const cJSON *r = ranks->child; r; r = r->next)
      fprintf(out, "    rank %g (device %g): %.1f tokens/s busy, %g/%g ok, latency p90 %s\n",
              member(r, "rank", NULL), member(r, "device", NULL),
              member(r, "tokens_per_second", NULL), member(r, "ok", NULL),
              member(r, "samples", NULL),
              ms_text(member(r, "latency_seconds", "p90"), 1, t[1], sizeof t[1]));
  fprintf(out, "    note: %s\n", GS_LLM_NOTE);
}
