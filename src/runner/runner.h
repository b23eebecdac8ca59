/* The runner: measures one workload at one world size. It splits the work
 * units over the ranks (one host thread per rank, each driving one GPU on the
 * CUDA backend or computing on the CPU), runs warmup and timed iterations in
 * lockstep, keeps every raw sample, verifies each rank after timing and
 * fills a gs_measurement. */
#ifndef GS_RUNNER_H
#define GS_RUNNER_H

#include <stdint.h>

#include "core/result.h"
#include "workloads/run_config.h"
#include "workloads/workload.h"

/* Measures `workload` with parsed options `opts`. Faults (core/fault.h)
 * are applied to the ranks they name; in mpi mode every process's *out
 * holds every rank's record, and a failed rank is named in the measurement
 * failure (out->failure: rank, host, last completed step, reason). A rank slowed by a slow
 * fault takes `factor` times its own measured work per step (a spin after
 * the step on its stream on CUDA, a sleep on the CPU); the measurement
 * then carries its faults (out->faults, the member "faults"). Fills *out (owned by the
 * caller; free with gs_measurement_free) even when ranks fail: failed ranks
 * carry their status and error, samples already taken are kept. Returns the
 * measurement's status: GS_OK, the first rank error, or GS_ERR_VERIFY when a
 * result differs from the CPU reference. Called from one thread. */
gs_status gs_runner_measure(const gs_workload *workload, const void *opts,
                            const gs_run_config *config, gs_measurement *out);

/* Derives step times (slowest rank per iteration, from device_seconds when
 * use_device, else wall_seconds), the combined verification and the
 * aggregate of a measurement whose rank records are filled, and drops its
 * arrival times when a rank recorded none (gs_arrival_recorded). Used by gs_runner_measure and
 * by drivers with their own timing loop (coll). */
gs_status gs_runner_summarize(gs_measurement *m, int use_device);

/* Appends the runs of `from` (a measurement of the same workload, world
 * size and split, made after `into`) to `into`, and frees `from`. `into`
 * keeps its status and failure unless it was ok and `from` failed; its
 * combined verification and aggregate are recomputed over every run. So
 * an interleaved sweep that measures one run per rank count at a time
 * builds the same measurement as one call with every run. GS_ERR_NOMEM
 * leaves `into` as it was (`from` is freed either way). */
gs_status gs_runner_merge(gs_measurement *into, gs_measurement *from);

/* Fills m->failure (the measurement member "failure") of a failed
 * measurement from its rank records: the first rank that really failed
 * (not one that only stopped, timed out or was interrupted because of it)
 * with its host, last completed step, status and error; when no rank can
 * be named (a stop request, a rank lost on another host), rank -1 with the
 * measurement's own status and error. Call once m->status and m->error are
 * final. Used by gs_runner_measure and by the coll sweep. */
void gs_runner_name_failure(gs_measurement *m);

/* Fills speedup and efficiency (core/scaling) of each measurement whose
 * status is ok against the baseline of the same workload: the first
 * measurement with world_size 1, status ok and a throughput. Left 0 when
 * there is none or the measurement failed. */
void gs_runner_relate(gs_measurement *measurements, size_t count);

#endif
