/* The arrival skew in a report (docs/stragglers.md, "Arrival skew";
 * docs/report.md, "Arrival skew"): per measurement the rank that arrived
 * last at the collectives and how often, its median lateness with its 95%
 * interval, the share of the time in the collective spent waiting for the
 * last arrival, and the rank named or "nobody"; a table per collective
 * series; a JSON object and CSV columns. */
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

/* The host of rank `k` of the measurement, or NULL. */
static const char *host_of(const gs_report_row *row, int k) {
  return k >= 0 && (size_t)k < row->n_ranks ? row->ranks[k].host : NULL;
}

/* The host of a group's member k: a replica's shards (llm, whose
 * measurement ranks are its replicas) its replica's, else its rank's. */
static const char *member_host(const gs_report_row *row, const gs_report_arrival *a, int k) {
  return host_of(row, a->replica >= 0 ? a->replica : a->members[k]);
}

/* "rank 3 (host h1)" of the named rank, "replica 1 (rank 3, host h1)" of a
 * stage group's (mlp: the member is the replica), "shard 1 (rank 3, host
 * h1)" of a replica's stage (llm), "nobody" else. */
static void named_text(const gs_report_row *row, const gs_report_arrival *a, char *out,
                       size_t size) {
  const int k = a->named;
  if (k < 0) {
    snprintf(out, size, "nobody");
    return;
  }
  const int global = a->stage >= 0 ? a->members[k] : k;
  const char *host = a->stage >= 0 ? member_host(row, a, k) : host_of(row, global);
  if (a->stage >= 0)
    snprintf(out, size, "%s %d (rank %d, host %s)", a->replica >= 0 ? "shard" : "replica", k,
             global, host ? host : "-");
  else
    snprintf(out, size, "rank %d (host %s)", k, host ? host : "-");
}

/* The share of iterations the last rank arrived last in. */
static double last_share(const gs_arrival_summary *s) {
  if (s->last_rank < 0 || s->iterations == 0) return NAN;
  return (double)s->last_count[s->last_rank] / (double)s->iterations;
}

/* The sentence of one summary: the measurement's, or a stage group's
 * (whose ranks are its replicas). */
