/* What the text, Markdown and HTML renderers share (render.c,
 * table.c, csv.c): a table of text cells printed aligned, as
 * a GitHub table or as HTML; the writer that knows which; number cells;
 * the CSV renderer. Not part of the report layer's public interface. */
#ifndef GS_REPORT_RENDER_INTERNAL_H
#define GS_REPORT_RENDER_INTERNAL_H

#include <stdio.h>

#include "report/render/render.h"

#define GS_RENDER_CELL 128
#define GS_RENDER_MAX_COLS 20

/* A table of text cells; numbers are right-aligned in text mode. */
typedef struct {
  size_t ncols, nrows, cap;
  const char *head[GS_RENDER_MAX_COLS];
  int left[GS_RENDER_MAX_COLS];  // 1: left-aligned column
  char (*cells)[GS_RENDER_MAX_COLS][GS_RENDER_CELL];
  int failed;  /* a row could not be allocated: rows went to `scratch` */
  char scratch[GS_RENDER_MAX_COLS][GS_RENDER_CELL];
} gs_render_table;

/* Where a report goes: terminal text, Markdown or HTML (md is also set for
 * HTML, whose wording follows Markdown's), with the plots HTML embeds. */
typedef struct {
  FILE *f;
  int md, html;
  const gs_report_plots *plots;
  size_t series;  /* index of the series being written (for its plots) */
} gs_render_writer;

/* Starts table `t` with `ncols` columns named `head`; left[i] 1 makes
 * column i left-aligned (NULL: all right-aligned, as numbers). */
void gs_render_table_init(gs_render_table *t, size_t ncols, const char *const *head,
                          const int *left);

/* Adds a row to `t` and returns its cells, emptied; when out of memory the
 * table is marked failed (gs_render_table_done reports it) and a scratch
 * row is returned. */
char (*gs_render_table_row(gs_render_table *t))[GS_RENDER_CELL];

/* Prints `t` as `w` wants it (text rows start with `indent`) and frees it;
 * GS_ERR_NOMEM when a row could not be allocated (nothing printed). */
gs_status gs_render_table_done(gs_render_writer *w, gs_render_table *t, const char *indent);

/* Writes `text` to `out` with &, <, > and " escaped for HTML. */
void gs_render_html_text(FILE *out, const char *text);

/* A block of text: level 1-3 a heading, 0 a paragraph, -1 a caption
 * (bold in Markdown/HTML, followed by ':' in text). Text mode indents it. */
