/* Trace ranges (docs/timeline.md): the one pair of calls that names a
 * phase of the work, gs_trace_begin / gs_trace_end. Each pair is an NVTX
 * range (domain "gpuscale", coloured by kind, the rank as its category)
 * when a tool such as Nsight Systems listens; a span of the rank's host
 * lane when the command records a trace (--trace) and the rank is inside a
 * timed step below the step bound; and, given a CUDA stream, a span of the
 * rank's device lane timed by CUDA events on that stream. With no tool and
 * no trace a pair costs two thread-local reads. Built with
 * -DGPUSCALE_TRACE=OFF (GS_TRACE_DISABLED) every call compiles away.
 *
 * The runner (and every driver with its own loop) attaches each rank's
 * thread to the command's recorder and opens and closes the timed steps;
 * CUPTI's activity records, where the library loads, fill the device lanes
 * with the kernels and copies that ran inside the recorded steps. */
#ifndef GS_PLATFORM_TRACE_H
#define GS_PLATFORM_TRACE_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "core/status.h"
#include "core/trace_model.h"

#ifdef GS_TRACE_DISABLED

static inline void gs_trace_begin(gs_trace_kind kind, const char *name, int64_t index,
                                  cudaStream_t stream) {
  (void)kind, (void)name, (void)index, (void)stream;
}
static inline void gs_trace_begin_text(gs_trace_kind kind, cudaStream_t stream, const char *text) {
  (void)kind, (void)stream, (void)text;
}
static inline void gs_trace_end(void) {}
static inline int gs_trace_depth(void) { return 0; }
static inline void gs_trace_abandon(int depth) { (void)depth; }
static inline gs_status gs_trace_attach(gs_trace *t, int measurement, int rank, int device,
                                        cudaStream_t stream) {
  (void)t, (void)measurement, (void)rank, (void)device, (void)stream;
  return GS_OK;
}
static inline void gs_trace_detach(void) {}
static inline void gs_trace_step_open(int64_t run, int64_t step) { (void)run, (void)step; }
static inline void gs_trace_step_close(void) {}
static inline gs_status gs_trace_measurement_start(gs_trace *t, int index, const char *label,
                                                   gs_backend backend, const char *host_only) {
  (void)t, (void)index, (void)label, (void)backend, (void)host_only;
  return GS_OK;
}
static inline void gs_trace_measurement_stop(gs_trace *t) { (void)t; }
#define GS_TRACE_BUILT 0

#else

#define GS_TRACE_BUILT 1

/* Opens a range of `kind` named `name` (a string literal: it is kept, not
 * copied) about `index` (a bucket, a step, a size; -1 none) on the calling
 * thread; with `stream` non-NULL and a trace recording, its device span is
 * timed by events on that stream (not while the stream is being
 * captured into a graph). Ranges nest; close each with gs_trace_end. */
void gs_trace_begin(gs_trace_kind kind, const char *name, int64_t index, cudaStream_t stream);

/* The same with a name made at the call (copied; at most GS_TRACE_NAME - 1
 * bytes): for ranges that are few, such as one copy of p2p or one message
 * size of coll. */
void gs_trace_begin_text(gs_trace_kind kind, cudaStream_t stream, const char *text);

/* Closes the innermost range opened on this thread. */
void gs_trace_end(void);

/* The number of ranges open on this thread (0 where nothing is traced). */
int gs_trace_depth(void);

/* After a failure: closes the ranges opened above `depth` (from
 * gs_trace_depth) and the open step, dropping the step's device spans
 * without waiting for the device (a failed step may never finish). */
void gs_trace_abandon(int depth);

/* Attaches the calling thread as rank `rank` (CUDA device `device` and its
 * stream, or -1 and NULL on the CPU) of measurement `measurement` of `t`;
 * with t NULL the thread is traced by NVTX only. CUDA: the device must be
 * current. GS_OK also when the rank cannot be traced (then it is not). */
gs_status gs_trace_attach(gs_trace *t, int measurement, int rank, int device,
                          cudaStream_t stream);

/* Detaches the calling thread (frees its CUDA events). Before the
 * stream is destroyed. */
void gs_trace_detach(void);

/* The calling rank enters timed step `step` (from 0) of run `run`; spans
 * are recorded until gs_trace_step_close when the step is below the
 * step bound. Close resolves the step's device spans: call it once the
 * step's work on the device has finished. */
void gs_trace_step_open(int64_t run, int64_t step);
void gs_trace_step_close(void);

/* Begins measurement `index` of the document on the recorder (label as
 * in gs_trace_measurement_begin) and, on the cuda backend, CUPTI's
 * activity records (loaded on first use; when it cannot load, the device
 * lanes come from CUDA events and the file says why). A measurement whose
 * GPU work this process does not see or time itself gives the reason in
 * `host_only` (else NULL): its trace has host lanes only and says why.
 * Main thread. */
gs_status gs_trace_measurement_start(gs_trace *t, int index, const char *label,
                                     gs_backend backend, const char *host_only);

/* Ends the measurement: CUPTI's records of the recorded steps go into the
 * device lanes of the ranks that ran them. Main thread, after the ranks. */
void gs_trace_measurement_stop(gs_trace *t);

#endif

#endif
