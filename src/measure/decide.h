/* Single or multi GPU: the rule that turns a measured speedup into a
 * recommendation, the per-variant table `scale` prints with it, and the
 * short calibration behind `run --gpu-mode auto`. */
#ifndef GS_DECIDE_H
#define GS_DECIDE_H

#include <stdio.h>

#include "bench/runner.h"
#include "core/result.h"

/* Speedup (multi / single throughput) at or above which more GPUs are
 * beneficial, and below which one GPU is preferred; between: marginal. */
#define GS_DECIDE_BENEFICIAL 1.1
#define GS_DECIDE_MARGINAL 0.95

typedef enum {
  GS_DECISION_UNKNOWN = 0,  /* no usable measurement */
  GS_DECISION_MULTI,        /* speedup >= 1.1 */
  GS_DECISION_MARGINAL,     /* 0.95 <= speedup < 1.1 */
  GS_DECISION_SINGLE        /* speedup < 0.95 */
} gs_decision;

gs_decision gs_decide(double speedup);

/* "multi-GPU beneficial", "marginal", "single GPU preferred" or "unknown". */
const char *gs_decision_text(gs_decision d);

/* `run --gpu-mode auto`: measures `workload` briefly (1 run, 3 warmup
 * steps, 0.3 s) on 1 rank and on config->world_size ranks, and sets
 * *chosen to the rank count to use: the multi count when it is beneficial,
 * else 1. `why` receives the reason with the figures. A failed calibration
 * is returned as its status. */
gs_status gs_decide_calibrate(const gs_workload *workload, const void *opts,
                              const gs_run_config *config, int *chosen, char *why,
                              size_t why_size);

#endif
