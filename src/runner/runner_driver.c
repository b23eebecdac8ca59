/* The fixed-step runner behind the driver interface (runner_driver.h):
 * each hook forwards to the runner or to the split of work units, so that
 * the measuring layer has one way to measure any workload. */
#include "runner/runner_driver.h"

#include <stdlib.h>

#include "runner/runner.h"
#include "runner/split.h"
#include "core/check.h"

/* Timed iterations of the calibration run of a proportional split. */
#define GS_SPLIT_CALIBRATION_ITERS 20

/* What a sweep through the runner needs: the workload and its options
 * (the caller's, rewritten in place when it selects a variant). */
typedef struct {
  const gs_workload *workload;
  const void *opts;
} runner_sweep;

static gs_status runner_open(const gs_workload *workload, const void *opts,
                             const gs_environment *env, size_t count, void **ctx) {
  (void)env;
  (void)count;
  runner_sweep *s = calloc(1, sizeof *s);
  *ctx = s;
  if (!s) return gs_error(GS_ERR_NOMEM, "cannot allocate the runner's sweep");
  s->workload = workload;
  s->opts = opts;
  return GS_OK;
}

static gs_status runner_check(void *ctx, const gs_run_config *config) {
  const runner_sweep *s = ctx;
  return gs_split_check(s->workload, s->opts, config);
}

static gs_status runner_split(void *ctx, const gs_run_config *config, uint64_t *even,
                              uint64_t *proportional, double *rates) {
  const runner_sweep *s = ctx;
  GS_TRY(gs_split_calibrate(s->workload, s->opts, config, GS_SPLIT_CALIBRATION_ITERS, rates));
  const uint64_t units = s->workload->work_units(s->opts);
  gs_split_even(units, config->world_size, even);
  return gs_split_proportional(units, config->world_size, rates, proportional);
}

static gs_status runner_measure_hook(void *ctx, const gs_run_config *config, size_t index,
                                     gs_measurement *out) {
  (void)index;
  const runner_sweep *s = ctx;
  return gs_runner_measure(s->workload, s->opts, config, out);
}

/* The CTAs NCCL may give a collective of a workload whose collectives
 * overlap its compute (gs_workload.overlaps_collectives: a data-parallel
 * step all-reduces its gradients on a communication stream while the
 * backward GEMMs run): NCCL's default takes SMs from those GEMMs. With 4,
 * NVLink still carries mlp's 8 MB of gradients well within the backward
 * pass. mlp --preset large --batch 8192, weak scaling on 4 x H200 (one
 * call each, 3 runs a count): 91.6% [89.8, 93.5] efficiency at 4 GPUs
 * with NCCL's default, 97.3% [97.0, 97.7] with 4, 97.4% [97.1, 97.7]
 * with 2, 92.1% [91.0, 93.0] with 8 (set through NCCL_MAX_CTAS); through this default 98.1% [97.8,
 * 98.3] at 2 GPUs and 97.3% [97.1, 97.6] at 4, against 91.2% [90.7,
 * 91.8] with --nccl-max-ctas 0 (docs/workloads/mlp.md). A pipeline's transfers are
 * on its critical path: with 4 CTAs mlp's --pp 2 step went from 5.1 to
 * 6.25 ms, so workloads that do not overlap keep NCCL's default. */
#define RUNNER_NCCL_MAX_CTAS 4

/* The runner's defaults of options given none, on CUDA. --arrival-times:
 * off, where the recording cost mlp's data-parallel step 2.05% [1.88%,
 * 2.43%] of its 1.5 ms (2 of 4 x H200, bench/arrival_cost_runs.sh;
 * docs/stragglers.md), over the 1% it may cost; on on the cpu backend.
 * --nccl-max-ctas: RUNNER_NCCL_MAX_CTAS where the workload's collectives
 * overlap its compute, else NCCL's default. Given, each is obeyed. */
static gs_status runner_configure(const gs_workload *workload, void *opts,
                                  const gs_given_options *given, gs_run_config *config) {
  if (config->backend != GS_BACKEND_CUDA) return GS_OK;
  if (!given->arrival_times) config->no_arrival_times = 1;
  if (!given->nccl_max_ctas && workload->overlaps_collectives &&
      workload->overlaps_collectives(opts))
    config->nccl_max_ctas = RUNNER_NCCL_MAX_CTAS;
  return GS_OK;
}

static void runner_close(void *ctx) { free(ctx); }

const gs_workload_driver gs_runner_driver = {
    .meets_start_gate = 1,
    .interleaves = 1,
    .configure = runner_configure,
    .open = runner_open,
    .check = runner_check,
    .split = runner_split,
    .measure = runner_measure_hook,
    .close = runner_close,
};

const gs_workload_driver *gs_runner_driver_of(const gs_workload *workload) {
  return workload->driver ? workload->driver : &gs_runner_driver;
}
