/* The llm workload's sweep driver: `gpuscale run llm` and `gpuscale scale
 * llm` go through the common sweep (cli/measure.c), but each measurement is
 * a scenario run by workloads/llm/scenario.c instead of the fixed-step
 * runner. This module holds the scenario results between measuring and
 * writing, and plugs the llm's members into the result document. */
#ifndef GS_LLM_DRIVER_H
#define GS_LLM_DRIVER_H

#include "cli/measure.h"
#include "workloads/llm/llm_measure.h"

typedef struct {
  const llm_options *opts;
  const gs_environment *env;
  size_t capacity;             /* measurements */
  llm_run_result **runs;       /* per measurement: n_runs[i] scenario runs */
  size_t *n_runs;
  cJSON **annotated;           /* per measurement: the llm members as last written */
  gs_sweep_driver hooks;
} llm_driver;

/* Prepares a driver for up to `count` measurements; hooks filled. */
gs_status llm_driver_init(llm_driver *d, const llm_options *opts, const gs_environment *env,
                          size_t count);
void llm_driver_free(llm_driver *d);

#endif
