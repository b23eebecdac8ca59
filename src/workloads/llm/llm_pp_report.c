/* The stages of a pipelined llm replica (llm_pp_report.h). */
#include "workloads/llm/llm_pp_report.h"

#include <math.h>
#include <string.h>

#include "workloads/llm/llm_pp.h"

void gs_llm_pp_summarize(const gs_llm_engine_config *e, const gs_llm_run_result *runs,
                         size_t n_runs, gs_llm_pp_summary *out) {
  memset(out, 0, sizeof *out);
  out->stages = e->pp > 1 ? e->pp : 1;
  out->bubble = out->formula = NAN;
  if (out->stages == 1) return;
  out->micro_batches = (uint32_t)gs_llm_pp_groups(e, e->max_batch);
  memcpy(out->first_layer, e->stage_first, sizeof out->first_layer);
  for (size_t r = 0; r < n_runs; r++)
    for (int k = 0; k < runs[r].world_size; k++) {
      const gs_llm_replica_result *rep = &runs[r].replicas[k];
      if (rep->stages != out->stages) continue; /* a replica that never ran its engine */
      out->pass_seconds += rep->pass_seconds;
      for (uint32_t s = 0; s < out->stages; s++) out->busy[s] += rep->stage_busy[s];
    }
  double idle = 0.0;
  for (uint32_t s = 0; s < out->stages; s++) idle += out->pass_seconds - out->busy[s];
  if (out->pass_seconds > 0.0) out->bubble = idle / (out->stages * out->pass_seconds);
  const double p = out->stages, m = out->micro_batches;
  out->formula = (p - 1.0) / (m + p - 1.0);
}

void gs_llm_pp_to_json(gs_json_build *b, cJSON *l, const gs_llm_pp_summary *p) {
  if (p->stages <= 1) return;
  cJSON *pp = gs_json_put_object(b, l, "pipeline");
  gs_json_put_number(b, pp, "stages", p->stages);
  gs_json_put_number(b, pp, "micro_batches", p->micro_batches);
  gs_json_put_number(b, pp, "pass_seconds", p->pass_seconds);
  gs_json_put_number(b, pp, "bubble_fraction", p->bubble);
  gs_json_put_number(b, pp, "formula_bubble_fraction", p->formula);
  cJSON *stages = gs_json_put_array(b, pp, "per_stage");
  for (uint32_t s = 0; !b->failed && s < p->stages; s++) {
    cJSON *o = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_number(b, o, "stage", s);
    gs_json_put_number(b, o, "first_layer", p->first_layer[s]);
    gs_json_put_number(b, o, "layers", p->first_layer[s + 1] - p->first_layer[s]);
    gs_json_put_number(b, o, "busy_seconds", p->busy[s]);
    gs_json_put_number(b, o, "idle_seconds", p->pass_seconds - p->busy[s]);
    gs_json_put_number(b, o, "idle_fraction",
                       p->pass_seconds > 0.0 ? 1.0 - p->busy[s] / p->pass_seconds : NAN);
    gs_json_append(b, stages, o);
  }
}

void gs_llm_pp_print(FILE *out, const gs_llm_pp_summary *p) {
  if (p->stages <= 1) return;
  fprintf(out, "    pipeline: %u stages, %u micro-batches per call at full batch; of %.3f s of "
          "prefill and decode calls:\n", p->stages, p->micro_batches, p->pass_seconds);
  for (uint32_t s = 0; s < p->stages; s++)
    fprintf(out, "      stage %u (layers %u..%u): busy %.3f s, idle %.3f s (%.1f%%)\n", s,
            p->first_layer[s], p->first_layer[s + 1] - 1, p->busy[s],
            p->pass_seconds - p->busy[s],
            p->pass_seconds > 0.0 ? 100.0 * (1.0 - p->busy[s] / p->pass_seconds) : NAN);
  fprintf(out, "      bubble %.1f%% of the stages' time (formula (p-1)/(m+p-1): %.1f%%)\n",
          100.0 * p->bubble, 100.0 * p->formula);
}
