/* Renderers of a gs_report: aligned terminal text, GitHub Markdown, tidy
 * CSV of the raw samples, and the analysis as one JSON object. The columns
 * and their formulas are described in docs/report.md. */
#ifndef GS_REPORT_RENDER_H
#define GS_REPORT_RENDER_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/json.h"
#include "core/status.h"
#include "report/analyze/report.h"

typedef enum {
  GS_REPORT_TEXT = 0,
  GS_REPORT_MARKDOWN,
  GS_REPORT_CSV,
  GS_REPORT_JSON,
  GS_REPORT_HTML
} gs_report_format;

/* One plot of a report: which series and row it belongs to (row -1: the
 * series as a whole), its file name stem and caption (both name what
 * varies: the series' title, the rank count, the file where a rank count
 * repeats), and the SVG text
 * (from "<svg" on) that HTML embeds. */
typedef struct {
  size_t series;
  int row;
  char name[160];  /* file name stem: the series' title and the plot ("voxelize-strong-
                      scaling-speedup"), unique within the report */
  char caption[256];
  char *svg;  /* owned; NULL when gnuplot wrote none */
} gs_report_plot;

typedef struct {
  size_t n;
  gs_report_plot *p;  /* owned */
  char note[512];     /* said in the report: where the plots are, or why there are none */
} gs_report_plots;

/* Draws the report's plots with gnuplot (speedup and efficiency against the
 * GPU count with the ideal line, bus bandwidth against message size, latency
 * CDF and throughput per rank). gnuplot runs without a shell, in a private
 * temporary directory, on data and a script this function writes; no text
 * from the documents reaches the script except sanitized titles. With `dir`
 * the PNG and SVG files are copied there as NAME.png / NAME.svg. When
 * gnuplot is not installed (built without GS_GNUPLOT or the program is
 * missing) `out` is empty and its note says so; that is not an error.
 * The latency CDFs draw the rows' own samples: load `r` with
 * GS_REPORT_ROW_SAMPLES (a rank without them gets no CDF line).
 * Errors: GS_ERR_IO naming the path (dir not writable, gnuplot failed),
 * GS_ERR_NOMEM. Each series that `prediction` (may be NULL) predicts gets
 * its predicted speedup as a dashed continuation of the measured one
 * (`report --predict`, docs/predict.md). */
struct gs_predict;
gs_status gs_report_plots_make(const gs_report *r, const char *dir,
                               const struct gs_predict *prediction, gs_report_plots *out);

void gs_report_plots_free(gs_report_plots *plots);

/* Choice names for --format, in gs_report_format order, NULL-terminated. */
extern const char *const gs_report_format_choices[];

/* Writes `r` to `out` in `format`. Returns GS_ERR_IO when a write fails
 * (the caller names the destination), GS_ERR_NOMEM on allocation failure. */
gs_status gs_report_render(FILE *out, const gs_report *r, gs_report_format format);

/* gs_report_render_with option: CSV with one row per raw sample instead of
 * one per measurement (the report must keep its samples: loaded without
 * GS_REPORT_DROP_SAMPLES). */
#define GS_REPORT_CSV_SAMPLES 1u
/* gs_report_render_with option: CSV with one row per rate of an llm rate
 * sweep or search (llm.rates) instead of one per measurement. */
#define GS_REPORT_CSV_RATES 2u

/* Like gs_report_render; `plots` (may be NULL) are embedded in HTML and
 * their note is printed in text, Markdown and HTML; GS_REPORT_CSV_*
 * `options`. */
gs_status gs_report_render_with(FILE *out, const gs_report *r, gs_report_format format,
                                const gs_report_plots *plots, unsigned options);

/* Prints `doc` (indented) and a newline to `out`, then deletes `doc` (may
 * be NULL: out of memory). GS_ERR_NOMEM, GS_ERR_IO when a write fails. */
gs_status gs_report_print_json(FILE *out, cJSON *doc);

/* The analysis as a JSON object ("schema": "gpuscale/report/v1"); NaN and
 * unavailable numbers are null. The caller owns it; NULL when out of memory. */
cJSON *gs_report_to_json(const gs_report *r);

/* ---- a pipeline (pipeline.c) ---------------------------------------------- */

/* 1 when series `series` of `r` has a pipelined row (mlp --pp, llm --pp). */
int gs_report_series_pipelined(const gs_report *r, size_t series);

/* Only the pipeline sections of series `series` of `r` (nothing without a
 * pipelined row), word for word as the report prints them: the bubble
 * table, the stages' table and each row's why-not sentence, in text,
 * Markdown or HTML body form; for the terminal of run and scale.
 * GS_ERR_IO when a write fails, GS_ERR_NOMEM. */
gs_status gs_report_render_pipeline(FILE *out, const gs_report *r, size_t series,
                                    gs_report_format format);

/* ---- the machine (machine.c) ---------------------------------------------- */

/* Only the node verdict table of `r` (nothing when it has no info
 * document), in text, Markdown or HTML body form; for `suite`'s terminal. */
gs_status gs_report_render_node_verdict(FILE *out, const gs_report *r, gs_report_format format);

/* Adds "node_verdict" (null without an info document) and "p2p" (per p2p
 * document its tests' medians) to the report's JSON object `doc`, through
 * build `b` (core/json.h). */
void gs_report_machine_json(gs_json_build *b, const gs_report *r, cJSON *doc);

#endif
