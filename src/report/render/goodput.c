/* The goodput section of a request-based series (text, Markdown, HTML):
 * per row, the latency targets its document names, the share of requests
 * meeting each and all of them, and the goodput in requests/s and tokens/s
 * of the requests meeting every target, each with its 95% interval
 * (core/slo; docs/workloads/llm.md, "Latency targets and goodput"). */
#include <math.h>
#include <stdio.h>

#include "report/render/goodput.h"

/* "70.0% [52.3, 88.1]", or "-" without a figure. */
static void share_cell(char *cell, const gs_slo_figure *f) {
  if (!isfinite(f->value))
    gs_render_cellf(cell, "-");
  else if (isfinite(f->low))
    gs_render_cellf(cell, "%.1f%% [%.1f, %.1f]", 100.0 * f->value, 100.0 * f->low,
                    100.0 * f->high);
  else
    gs_render_cellf(cell, "%.1f%%", 100.0 * f->value);
}

/* "12.3 [10.1, 14.0]" with 3 significant digits, or "-". */
static void rate_cell(char *cell, const gs_slo_figure *f) {
  if (!isfinite(f->value))
    gs_render_cellf(cell, "-");
  else if (isfinite(f->low))
    gs_render_cellf(cell, "%.3g [%.3g, %.3g]", f->value, f->low, f->high);
  else
    gs_render_cellf(cell, "%.3g", f->value);
}

/* A percentile against its target: "93.1 ms" or "never" (requests that
 * did not finish), "-" without a target. */
static void percentile_cell(char *cell, const gs_slo *slo, const gs_slo_goodput *g, int m) {
  if (!isfinite(slo->bound[m]))
    gs_render_cellf(cell, "-");
  else if (isinf(g->percentile_value[m]))
    gs_render_cellf(cell, "never");
  else
    gs_render_time(cell, g->percentile_value[m]);
}

gs_status gs_render_goodput_table(gs_render_writer *w, const gs_report_series *s) {
  size_t shown = 0;
  for (size_t i = 0; i < s->n_rows; i++)
    shown += s->rows[i].requests.present && gs_slo_any(&s->rows[i].requests.slo);
  if (shown == 0) return GS_OK;
  gs_render_block(w, -1, "  ",
                  "Goodput: requests meeting every latency target (a timed-out or failed "
                  "request meets none), per second of run time; shares of the requests that "
                  "are not cold; [95%% interval] from a bootstrap over runs and requests; "
                  "pNN = the targets' percentile, met when every one is within its target");
  static const char *const head[] = {"ranks",    "targets",       "requests", "met all",
                                     "met TTFT", "met TPOT",      "met latency",
                                     "requests/s", "tokens/s",    "pNN TTFT", "pNN TPOT",
                                     "pNN latency", "at pNN"};
  static const int left[] = {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  gs_render_table t;
  gs_render_table_init(&t, 13, head, left);
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    const gs_slo *slo = &row->requests.slo;
    const gs_slo_goodput *g = &row->requests.goodput;
    if (!row->requests.present || !gs_slo_any(slo)) continue;
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    char targets[96];
    gs_slo_describe(slo, targets, sizeof targets);
    gs_render_cellf(c[0], "%d", row->world_size);
    gs_render_cellf(c[1], "%s: %s", slo->name, targets);
    gs_render_cellf(c[2], "%zu", g->requests);
    share_cell(c[3], &g->share_all);
    for (int m = 0; m < GS_SLO_METRICS; m++) share_cell(c[4 + m], &g->share[m]);
    rate_cell(c[7], &g->requests_per_second);
    rate_cell(c[8], &g->tokens_per_second);
    for (int m = 0; m < GS_SLO_METRICS; m++) percentile_cell(c[9 + m], slo, g, m);
    gs_render_cellf(c[12], "p%g %s", slo->percentile, g->percentile_met ? "met" : "MISSED");
  }
  return gs_render_table_done(w, &t, "    ");
}
