/* What a pipelined llm replica's stages did (--pp): each stage's busy and
 * idle seconds summed over the replicas and runs, and the bubble (the
 * stages' idle over their busy time, against (p-1)/m) and the stage
 * imbalance with their 95% intervals and the bubble's verdict, all by
 * core/bubble from the per-call samples (llm_pp_samples.h), into the
 * document's llm.pipeline and the terminal (docs/workloads/llm.md,
 * "Pipeline parallelism"). */
#ifndef GS_LLM_PP_REPORT_H
#define GS_LLM_PP_REPORT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/bubble.h"
#include "core/json.h"
#include "workloads/llm/scenario.h"

typedef struct {
  uint32_t stages;         /* 1: no pipeline (nothing is written) */
  uint32_t micro_batches;  /* per call at full batch: min(--micro-batches or P, batch) */
  uint32_t first_layer[GS_LLM_MAX_STAGES + 1];
  double pass_seconds;     /* prefill and decode calls, summed over replicas and runs */
  double busy[GS_LLM_MAX_STAGES]; /* seconds each stage computed, summed likewise */
  gs_bubble bubble;        /* from the samples; NaN figures without calls */
  size_t runs;             /* the runs the intervals rest on */
  int per_call;            /* 1: the samples are per-call blocks; 0: each replica's run totals
                              (stages over processes) */
} gs_llm_pp_summary;

/* From the engine configuration of the measurement (its stages, split and
 * micro-batches) and its runs. GS_ERR_NOMEM when the samples cannot be
 * gathered. */
gs_status gs_llm_pp_summarize(const gs_llm_engine_config *e, const gs_llm_run_result *runs,
                              size_t n_runs, gs_llm_pp_summary *out);

/* Adds "pipeline" to the llm object `l` (nothing without stages). */
void gs_llm_pp_to_json(gs_json_build *b, cJSON *l, const gs_llm_pp_summary *p);

/* Adds the rank record's "pipeline_samples" from replica `rep` of a run:
 * its per-call samples, or where it has none (stages over processes) its
 * run's totals as one sample (rows, micro-batches and sequences null);
 * nothing without stages. */
void gs_llm_pp_replica_to_json(gs_json_build *b, cJSON *rank, const gs_llm_replica_result *rep);

/* One line per stage, the bubble and the imbalance (nothing without
 * stages). */
void gs_llm_pp_print(FILE *out, const gs_llm_pp_summary *p);

#endif
