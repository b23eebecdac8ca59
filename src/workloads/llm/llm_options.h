/* Options of the llm workload: the model (a preset, every dimension
 * overridable), the request stream, the scenario and dispatch, and the
 * engine's knobs. gs_workload_llm exposes them through the workload
 * interface's option functions (for the result document's config); the
 * llm is measured through its driver hooks, not by the fixed-step runner
 * (docs/workloads/llm.md). */
#ifndef GS_LLM_OPTIONS_H
#define GS_LLM_OPTIONS_H

#include "core/options.h"
#include "core/parse.h"
#include "core/slo.h"
#include "workloads/llm/scenario.h"
#include "workloads/workload.h"

#define GS_LLM_OPTION_COUNT 38

typedef struct {
  int preset; /* index into gs_llm_presets */
  uint64_t hidden, layers, heads, kv_heads, ffn, vocab;
  double rope_theta;
  int given_hidden, given_layers, given_heads, given_kv_heads, given_ffn, given_vocab,
      given_rope_theta;
  int scenario, dispatch;
  uint64_t batch, samples;
  uint64_t input_min, input_max, output_min, output_max;
  double rate;                   /* server: samples per second, all replicas together */
  double ttft_bound, tpot_bound; /* server: p99 bounds in seconds */
  double timeout;                /* per sample, seconds; 0 = none */
  int no_graphs;
  int no_overlap;
  int decode_gemm; /* gs_llm_decode_gemm */
  uint64_t tp;     /* GPUs (or CPU ranks) per replica: tensor parallelism */
  uint64_t pp;     /* pipeline stages per replica (llm_pp.h), each of tp GPUs */
  uint64_t micro_batches; /* --micro-batches: a call's sequences cut into M (0: one per stage) */
  gs_u64_list stage_bounds; /* --stages: first layer of stages 1 .. pp-1 */
  int given_pp, given_micro_batches, given_stages;
  const char *slo_text; /* --slo as given, or NULL */
  gs_slo slo;           /* parsed from slo_text by the options check; none when not given */
  double slo_percentile; /* --slo-percentile: the percentile a rate must meet the targets at */
  int arrival;           /* gs_llm_arrival */
  double burstiness;     /* gamma's shape */
  uint64_t max_concurrency; /* requests in flight at most, all replicas; 0 = no cap */
  gs_double_list rates;  /* --rates: server rates measured in turn */
  int find_max_rate;     /* --find-max-rate: search the highest rate meeting the targets */
  int given_arrival, given_burstiness, given_max_concurrency, given_slo_percentile;
  int layouts;           /* --layouts: every tp x pp of the run's ranks */
  gs_u64_list layout_tp; /* the degrees measured (set by the driver's configure) */
  gs_u64_list layout_pp; /* per layout_tp entry: its pipeline stages */
  int given_tp;
  int given_model, given_batch, given_rate, given_ttft_bound, given_tpot_bound;
  gs_option table[GS_LLM_OPTION_COUNT];
} gs_llm_options;

/* The llm entry of the workload interface: key, texts, the option
 * functions and the driver hooks (llm_driver.h); work_units, cost, setup,
 * step, verify and teardown are NULL: the scenario driver measures it. */
extern const gs_workload gs_workload_llm;

/* Largest model the CPU backend accepts (its reference is plain loops). */
#define GS_LLM_CPU_MAX_PARAMETERS UINT64_C(200000000)

/* Fits the options to the backend: on the CPU the default model becomes
 * the tiny preset (with a note); a model given explicitly that is larger
 * than GS_LLM_CPU_MAX_PARAMETERS is a usage error naming --model. */
gs_status gs_llm_options_for_backend(gs_llm_options *o, gs_backend backend);

/* The model shape the options describe (preset plus overrides). */
gs_llm_shape gs_llm_options_shape(const gs_llm_options *o);

/* GPUs (CPU ranks) of one replica: tp x pp. */
static inline uint64_t gs_llm_options_replica_ranks(const gs_llm_options *o) {
  return (o->tp ? o->tp : 1) * (o->pp ? o->pp : 1);
}

/* The scenario configuration for one measurement at run->world_size
 * ranks: seed and warm-up batches from `run`; with weak scaling the stream
 * has --samples per rank. */
void gs_llm_options_scenario(const gs_llm_options *o, const gs_run_config *run,
                             gs_llm_scenario_config *out);

#endif
