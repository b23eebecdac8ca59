/* Trace ranges (platform/trace.h): NVTX ranges for a listening tool, host
 * spans through core/trace_model, and device spans timed by CUDA events on the
 * rank's streams, resolved when the step closes. CUPTI is in cupti.c. */
#include "platform/trace.h"

#ifndef GS_TRACE_DISABLED

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

#include "core/check.h"
#include "core/timer.h"
#include "platform/cupti.h"

/* Device spans one recorded step may hold; more are left out. */
#define DEVICE_SLOTS 128

typedef struct {
  cudaStream_t stream;
  int lane;
  gs_trace_span span;
} device_slot;

/* A CUDA rank's events: an anchor recorded on the rank's stream when a
 * recorded step opens, whose host time maps the events' elapsed times onto
 * the monotonic clock, and one begin/end pair per device span. */
typedef struct {
  int device;
  cudaStream_t stream;
  cudaEvent_t anchor;
  double anchor_host;
  int anchored;
  cudaEvent_t begin[DEVICE_SLOTS], end[DEVICE_SLOTS];
  int n_events;                    /* pairs created */
  device_slot slots[DEVICE_SLOTS];
  int n_slots;                     /* used in this step */
  cudaStream_t lane_streams[GS_TRACE_LANES];
} device_state;

/* ---- NVTX --------------------------------------------------------------- */

/* NVTX calls only where a tool injected itself (nsys sets this variable):
 * otherwise a range would still cost a call and the formatting of its name. */
static int nvtx_listening(void) {
  static int listening = -1;
  if (listening < 0) listening = getenv("NVTX_INJECTION64_PATH") != NULL;
  return listening;
}

static nvtxDomainHandle_t gpuscale_domain;
static void make_domain(void) { gpuscale_domain = nvtxDomainCreateA("gpuscale"); }

static _Thread_local int thread_category; /* rank + 1; 0 unattached */

static void nvtx_push(gs_trace_kind kind, const char *name, int64_t index) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, make_domain);
  char text[GS_TRACE_NAME + 24];
  if (index >= 0)
    snprintf(text, sizeof text, "%s %lld", name, (long long)index);
  else
    snprintf(text, sizeof text, "%s", name);
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = (uint32_t)thread_category;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = 0xff000000u | gs_trace_kind_rgb(kind);
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = text;
  if (index >= 0) {
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = index;
  }
  nvtxDomainRangePushEx(gpuscale_domain, &a);
}

static void nvtx_pop(void) { nvtxDomainRangePop(gpuscale_domain); }

/* The rank's NVTX category: "rank R (GPU D)" or "rank R (CPU)". */
static void nvtx_name_rank(int rank, int device) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, make_domain);
  char name[64];
  if (device >= 0)
    snprintf(name, sizeof name, "rank %d (GPU %d)", rank, device);
  else
    snprintf(name, sizeof name, "rank %d (CPU)", rank);
  nvtxDomainNameCategoryA(gpuscale_domain, (uint32_t)(rank + 1), name);
}

/* ---- device spans ------------------------------------------------------- */

static device_state *device_of(gs_trace_rank *r) { return r ? r->device_state : NULL; }

/* Records the begin event of the open entry `o`'s device span on
 * `stream`; 0 when it cannot (the span is then left out). */
static int device_record_begin(device_state *ds, gs_trace_open *o, cudaStream_t stream) {
  enum cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capturing) != cudaSuccess ||
      capturing != cudaStreamCaptureStatusNone)
    return 0;
  const int i = ds->n_slots;
  if (i == ds->n_events) {
    if (cudaEventCreate(&ds->begin[i]) != cudaSuccess) return 0;
    if (cudaEventCreate(&ds->end[i]) != cudaSuccess) {
      cudaEventDestroy(ds->begin[i]);
      return 0;
    }
    ds->n_events++;
  }
  if (cudaEventRecord(ds->begin[i], stream) != cudaSuccess) return 0;
  ds->slots[i].stream = stream;
  ds->n_slots++;
  o->slot = i;
  return 1;
}

/* Starts the device span of the open entry `o` on `stream`. A failed CUDA
 * call here is the trace's, not the workload's: its error is cleared. */
