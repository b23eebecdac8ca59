/* The table builder and writer behind the text, Markdown and HTML reports
 * (internal.h): cells collected per row, then printed aligned for a
 * terminal, as a GitHub table or as an HTML table; headings, paragraphs,
 * lists and embedded plots in each form; number cells. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/scaling.h"
#include "report/render/internal.h"

void gs_render_table_init(gs_render_table *t, size_t ncols, const char *const *head,
                          const int *left) {
  memset(t, 0, sizeof *t);
  t->ncols = ncols;
  for (size_t i = 0; i < ncols; i++) {
    t->head[i] = head[i];
    t->left[i] = left ? left[i] : 0;
  }
}

/* Adds a row and returns its cells; when out of memory the table is marked
 * failed (gs_render_table_done reports it) and a scratch row is returned. */
char (*gs_render_table_row(gs_render_table *t))[GS_RENDER_CELL] {
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
  char(*row)[GS_RENDER_CELL] = t->cells[t->nrows++];
  for (size_t i = 0; i < GS_RENDER_MAX_COLS; i++) row[i][0] = '\0';
  return row;
}


/* `text` with &, <, > and " escaped for HTML. */
void gs_render_html_text(FILE *out, const char *text) {
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
void gs_render_block(gs_render_writer *w, int level, const char *indent, const char *fmt, ...) {
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
    gs_render_html_text(w->f, text);
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

void gs_render_list(gs_render_writer *w, const char *const *items, size_t n) {
  if (w->html) fputs("<ul>\n", w->f);
  for (size_t i = 0; i < n; i++) {
    if (w->html) {
      fputs("<li>", w->f);
      gs_render_html_text(w->f, items[i]);
      fputs("</li>\n", w->f);
    } else {
      fprintf(w->f, w->md ? "- %s\n" : "  - %s\n", items[i]);
    }
  }
  fputs(w->html ? "</ul>\n" : "\n", w->f);
}

/* HTML only: the plots of series w->series for row `row` (-1: series plots),
 * inline SVG with their captions. */
void gs_render_plots_of(gs_render_writer *w, const gs_report_series *s, int row) {
  (void)s;
  if (!w->html || !w->plots) return;
  for (size_t i = 0; i < w->plots->n; i++) {
    const gs_report_plot *p = &w->plots->p[i];
    if (p->series != w->series || p->row != row || !p->svg) continue;
    fputs("<figure>\n", w->f);
    fputs(p->svg, w->f);
    fputs("<figcaption>", w->f);
    gs_render_html_text(w->f, p->caption);
    fputs("</figcaption></figure>\n", w->f);
  }
}

void gs_render_cellf(char *cell, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cell, GS_RENDER_CELL, fmt, ap);
  va_end(ap);
}

static void table_print(gs_render_writer *wr, const gs_render_table *t, const char *indent) {
  FILE *out = wr->f;
  if (wr->html) {
    fputs("<table>\n<tr>", out);
    for (size_t c = 0; c < t->ncols; c++) {
      fputs("<th>", out);
      gs_render_html_text(out, t->head[c]);
      fputs("</th>", out);
    }
    fputs("</tr>\n", out);
    for (size_t r = 0; r < t->nrows; r++) {
      fputs("<tr>", out);
      for (size_t c = 0; c < t->ncols; c++) {
        fputs(t->left[c] ? "<td>" : "<td class=\"n\">", out);
        gs_render_html_text(out, t->cells[r][c]);
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
  size_t width[GS_RENDER_MAX_COLS];
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

static int format_columns(gs_render_table *t);

/* Prints and frees `t`; GS_ERR_NOMEM when a row could not be allocated. */
gs_status gs_render_table_done(gs_render_writer *w, gs_render_table *t, const char *indent) {
  if (!t->failed && !format_columns(t)) t->failed = 1;
  if (!t->failed) table_print(w, t, indent);
  free(t->cells);
  return t->failed ? GS_ERR_NOMEM : GS_OK;
}


/* ---- number formats ----------------------------------------------------------- */

/* A number cell waiting for its column's unit: a marker byte, the kind and
 * the value, formatted by format_columns when the table is printed. */
#define DEFERRED_MARK '\x1f'
#define DEFERRED_VALUE_AT 8
#define DEFERRED_NOTE_AT 16

static void deferred(char *cell, gs_unit_kind kind, double v) {
  if (!isfinite(v)) {
    gs_render_cellf(cell, "-");
    return;
  }
  cell[0] = DEFERRED_MARK;
  cell[1] = (char)('0' + (int)kind);
  memcpy(cell + DEFERRED_VALUE_AT, &v, sizeof v);
  cell[DEFERRED_NOTE_AT] = '\0';
}

static int deferred_kind(const char *cell, gs_unit_kind *kind, double *v) {
  if (cell[0] != DEFERRED_MARK) return 0;
  *kind = (gs_unit_kind)(cell[1] - '0');
  memcpy(v, cell + DEFERRED_VALUE_AT, sizeof *v);
  return 1;
}

void gs_render_time(char *cell, double seconds) { deferred(cell, GS_UNIT_SECONDS, seconds); }
void gs_render_rate(char *cell, double v) { deferred(cell, GS_UNIT_RATE, v); }
void gs_render_bandwidth(char *cell, double v) { deferred(cell, GS_UNIT_BANDWIDTH, v); }
void gs_render_bytes(char *cell, double v) { deferred(cell, GS_UNIT_BYTES, v); }

void gs_render_time_noted(char *cell, double seconds, const char *note) {
  deferred(cell, GS_UNIT_SECONDS, seconds);
  if (cell[0] == DEFERRED_MARK)
    snprintf(cell + DEFERRED_NOTE_AT, GS_RENDER_CELL - DEFERRED_NOTE_AT, "%s", note);
}

/* Formats the deferred number cells of `t`: per column and kind one unit
 * (gs_unit_for over the column's values). 0 when out of memory. */
static int format_columns(gs_render_table *t) {
  if (t->nrows == 0) return 1;
  double *values = malloc(t->nrows * sizeof *values);
  if (!values) return 0;
  static const gs_unit_kind kinds[] = {GS_UNIT_SECONDS, GS_UNIT_RATE, GS_UNIT_BANDWIDTH,
                                       GS_UNIT_BYTES};
  for (size_t c = 0; c < t->ncols; c++) {
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
      size_t n = 0;
      gs_unit_kind kind;
      double v;
      for (size_t r = 0; r < t->nrows; r++)
        if (deferred_kind(t->cells[r][c], &kind, &v) && kind == kinds[k]) values[n++] = v;
      if (n == 0) continue;
      const gs_unit unit = gs_unit_for(kinds[k], values, n);
      for (size_t r = 0; r < t->nrows; r++)
        if (deferred_kind(t->cells[r][c], &kind, &v) && kind == kinds[k]) {
          char note[GS_RENDER_CELL], number[64];
          snprintf(note, sizeof note, "%s", t->cells[r][c] + DEFERRED_NOTE_AT);
          gs_unit_format(&unit, v, number, sizeof number);
          gs_render_cellf(t->cells[r][c], "%s%s", number, note);
        }
    }
  }
  free(values);
  return 1;
}

void gs_render_pct(char *cell, double fraction) {
  if (isfinite(fraction))
    gs_render_cellf(cell, "%.1f%%", 100.0 * fraction);
  else
    gs_render_cellf(cell, "-");
}

void gs_render_fixed(char *cell, double v, int digits, const char *suffix) {
  if (isfinite(v))
    gs_render_cellf(cell, "%.*f%s", digits, v, suffix);
  else
    gs_render_cellf(cell, "-");
}

void gs_render_ratio(char *cell, double v, double low, double high, int pct) {
  char text[GS_RENDER_CELL];
  gs_scaling_format_ratio(v, low, high, pct ? 100.0 : 1.0, pct ? 1 : 2, pct ? "%" : "x", text,
                          sizeof text);
  gs_render_cellf(cell, "%s", text);
}

/* n, mean, min, max, stddev (ms) and the share within 15% into c[0..5]. */
void gs_render_latency_cells(char (*c)[GS_RENDER_CELL], size_t n, double mean, double min,
                             double max, double stddev, double stable) {
  gs_render_cellf(c[0], "%zu", n);
  gs_render_time(c[1], mean);
  gs_render_time(c[2], min);
  gs_render_time(c[3], max);
  gs_render_time(c[4], stddev);
  gs_render_pct(c[5], stable);
}
