/* The streaming reader of PyTorch profiler (Kineto) traces
 * (core/trace_events.h, docs/traces.md): the top-level object's
 * traceEvents are read one event at a time through core/json_stream;
 * the GPU events (kernel, gpu_memcpy, gpu_memset), the CUDA runtime and
 * driver calls with a correlation id and the ProfilerStep marks are kept
 * as 40-byte records, everything else (CPU ops, Python functions, flows,
 * metadata) is counted and dropped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"
#include "core/json_stream.h"
#include "core/trace_events.h"

/* 1: the key just read is the literal `lit`. Its length is known, so the
 * compare is inlined: this runs for every member of millions of events. */
#define KEY_IS(s, lit) ((s)->text_len == sizeof(lit) - 1 && memcmp((s)->text, lit, sizeof(lit) - 1) == 0)

/* What one event said, before it is kept or dropped. */
typedef struct {
  char ph[8], cat[64];
  char *name;               /* GS_JSON_STREAM_TOKEN + 1 bytes, reused */
  int has_name, has_ts, has_dur;
  double ts, dur, corr, stream, pid, tid;
} event_fields;

static gs_status read_string(gs_json_stream *s, const char *what, char *dst, size_t cap) {
  gs_json_token t;
  gs_status st = gs_json_stream_next(s, &t);
  if (st != GS_OK) return st;
  if (t != GS_JS_STRING)
    return gs_error(GS_ERR_FORMAT, "%s: byte %llu: %s: a string expected", s->path,
                    (unsigned long long)s->offset, what);
  size_t n = s->text_len < cap ? s->text_len : cap - 1;
  memcpy(dst, s->text, n);
  dst[n] = '\0';
  return GS_OK;
}

static gs_status read_args(gs_json_stream *s, event_fields *e) {
  gs_json_token t;
  gs_status st = gs_json_stream_next(s, &t);
  if (st == GS_OK && t != GS_JS_OBJECT) return gs_json_stream_skip(s, t);
  while (st == GS_OK) {
    st = gs_json_stream_next(s, &t);
    if (st != GS_OK || t == GS_JS_OBJECT_END) break;
    if (KEY_IS(s, "correlation")) {
      st = gs_json_stream_number(s, "args.correlation", &e->corr);
    } else if (KEY_IS(s, "stream")) {
      st = gs_json_stream_number(s, "args.stream", &e->stream);
    } else {
      st = gs_json_stream_next(s, &t);
      if (st == GS_OK) st = gs_json_stream_skip(s, t);
    }
  }
  return st;
}

/* The members of one event object (its '{' already read). */
static gs_status read_event(gs_json_stream *s, event_fields *e) {
  e->ph[0] = e->cat[0] = '\0';
  e->has_name = e->has_ts = e->has_dur = 0;
  e->corr = e->stream = -1;
  e->pid = e->tid = 0;
  gs_json_token t;
  for (;;) {
    gs_status st = gs_json_stream_next(s, &t);
    if (st != GS_OK) return st;
    if (t == GS_JS_OBJECT_END) return GS_OK;
    const char *k = s->text;
    if (KEY_IS(s, "ph")) {
      st = read_string(s, "ph", e->ph, sizeof e->ph);
    } else if (KEY_IS(s, "cat")) {
      st = read_string(s, "cat", e->cat, sizeof e->cat);
    } else if (KEY_IS(s, "name")) {
      st = read_string(s, "name", e->name, GS_JSON_STREAM_TOKEN + 1);
      e->has_name = 1;
    } else if (KEY_IS(s, "ts")) {
      st = gs_json_stream_number(s, "ts", &e->ts);
      e->has_ts = 1;
    } else if (KEY_IS(s, "dur")) {
      st = gs_json_stream_number(s, "dur", &e->dur);
      e->has_dur = 1;
    } else if (KEY_IS(s, "args")) {
      st = read_args(s, e);
    } else if (KEY_IS(s, "tid") || KEY_IS(s, "pid")) {
      // A host thread's ops nest (self times); a string id names a lane, not a thread.
      double *id = k[0] == 't' ? &e->tid : &e->pid;
      st = gs_json_stream_next(s, &t);
      if (st == GS_OK && t == GS_JS_NUMBER) *id = (double)strtoll(s->text, NULL, 10);
      else if (st == GS_OK) st = gs_json_stream_skip(s, t);
    } else {
      st = gs_json_stream_next(s, &t);
      if (st == GS_OK) st = gs_json_stream_skip(s, t);
    }
    if (st != GS_OK) return st;
  }
}

