/* The human-readable summary of measurements printed after run, scale and
 * suite: one row per world size with latency, throughput, speedup,
 * efficiency and verification, then every warning about the numbers. */
#ifndef GS_SUMMARY_H
#define GS_SUMMARY_H

#include <stdio.h>

#include "core/result.h"

/* Prints the table for `count` measurements of one workload. `env` names
 * the devices; `title` heads the table (e.g. the workload's options). */
void gs_summary_print(FILE *out, const char *title, const gs_measurement *ms, size_t count,
                      const gs_environment *env);

/* Formats seconds with a unit chosen for 3-4 significant digits ("1.23 ms"). */
void gs_format_seconds(double seconds, char *buf, size_t size);

/* Formats a rate with an SI prefix ("6.48 G"). */
void gs_format_rate(double per_second, char *buf, size_t size);

#endif
