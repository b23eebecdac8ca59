/* The serving sections of the report (goodput.c, layouts.c): not part of
 * the report layer's public interface. */
#ifndef GS_REPORT_RENDER_GOODPUT_H
#define GS_REPORT_RENDER_GOODPUT_H

#include "core/json.h"
#include "report/render/internal.h"

/* The goodput table of series `s`: one line per request-based row whose
 * document names latency targets; nothing when none does. GS_ERR_NOMEM
 * when a row cannot be allocated. */
gs_status gs_render_goodput_table(gs_render_writer *w, const gs_report_series *s);

/* The rates of each row of series `s` measured by llm --rates or
 * --find-max-rate (docs/report.md, "Rates"): a table of every rate (by
 * rate, with the order measured) and the highest rate meeting the
 * targets with its bracket; nothing when no row has rates. GS_ERR_NOMEM
 * when a row cannot be allocated. */
gs_status gs_render_rates_table(gs_render_writer *w, const gs_report_series *s);

/* The report JSON row's member "rates" (absent without rates): mode,
 * percentile, kept_rate, max_rate, bracket, the search's converged,
 * unreachable and tolerance, and the points by rate with their "slo"
 * figures as the document writes them. */
void gs_render_rates_json(gs_json_build *b, cJSON *o, const gs_report_row *row);

/* The layouts sections of `r` (report/analyze/layouts.h): one per file and
 * world size with several tensor-parallel degrees; nothing when none.
 * GS_ERR_NOMEM when memory runs out. */
gs_status gs_render_layouts(gs_render_writer *w, const gs_report *r);

/* The report JSON's member "layouts" (an array; absent when none); marks
 * the build failed when memory runs out. */
void gs_render_layouts_json(gs_json_build *b, cJSON *doc, const gs_report *r);

#endif
