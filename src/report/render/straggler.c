/* The straggler section of a report (docs/report.md, "Stragglers"): per
 * multi-rank measurement each rank's relative and individual score with
 * their intervals and the rank named, or "nobody", in text, Markdown and
 * HTML; the same as a JSON object and as CSV columns. Definitions in
 * docs/statistics.md, "Straggler scores". */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/straggler.h"
#include "report/render/internal.h"

/* The rank whose figures stand for the row: the named one, else the one
 * that made the judgement inconclusive, else the one with the largest
 * relative score; -1 when the row was not scored. */
static int shown_rank(const gs_report_row *row) {
  const gs_straggler *g = &row->scores;
  if (g->n_ranks < 2) return -1;
  if (g->named >= 0) return g->named;
  if (g->suspect >= 0) return g->suspect;
  int worst = -1;
  for (size_t k = 0; k < g->n_ranks; k++)
    if (isfinite(g->scores[k].relative) &&
        (worst < 0 || g->scores[k].relative > g->scores[worst].relative))
      worst = (int)k;
  return worst;
}

/* The judgement's word: "named", "inconclusive" or "nobody". */
static const char *judgement(const gs_straggler *g) {
  return g->named >= 0 ? "named" : g->suspect >= 0 ? "inconclusive" : "nobody";
}

/* "rank 3 (host h1, GPU 3)" of the named straggler, "inconclusive" or
 * "nobody" else. */
static void named_text(const gs_report_row *row, char *out, size_t size) {
  const int k = row->scores.named;
  if (k < 0) {
    snprintf(out, size, "%s", judgement(&row->scores));
    return;
  }
  const char *host = (size_t)k < row->n_ranks ? row->ranks[k].host : NULL;
  char gpu[32] = "";
  if (row->scores_device >= 0) snprintf(gpu, sizeof gpu, ", GPU %d", row->scores_device);
  snprintf(out, size, "rank %d (host %s%s)", k, host ? host : "-", gpu);
}

/* See internal.h. */
gs_status gs_render_stragglers(gs_render_writer *w, const gs_report_row *row) {
  // Request latencies and another tool's figures are not steps: no scores.
  if (row->n_ranks < 2 || row->requests.present || row->ingested || row->loadgen) return GS_OK;
  const gs_straggler *g = &row->scores;
  if (g->n_ranks < 2) {
    gs_render_block(w, 0, "    ",
                    "Stragglers: not scored (fewer than 2 iterations with a time of every rank)");
    return GS_OK;
  }
  char named[512], shared[256] = "";
  named_text(row, named, sizeof named);
  if (g->suspect >= 0) {
    const size_t at = strlen(named);
    snprintf(named + at, sizeof named - at, ": ");
    gs_straggler_reason(g, &row->scores_host, named + at + 2, sizeof named - at - 2);
  }
  char hosts[128];
  gs_straggler_host_text(&row->scores_host, hosts, sizeof hosts);
  if (hosts[0])
    snprintf(shared, sizeof shared,
             "; nobody is named here, as %s: the scheduler's shares decide each rank's time",
             hosts);
  gs_render_block(w, 0, "    ",
                  "Stragglers: %s. Scores of %s times (docs/statistics.md): relative = "
                  "against the median of the other ranks%s per iteration, individual = against "
                  "the rank's best %d-iteration window; named when the relative score's 95%% "
                  "interval (simultaneous over the ranks) is above %.2fx%s",
                  named, row->scores_clock ? row->scores_clock : "-",
                  g->grouped ? " of its pipeline stage (a stage of one replica has none)" : "",
                  GS_STRAGGLER_WINDOW, g->threshold, shared);
  static const char *const head[] = {"rank", "host", "iterations", "relative", "individual",
                                     "straggler"};
  static const int left[] = {0, 1, 0, 0, 0, 1};
  gs_render_table t;
  gs_render_table_init(&t, 6, head, left);
  for (size_t k = 0; k < g->n_ranks; k++) {
    const gs_straggler_score *sc = &g->scores[k];
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%zu", k);
    gs_render_cellf(c[1], "%s", k < row->n_ranks && row->ranks[k].host ? row->ranks[k].host : "-");
    gs_render_cellf(c[2], "%zu", sc->n);
    gs_render_ratio(c[3], sc->relative, sc->relative_low, sc->relative_high, 0);
    gs_render_ratio(c[4], sc->individual, sc->individual_low, sc->individual_high, 0);
    gs_render_cellf(c[5], "%s",
                    (int)k == g->named     ? "named"
                    : (int)k == g->suspect ? "inconclusive"
                    : sc->straggler        ? "yes"
                                           : "-");
  }
  return gs_render_table_done(w, &t, "      ");
}

