/* The human-readable summary of measurements printed after run, scale and
 * suite: one row per world size with latency, throughput, speedup,
 * efficiency and verification, then every warning about the numbers. */
#ifndef GS_SUMMARY_H
#define GS_SUMMARY_H

#include <stdio.h>

#include "core/result.h"
#include "core/format.h"
#include "measure/sweep.h"
#include "platform/telemetry.h"

/* Prints the table for `count` measurements of one workload. `env` names
 * the devices; `title` heads the table (e.g. the workload's options);
 * `samples_note` says what the samples are when they are not steps in
 * lockstep (a workload with its own timing loop: its driver's
 * samples_note), NULL for steps. */
void gs_summary_print(FILE *out, const char *title, const gs_measurement *ms, size_t count,
                      const gs_environment *env, const char *samples_note);

/* One line per measurement whose workload declares a bound: what its
 * median step achieved of the bound's peak with the fraction's 95%
 * interval (core/roofline.h), or why no
 * peak is known (cpu backend, an unknown GPU model). Nothing when none
 * declares a bound. */
void gs_summary_print_roofline(FILE *out, const gs_measurement *ms, size_t count);

/* Prints the GPU telemetry of the same measurements (tm: `count` entries,
 * parallel to ms): mean utilization, peak memory, mean power, SM clock and
 * the throttle reasons seen per GPU; or one line saying why there is none. */
void gs_summary_print_telemetry(FILE *out, const gs_measurement *ms, const gs_telemetry *tm,
                                size_t count);

/* The verdict of each series among `ms` (one sweep's measurements: a
 * series per variant and split policy, docs/report.md), by core/scaling's
 * rule: a table with one line per series (1-rank and verdict throughput,
 * speedup, efficiency, the verdict in words), then the verdict sentences,
 * word for word what `gpuscale report` says of the same file (`env`, may
 * be NULL: the host's cores, load and caches for a suspect verdict's
 * causes; `tm`, may be NULL: each measurement's telemetry, for its clocks
 * and the other processes on its GPUs; `scenario`, may be NULL: the
 * scenario of a request-based workload, named in the series label as the
 * report names it). Every speedup's interval is core/scaling's over the
 * measurements' run samples (steps, or request latencies: docs/statistics.md).
 * Series without a verdict are left out; prints nothing when none has one. */
void gs_decision_table_print(FILE *out, const gs_measurement *ms, const gs_telemetry *tm,
                             size_t count, const gs_environment *env, const char *scenario);

/* The observer of a sweep that prints each variant's table, telemetry and
 * split gains, then the workload driver's lines, a pipeline's block as
 * `gpuscale report` prints it for the document written (a workload whose
 * options hold a "pipeline": mlp --pp) and the single-vs-multi table, to
 * stdout and, when `copy` is not NULL, to `copy` too. */
gs_sweep_observer gs_summary_observer(FILE *copy);

#endif
