/* How one workload's units are split over ranks: evenly, or in proportion
 * to each rank's measured speed (from a short calibration run), so that
 * GPUs of unequal speed finish a step at about the same time. */
#ifndef GS_SPLIT_H
#define GS_SPLIT_H

#include <stdint.h>

#include "bench/runner.h"

/* counts[k] = units / ranks, the remainder going one each to the first
 * ranks. */
void gs_split_even(uint64_t units, int ranks, uint64_t *counts);

/* Each rank gets at least one unit; then units go one at a time to the rank
 * that would finish its share soonest at its rate (items/s; any positive
 * scale), which minimises the slowest rank's time. GS_ERR_USAGE when there
 * are fewer units than ranks, GS_ERR_INTERNAL for a rate that is not
 * positive and finite. */
gs_status gs_split_proportional(uint64_t units, int ranks, const double *rates,
                                uint64_t *counts);

/* Calibration: measures `workload` once with an even split and
 * `iters` timed iterations under `config` (faults included) and returns
 * each rank's items per second in rates[] (its share of the items over its
 * median step time: CUDA events, or wall time on the CPU). */
gs_status gs_split_calibrate(const gs_workload *workload, const void *opts,
                             const gs_run_config *config, uint64_t iters, double *rates);

#endif
