/* Renderers of a gs_report: aligned text for a terminal and GitHub Markdown
 * (one table builder serves both), tidy CSV of the raw samples, and JSON
 * (through gs_report_to_json). Columns are described in docs/report.md. */
#include "report/render.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const gs_report_format_choices[] = {"text", "markdown", "csv", "json", "html", NULL};

#define CELL 64
#define MAX_COLS 20

/* A table of text cells; numbers are right-aligned in text mode. */
typedef struct {
  size_t ncols, nrows, cap;
  const char *head[MAX_COLS];
  int left[MAX_COLS];  // 1: left-aligned column
  char (*cells)[MAX_COLS][CELL];
  int failed;  /* a row could not be allocated: rows went to `scratch` */
  char scratch[MAX_COLS][CELL];
} table;

static void table_init(table *t, size_t ncols, const char *const *head, const int *left) {
  memset(t, 0, sizeof *t);
  t->ncols = ncols;
  for (size_t i = 0; i < ncols; i++) {
    t->head[i] = head[i];
    t->left[i] = left ? left[i] : 0;
  }
}

/* Adds a row and returns its cells; when out of memory the table is marked
 * failed (table_done reports it) and a scratch row is returned. */
static char (*table_row(table *t))[CELL] {
  if (t->nrows == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 8;
    void *grown = realloc(t->cells, cap * sizeof *t->cells);
    if (!grown) {
      t->failed = 1;
      return t->scratch;
    }
    t->cells = grown;
    t->cap = cap;
  }
  char(*row)[CELL] = t->cells[t->nrows++];
  for (size_t i = 0; i < MAX_COLS; i++) row[i][0] = '\0';
  return row;
}

/* Where a report goes: terminal text, Markdown or HTML (md is also set for
 * HTML, whose wording follows Markdown's), with the plots HTML embeds. */
typedef struct {
  FILE *f;
  int md, html;
  const gs_report_plots *plots;
  size_t series;  /* index of the series being written (for its plots) */
} writer;

/* `text` with &, <, > and " escaped for HTML. */
static void html_text(FILE *out, const char *text) {
  for (const char *p = text; *p; p++) {
    switch (*p) {
      case '&': fputs("&amp;", out); break;
      case '<': fputs("&lt;", out); break;
      case '>': fputs("&gt;", out); break;
      case '"': fputs("&quot;", out); break;
      default: fputc(*p, out);
    }
  }
}

/* A block of text: level 1-3 a heading, 0 a paragraph, -1 a caption
 * (bold in Markdown/HTML, followed by ':' in text). Text mode indents it. */
