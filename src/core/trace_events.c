/* The compact event model of a rank's trace (core/trace_events.h): names
 * interned in an open-addressing table, events in one growable array, the
 * HTA name classes, and the conversion of gpuscale's own trace spans. */
#include "core/trace_events.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"
#include "core/json_stream.h"

gs_tev_class gs_tev_classify(const char *name) {
  if (strncmp(name, "nccl", 4) == 0 && strstr(name + 4, "Kernel")) return GS_TEV_COMM;
  if (strncmp(name, "Memcpy", 6) == 0 || strncmp(name, "Memset", 6) == 0 ||
      strncmp(name, "dma", 3) == 0)
    return GS_TEV_MEMORY;
  if (strstr(name, "Memcpy") || strstr(name, "Sync")) return GS_TEV_OTHER;
  return GS_TEV_COMPUTE;
}

void gs_trace_events_free(gs_trace_events *t) {
  for (size_t i = 0; i < t->n_threads; i++) free(t->threads[i].stack);
  free(t->threads);
  free(t->cpu);
  for (uint32_t i = 0; i < t->n_names; i++) free(t->names[i]);
  free(t->names);
  free(t->name_cls);
  free(t->slots);
  free(t->ev);
  memset(t, 0, sizeof *t);
}

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Doubles the hash table and re-inserts every name. */
static gs_status rehash(gs_trace_events *t) {
  size_t n = t->n_slots ? t->n_slots * 2 : 1024;
  uint32_t *slots = calloc(n, sizeof *slots);
  if (!slots) return GS_ERR_NOMEM;
  for (uint32_t i = 0; i < t->n_names; i++) {
    size_t k = (size_t)(hash_name(t->names[i]) & (n - 1));
    while (slots[k]) k = (k + 1) & (n - 1);
    slots[k] = i + 1;
  }
  free(t->slots);
  t->slots = slots;
  t->n_slots = n;
  return GS_OK;
}

gs_status gs_trace_events_intern(gs_trace_events *t, const char *name, uint32_t *out) {
  if ((size_t)t->n_names * 2 >= t->n_slots && rehash(t) != GS_OK)
    return gs_error(GS_ERR_NOMEM, "cannot allocate the names of %s", t->path);
  size_t k = (size_t)(hash_name(name) & (t->n_slots - 1));
  while (t->slots[k]) {
    uint32_t i = t->slots[k] - 1;
    if (strcmp(t->names[i], name) == 0) {
      *out = i;
      return GS_OK;
    }
    k = (k + 1) & (t->n_slots - 1);
  }
  if (t->n_names == t->names_cap) {
    uint32_t cap = t->names_cap ? t->names_cap * 2 : 256;
    char **names = realloc(t->names, cap * sizeof *names);
    if (names) t->names = names;
    uint8_t *cls = names ? realloc(t->name_cls, cap) : NULL;
    if (!names || !cls) return gs_error(GS_ERR_NOMEM, "cannot allocate the names of %s", t->path);
    t->name_cls = cls;
    t->names_cap = cap;
  }
  char *copy = strdup(name);
  if (!copy) return gs_error(GS_ERR_NOMEM, "cannot allocate the names of %s", t->path);
  t->names[t->n_names] = copy;
  t->name_cls[t->n_names] = (uint8_t)gs_tev_classify(name);
  t->slots[k] = ++t->n_names;
  *out = t->n_names - 1;
  return GS_OK;
}

gs_status gs_trace_events_push(gs_trace_events *t, const gs_tev *e) {
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 4096;
    gs_tev *ev = realloc(t->ev, cap * sizeof *ev);
    if (!ev) return gs_error(GS_ERR_NOMEM, "cannot allocate the events of %s", t->path);
    t->ev = ev;
    t->cap = cap;
  }
  t->ev[t->n++] = *e;
  return GS_OK;
}

/* Closes the op on top of `th`'s stack: its self time is its own less
 * its children's. */
static void cpu_close(gs_trace_events *t, gs_tev_cpu_thread *th) {
  const gs_tev_cpu_open *o = &th->stack[--th->n];
  double self = o->dur - o->child;
  t->cpu[o->name].self_us += self > 0 ? self : 0;
}

static gs_tev_cpu_thread *cpu_thread(gs_trace_events *t, double pid, double tid) {
  for (size_t i = t->n_threads; i-- > 0;)
    if (t->threads[i].tid == tid && t->threads[i].pid == pid) return &t->threads[i];
  gs_tev_cpu_thread *grown = realloc(t->threads, (t->n_threads + 1) * sizeof *grown);
  if (!grown) return NULL;
  t->threads = grown;
  grown[t->n_threads] = (gs_tev_cpu_thread){.pid = pid, .tid = tid, .last_ts = -INFINITY};
  return &grown[t->n_threads++];
}

