/* The collective driver behind `gpuscale coll`: one sweep of one operation
 * over message sizes, in both forms (out of place, in place), on the ranks
 * of a communicator world. Each rank thread enqueues its timed iterations
 * back to back with a CUDA event between them (nccl-tests' pipelined timing,
 * but every iteration kept as a sample), checks the result after timing, and
 * fills its rank record; under MPI the records are gathered to process 0. */
#ifndef GS_COLL_H
#define GS_COLL_H

#include "core/coll_model.h"
#include "core/result.h"
#include "platform/comm.h"
#include "platform/trace.h"

typedef struct {
  gs_coll_op op;
  gs_dtype dtype;
  gs_redop redop;        /* ops with a reduction */
  int root;              /* broadcast, reduce */
  const uint64_t *sizes; /* requested bytes, ascending */
  size_t n_sizes;
  int out_of_place, in_place; /* forms to measure (in place only where defined) */
  uint64_t warmup, iters;     /* iters >= 1 */
  int check;                  /* verify each size after timing */
  int arrival;                /* record each rank's entry and exit at every timed iteration
                                 (2 or more ranks; runner/arrival.h) */
  uint64_t cost_block;        /* --arrival-cost: the timed iterations run in blocks of this
                                 many (iters a multiple of 4 blocks), recording arrival times
                                 in those gs_arrival_cost_records names (arrival set); 0: one
                                 batch (core/arrival_cost.h) */
  gs_backend backend;
  const gs_comm_job *job;
  gs_comm_world *world;
  int local_ranks;
  const int *devices; /* CUDA ordinal per local rank */
  int delay_rank;     /* --inject delay: rank to hold back, -1 none */
  double delay_seconds;
  int late_rank;      /* --inject late: rank that arrives late at every iteration, -1 none */
  double late_us;     /* its lateness in microseconds, as given */
  uint64_t *progress;  /* the progress count (gs_comm_progress), read at the start and
                          advanced past every synchronization: a sweep measured one size
                          per call keeps counting, so that a timeout can name the rank
                          that fell behind. NULL: count from 0 */
  gs_trace *trace;     /* --trace's recorder (its measurement started), or NULL */
  int trace_measurement; /* the trace's measurement of this call */
} gs_coll_sweep;

/* One size in one form: the measurement (workload "coll", one run) and what
 * the table shows. On processes other than 0 under MPI only the local rank's
 * record is filled. */
typedef struct {
  gs_coll_shape shape;
  int in_place;
  int checked;
  uint64_t wrong;      /* over all ranks */
  double factor;       /* bus-bandwidth factor */
  double time_seconds; /* mean of the per-iteration slowest rank */
  double algbw, busbw; /* bytes per second */
  gs_measurement m;
} gs_coll_point;

/* Runs the sweep. *points (count *n_points) is allocated even on failure
 * and freed with gs_coll_points_free. Returns GS_OK, the first rank error,
 * or GS_ERR_VERIFY when some element was wrong (every point still measured). */
gs_status gs_coll_measure(const gs_coll_sweep *sweep, gs_coll_point **points, size_t *n_points);

void gs_coll_points_free(gs_coll_point *points, size_t n_points);

#endif