static void w_block(writer *w, int level, const char *indent, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void w_block(writer *w, int level, const char *indent, const char *fmt, ...) {
  char text[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (w->html) {
    if (level > 0)
      fprintf(w->f, "<h%d>", level);
    else
      fputs(level < 0 ? "<p><b>" : "<p>", w->f);
    html_text(w->f, text);
    if (level > 0)
      fprintf(w->f, "</h%d>\n", level);
    else
      fputs(level < 0 ? "</b></p>\n" : "</p>\n", w->f);
  } else if (w->md) {
    if (level > 0)
      fprintf(w->f, "%.*s %s\n\n", level, "###", text);
    else
      fprintf(w->f, level < 0 ? "**%s**\n\n" : "%s\n\n", text);
  } else {
    fprintf(w->f, level < 0 ? "%s%s:\n" : level == 2 ? "%s%s\n" : "%s%s\n\n",
            level == 2 || level == 1 ? "" : indent, text);
  }
}

static void w_list(writer *w, const char *const *items, size_t n) {
  if (w->html) fputs("<ul>\n", w->f);
  for (size_t i = 0; i < n; i++) {
    if (w->html) {
      fputs("<li>", w->f);
      html_text(w->f, items[i]);
      fputs("</li>\n", w->f);
    } else {
      fprintf(w->f, w->md ? "- %s\n" : "  - %s\n", items[i]);
    }
  }
  fputs(w->html ? "</ul>\n" : "\n", w->f);
}

/* HTML only: the plots of series w->series for row `row` (-1: series plots),
 * inline SVG with their captions. */
static void w_plots(writer *w, const gs_report_series *s, int row) {
  (void)s;
  if (!w->html || !w->plots) return;
  for (size_t i = 0; i < w->plots->n; i++) {
    const gs_report_plot *p = &w->plots->p[i];
    if (p->series != w->series || p->row != row || !p->svg) continue;
    fputs("<figure>\n", w->f);
    fputs(p->svg, w->f);
    fputs("<figcaption>", w->f);
    html_text(w->f, p->caption);
    fputs("</figcaption></figure>\n", w->f);
  }
}

static void cellf(char *cell, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cellf(char *cell, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cell, CELL, fmt, ap);
  va_end(ap);
}

static void table_print(writer *wr, const table *t, const char *indent) {
  FILE *out = wr->f;
  if (wr->html) {
    fputs("<table>\n<tr>", out);
    for (size_t c = 0; c < t->ncols; c++) {
      fputs("<th>", out);
      html_text(out, t->head[c]);
      fputs("</th>", out);
    }
    fputs("</tr>\n", out);
    for (size_t r = 0; r < t->nrows; r++) {
      fputs("<tr>", out);
      for (size_t c = 0; c < t->ncols; c++) {
        fputs(t->left[c] ? "<td>" : "<td class=\"n\">", out);
        html_text(out, t->cells[r][c]);
        fputs("</td>", out);
      }
      fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
    return;
  }
  if (wr->md) {
    fputs("|", out);
    for (size_t c = 0; c < t->ncols; c++) fprintf(out, " %s |", t->head[c]);
    fputs("\n|", out);
    for (size_t c = 0; c < t->ncols; c++) fputs(t->left[c] ? ":---|" : "---:|", out);
    fputs("\n", out);
    for (size_t r = 0; r < t->nrows; r++) {
      fputs("|", out);
      for (size_t c = 0; c < t->ncols; c++) fprintf(out, " %s |", t->cells[r][c]);
      fputs("\n", out);
    }
    fputs("\n", out);
    return;
  }
  size_t width[MAX_COLS];
  for (size_t c = 0; c < t->ncols; c++) {
    width[c] = strlen(t->head[c]);
    for (size_t r = 0; r < t->nrows; r++)
      if (strlen(t->cells[r][c]) > width[c]) width[c] = strlen(t->cells[r][c]);
  }
  for (size_t r = 0; r <= t->nrows; r++) {
    fputs(indent, out);
    for (size_t c = 0; c < t->ncols; c++) {
      const char *text = r == 0 ? t->head[c] : t->cells[r - 1][c];
      int w = (int)width[c];
      if (c + 1 == t->ncols && t->left[c])
        fputs(text, out);
      else
        fprintf(out, t->left[c] ? "%-*s" : "%*s", w, text);
      if (c + 1 < t->ncols) fputs("  ", out);
    }
    fputs("\n", out);
  }
  fputs("\n", out);
}

/* Prints and frees `t`; GS_ERR_NOMEM when a row could not be allocated. */
static gs_status table_done(writer *w, table *t, const char *indent) {
  if (!t->failed) table_print(w, t, indent);
  free(t->cells);
  return t->failed ? GS_ERR_NOMEM : GS_OK;
}


/* ---- number formats ----------------------------------------------------------- */

static void fmt_ms(char *cell, double seconds) {
  if (isfinite(seconds))
    cellf(cell, "%.3f", 1e3 * seconds);
  else
    cellf(cell, "-");
}

static void fmt_rate(char *cell, double v) {
  if (!isfinite(v)) {
    cellf(cell, "-");
  } else if (fabs(v) >= 1e9) {
    cellf(cell, "%.3f G", v / 1e9);
  } else if (fabs(v) >= 1e6) {
    cellf(cell, "%.3f M", v / 1e6);
  } else if (fabs(v) >= 1e3) {
    cellf(cell, "%.3f K", v / 1e3);
  } else {
    cellf(cell, "%.3f", v);
  }
}

static void fmt_pct(char *cell, double fraction) {
  if (isfinite(fraction))
    cellf(cell, "%.1f%%", 100.0 * fraction);
  else
    cellf(cell, "-");
}

static void fmt_fixed(char *cell, double v, int digits, const char *suffix) {
  if (isfinite(v))
    cellf(cell, "%.*f%s", digits, v, suffix);
  else
    cellf(cell, "-");
}

/* n, mean, min, max, stddev (ms) and the share within 15% into c[0..5]. */
static void latency_cells(char (*c)[CELL], size_t n, double mean, double min, double max,
                          double stddev, double stable) {
  cellf(c[0], "%zu", n);
  fmt_ms(c[1], mean);
  fmt_ms(c[2], min);
  fmt_ms(c[3], max);
  fmt_ms(c[4], stddev);
  fmt_pct(c[5], stable);
}

static const char *scaling_text(const char *scaling) {
  if (strcmp(scaling, "strong") == 0)
    return "strong scaling (fixed total work; speedup = T(1) / T(N))";
  if (strcmp(scaling, "weak") == 0)
    return "weak scaling (fixed work per rank; speedup is the scaled speedup)";
  if (strcmp(scaling, "none") == 0) return "no scaling sweep (single run)";
  return "scaling not recorded";
}

/* "Why not N x": the step of each row split into its parts (docs/report.md). */
static gs_status breakdown_table(writer *w, const gs_report_series *s) {
  size_t shown = 0;
  for (size_t i = 0; i < s->n_rows; i++) shown += s->rows[i].breakdown.available;
  if (shown == 0) return GS_OK;
  w_block(w, -1, "  ", "Why not N x: the wall-clock step (slowest rank per iteration) split per "
                      "rank and iteration into compute (device - comm), exposed communication "
                      "(comm_seconds), load imbalance (step - the rank's wall time) and host "
                      "overhead (wall - device); ms, share of the step in parentheses");
  static const char *const head[] = {"ranks", "step ms", "ideal ms", "compute", "comm",
                                     "imbalance", "host", "notes"};
  static const int left[] = {0, 0, 0, 0, 0, 0, 0, 1};
  table t;
  table_init(&t, 8, head, left);
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_breakdown *b = &s->rows[i].breakdown;
    if (!b->available) continue;
    char(*c)[CELL] = table_row(&t);
    cellf(c[0], "%d", s->rows[i].world_size);
    fmt_ms(c[1], b->step);
    fmt_ms(c[2], b->ideal_step);
    const double parts[4] = {b->compute, b->comm, b->imbalance, b->host};
    for (int p = 0; p < 4; p++)
      cellf(c[3 + p], "%.3f (%.1f%%)", 1e3 * parts[p], b->step > 0 ? 100.0 * parts[p] / b->step : 0.0);
    cellf(c[7], "%s%s%s", b->comm_measured ? "" : "comm not recorded",
          !b->comm_measured && !b->device_clock ? "; " : "",
          b->device_clock ? "" : "no device clock: host overhead 0");
    if (!c[7][0]) cellf(c[7], "-");
  }
  return table_done(w, &t, "    ");
}

/* Request-based rows (llm): throughput from the run time, TTFT and TPOT. */
static gs_status request_table(writer *w, const gs_report_series *s) {
  size_t shown = 0;
  for (size_t i = 0; i < s->n_rows; i++) shown += s->rows[i].request_based;
  if (shown == 0) return GS_OK;
  w_block(w, -1, "  ", "Requests: throughput = tokens of ok requests / run seconds (the table's "
                      "n, mean and median are per-request latencies); TTFT and TPOT over ok "
                      "requests that are not cold, in ms. Why not N x: the compute/"
                      "communication/imbalance/host split does not apply to requests");
  static const char *const head[] = {"ranks",     "scenario",  "requests",  "ok",
                                     "tokens",    "run s",     "tokens/s",  "TTFT p50",
                                     "TTFT p99",  "TPOT p50",  "TPOT p99"};
  static const int left[] = {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  table t;
  table_init(&t, 11, head, left);
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    if (!row->request_based) continue;
    size_t requests = 0, ok = 0;
    for (size_t k = 0; k < row->n_ranks; k++)
      requests += row->ranks[k].requests, ok += row->ranks[k].requests_ok;
    char(*c)[CELL] = table_row(&t);
    cellf(c[0], "%d", row->world_size);
    cellf(c[1], "%s", row->scenario ? row->scenario : "-");
    cellf(c[2], "%zu", requests);
    cellf(c[3], "%zu", ok);
    fmt_fixed(c[4], row->generated_tokens, 0, "");
    fmt_fixed(c[5], row->run_seconds, 3, "");
    fmt_rate(c[6], row->throughput);
    fmt_ms(c[7], row->ttft.n ? row->ttft.p50 : NAN);
    fmt_ms(c[8], row->ttft.n ? row->ttft.p99 : NAN);
    fmt_ms(c[9], row->tpot.n ? row->tpot.p50 : NAN);
    fmt_ms(c[10], row->tpot.n ? row->tpot.p99 : NAN);
  }
  return table_done(w, &t, "    ");
}

/* Bus bandwidth of collective rows against the link's theoretical figure. */
static gs_status collective_table(writer *w, const gs_report_series *s) {
  if (s->n_rows == 0 || !s->rows[0].is_coll) return GS_OK;
  w_block(w, -1, "  ", "Collective bandwidth (GB/s = 10^9 bytes/s)");
  static const char *const head[] = {"op",         "ranks",      "bytes",     "time us",
                                     "algbw GB/s", "busbw GB/s", "link GB/s", "busbw/link",
                                     "status"};
  static const int left[] = {1, 0, 0, 0, 0, 0, 0, 0, 1};
  table t;
  table_init(&t, 9, head, left);
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    char(*c)[CELL] = table_row(&t);
    cellf(c[0], "%s", row->coll_op ? row->coll_op : "-");
    cellf(c[1], "%d", row->world_size);
    fmt_fixed(c[2], row->coll_bytes, 0, "");
    fmt_fixed(c[3], row->has_step ? 1e6 * row->step.mean : NAN, 2, "");
    fmt_fixed(c[4], row->coll_algbw / 1e9, 2, "");
    fmt_fixed(c[5], row->coll_busbw / 1e9, 2, "");
    fmt_fixed(c[6], row->link_bandwidth / 1e9, 1, "");
    fmt_pct(c[7], row->coll_busbw / row->link_bandwidth);
    cellf(c[8], "%s", row->status);
  }
  return table_done(w, &t, "    ");
}

/* Per-host symmetry of one row, shown when its ranks ran on 2+ hosts. */
static gs_status host_table(writer *w, const gs_report_row *row) {
  if (row->n_hosts < 2) return GS_OK;
  char cv[CELL];
  fmt_pct(cv, row->host_spread_cv);
  w_block(w, -1, "    ", "Hosts (%zu): cv of throughput per rank between hosts %s", row->n_hosts,
          cv);
  static const char *const head[] = {"host",       "ranks",     "n",       "mean ms",
                                     "min ms",     "max ms",    "stddev ms", "within 15%",
                                     "throughput", "per rank",  "deviation", "success",
                                     "tokens/s",   "mem GiB",   "cold ranks", "mark"};
  static const int left[] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  table t;
  table_init(&t, 16, head, left);
  for (size_t h = 0; h < row->n_hosts; h++) {
    const gs_report_host *x = &row->hosts[h];
    char(*c)[CELL] = table_row(&t);
    cellf(c[0], "%s", x->name);
    cellf(c[1], "%zu", x->n_ranks);
    latency_cells(c + 2, x->n, x->mean, x->min, x->max, x->stddev, x->stable_share);
    fmt_rate(c[8], x->throughput);
    fmt_rate(c[9], x->per_rank);
    fmt_pct(c[10], x->deviation);
    fmt_pct(c[11], x->success_rate);
    fmt_rate(c[12], x->tokens_per_second);
    fmt_fixed(c[13], x->memory_used_bytes / 1073741824.0, 2, "");
    cellf(c[14], "%zu", x->cold_ranks);
    cellf(c[15], "%s", gs_rank_mark_name(x->mark));
  }
  return table_done(w, &t, "      ");
}

/* ---- text and Markdown ---------------------------------------------------------- */

static gs_status series_tables(writer *w, const gs_report *r, const gs_report_series *s) {
  const char *unit = s->item_unit ? s->item_unit : "items";
  w_block(w, 2, "", "%s: backend %s, %s%s%s%s%s", s->workload, s->backend[0] ? s->backend : "-",
          scaling_text(s->scaling), s->label[0] ? "; " : "", s->label,
          s->split[0] ? "; split " : "", s->split);
  w_block(w, 0, "  ", w->md && !w->html ? "Workload options: `%s`" : "Workload options: %s",
          s->options);
  // A sweep of message sizes: its own table below, no scaling, split or rank tables.
  const int coll = s->n_rows > 0 && s->rows[0].is_coll;
  if (coll)
    w_block(w, 0, "  ", "A collective sweep: one row per operation, message size and form");
  else if (s->n_rows > 0 && s->rows[0].request_based)
    w_block(w, 0, "  ", "n, mean and median: per-request latency, in ms; throughput in %s/s over "
                        "the run time", unit);
  else
    w_block(w, 0, "  ", "Step time = slowest rank per iteration, in ms; throughput in %s/s", unit);
  w_plots(w, s, -1);

  static const char *const head[] = {"ranks",   "file",    "status",     "verify",
                                     "n",       "mean ms", "median ms",  "cv",
                                     "throughput", "ideal", "speedup",   "efficiency",
                                     "karp-flatt", "warnings"};
  static const int left[] = {0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  table t;
  int priced = r->prices.n > 0;
  static const char *const cost_head[] = {"$/hour", "items/$", "$/M items"};
  table_init(&t, 14, head, left);
  if (priced) {
    for (size_t c = 0; c < 3; c++) t.head[14 + c] = cost_head[c];
    t.ncols = 17;
  }
  for (size_t i = 0; i < s->n_rows && !coll; i++) {
    const gs_report_row *row = &s->rows[i];
    char(*c)[CELL] = table_row(&t);
    if (priced) {
      fmt_fixed(c[14], row->price_per_hour, 2, "");
      fmt_rate(c[15], row->items_per_dollar);
      fmt_fixed(c[16], row->dollars_per_million, 4, "");
    }
    cellf(c[0], "%d", row->world_size);
    cellf(c[1], "%s", gs_report_file_name(r, row->file));
    cellf(c[2], "%s", row->status);
    cellf(c[3], "%s", row->verification);
    cellf(c[4], "%zu", row->has_step ? row->step.n : (size_t)0);
    fmt_ms(c[5], row->has_step ? row->step.mean : NAN);
    fmt_ms(c[6], row->has_step ? row->step.median : NAN);
    fmt_pct(c[7], row->has_step ? row->step.cv : NAN);
    fmt_rate(c[8], row->throughput);
    fmt_rate(c[9], row->ideal_throughput);
    fmt_fixed(c[10], row->speedup, 2, "x");
    fmt_pct(c[11], row->efficiency);
    fmt_fixed(c[12], row->karp_flatt, 3, "");
    char warn[256] = "";
    if (row->has_step) {
      unsigned flags = row->step.warnings;
      snprintf(warn, sizeof warn, "%s%s%s%s",
               (flags & GS_STATS_WARN_FEW_SAMPLES) ? "few-samples " : "",
               (flags & GS_STATS_WARN_NOISY) ? "noisy " : "",
               (flags & GS_STATS_WARN_SHORT) ? "short " : "",
               (flags & GS_STATS_WARN_OUTLIERS) ? "outliers " : "");
      size_t len = strlen(warn);
      if (len) warn[len - 1] = '\0';
    }
    cellf(c[13], "%s", warn[0] ? warn : "-");
  }
  gs_status st = coll ? GS_OK : table_done(w, &t, "  ");
  if (st != GS_OK) return st;
  if (priced && !coll)
    w_block(w, 0, "  ", "Cost: $/hour = sum of the prices of the row's GPUs (--price); items/$ = "
                        "throughput x 3600 / ($/hour); $/M items = 10^6 / (items/$). '-' where "
                        "no price matched a GPU name (e.g. the CPU backend).");
  if (!coll) st = breakdown_table(w, s);
  if (st == GS_OK) st = request_table(w, s);
  if (st == GS_OK) st = collective_table(w, s);
  if (st != GS_OK) return st;

  static const char *const rhead[] = {"rank",      "status",  "clock",     "n",
                                      "mean ms",   "min ms",  "max ms",    "stddev ms",
                                      "within 15%", "throughput", "deviation", "mark",
                                      "cold",      "cold flag", "host",     "success",
                                      "tokens/s",  "mem GiB"};
  static const int rleft[] = {0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0};
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    if (row->world_size < 2 || coll) continue;
    char straggler[64] = "none";
    if (row->straggler >= 0)
      snprintf(straggler, sizeof straggler, "rank %d%s", row->straggler,
               row->ranks[row->straggler].injected ? " (injected)" : "");
    char ratio[CELL], cv[CELL], med[CELL];
    fmt_fixed(ratio, row->spread_ratio, 2, "x");
    fmt_pct(cv, row->spread_cv);
    fmt_rate(med, row->rank_median);
    w_block(w, 3, "  ",
            "%d ranks (%s, measurement %zu): ranks max/min %s, cv %s, median %s %s/s, "
            "straggler %s%s%s%s%s",
            row->world_size, gs_report_file_name(r, row->file), row->measurement, ratio, cv, med,
            row->request_based ? "tokens" : unit, straggler, row->split_units[0] ? "; units " : "",
            row->split_units, row->faults[0] ? "; injected: " : "", row->faults);
    table_init(&t, 18, rhead, rleft);
    for (size_t k = 0; k < row->n_ranks; k++) {
      const gs_report_rank *rk = &row->ranks[k];
      char(*c)[CELL] = table_row(&t);
      cellf(c[0], "%d", rk->rank);
      cellf(c[1], "%s", rk->status);
      cellf(c[2], "%s", rk->clock);
      latency_cells(c + 3, rk->n, rk->mean, rk->min, rk->max, rk->stddev, rk->stable_share);
      fmt_rate(c[9], rk->throughput);
      fmt_pct(c[10], rk->deviation);
      int straggler_rank = (int)k == row->straggler;
      cellf(c[11], "%s%s%s%s%s", gs_rank_mark_name(rk->mark),
            straggler_rank || rk->injected ? " (" : "", straggler_rank ? "straggler" : "",
            straggler_rank && rk->injected ? ", " : "",
            rk->injected ? "injected)" : straggler_rank ? ")" : "");
      fmt_fixed(c[12], rk->cold_ratio, 2, "x");
      cellf(c[13], "%s%s%s", rk->cold_flag ? "slow start" : "",
            rk->cold_flag && rk->first_sample_flag ? ", " : "",
            rk->first_sample_flag ? "slow first sample" : "");
      if (!c[13][0]) cellf(c[13], "-");
      cellf(c[14], "%s", rk->host ? rk->host : "-");
      fmt_pct(c[15], rk->success_rate);
      fmt_rate(c[16], rk->tokens_per_second);
      fmt_fixed(c[17], rk->memory_used_bytes / 1073741824.0, 2, "");
    }
    if ((st = table_done(w, &t, "    ")) != GS_OK) return st;
    if ((st = host_table(w, row)) != GS_OK) return st;
    w_plots(w, s, (int)i);
  }

  w_block(w, -1, "  ", "Recommendation");
  w_list(w, (const char *const *)s->advice, s->n_advice);
  return GS_OK;
}

/* ---- plans -------------------------------------------------------------------------- */

/* The row of task `task` of file `fi` and its series, or NULL. */
static const gs_report_row *task_row(const gs_report *r, size_t fi, int task,
                                     const gs_report_series **series) {
  for (size_t i = 0; i < r->n_series; i++)
    for (size_t j = 0; j < r->series[i].n_rows; j++) {
      const gs_report_row *row = &r->series[i].rows[j];
      if (row->file == fi && row->task == task) {
        *series = &r->series[i];
        return row;
      }
    }
  return NULL;
}

/* For each `gpuscale plan` document (top-level "plan"): each task's
 * throughput as recomputed here next to the one the plan recorded, and the
 * system total summed per item unit. */
static gs_status plan_tables(writer *w, const gs_report *r) {
  for (size_t fi = 0; fi < r->n_files; fi++) {
    const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r->docs[fi], "plan"), "tasks");
    if (!cJSON_IsArray(tasks)) continue;
    w_block(w, 2, "", "Plan %s: tasks measured at the same time", gs_report_file_name(r, fi));
    w_block(w, 0, "  ", "throughput = items per step / mean step (as in the series above); "
                        "recorded = the figure the plan document holds");
    static const char *const head[] = {"task", "spec", "workload", "ranks", "status",
                                       "throughput", "recorded", "unit"};
    static const int left[] = {0, 1, 1, 0, 1, 0, 0, 1};
    table t;
    table_init(&t, 8, head, left);
    const char *units[16];
    double totals[16];
    size_t n_units = 0;
    for (const cJSON *x = tasks->child; x; x = x->next) {
      const cJSON *task = cJSON_GetObjectItemCaseSensitive(x, "task");
      int index = cJSON_IsNumber(task) ? task->valueint : -1;
      const gs_report_series *s = NULL;
      const gs_report_row *row = task_row(r, fi, index, &s);
      const cJSON *spec = cJSON_GetObjectItemCaseSensitive(x, "spec");
      const cJSON *recorded = cJSON_GetObjectItemCaseSensitive(x, "throughput_items_per_second");
      const char *unit = s && s->item_unit ? s->item_unit : "items";
      char(*c)[CELL] = table_row(&t);
      cellf(c[0], "%d", index);
      cellf(c[1], "%s", cJSON_IsString(spec) ? spec->valuestring : "-");
      cellf(c[2], "%s", s ? s->workload : "-");
      cellf(c[3], "%d", row ? row->world_size : 0);
      cellf(c[4], "%s", row ? row->status : "not measured");
      fmt_rate(c[5], row ? row->throughput : NAN);
      fmt_rate(c[6], cJSON_IsNumber(recorded) ? recorded->valuedouble : NAN);
      cellf(c[7], "%s", unit);
      if (!row || strcmp(row->status, "ok") != 0 || !isfinite(row->throughput)) continue;
      size_t u = 0;
      while (u < n_units && strcmp(units[u], unit) != 0) u++;
      if (u == n_units && n_units < 16) units[n_units] = unit, totals[n_units++] = 0.0;
      if (u < n_units) totals[u] += row->throughput;
    }
    gs_status st = table_done(w, &t, "  ");
    if (st != GS_OK) return st;
    for (size_t u = 0; u < n_units; u++) {
      char rate[CELL];
      fmt_rate(rate, totals[u]);
      w_block(w, 0, "  ", "System total: %s %s/s (tasks with status ok)", rate, units[u]);
    }
  }
  return GS_OK;
}

