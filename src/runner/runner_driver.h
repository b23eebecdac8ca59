/* The fixed-step runner as a measuring driver (workload.h): the adapter
 * through which run, scale, suite, plan and --gpu-mode auto measure a
 * workload of fixed steps, and the one place that gives every workload its
 * driver. */
#ifndef GS_RUNNER_DRIVER_H
#define GS_RUNNER_DRIVER_H

#include "workloads/workload.h"

/* The runner's hooks: open keeps the workload and its options, check is
 * gs_split_check, split calibrates each rank (gs_split_calibrate) and
 * splits the units evenly and in proportion, measure is gs_runner_measure;
 * it meets a plan's start gate and has no defaults of its own. */
extern const gs_workload_driver gs_runner_driver;

/* The driver that measures `workload`: the workload's own hooks when it
 * has its own timing loop (llm, exec), else gs_runner_driver. Never NULL.
 * The only reader of gs_workload.driver: callers measure every workload
 * through what it returns. Any thread. */
const gs_workload_driver *gs_runner_driver_of(const gs_workload *workload);

#endif
