/* MLPerf LoadGen logs read into a plain struct: the summary
 * (mlperf_log_summary.txt, "key : value" text) and the detail log
 * (mlperf_log_detail.txt, one ":::MLLOG {json}" record per line). Parsers
 * work on a buffer and never touch files, so they can be fuzzed. What each
 * line maps to is documented in docs/ingest.md. */
#ifndef GS_INGEST_MLPERF_H
#define GS_INGEST_MLPERF_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define GS_MLPERF_MAX_PERCENTILES 16
#define GS_MLPERF_TEXT 256

typedef enum {
  GS_MLPERF_SCENARIO_UNKNOWN = 0,
  GS_MLPERF_SINGLE_STREAM,
  GS_MLPERF_MULTI_STREAM,
  GS_MLPERF_SERVER,
  GS_MLPERF_OFFLINE
} gs_mlperf_scenario;

/* A latency distribution as LoadGen summarises it; NAN = not given. */
typedef struct {
  double min_ns, max_ns, mean_ns;
  size_t n_percentiles;
  double percentile[GS_MLPERF_MAX_PERCENTILES]; /* e.g. 99.9 */
  double value_ns[GS_MLPERF_MAX_PERCENTILES];
  /* The line each value was read from (0: not read), for errors. */
  size_t min_line, max_line, mean_line;
  size_t value_line[GS_MLPERF_MAX_PERCENTILES];
} gs_mlperf_latency;

/* Everything gpuscale takes from one LoadGen run. Numbers are NAN, flags
 * -1 and strings "" when the log does not give them. */
typedef struct {
  char sut_name[GS_MLPERF_TEXT];
  gs_mlperf_scenario scenario;
  char mode[64];                       /* "PerformanceOnly", ... */
  char loadgen_version[GS_MLPERF_TEXT];
  char test_datetime[64];
  int valid;                           /* "Result is : VALID" = 1, INVALID = 0 */
  int min_duration_met, min_queries_met, perf_constraints_met, early_stopping_met;
  char invalid_reason[GS_MLPERF_TEXT];
  double samples_per_second;           /* Offline */
  double completed_samples_per_second; /* Server */
  double scheduled_samples_per_second; /* Server */
  double qps_with_loadgen_overhead;    /* SingleStream */
  double qps_without_loadgen_overhead; /* SingleStream */
  double tokens_per_second;            /* LLM benchmarks */
  double completed_tokens_per_second;
  double target_percentile;            /* e.g. 90 for "90th percentile latency (ns)" */
  double target_latency_ns;
  int64_t query_count;                 /* -1 = unknown */
  gs_mlperf_latency latency;           /* per sample (per query in MultiStream) */
  gs_mlperf_latency first_token;       /* time to first token */
  gs_mlperf_latency time_per_output_token;
  size_t n_errors;                     /* detail records flagged is_error */
  char first_error[GS_MLPERF_TEXT];
} gs_mlperf_log;

/* Sets every member to "not given". */
void gs_mlperf_log_init(gs_mlperf_log *log);

/* Parses a summary (`size` bytes, need not be NUL-terminated). `source`
 * names the file in errors, which are recorded (gs_error, not
 * printed) as "SOURCE:LINE: what was wrong (what was expected)".
 * Returns GS_OK or GS_ERR_FORMAT. */
gs_status gs_mlperf_parse_summary(const char *data, size_t size, const char *source,
                                  gs_mlperf_log *out);

/* Parses a detail log the same way: ":::MLLOG" records, each a JSON object
 * with "key", "value" and "time_ms"; other lines are LoadGen's plain-text
 * notes and are skipped. */
gs_status gs_mlperf_parse_detail(const char *data, size_t size, const char *source,
                                 gs_mlperf_log *out);

/* Takes into `into` (the summary) every member `from` (the detail log)
 * gives: the detail log has the full-precision numbers where the summary
 * rounds them. Contradictions (scenario, mode, validity, and a number
 * both give that differs by more than the summary's rounding:
 * gs_mlperf_check_agree) are errors naming both sources. */
gs_status gs_mlperf_merge(gs_mlperf_log *into, const gs_mlperf_log *from, const char *into_source,
                          const char *from_source);

/* "Offline" / "offline" etc.; "unknown" for GS_MLPERF_SCENARIO_UNKNOWN. */
const char *gs_mlperf_scenario_loadgen_name(gs_mlperf_scenario s);
const char *gs_mlperf_scenario_name(gs_mlperf_scenario s);

/* The run's throughput in samples per second by its scenario's rule
 * (docs/ingest.md), NAN when the scenario has none. */
double gs_mlperf_throughput(const gs_mlperf_log *log);

#endif