static gs_status render_tables(writer *w, const gs_report *r) {
  if (w->md) {
    w_block(w, 1, "", "gpuscale report");
    char files[2048] = "";
    for (size_t i = 0; i < r->n_files; i++) {
      size_t len = strlen(files);
      snprintf(files + len, sizeof files - len, w->html ? " %s" : " `%s`", r->files[i]);
    }
    w_block(w, 0, "", "Files:%s%s", files,
            strlen(files) + 1 >= sizeof files ? " ..." : "");
    w_block(w, 0, "", "Rank marks: good <= %g%% < moderate <= %g%% < critical (deviation from "
                      "the median rank throughput); success rate below %g%% is moderate, below "
                      "%g%% critical.",
            100.0 * r->thresholds.moderate, 100.0 * r->thresholds.critical,
            100.0 * GS_REPORT_SUCCESS_MODERATE, 100.0 * GS_REPORT_SUCCESS_CRITICAL);
  } else {
    w_block(w, 0, "", "gpuscale report: %zu file%s, %zu series; rank marks: good <= %g%% < "
                      "moderate <= %g%% < critical",
            r->n_files, r->n_files == 1 ? "" : "s", r->n_series, 100.0 * r->thresholds.moderate,
            100.0 * r->thresholds.critical);
  }
  if (w->plots && w->plots->note[0]) w_block(w, 0, "", "Plots: %s", w->plots->note);
  if (r->n_series == 0) w_block(w, 0, "  ", "No measurements.");
  for (size_t i = 0; i < r->n_series; i++) {
    w->series = i;
    gs_status st = series_tables(w, r, &r->series[i]);
    if (st != GS_OK) return st;
  }
  return plan_tables(w, r);
}

