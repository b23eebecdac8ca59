/* How one workload's units are split over ranks: evenly, or in proportion
 * to each rank's measured speed (from a short calibration run), so that
 * GPUs of unequal speed finish a step at about the same time; under weak
 * scaling every rank gets the workload's units of its own. The check that
 * a split can work is made here once, before anything is measured. */
#ifndef GS_SPLIT_H
#define GS_SPLIT_H

#include <stdint.h>

#include "runner/runner.h"

/* Whether `workload` with `opts` can be split as `config` asks
 * (world_size, scaling, split_proportional, unit_counts): strong scaling
 * needs at least one unit per rank; weak scaling takes no proportional
 * split, and its whole problem (world_size x the units) and that problem's
 * cost (items, bytes, flops) must fit in 64 bits. GS_ERR_USAGE naming the
 * options (--ranks/--gpus, the workload's unit_option, --scaling, --split)
 * otherwise. A workload without work_units (one with its own driver, llm)
 * passes. Called by the measuring commands for every rank count before
 * anything is measured, and by gs_split_plan. */
gs_status gs_split_check(const gs_workload *workload, const void *opts,
                         const gs_run_config *config);

/* The split of one measurement: rank k owns units [begin[k], begin[k] +
 * count[k]) of the step's *total units (world_size entries each). Strong:
 * config->unit_counts or an even split of the workload's units; weak:
 * rank k owns [k*U, (k+1)*U) of world_size * U. Errors of gs_split_check,
 * unit_counts that do not add up are a bug. */
gs_status gs_split_plan(const gs_workload *workload, const void *opts,
                        const gs_run_config *config, uint64_t *begin, uint64_t *count,
                        uint64_t *total);

/* counts[k] = units / ranks, the remainder going one each to the first
 * ranks. */
void gs_split_even(uint64_t units, int ranks, uint64_t *counts);

/* Each rank gets at least one unit; then units go one at a time to the rank
 * that would finish its share soonest at its rate (items/s; any positive
 * scale), which minimises the slowest rank's time. GS_ERR_USAGE when there
 * are fewer units than ranks; a rate that is not positive and finite is a
 * bug (the calibration refuses a rank that measured no time). */
gs_status gs_split_proportional(uint64_t units, int ranks, const double *rates,
                                uint64_t *counts);

/* Calibration: measures `workload` once with an even split and
 * `iters` timed iterations under `config` (faults included) and returns
 * each rank's items per second in rates[] (its share of the items over its
 * median step time: CUDA events, or wall time on the CPU). */
gs_status gs_split_calibrate(const gs_workload *workload, const void *opts,
                             const gs_run_config *config, uint64_t iters, double *rates);

#endif
