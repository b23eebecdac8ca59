/* The timeline of a measurement (docs/timeline.md): named spans of time
 * per rank and lane, recorded while the ranks run and written as a Chrome
 * trace event file that Perfetto and chrome://tracing open; read back by
 * the report. This module owns the model, the host lanes' recording (the
 * monotonic clock, on the rank's own thread), the kinds and their colours,
 * the writer and the reader. platform/trace.h adds NVTX ranges and the
 * device lanes on top of it. */
#ifndef GS_CORE_TRACE_MODEL_H
#define GS_CORE_TRACE_MODEL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "core/types.h"

/* What a span is. The colours (gs_trace_kind_rgb) are those of the NVTX
 * ranges and of the report's timeline picture. RUN and STEP are frames
 * around the others; a frame with nothing inside counts as compute. */
typedef enum {
  GS_TRACE_RUN = 0,  /* a run, its warmup, a measurement's setup or checks */
  GS_TRACE_STEP,     /* one timed step */
  GS_TRACE_COMPUTE,  /* kernels or CPU work of the workload */
  GS_TRACE_COMM,     /* a collective or its kernels */
  GS_TRACE_WAIT,     /* waiting for other ranks or for communication */
  GS_TRACE_HOST,     /* host-side work that is neither (launches, bookkeeping) */
  GS_TRACE_COPY,     /* a memory copy */
  GS_TRACE_KIND_COUNT
} gs_trace_kind;

/* "run", "step", "compute", "communication", "wait", "host", "copy". */
const char *gs_trace_kind_name(gs_trace_kind kind);
/* The kind named `name` (as above), or -1. */
int gs_trace_kind_parse(const char *name);
/* The kind's colour as 0xRRGGBB. */
uint32_t gs_trace_kind_rgb(gs_trace_kind kind);

#define GS_TRACE_NAME 64
#define GS_TRACE_LANES 12
#define GS_TRACE_DEPTH 16
/* The lane of a rank's host thread; device lanes follow. */
#define GS_TRACE_HOST_LANE 0

typedef struct {
  double begin, end;          /* seconds of the monotonic clock (gs_time_seconds) */
  char name[GS_TRACE_NAME];   /* "forward", "allreduce bucket 2", a kernel's name */
  int64_t index;              /* a step, bucket or size the name is about; -1 none */
  int32_t run, step;          /* the timed step it belongs to; -1 outside one */
  uint8_t kind;               /* gs_trace_kind */
} gs_trace_span;

typedef struct {
  char name[GS_TRACE_NAME];   /* "host", "device: rank stream", "CUPTI stream 13" */
  gs_trace_span *spans;
  size_t n, cap;
} gs_trace_lane;

/* An open host span: what gs_trace_rank_begin pushed. `slot` belongs to
 * platform/trace.c (its device events), -1 when it has none. */
typedef struct {
  double begin;
  const char *name;
  char text[GS_TRACE_NAME];
  int64_t index;
  uint8_t kind;
  int recorded;               /* 1: the span is kept when it ends */
  int slot;
} gs_trace_open;

typedef struct gs_trace gs_trace;

/* One rank of one measurement: a process of the trace file. Its recording
 * state is touched only by the rank's own thread; lanes are read by the
 * writer after the measurement (or under the trace's lock). */
typedef struct {
  gs_trace *trace;
  int measurement, rank, device;   /* device: CUDA ordinal, -1 on the CPU */
  int n_lanes;
  gs_trace_lane lanes[GS_TRACE_LANES];
  int recording;                   /* inside a timed step below the step bound */
  int32_t run, step;
  int depth;
  gs_trace_open open[GS_TRACE_DEPTH];
  void *device_state;              /* platform/trace.c's, owned there */
} gs_trace_rank;

/* Creates a recorder that will write `path`, keeping at most `steps`
 * timed steps per run (steps >= 1). GS_ERR_NOMEM. */
gs_status gs_trace_new(const char *path, uint64_t steps, gs_trace **out);
/* Frees the recorder and every rank's spans; accepts NULL. */
void gs_trace_free(gs_trace *t);

/* The file the recorder writes, and its step bound. */
const char *gs_trace_path(const gs_trace *t);
uint64_t gs_trace_steps(const gs_trace *t);

