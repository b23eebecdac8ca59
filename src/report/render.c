/* Renderers of a gs_report: aligned text for a terminal and GitHub Markdown
 * (one table builder serves both), tidy CSV of the raw samples, and JSON
 * (through gs_report_to_json). Columns are described in docs/report.md. */
#include "report/render.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const gs_report_format_choices[] = {"text", "markdown", "csv", "json", NULL};

#define CELL 64
#define MAX_COLS 16

/* A table of text cells; numbers are right-aligned in text mode. */
typedef struct {
  size_t ncols, nrows, cap;
  const char *head[MAX_COLS];
  int left[MAX_COLS];  // 1: left-aligned column
  char (*cells)[MAX_COLS][CELL];
} table;

static void table_init(table *t, size_t ncols, const char *const *head, const int *left) {
  memset(t, 0, sizeof *t);
  t->ncols = ncols;
  for (size_t i = 0; i < ncols; i++) {
    t->head[i] = head[i];
    t->left[i] = left ? left[i] : 0;
  }
}

/* Adds a row; returns its cells or NULL when out of memory. */
static char (*table_row(table *t))[CELL] {
  if (t->nrows == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 8;
    void *grown = realloc(t->cells, cap * sizeof *t->cells);
    if (!grown) return NULL;
    t->cells = grown;
    t->cap = cap;
  }
  char(*row)[CELL] = t->cells[t->nrows++];
  for (size_t i = 0; i < MAX_COLS; i++) row[i][0] = '\0';
  return row;
}

static void cellf(char *cell, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cellf(char *cell, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cell, CELL, fmt, ap);
  va_end(ap);
}