/* ---- CSV ---------------------------------------------------------------------------- */

/* Writes `text` as one CSV field (RFC 4180: quoted when it holds a comma,
 * quote or line break, quotes doubled). */
static void csv_field(FILE *out, const char *text) {
  if (strpbrk(text, ",\"\r\n") == NULL) {
    fputs(text, out);
    return;
  }
  fputc('"', out);
  for (const char *p = text; *p; p++) {
    if (*p == '"') fputc('"', out);
    fputc(*p, out);
  }
  fputc('"', out);
}

/* Sample `x` as seconds text: the shortest of 15..17 significant digits
 * that reads back exactly; "" for null or a non-finite value. 16 digits are
 * tried first: if they read back, 15 might too (fewer never fail where more
 * succeed); if not, 17 always do. At most two conversions each way. */
static void csv_sample(const cJSON *x, char *buf, size_t size) {
  buf[0] = '\0';
  if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble)) return;
  double v = x->valuedouble;
  snprintf(buf, size, "%.16g", v);
  if (strtod(buf, NULL) != v) {
    snprintf(buf, size, "%.17g", v);
    return;
  }
  char shorter[64];
  snprintf(shorter, sizeof shorter, "%.15g", v);
  if (strtod(shorter, NULL) == v) snprintf(buf, size, "%s", shorter);
}

