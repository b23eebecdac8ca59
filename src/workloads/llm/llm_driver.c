/* The llm workload's driver hooks (workload.h): each measurement is a
 * request stream run by scenario.c instead of the runner's fixed steps.
 * The hooks check the measuring options that do not apply to a request
 * stream, keep the rank counts that are whole tensor-parallel replicas,
 * hold the scenario results between measuring and writing, and add the
 * llm's members to the result document. */
#include "workloads/llm/llm_driver.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "platform/comm.h"
#include "workloads/llm/llm_measure.h"
#include "workloads/llm/llm_verify.h"

/* Scenario results of one sweep, kept until they are written. */
typedef struct {
  const gs_llm_options *opts;
  const gs_environment *env;
  size_t capacity;          /* measurements */
  gs_llm_run_result **runs; /* per measurement: n_runs[i] scenario runs */
  size_t *n_runs;
  gs_llm_summary *summaries; /* per measurement: its "llm" member as last written */
  int *summarized;           /* per measurement: 1 once summaries[i] is filled */
} llm_sweep;

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
  llm_sweep *d = ctx;
  memset(out, 0, sizeof *out);
  if (index >= d->capacity) GS_BUG("llm measurement %zu of %zu", index, d->capacity);
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

static gs_status driver_annotate(void *ctx, const gs_measurement *m, cJSON *measurement,
                                 size_t index) {
  llm_sweep *d = ctx;
  if (!measurement || index >= d->capacity || !d->runs[index])
    GS_BUG("llm annotation of measurement %zu without results", index);
  double peak = 0.0;
  if (strcmp(m->backend, "cuda") == 0 && m->world_size > 0)
    for (size_t g = 0; g < d->env->gpu_count; g++)
      if (d->env->gpus[g].index == m->devices[0]) peak = d->env->gpus[g].peak_memory_bandwidth;
  d->summarized[index] = 0;
  GS_TRY(gs_llm_summary_compute(d->opts, d->runs[index], d->n_runs[index], m, peak,
                                &d->summaries[index]));
  d->summarized[index] = 1;
  return gs_llm_measurement_annotate(measurement, &d->summaries[index], d->runs[index],
                                     d->n_runs[index]);
}

static void driver_print(void *ctx, FILE *out, size_t count) {
  llm_sweep *d = ctx;
  for (size_t i = 0; i < count && i < d->capacity; i++)
    if (d->summarized[i]) gs_llm_measurement_print(out, &d->summaries[i]);
}

static void driver_close(void *ctx) {
  llm_sweep *d = ctx;
  if (!d) return;
  for (size_t i = 0; d->runs && i < d->capacity; i++) {
    for (size_t r = 0; d->runs[i] && r < d->n_runs[i]; r++) gs_llm_run_result_free(&d->runs[i][r]);
    free(d->runs[i]);
  }
  free(d->runs);
  free(d->n_runs);
  free(d->summaries);
  free(d->summarized);
  free(d);
}

static gs_status driver_open(const gs_workload *workload, const void *opts,
                             const gs_environment *env, size_t count, void **ctx) {
  (void)workload;
  llm_sweep *d = calloc(1, sizeof *d);
  *ctx = d;
  if (!d) return gs_error(GS_ERR_NOMEM, "cannot allocate the llm driver");
  d->opts = opts;
  d->env = env;
  d->capacity = count;
  d->runs = calloc(count, sizeof *d->runs);
  d->n_runs = calloc(count, sizeof *d->n_runs);
  d->summaries = calloc(count, sizeof *d->summaries);
  d->summarized = calloc(count, sizeof *d->summarized);
  if (!d->runs || !d->n_runs || !d->summaries || !d->summarized) {
    driver_close(d);
    *ctx = NULL;
    return gs_error(GS_ERR_NOMEM, "cannot allocate the llm driver");
  }
  return GS_OK;
}

/* A request stream per measurement, not timed iterations: --iters and
 * --min-time do not apply (docs/workloads/llm.md). */
static gs_status driver_configure(void *opts, const gs_given_options *given,
                                  gs_run_config *config) {
  const gs_llm_options *o = opts;
  if (given->iters || given->min_time)
    return gs_error(GS_ERR_USAGE, "options --iters and --min-time do not apply to llm: it runs "
                    "--samples requests per measurement");
  // Requests are dispatched by --dispatch, not split in fixed units per rank.
  if (config->split_proportional)
    return gs_error(GS_ERR_USAGE, "option --split proportional does not apply to llm: use "
                    "--dispatch dynamic to balance requests over unequal GPUs");
  if (config->faults.n > 0)
    return gs_error(GS_ERR_USAGE, "option --inject is not supported by llm yet");
  if (given->gpu_mode)
    return gs_error(GS_ERR_USAGE, "option --gpu-mode does not apply to llm");
  // A shared queue lives in one process; between processes requests are split.
  if (config->control && o->dispatch == GS_LLM_DISPATCH_DYNAMIC)
    return gs_error(GS_ERR_USAGE, "option --dispatch dynamic: not available under a launcher "
                    "(one process per rank); use --dispatch static, or one process");
  if (config->control && o->tp > 1)
    return gs_error(GS_ERR_USAGE, "option --tp: tensor parallelism needs a replica's GPUs in one "
                    "process; under a launcher each process has one (run without the launcher)");
  return gs_llm_options_for_backend(opts, config->backend);
}

/* A tensor-parallel replica needs --tp GPUs: only whole replicas are measured. */
static gs_status driver_select_counts(const void *opts, const gs_run_config *config,
                                      gs_u64_list *counts) {
  const uint64_t tp = ((const gs_llm_options *)opts)->tp;
  gs_u64_list whole = {0};
  for (size_t i = 0; i < counts->n; i++)
    if (counts->v[i] % tp == 0) whole.v[whole.n++] = counts->v[i];
  if (whole.n == 0)
    return gs_error(GS_ERR_USAGE,
                    "option --tp %llu: a replica needs %llu %s, and no measured size (largest "
                    "%llu) is a multiple of that",
                    (unsigned long long)tp, (unsigned long long)tp,
                    config->backend == GS_BACKEND_CUDA ? "GPUs" : "ranks",
                    (unsigned long long)counts->v[counts->n - 1]);
  if (whole.n < counts->n)
    gs_note("llm --tp %llu: measuring only the sizes that are whole replicas (multiples of %llu)",
            (unsigned long long)tp, (unsigned long long)tp);
  *counts = whole;
  return GS_OK;
}

/* One run with one warm-up batch by default: a request stream is long. */
const gs_workload_driver gs_llm_driver = {
    .default_runs = 1,
    .default_warmup = 1,
    .samples_note = "per-request latency (every request of every rank, monotonic clock); cold: "
                    "first warm-up batch / median request",
    .configure = driver_configure,
    .select_counts = driver_select_counts,
    .open = driver_open,
    .measure = driver_measure,
    .annotate = driver_annotate,
    .print = driver_print,
    .close = driver_close,
};
