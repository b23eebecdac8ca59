/* CUPTI's Activity API loaded with dlopen (platform/cupti.h). The record
 * layouts come from the toolkit's cupti_activity.h, which matches the
 * libcupti the toolkit ships; only function pointers are taken from the
 * library, so the binary neither links nor needs it. */
#include "platform/cupti.h"

#ifndef GS_TRACE_DISABLED

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cupti_activity.h>

#include "core/timer.h"

/* CUPTI's buffers: one megabyte each, as its documentation suggests. */
#define BUFFER_BYTES (1u << 20)
/* Kept records at most (a few steps hold far fewer). */
#define MAX_RECORDS 200000
#define MAX_WINDOWS 4096

typedef CUptiResult (*fn_register)(CUpti_BuffersCallbackRequestFunc,
                                   CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*fn_kind)(CUpti_ActivityKind);
typedef CUptiResult (*fn_disable)(CUpti_ActivityKind);
typedef CUptiResult (*fn_flush)(uint32_t);
typedef CUptiResult (*fn_next)(uint8_t *, size_t, CUpti_Activity **);
typedef CUptiResult (*fn_timestamp)(uint64_t *);

typedef struct {
  gs_trace_rank *rank;
  int32_t run, step;
  int device;
  uint32_t stream;
  uint64_t start, end;  /* CUPTI nanoseconds */
  gs_trace_kind kind;
  char name[GS_TRACE_NAME];
} record;

typedef struct {
  gs_trace_rank *rank;
  int32_t run, step;
  double begin, end;    /* monotonic seconds; end INFINITY while open */
} window;

static struct {
  pthread_mutex_t lock;
  int tried, active;
  char why[GS_TEXT_LONG];
  fn_register register_callbacks;
  fn_kind enable;
  fn_disable disable;
  fn_flush flush_all;
  fn_next next_record;
  fn_timestamp timestamp;
  double offset;        /* monotonic seconds - CUPTI seconds */
  record *records;
  size_t n_records, cap_records, dropped;
  window windows[MAX_WINDOWS];
  size_t n_windows;
  int open_windows;     /* windows not yet closed */
} cupti = {.lock = PTHREAD_MUTEX_INITIALIZER};

static double host_seconds_of(uint64_t ns) { return cupti.offset + 1e-9 * (double)ns; }

/* The window of a record on `device` starting at `start`, or NULL. */
static const window *window_of(int device, uint64_t start) {
  const double t = host_seconds_of(start);
  for (size_t i = 0; i < cupti.n_windows; i++) {
    const window *w = &cupti.windows[i];
    if (w->rank->device == device && w->begin <= t && t <= w->end) return w;
  }
  return NULL;
}

static void keep(int device, uint32_t stream, uint64_t start, uint64_t end, gs_trace_kind kind,
                 const char *name) {
  if (start == 0 || end < start) return; /* CUPTI could not time it */
  const window *w = window_of(device, start);
  if (!w) return;
  if (cupti.n_records == cupti.cap_records) {
    size_t cap = cupti.cap_records ? 2 * cupti.cap_records : 1024;
    record *grown = cap <= MAX_RECORDS ? realloc(cupti.records, cap * sizeof *grown) : NULL;
    if (!grown) {
      cupti.dropped++;
      return;
    }
    cupti.records = grown;
    cupti.cap_records = cap;
  }
  record *r = &cupti.records[cupti.n_records++];
  r->rank = w->rank;
  r->run = w->run;
  r->step = w->step;
  r->device = device;
  r->stream = stream;
  r->start = start;
  r->end = end;
  r->kind = kind;
  snprintf(r->name, sizeof r->name, "%s", name ? name : "?");
}

/* NCCL's kernels are communication; every other kernel is compute. */
static gs_trace_kind kernel_kind(const char *name) {
  for (const char *p = name; p && *p; p++)
    if (strncasecmp(p, "nccl", 4) == 0) return GS_TRACE_COMM;
  return GS_TRACE_COMPUTE;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = aligned_alloc(8, BUFFER_BYTES);
  *size = *buffer ? BUFFER_BYTES : 0;
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid) {
  (void)context, (void)stream, (void)size;
  CUpti_Activity *a = NULL;
  pthread_mutex_lock(&cupti.lock);
  while (valid > 0 && cupti.next_record(buffer, valid, &a) == CUPTI_SUCCESS) {
    if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || a->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)a;
      keep((int)k->deviceId, k->streamId, k->start, k->end, kernel_kind(k->name), k->name);
    } else if (a->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)a;
      char name[GS_TRACE_NAME];
      snprintf(name, sizeof name, "memcpy %llu B", (unsigned long long)m->bytes);
      keep((int)m->deviceId, m->streamId, m->start, m->end, GS_TRACE_COPY, name);
    }
  }
  pthread_mutex_unlock(&cupti.lock);
  free(buffer);
}

/* Turns the kinds we record on or off. */
static CUptiResult set_activity(int on) {
  fn_kind change = on ? cupti.enable : cupti.disable;
  CUptiResult r = change(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r == CUPTI_SUCCESS) r = change(CUPTI_ACTIVITY_KIND_MEMCPY);
  return r;
}

static void *load(void) {
  static const char *const names[] = {"libcupti.so", "libcupti.so.13", "libcupti.so.12",
                                      "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
                                      "/usr/local/cuda/lib64/libcupti.so", NULL};
  for (size_t i = 0; names[i]; i++) {
    void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib) return lib;
  }
  return NULL;
}

