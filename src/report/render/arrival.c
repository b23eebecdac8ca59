/* The arrival skew in a report (docs/stragglers.md, "Arrival skew";
 * docs/report.md, "Arrival skew"): per measurement the rank that arrived
 * last at the collectives and how often, its median lateness with its 95%
 * interval, the share of the time in the collective spent waiting for the
 * last arrival, and the rank named or "nobody" (of each group: llm's
 * replicas and stages); a table per collective series; a JSON object and
 * CSV columns. */
#include <math.h>
#include <stdio.h>

#include "core/format.h"
#include "report/render/internal.h"

/* A time that may be negative (a rank earlier than the others), as
 * core/format writes a positive one; "-" when not finite. */
static void signed_seconds(double seconds, char *out, size_t size) {
  if (!isfinite(seconds) || seconds >= 0.0) {
    gs_format_seconds(seconds, out, size);
    return;
  }
  char magnitude[32];
  gs_format_seconds(-seconds, magnitude, sizeof magnitude);
  snprintf(out, size, "-%s", magnitude);
}

/* "rank 3 (host h1)" of the named rank, "nobody" else. */
static void named_text(const gs_report_row *row, char *out, size_t size) {
  const int k = row->arrival.named;
  if (k < 0) {
    snprintf(out, size, "nobody");
    return;
  }
  const char *host = (size_t)k < row->n_ranks ? row->ranks[k].host : NULL;
  snprintf(out, size, "rank %d (host %s)", k, host ? host : "-");
}

/* The share of iterations the last rank arrived last in. */
static double last_share(const gs_arrival_summary *s) {
  if (s->last_rank < 0 || s->iterations == 0) return NAN;
  return (double)s->last_count[s->last_rank] / (double)s->iterations;
}

/* "shard 1 (rank 3, host h1)" of group g's named member, "nobody" else:
 * the host is its replica's (llm's ranks of a measurement are replicas). */
static void group_named_text(const gs_report_row *row, const gs_report_arrival_group *g,
                             char *out, size_t size) {
  if (g->named < 0) {
    snprintf(out, size, "nobody");
    return;
  }
  const char *host = (size_t)g->replica < row->n_ranks ? row->ranks[g->replica].host : NULL;
  snprintf(out, size, "shard %d (rank %d, host %s)", g->named, g->members[g->named],
           host ? host : "-");
}

/* One summary's sentence: `where` opens it ("Arrival at the collectives"
 * or a group's), `who` names its ranks ("Rank", "Shard"), `named` the
 * one named. */
static void render_summary(gs_render_writer *w, const gs_report_arrival *a,
                           const gs_arrival_summary *s, const char *where, const char *who,
                           const char *named) {
  if (s->last_rank < 0) {
    gs_render_block(w, 0, "    ", "%s: no iteration with every rank's times", where);
    return;
  }
  char late[32], low[32], high[32], threshold[32];
  signed_seconds(s->lateness, late, sizeof late);
  signed_seconds(s->lateness_low, low, sizeof low);
  signed_seconds(s->lateness_high, high, sizeof high);
  gs_format_seconds(gs_arrival_threshold(s), threshold, sizeof threshold);
  char terms[200] = "clock error and exit spread";
  if (s->floor > 0.0)
    snprintf(terms, sizeof terms, "clock error, exit spread and a scheduling period (%d ranks "
             "shared a host's %d cores: the scheduler decides who arrives last)",
             a->ranks_per_host, a->cores);
  gs_render_block(w, 0, "    ",
                  "%s (%s clock, %s clocks): named %s. %s %d "
                  "arrived last in %zu of %zu iterations (%.0f%%), median lateness %s [%s, %s] "
                  "against the others; %.1f%% of the ranks' time in the collective was spent "
                  "waiting for the last arrival. Named when the interval is above %s, the "
                  "largest of noise, %s (docs/stragglers.md)",
                  where, a->clock ? a->clock : "-", a->alignment ? a->alignment : "-", named,
                  who, s->last_rank, s->last_count[s->last_rank], s->iterations,
                  100.0 * last_share(s), late, low, high, 100.0 * s->wait_share, threshold, terms);
}

/* See internal.h. */
void gs_render_arrival(gs_render_writer *w, const gs_report_row *row) {
  const gs_report_arrival *a = &row->arrival;
  if (!a->present) return;
  char named[160], where[GS_MAX_RANKS * 8 + 96];
  if (a->n_groups == 0) {
    named_text(row, named, sizeof named);
    render_summary(w, a, &a->summary, "Arrival at the collectives", "Rank", named);
    return;
  }
  for (size_t i = 0; i < a->n_groups; i++) {
    const gs_report_arrival_group *g = &a->groups[i];
    group_named_text(row, g, named, sizeof named);
    int at = snprintf(where, sizeof where, "Replica %d, stage %d (ranks", g->replica, g->stage);
    for (size_t k = 0; k < g->summary.n_ranks && at > 0 && (size_t)at < sizeof where; k++)
      at += snprintf(where + at, sizeof where - (size_t)at, "%s %d", k ? "," : "", g->members[k]);
    if (at > 0 && (size_t)at < sizeof where)
      snprintf(where + at, sizeof where - (size_t)at, "): arrival at its collectives");
    render_summary(w, a, &g->summary, where, "Shard", named);
  }
}

