/* `gpuscale check`'s measuring side: reads the node's passive state (level
 * 1: inventory, driver/CUDA/NCCL, NVML's error counters, links and clock
 * event reasons) without changing any GPU setting. The judgement lies in
 * report/verdict/check.h. See docs/check.md. */
#ifndef GS_MEASURE_CHECK_H
#define GS_MEASURE_CHECK_H

#include <cjson/cJSON.h>

#include "core/gpu_model.h"
#include "core/health.h"
#include "core/status.h"
#include "measure/check_burn.h"
#include "measure/check_stress.h"

/* Fills `state` (the caller's, zeroed here) from CUDA, NCCL and NVML. The
 * GPUs are those NVML enumerates, so the passive checks run where CUDA has
 * no device (a broken CUDA install, or NVML's test double in CI); CUDA's
 * own devices are listed apart for the inventory check. No GPU and no NVML
 * is a normal state (the counts are 0). Fails only when memory runs out.
 * Free with gs_check_state_free, also after a failure. */
gs_status gs_check_state_collect(gs_node_state *state);

/* gs_check_state_collect on a thread of its own, then, with `stress` not
 * NULL, level 2's measurements (check_stress.h) into state->stress, with
 * `burn` not NULL level 3's burn-in (check_burn.h) into state->burn, all
 * waited for at most `budget_s` seconds: a GPU whose driver does not answer
 * cannot hang a job prolog. On time, as gs_check_state_collect. Past the budget, returns
 * GS_OK with only state->hung (what was being read) and state->budget_s
 * set; the reading thread is abandoned with what it holds, and the process
 * is expected to end soon (the command exits). */
gs_status gs_check_state_collect_within(gs_node_state *state, double budget_s,
                                        const gs_check_stress_options *stress,
                                        const gs_check_burn_options *burn);

/* The expected figures shipped with gpuscale (data/gpu-models.json):
 * $GPUSCALE_DATA_DIR/gpu-models.json when that variable is set, else the
 * first that exists of gpu-models.json in share/gpuscale/ beside the binary
 * (the build tree) and in ../share/gpuscale/ (an installed prefix). None found is no
 * error: returns GS_OK with *found 0 and `why` saying where it looked.
 * One found but malformed or unreadable is the error (GS_ERR_FORMAT or
 * GS_ERR_IO). Free `models` with gs_gpu_models_free. */
gs_status gs_check_models_shipped(gs_gpu_models *models, int *found, char *why, size_t why_size);

/* Releases what gs_check_state_collect allocated. Accepts a zeroed state. */
void gs_check_state_free(gs_node_state *state);

/* The passive state as JSON (docs/check.md, "gpus"): one object per NVML
 * GPU, every unreported figure null. Returns NULL when memory runs out. */
cJSON *gs_check_state_json(const gs_node_state *state);

#endif
