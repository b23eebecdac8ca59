/* `gpuscale compare` of two traces (docs/traces.md, "Trace diff"): the
 * GPU kernels of BASE and NEW by name, per rank, as added, removed,
 * changed in count or time, or unchanged. */
#ifndef GS_REPORT_COMPARE_TRACE_DIFF_H
#define GS_REPORT_COMPARE_TRACE_DIFF_H

#include <stdio.h>

#include "core/status.h"
#include "report/analyze/trace_stats.h"
#include "report/compare/compare.h"

typedef enum { GS_DIFF_SAME = 0, GS_DIFF_CHANGED, GS_DIFF_ADDED, GS_DIFF_REMOVED } gs_diff_kind;

typedef struct {
  char name[GS_TRACE_KNAME];
  uint8_t cls;                   /* gs_tev_class */
  gs_diff_kind kind;
  double base_count, new_count;  /* per rank */
  double base_us, new_us;        /* total time per rank */
} gs_trace_diff_row;

typedef struct {
  size_t base_ranks, new_ranks;
  double base_gpu_us, new_gpu_us; /* summed GPU event time per rank */
  double threshold;              /* a time change beyond this fraction is a change */
  gs_trace_diff_row *rows;       /* by |time change| per rank, largest first; owned */
  size_t n, n_added, n_removed, n_changed;
} gs_trace_diff;

/* Analyses the traces of each side (trace_stats.h; a side's files are its
 * ranks) and pairs their kernels by name. Counts and times are per rank
 * (a side's sums over its ranks divided by its rank count), so sets of
 * different sizes compare. A kernel in both is changed when its count
 * differs or its time differs by more than `threshold` (a fraction) of
 * the base. GS_ERR_IO, GS_ERR_FORMAT, GS_ERR_NOMEM as the readers say. */
gs_status gs_trace_diff_load(const char *const *base, size_t n_base, const char *const *next,
                             size_t n_next, double threshold, gs_trace_diff *out);
void gs_trace_diff_free(gs_trace_diff *d);

/* Writes the diff as aligned text, a Markdown table or JSON
 * (schema gpuscale/trace-diff/v1). */
gs_status gs_trace_diff_render(FILE *out, const gs_trace_diff *d, gs_compare_format format);

#endif