static void table_print(FILE *out, const table *t, int markdown, const char *indent) {
  if (markdown) {
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
}

static void table_free(table *t) { free(t->cells); }

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

static const char *scaling_text(const char *scaling) {
  if (strcmp(scaling, "strong") == 0)
    return "strong scaling (fixed total work; speedup = T(1) / T(N))";
  if (strcmp(scaling, "weak") == 0)
    return "weak scaling (fixed work per rank; speedup is the scaled speedup)";
  if (strcmp(scaling, "none") == 0) return "no scaling sweep (single run)";
  return "scaling not recorded";
}

/* ---- text and Markdown ---------------------------------------------------------- */

static gs_status series_tables(FILE *out, const gs_report *r, const gs_report_series *s, int md) {
  const char *unit = s->item_unit ? s->item_unit : "items";
  if (md) {
    fprintf(out, "## %s: backend %s, %s\n\n", s->workload, s->backend[0] ? s->backend : "-",
            scaling_text(s->scaling));
    fprintf(out, "Workload options: `%s`\n\n", s->options);
  } else {
    fprintf(out, "%s: backend %s, %s\n", s->workload, s->backend[0] ? s->backend : "-",
            scaling_text(s->scaling));
    fprintf(out, "  options %s\n", s->options);
    fprintf(out, "  step time = slowest rank per iteration, in ms; throughput in %s/s\n\n", unit);
  }

  static const char *const head[] = {"ranks",   "file",    "status",     "verify",
                                     "n",       "mean ms", "median ms",  "cv",
                                     "throughput", "ideal", "speedup",   "efficiency",
                                     "karp-flatt", "warnings"};
  static const int left[] = {0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  table t;
  table_init(&t, 14, head, left);
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    char(*c)[CELL] = table_row(&t);
    if (!c) {
      table_free(&t);
      return GS_ERR_NOMEM;
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
      unsigned w = row->step.warnings;
      snprintf(warn, sizeof warn, "%s%s%s%s", (w & GS_STATS_WARN_FEW_SAMPLES) ? "few-samples " : "",
               (w & GS_STATS_WARN_NOISY) ? "noisy " : "", (w & GS_STATS_WARN_SHORT) ? "short " : "",
               (w & GS_STATS_WARN_OUTLIERS) ? "outliers " : "");
      size_t len = strlen(warn);
      if (len) warn[len - 1] = '\0';
    }
    cellf(c[13], "%s", warn[0] ? warn : "-");
  }
  table_print(out, &t, md, "  ");
  table_free(&t);
  fputs("\n", out);

  static const char *const rhead[] = {"rank",      "status",  "clock",     "n",
                                      "mean ms",   "min ms",  "max ms",    "stddev ms",
                                      "within 15%", "throughput", "deviation", "mark",
                                      "cold",      "cold flag"};
  static const int rleft[] = {0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1};
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    if (row->world_size < 2) continue;
    char straggler[64] = "none";
    if (row->straggler >= 0) snprintf(straggler, sizeof straggler, "rank %d", row->straggler);
    char ratio[CELL], cv[CELL], med[CELL];
    fmt_fixed(ratio, row->spread_ratio, 2, "x");
    fmt_pct(cv, row->spread_cv);
    fmt_rate(med, row->rank_median);
    fprintf(out,
            "%s%d ranks (%s, measurement %zu): ranks max/min %s, cv %s, median %s %s/s, "
            "straggler %s%s\n\n",
            md ? "### " : "  ", row->world_size, gs_report_file_name(r, row->file),
            row->measurement, ratio, cv, med, unit, straggler, md ? "" : ":");
    table_init(&t, 14, rhead, rleft);
    for (size_t k = 0; k < row->n_ranks; k++) {
      const gs_report_rank *rk = &row->ranks[k];
      char(*c)[CELL] = table_row(&t);
      if (!c) {
        table_free(&t);
        return GS_ERR_NOMEM;
      }
      cellf(c[0], "%d", rk->rank);
      cellf(c[1], "%s", rk->status);
      cellf(c[2], "%s", rk->clock);
      cellf(c[3], "%zu", rk->n);
      fmt_ms(c[4], rk->mean);
      fmt_ms(c[5], rk->min);
      fmt_ms(c[6], rk->max);
      fmt_ms(c[7], rk->stddev);
      fmt_pct(c[8], rk->stable_share);
      fmt_rate(c[9], rk->throughput);
      fmt_pct(c[10], rk->deviation);
      cellf(c[11], "%s%s", gs_rank_mark_name(rk->mark),
            (int)k == row->straggler ? " (straggler)" : "");
      fmt_fixed(c[12], rk->cold_ratio, 2, "x");
      cellf(c[13], "%s", rk->cold_flag ? "slow start" : "-");
    }
    table_print(out, &t, md, "    ");
    table_free(&t);
    fputs("\n", out);
  }

  fprintf(out, md ? "**Recommendation**\n\n" : "  recommendation:\n");
  for (size_t i = 0; i < s->n_advice; i++) fprintf(out, md ? "- %s\n" : "  - %s\n", s->advice[i]);
  fputs("\n", out);
  return GS_OK;
}

