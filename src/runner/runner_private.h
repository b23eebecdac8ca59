/* Private to the runner (runner/runner*.c): the state its rank threads
 * share, one rank's job, the mpi-mode lockstep message, and the functions
 * its files call across one another. Nothing outside runner/runner*.c
 * includes this header. */
#ifndef GS_RUNNER_PRIVATE_H
#define GS_RUNNER_PRIVATE_H

#include <stdint.h>

#include "runner/runner.h"
#include "core/barrier.h"
#include "core/rng.h"
#include "platform/comm.h"

/* mpi mode: what one process tells the others at a lockstep point. */
typedef struct {
  uint32_t flags;                /* GS_LOCKSTEP_* */
  uint32_t run;                  /* run of the carried sample */
  uint64_t steps_completed;
  double device_seconds, wall_seconds, comm_seconds;
  double arrival_entry, arrival_exit; /* the sample's arrival at its collectives (NaN: none) */
  uint64_t arrival_host_checked, arrival_host_bound; /* the rank's totals so far (arrival.h) */
} gs_lockstep_msg;

enum {
  GS_LOCKSTEP_STOP = 1,             /* rank 0: the timed loop has run long enough */
  GS_LOCKSTEP_FAILED = 2,           /* this rank failed: everyone stops */
  GS_LOCKSTEP_FINISHED = 4,         /* every run done: idle processes stop waiting */
  GS_LOCKSTEP_SAMPLE = 8,           /* carries a timed sample */
  GS_LOCKSTEP_FIRST = 16,           /* carries the cold-start sample */
  GS_LOCKSTEP_SAMPLE_FAILED = 32    /* the carried sample failed (fail fault) */
};

typedef struct {
  const gs_workload *workload;
  const void *opts;
  const gs_run_config *config;
  gs_measurement *m;
  gs_barrier barrier;
  gs_comm_world *comm_world;     /* when the workload communicates */
  int stop;                      /* written by rank 0 between barriers only */
  uint64_t unit_begin[GS_MAX_RANKS];
  uint64_t unit_count[GS_MAX_RANKS];
  uint64_t unit_total;           /* units of the whole step (weak: world_size x the units) */
  /* mpi mode (one process, one rank; see lockstep_mpi). */
  int mpi;
  gs_lockstep_msg *inbox;           /* one message per process */
  uint64_t lockstep_count;
  int finished;                  /* a FINISHED message arrived */
  int failed_rank;               /* a rank that sent FAILED, -1 none */
  int control_broken;            /* the control world timed out or was interrupted */
  size_t capacity[GS_MAX_RANKS]; /* sample capacity of rank k's record */
  uint64_t capacity_run[GS_MAX_RANKS]; /* ... in this run + 1 (0: none yet) */
} gs_runner_shared;

typedef struct {
  gs_runner_shared *shared;
  int rank;
  gs_status status;
  char error[GS_TEXT_ERROR];
  /* Per-rank resources. */
  gs_rank_context ctx;
  void *state;
  cudaEvent_t start, stop;
  double timed_wall_sum;         /* rank 0: wall seconds of this run's timed steps */
  double last_progress;
  double slow_factor;            /* slow fault on this rank; 1 = none */
  double late_seconds;           /* late fault: every step starts this late; 0 = none */
  unsigned long long *fault_slot; /* CUDA slow fault: the step's start stamp (device memory) */
  int gate_passed;               /* rank 0: has met the config's start gate */
  /* Faults on this rank and the steps it has completed in the measurement. */
  uint64_t steps_completed;
  uint64_t current_run;
  const gs_fault *fail, *kill, *hang;
  double delay_seconds;
  int delay_pending;             /* the delay is still to be applied (cold-start step) */
  gs_rng fail_rng;
  gs_lockstep_msg outbox;           /* mpi mode: sent at the next lockstep point */
} gs_rank_job;

/* The thread body of one rank (arg: its gs_rank_job): setup, every run,
 * teardown; the outcome goes into job->status/error and the records. In mpi
 * mode the process's own thread calls it directly. (runner_rank.c) */
void *gs_runner_rank_main(void *arg);

/* Appends one sample to `rec`, growing its arrays (capacity in samples);
 * device and comm samples only when with_device / with_comm. GS_ERR_NOMEM
 * when they cannot grow. (runner_rank.c) */
gs_status gs_runner_append_sample(gs_rank_record *rec, size_t *capacity, double device_seconds,
                                  double wall_seconds, int with_device, double comm_seconds,
                                  int with_comm);

/* mpi mode: one lockstep point. Every process sends its outbox (plus
 * `flags`) and receives everyone's, which makes it a barrier too; bounded
 * by the control world's timeout and ended by SIGINT/SIGTERM. Sets
 * sh->stop from rank 0's decision; GS_ERR_ABORTED when a rank failed.
 * Called by the process's one rank thread. (runner_mpi.c) */
gs_status gs_runner_lockstep_mpi(gs_rank_job *job, uint32_t flags);

/* This process's part of an mpi-mode measurement: its rank's runs (or
 * lockstep without measuring when it has no rank at this count), the
 * outcome exchange, the measurement's error from the first real failure
 * and the summary. Returns the measurement's status. (runner_mpi.c) */
gs_status gs_runner_measure_mpi(gs_runner_shared *sh);

#endif