/* The samples a rank's CSV rows use: device clock when recorded, else wall. */
static const cJSON *rank_samples(const cJSON *rk) {
  const cJSON *dev = cJSON_GetObjectItemCaseSensitive(rk, "device_seconds");
  const cJSON *use = cJSON_IsArray(dev) ? dev : cJSON_GetObjectItemCaseSensitive(rk, "wall_seconds");
  return cJSON_IsArray(use) ? use : NULL;
}

/* The fields before "iteration" of every row of one run, with their commas:
 * "file,workload,backend,scaling,world_size,run,". */
static void csv_prefix(FILE *mem, const gs_report *r, size_t fi, const cJSON *m, size_t run) {
  const cJSON *ws = cJSON_GetObjectItemCaseSensitive(m, "world_size");
  const cJSON *wl = cJSON_GetObjectItemCaseSensitive(m, "workload");
  const cJSON *be = cJSON_GetObjectItemCaseSensitive(m, "backend");
  const cJSON *sc = cJSON_GetObjectItemCaseSensitive(m, "scaling");
  csv_field(mem, r->files[fi]);
  fputc(',', mem);
  csv_field(mem, cJSON_IsString(wl) ? wl->valuestring : "");
  fputc(',', mem);
  csv_field(mem, cJSON_IsString(be) ? be->valuestring : "");
  fputc(',', mem);
  csv_field(mem, cJSON_IsString(sc) ? sc->valuestring : "");
  fprintf(mem, ",%.0f,%zu,", cJSON_IsNumber(ws) ? ws->valuedouble : 0.0, run);
}

