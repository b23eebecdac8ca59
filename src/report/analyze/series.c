/* The series of a report: the one series identity (workload, backend,
 * scaling, canonical options, label, split policy), a series' name and its
 * title (what tells it from the other series of the report), the split
 * sibling a series is compared with, and the report-wide counts over rows. */
#include "report/analyze/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* See report.h. */
const char *gs_report_file_name(const gs_report *r, size_t file) {
  const char *p = r->files[file];
  const char *slash = strrchr(p, '/');
  return slash ? slash + 1 : p;
}

/* See report.h. */
void gs_report_series_name(const gs_report_series *s, char *out, size_t size) {
  gs_scaling_series_name(s->workload, s->label, s->split, out, size);
}

static int same_text(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

/* See report.h. */
int gs_report_series_same(const gs_report_series *a, const gs_report_series *b, int ignore_split) {
  return same_text(a->workload, b->workload) && same_text(a->backend, b->backend) &&
         same_text(a->scaling, b->scaling) && same_text(a->options, b->options) &&
         same_text(a->label, b->label) && (ignore_split || same_text(a->split, b->split));
}

/* ---- titles: what tells a series from the others ------------------------- */

/* A growing title; silently cut at its size. */
static void title_add(char *title, size_t size, int *parts, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void title_add(char *title, size_t size, int *parts, const char *fmt, ...) {
  size_t len = strlen(title);
  if (len + 2 >= size) return;
  snprintf(title + len, size - len, "%s", (*parts)++ ? ", " : " (");
  len = strlen(title);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(title + len, size - len, fmt, ap);
  va_end(ap);
}

/* 1 when `o` differs from `s` only in its workload options. */
static int only_options_differ(const gs_report_series *s, const gs_report_series *o) {
  return o != s && strcmp(o->workload, s->workload) == 0 && strcmp(o->backend, s->backend) == 0 &&
         strcmp(o->scaling, s->scaling) == 0 && strcmp(o->label, s->label) == 0 &&
         strcmp(o->split, s->split) == 0 && strcmp(o->options, s->options) != 0;
}

/* Adds "key=value" for each top-level workload option of `s` whose value
 * differs in (or is missing from) another series that differs from `s`
 * only in its options: what the rest of the title cannot tell apart. */
static void title_add_options(const gs_report *r, const gs_report_series *s, char *title,
                              size_t size, int *parts) {
  cJSON *mine = cJSON_Parse(s->options);
  if (!cJSON_IsObject(mine)) {
    cJSON_Delete(mine);
    return;
  }
  for (const cJSON *opt = mine->child; opt; opt = opt->next) {
    int differs = 0;
    for (size_t i = 0; i < r->n_series && !differs; i++) {
      const gs_report_series *o = &r->series[i];
      if (!only_options_differ(s, o)) continue;
      cJSON *theirs = cJSON_Parse(o->options);
      differs = !cJSON_Compare(opt, cJSON_GetObjectItemCaseSensitive(theirs, opt->string), 1);
      cJSON_Delete(theirs);
    }
    if (!differs) continue;
    char *value = cJSON_PrintUnformatted(opt);
    if (value && value[0] == '"') {  // a string reads better without its quotes
      size_t n = strlen(value);
      memmove(value, value + 1, n);
      if (n >= 2) value[n - 2] = '\0';
    }
    title_add(title, size, parts, "%s=%.48s", opt->string, value ? value : "?");
    cJSON_free(value);
  }
  cJSON_Delete(mine);
}

/* See internal.h. */
void gs_report_set_titles(gs_report *r) {
  for (size_t i = 0; i < r->n_series; i++) {
    gs_report_series *s = &r->series[i];
    int backend = 0, scaling = 0, options = 0, parts = 0;
    for (size_t j = 0; j < r->n_series; j++) {
      const gs_report_series *o = &r->series[j];
      if (j == i || strcmp(o->workload, s->workload) != 0) continue;
      backend |= strcmp(o->backend, s->backend) != 0;
      scaling |= strcmp(o->scaling, s->scaling) != 0;
      options |= only_options_differ(s, o);
    }
    snprintf(s->title, sizeof s->title, "%s", s->workload);
    if (backend) title_add(s->title, sizeof s->title, &parts, "%s", s->backend[0] ? s->backend : "-");
    if (scaling)
      title_add(s->title, sizeof s->title, &parts, "%s",
                strcmp(s->scaling, "none") == 0 ? "single run"
                : s->scaling[0]                 ? s->scaling
                                                : "scaling not recorded");
    if (scaling && (strcmp(s->scaling, "strong") == 0 || strcmp(s->scaling, "weak") == 0)) {
      size_t len = strlen(s->title);
      snprintf(s->title + len, sizeof s->title - len, " scaling");
    }
    if (options) title_add_options(r, s, s->title, sizeof s->title, &parts);
    if (s->label[0]) title_add(s->title, sizeof s->title, &parts, "%s", s->label);
    if (s->split[0]) title_add(s->title, sizeof s->title, &parts, "split %s", s->split);
    if (parts) {
      size_t len = strlen(s->title);
      if (len + 1 < sizeof s->title) snprintf(s->title + len, sizeof s->title - len, ")");
    }
  }
  // Titles cut short (or options that differ only deeper down) can still
  // meet: the later series gets its number.
  for (size_t i = 0; i < r->n_series; i++)
    for (size_t j = 0; j < i; j++)
      if (strcmp(r->series[i].title, r->series[j].title) == 0) {
        size_t len = strlen(r->series[i].title);
        if (len + 12 >= sizeof r->series[i].title) len = sizeof r->series[i].title - 13;
        snprintf(r->series[i].title + len, sizeof r->series[i].title - len, " #%zu", i + 1);
        break;
      }
}

/* See internal.h. */
const gs_report_series *gs_report_split_sibling(const gs_report *r, const gs_report_series *s,
                                             const char *split) {
  for (size_t i = 0; i < r->n_series; i++) {
    const gs_report_series *o = &r->series[i];
    if (o != s && strcmp(o->split, split) == 0 && gs_report_series_same(o, s, 1)) return o;
  }
  return NULL;
}

/* See report.h. */
size_t gs_report_busbw_mismatches(const gs_report *r, const gs_report_row **first) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_series; i++)
    for (size_t j = 0; j < r->series[i].n_rows; j++)
      if (r->series[i].rows[j].collective.busbw_mismatch && n++ == 0 && first)
        *first = &r->series[i].rows[j];
  return n;
}
