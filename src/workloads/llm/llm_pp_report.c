/* The stages of a pipelined llm replica (llm_pp_report.h). */
#include "workloads/llm/llm_pp_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/scaling.h"
#include "workloads/llm/llm_pp.h"
#include "workloads/llm/llm_pp_samples.h"

/* The samples of replica `rep` into busy/idle ([i * P + s]) from `at`:
 * its per-call blocks, or without them its run's totals as one sample.
 * Returns how many. */
static size_t replica_samples(const gs_llm_replica_result *rep, uint32_t P, double *busy,
                              double *idle, int *per_call) {
  const gs_llm_pp_samples *s = rep->pp_samples;
  if (s && s->stages == P) {
    for (size_t i = 0; i < s->n; i++)
      for (uint32_t st = 0; st < P; st++) {
        busy[i * P + st] = s->busy[st * GS_LLM_PP_SAMPLES + i];
        idle[i * P + st] = s->seconds[i] - busy[i * P + st];
      }
    return s->n;
  }
  *per_call = 0;
  if (!(rep->pass_seconds > 0.0)) return 0;
  for (uint32_t st = 0; st < P; st++) {
    busy[st] = rep->stage_busy[st];
    idle[st] = rep->pass_seconds - rep->stage_busy[st];
  }
  return 1;
}

gs_status gs_llm_pp_summarize(const gs_llm_engine_config *e, const gs_llm_run_result *runs,
                              size_t n_runs, gs_llm_pp_summary *out) {
  memset(out, 0, sizeof *out);
  out->stages = e->pp > 1 ? e->pp : 1;
  out->bubble = (gs_bubble){.bubble = NAN, .low = NAN, .high = NAN, .formula = NAN,
                            .imbalance = NAN, .imbalance_low = NAN, .imbalance_high = NAN,
                            .slowest = -1};
  if (out->stages == 1) return GS_OK;
  const uint32_t P = out->stages;
  out->micro_batches = (uint32_t)gs_llm_pp_groups(e, e->max_batch);
  memcpy(out->first_layer, e->stage_first, sizeof out->first_layer);
  size_t cap = 0;
  for (size_t r = 0; r < n_runs; r++)
    for (int k = 0; k < runs[r].world_size; k++) {
      const gs_llm_replica_result *rep = &runs[r].replicas[k];
      if (rep->stages != P) continue; /* a replica that never ran its engine */
      out->pass_seconds += rep->pass_seconds;
      for (uint32_t s = 0; s < P; s++) out->busy[s] += rep->stage_busy[s];
      cap += rep->pp_samples ? rep->pp_samples->n : 1;
    }
  double *busy = malloc((cap ? cap : 1) * P * sizeof *busy);
  double *idle = malloc((cap ? cap : 1) * P * sizeof *idle);
  size_t *counts = calloc(n_runs ? n_runs : 1, sizeof *counts);
  gs_status st = GS_OK;
  if (!busy || !idle || !counts) {
    st = gs_error(GS_ERR_NOMEM, "out of memory for the pipeline's samples");
  } else {
    size_t at = 0;
    out->per_call = 1;
    for (size_t r = 0; r < n_runs; r++) {
      for (int k = 0; k < runs[r].world_size; k++) {
        const gs_llm_replica_result *rep = &runs[r].replicas[k];
        if (rep->stages != P) continue;
        const size_t n = replica_samples(rep, P, busy + at * P, idle + at * P, &out->per_call);
        counts[r] += n;
        at += n;
      }
      out->runs += counts[r] > 0;
    }
    const gs_bubble_samples in = {(int)P, (int)out->micro_batches, n_runs, counts, busy, idle};
    st = gs_bubble_compute(&in, &out->bubble);
  }
  free(busy), free(idle), free(counts);
  return st;
}

void gs_llm_pp_to_json(gs_json_build *b, cJSON *l, const gs_llm_pp_summary *p) {
  if (p->stages <= 1) return;
  cJSON *pp = gs_json_put_object(b, l, "pipeline");
  gs_json_put_number(b, pp, "stages", p->stages);
  gs_json_put_number(b, pp, "micro_batches", p->micro_batches);
  gs_json_put_number(b, pp, "pass_seconds", p->pass_seconds);
  gs_bubble_to_json(b, pp, &p->bubble);
  gs_json_put_number(b, pp, "samples", (double)p->bubble.samples);
  gs_json_put_string(b, pp, "sample", p->per_call ? "calls" : "run");
  cJSON *stages = gs_json_put_array(b, pp, "per_stage");
  for (uint32_t s = 0; !b->failed && s < p->stages; s++) {
    cJSON *o = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_number(b, o, "stage", s);
    gs_json_put_number(b, o, "first_layer", p->first_layer[s]);
    gs_json_put_number(b, o, "layers", p->first_layer[s + 1] - p->first_layer[s]);
    gs_json_put_number(b, o, "busy_seconds", p->busy[s]);
    gs_json_put_number(b, o, "idle_seconds", p->pass_seconds - p->busy[s]);
    gs_json_append(b, stages, o);
  }
}

void gs_llm_pp_replica_to_json(gs_json_build *b, cJSON *rank, const gs_llm_replica_result *rep) {
  if (rep->stages < 2) return;
  if (rep->pp_samples) {
    gs_llm_pp_samples_to_json(b, rank, rep->pp_samples);
    return;
  }
  if (!(rep->pass_seconds > 0.0)) return;
  gs_llm_pp_samples *one = gs_llm_pp_samples_new(rep->stages);
  if (!one) {
    b->failed = 1; /* out of memory: the build reports it */
    return;
  }
  gs_llm_pp_samples_add(one, rep->pass_seconds, rep->stage_busy, NAN, NAN, NAN);
  one->calls[0] = one->width = rep->forward_passes;
  gs_llm_pp_samples_to_json(b, rank, one);
  gs_llm_pp_samples_free(one);
}

void gs_llm_pp_print(FILE *out, const gs_llm_pp_summary *p) {
  if (p->stages <= 1) return;
  const gs_bubble *x = &p->bubble;
  fprintf(out, "    pipeline: %u stages, %u micro-batches per call at full batch; of %.3f s of "
          "prefill and decode calls:\n", p->stages, p->micro_batches, p->pass_seconds);
  for (uint32_t s = 0; s < p->stages; s++)
    fprintf(out, "      stage %u (layers %u..%u): busy %.3f s, idle %.3f s\n", s,
            p->first_layer[s], p->first_layer[s + 1] - 1, p->busy[s], p->pass_seconds - p->busy[s]);
  char verdict[448], bubble[64], imbalance[64];
  gs_bubble_verdict_text(x, verdict, sizeof verdict);
  gs_scaling_format_ratio(x->bubble, x->low, x->high, 100.0, 1, "%", bubble, sizeof bubble);
  gs_scaling_format_ratio(x->imbalance, x->imbalance_low, x->imbalance_high, 1.0, 2, "x",
                          imbalance, sizeof imbalance);
  fprintf(out, "      bubble (idle / busy) %s against (p-1)/m %.1f%%%s%s\n", bubble,
          100.0 * x->formula, verdict[0] ? ": " : "", verdict);
  fprintf(out, "      stage imbalance (slowest / mean busy) %s; 95%% intervals over %zu run(s), "
          "%zu sample(s) of %s\n", imbalance, p->runs, x->samples,
          p->per_call ? "consecutive calls" : "a replica's run (stages over processes)");
}
