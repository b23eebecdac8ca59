/* The goodput section of a request-based series (text, Markdown, HTML):
 * per row, the latency targets its document names, the share of requests
 * meeting each and all of them, and the goodput in requests/s and tokens/s
 * of the requests meeting every target, each with its 95% interval
 * (core/slo; docs/workloads/llm.md, "Latency targets and goodput"); and
 * the rates of a server sweep or search (llm --rates, --find-max-rate):
 * each rate's figures and the highest rate meeting the targets. */
#include <math.h>
#include <stdio.h>
#include <string.h>

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

/* One number of a figure: 2 decimals (`fixed`, a load) or 3 significant
 * digits (a rate). */
static void figure_number(char *out, size_t size, double x, int fixed) {
  if (fixed)
    snprintf(out, size, "%.2f", x);
  else
    snprintf(out, size, "%.3g", x);
}

/* A figure with its interval, "12.3 [10.1, 14.0]" (a rate) or "1.12
 * [1.05, 1.20]" (a load, `fixed`), the value alone without an interval,
 * or "-". */
static void figure_cell(char *cell, const gs_slo_figure *f, int fixed) {
  if (!isfinite(f->value)) {
    gs_render_cellf(cell, "-");
    return;
  }
  char v[32], lo[32], hi[32];
  figure_number(v, sizeof v, f->value, fixed);
  if (!isfinite(f->low)) {
    gs_render_cellf(cell, "%s", v);
    return;
  }
  figure_number(lo, sizeof lo, f->low, fixed);
  figure_number(hi, sizeof hi, f->high, fixed);
  gs_render_cellf(cell, "%s [%s, %s]", v, lo, hi);
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
    figure_cell(c[7], &g->requests_per_second, 0);
    figure_cell(c[8], &g->tokens_per_second, 0);
    for (int m = 0; m < GS_SLO_METRICS; m++) percentile_cell(c[9 + m], slo, g, m);
    gs_render_cellf(c[12], "p%g %s", slo->percentile,
                    gs_slo_goodput_met(g)   ? "met"
                    : g->percentile_met     ? "MISSED; not sustained"
                                            : "MISSED");
  }
  return gs_render_table_done(w, &t, "    ");
}

/* ---- rates (llm --rates / --find-max-rate) ---------------------------------------- */

/* The answer in words: the search's with its bracket, or a list's highest
 * rate met with the rate above it that missed. */
static void rates_answer(const gs_report_rates *q, char *buf, size_t size) {
  if (q->search) {
    if (isnan(q->max_rate))
      snprintf(buf, size, "none of %zu rates met them (lowest %.4g/s)%s", q->n, q->high,
               q->unreachable ? "; stopped early: a lower rate missed as much, so waiting is not "
                                "what misses them"
                              : "");
    else if (isnan(q->high))
      snprintf(buf, size, "%.4g/s, every rate measured met them (%zu rates)", q->max_rate, q->n);
    else if (q->converged)
      snprintf(buf, size, "%.4g/s, bracket [%.4g, %.4g] (%zu rates; within %g%%)", q->max_rate,
               q->low, q->high, q->n, 100.0 * q->tolerance);
    else
      snprintf(buf, size, "%.4g/s, bracket [%.4g, %.4g] (%zu rates; not within %g%% after the "
               "last rate)", q->max_rate, q->low, q->high, q->n, 100.0 * q->tolerance);
    return;
  }
  if (isnan(q->max_rate))
    snprintf(buf, size, "none of the %zu rates measured met them", q->n);
  else if (isnan(q->high))
    snprintf(buf, size, "%.4g/s, every rate measured up to it met them (%zu rates)", q->max_rate,
             q->n);
  else
    snprintf(buf, size, "%.4g/s; the next rate measured, %.4g/s, missed them (%zu rates)",
             q->max_rate, q->high, q->n);
}

