/* From llm scenario runs to the result document: the common measurement
 * shape (rank records whose samples are per-sample latencies, step
 * statistics over those latencies, throughput in generated tokens per
 * second) plus the llm members: the measurement's "scenario" and "llm"
 * objects and each rank record's "requests" (docs/result-schema.md). */
#ifndef GS_LLM_MEASURE_H
#define GS_LLM_MEASURE_H

#include <cjson/cJSON.h>

#include "workloads/run_config.h"
#include "core/result.h"
#include "workloads/llm/llm_options.h"
#include "workloads/llm/scenario.h"

/* Fills *m (caller frees with gs_measurement_free) from n_runs runs of one
 * configuration. `verification` has world_size entries (one per rank) or is
 * NULL when nothing was verified. */
gs_status gs_llm_measurement_fill(const gs_llm_options *o, const gs_run_config *config,
                                  const gs_llm_run_result *runs, size_t n_runs,
                                  const gs_verification *verification, gs_measurement *m);

/* Adds "scenario", "llm" and the rank records' "requests" to `mjson`, the
 * measurement object that gs_result_add_measurement wrote for *m.
 * `peak_bandwidth` (bytes/s of the first GPU, 0 = unknown) gives the
 * roofline fraction. */
gs_status gs_llm_measurement_annotate(cJSON *mjson, const gs_llm_options *o,
                                      const gs_llm_run_result *runs, size_t n_runs,
                                      const gs_measurement *m, double peak_bandwidth);

/* One paragraph per measurement for the terminal: tokens/s, sample
 * outcomes, TTFT, TPOT and latency percentiles, bounds, and the reminder
 * that the weights are random. */
void gs_llm_measurement_print(FILE *out, const cJSON *mjson);

#endif