static int cat_is(const char *cat, const char *a, const char *b) {
  return strcmp(cat, a) == 0 || strcmp(cat, b) == 0;
}

/* The kind of a complete event by its category and name; -1 a host event
 * that is counted, not kept; -2 the profiler's own span ("Trace"). */
static int kind_of(const event_fields *e, int64_t corr) {
  const char *c = e->cat;
  switch (c[0]) {
    case 'k': case 'K':
      if (cat_is(c, "kernel", "Kernel")) return GS_TEV_KERNEL;
      break;
    case 'g': case 'M':
      if (cat_is(c, "gpu_memcpy", "Memcpy")) return GS_TEV_MEMCPY;
      if (cat_is(c, "gpu_memset", "Memset")) return GS_TEV_MEMSET;
      break;
    case 'T':
      if (strcmp(c, "Trace") == 0) return -2;
      break;
    default:
      break;
  }
  if (strstr(e->name, "ProfilerStep")) return GS_TEV_STEP;
  if ((c[0] == 'c' || c[0] == 'R' || c[0] == 'D') &&
      (cat_is(c, "cuda_runtime", "Runtime") || cat_is(c, "cuda_driver", "Driver")))
    return corr >= 0 ? GS_TEV_RUNTIME : -1;
  return -1;  // cpu_op, user_annotation, python_function, gpu_user_annotation ...
}

/* Keeps or counts the event just read. */
static gs_status keep_event(gs_json_stream *s, const event_fields *e, gs_trace_events *out,
                            uint64_t at) {
  out->n_events++;
  if (e->ph[0] != 'X' || e->ph[1] != '\0') return GS_OK;
  if (!e->has_ts || !e->has_dur || !e->has_name || e->dur < 0)
    return gs_error(GS_ERR_FORMAT, "%s: byte %llu: a complete event (ph X) without name, ts or "
                    "a non-negative dur", s->path, (unsigned long long)at);
  gs_tev ev = {.ts = e->ts, .dur = e->dur, .corr = e->corr >= 0 ? (int64_t)e->corr : -1,
               .stream = e->stream >= 0 ? (int32_t)e->stream : -1, .step = -1};
  int kind = kind_of(e, ev.corr);
  if (kind == -2) return GS_OK;
  if (kind < 0) {
    out->n_cpu_ops++;
    if (e->cat[0] == 'c' && strcmp(e->cat, "cpu_op") == 0)
      return gs_trace_events_cpu_op(out, e->name, e->ts, e->dur, e->pid, e->tid);
    return GS_OK;
  }
  ev.kind = (uint8_t)kind;
  gs_status st = gs_trace_events_intern(out, e->name, &ev.name);
  if (st != GS_OK) return st;
  ev.cls = out->name_cls[ev.name];
  return gs_trace_events_push(out, &ev);
}

static gs_status read_events(gs_json_stream *s, event_fields *e, gs_trace_events *out) {
  gs_json_token t;
  gs_status st = gs_json_stream_next(s, &t);
  if (st == GS_OK && t != GS_JS_ARRAY)
    return gs_error(GS_ERR_FORMAT, "%s: byte %llu: traceEvents: an array expected", s->path,
                    (unsigned long long)s->offset);
  while (st == GS_OK) {
    st = gs_json_stream_next(s, &t);
    if (st != GS_OK || t == GS_JS_ARRAY_END) break;
    if (t != GS_JS_OBJECT)
      return gs_error(GS_ERR_FORMAT, "%s: byte %llu: traceEvents: an event (object) expected",
                      s->path, (unsigned long long)s->offset);
    uint64_t at = s->offset;
    st = read_event(s, e);
    if (st == GS_OK) st = keep_event(s, e, out, at);
  }
  return st;
}

/* distributedInfo's rank and world_size; otherData's schema. */
static gs_status read_small_object(gs_json_stream *s, gs_trace_events *out, int *gpuscale) {
  gs_json_token t;
  gs_status st = gs_json_stream_next(s, &t);
  if (st != GS_OK || t != GS_JS_OBJECT) return st == GS_OK ? gs_json_stream_skip(s, t) : st;
  while (st == GS_OK) {
    st = gs_json_stream_next(s, &t);
    if (st != GS_OK || t == GS_JS_OBJECT_END) break;
    double v;
    if (strcmp(s->text, "rank") == 0 || strcmp(s->text, "world_size") == 0) {
      int is_rank = s->text[0] == 'r';
      st = gs_json_stream_number(s, is_rank ? "distributedInfo.rank" : "distributedInfo.world_size",
                                 &v);
      if (st == GS_OK && (v < 0 || v > GS_MAX_RANKS || v != floor(v)))
        st = gs_error(GS_ERR_FORMAT, "%s: byte %llu: distributedInfo: a rank or world size out "
                      "of range", s->path, (unsigned long long)s->offset);
      if (st == GS_OK && is_rank) out->rank = (int)v;
      else if (st == GS_OK) out->world = (int)v;
    } else if (strcmp(s->text, "schema") == 0) {
      st = gs_json_stream_next(s, &t);
      if (st == GS_OK && t == GS_JS_STRING && strcmp(s->text, "gpuscale/trace/v1") == 0)
        *gpuscale = 1;
      else if (st == GS_OK)
        st = gs_json_stream_skip(s, t);
    } else {
      st = gs_json_stream_next(s, &t);
      if (st == GS_OK) st = gs_json_stream_skip(s, t);
    }
  }
  return st;
}

