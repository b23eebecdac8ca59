/* The report of trace files (docs/traces.md): what
 * report/analyze/trace_stats.h found, in every report format. */
#ifndef GS_REPORT_RENDER_TRACE_REPORT_H
#define GS_REPORT_RENDER_TRACE_REPORT_H

#include <stdio.h>

#include "report/analyze/trace_stats.h"
#include "report/render/render.h"

/* Writes the analysis `s` to `out` as `format`: text, Markdown and HTML
 * tables (temporal breakdown, idle time, top kernels, CUDA launches,
 * collective skew), CSV (a row per rank, then per top kernel) or JSON
 * (schema gpuscale/trace-report/v1). GS_ERR_NOMEM, GS_ERR_IO. */
gs_status gs_trace_report_render(FILE *out, const gs_trace_stats *s, gs_report_format format);

#endif