gs_status gs_trace_events_cpu_op(gs_trace_events *t, const char *name, double ts, double dur,
                                 double pid, double tid) {
  uint32_t id;
  GS_TRY(gs_trace_events_intern(t, name, &id));
  if (id >= t->cpu_cap) {
    uint32_t cap = t->names_cap;
    gs_tev_cpu_total *cpu = realloc(t->cpu, cap * sizeof *cpu);
    if (!cpu) return gs_error(GS_ERR_NOMEM, "cannot allocate the CPU ops of %s", t->path);
    memset(cpu + t->cpu_cap, 0, (cap - t->cpu_cap) * sizeof *cpu);
    t->cpu = cpu;
    t->cpu_cap = cap;
  }
  gs_tev_cpu_thread *th = cpu_thread(t, pid, tid);
  if (!th) return gs_error(GS_ERR_NOMEM, "cannot allocate the CPU ops of %s", t->path);
  t->n_cpu_op_events++;
  t->cpu[id].count++;
  t->cpu[id].total_us += dur;
  if (ts < th->last_ts) t->cpu_unordered = 1;
  th->last_ts = ts;
  // The ops open on this thread that this one is not inside have ended.
  double end = ts + dur;
  // (2 ns of slack: Kineto's nanosecond times can put a child's end past its parent's.)
  while (th->n && !(ts < th->stack[th->n - 1].end && end <= th->stack[th->n - 1].end + 0.002))
    cpu_close(t, th);
  if (th->n) th->stack[th->n - 1].child += dur;
  if (th->n == th->cap) {
    size_t cap = th->cap ? th->cap * 2 : 16;
    gs_tev_cpu_open *stack = realloc(th->stack, cap * sizeof *stack);
    if (!stack) return gs_error(GS_ERR_NOMEM, "cannot allocate the CPU ops of %s", t->path);
    th->stack = stack;
    th->cap = cap;
  }
  th->stack[th->n++] = (gs_tev_cpu_open){.end = end, .dur = dur, .name = id};
  return GS_OK;
}

void gs_trace_events_cpu_done(gs_trace_events *t) {
  for (size_t i = 0; i < t->n_threads; i++)
    while (t->threads[i].n) cpu_close(t, &t->threads[i]);
}

static int by_start(const void *a, const void *b) {
  const gs_tev *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return (x->dur < y->dur) - (x->dur > y->dur);
}

void gs_trace_events_sort(gs_trace_events *t) {
  if (t->n > 1) qsort(t->ev, t->n, sizeof *t->ev, by_start);
}

/* Adds the spans of `lane` as stream `stream`. */
static gs_status add_lane(gs_trace_events *out, const gs_trace_lane *lane, int32_t stream) {
  for (size_t i = 0; i < lane->n; i++) {
    const gs_trace_span *s = &lane->spans[i];
    gs_tev e = {.ts = s->begin * 1e6, .dur = (s->end - s->begin) * 1e6, .corr = -1,
                .stream = stream, .kind = GS_TEV_KERNEL, .step = -1};
    if (s->run >= 0 && s->run < 0x8000 && s->step >= 0 && s->step < 0x10000)
      e.step = (int32_t)((s->run << 16) | s->step);
    if (s->kind == GS_TRACE_COMPUTE) e.cls = GS_TEV_COMPUTE;
    else if (s->kind == GS_TRACE_COMM) e.cls = GS_TEV_COMM;
    else if (s->kind == GS_TRACE_COPY) {
      e.cls = GS_TEV_MEMORY;
      e.kind = GS_TEV_MEMCPY;
    } else {
      continue;  // frames, waits and host bookkeeping are not device work
    }
    gs_status st = gs_trace_events_intern(out, s->name, &e.name);
    if (st == GS_OK) out->name_cls[e.name] = e.cls;  // the span's kind, not its name, says
    if (st == GS_OK) st = gs_trace_events_push(out, &e);
    if (st != GS_OK) return st;
  }
  return GS_OK;
}

gs_status gs_trace_events_from_view(const gs_trace_view *v, int rank, const char *path,
                                    int measurement, gs_trace_events *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->path, sizeof out->path, "%s", path);
  snprintf(out->label, sizeof out->label, "m%d rank %d", measurement, rank);
  out->rank = rank;
  out->world = v->n_ranks;
  const gs_trace_view_rank *r = &v->ranks[rank];
  // CUPTI's lanes hold the kernels; the CUDA-event lanes the same time as
  // phases: only the finest source there is, never both.
  const char *source = NULL;
  for (int l = 0; l < r->n_lanes && !source; l++)
    if (r->lanes[l].n && strstr(r->lanes[l].name, "(CUPTI)")) source = "(CUPTI)";
  for (int l = 0; l < r->n_lanes && !source; l++)
    if (r->lanes[l].n && strstr(r->lanes[l].name, "(CUDA events)")) source = "(CUDA events)";
  gs_status st = GS_OK;
  for (int l = 0; st == GS_OK && l < r->n_lanes; l++)
    if (source ? strstr(r->lanes[l].name, source) != NULL : l == GS_TRACE_HOST_LANE)
      st = add_lane(out, &r->lanes[l], l);
  for (int l = 0; l < r->n_lanes; l++) out->n_events += r->lanes[l].n;
  if (st != GS_OK) {
    gs_trace_events_free(out);
    return st;
  }
  gs_trace_events_sort(out);
  return GS_OK;
}

int gs_trace_file_sniff(const char *path) {
  // Only a regular file is opened: a FIFO or device is left to the
  // document reader, which refuses it without blocking.
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return 0;
  gs_error_kept kept;
  gs_error_keep(&kept);
  gs_json_stream s;
  if (gs_json_stream_open(&s, path) != GS_OK) {
    gs_error_restore(&kept);
    return 0;
  }
  gs_json_token t1, t2;
  int is_trace = 0;
  if (gs_json_stream_next(&s, &t1) == GS_OK && t1 == GS_JS_OBJECT &&
      gs_json_stream_next(&s, &t2) == GS_OK && t2 == GS_JS_KEY)
    is_trace = strcmp(s.text, "traceEvents") == 0 || strcmp(s.text, "schemaVersion") == 0 ||
               strcmp(s.text, "deviceProperties") == 0 || strcmp(s.text, "distributedInfo") == 0;
  gs_error_restore(&kept);
  gs_json_stream_close(&s);
  return is_trace;
}