/* See internal.h. */
gs_status gs_render_coll_stragglers(gs_render_writer *w, const gs_report_series *s) {
  size_t scored = 0;
  for (size_t i = 0; i < s->n_rows; i++) scored += s->rows[i].scores.n_ranks >= 2;
  if (scored == 0) return GS_OK;
  // The busiest host is the document's: one note for the series' rows on
  // shared cores (the first such row's host).
  char hosts[128] = "", note[256] = "";
  for (size_t i = 0; i < s->n_rows && !hosts[0]; i++)
    if (s->rows[i].scores.n_ranks >= 2)
      gs_straggler_host_text(&s->rows[i].scores_host, hosts, sizeof hosts);
  if (hosts[0])
    snprintf(note, sizeof note,
             "; nobody named, inconclusive above %.2fx, as %s (docs/stragglers.md)",
             1.0 + GS_STRAGGLER_THRESHOLD, hosts);
  gs_render_block(w, -1, "  ", "Stragglers per collective (relative score of the slowest rank)%s",
                  note);
  static const char *const head[] = {"ranks", "point", "rank", "relative", "individual", "named"};
  static const int left[] = {0, 1, 0, 0, 0, 1};
  gs_render_table t;
  gs_render_table_init(&t, 6, head, left);
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    const int k = shown_rank(row);
    if (k < 0) continue;
    const gs_straggler_score *sc = &row->scores.scores[k];
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%d", row->world_size);
    gs_report_point_name(row, c[1], GS_RENDER_CELL);
    gs_render_cellf(c[2], "%d", k);
    gs_render_ratio(c[3], sc->relative, sc->relative_low, sc->relative_high, 0);
    gs_render_ratio(c[4], sc->individual, sc->individual_low, sc->individual_high, 0);
    named_text(row, c[5], GS_RENDER_CELL);
  }
  return gs_render_table_done(w, &t, "    ");
}

/* See internal.h. */
void gs_render_stragglers_json(gs_json_build *b, cJSON *o, const gs_report_row *row) {
  const gs_straggler *g = &row->scores;
  if (g->n_ranks < 2) {
    gs_json_put_null(b, o, "stragglers");
    return;
  }
  cJSON *x = gs_json_put_object(b, o, "stragglers");
  if (!x) return;
  gs_json_put_string_or_null(b, x, "clock", row->scores_clock);
  gs_json_put_number(b, x, "threshold", g->threshold);
  gs_json_put_number(b, x, "window", GS_STRAGGLER_WINDOW);
  gs_json_put_string(b, x, "relative_to", g->grouped ? "stage" : "all");
  gs_json_put_string(b, x, "judgement", judgement(g));
  char reason[512];
  gs_straggler_reason(g, &row->scores_host, reason, sizeof reason);
  if (reason[0])
    gs_json_put_string(b, x, "reason", reason);
  else
    gs_json_put_null(b, x, "reason");
  const gs_straggler_host *h = &row->scores_host;
  if (gs_straggler_shared_cores(h)) {
    cJSON *c = gs_json_put_object(b, x, "shared_cores");
    gs_json_put_string_or_null(b, c, "host", h->host);
    gs_json_put_number(b, c, "ranks", h->ranks);
    gs_json_put_number(b, c, "cores", h->cores);
    gs_json_put_number(b, c, "load_average", h->load_average);
  } else {
    gs_json_put_null(b, x, "shared_cores");
  }
  if (g->named >= 0) {
    gs_json_put_number(b, x, "named", g->named);
    gs_json_put_string_or_null(b, x, "host",
                               (size_t)g->named < row->n_ranks ? row->ranks[g->named].host : NULL);
  } else {
    gs_json_put_null(b, x, "named");
    gs_json_put_null(b, x, "host");
  }
  if (row->scores_device >= 0)
    gs_json_put_number(b, x, "device", row->scores_device);
  else
    gs_json_put_null(b, x, "device");
  cJSON *ranks = gs_json_put_array(b, x, "ranks");
  for (size_t k = 0; ranks && k < g->n_ranks; k++) {
    const gs_straggler_score *sc = &g->scores[k];
    cJSON *e = gs_json_check(b, cJSON_CreateObject());
    if (!e) return;
    gs_json_put_number(b, e, "rank", (double)k);
    gs_json_put_number(b, e, "iterations", (double)sc->n);
    gs_json_put_number(b, e, "relative", sc->relative);
    gs_json_put_number(b, e, "relative_low", sc->relative_low);
    gs_json_put_number(b, e, "relative_high", sc->relative_high);
    gs_json_put_number(b, e, "individual", sc->individual);
    gs_json_put_number(b, e, "individual_low", sc->individual_low);
    gs_json_put_number(b, e, "individual_high", sc->individual_high);
    gs_json_put_bool(b, e, "straggler", sc->straggler);
    gs_json_append(b, ranks, e);
  }
}

/* See internal.h. */
const char *const gs_render_csv_straggler_head =
    "straggler,straggler_host,straggler_rank,straggler_relative,straggler_relative_low,"
    "straggler_relative_high,straggler_individual,straggler_individual_low,"
    "straggler_individual_high,straggler_reason";

/* See internal.h. */
void gs_render_csv_stragglers(FILE *out, const gs_report_row *row) {
  const int k = shown_rank(row);
  if (k < 0) {
    fputs(",,,,,,,,,,", out);
    return;
  }
  const gs_straggler *g = &row->scores;
  const gs_straggler_score *sc = &g->scores[k];
  if (g->named >= 0)
    fprintf(out, ",%d,", g->named);
  else
    fprintf(out, ",%s,", judgement(g));
  const char *host = g->named >= 0 ? row->ranks[g->named].host : NULL;
  gs_render_csv_field(out, host);
  fprintf(out, ",%d", k);
  const double v[6] = {sc->relative,   sc->relative_low,   sc->relative_high,
                       sc->individual, sc->individual_low, sc->individual_high};
  for (size_t i = 0; i < 6; i++) gs_render_csv_number(out, v[i]);
  char reason[512];
  gs_straggler_reason(g, &row->scores_host, reason, sizeof reason);
  fputc(',', out);
  if (reason[0]) gs_render_csv_field(out, reason);
}
