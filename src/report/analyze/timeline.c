/* The timeline of a measurement from its trace file (report/trace_timeline.h):
 * finds the file the document names, reads the measurement's spans and
 * measures per rank the union of its leaf spans of each kind over the
 * window of the first traced run's recorded steps. */
#include "report/analyze/timeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/json.h"

typedef struct {
  double begin, end;
} interval;

typedef struct {
  interval *v;
  size_t n, cap;
} interval_list;

static int push(interval_list *l, double begin, double end) {
  if (end <= begin) return 1;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    interval *grown = realloc(l->v, cap * sizeof *grown);
    if (!grown) return 0;
    l->v = grown;
    l->cap = cap;
  }
  l->v[l->n++] = (interval){begin, end};
  return 1;
}

static int by_begin(const void *a, const void *b) {
  const interval *x = a, *y = b;
  return (x->begin > y->begin) - (x->begin < y->begin);
}

/* Merges the intervals into their disjoint union, sorted; returns the
 * seconds it covers. */
static double union_length(interval_list *l) {
  if (l->n == 0) return 0.0;
  qsort(l->v, l->n, sizeof *l->v, by_begin);
  size_t k = 0;
  for (size_t i = 1; i < l->n; i++) {
    if (l->v[i].begin > l->v[k].end) l->v[++k] = l->v[i];
    else if (l->v[i].end > l->v[k].end) l->v[k].end = l->v[i].end;
  }
  l->n = k + 1;
  double total = 0.0;
  for (size_t i = 0; i < l->n; i++) total += l->v[i].end - l->v[i].begin;
  return total;
}

/* Seconds covered by both of two merged unions. */
static double overlap_length(const interval_list *a, const interval_list *b) {
  double total = 0.0;
  size_t i = 0, j = 0;
  while (i < a->n && j < b->n) {
    double lo = fmax(a->v[i].begin, b->v[j].begin), hi = fmin(a->v[i].end, b->v[j].end);
    if (hi > lo) total += hi - lo;
    if (a->v[i].end < b->v[j].end) i++;
    else j++;
  }
  return total;
}

int gs_report_timeline_leaf(const gs_trace_lane *lane, size_t i) {
  // Spans are sorted by begin, the outer one first: a span holds others
  // exactly when the next one starts before it ends.
  return i + 1 >= lane->n || lane->spans[i + 1].begin >= lane->spans[i].end;
}

int gs_report_timeline_in_window(const gs_report_timeline *t, const gs_trace_span *s) {
  return s->run == t->run && s->step >= t->first_step && s->step <= t->last_step;
}

/* The trace file of a document at `doc_path` naming `file`: beside the
 * document when it is there, else as named (relative to where report runs). */
static void locate(const char *doc_path, const char *file, char *out, size_t size) {
  const char *slash = strrchr(doc_path, '/');
  if (file[0] != '/' && slash) {
    snprintf(out, size, "%.*s/%s", (int)(slash - doc_path), doc_path, file);
    if (access(out, R_OK) == 0) return;
  }
  snprintf(out, size, "%s", file);
}

/* The window: the first run with recorded steps, and those steps. */
static int find_window(gs_report_timeline *t) {
  t->run = INT32_MAX;
  for (int k = 0; k < t->view.n_ranks; k++)
    for (int l = 0; l < t->view.ranks[k].n_lanes; l++)
      for (size_t i = 0; i < t->view.ranks[k].lanes[l].n; i++) {
        const gs_trace_span *s = &t->view.ranks[k].lanes[l].spans[i];
        if (s->step >= 0 && s->run >= 0 && s->run < t->run) t->run = s->run;
      }
  if (t->run == INT32_MAX) return 0;
  t->first_step = INT32_MAX;
  t->last_step = -1;
  t->begin = INFINITY;
  t->end = -INFINITY;
  for (int k = 0; k < t->view.n_ranks; k++)
    for (int l = 0; l < t->view.ranks[k].n_lanes; l++)
      for (size_t i = 0; i < t->view.ranks[k].lanes[l].n; i++) {
        const gs_trace_span *s = &t->view.ranks[k].lanes[l].spans[i];
        if (s->run != t->run || s->step < 0) continue;
        if (s->step < t->first_step) t->first_step = s->step;
        if (s->step > t->last_step) t->last_step = s->step;
        if (s->begin < t->begin) t->begin = s->begin;
        if (s->end > t->end) t->end = s->end;
      }
  return t->end > t->begin;
}

