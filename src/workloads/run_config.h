/* The configuration of one measurement: ranks and their devices, timing,
 * repetitions, the split of work, injected faults and, under a launcher,
 * the control world. The runner (runner/) measures a workload's steps by it;
 * a workload that owns its timing loop (workload.h, driver hooks) reads the
 * same configuration. */
#ifndef GS_RUN_CONFIG_H
#define GS_RUN_CONFIG_H

#include <stdint.h>

#include "core/barrier.h"
#include "core/fault.h"
#include "core/scaling.h"
#include "core/trace_model.h"
#include "core/types.h"
#include "platform/comm.h"

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
  /* --arrival-times 0: no rank records its entry and exit at collectives
   * (docs/stragglers.md). Zero records them wherever the workload can:
   * the runner's communicating workloads, llm's shards (not llm's
   * pipeline stages on GPUs) and coll. The option's default is zero but
   * for the runner's workloads on CUDA, where the runner driver's
   * configure hook sets it unless the option was given (their cost). */
  int no_arrival_times;
  /* --nccl-max-ctas: the most CTAs (thread blocks) NCCL gives one
   * collective of the measurement's communicators on CUDA
   * (gs_comm_world_config), 1..GS_COMM_MAX_CTAS; 0 = NCCL's default. The
   * option's default is 0 but for the runner's workloads on CUDA, where the
   * runner driver's configure hook sets 4 unless the option was given (their
   * collectives overlap compute). */
  int nccl_max_ctas;
  gs_fault_list faults;          /* injected faults; those on ranks >= world_size are ignored */
  /* When set, rank 0 waits here once every rank is set up, so that several
   * measurements running at once (a plan) start their steps together. Each
   * measurement arrives exactly once, also when its setup failed. */
  gs_barrier *start_gate;
  /* The command's trace recorder (--trace, docs/timeline.md), or NULL:
   * each rank's thread attaches to it and records its first timed steps
   * of every run. */
  gs_trace *trace;
  int trace_measurement;         /* the trace's measurement the ranks belong to
                                    (the document's index of this measurement) */
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

#endif