void gs_render_block(gs_render_writer *w, int level, const char *indent, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A bulleted list of `items[0..n)`. */
void gs_render_list(gs_render_writer *w, const char *const *items, size_t n);

/* HTML only: the plots of series w->series for row `row` (-1: the series'
 * plots), inline SVG with their captions. */
void gs_render_plots_of(gs_render_writer *w, const gs_report_series *s, int row);

/* printf into one cell (GS_RENDER_CELL bytes, truncated). */
void gs_render_cellf(char *cell, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Number cells. Times, rates, bandwidths and sizes are kept as numbers
 * until the table is printed, and then each column gets one unit by
 * core/format's rule (gs_unit_for over the column's values: "8.13 us", not
 * "0.008 ms"); "-" for a value that is not finite. A fraction is printed as
 * a percentage with 1 decimal; gs_render_fixed gives `digits` decimals and
 * `suffix`. */
void gs_render_time(char *cell, double seconds);
/* A time followed by `note` (" (40.0%)"), at most 100 bytes. */
void gs_render_time_noted(char *cell, double seconds, const char *note);
void gs_render_rate(char *cell, double v);
void gs_render_bandwidth(char *cell, double bytes_per_second);
void gs_render_bytes(char *cell, double bytes);
void gs_render_pct(char *cell, double fraction);
void gs_render_fixed(char *cell, double v, int digits, const char *suffix);
/* A ratio with its 95% interval in the one form of core/scaling
 * (gs_scaling_format_ratio): a speedup "1.72x [1.69, 1.75]" (`pct` 0) or
 * an efficiency "86.0% [84.5, 87.5]" (`pct` 1); "-" when v is not finite. */
void gs_render_ratio(char *cell, double v, double low, double high, int pct);

/* n, mean, min, max, stddev (times) and the share within 15% into c[0..5]. */
void gs_render_latency_cells(char (*c)[GS_RENDER_CELL], size_t n, double mean, double min,
                             double max, double stddev, double stable);

/* The node verdict section of `r` (nothing without an info document) and
 * the machine sections: inventory, topology and p2p matrices
 * (machine.c). */
void gs_render_node_verdict(gs_render_writer *w, const gs_report *r);
gs_status gs_render_machine_sections(gs_render_writer *w, const gs_report *r);

/* What the overview says of one series (docs/report.md, "Overview"): the
 * rank counts measured, the N its figures are of (0: none), the figure
 * with its unit ("100 Mpoints/s", "busbw 180 GB/s (best, allreduce)"), its
 * number, speedup and efficiency (NaN where none) and the verdict in words. */
typedef struct {
  char ranks[64];
  int world_size;
  char figure[96];
  double throughput, speedup, efficiency;
  double speedup_low, speedup_high; /* the speedup's 95% interval; NaN when none */
  char verdict[96];
} gs_render_overview;

void gs_render_overview_cells(const gs_report_series *s, gs_render_overview *o);

/* The CSV of `r` (docs/report.md, "Output formats"): one row per
 * measurement, with GS_REPORT_CSV_RATES one row per measured rate of an llm
 * rate sweep or search, or with GS_REPORT_CSV_SAMPLES in `options` one row per raw
 * sample in file, measurement, run, iteration order (that needs the
 * documents' samples: not GS_REPORT_DROP_SAMPLES). GS_ERR_NOMEM when memory
 * runs out. */
gs_status gs_report_render_csv(FILE *out, const gs_report *r, unsigned options);

/* CSV cells as the report writes them: a field (quoted when it must be;
 * NULL empty) and a comma followed by a number (shortest exact form,
 * empty when not finite). */
void gs_render_csv_field(FILE *out, const char *text);
void gs_render_csv_number(FILE *out, double v);

/* The timeline summary of multi-rank `row` when its document names a
 * trace (trace.c; docs/timeline.md): per rank the shares of the
 * traced steps spent computing, communicating, copying, waiting and idle,
 * or a line saying why the trace could not be read. */
gs_status gs_render_timeline(gs_render_writer *w, const gs_report *r, const gs_report_row *row);

/* The straggler section (straggler.c; docs/report.md, "Stragglers"): of a
 * multi-rank workload row, each rank's relative and individual score with
 * their intervals and the rank named or "nobody"; of a collective series,
 * one line per measurement with its slowest rank. Nothing for one rank. */
gs_status gs_render_stragglers(gs_render_writer *w, const gs_report_row *row);
gs_status gs_render_coll_stragglers(gs_render_writer *w, const gs_report_series *s);

/* The row's "stragglers" member of the JSON report: null when not scored. */
void gs_render_stragglers_json(gs_json_build *b, cJSON *o, const gs_report_row *row);

/* The CSV columns of the straggler (their names, and one row's fields,
 * each after a comma): the named rank or "nobody" (empty: not scored), its
 * host, the rank the figures are of (named, else the largest relative
 * score) and its scores with their intervals. */
extern const char *const gs_render_csv_straggler_head;
void gs_render_csv_stragglers(FILE *out, const gs_report_row *row);

/* The arrival skew (arrival.c; docs/stragglers.md, "Arrival skew"): a
 * measurement's sentence (nothing without an "arrival" member) and one per
 * stage group ("arrival_groups"), the table of a collective series, the
 * row's "arrival" and "arrival_groups" members of the JSON report (null
 * without one), and its CSV columns (their names, and one row's fields,
 * each led by a comma; empty without one). */
void gs_render_arrival(gs_render_writer *w, const gs_report_row *row);
gs_status gs_render_coll_arrival(gs_render_writer *w, const gs_report_series *s);
void gs_render_arrival_json(gs_json_build *b, cJSON *o, const gs_report_row *row);
extern const char *const gs_render_csv_arrival_head;
void gs_render_csv_arrival(FILE *out, const gs_report_row *row);

/* A pipeline's sections (pipeline.c; docs/report.md, "Pipeline"): the
 * tables of series `s` (nothing without a pipelined row) with the why-not
 * sentence of each pipelined row, the row's "pipeline" member of the JSON
 * report (absent without one), and its CSV columns (their names, and one
 * row's fields, each led by a comma; empty without one). */
gs_status gs_render_pipeline_tables(gs_render_writer *w, const gs_report_series *s);
void gs_render_pipeline_json(gs_json_build *b, cJSON *o, const gs_report_row *row);
extern const char *const gs_render_csv_pipeline_head;
void gs_render_csv_pipeline(FILE *out, const gs_report_row *row);

#endif
