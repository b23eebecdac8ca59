/* The runner: measures one workload at one world size. It splits the work
 * units over the ranks (one host thread per rank, each driving one GPU on the
 * CUDA backend or computing on the CPU), runs warmup and timed iterations in
 * lockstep, keeps every raw sample, verifies each rank after timing and
 * fills a gs_measurement. */
#ifndef GS_RUNNER_H
#define GS_RUNNER_H

#include <stdint.h>

#include "bench/barrier.h"
#include "bench/fault.h"
#include "core/result.h"
#include "core/scaling.h"
#include "platform/comm.h"
#include "workloads/workload.h"

#define GS_MAX_RANKS 64

/* Where one process of an mpi-mode job runs (gathered once by the
 * measuring commands, cli/measure.h). */
typedef struct {
  char host[GS_TEXT_LONG];
  int device;                    /* CUDA ordinal, -1 on the cpu backend */
  int pid;
  int local_rank;                /* among the processes of its host */
  char gpu_name[GS_TEXT_LONG];   /* "" on the cpu backend */
  char gpu_uuid[GS_TEXT_SHORT];
  int cuda_driver_version, cuda_runtime_version; /* 13000 = 13.0; 0 = none */
  char nccl_version[GS_TEXT_SHORT];
} gs_rank_place;

typedef struct {
  gs_backend backend;
  int world_size;                /* ranks, 1..GS_MAX_RANKS */
  int devices[GS_MAX_RANKS];     /* CUDA ordinal per rank (CUDA backend) */
  gs_scaling scaling;            /* NONE behaves as STRONG for the split */
  uint64_t warmup;               /* untimed iterations per run */
  uint64_t iters;                /* timed iterations per run; 0 = use min_time */
  double min_time;               /* seconds of timed iterations per run when iters == 0 */
  uint64_t min_iters;            /* lower bound with min_time */
  uint64_t max_iters;            /* upper bound with min_time */
  uint64_t runs;                 /* repeated runs, >= 1 */
  uint64_t seed;
  int show_progress;             /* progress line on stderr when it is a terminal */
  const char *label;             /* shown in the progress line */
  double comm_timeout_seconds;   /* communicating workloads: longest wait in a
                                    communicator before it is aborted; 0 = none */
  /* Work units per rank (world_size entries, each >= 1, summing to the
   * workload's units; strong scaling only); NULL = even split. */
  const uint64_t *unit_counts;
  int split_proportional;        /* measuring commands: also calibrate and measure a
                                    proportional split next to the even one */
  gs_fault_list faults;          /* injected faults; those on ranks >= world_size are ignored */
  /* When set, rank 0 waits here once every rank is set up, so that several
   * measurements running at once (a plan) start their steps together. Each
   * measurement arrives exactly once, also when its setup failed. */
  gs_barrier *start_gate;
  /* One rank per process (mpi mode, docs/multinode.md). `control` is a
   * host-buffer world over every process of the job: lockstep points and
   * the ranks' samples travel through it to every process, so each one
   * holds every rank's records (process 0 writes them). Processes with process_rank >= world_size
   * take part in the lockstep without measuring (a sweep's smaller counts).
   * NULL = threads mode (one process, one thread per rank). */
  gs_comm_world *control;
  int process_rank;
  const gs_rank_place *places;   /* process_count entries (mpi mode) */
} gs_run_config;

/* Name of a scaling mode: "none", "strong" or "weak". */
const char *gs_scaling_name(gs_scaling scaling);

/* Measures `workload` with parsed options `opts`. Faults (bench/fault.h)
 * are applied to the ranks they name; in mpi mode every process's *out
 * holds every rank's record, and a failed rank is named in the measurement
 * member "failure" (rank, host, last completed step, reason). A rank slowed by a slow
 * fault takes `factor` times its own measured work per step (a spin after
 * the step on its stream on CUDA, a sleep on the CPU); the measurement
 * then carries a "faults" member (out->extra). Fills *out (owned by the
 * caller; free with gs_measurement_free) even when ranks fail: failed ranks
 * carry their status and error, samples already taken are kept. Returns the
 * measurement's status: GS_OK, the first rank error, or GS_ERR_VERIFY when a
 * result differs from the CPU reference. Called from one thread. */
gs_status gs_runner_measure(const gs_workload *workload, const void *opts,
                            const gs_run_config *config, gs_measurement *out);

/* Derives step times (slowest rank per iteration, from device_seconds when
 * use_device, else wall_seconds), the combined verification and the
 * aggregate of a measurement whose rank records are filled. Used by
 * gs_runner_measure and by drivers with their own timing loop (coll). */
gs_status gs_runner_summarize(gs_measurement *m, int use_device);

/* Fills speedup and efficiency (core/scaling) of each measurement whose
 * status is ok against the baseline of the same workload: the first
 * measurement with world_size 1, status ok and a throughput. Left 0 when
 * there is none or the measurement failed. */
void gs_runner_relate(gs_measurement *measurements, size_t count);

#endif
