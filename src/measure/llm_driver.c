/* The llm workload's sweep driver (see llm_driver.h). */
#include "measure/llm_driver.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "platform/comm.h"
#include "workloads/llm/llm_verify.h"

/* Shapes up to this many parameters are verified as they are; larger ones
 * through the tiny preset (the CPU reference would take minutes). */
#define GS_LLM_VERIFY_MAX_PARAMETERS UINT64_C(20000000)

/* Under a launcher: every rank's GPU check to every process (processes
 * beyond the world contribute an empty one). */
static gs_status share_verifications(const gs_run_config *config, gs_verification *verify) {
  const int procs = gs_comm_world_size(config->control);
  gs_verification mine;
  memset(&mine, 0, sizeof mine);
  if (config->process_rank < config->world_size) mine = verify[config->process_rank];
  gs_verification *all = calloc((size_t)procs, sizeof *all);
  if (!all) return gs_error(GS_ERR_NOMEM, "cannot gather %d GPU checks", procs);
  gs_status status = gs_comm_allgather(gs_comm_world_rank(config->control, 0), &mine, all,
                                       sizeof mine, GS_DTYPE_UINT8, NULL);
  for (int k = 0; status == GS_OK && k < config->world_size; k++) verify[k] = all[k];
  free(all);
  return status;
}

/* The shape the GPUs are verified on: the measured one, or where the CPU
 * reference would take too long the tiny preset, widened where needed so
 * that it splits over tp shards. */
static gs_llm_shape verification_shape(const gs_llm_shape *measured, uint32_t tp) {
  if (gs_llm_parameter_count(measured) <= GS_LLM_VERIFY_MAX_PARAMETERS) return *measured;
  gs_llm_shape s = gs_llm_presets[2].shape;
  char why[160];
  if (!gs_llm_shard_fits(&s, tp, why, sizeof why)) {
    s.kv_heads = tp;
    s.heads = 2 * (uint64_t)tp;
    s.hidden = 16 * s.heads;
    s.ffn = 88 * (uint64_t)tp;
    s.vocab = 256 * (uint64_t)tp;
  }
  return s;
}

static gs_status driver_measure(void *ctx, const gs_run_config *config, size_t index,
                                gs_measurement *out) {
  gs_llm_driver *d = ctx;
  memset(out, 0, sizeof *out);
  if (index >= d->capacity)
    return gs_error(GS_ERR_INTERNAL, "llm measurement %zu of %zu", index, d->capacity);
  gs_llm_scenario_config sc;
  gs_llm_options_scenario(d->opts, config, &sc);
  gs_verification verify[GS_MAX_RANKS];
  memset(verify, 0, sizeof verify);
  gs_status status = GS_OK;
  if (config->backend == GS_BACKEND_CUDA) {
    const uint32_t tp = sc.engine.tp ? sc.engine.tp : 1;
    gs_llm_shape shape = verification_shape(&sc.engine.shape, tp);
    // Each replica (tp GPUs) is checked. Under a launcher each process
    // checks its own GPU and the results are shared, so that every process
    // holds every rank's verification.
    for (int k = 0; k < config->world_size / (int)tp && status == GS_OK; k++)
      if (!config->control || k == config->process_rank)
        status = gs_llm_verify_gpu(&shape, config->seed, config->devices + (size_t)k * tp, tp,
                                   &verify[k]);
    if (config->control && status == GS_OK) status = share_verifications(config, verify);
  }
  d->runs[index] = calloc(config->runs, sizeof *d->runs[index]);
  if (!d->runs[index])
    return gs_error(GS_ERR_NOMEM, "cannot allocate %llu scenario runs",
                    (unsigned long long)config->runs);
  d->n_runs[index] = config->runs;
  for (uint64_t r = 0; r < config->runs && status == GS_OK; r++) {
    if (config->show_progress && !gs_is_quiet())
      gs_note("%s: %s scenario, run %llu of %llu", config->label ? config->label : "llm",
              gs_llm_scenario_names[sc.scenario], (unsigned long long)r + 1,
              (unsigned long long)config->runs);
    status = gs_llm_scenario_run(&sc, config, &d->runs[index][r]);
    if (status != GS_OK) d->n_runs[index] = r + 1;
  }
  gs_status filled =
      gs_llm_measurement_fill(d->opts, config, d->runs[index], d->n_runs[index],
                              config->backend == GS_BACKEND_CUDA ? verify : NULL, out);
  if (status != GS_OK) {
    out->status = status;
    if (!out->error[0]) snprintf(out->error, sizeof out->error, "%s", gs_last_error());
    return status;
  }
  return filled != GS_OK ? filled : out->status;
}

static gs_status driver_annotate(void *ctx, cJSON *measurement, size_t index) {
  gs_llm_driver *d = ctx;
  if (!measurement || index >= d->capacity || !d->runs[index])
    return gs_error(GS_ERR_INTERNAL, "llm annotation of measurement %zu without results", index);
  gs_measurement shell;
  memset(&shell, 0, sizeof shell);
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(measurement, "status");
  shell.status =
      cJSON_IsString(status) && strcmp(status->valuestring, "ok") == 0 ? GS_OK : GS_ERR_INTERNAL;
  double peak = 0.0;
  const cJSON *devices = cJSON_GetObjectItemCaseSensitive(measurement, "devices");
  const cJSON *first = cJSON_GetArrayItem(devices, 0);
  if (cJSON_IsNumber(first))
    for (size_t g = 0; g < d->env->gpu_count; g++)
      if (d->env->gpus[g].index == first->valueint) peak = d->env->gpus[g].peak_memory_bandwidth;
  GS_TRY(gs_llm_measurement_annotate(measurement, d->opts, d->runs[index], d->n_runs[index], &shell,
                                     peak));
  cJSON_Delete(d->annotated[index]);
  d->annotated[index] = cJSON_Duplicate(measurement, 1);
  return GS_OK;
}

static void driver_print(void *ctx, FILE *out, size_t count) {
  gs_llm_driver *d = ctx;
  for (size_t i = 0; i < count && i < d->capacity; i++)
    if (d->annotated[i]) gs_llm_measurement_print(out, d->annotated[i]);
}

gs_status gs_llm_driver_init(gs_llm_driver *d, const gs_llm_options *opts,
                             const gs_environment *env, size_t count) {
  memset(d, 0, sizeof *d);
  d->opts = opts;
  d->env = env;
  d->capacity = count;
  d->runs = calloc(count, sizeof *d->runs);
  d->n_runs = calloc(count, sizeof *d->n_runs);
  d->annotated = calloc(count, sizeof *d->annotated);
  if (!d->runs || !d->n_runs || !d->annotated) {
    gs_llm_driver_free(d);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the llm driver");
  }
  d->hooks = (gs_sweep_driver){
      .ctx = d, .measure = driver_measure, .annotate = driver_annotate, .print = driver_print};
  return GS_OK;
}

void gs_llm_driver_free(gs_llm_driver *d) {
  for (size_t i = 0; d->runs && i < d->capacity; i++) {
    for (size_t r = 0; d->runs[i] && r < d->n_runs[i]; r++) gs_llm_run_result_free(&d->runs[i][r]);
    free(d->runs[i]);
  }
  for (size_t i = 0; d->annotated && i < d->capacity; i++) cJSON_Delete(d->annotated[i]);
  free(d->runs);
  free(d->n_runs);
  free(d->annotated);
  memset(d, 0, sizeof *d);
}