static gs_status read_trace(gs_json_stream *s, gs_trace_events *out, int *gpuscale) {
  event_fields e = {.name = malloc(GS_JSON_STREAM_TOKEN + 1)};
  if (!e.name) return gs_error(GS_ERR_NOMEM, "cannot allocate the reader of %s", s->path);
  gs_json_token t;
  int seen_events = 0;
  gs_status st = gs_json_stream_next(s, &t);
  if (st == GS_OK && t != GS_JS_OBJECT)
    st = gs_error(GS_ERR_FORMAT, "%s: byte %llu: a trace is a JSON object", s->path,
                  (unsigned long long)s->offset);
  while (st == GS_OK) {
    st = gs_json_stream_next(s, &t);
    if (st != GS_OK || t == GS_JS_OBJECT_END) break;
    if (strcmp(s->text, "traceEvents") == 0) {
      seen_events = 1;
      st = read_events(s, &e, out);
    } else if (strcmp(s->text, "distributedInfo") == 0 || strcmp(s->text, "otherData") == 0) {
      st = read_small_object(s, out, gpuscale);
    } else {
      st = gs_json_stream_next(s, &t);
      if (st == GS_OK) st = gs_json_stream_skip(s, t);
    }
  }
  if (st == GS_OK) st = gs_json_stream_next(s, &t);  // the end of the file, checked
  free(e.name);
  if (st == GS_OK && !seen_events)
    st = gs_error(GS_ERR_FORMAT, "%s: not a trace (no traceEvents)", s->path);
  return st;
}

static void name_rank(gs_trace_events *out) {
  if (out->rank >= 0) snprintf(out->label, sizeof out->label, "rank %d", out->rank);
  else snprintf(out->label, sizeof out->label, "%s", "rank ?");
}

static gs_status finish(gs_json_stream *s, gs_trace_events *out, gs_status st, int gpuscale,
                        int *is_gpuscale) {
  gs_json_stream_close(s);
  if (st == GS_OK && gpuscale && !is_gpuscale)
    st = gs_error(GS_ERR_FORMAT, "%s: a gpuscale trace, not a PyTorch profiler trace", out->path);
  if (st != GS_OK || gpuscale) {
    char path[GS_TEXT_LONG];
    snprintf(path, sizeof path, "%s", out->path);
    gs_trace_events_free(out);
    snprintf(out->path, sizeof out->path, "%s", path);
    out->rank = -1;
    if (st == GS_OK) *is_gpuscale = 1;
    return st;
  }
  name_rank(out);
  gs_trace_events_cpu_done(out);
  gs_trace_events_sort(out);
  return GS_OK;
}

gs_status gs_kineto_read(const char *path, gs_trace_events *out, int *is_gpuscale) {
  memset(out, 0, sizeof *out);
  snprintf(out->path, sizeof out->path, "%s", path);
  out->rank = -1;
  out->hta_rounding = 1;
  if (is_gpuscale) *is_gpuscale = 0;
  struct stat sb;
  if (stat(path, &sb) == 0) out->bytes = (uint64_t)sb.st_size;
  gs_json_stream s;
  GS_TRY(gs_json_stream_open(&s, path));
  int gpuscale = 0;
  gs_status st = read_trace(&s, out, &gpuscale);
  return finish(&s, out, st, gpuscale, is_gpuscale);
}

gs_status gs_kineto_read_memory(const char *name, const void *data, size_t len,
                                gs_trace_events *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->path, sizeof out->path, "%s", name);
  out->rank = -1;
  out->hta_rounding = 1;
  out->bytes = len;
  gs_json_stream s;
  GS_TRY(gs_json_stream_open_memory(&s, out->path, data, len));
  int gpuscale = 0;
  gs_status st = read_trace(&s, out, &gpuscale);
  return finish(&s, out, st, gpuscale, NULL);
}