static void arrival_sentence(gs_render_writer *w, const gs_report_row *row,
                             const gs_report_arrival *a) {
  const gs_arrival_summary *s = &a->summary;
  const int group = a->stage >= 0;
  // A group: "the collectives of stage 1's replicas" and which rank each is.
  char where[64] = "the collectives", members[GS_MAX_RANKS * 8 + 64] = "", who[48] = "Rank";
  const char *member = a->replica >= 0 ? "shard" : "replica";
  if (group && a->replica >= 0) {
    snprintf(where, sizeof where, "the collectives of replica %d's stage %d shards", a->replica,
             a->stage);
    snprintf(who, sizeof who, "Shard %d of replica %d, stage %d", s->last_rank, a->replica,
             a->stage);
  } else if (group) {
    snprintf(where, sizeof where, "the collectives of stage %d's replicas", a->stage);
    snprintf(who, sizeof who, "Replica %d of stage %d", s->last_rank, a->stage);
  }
  if (group) {
    int at = snprintf(members, sizeof members, "%ss 0-%zu = ranks", member, s->n_ranks - 1);
    for (size_t k = 0; k < s->n_ranks && at > 0 && (size_t)at < sizeof members; k++)
      at += snprintf(members + at, sizeof members - (size_t)at, "%s %d", k ? "," : "",
                     a->members[k]);
    if (at > 0 && (size_t)at < sizeof members) snprintf(members + at, sizeof members - (size_t)at, "; ");
  } else {
    snprintf(who, sizeof who, "Rank %d", s->last_rank);
  }
  if (s->last_rank < 0) {
    gs_render_block(w, 0, "    ", "Arrival at %s: no iteration with every %s's times", where,
                    group ? member : "rank");
    return;
  }
  char named[160], late[32], low[32], high[32], threshold[32];
  named_text(row, a, named, sizeof named);
  signed_seconds(s->lateness, late, sizeof late);
  signed_seconds(s->lateness_low, low, sizeof low);
  signed_seconds(s->lateness_high, high, sizeof high);
  gs_format_seconds(gs_arrival_threshold(s), threshold, sizeof threshold);
  // "clock error, exit spread, 1% of an iteration (X) and a scheduling
  // period (...)", the last two where they apply.
  char terms[320], period[48] = "", period_text[32], floor_text[160] = "";
  gs_format_seconds(GS_ARRIVAL_MATERIAL_SHARE * s->period, period_text, sizeof period_text);
  if (s->floor > 0.0)
    snprintf(floor_text, sizeof floor_text, "a scheduling period (%d ranks shared a host's %d "
             "cores: the scheduler decides who arrives last)", a->ranks_per_host, a->cores);
  if (isfinite(s->period))
    snprintf(period, sizeof period, "%.0f%% of an iteration (%s)",
             100.0 * GS_ARRIVAL_MATERIAL_SHARE, period_text);
  if (period[0] && floor_text[0])
    snprintf(terms, sizeof terms, "clock error, exit spread, %s and %s", period, floor_text);
  else if (period[0] || floor_text[0])
    snprintf(terms, sizeof terms, "clock error, exit spread and %s",
             period[0] ? period : floor_text);
  else
    snprintf(terms, sizeof terms, "clock error and exit spread");
  gs_render_block(w, 0, "    ",
                  "Arrival at %s (%s%s clock, %s clocks): named %s. %s "
                  "arrived last in %zu of %zu iterations (%.0f%%), median lateness %s [%s, %s] "
                  "against the others; %.1f%% of the %s' time in the collective was spent "
                  "waiting for the last arrival. Named when the interval is above %s, the "
                  "largest of noise, %s (docs/stragglers.md)",
                  where, members, a->clock ? a->clock : "-", a->alignment ? a->alignment : "-",
                  named, who, s->last_count[s->last_rank], s->iterations,
                  100.0 * last_share(s), late, low, high, 100.0 * s->wait_share,
                  group ? (a->replica >= 0 ? "shards" : "replicas") : "ranks", threshold, terms);
  // Where the host's calls were timed too: whose the lateness is.
  const double host = s->host_bound_share;
  if (!isfinite(host)) return;
  if (host >= 0.5)
    gs_render_block(w, 0, "    ",
                    "%s's stream had run dry and waited for its host to enqueue the collective "
                    "in %.0f%% of its iterations (its GPU reached it within %.0f us of the "
                    "host's call): its host's launches made it late (steps too short to hide "
                    "them, or rank threads of one process taking turns in the CUDA driver), "
                    "not its GPU",
                    who, 100.0 * host, GS_ARRIVAL_HOST_BOUND_SECONDS * 1e6);
  else
    gs_render_block(w, 0, "    ",
                    "%s's GPU was still working when its host enqueued the collective in "
                    "%.0f%% of its iterations: its lateness is the GPU's work before it",
                    who, 100.0 * (1.0 - host));
}

/* See internal.h. */
void gs_render_arrival(gs_render_writer *w, const gs_report_row *row) {
  if (row->arrival.present) arrival_sentence(w, row, &row->arrival);
  for (size_t g = 0; g < row->arrival.n_groups; g++)
    arrival_sentence(w, row, &row->arrival.groups[g]);
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
    named_text(row, &row->arrival, c[8], GS_RENDER_CELL);
  }
  return gs_render_table_done(w, &t, "    ");
}

/* The members of one summary's JSON object `x` (a group's with its stage,
 * its members' ranks and the named replica's rank). */
