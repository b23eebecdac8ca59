/* CUPTI's Activity API, loaded at run time like NVML (never required):
 * the kernels and copies that ran on each GPU inside the recorded steps of
 * a trace, with their names and streams (docs/timeline.md). Used by
 * platform/trace.c only. */
#ifndef GS_PLATFORM_CUPTI_H
#define GS_PLATFORM_CUPTI_H

#include <stddef.h>

#include "core/trace_model.h"

/* Starts collecting activity records (once per process; later calls say
 * whether it is collecting). 0 with the reason in `why` when CUPTI cannot
 * be loaded or refuses (e.g. another profiler holds it). Main thread. */
int gs_cupti_start(char *why, size_t why_size);

/* Turns activity recording on from now until gs_cupti_collect, so that
 * the graphs a workload captures while it sets up are known to CUPTI when
 * their kernels later run in a recorded step. It stays on between recorded
 * steps: turned off and on again, CUPTI timed the kernels of a replayed
 * CUDA graph with ends up to 300 ms after their starts (H100, CUDA 13).
 * Main thread, before the measurement's ranks start. */
void gs_cupti_arm(void);

/* Opens (open 1) or closes (0) the window of rank `r`'s recorded step
 * (r->run, r->step) on its CUDA device at monotonic time `host_seconds`:
 * only records that start inside a window are kept, for the window's rank
 * and step. The rank's thread; no-op while not collecting. */
void gs_cupti_window(gs_trace_rank *r, double host_seconds, int open);

/* Flushes CUPTI's buffers and moves the kept records into the device
 * lanes of the ranks of `t` whose windows hold them (one lane per CUDA
 * stream), and turns recording off. Main thread, after the ranks ended and
 * before any rank of `t` is freed. */
void gs_cupti_collect(gs_trace *t);

#endif
