/* The measuring engine of `gpuscale coll`: collective sweeps over message
 * sizes in nccl-tests' vocabulary, run through the job lifecycle
 * (measure/job.h), one result document rewritten after every measured size
 * so that a signal, a lost rank or a crash keeps every completed size, and
 * the alpha-beta model of each sweep (docs/collectives.md). */
#ifndef GS_MEASURE_COLL_SWEEP_H
#define GS_MEASURE_COLL_SWEEP_H

#include "runner/coll.h"
#include "core/arrival_cost.h"
#include "measure/common.h"

#define GS_COLL_OPTION_COUNT 16
#define GS_COLL_MAX_SIZES 4096

extern const char *const gs_coll_place_names[]; /* both, out, in */
enum { GS_COLL_PLACE_BOTH = 0, GS_COLL_PLACE_OUT = 1, GS_COLL_PLACE_IN = 2 };

/* coll's own options (besides the common ones) and the operation asked for. */
typedef struct {
  int all;                      /* OP "all": every collective in turn */
  gs_coll_op op;
  int given_op;
  uint64_t min_bytes, max_bytes, step_factor, step_bytes, check, root;
  uint64_t arrival_cost;        /* --arrival-cost ITERS: measure the cost of recording in
                                   blocks of ITERS instead of a sweep (given_arrival_cost) */
  int dtype, redop, transport, place;
  const char *inject;           /* delay:rank=R,seconds=S or NULL */
  int given_step_factor, given_step_bytes, given_redop, given_root, given_arrival_cost;
  gs_option table[GS_COLL_OPTION_COUNT];
} gs_coll_options;

/* Defaults (8 B to 128 MiB, factor 2, checks on, float sum, both forms) and
 * the option table of coll's own options. */
void gs_coll_options_init(gs_coll_options *o);

/* coll's defaults of the common options, as nccl-tests times: 5 warm-up
 * and 20 timed iterations per size and form, a 300 s wait bound. */
void gs_coll_common_defaults(gs_common_options *common);

/* Sets the operation from the positional OP ("all" or a collective);
 * GS_ERR_USAGE naming OP when it is unknown or given twice. */
gs_status gs_coll_options_take_op(gs_coll_options *o, const char *arg);

/* Checks what can be checked before any rank exists: OP given, the
 * reduction and root against the op, the size range, the fault.
 * GS_ERR_USAGE naming the option. */
gs_status gs_coll_options_check(const gs_coll_options *o);

/* One operation's sweep as measured so far, for the command's table. */
typedef struct {
  const gs_coll_sweep *sweep;   /* op, type, reduction, root, warmup, iters */
  const gs_coll_point *points;  /* sizes in order, one point per size and form */
  size_t n_points;
  int world_size;
  const char *launch;           /* "threads" or "mpi" */
  const char *transport;
  int fitted[2];                /* alpha-beta fit of out-of-place [0], in-place [1] */
  gs_coll_fit fits[2];
} gs_coll_op_result;

/* What recording arrival times cost at one size and form (--arrival-cost,
 * measure/coll_cost.h). */
typedef struct {
  const gs_coll_sweep *sweep;   /* op, type, reduction, warmup, iters, cost_block */
  const gs_coll_point *point;   /* its size and form; its samples mix both kinds of block */
  int world_size;
  const char *launch;           /* "threads" or "mpi" */
  gs_arrival_cost cost;
} gs_coll_cost_result;

/* Who hears of each finished operation, or with --arrival-cost of each
 * size and form's cost (the command, which prints). Called only on the
 * process that writes documents and prints. */
typedef struct {
  void *ctx;
  void (*op_done)(void *ctx, const gs_coll_op_result *result);
  void (*cost_done)(void *ctx, const gs_coll_cost_result *result);
} gs_coll_observer;

typedef struct {
  const gs_coll_options *coll;
  gs_common_options *common;    /* parsed; resolved here */
  const gs_coll_observer *observer; /* may be NULL */
} gs_coll_request;

/* Runs the sweep of every requested operation: starts the job (threads
 * mode, or one rank per process under mpirun/srun), measures size by size
 * and rewrites the document (common->out, default results/coll-<op>.json)
 * after each, on the process that writes. Returns GS_OK; GS_ERR_VERIFY when
 * an element was wrong (every size still measured); GS_ERR_PARTIAL when a
 * signal, a lost or stalled rank or a failure stopped the sweep after a size
 * completed (the document holds the completed sizes and the one that
 * failed); else the failure's status. Called once from the main thread. */
gs_status gs_measure_coll(const gs_coll_request *request);

#endif
