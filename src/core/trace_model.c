/* The timeline recorder: kinds and colours, ranks and their lanes, the
 * host lane's span stack on each rank's thread, and the writer of the
 * Chrome trace event file (docs/timeline.md). The reader is trace_read.c. */
#include "core/trace_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/file.h"
#include "core/timer.h"
#include "gs_version.h"

/* A measurement's label, kept for the file's "otherData". */
typedef struct {
  int index;
  char label[GS_TEXT_LONG];
} trace_measurement;

struct gs_trace {
  char path[GS_TEXT_LONG];
  uint64_t steps;
  double origin;              /* gs_time_seconds() when created: ts 0 */
  char source[GS_TEXT_LONG];
  pthread_mutex_t lock;
  gs_trace_rank **ranks;
  size_t n_ranks, cap_ranks;
  trace_measurement *measurements;
  size_t n_measurements, cap_measurements;
};

static const char *const kind_names[GS_TRACE_KIND_COUNT] = {
    "run", "step", "compute", "communication", "wait", "host", "copy"};
/* Frames grey; compute blue, communication orange, waiting red, host
 * green, copies purple (docs/timeline.md). */
static const uint32_t kind_rgb[GS_TRACE_KIND_COUNT] = {0xb0b0b0, 0x808080, 0x4477aa, 0xee7733,
                                                       0xcc3311, 0x228833, 0xaa3377};

const char *gs_trace_kind_name(gs_trace_kind kind) {
  return (unsigned)kind < GS_TRACE_KIND_COUNT ? kind_names[kind] : "?";
}

int gs_trace_kind_parse(const char *name) {
  for (int k = 0; name && k < GS_TRACE_KIND_COUNT; k++)
    if (strcmp(name, kind_names[k]) == 0) return k;
  return -1;
}

uint32_t gs_trace_kind_rgb(gs_trace_kind kind) {
  return (unsigned)kind < GS_TRACE_KIND_COUNT ? kind_rgb[kind] : 0x000000;
}

gs_status gs_trace_new(const char *path, uint64_t steps, gs_trace **out) {
  *out = NULL;
  if (steps < 1) GS_BUG("trace with a step bound of 0");
  gs_trace *t = calloc(1, sizeof *t);
  if (!t) return gs_error(GS_ERR_NOMEM, "cannot allocate the trace recorder");
  snprintf(t->path, sizeof t->path, "%s", path);
  t->steps = steps;
  t->origin = gs_time_seconds();
  snprintf(t->source, sizeof t->source, "none");
  pthread_mutex_init(&t->lock, NULL);
  *out = t;
  return GS_OK;
}

static void rank_free(gs_trace_rank *r) {
  if (!r) return;
  for (int l = 0; l < r->n_lanes; l++) free(r->lanes[l].spans);
  free(r);
}

void gs_trace_free(gs_trace *t) {
  if (!t) return;
  for (size_t i = 0; i < t->n_ranks; i++) rank_free(t->ranks[i]);
  free(t->ranks);
  free(t->measurements);
  pthread_mutex_destroy(&t->lock);
  free(t);
}

const char *gs_trace_path(const gs_trace *t) { return t->path; }
uint64_t gs_trace_steps(const gs_trace *t) { return t->steps; }
const char *gs_trace_source(const gs_trace *t) { return t->source; }

void gs_trace_set_source(gs_trace *t, const char *source) {
  pthread_mutex_lock(&t->lock);
  snprintf(t->source, sizeof t->source, "%s", source);
  pthread_mutex_unlock(&t->lock);
}

gs_status gs_trace_measurement_begin(gs_trace *t, int index, const char *label) {
  pthread_mutex_lock(&t->lock);
  size_t kept = 0;
  for (size_t i = 0; i < t->n_ranks; i++) {
    if (t->ranks[i]->measurement >= index)
      rank_free(t->ranks[i]);
    else
      t->ranks[kept++] = t->ranks[i];
  }
  t->n_ranks = kept;
  kept = 0;
  for (size_t i = 0; i < t->n_measurements; i++)
    if (t->measurements[i].index < index) t->measurements[kept++] = t->measurements[i];
  t->n_measurements = kept;
  gs_status st = GS_OK;
  if (t->n_measurements == t->cap_measurements) {
    size_t cap = t->cap_measurements ? 2 * t->cap_measurements : 8;
    trace_measurement *grown = realloc(t->measurements, cap * sizeof *grown);
    if (grown) {
      t->measurements = grown;
      t->cap_measurements = cap;
    } else {
      st = gs_error(GS_ERR_NOMEM, "cannot grow the trace's measurement list");
    }
  }
  if (st == GS_OK) {
    trace_measurement *m = &t->measurements[t->n_measurements++];
    m->index = index;
    snprintf(m->label, sizeof m->label, "%s", label ? label : "");
  }
  pthread_mutex_unlock(&t->lock);
  return st;
}