static void arrival_object(gs_json_build *b, cJSON *x, const gs_report_row *row,
                           const gs_report_arrival *a) {
  const gs_arrival_summary *s = &a->summary;
  if (a->stage >= 0) {
    if (a->replica >= 0) gs_json_put_number(b, x, "replica", a->replica);
    gs_json_put_number(b, x, "stage", a->stage);
    cJSON *global = gs_json_put_array(b, x, "global_ranks");
    for (size_t k = 0; k < s->n_ranks; k++) gs_json_append_number(b, global, a->members[k]);
  }
  gs_json_put_string_or_null(b, x, "clock", a->clock);
  gs_json_put_string_or_null(b, x, "alignment", a->alignment);
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
  gs_json_put_number(b, x, "last_rank_host_bound_share", s->host_bound_share);
  gs_json_put_number(b, x, "period_seconds", s->period);
  const int global = a->named < 0 ? -1 : a->stage >= 0 ? a->members[a->named] : a->named;
  if (a->named >= 0) {
    gs_json_put_number(b, x, "named", a->named);
    if (a->stage >= 0) gs_json_put_number(b, x, "named_rank", global);
    gs_json_put_string_or_null(b, x, "host",
                               a->stage >= 0 ? member_host(row, a, a->named) : host_of(row, global));
  } else {
    gs_json_put_null(b, x, "named");
    if (a->stage >= 0) gs_json_put_null(b, x, "named_rank");
    gs_json_put_null(b, x, "host");
  }
}

/* See internal.h. */
void gs_render_arrival_json(gs_json_build *b, cJSON *o, const gs_report_row *row) {
  const gs_report_arrival *a = &row->arrival;
  if (a->present)
    arrival_object(b, gs_json_put_object(b, o, "arrival"), row, a);
  else
    gs_json_put_null(b, o, "arrival");
  if (a->n_groups == 0) {
    gs_json_put_null(b, o, "arrival_groups");
    return;
  }
  cJSON *groups = gs_json_put_array(b, o, "arrival_groups");
  for (size_t g = 0; groups && g < a->n_groups; g++) {
    cJSON *x = gs_json_check(b, cJSON_CreateObject());
    arrival_object(b, x, row, &a->groups[g]);
    gs_json_append(b, groups, x);
  }
}

/* See internal.h. */
const char *const gs_render_csv_arrival_head =
    "arrival_named,arrival_last_rank,arrival_last_share,arrival_lateness_s,"
    "arrival_lateness_low_s,arrival_lateness_high_s,arrival_threshold_s,arrival_wait_share,"
    "arrival_stages";

/* The arrival_stages field: per stage group "stage=S named=R|nobody
 * named_rank=G last=R last_share=X lateness_s=L lateness_low_s=A
 * lateness_high_s=B wait_share=W", groups separated by ";" (no comma,
 * so the field needs no quotes). */
static void csv_groups(FILE *out, const gs_report_arrival *a) {
  fputc(',', out);
  for (size_t g = 0; g < a->n_groups; g++) {
    const gs_report_arrival *x = &a->groups[g];
    const gs_arrival_summary *s = &x->summary;
    fputs(g ? ";" : "", out);
    if (x->replica >= 0) fprintf(out, "replica=%d ", x->replica);
    fprintf(out, "stage=%d", x->stage);
    if (x->named >= 0)
      fprintf(out, " named=%d named_rank=%d", x->named, x->members[x->named]);
    else
      fputs(" named=nobody", out);
    if (s->last_rank < 0) continue;
    fprintf(out, " last=%d", s->last_rank);
    static const char *const names[] = {"last_share", "lateness_s", "lateness_low_s",
                                        "lateness_high_s", "wait_share"};
    const double v[5] = {last_share(s), s->lateness, s->lateness_low, s->lateness_high,
                         s->wait_share};
    // Exact when read back; empty when not finite, as the other columns.
    for (size_t i = 0; i < 5; i++) {
      fprintf(out, " %s=", names[i]);
      if (isfinite(v[i])) fprintf(out, "%.17g", v[i]);
    }
  }
}

/* See internal.h. */
void gs_render_csv_arrival(FILE *out, const gs_report_row *row) {
  const gs_report_arrival *a = &row->arrival;
  if (!a->present || a->summary.last_rank < 0) {
    fputs(",,,,,,,,", out);
  } else {
    const gs_arrival_summary *s = &a->summary;
    if (a->named >= 0)
      fprintf(out, ",%d,%d", a->named, s->last_rank);
    else
      fprintf(out, ",nobody,%d", s->last_rank);
    const double v[6] = {last_share(s),   s->lateness,                s->lateness_low,
                         s->lateness_high, gs_arrival_threshold(s), s->wait_share};
    for (size_t i = 0; i < 6; i++) gs_render_csv_number(out, v[i]);
  }
  csv_groups(out, a);
}
