/* The llm workload's sweep driver: `gpuscale run llm` and `gpuscale scale
 * llm` go through the common sweep (cli/measure.c), but each measurement is
 * a scenario run by workloads/llm/scenario.c instead of the fixed-step
 * runner. This module holds the scenario results between measuring and
 * writing, and plugs the llm's members into the result document. */
#ifndef GS_LLM_DRIVER_H
#define GS_LLM_DRIVER_H

#include "measure/sweep.h"
#include "workloads/llm/llm_measure.h"

typedef struct {
  const gs_llm_options *opts;
  const gs_environment *env;
  size_t capacity;          /* measurements */
  gs_llm_run_result **runs; /* per measurement: n_runs[i] scenario runs */
  size_t *n_runs;
  cJSON **annotated; /* per measurement: the llm members as last written */
  gs_sweep_driver hooks;
} gs_llm_driver;

/* Prepares a driver for up to `count` measurements; hooks filled. */
gs_status gs_llm_driver_init(gs_llm_driver *d, const gs_llm_options *opts,
                             const gs_environment *env, size_t count);
void gs_llm_driver_free(gs_llm_driver *d);

#endif