static void device_begin(gs_trace_rank *r, gs_trace_open *o, cudaStream_t stream) {
  device_state *ds = device_of(r);
  if (!ds || !stream || !r->recording || !ds->anchored || ds->n_slots == DEVICE_SLOTS) return;
  if (!device_record_begin(ds, o, stream)) (void)cudaGetLastError();
}

static void device_end(gs_trace_rank *r, const gs_trace_open *o) {
  device_state *ds = device_of(r);
  if (!ds || o->slot < 0) return;
  device_slot *s = &ds->slots[o->slot];
  if (cudaEventRecord(ds->end[o->slot], s->stream) != cudaSuccess) {
    s->stream = NULL; /* left out when the step closes */
    (void)cudaGetLastError();
    return;
  }
  memset(&s->span, 0, sizeof s->span);
  snprintf(s->span.name, sizeof s->span.name, "%s", o->name ? o->name : o->text);
  s->span.index = o->index;
  s->span.kind = o->kind;
  s->span.run = r->run;
  s->span.step = r->step;
}

/* The device lane of `stream`: the rank's own stream first, others in the
 * order they appear. */
static int stream_lane(gs_trace_rank *r, device_state *ds, cudaStream_t stream) {
  for (int l = 0; l < GS_TRACE_LANES; l++)
    if (ds->lane_streams[l] == stream) return l;
  char name[GS_TRACE_NAME];
  int others = 0;
  for (int l = 0; l < GS_TRACE_LANES; l++) others += ds->lane_streams[l] != NULL;
  if (stream == ds->stream)
    snprintf(name, sizeof name, "GPU %d: rank stream (CUDA events)", ds->device);
  else
    snprintf(name, sizeof name, "GPU %d: stream %d (CUDA events)", ds->device, others + 1);
  int lane = gs_trace_rank_lane(r, name);
  if (lane >= 0) ds->lane_streams[lane] = stream;
  return lane;
}

/* Turns the step's event pairs into spans on the monotonic clock. */
static void device_resolve(gs_trace_rank *r) {
  device_state *ds = device_of(r);
  if (!ds) return;
  for (int i = 0; i < ds->n_slots; i++) {
    device_slot *s = &ds->slots[i];
    float b = 0.0f, e = 0.0f;
    if (!s->stream || cudaEventSynchronize(ds->end[i]) != cudaSuccess ||
        cudaEventElapsedTime(&b, ds->anchor, ds->begin[i]) != cudaSuccess ||
        cudaEventElapsedTime(&e, ds->anchor, ds->end[i]) != cudaSuccess)
      continue;
    s->span.begin = ds->anchor_host + 1e-3 * (double)b;
    s->span.end = ds->anchor_host + 1e-3 * (double)e;
    (void)gs_trace_rank_add_span(r, stream_lane(r, ds, s->stream), &s->span);
  }
  ds->n_slots = 0;
  (void)cudaGetLastError();  /* a failed event call above is not the workload's error */
}

/* Records the anchor on the rank's idle stream and takes its host time:
 * the midpoint of recording it and seeing it complete. */
static void device_anchor(gs_trace_rank *r) {
  device_state *ds = device_of(r);
  if (!ds) return;
  double before = gs_time_seconds();
  ds->anchored = cudaEventRecord(ds->anchor, ds->stream) == cudaSuccess &&
                 cudaEventSynchronize(ds->anchor) == cudaSuccess;
  ds->anchor_host = 0.5 * (before + gs_time_seconds());
  (void)cudaGetLastError();
}

/* ---- the calls ---------------------------------------------------------- */

void gs_trace_begin(gs_trace_kind kind, const char *name, int64_t index, cudaStream_t stream) {
  if (nvtx_listening()) nvtx_push(kind, name, index);
  gs_trace_rank *r = gs_trace_bound();
  if (!r) return;
  gs_trace_open *o = gs_trace_rank_begin(r, kind, name, NULL, index);
  if (o && o->recorded && stream) device_begin(r, o, stream);
}