static gs_status render_tables(FILE *out, const gs_report *r, int md) {
  if (md) {
    fputs("# gpuscale report\n\nFiles:", out);
    for (size_t i = 0; i < r->n_files; i++) fprintf(out, " `%s`", r->files[i]);
    fprintf(out, "\n\nRank marks: good <= %g%% < moderate <= %g%% < critical (deviation from "
                 "the median rank throughput).\n\n",
            100.0 * r->thresholds.moderate, 100.0 * r->thresholds.critical);
  } else {
    fprintf(out, "gpuscale report: %zu file%s, %zu series; rank marks: good <= %g%% < moderate "
                 "<= %g%% < critical\n\n",
            r->n_files, r->n_files == 1 ? "" : "s", r->n_series, 100.0 * r->thresholds.moderate,
            100.0 * r->thresholds.critical);
  }
  if (r->n_series == 0) fputs(md ? "No measurements.\n" : "  no measurements\n", out);
  for (size_t i = 0; i < r->n_series; i++) {
    gs_status st = series_tables(out, r, &r->series[i], md);
    if (st != GS_OK) return st;
  }
  return GS_OK;
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
 * that reads back exactly; "" for null or a non-finite value. */
static void csv_sample(const cJSON *x, char *buf, size_t size) {
  buf[0] = '\0';
  if (cJSON_IsNumber(x) && isfinite(x->valuedouble)) {
    for (int digits = 15; digits <= 17; digits++) {
      snprintf(buf, size, "%.*g", digits, x->valuedouble);
      if (strtod(buf, NULL) == x->valuedouble) break;
    }
  }
}

/* The samples a rank's CSV rows use: device clock when recorded, else wall. */
static const cJSON *rank_samples(const cJSON *rk) {
  const cJSON *dev = cJSON_GetObjectItemCaseSensitive(rk, "device_seconds");
  const cJSON *use = cJSON_IsArray(dev) ? dev : cJSON_GetObjectItemCaseSensitive(rk, "wall_seconds");
  return cJSON_IsArray(use) ? use : NULL;
}

static void csv_prefix(FILE *out, const gs_report *r, size_t fi, const cJSON *m, size_t run,
                       size_t iter) {
  const cJSON *ws = cJSON_GetObjectItemCaseSensitive(m, "world_size");
  const cJSON *wl = cJSON_GetObjectItemCaseSensitive(m, "workload");
  const cJSON *be = cJSON_GetObjectItemCaseSensitive(m, "backend");
  const cJSON *sc = cJSON_GetObjectItemCaseSensitive(m, "scaling");
  csv_field(out, r->files[fi]);
  fputc(',', out);
  csv_field(out, cJSON_IsString(wl) ? wl->valuestring : "");
  fputc(',', out);
  csv_field(out, cJSON_IsString(be) ? be->valuestring : "");
  fputc(',', out);
  csv_field(out, cJSON_IsString(sc) ? sc->valuestring : "");
  fprintf(out, ",%.0f,%zu,%zu,", cJSON_IsNumber(ws) ? ws->valuedouble : 0.0, run, iter);
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
        for (size_t iter = 0;; iter++) {
          int any = step != NULL;
          for (k = 0; k < nranks; k++) any |= cur[k] != NULL;
          if (!any) break;
          if (step) {
            csv_sample(step, buf, sizeof buf);
            csv_prefix(out, r, fi, m, ri, iter);
            fprintf(out, "step,%s\n", buf);
            step = step->next;
          }
          k = 0;
          for (const cJSON *rk = ranks ? ranks->child : NULL; rk; rk = rk->next, k++) {
            if (!cur[k]) continue;
            const cJSON *num = cJSON_GetObjectItemCaseSensitive(rk, "rank");
            csv_sample(cur[k], buf, sizeof buf);
            csv_prefix(out, r, fi, m, ri, iter);
            fprintf(out, "%.0f,%s\n", cJSON_IsNumber(num) ? num->valuedouble : -1.0, buf);
            cur[k] = cur[k]->next;
          }
        }
        free(cur);
      }
    }
  }
  return GS_OK;
}

/* See render.h. */
gs_status gs_report_render(FILE *out, const gs_report *r, gs_report_format format) {
  gs_status st = GS_OK;
  switch (format) {
    case GS_REPORT_TEXT: st = render_tables(out, r, 0); break;
    case GS_REPORT_MARKDOWN: st = render_tables(out, r, 1); break;
    case GS_REPORT_CSV: st = render_csv(out, r); break;
    case GS_REPORT_JSON: {
      cJSON *doc = gs_report_to_json(r);
      char *text = doc ? cJSON_Print(doc) : NULL;
      cJSON_Delete(doc);
      if (!text) return GS_ERR_NOMEM;
      fputs(text, out);
      fputs("\n", out);
      cJSON_free(text);
      break;
    }
  }
  if (st != GS_OK) return st;
  return ferror(out) ? GS_ERR_IO : GS_OK;
}
