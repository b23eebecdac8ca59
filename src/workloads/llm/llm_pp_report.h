/* What a pipelined llm replica's stages did (--pp): each stage's busy and
 * idle seconds summed over the replicas and runs, the measured bubble and
 * the formula's (p - 1) / (m + p - 1) beside it, into the document's
 * llm.pipeline and the terminal (docs/workloads/llm.md, "Pipeline
 * parallelism"). */
#ifndef GS_LLM_PP_REPORT_H
#define GS_LLM_PP_REPORT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/json.h"
#include "workloads/llm/scenario.h"

typedef struct {
  uint32_t stages;         /* 1: no pipeline (nothing is written) */
  uint32_t micro_batches;  /* per call at full batch: min(--micro-batches or P, batch) */
  uint32_t first_layer[GS_LLM_MAX_STAGES + 1];
  double pass_seconds;     /* prefill and decode calls, summed over replicas and runs */
  double busy[GS_LLM_MAX_STAGES]; /* seconds each stage computed, summed likewise */
  double bubble;           /* idle / (stages x pass_seconds); NaN without calls */
  double formula;          /* (p - 1) / (m + p - 1) */
} gs_llm_pp_summary;

/* From the engine configuration of the measurement (its stages, split and
 * micro-batches) and its runs. */
void gs_llm_pp_summarize(const gs_llm_engine_config *e, const gs_llm_run_result *runs,
                         size_t n_runs, gs_llm_pp_summary *out);

/* Adds "pipeline" to the llm object `l` (nothing without stages). */
void gs_llm_pp_to_json(gs_json_build *b, cJSON *l, const gs_llm_pp_summary *p);

/* One line per stage and the bubble (nothing without stages). */
void gs_llm_pp_print(FILE *out, const gs_llm_pp_summary *p);

#endif
