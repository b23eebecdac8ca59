/* The device-side events of one rank's trace, compact enough for traces of
 * gigabytes (docs/traces.md): GPU kernels, memcpy and memset with their
 * stream and correlation id, the CUDA runtime calls that launched them,
 * and the profiler's step marks. Read from PyTorch profiler (Kineto)
 * traces by a streaming reader (core/kineto_read.c) and built from
 * gpuscale's own --trace files (gs_trace_events_from_view), so one
 * analysis (report/analyze/trace_stats.c) explains both. */
#ifndef GS_CORE_TRACE_EVENTS_H
#define GS_CORE_TRACE_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "core/trace_model.h"
#include "core/types.h"

typedef enum {
  GS_TEV_KERNEL = 0,  /* a GPU kernel (NCCL's kernels too: the name says which) */
  GS_TEV_MEMCPY,      /* a GPU memory copy */
  GS_TEV_MEMSET,      /* a GPU memset */
  GS_TEV_RUNTIME,     /* a CUDA runtime or driver call on the host (a launch) */
  GS_TEV_STEP         /* a profiler step mark ("ProfilerStep#N") */
} gs_tev_kind;

/* What a GPU event's time counts as, by HTA's rules on its name:
 * communication "nccl...Kernel" at the start; memory "Memcpy", "Memset" or
 * "dma" at the start; other: a name holding "Memcpy" or "Sync" elsewhere;
 * compute the rest. */
typedef enum { GS_TEV_COMPUTE = 0, GS_TEV_COMM, GS_TEV_MEMORY, GS_TEV_OTHER } gs_tev_class;

/* gs_tev_class of a kernel or copy named `name`. */
gs_tev_class gs_tev_classify(const char *name);

/* One event: 40 bytes. Times in microseconds on the trace's clock. */
typedef struct {
  double ts, dur;
  int64_t corr;       /* correlation id linking a launch to its kernel; -1 none */
  uint32_t name;      /* index into the names table */
  int32_t stream;     /* CUDA stream; -1 for host events */
  int32_t step;       /* the step it belongs to when the source says (gpuscale's spans:
                       * run << 16 | step); -1: by its launch (Kineto) or none */
  uint8_t kind;       /* gs_tev_kind */
  uint8_t cls;        /* gs_tev_class of a GPU event */
} gs_tev;

/* A CPU op's totals by name (Kineto's cpu_op events): inclusive time (the
 * ops it called included) and self time (theirs left out). */
typedef struct {
  uint64_t count;
  double total_us, self_us;
} gs_tev_cpu_total;

/* A CPU op still open on its thread, for the self times. */
typedef struct {
  double end, dur, child;
  uint32_t name;
} gs_tev_cpu_open;

/* One host thread's open CPU ops. */
typedef struct {
  double pid, tid, last_ts;
  gs_tev_cpu_open *stack;
  size_t n, cap;
} gs_tev_cpu_thread;

/* The events of one rank, and what the reader counted without keeping. */
typedef struct {
  char path[GS_TEXT_LONG];     /* the file */
  char label[GS_TEXT_SHORT];         /* "rank 1" or "m0 rank 1" */
  int rank;                    /* distributedInfo.rank; -1 when absent */
  int world;                   /* distributedInfo.world_size; 0 when absent */
  int hta_rounding;            /* 1: times are rounded to whole us as HTA does */
  gs_tev *ev;
  size_t n, cap;
  char **names;                /* interned names, owned */
  uint8_t *name_cls;           /* gs_tev_classify of each name */
  uint32_t n_names, names_cap;
  uint32_t *slots;             /* open-addressing hash of names (index + 1; 0 empty) */
  size_t n_slots;
  uint64_t n_events;           /* every event of the file's traceEvents */
  uint64_t n_cpu_ops;          /* host events other than runtime calls and steps */
  uint64_t bytes;              /* the file's size */
  /* CPU ops (cat cpu_op), summed by name as read, never kept one by one:
   * cpu[i] for name i (cpu_cap entries; zero for a name no op had). */
  gs_tev_cpu_total *cpu;
  uint32_t cpu_cap;
  uint64_t n_cpu_op_events;    /* the cpu_op events summed */
  int cpu_unordered;           /* 1: a thread's ops came out of start order: no self times */
  gs_tev_cpu_thread *threads;
  size_t n_threads;
} gs_trace_events;

/* Frees everything; accepts a zeroed struct. */
void gs_trace_events_free(gs_trace_events *t);

/* The index of `name` in t's table, added when new; GS_ERR_NOMEM. */
gs_status gs_trace_events_intern(gs_trace_events *t, const char *name, uint32_t *out);

/* Appends `e`; GS_ERR_NOMEM. */
gs_status gs_trace_events_push(gs_trace_events *t, const gs_tev *e);

/* Adds one CPU op (name, start, duration in us) of host thread (pid,
 * tid) to the per-name totals. A thread's ops must come in start order
 * (Kineto writes them so) for the self times: an op inside the one open
 * before it on its thread is its child. Out of order, t->cpu_unordered is
 * set and only inclusive times stay right. GS_ERR_NOMEM. */
gs_status gs_trace_events_cpu_op(gs_trace_events *t, const char *name, double ts, double dur,
                                 double pid, double tid);

/* Closes every CPU op still open (at the end of the file). */
void gs_trace_events_cpu_done(gs_trace_events *t);

/* Sorts the events by start (then longer first), as every analysis wants. */
void gs_trace_events_sort(gs_trace_events *t);

/* Reads the PyTorch profiler (Kineto) trace `path`, streaming: the file's
 * text is never held, only the kept events (40 bytes each) and distinct
 * names. Strict: a malformed file is GS_ERR_FORMAT naming the file and the
 * byte offset; a file without traceEvents, or a gpuscale trace
 * (otherData.schema gpuscale/trace/v1: see *is_gpuscale), is refused the
 * same way unless `is_gpuscale` is given, which is then set to 1 and the
 * events left empty. Events come out sorted. */
gs_status gs_kineto_read(const char *path, gs_trace_events *out, int *is_gpuscale);

/* Tests: the same reader over `len` bytes of memory named `name`. */
gs_status gs_kineto_read_memory(const char *name, const void *data, size_t len,
                                gs_trace_events *out);

/* The events of rank `rank` of a gpuscale trace view (core/trace_model.h):
 * the spans of its CUPTI lanes (else its CUDA-event lanes, else its host
 * lane: the finest source the file has, never two) become kernels
 * (compute and communication spans, classed by their kind, not their
 * name) and memcpys (copy); frames and waits are left out. Each lane is a
 * stream. */
gs_status gs_trace_events_from_view(const gs_trace_view *v, int rank, const char *path,
                                    int measurement, gs_trace_events *out);

/* 1: `path` holds a trace (its top-level object starts with traceEvents,
 * schemaVersion, deviceProperties or distributedInfo), 0: something else
 * (a result document). Reads at most the first member's name. */
int gs_trace_file_sniff(const char *path);

#endif
