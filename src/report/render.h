/* Renderers of a gs_report: aligned terminal text, GitHub Markdown, tidy
 * CSV of the raw samples, and the analysis as one JSON object. The columns
 * and their formulas are described in docs/report.md. */
#ifndef GS_REPORT_RENDER_H
#define GS_REPORT_RENDER_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "report/report.h"

typedef enum {
  GS_REPORT_TEXT = 0,
  GS_REPORT_MARKDOWN,
  GS_REPORT_CSV,
  GS_REPORT_JSON
} gs_report_format;

/* Choice names for --format, in gs_report_format order, NULL-terminated. */
extern const char *const gs_report_format_choices[];

/* Writes `r` to `out` in `format`. Returns GS_ERR_IO when a write fails
 * (the caller names the destination), GS_ERR_NOMEM on allocation failure. */
gs_status gs_report_render(FILE *out, const gs_report *r, gs_report_format format);

/* The analysis as a JSON object ("schema": "gpuscale/report/v1"); NaN and
 * unavailable numbers are null. The caller owns it; NULL when out of memory. */
cJSON *gs_report_to_json(const gs_report *r);

#endif
