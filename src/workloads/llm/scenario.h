/* The llm scenario driver: runs a request stream through one model replica
 * per rank (one host thread per GPU, or CPU workers), the way MLPerf
 * LoadGen's scenarios issue it, and records every sample.
 *   offline       all samples arrive at once; replicas batch them (throughput)
 *   server        Poisson arrivals at a target rate; a replica takes what has
 *                 arrived, up to the batch size (latency against bounds)
 *   single-stream one sample at a time per replica; the next is issued when
 *                 the previous finishes (p90 latency)
 * A batch is prefilled together, then decoded one token per sequence per
 * step; sequences are ordered by output length so the decode batch shrinks
 * as they finish. Each replica first runs --warmup untimed batches; the first
 * of them is its cold start. Results go into a gs_measurement by
 * llm_measure.c. */
#ifndef GS_LLM_SCENARIO_H
#define GS_LLM_SCENARIO_H

#include <stddef.h>
#include <stdint.h>

#include "core/arrival.h"
#include "workloads/run_config.h"
#include "workloads/llm/engine.h"
#include "workloads/llm/requests.h"

typedef enum { GS_LLM_OFFLINE = 0, GS_LLM_SERVER, GS_LLM_SINGLE_STREAM } gs_llm_scenario_kind;
typedef enum { GS_LLM_DISPATCH_STATIC = 0, GS_LLM_DISPATCH_DYNAMIC } gs_llm_dispatch;
typedef enum { GS_LLM_REQ_OK = 0, GS_LLM_REQ_TIMED_OUT, GS_LLM_REQ_FAILED } gs_llm_request_status;

extern const char *const gs_llm_scenario_names[]; /* offline, server, single-stream */
extern const char *const gs_llm_dispatch_names[]; /* static, dynamic */
const char *gs_llm_request_status_name(gs_llm_request_status s);

typedef struct {
  gs_llm_engine_config engine; /* max_batch = batch (1 for single-stream) */
  gs_llm_scenario_kind scenario;
  gs_llm_dispatch dispatch;
  gs_llm_stream_spec stream; /* rate is used by the server scenario only */
  double timeout;            /* seconds per sample from arrival; 0 = none */
  uint64_t max_concurrency;  /* server: requests in flight at most, all replicas; 0 = no cap.
                                A request is issued when it is due and a slot is free: its
                                arrival is then (the times count from it) */
  uint64_t warmup;           /* untimed batches per replica before the clock */
  int arrival_times;         /* with tp >= 2: record the shards' arrivals (the run's
                                --arrival-times; on GPUs only without --pp) */
} gs_llm_scenario_config;

/* What happened to one sample. Times are seconds; NaN = not reached. */
typedef struct {
  uint32_t id;
  uint32_t input_tokens;
  uint32_t output_tokens; /* generated (the target when ok) */
  int rank;
  double arrival, start, first_token, finish; /* since the scenario start */
  double ttft, tpot, latency;
  gs_llm_request_status status;
  int cold; /* processed in the replica's cold batch */
} gs_llm_request_record;

/* One replica's part of one scenario run. */
typedef struct {
  int rank;
  int device;
  gs_status status;
  char error[1024];
  double cold_seconds; /* first warmup batch end to end; < 0 = none */
  size_t n_requests;
  gs_llm_request_record *requests; /* in completion order; owned */
  uint64_t forward_passes;         /* prefills + decode steps */
  uint64_t generated_tokens;       /* by ok samples */
  double busy_seconds;             /* first batch start to last batch end */
  /* Pipeline stages (--pp; 1 without): the seconds each stage computed and
   * the seconds of the replica's prefill and decode calls, after warm-up
   * (engine.h, gs_llm_engine_stage_seconds). */
  uint32_t stages;
  double stage_busy[GS_LLM_MAX_STAGES];
  double pass_seconds;
  /* The same per call, bounded (llm_pp_samples.h); NULL where the stages
   * are other processes (under a launcher); owned. */
  struct gs_llm_pp_samples *pp_samples;
} gs_llm_replica_result;

typedef struct {
  double seconds; /* scenario start to the last sample's end */
  int world_size;
  gs_llm_replica_result *replicas; /* world_size; owned */
  /* With tp >= 2 shards on the CPU backend (threads of this process, or
   * processes under a launcher, gathered after the run): one group per
   * replica and pipeline stage, group replica * pp + stage, each shard's
   * arrival at the collectives of every timed prefill and decode (after
   * warm-up; shard k of the stage = the group's rank k); else NULL; owned. */
  gs_llm_arrival_group *arrivals;
  size_t n_arrivals;
} gs_llm_run_result;

/* Runs one scenario over the ranks of `run` (backend, world_size, devices).
 * Fills *out even when replicas fail (their samples are "failed"). Returns
 * GS_OK or the first replica error. */
gs_status gs_llm_scenario_run(const gs_llm_scenario_config *config, const gs_run_config *run,
                              gs_llm_run_result *out);

void gs_llm_run_result_free(gs_llm_run_result *r);

#endif
