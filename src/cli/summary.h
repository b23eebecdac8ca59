/* The human-readable summary of measurements printed after run, scale and
 * suite: one row per world size with latency, throughput, speedup,
 * efficiency and verification, then every warning about the numbers. */
#ifndef GS_SUMMARY_H
#define GS_SUMMARY_H

#include <stdio.h>

#include "core/result.h"
#include "platform/telemetry.h"

/* Prints the table for `count` measurements of one workload. `env` names
 * the devices; `title` heads the table (e.g. the workload's options). */
void gs_summary_print(FILE *out, const char *title, const gs_measurement *ms, size_t count,
                      const gs_environment *env);

/* Prints the GPU telemetry of the same measurements (tm: `count` entries,
 * parallel to ms): mean utilization, peak memory, mean power, SM clock and
 * the throttle reasons seen per GPU; or one line saying why there is none. */
void gs_summary_print_telemetry(FILE *out, const gs_measurement *ms, const gs_telemetry *tm,
                                size_t count);

/* Formats seconds with a unit chosen for 3-4 significant digits ("1.23 ms"). */
void gs_format_seconds(double seconds, char *buf, size_t size);

/* Formats a rate with an SI prefix ("6.48 G"). */
void gs_format_rate(double per_second, char *buf, size_t size);

#endif