gs_trace_rank *gs_trace_rank_add(gs_trace *t, int measurement, int rank, int device) {
  gs_trace_rank *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->trace = t;
  r->rank = rank;
  r->device = device;
  r->run = r->step = -1;
  snprintf(r->lanes[GS_TRACE_HOST_LANE].name, sizeof r->lanes[0].name, "host");
  r->n_lanes = 1;
  pthread_mutex_lock(&t->lock);
  r->measurement = measurement;
  if (t->n_ranks == t->cap_ranks) {
    size_t cap = t->cap_ranks ? 2 * t->cap_ranks : 16;
    gs_trace_rank **grown = realloc(t->ranks, cap * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&t->lock);
      free(r);
      return NULL;
    }
    t->ranks = grown;
    t->cap_ranks = cap;
  }
  t->ranks[t->n_ranks++] = r;
  pthread_mutex_unlock(&t->lock);
  return r;
}

static _Thread_local gs_trace_rank *bound_rank;

void gs_trace_bind(gs_trace_rank *r) { bound_rank = r; }
gs_trace_rank *gs_trace_bound(void) { return bound_rank; }

void gs_trace_rank_step_open(gs_trace_rank *r, int64_t run, int64_t step) {
  r->run = (int32_t)run;
  r->step = (int32_t)step;
  r->recording = step >= 0 && (uint64_t)step < r->trace->steps;
}

void gs_trace_rank_step_close(gs_trace_rank *r) {
  r->recording = 0;
  r->step = -1;
}

gs_trace_open *gs_trace_rank_begin(gs_trace_rank *r, gs_trace_kind kind, const char *name,
                                   const char *text, int64_t index) {
  if (r->depth >= GS_TRACE_DEPTH) return NULL;
  gs_trace_open *o = &r->open[r->depth++];
  o->recorded = kind == GS_TRACE_RUN || r->recording;
  o->slot = -1;
  // A span left out costs no clock reading and no copy.
  if (!o->recorded) return o;
  o->begin = gs_time_seconds();
  o->name = name;
  if (!name) snprintf(o->text, sizeof o->text, "%s", text ? text : "");
  o->index = index;
  o->kind = (uint8_t)kind;
  return o;
}

gs_trace_open *gs_trace_rank_end(gs_trace_rank *r) {
  if (r->depth <= 0) return NULL;
  gs_trace_open *o = &r->open[--r->depth];
  if (!o->recorded) return o;
  gs_trace_span s = {.begin = o->begin, .end = gs_time_seconds(), .index = o->index,
                     .run = r->run, .step = o->kind == GS_TRACE_RUN ? -1 : r->step,
                     .kind = o->kind};
  snprintf(s.name, sizeof s.name, "%s", o->name ? o->name : o->text);
  (void)gs_trace_rank_add_span(r, GS_TRACE_HOST_LANE, &s);
  return o;
}

int gs_trace_rank_lane(gs_trace_rank *r, const char *name) {
  for (int l = 0; l < r->n_lanes; l++)
    if (strcmp(r->lanes[l].name, name) == 0) return l;
  if (r->n_lanes == GS_TRACE_LANES) return -1;
  snprintf(r->lanes[r->n_lanes].name, sizeof r->lanes[0].name, "%s", name);
  return r->n_lanes++;
}

gs_status gs_trace_lane_push(gs_trace_lane *lane, const gs_trace_span *span) {
  if (lane->n == lane->cap) {
    size_t cap = lane->cap ? 2 * lane->cap : 64;
    gs_trace_span *grown = realloc(lane->spans, cap * sizeof *grown);
    if (!grown) return gs_error(GS_ERR_NOMEM, "cannot grow a trace lane to %zu spans", cap);
    lane->spans = grown;
    lane->cap = cap;
  }
  lane->spans[lane->n++] = *span;
  return GS_OK;
}

