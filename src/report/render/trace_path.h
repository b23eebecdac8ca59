/* The critical path section of the trace report (trace_report.c,
 * docs/traces.md "The critical path"): report/analyze/trace_path.h's
 * steps as text, Markdown and HTML tables, JSON members and CSV rows. */
#ifndef GS_REPORT_RENDER_TRACE_PATH_H
#define GS_REPORT_RENDER_TRACE_PATH_H

#include <stdio.h>

#include "core/json.h"
#include "report/analyze/trace_stats.h"
#include "report/render/internal.h"

/* Steps named one by one in the tables (every step is in JSON and CSV). */
#define GS_TRACE_PATH_TABLE_STEPS 20

/* The tables of every path of `s`: per step, then per rank and phase. */
gs_status gs_trace_path_render_tables(gs_render_writer *w, const gs_trace_stats *s);

/* `root`'s "critical_path" array: a member per path with its steps. */
void gs_trace_path_render_json(gs_json_build *b, cJSON *root, const gs_trace_stats *s);

/* The CSV columns the path rows fill, after the trace report's own. */
#define GS_TRACE_PATH_CSV_HEAD \
  "step,step_us,path_compute_us,path_comm_us,path_memcpy_us,path_host_us,path_other_us"
/* Empty cells for those columns, for the report's other rows. */
#define GS_TRACE_PATH_CSV_EMPTY ",,,,,,,"

/* One row (kind "path") per step and rank on its path; `lead` is the
 * number of the report's own columns after kind and rank, left empty. */
void gs_trace_path_render_csv(FILE *out, const gs_trace_stats *s, int lead);

#endif
