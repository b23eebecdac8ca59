/* The sweep shared by run, scale, suite and exec: a workload measured
 * through its driver (gs_runner_driver_of) at one or more rank counts (and
 * each of its variants) into one result document, written after every
 * measurement so that nothing already measured is lost; the command hears
 * of each finished variant to print it. */
#ifndef GS_MEASURE_SWEEP_H
#define GS_MEASURE_SWEEP_H

#include "measure/common.h"
#include "measure/job.h"
#include "platform/telemetry.h"

typedef struct gs_sweep gs_sweep;

/* Who hears of a sweep's progress (the command, which prints). Called only
 * on the process that writes the document; either member may be NULL. */
typedef struct {
  void *ctx;
  /* One variant's measurements (every rank count) are done and written. */
  void (*variant_done)(void *ctx, const gs_sweep *sw, const gs_measurement *ms,
                       const gs_telemetry *tm, size_t count);
  /* Every measurement of the sweep is done; `driver_ctx` is the context
   * that the workload's driver (gs_runner_driver_of) opened for the sweep,
   * for its print hook; tm[i] is measurement i's telemetry. */
  void (*sweep_done)(void *ctx, const gs_sweep *sw, void *driver_ctx, const gs_measurement *ms,
                     const gs_telemetry *tm, size_t count);
} gs_sweep_observer;

struct gs_sweep {
  const char *command;           /* "run", "scale" or "suite" */
  const gs_workload *workload;
  const void *workload_opts;
  const gs_common_options *common;
  const gs_run_config *config;   /* ranks: the largest count's devices */
  const gs_environment *env;
  const char *path;              /* result document */
  gs_measure_job *job;           /* the process in its job */
  const gs_sweep_observer *observer; /* may be NULL */
};

/* Measures at each count in `counts` (prefixes of config->devices; in mpi
 * mode the first N processes, the others idle in lockstep). Returns GS_OK,
 * GS_ERR_PARTIAL when a rank was lost or the run was interrupted after
 * something was measured and written, or the first failure's status. */
gs_status gs_measure_sweep(const gs_sweep *sweep, const gs_u64_list *counts);

#endif