void gs_trace_begin_text(gs_trace_kind kind, cudaStream_t stream, const char *text) {
  if (nvtx_listening()) nvtx_push(kind, text, -1);
  gs_trace_rank *r = gs_trace_bound();
  if (!r) return;
  gs_trace_open *o = gs_trace_rank_begin(r, kind, NULL, text, -1);
  if (o && o->recorded && stream) device_begin(r, o, stream);
}

void gs_trace_end(void) {
  if (nvtx_listening()) nvtx_pop();
  gs_trace_rank *r = gs_trace_bound();
  if (!r) return;
  gs_trace_open *o = gs_trace_rank_end(r);
  if (o && o->recorded) device_end(r, o);
}

int gs_trace_depth(void) {
  gs_trace_rank *r = gs_trace_bound();
  return r ? r->depth : 0;
}

void gs_trace_abandon(int depth) {
  gs_trace_rank *r = gs_trace_bound();
  if (!r) return;
  device_state *ds = device_of(r);
  if (ds) ds->n_slots = 0;
  while (r->depth > depth) {
    if (nvtx_listening()) nvtx_pop();
    (void)gs_trace_rank_end(r);
  }
  if (r->recording && r->device >= 0) gs_cupti_window(r, gs_time_seconds(), 0);
  gs_trace_rank_step_close(r);
}

gs_status gs_trace_attach(gs_trace *t, int measurement, int rank, int device,
                          cudaStream_t stream) {
  thread_category = rank + 1;
  if (nvtx_listening()) nvtx_name_rank(rank, device);
  gs_trace_bind(NULL);
  if (!t) return GS_OK;
  gs_trace_rank *r = gs_trace_rank_add(t, measurement, rank, device);
  if (!r) return GS_OK;
  if (device >= 0 && stream) {
    device_state *ds = calloc(1, sizeof *ds);
    if (ds && cudaEventCreate(&ds->anchor) == cudaSuccess) {
      ds->device = device;
      ds->stream = stream;
      r->device_state = ds;
    } else {
      free(ds);
      (void)cudaGetLastError();
    }
  }
  gs_trace_bind(r);
  return GS_OK;
}

void gs_trace_detach(void) {
  gs_trace_rank *r = gs_trace_bound();
  thread_category = 0;
  gs_trace_bind(NULL);
  device_state *ds = device_of(r);
  if (!ds) return;
  for (int i = 0; i < ds->n_events; i++) {
    cudaEventDestroy(ds->begin[i]);
    cudaEventDestroy(ds->end[i]);
  }
  cudaEventDestroy(ds->anchor);
  free(ds);
  r->device_state = NULL;
}

void gs_trace_step_open(int64_t run, int64_t step) {
  gs_trace_rank *r = gs_trace_bound();
  if (!r) return;
  gs_trace_rank_step_open(r, run, step);
  if (!r->recording) return;
  device_anchor(r);
  if (r->device >= 0) gs_cupti_window(r, gs_time_seconds(), 1);
}

void gs_trace_step_close(void) {
  gs_trace_rank *r = gs_trace_bound();
  if (!r || !r->recording) {
    if (r) gs_trace_rank_step_close(r);
    return;
  }
  device_resolve(r);
  if (r->device >= 0) gs_cupti_window(r, gs_time_seconds(), 0);
  gs_trace_rank_step_close(r);
}

gs_status gs_trace_measurement_start(gs_trace *t, int index, const char *label,
                                     gs_backend backend, const char *host_only) {
  if (!t) return GS_OK;
  GS_TRY(gs_trace_measurement_begin(t, index, label));
  if (backend != GS_BACKEND_CUDA || host_only) {
    char source[GS_TEXT_LONG];
    snprintf(source, sizeof source, "none: %s",
             host_only ? host_only : "the cpu backend has host lanes only");
    gs_trace_set_source(t, source);
    return GS_OK;
  }
  char why[GS_TEXT_LONG] = "";
  if (gs_cupti_start(why, sizeof why)) {
    gs_cupti_arm();
    gs_trace_set_source(t, "cupti");
  } else {
    char source[GS_TEXT_LONG];
    snprintf(source, sizeof source, "cuda-events (%s)", why);
    gs_trace_set_source(t, source);
  }
  return GS_OK;
}

void gs_trace_measurement_stop(gs_trace *t) {
  if (t) gs_cupti_collect(t);
}

#endif