/* Where the device lanes' spans come from ("cupti", "cuda-events",
 * "none: cpu backend" ...), said in the file; the last call wins. */
void gs_trace_set_source(gs_trace *t, const char *source);
const char *gs_trace_source(const gs_trace *t);

/* Names measurement `index` of the document (its position in
 * "measurements"), e.g. "mlp on 2 CPU ranks". Ranks of an earlier
 * measurement with an index >= `index` are dropped (a measurement that
 * was not written, or is measured again). Main thread, before its ranks
 * start. */
gs_status gs_trace_measurement_begin(gs_trace *t, int index, const char *label);

/* Adds rank `rank` (on CUDA device `device`, -1 on the CPU) to
 * measurement `measurement`; the rank's thread then binds it. NULL when
 * out of memory (the rank is then not traced). Any thread (locks). */
gs_trace_rank *gs_trace_rank_add(gs_trace *t, int measurement, int rank, int device);

/* The rank bound to the calling thread (NULL: nothing is traced here). */
void gs_trace_bind(gs_trace_rank *r);
gs_trace_rank *gs_trace_bound(void);

/* Opens timed step `step` of run `run` on the bound rank: spans other
 * than frames are recorded until gs_trace_rank_step_close only when
 * `step` is below the step bound. */
void gs_trace_rank_step_open(gs_trace_rank *r, int64_t run, int64_t step);
void gs_trace_rank_step_close(gs_trace_rank *r);

/* Pushes a host span: `name` must outlive the span (a literal), or is
 * NULL and `text` is copied. Returns the open entry (for platform/trace.c),
 * or NULL when the stack is full. RUN frames are always kept, others only
 * while the rank records. */
gs_trace_open *gs_trace_rank_begin(gs_trace_rank *r, gs_trace_kind kind, const char *name,
                                   const char *text, int64_t index);
/* Pops the innermost span at the current time, keeping it in the host
 * lane when recorded. Returns the popped entry (valid until the next
 * push), or NULL when none was open. */
gs_trace_open *gs_trace_rank_end(gs_trace_rank *r);

/* Appends `span` to `lane`, growing it; GS_ERR_NOMEM. */
gs_status gs_trace_lane_push(gs_trace_lane *lane, const gs_trace_span *span);

/* The lane named `name` of rank `r`, created when new; -1 when all
 * GS_TRACE_LANES are taken. */
int gs_trace_rank_lane(gs_trace_rank *r, const char *name);
/* Appends `span` to lane `lane` of `r`; GS_ERR_NOMEM. */
gs_status gs_trace_rank_add_span(gs_trace_rank *r, int lane, const gs_trace_span *span);

/* The trace's lock, held while CUPTI's records are added to its ranks from
 * a thread other than theirs. */
void gs_trace_lock(gs_trace *t);
void gs_trace_unlock(gs_trace *t);

/* Writes the trace file (Chrome trace event format, object form;
 * docs/timeline.md) through core/file's atomic path: every rank of every
 * measurement, spans sorted per lane, times in microseconds since the
 * recorder was created. Main thread, while no rank records. */
gs_status gs_trace_write(const gs_trace *t);

/* ---- reading back (report) --------------------------------------------- */

typedef struct {
  int rank, device;
  int n_lanes;
  gs_trace_lane lanes[GS_TRACE_LANES];   /* spans sorted by begin; times in seconds */
} gs_trace_view_rank;

/* The ranks of one measurement as read from a trace file. */
typedef struct {
  char source[GS_TEXT_LONG];  /* the file's device_source */
  uint64_t steps;              /* its step bound */
  int n_ranks;
  gs_trace_view_rank *ranks;   /* by rank number; owned */
} gs_trace_view;

/* Reads trace file `path` and keeps the spans of measurement
 * `measurement`. Errors name the file: GS_ERR_IO, GS_ERR_FORMAT (not a
 * gpuscale trace, or a malformed event). A measurement with no events
 * gives n_ranks 0. */
gs_status gs_trace_read(const char *path, int measurement, gs_trace_view *out);
void gs_trace_view_free(gs_trace_view *v);

#endif