/* The shares of one rank: unions of its busy lanes' leaves by kind. */
static gs_status measure_rank(const gs_report_timeline *t, const gs_trace_view_rank *vr,
                              gs_report_timeline_rank *out) {
  out->rank = vr->rank;
  out->device = vr->device;
  out->busy_lane_first = 0;
  for (int l = 1; l < vr->n_lanes && out->busy_lane_first == 0; l++)
    for (size_t i = 0; i < vr->lanes[l].n; i++)
      if (gs_report_timeline_in_window(t, &vr->lanes[l].spans[i])) {
        out->busy_lane_first = 1;
        break;
      }
  const int last = out->busy_lane_first == 0 ? 1 : vr->n_lanes;
  interval_list compute = {0}, comm = {0}, copy = {0}, wait = {0}, busy = {0};
  int ok = 1;
  for (int l = out->busy_lane_first; l < last && ok; l++) {
    const gs_trace_lane *lane = &vr->lanes[l];
    for (size_t i = 0; i < lane->n && ok; i++) {
      const gs_trace_span *s = &lane->spans[i];
      if (!gs_report_timeline_in_window(t, s) || !gs_report_timeline_leaf(lane, i)) continue;
      const double b = fmax(s->begin, t->begin), e = fmin(s->end, t->end);
      switch ((gs_trace_kind)s->kind) {
        case GS_TRACE_COMM: ok = push(&comm, b, e) && push(&busy, b, e); break;
        case GS_TRACE_COPY: ok = push(&copy, b, e) && push(&busy, b, e); break;
        case GS_TRACE_WAIT: ok = push(&wait, b, e); break;
        case GS_TRACE_HOST: break;
        default: ok = push(&compute, b, e) && push(&busy, b, e); break;
      }
    }
  }
  const double window = t->end - t->begin;
  if (ok) {
    out->compute = union_length(&compute) / window;
    out->comm = union_length(&comm) / window;
    out->comm_overlapped = overlap_length(&compute, &comm) / window;
    out->copy = union_length(&copy) / window;
    out->wait = union_length(&wait) / window;
    out->idle = 1.0 - union_length(&busy) / window;
  }
  free(compute.v);
  free(comm.v);
  free(copy.v);
  free(wait.v);
  free(busy.v);
  return ok ? GS_OK : gs_error(GS_ERR_NOMEM, "out of memory measuring a timeline");
}

gs_status gs_report_timeline_load(const gs_report *r, const gs_report_row *row,
                                  gs_report_timeline *out) {
  memset(out, 0, sizeof *out);
  const cJSON *trace = cJSON_GetObjectItemCaseSensitive(r->docs[row->file], "trace");
  const char *file = gs_json_string_member(trace, "file", NULL);
  if (!file) return GS_OK;
  out->present = 1;
  locate(r->files[row->file], file, out->file, sizeof out->file);
  gs_error_kept kept;
  gs_error_keep(&kept);
  gs_status st = gs_trace_read(out->file, (int)row->measurement, &out->view);
  if (st != GS_OK) snprintf(out->problem, sizeof out->problem, "%s", gs_last_error());
  gs_error_restore(&kept);
  if (st == GS_ERR_NOMEM) return gs_error(GS_ERR_NOMEM, "%s", out->problem);
  if (st != GS_OK) return GS_OK;
  if (!find_window(out)) {
    snprintf(out->problem, sizeof out->problem, "%s holds no recorded step of measurement %zu",
             out->file, row->measurement);
    return GS_OK;
  }
  out->ranks = calloc((size_t)out->view.n_ranks, sizeof *out->ranks);
  if (!out->ranks && out->view.n_ranks > 0)
    return gs_error(GS_ERR_NOMEM, "out of memory measuring a timeline");
  out->n_ranks = out->view.n_ranks;
  for (int k = 0; k < out->n_ranks; k++)
    GS_TRY(measure_rank(out, &out->view.ranks[k], &out->ranks[k]));
  return GS_OK;
}

void gs_report_timeline_free(gs_report_timeline *t) {
  gs_trace_view_free(&t->view);
  free(t->ranks);
  memset(t, 0, sizeof *t);
}
