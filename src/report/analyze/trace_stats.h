/* Where the GPU time of a traced run went (docs/traces.md): per rank the
 * temporal breakdown, communication-computation overlap, idle time split
 * into host wait, kernel wait and other, the kernels that took the time
 * and the CUDA launch delays; across ranks, who entered each collective
 * last and what the others waited. Definitions follow Holistic Trace
 * Analysis (HTA 0.5.0) so the figures can be checked against it
 * (bench/trace-vs-hta.sh). Works on core/trace_events.h, from PyTorch
 * profiler traces and gpuscale's own alike. */
#ifndef GS_REPORT_ANALYZE_TRACE_STATS_H
#define GS_REPORT_ANALYZE_TRACE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "core/trace_events.h"
#include "core/types.h"
#include "report/analyze/trace_path.h"

/* HTA's default: a gap under 30 us between kernels of a stream, not caused
 * by the host, is kernel wait. */
#define GS_TRACE_KERNEL_WAIT_US 30.0
/* Kernels named in the top list. */
#define GS_TRACE_TOP 10
/* Launch-delay outliers named. */
#define GS_TRACE_OUTLIERS 5
#define GS_TRACE_KNAME 1024

typedef struct {
  char name[GS_TRACE_KNAME];
  uint8_t cls;               /* gs_tev_class */
  uint64_t count;
  double total_us, mean_us, min_us, max_us;
  double share;              /* of the time of every kept GPU event (0..1) */
} gs_trace_kernel_row;

typedef struct {
  char name[GS_TRACE_KNAME];
  double delay_us, ts_us;
} gs_trace_outlier;

/* A CPU op (Kineto's cpu_op) by name: inclusive time counts the ops it
 * called, self time leaves them out. */
typedef struct {
  char name[GS_TRACE_KNAME];
  uint64_t count;
  double total_us, self_us, mean_us;  /* mean: of the inclusive time */
  double share;                       /* self time over every op's self time (0..1) */
} gs_trace_cpu_row;

typedef struct {
  char label[GS_TEXT_SHORT];            /* "rank 1" */
  char path[GS_TEXT_LONG];
  int rank;
  int gpuscale;                   /* 1: from a gpuscale --trace file (steps are run << 16 | step) */
  uint64_t bytes, n_events, n_cpu_ops;
  uint64_t n_gpu;                 /* GPU events analysed */
  uint64_t n_dropped;             /* GPU events outside the kept profiler steps */
  int steps;                      /* distinct ProfilerStep marks; >= 2: the last is left out */
  /* Temporal breakdown, us. span: first GPU event's start to the last's end. */
  double origin_us;               /* the first GPU event's start */
  double span_us, busy_us, idle_us, compute_us, non_compute_us, comm_us, memory_us;
  double overlap_us, overlap;     /* computing while communicating; overlap/comm_us (NAN: no comm) */
  /* Idle split, us (gaps between consecutive events of a stream). */
  double idle_host_us, idle_kernel_us, idle_other_us;
  /* Kernels by total time, the first GS_TRACE_TOP. */
  size_t n_kernel_names, n_top;
  gs_trace_kernel_row top[GS_TRACE_TOP];
  gs_trace_kernel_row *kernels;   /* all n_kernel_names by total time, owned (trace diff) */
  double gpu_total_us;            /* the summed durations of every kept GPU event */
  /* CPU ops by self time (by inclusive time when cpu_unordered), the
   * first GS_TRACE_TOP. */
  uint64_t n_cpu_op_events;
  size_t n_cpu_names, n_cpu_top;
  int cpu_unordered;              /* a thread's ops out of start order: self times NAN */
  double cpu_self_us;             /* every op's self time summed: the host's time in ops */
  gs_trace_cpu_row cpu_top[GS_TRACE_TOP];
  /* Launch delay: kernel start - its runtime call's start, us. */
  uint64_t n_launches, n_short;   /* short: the kernel ran for less than its launch call */
  double delay_mean, delay_p50, delay_p90, delay_p99, delay_max, delay_fence;
  uint64_t n_outliers;            /* delays above delay_fence (Q3 + 3 IQR) */
  size_t n_named_outliers;
  gs_trace_outlier outliers[GS_TRACE_OUTLIERS];
  /* Communication kernels' starts in order (for the skew), owned. */
  double *coll_ts;
  size_t n_coll;
  /* The analysed GPU events in start order and the positions of the
   * communication kernels among them (for the critical path), owned;
   * freed once the path is computed. */
  gs_trace_node *nodes;
  size_t n_nodes;
  uint32_t *coll_node;
} gs_trace_rank_stats;

typedef struct {
  int last_count;                 /* collectives this rank entered last */
  double wait_us;                 /* its summed wait for the last rank */
} gs_trace_skew_rank;

typedef struct {
  double kernel_wait_us;          /* the kernel-wait threshold used */
  size_t n_ranks;
  gs_trace_rank_stats *ranks;
  /* Collective skew: the i-th communication kernel of every rank is one
   * collective; its skew is the latest entry minus the earliest. */
  size_t n_collectives;           /* matched on every rank (the fewest any rank has) */
  int coll_counts_differ;         /* 1: ranks ran different numbers of them */
  double skew_mean_us, skew_p50_us, skew_max_us;
  size_t skew_max_index;
  int skew_max_rank;              /* who entered that one last */
  gs_trace_skew_rank *skew;       /* by position in ranks */
  /* The critical path of each group of ranks (one per measurement). */
  size_t n_paths;
  gs_trace_cpath *paths;
} gs_trace_stats;

/* Analyses one rank's events (sorted: as the readers leave them) into
 * *out; `kernel_wait_us` is the kernel-wait threshold. With
 * t->hta_rounding, times are first rounded inward to whole microseconds as
 * HTA does (start up, end down). When the trace has two profiler steps or
 * more, only GPU events launched before the last step began are kept
 * (HTA's rule). Thread-safe: one call per rank on any thread. GS_ERR_NOMEM. */
gs_status gs_trace_stats_rank(gs_trace_events *t, double kernel_wait_us,
                              gs_trace_rank_stats *out);

/* Frees what gs_trace_stats_rank allocated in *r; accepts a zeroed one. */
void gs_trace_rank_stats_free(gs_trace_rank_stats *r);

/* Reads `n` trace files (PyTorch profiler traces, one per rank, or
 * gpuscale --trace files, every rank of every measurement) and analyses
 * each, PyTorch's on up to one thread per core, then the skew across all.
 * Ranks are ordered by rank number. Memory: one rank's events per thread,
 * each freed once analysed. */
gs_status gs_trace_stats_load(const char *const *paths, size_t n, double kernel_wait_us,
                              gs_trace_stats *out);

/* Computes the cross-rank skew from the ranks' collectives. */
void gs_trace_stats_skew(gs_trace_stats *s);

/* Computes s->paths from the ranks' kept nodes (trace_path.c), one path
 * per group of ranks (rank / GS_MAX_RANKS: gpuscale's measurements), and
 * frees the nodes. A gap between GPU events shorter than
 * s->kernel_wait_us is launch latency. GS_ERR_NOMEM. */
gs_status gs_trace_cpath_compute(gs_trace_stats *s);

void gs_trace_stats_free(gs_trace_stats *s);

#endif
