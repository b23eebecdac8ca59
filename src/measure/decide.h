/* The short calibration behind `run --gpu-mode auto`: single or multi GPU
 * by the verdict rule of core/scaling (the one `scale` and `report` use). */
#ifndef GS_DECIDE_H
#define GS_DECIDE_H


#include "core/result.h"
#include "workloads/workload.h"

/* `run --gpu-mode auto`: measures `workload` briefly through its driver
 * (gs_runner_driver_of; 1 run, 3 warmup steps, 0.3 s) on 1 rank and on
 * config->world_size ranks of the machine `env`, and sets *chosen to the
 * rank count to use: the multi count when the verdict (core/scaling) is
 * beneficial, else 1. `why` receives the reason with the figures. A failed
 * calibration is returned as its status. */
gs_status gs_decide_calibrate(const gs_workload *workload, const void *opts,
                              const gs_environment *env, const gs_run_config *config,
                              int *chosen, char *why, size_t why_size);

#endif