int gs_cupti_start(char *why, size_t why_size) {
  pthread_mutex_lock(&cupti.lock);
  if (!cupti.tried) {
    cupti.tried = 1;
    void *lib = load();
    if (!lib) {
      snprintf(cupti.why, sizeof cupti.why, "CUPTI not loaded: libcupti.so not found");
    } else {
      cupti.register_callbacks = (fn_register)dlsym(lib, "cuptiActivityRegisterCallbacks");
      cupti.enable = (fn_kind)dlsym(lib, "cuptiActivityEnable");
      cupti.disable = (fn_disable)dlsym(lib, "cuptiActivityDisable");
      cupti.flush_all = (fn_flush)dlsym(lib, "cuptiActivityFlushAll");
      cupti.next_record = (fn_next)dlsym(lib, "cuptiActivityGetNextRecord");
      cupti.timestamp = (fn_timestamp)dlsym(lib, "cuptiGetTimestamp");
      CUptiResult r = CUPTI_ERROR_UNKNOWN;
      if (cupti.register_callbacks && cupti.enable && cupti.disable && cupti.flush_all &&
          cupti.next_record && cupti.timestamp)
        r = cupti.register_callbacks(buffer_requested, buffer_completed);
      // Tried once here so that a refusal is known before measuring; then
      // off until a recorded step opens (activity records slow every launch).
      if (r == CUPTI_SUCCESS) r = set_activity(1);
      if (r == CUPTI_SUCCESS) r = set_activity(0);
      uint64_t now = 0;
      if (r == CUPTI_SUCCESS) r = cupti.timestamp(&now);
      if (r == CUPTI_SUCCESS) {
        cupti.offset = gs_time_seconds() - 1e-9 * (double)now;
        cupti.active = 1;
      } else {
        snprintf(cupti.why, sizeof cupti.why, "CUPTI refused the activity API (error %d)", (int)r);
      }
    }
  }
  int active = cupti.active;
  if (!active && why) snprintf(why, why_size, "%s", cupti.why);
  pthread_mutex_unlock(&cupti.lock);
  return active;
}

void gs_cupti_arm(void) {
  pthread_mutex_lock(&cupti.lock);
  if (cupti.active) (void)set_activity(1);
  pthread_mutex_unlock(&cupti.lock);
}

void gs_cupti_window(gs_trace_rank *r, double host_seconds, int open) {
  pthread_mutex_lock(&cupti.lock);
  if (cupti.active && open && cupti.n_windows < MAX_WINDOWS) {
    cupti.windows[cupti.n_windows++] = (window){.rank = r, .run = r->run, .step = r->step,
                                                .begin = host_seconds, .end = INFINITY};
    cupti.open_windows++;
  } else if (cupti.active && !open) {
    for (size_t i = cupti.n_windows; i-- > 0;)
      if (cupti.windows[i].rank == r && isinf(cupti.windows[i].end)) {
        cupti.windows[i].end = host_seconds;
        --cupti.open_windows;
        break;
      }
  }
  pthread_mutex_unlock(&cupti.lock);
}

/* Records by rank, stream and start: each lane's spans in order. */
static int record_order(const void *a, const void *b) {
  const record *x = a, *y = b;
  if (x->rank != y->rank) return (uintptr_t)x->rank < (uintptr_t)y->rank ? -1 : 1;
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  return (x->start > y->start) - (x->start < y->start);
}

void gs_cupti_collect(gs_trace *t) {
  if (!gs_cupti_start(NULL, 0)) return;
  (void)cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&cupti.lock);
  gs_trace_lock(t);
  if (cupti.n_records) qsort(cupti.records, cupti.n_records, sizeof *cupti.records, record_order);
  uint64_t lane_end = 0;  /* end of the last span of the stream's lane */
  for (size_t i = 0; i < cupti.n_records; i++) {
    const record *rec = &cupti.records[i];
    gs_trace_rank *r = rec->rank;
    if (r->trace != t) continue;
    const int first = i == 0 || rec->rank != cupti.records[i - 1].rank ||
                      rec->stream != cupti.records[i - 1].stream;
    if (first) lane_end = 0;
    // A kernel launched as a programmatic dependent may start before its
    // predecessor ends: it goes to a lane of its own, so lanes stay nested.
    const int overlaps = rec->start < lane_end;
    char lane_name[GS_TRACE_NAME];
    snprintf(lane_name, sizeof lane_name, "GPU %d: stream %u%s (CUPTI)", rec->device, rec->stream,
             overlaps ? " overlapping" : "");
    if (!overlaps) lane_end = rec->end;
    gs_trace_span span = {.begin = host_seconds_of(rec->start), .end = host_seconds_of(rec->end),
                          .index = -1, .run = rec->run, .step = rec->step,
                          .kind = (uint8_t)rec->kind};
    snprintf(span.name, sizeof span.name, "%s", rec->name);
    (void)gs_trace_rank_add_span(r, gs_trace_rank_lane(r, lane_name), &span);
  }
  gs_trace_unlock(t);
  cupti.n_records = 0;
  cupti.n_windows = 0;
  (void)set_activity(0);
  cupti.open_windows = 0;
  pthread_mutex_unlock(&cupti.lock);
}

#endif