gs_status gs_render_rates_table(gs_render_writer *w, const gs_report_series *s) {
  gs_status st = GS_OK;
  for (size_t i = 0; i < s->n_rows && st == GS_OK; i++) {
    const gs_report_row *row = &s->rows[i];
    const gs_report_rates *q = &row->rates;
    if (!q->present) continue;
    char targets[96], answer[256];
    gs_slo_describe(&q->slo, targets, sizeof targets);
    gs_render_block(w, -1, "  ",
                    "Rates of %d rank%s (%s; %s: %s): each rate's runs judged at p%g of every "
                    "target, met when each is within it and the rate was sustained (load, the "
                    "offered rate over the rate served, at most %.2f); worst/target = the worst "
                    "of those percentiles over its target; goodput and shares [95%% interval] as above; "
                    "# = order measured; the tables above are of %.4g/s",
                    row->world_size, row->world_size == 1 ? "" : "s",
                    q->search ? "searched by --find-max-rate" : "--rates",
                    q->slo.name, targets, q->slo.percentile, GS_SLO_LOAD_SUSTAINED, q->kept_rate);
    static const char *const head[] = {"#",        "rate",        "achieved",   "load",
                                       "tokens/s", "goodput requests/s", "met all", "met TTFT",
                                       "met TPOT", "met latency", "pNN TTFT", "pNN TPOT",
                                       "pNN latency", "worst/target", "at pNN"};
    static const int left[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    gs_render_table t;
    gs_render_table_init(&t, 15, head, left);
    for (size_t k = 0; k < q->n; k++) {
      const gs_report_rate_point *p = &q->points[k];
      char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
      gs_render_cellf(c[0], "%d", p->order);
      gs_render_rate(c[1], p->rate);
      gs_render_rate(c[2], p->achieved_rate);
      figure_cell(c[3], &p->goodput.load, 1);
      gs_render_rate(c[4], p->tokens_per_second);
      figure_cell(c[5], &p->goodput.requests_per_second, 0);
      share_cell(c[6], &p->goodput.share_all);
      for (int m = 0; m < GS_SLO_METRICS; m++) share_cell(c[7 + m], &p->goodput.share[m]);
      for (int m = 0; m < GS_SLO_METRICS; m++) percentile_cell(c[10 + m], &q->slo, &p->goodput, m);
      if (isinf(p->ratio))
        gs_render_cellf(c[13], "never");
      else
        gs_render_fixed(c[13], p->ratio, 3, "");
      const int ok = strcmp(p->status, "ok") == 0;
      gs_render_cellf(c[14], "p%g %s%s%s", q->slo.percentile, p->met ? "met" : "MISSED",
                      ok ? (!p->met && p->ratio <= 1.0 ? "; not sustained" : "") : "; ",
                      ok ? "" : p->status);
    }
    st = gs_render_table_done(w, &t, "    ");
    rates_answer(q, answer, sizeof answer);
    gs_render_block(w, 0, "  ", "%s: %s.",
                    q->search ? "Highest rate meeting the targets"
                              : "Highest rate measured meeting the targets",
                    answer);
    char note[256];
    if (gs_slo_stream_note(q->stream, q->slots, note, sizeof note))
      gs_render_block(w, 0, "  ", "Note: %s.", note);
  }
  return st;
}

void gs_render_rates_json(gs_json_build *b, cJSON *o, const gs_report_row *row) {
  const gs_report_rates *q = &row->rates;
  if (!q->present) return;
  cJSON *x = gs_json_put_object(b, o, "rates");
  if (!x) return;
  gs_json_put_string(b, x, "mode", q->search ? "search" : "list");
  gs_json_put_number(b, x, "percentile", q->slo.percentile);
  gs_json_put_number(b, x, "kept_rate", q->kept_rate);
  gs_json_put_number(b, x, "requests_per_run", q->stream);
  gs_json_put_number(b, x, "slots", q->slots);
  gs_json_put_number(b, x, "max_rate", q->max_rate);
  cJSON *bracket = gs_json_put_array(b, x, "bracket");
  gs_json_append_number(b, bracket, q->low);
  gs_json_append_number(b, bracket, q->high);
  if (q->search) {
    gs_json_put_bool(b, x, "converged", q->converged);
    gs_json_put_bool(b, x, "unreachable", q->unreachable);
    gs_json_put_number(b, x, "tolerance", q->tolerance);
  }
  cJSON *list = gs_json_put_array(b, x, "points");
  for (size_t k = 0; k < q->n && !b->failed; k++) {
    const gs_report_rate_point *p = &q->points[k];
    cJSON *j = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_number(b, j, "order", p->order);
    gs_json_put_number(b, j, "rate", p->rate);
    gs_json_put_number(b, j, "achieved_rate", p->achieved_rate);
    gs_json_put_number(b, j, "tokens_per_second", p->tokens_per_second);
    gs_json_put_number(b, j, "ratio", p->ratio);
    gs_json_put_bool(b, j, "met", p->met);
    gs_json_put_string(b, j, "status", p->status);
    gs_slo_goodput_to_json(b, j, &q->slo, &p->goodput);
    gs_json_append(b, list, j);
  }
}
