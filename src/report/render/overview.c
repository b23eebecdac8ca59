/* What the overview says of one series (docs/report.md, "Overview"): the
 * row it speaks of (the verdict's, the largest usable one, or a
 * collective's best bus bandwidth) and its figure, speedup, efficiency and
 * verdict in words; the overview table and the JSON report both use it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/format.h"
#include "core/scaling.h"
#include "report/render/internal.h"

/* The row the overview speaks of: the verdict's, else the largest usable
 * world size, else the last row. */
static const gs_report_row *overview_row(const gs_report_series *s) {
  const gs_report_row *pick = NULL;
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    int usable = strcmp(row->status, "ok") == 0 && isfinite(row->throughput);
    if (s->verdict != GS_VERDICT_NONE ? usable && row->world_size == s->verdict_world_size
                                      : usable)
      pick = row;
  }
  return pick ? pick : s->n_rows ? &s->rows[s->n_rows - 1] : NULL;
}

/* The row of a collective series with the best bus bandwidth, or NULL. */
static const gs_report_row *best_busbw(const gs_report_series *s) {
  const gs_report_row *best = NULL;
  for (size_t i = 0; i < s->n_rows; i++)
    if (isfinite(s->rows[i].collective.busbw) && (!best
                                                  || s->rows[i].collective.busbw > best->collective.busbw))
      best = &s->rows[i];
  return best;
}

/* See internal.h. */
void gs_render_overview_cells(const gs_report_series *s, gs_render_overview *o) {
  memset(o, 0, sizeof *o);
  o->speedup = o->efficiency = o->throughput = NAN;
  o->speedup_low = o->speedup_high = NAN;
  size_t at = 0;
  for (size_t i = 0; i < s->n_rows && at < sizeof o->ranks; i++)
    if (i == 0 || s->rows[i].world_size != s->rows[i - 1].world_size)
      at += (size_t)snprintf(o->ranks + at, sizeof o->ranks - at, "%s%d", i ? "," : "",
                             s->rows[i].world_size);
  const int coll = s->n_rows > 0 && s->rows[0].collective.present;
  const gs_report_row *row = coll ? best_busbw(s) : overview_row(s);
  if (!row) {
    snprintf(o->figure, sizeof o->figure, "-");
    snprintf(o->verdict, sizeof o->verdict, "no measurement");
    return;
  }
  o->world_size = row->world_size;
  char rate[32];
  if (coll) {
    o->throughput = row->collective.busbw;
    gs_format_value(GS_UNIT_BANDWIDTH, row->collective.busbw, rate, sizeof rate);
    snprintf(o->figure, sizeof o->figure, "busbw %s (best, %s)", rate,
             row->collective.op ? row->collective.op : "-");
    size_t bad = 0;
    for (size_t i = 0; i < s->n_rows; i++) bad += s->rows[i].collective.busbw_mismatch != 0;
    if (bad)
      snprintf(o->verdict, sizeof o->verdict, "busbw inconsistent (%zu rows)", bad);
    else if (isfinite(row->collective.link_bandwidth))
      snprintf(o->verdict, sizeof o->verdict, "transport %s (%.0f%% of link)",
               row->collective.busbw < GS_REPORT_LOW_BUSBW * row->collective.link_bandwidth ? "slow" : "fine",
               100.0 * row->collective.busbw / row->collective.link_bandwidth);
    else
      snprintf(o->verdict, sizeof o->verdict, "-");
    return;
  }
  o->throughput = row->throughput;
  o->speedup = row->speedup;
  o->speedup_low = row->speedup_low;
  o->speedup_high = row->speedup_high;
  o->efficiency = row->efficiency;
  gs_format_rate(row->throughput, rate, sizeof rate);
  snprintf(o->figure, sizeof o->figure, "%s%s/s", rate,
           row->requests.present ? "tokens" : s->item_unit ? s->item_unit : "items");
  if (!isfinite(row->throughput)) snprintf(o->figure, sizeof o->figure, "-");
  if (row->loadgen) {
    // Every LoadGen run of the series, not the one row shown: one INVALID
    // member makes the group INVALID.
    size_t runs = 0, invalid = 0;
    for (size_t i = 0; i < s->n_rows; i++)
      for (size_t k = 0; s->rows[i].loadgen && k < s->rows[i].n_ranks; k++) {
        runs += s->rows[i].ranks[k].loadgen.present;
        invalid += s->rows[i].ranks[k].loadgen.present && s->rows[i].ranks[k].loadgen.valid != 1;
      }
    if (invalid)
      snprintf(o->verdict, sizeof o->verdict, "LoadGen INVALID (%zu of %zu runs); single run",
               invalid, runs);
    else
      snprintf(o->verdict, sizeof o->verdict, "LoadGen VALID; single run");
  } else if (s->verdict != GS_VERDICT_NONE) {
    gs_scaling_verdict_words(s->verdict, s->backend, o->verdict, sizeof o->verdict);
  } else {
    snprintf(o->verdict, sizeof o->verdict, "%s", strcmp(row->status, "ok") != 0 ? row->status
                                                  : s->single_run ? "single run"
                                                                  : "no verdict");
  }
}

