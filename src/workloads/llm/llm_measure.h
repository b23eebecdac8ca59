/* From llm scenario runs to the result document: the common measurement
 * shape (rank records whose samples are per-sample latencies, step
 * statistics over those latencies, throughput in generated tokens per
 * second) plus the llm members: the measurement's "scenario" and "llm"
 * objects and each rank record's "requests" (docs/result-schema.md). */
#ifndef GS_LLM_MEASURE_H
#define GS_LLM_MEASURE_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "workloads/run_config.h"
#include "core/result.h"
#include "core/slo.h"
#include "workloads/llm/llm_options.h"
#include "workloads/llm/llm_pp_report.h"
#include "workloads/llm/scenario.h"

/* Fills *m (caller frees with gs_measurement_free) from n_runs runs of one
 * configuration. `verification` has world_size entries (one per rank) or is
 * NULL when nothing was verified. */
gs_status gs_llm_measurement_fill(const gs_llm_options *o, const gs_run_config *config,
                                  const gs_llm_run_result *runs, size_t n_runs,
                                  const gs_verification *verification, gs_measurement *m);

/* Sets m's throughput (generated tokens of every run over the runs'
 * seconds) and cold-start ratio (the slowest replica's cold start over the
 * median sample, m->aggregate.step already computed) from its n_runs
 * scenario runs, and a CPU measurement's verification detail: fill's
 * definitions, applied again when an interleaved sweep has merged a later
 * run into m (by the runner's rules). */
void gs_llm_measurement_totals(const gs_llm_run_result *runs, size_t n_runs, gs_measurement *m);

/* Request outcomes of a set of samples: counts, token rate, and the
 * statistics of the counted samples (ok and not cold); a gs_stats with
 * n == 0 has no samples (JSON null). */
typedef struct {
  uint64_t samples, ok, timed_out, failed;
  uint64_t generated_tokens;      /* of ok samples */
  double success_rate;            /* ok / samples; NaN when there are none */
  double tokens_per_second;       /* generated tokens / the seconds given; NaN when none */
  gs_stats ttft, tpot, latency;   /* seconds */
} gs_llm_outcome;

/* One rank (replica) over all runs. */
typedef struct {
  int rank;
  int device;                     /* its first GPU; -1 on the CPU backend */
  int devices[GS_MAX_RANKS];      /* all tensor_parallel GPUs when that is > 1 */
  gs_llm_outcome outcome;         /* tokens_per_second over busy_seconds */
  double busy_seconds;
} gs_llm_rank_summary;

/* The typed "llm" member of one measurement: what the document's "llm"
 * object holds (docs/result-schema.md) and what the terminal paragraph
 * prints. Non-finite values are NaN ("null" in the document). */
typedef struct {
  gs_llm_scenario_kind scenario;
  int world_size;                 /* of the measurement */
  gs_status status;               /* of the measurement */
  uint64_t parameters;
  uint64_t decode_weight_bytes;
  gs_llm_dispatch dispatch;
  uint64_t batch;                 /* 1 for single-stream */
  gs_llm_outcome total;           /* tokens_per_second over the run seconds */
  int weight_stream;              /* 1: the figures below were measured (a TPOT median) */
  double weight_bytes_per_second; /* decode weight bytes / median TPOT, per replica */
  double roofline_fraction;       /* of tp x the first GPU's peak bandwidth; NaN unknown */
  /* The two above at the ends of the TPOT median's 95% interval
   * (core/roofline.h, gs_roofline_rate_interval); NaN when there is none. */
  double weight_bytes_per_second_low, weight_bytes_per_second_high;
  double roofline_fraction_low, roofline_fraction_high;
  int tpot_too_few;               /* 1: too few TPOT samples for the interval */
  const char *peak_why;           /* static: why the peak is not known; NULL when it is */
  struct {
    double target_rate, achieved_rate; /* samples/s */
    double ttft_bound, tpot_bound, ttft_p99, tpot_p99; /* seconds */
    int bounds_met;
  } server;                       /* server scenario only */
  double latency_p90;             /* single-stream only */
  gs_slo slo;                     /* --slo; none when not given */
  gs_slo_goodput goodput;         /* against slo, over the not-cold requests of all runs */
  int tensor_parallel;
  int gpus_per_replica;           /* tensor_parallel x pipeline stages */
  gs_llm_pp_summary pipeline;     /* --pp: the stages' busy and idle time */
  int n_ranks;
  gs_llm_rank_summary ranks[GS_MAX_RANKS];
} gs_llm_summary;

/* Computes the summary of measurement *m (filled by
 * gs_llm_measurement_fill) from its n_runs scenario runs.
 * `peak_bandwidth` (bytes/s of the first GPU, 0 = unknown) gives the
 * roofline fraction, its interval from the TPOT median's. GS_ERR_NOMEM
 * when the samples cannot be gathered. */
gs_status gs_llm_summary_compute(const gs_llm_options *o, const gs_llm_run_result *runs,
                                 size_t n_runs, const gs_measurement *m, double peak_bandwidth,
                                 gs_llm_summary *out);

/* Goodput against `slo` of the requests of n_runs runs that are not cold,
 * over the runs' seconds (core/slo; the runs are the bootstrap's groups).
 * GS_ERR_NOMEM when the requests cannot be gathered. */
gs_status gs_llm_goodput(const gs_slo *slo, const gs_llm_run_result *runs, size_t n_runs,
                         gs_slo_goodput *out);

/* Adds "scenario" and "llm" (from *s) and each rank record's "requests"
 * (from `runs`) to `mjson`, the measurement object that
 * gs_result_add_measurement wrote for the same measurement. */
gs_status gs_llm_measurement_annotate(cJSON *mjson, const gs_llm_summary *s,
                                      const gs_llm_run_result *runs, size_t n_runs);

/* One paragraph per measurement for the terminal, from its summary:
 * tokens/s, sample outcomes, TTFT, TPOT and per-request latency
 * percentiles, the weight stream, server bounds, per-rank figures, and the
 * goodput against the latency targets, and the reminder that the weights
 * are random. */
void gs_llm_measurement_print(FILE *out, const gs_llm_summary *s);

#endif
