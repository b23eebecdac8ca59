/* A pipeline's sections of the report (internal.h; docs/report.md,
 * "Pipeline"), for mlp --pp and llm --pp alike: the bubble against (p-1)/m
 * with its interval and verdict, the stage imbalance with its interval and
 * the transfers in one table, each stage's busy, transfer and idle time in
 * another, and per row the why-not sentence that names all three; the
 * same figures in the JSON report and the CSV. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/bubble.h"
#include "core/scaling.h"
#include "report/render/internal.h"

/* The transfers' time per unit summed over the stages; NaN without a
 * source. */
static double transfer_time(const gs_report_pipeline *p) {
  double t = p->transfer_source ? 0.0 : NAN;
  for (int k = 0; p->transfer_source && k < p->stages; k++) t += p->transfer[k];
  return t;
}

/* The why-not sentence of one pipelined row. */
static void why_not(gs_render_writer *w, const gs_report_row *row) {
  const gs_report_pipeline *p = &row->pipeline;
  const gs_bubble *x = &p->bubble;
  char bubble[64], imbalance[64], transfers[256];
  gs_scaling_format_ratio(x->bubble, x->low, x->high, 100.0, 1, "%", bubble, sizeof bubble);
  gs_scaling_format_ratio(x->imbalance, x->imbalance_low, x->imbalance_high, 1.0, 2, "x",
                          imbalance, sizeof imbalance);
  if (p->transfer_source)
    snprintf(transfers, sizeof transfers, "the transfers cost %.3g ms a %s at the send/recv "
             "cost of %s", 1e3 * transfer_time(p), p->unit, p->transfer_source);
  else
    snprintf(transfers, sizeof transfers, "the transfers are not separated (no coll sendrecv "
             "document of this machine): the bubble holds them");
  char verdict[448];
  gs_bubble_verdict_text(x, verdict, sizeof verdict);
  gs_render_block(w, 0, "    ",
                  "Why not %d x (pipeline, %d ranks): the stages wait %s of their compute "
                  "time (the bubble) against (p-1)/m %.1f%%%s%s; the slowest stage computes %s "
                  "the mean stage's; %s.",
                  row->world_size, row->world_size, bubble, 100.0 * x->formula,
                  verdict[0] ? ", " : "", verdict, imbalance, transfers);
}

/* See render.h. */
int gs_report_series_pipelined(const gs_report *r, size_t series) {
  const gs_report_series *s = &r->series[series];
  for (size_t i = 0; i < s->n_rows; i++)
    if (s->rows[i].pipeline.present) return 1;
  return 0;
}

/* See render.h. */
gs_status gs_report_render_pipeline(FILE *out, const gs_report *r, size_t series,
                                    gs_report_format format) {
  gs_render_writer w = {.f = out, .md = format == GS_REPORT_MARKDOWN || format == GS_REPORT_HTML,
                        .html = format == GS_REPORT_HTML, .series = series};
  const gs_status st = gs_render_pipeline_tables(&w, &r->series[series]);
  return st != GS_OK ? st : ferror(out) ? GS_ERR_IO : GS_OK;
}

/* See internal.h. */
gs_status gs_render_pipeline_tables(gs_render_writer *w, const gs_report_series *s) {
  size_t shown = 0, separated = 0;
  for (size_t i = 0; i < s->n_rows; i++) {
    shown += s->rows[i].pipeline.present;
    separated += s->rows[i].pipeline.present && s->rows[i].pipeline.transfer_source;
  }
  if (shown == 0) return GS_OK;
  gs_render_block(w, -1, "  ",
                  "Pipeline: bubble = the stages' idle time / their busy time (the bubble's "
                  "time over the compute time, as Megatron-LM's (p-1)/m measures it) [95%% "
                  "interval, paired bootstrap over runs and samples], held against (p-1)/m: "
                  "within 15%% only when the whole interval is, inconclusive when it straddles "
                  "a bound; busy = device - comm per step (mlp) or a stage's compute per "
                  "prefill or decode call (llm); idle = the step's longest rank less the "
                  "stage's busy time (mlp) or the call's time less it (llm), less the "
                  "transfers' own time, measured by a coll sendrecv document of the same "
                  "machine at 2 ranks (%s); imbalance = slowest stage's busy / the mean, "
                  "with its interval; transfers = the bytes over the stage boundaries per "
                  "step or call and replica",
                  separated == shown ? "one was given"
                  : separated        ? "given for some rows; the others' bubble holds their "
                                       "transfers"
                                     : "none given: the bubble holds the transfers");
  static const char *const head[] = {"ranks",     "stages",    "micro",     "schedule",
                                     "per",       "bubble",    "(p-1)/m",   "verdict",
                                     "imbalance", "transfers", "transfer time",
                                     "transfer cost from"};
  static const int left[] = {0, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1};
  gs_render_table t;
  gs_render_table_init(&t, 12, head, left);
  static const char *const stage_head[] = {"ranks", "stage", "per", "busy", "transfer", "idle",
                                           "idle / busy"};
  static const int stage_left[] = {0, 0, 1, 0, 0, 0, 0};
  gs_render_table st;
  gs_render_table_init(&st, 7, stage_head, stage_left);
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_pipeline *p = &s->rows[i].pipeline;
    if (!p->present) continue;
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%d", s->rows[i].world_size);
    gs_render_cellf(c[1], "%d", p->stages);
    gs_render_cellf(c[2], "%d", p->micro);
    gs_render_cellf(c[3], "%s", p->schedule);
    gs_render_cellf(c[4], "%s", p->unit);
    const gs_bubble *x = &p->bubble;
    gs_render_ratio(c[5], x->bubble, x->low, x->high, 1);
    gs_render_pct(c[6], x->formula);
    gs_render_cellf(c[7], "%s", gs_bubble_verdict_name(x->verdict));
    gs_render_ratio(c[8], x->imbalance, x->imbalance_low, x->imbalance_high, 0);
    gs_render_bytes(c[9], p->transfer_bytes);
    gs_render_time(c[10], transfer_time(p));
    gs_render_cellf(c[11], "%s", p->transfer_source ? p->transfer_source : "-");
    for (int k = 0; k < p->stages; k++) {
      char(*r)[GS_RENDER_CELL] = gs_render_table_row(&st);
      const double tr = p->transfer_source ? p->transfer[k] : 0.0;
      const double idle = p->idle[k] - tr;
      gs_render_cellf(r[0], "%d", s->rows[i].world_size);
      gs_render_cellf(r[1], "%d", k);
      gs_render_cellf(r[2], "%s", p->unit);
      gs_render_time(r[3], p->busy[k]);
      gs_render_time(r[4], p->transfer_source ? tr : NAN);
      gs_render_time(r[5], idle);
      gs_render_pct(r[6], idle / p->busy[k]);
    }
  }
  gs_status status = gs_render_table_done(w, &t, "    ");
  gs_status stages = gs_render_table_done(w, &st, "    ");
  for (size_t i = 0; i < s->n_rows; i++)
    if (s->rows[i].pipeline.present) why_not(w, &s->rows[i]);
  return status != GS_OK ? status : stages;
}