/* See internal.h. */
gs_status gs_render_coll_arrival(gs_render_writer *w, const gs_report_series *s) {
  size_t present = 0;
  for (size_t i = 0; i < s->n_rows; i++) present += s->rows[i].arrival.present;
  if (present == 0) return GS_OK;
  gs_render_block(w, -1, "  ", "Arrival skew per collective (docs/stragglers.md)");
  static const char *const head[] = {"ranks",     "point",     "last rank", "last in",
                                     "lateness",  "interval",  "threshold", "waiting",
                                     "named"};
  static const int left[] = {0, 1, 0, 0, 0, 1, 0, 0, 1};
  gs_render_table t;
  gs_render_table_init(&t, 9, head, left);
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    const gs_arrival_summary *a = &row->arrival.summary;
    if (!row->arrival.present || a->last_rank < 0) continue;
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    char low[32], high[32];
    gs_render_cellf(c[0], "%d", row->world_size);
    gs_report_point_name(row, c[1], GS_RENDER_CELL);
    gs_render_cellf(c[2], "%d", a->last_rank);
    gs_render_pct(c[3], last_share(a));
    gs_render_time(c[4], a->lateness);
    signed_seconds(a->lateness_low, low, sizeof low);
    signed_seconds(a->lateness_high, high, sizeof high);
    gs_render_cellf(c[5], "[%s, %s]", low, high);
    gs_render_time(c[6], gs_arrival_threshold(a));
    gs_render_pct(c[7], a->wait_share);
    named_text(row, c[8], GS_RENDER_CELL);
  }
  return gs_render_table_done(w, &t, "    ");
}

/* One summary's members into object `x` of the JSON report; `named` the
 * rank (or member) named, -1 nobody, and its host. */
static void put_summary(gs_json_build *b, cJSON *x, const gs_arrival_summary *s, int named,
                        const char *host) {
  gs_json_put_number(b, x, "iterations", (double)s->iterations);
  if (s->last_rank >= 0) {
    gs_json_put_number(b, x, "last_rank", s->last_rank);
    gs_json_put_number(b, x, "last_count", (double)s->last_count[s->last_rank]);
  } else {
    gs_json_put_null(b, x, "last_rank");
    gs_json_put_null(b, x, "last_count");
  }
  gs_json_put_number(b, x, "last_share", last_share(s));
  gs_json_put_number(b, x, "lateness_seconds", s->lateness);
  gs_json_put_number(b, x, "lateness_low_seconds", s->lateness_low);
  gs_json_put_number(b, x, "lateness_high_seconds", s->lateness_high);
  gs_json_put_number(b, x, "threshold_seconds", gs_arrival_threshold(s));
  gs_json_put_number(b, x, "floor_seconds", s->floor);
  gs_json_put_number(b, x, "wait_share", s->wait_share);
  if (named >= 0) {
    gs_json_put_number(b, x, "named", named);
    gs_json_put_string_or_null(b, x, "host", host);
  } else {
    gs_json_put_null(b, x, "named");
    gs_json_put_null(b, x, "host");
  }
}

/* See internal.h. */
void gs_render_arrival_json(gs_json_build *b, cJSON *o, const gs_report_row *row) {
  const gs_report_arrival *a = &row->arrival;
  if (!a->present) {
    gs_json_put_null(b, o, "arrival");
    return;
  }
  cJSON *x = gs_json_put_object(b, o, "arrival");
  if (!x) return;
  gs_json_put_string_or_null(b, x, "clock", a->clock);
  gs_json_put_string_or_null(b, x, "alignment", a->alignment);
  if (a->n_groups == 0) {
    put_summary(b, x, &a->summary, a->named,
                (size_t)a->named < row->n_ranks ? row->ranks[a->named].host : NULL);
    return;
  }
  cJSON *groups = gs_json_put_array(b, x, "groups");
  for (size_t i = 0; groups && i < a->n_groups; i++) {
    const gs_report_arrival_group *g = &a->groups[i];
    cJSON *e = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_number(b, e, "replica", g->replica);
    gs_json_put_number(b, e, "stage", g->stage);
    cJSON *global = gs_json_put_array(b, e, "global_ranks");
    for (size_t k = 0; global && k < g->summary.n_ranks; k++)
      gs_json_append_number(b, global, g->members[k]);
    put_summary(b, e, &g->summary, g->named,
                (size_t)g->replica < row->n_ranks ? row->ranks[g->replica].host : NULL);
    gs_json_append(b, groups, e);
  }
}

/* See internal.h. */
const char *const gs_render_csv_arrival_head =
    "arrival_named,arrival_last_rank,arrival_last_share,arrival_lateness_s,"
    "arrival_lateness_low_s,arrival_lateness_high_s,arrival_threshold_s,arrival_wait_share";

/* See internal.h. */
void gs_render_csv_arrival(FILE *out, const gs_report_row *row) {
  const gs_report_arrival *a = &row->arrival;
  // A measurement of several groups has a summary per group: the JSON
  // report's, not one line's.
  if (!a->present || a->n_groups > 0 || a->summary.last_rank < 0) {
    fputs(",,,,,,,,", out);
    return;
  }
  const gs_arrival_summary *s = &a->summary;
  if (a->named >= 0)
    fprintf(out, ",%d,%d", a->named, s->last_rank);
  else
    fprintf(out, ",nobody,%d", s->last_rank);
  const double v[6] = {last_share(s),   s->lateness,                s->lateness_low,
                       s->lateness_high, gs_arrival_threshold(s), s->wait_share};
  for (size_t i = 0; i < 6; i++) gs_render_csv_number(out, v[i]);
}