/* One row per sample: the step time of each iteration (rank "step"), then
 * each rank's time of that iteration (device clock when recorded, else
 * wall). Every document is walked in file, measurement, run, iteration
 * order; the analysis has already validated the structure. */
static gs_status render_csv(FILE *out, const gs_report *r) {
  fputs("file,workload,backend,scaling,world_size,run,iteration,rank,seconds\n", out);
  char buf[64];
  for (size_t fi = 0; fi < r->n_files; fi++) {
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(r->docs[fi], "measurements");
    for (const cJSON *m = ms ? ms->child : NULL; m; m = m->next) {
      const cJSON *runs = cJSON_GetObjectItemCaseSensitive(m, "runs");
      size_t ri = 0;
      for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next, ri++) {
        const cJSON *steps = cJSON_GetObjectItemCaseSensitive(run, "step_seconds");
        const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(run, "ranks");
        size_t nranks = (size_t)cJSON_GetArraySize(ranks);
        // One cursor per rank, advanced together, so that the walk is linear.
        const cJSON **cur = calloc(nranks + 1, sizeof *cur);
        if (!cur) return GS_ERR_NOMEM;
        size_t k = 0;
        for (const cJSON *rk = ranks ? ranks->child : NULL; rk; rk = rk->next, k++) {
          const cJSON *use = rank_samples(rk);
          cur[k] = use ? use->child : NULL;
        }
        const cJSON *step = cJSON_IsArray(steps) ? steps->child : NULL;
        char *prefix = NULL;
        size_t prefix_len = 0;
        FILE *mem = open_memstream(&prefix, &prefix_len);
        if (mem) {
          csv_prefix(mem, r, fi, m, ri);
          if (fclose(mem) != 0) prefix = NULL;
        }
        if (!prefix) {
          free(cur);
          return GS_ERR_NOMEM;
        }
        for (size_t iter = 0;; iter++) {
          int any = step != NULL;
          for (k = 0; k < nranks; k++) any |= cur[k] != NULL;
          if (!any) break;
          if (step) {
            csv_sample(step, buf, sizeof buf);
            fprintf(out, "%s%zu,step,%s\n", prefix, iter, buf);
            step = step->next;
          }
          k = 0;
          for (const cJSON *rk = ranks ? ranks->child : NULL; rk; rk = rk->next, k++) {
            if (!cur[k]) continue;
            const cJSON *num = cJSON_GetObjectItemCaseSensitive(rk, "rank");
            csv_sample(cur[k], buf, sizeof buf);
            fprintf(out, "%s%zu,%.0f,%s\n", prefix, iter,
                    cJSON_IsNumber(num) ? num->valuedouble : -1.0, buf);
            cur[k] = cur[k]->next;
          }
        }
        free(cur);
        free(prefix);
      }
    }
  }
  return GS_OK;
}