gs_status gs_trace_rank_add_span(gs_trace_rank *r, int lane, const gs_trace_span *span) {
  if (lane < 0 || lane >= r->n_lanes) return GS_OK;
  return gs_trace_lane_push(&r->lanes[lane], span);
}

void gs_trace_lock(gs_trace *t) { pthread_mutex_lock(&t->lock); }
void gs_trace_unlock(gs_trace *t) { pthread_mutex_unlock(&t->lock); }

/* ---- the writer --------------------------------------------------------- */

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

/* Outer spans first: by begin, then the longer one. */
static int span_order(const void *a, const void *b) {
  const gs_trace_span *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end > y->end ? -1 : 1;
  return 0;
}

/* The Chrome trace's process id of a rank: one process per rank of each
 * measurement, numbered so that they sort by measurement, then rank. */
static int process_id(const gs_trace_rank *r) { return 1 + r->measurement * 1000 + r->rank; }

static const char *measurement_label(const gs_trace *t, int index) {
  for (size_t i = 0; i < t->n_measurements; i++)
    if (t->measurements[i].index == index) return t->measurements[i].label;
  return "";
}

static void write_rank(FILE *f, const gs_trace *t, gs_trace_rank *r, int *first) {
  const int pid = process_id(r);
  char name[GS_TEXT_LONG * 2];
  if (r->device >= 0)
    snprintf(name, sizeof name, "m%d %s: rank %d (GPU %d)", r->measurement,
             measurement_label(t, r->measurement), r->rank, r->device);
  else
    snprintf(name, sizeof name, "m%d %s: rank %d (CPU)", r->measurement,
             measurement_label(t, r->measurement), r->rank);
  fprintf(f, "%s\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":",
          *first ? "" : ",", pid);
  json_string(f, name);
  fprintf(f, "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,"
             "\"args\":{\"sort_index\":%d}}", pid, pid);
  *first = 0;
  for (int l = 0; l < r->n_lanes; l++) {
    gs_trace_lane *lane = &r->lanes[l];
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
            pid, l);
    json_string(f, lane->name);
    fprintf(f, "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%d,"
               "\"args\":{\"sort_index\":%d}}", pid, l, l);
    if (lane->n) qsort(lane->spans, lane->n, sizeof *lane->spans, span_order);
    for (size_t i = 0; i < lane->n; i++) {
      const gs_trace_span *s = &lane->spans[i];
      double dur = s->end > s->begin ? s->end - s->begin : 0.0;
      fputs(",\n{\"ph\":\"X\",\"name\":", f);
      json_string(f, s->name);
      fprintf(f, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                 "\"args\":{\"measurement\":%d,\"rank\":%d,\"device\":%d,\"run\":%d,\"step\":%d",
              gs_trace_kind_name((gs_trace_kind)s->kind), pid, l, 1e6 * (s->begin - t->origin),
              1e6 * dur, r->measurement, r->rank, r->device, s->run, s->step);
      if (s->index >= 0) fprintf(f, ",\"index\":%lld", (long long)s->index);
      fputs("}}", f);
    }
  }
}

gs_status gs_trace_write(const gs_trace *t) {
  gs_file_out out;
  GS_TRY(gs_file_out_open(&out, t->path, "the trace"));
  FILE *f = out.f;
  gs_trace *w = (gs_trace *)t;  /* sorting spans in place changes no meaning */
  pthread_mutex_lock(&w->lock);
  fputs("{\"traceEvents\":[", f);
  int first = 1;
  for (size_t i = 0; i < t->n_ranks; i++) write_rank(f, t, t->ranks[i], &first);
  fprintf(f, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"schema\":\"gpuscale/trace/v1\","
             "\"tool\":\"gpuscale %s\",\"clock\":\"monotonic, microseconds since the trace "
             "started\",\"steps_per_run\":%llu,\"device_source\":",
          GS_VERSION_STRING, (unsigned long long)t->steps);
  json_string(f, t->source);
  fputs(",\"measurements\":[", f);
  for (size_t i = 0; i < t->n_measurements; i++) {
    fprintf(f, "%s{\"index\":%d,\"label\":", i ? "," : "", t->measurements[i].index);
    json_string(f, t->measurements[i].label);
    fputc('}', f);
  }
  fputs("]}}\n", f);
  pthread_mutex_unlock(&w->lock);
  return gs_file_out_finish(&out, ferror(f) ? GS_ERR_IO : GS_OK);
}
