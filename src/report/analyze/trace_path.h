/* The critical path across the ranks of a trace (docs/traces.md, "The
 * critical path"): per step, the chain of dependencies that set the step's
 * end, walked back from the last GPU event through each event's stream or
 * host predecessor and, at a collective, to the rank that entered it last
 * (a collective ends on every rank only after the last one entered it).
 * Each step's time is split among the ranks and phases the chain passed
 * through. The types live here; gs_trace_cpath_compute (trace_stats.h)
 * fills them from the ranks' kept GPU events. */
#ifndef GS_REPORT_ANALYZE_TRACE_PATH_H
#define GS_REPORT_ANALYZE_TRACE_PATH_H

#include <stddef.h>
#include <stdint.h>

/* What the chain was doing: a kernel computing, an NCCL kernel once every
 * rank had entered its collective, a copy or memset, the GPU waiting for
 * the host (a launch issued after the GPU had run dry, or the launch
 * latency between back-to-back kernels: a gap under the kernel-wait
 * threshold), and a longer gap no launch explains (another stream, an
 * event, a synchronization). */
typedef enum {
  GS_CP_COMPUTE = 0,
  GS_CP_COMM,
  GS_CP_MEMCPY,
  GS_CP_HOST,
  GS_CP_OTHER,
  GS_CP_PHASES
} gs_trace_phase;

/* "compute", "communication", "memcpy", "host/launch", "other wait". */
const char *gs_trace_phase_name(int phase);
/* The same as JSON keys: "compute", "communication", "memcpy",
 * "host_launch", "other_wait". */
const char *gs_trace_phase_key(int phase);

/* One GPU event as the walk needs it: 32 bytes, kept per rank until the
 * path is computed. */
typedef struct {
  double ts, end;         /* us on the trace's clock (rounded as analysed) */
  float delay;            /* start - its launch call's start, us; NAN: no launch known */
  int32_t stream;
  int32_t step;           /* ProfilerStep#N's N (gpuscale: run << 16 | step); -1 none */
  uint8_t cls;            /* gs_tev_class */
} gs_trace_node;

/* One step of the path: [start_us, end_us] split into ranks x phases. */
typedef struct {
  int64_t step;           /* the step's number; -1: the trace has no steps (one window) */
  double start_us, end_us;
  double *us;             /* [rank * GS_CP_PHASES + phase]; sums to end_us - start_us */
  int bound_rank;         /* position in the path's ranks of the largest cell */
  int bound_phase;
  double bound_share;     /* that cell over the step's time */
  int crossings;          /* collectives where the chain moved to another rank */
} gs_trace_cpath_step;

/* The path of one group of ranks (one measurement: every PyTorch profiler
 * rank is in group 0). */
typedef struct {
  int group;
  size_t first_rank, n_ranks;    /* positions in gs_trace_stats.ranks */
  size_t n_steps;
  gs_trace_cpath_step *steps;
  double total_us;               /* the steps' summed time */
  double *us;                    /* summed over the steps, [rank * GS_CP_PHASES + phase] */
  int bound_rank, bound_phase;   /* the largest cell of the sum */
  double bound_share;
} gs_trace_cpath;

void gs_trace_cpath_free(gs_trace_cpath *p);

#endif