/* See internal.h. */
void gs_render_pipeline_json(gs_json_build *b, cJSON *o, const gs_report_row *row) {
  const gs_report_pipeline *p = &row->pipeline;
  if (!p->present) return;
  cJSON *x = gs_json_put_object(b, o, "pipeline");
  if (!x) return;
  gs_json_put_number(b, x, "stages", p->stages);
  gs_json_put_number(b, x, "micro_batches", p->micro);
  gs_json_put_string(b, x, "schedule", p->schedule);
  gs_json_put_string(b, x, "per", p->unit);
  gs_bubble_to_json(b, x, &p->bubble);
  gs_json_put_number(b, x, "transfer_bytes", p->transfer_bytes);
  gs_json_put_number(b, x, "transfer_seconds", transfer_time(p));
  gs_json_put_string_or_null(b, x, "transfer_source", p->transfer_source);
  cJSON *busy = gs_json_put_array(b, x, "stage_busy");
  cJSON *idle = gs_json_put_array(b, x, "stage_idle");
  cJSON *transfer = gs_json_put_array(b, x, "stage_transfer");
  for (int k = 0; !b->failed && k < p->stages; k++) {
    const double tr = p->transfer_source ? p->transfer[k] : NAN;
    gs_json_append_number(b, busy, p->busy[k]);
    gs_json_append_number(b, idle, p->idle[k] - (p->transfer_source ? tr : 0.0));
    gs_json_append_number(b, transfer, tr);
  }
}

/* See internal.h. */
const char *const gs_render_csv_pipeline_head =
    "pipeline_stages,pipeline_micro_batches,pipeline_per,bubble,bubble_low,bubble_high,"
    "bubble_formula,bubble_verdict,stage_imbalance,stage_imbalance_low,stage_imbalance_high,"
    "transfer_bytes,transfer_s,transfer_source,bubble_expected,bubble_expected_verdict";

/* See internal.h. */
void gs_render_csv_pipeline(FILE *out, const gs_report_row *row) {
  const gs_report_pipeline *p = &row->pipeline;
  if (!p->present) {
    fputs(",,,,,,,,,,,,,,,,", out);
    return;
  }
  fprintf(out, ",%d,%d,", p->stages, p->micro);
  gs_render_csv_field(out, p->unit);
  const gs_bubble *x = &p->bubble;
  const double v[4] = {x->bubble, x->low, x->high, x->formula};
  for (int k = 0; k < 4; k++) gs_render_csv_number(out, v[k]);
  fputc(',', out);
  if (x->verdict != GS_BUBBLE_UNKNOWN)
    gs_render_csv_field(out, gs_bubble_verdict_name(x->verdict));
  const double w[5] = {x->imbalance, x->imbalance_low, x->imbalance_high, p->transfer_bytes,
                       transfer_time(p)};
  for (int k = 0; k < 5; k++) gs_render_csv_number(out, w[k]);
  fputc(',', out);
  gs_render_csv_field(out, p->transfer_source);
  // Appended after the transfers (columns keep their places): (p-1)/m with
  // the measured imbalance, and the bubble's verdict against it.
  gs_render_csv_number(out, x->expected);
  fputc(',', out);
  if (x->expected_verdict != GS_BUBBLE_UNKNOWN)
    gs_render_csv_field(out, gs_bubble_verdict_name(x->expected_verdict));
}