/* A single self-contained HTML file: inline style, inline SVG plots, no
 * script and no external resource. */
static gs_status render_html(writer *w, const gs_report *r) {
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<title>gpuscale report</title>\n<style>\n"
        "body{font-family:sans-serif;margin:2em;max-width:110em}\n"
        "table{border-collapse:collapse;margin:0.5em 0 1.5em 0;font-size:90%}\n"
        "th,td{border:1px solid #bbb;padding:2px 6px}th{background:#eee}\n"
        "td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
        "figure{display:inline-block;margin:0.5em}figure svg{max-width:40em;height:auto}\n"
        "</style>\n</head>\n<body>\n", w->f);
  gs_status st = render_tables(w, r);
  fputs("</body>\n</html>\n", w->f);
  return st;
}

/* See render.h. */
gs_status gs_report_print_json(FILE *out, cJSON *doc) {
  char *text = doc ? cJSON_Print(doc) : NULL;
  cJSON_Delete(doc);
  if (!text) return GS_ERR_NOMEM;
  fputs(text, out);
  fputs("\n", out);
  cJSON_free(text);
  return ferror(out) ? GS_ERR_IO : GS_OK;
}

/* See render.h. */
gs_status gs_report_render(FILE *out, const gs_report *r, gs_report_format format) {
  return gs_report_render_plots(out, r, format, NULL);
}

/* See render.h. */
gs_status gs_report_render_plots(FILE *out, const gs_report *r, gs_report_format format,
                                 const gs_report_plots *plots) {
  gs_status st = GS_OK;
  writer w = {.f = out, .plots = plots};
  switch (format) {
    case GS_REPORT_TEXT: st = render_tables(&w, r); break;
    case GS_REPORT_MARKDOWN:
      w.md = 1;
      st = render_tables(&w, r);
      break;
    case GS_REPORT_HTML:
      w.md = w.html = 1;
      st = render_html(&w, r);
      break;
    case GS_REPORT_CSV: st = render_csv(out, r); break;
    case GS_REPORT_JSON: st = gs_report_print_json(out, gs_report_to_json(r)); break;
  }
  if (st != GS_OK) return st;
  return ferror(out) ? GS_ERR_IO : GS_OK;
}
