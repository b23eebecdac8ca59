/* Options of the llm workload (see llm_options.h). */
#include "workloads/llm/llm_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/json.h"
#include "workloads/llm/llm_driver.h"
#include "workloads/llm/llm_pp.h"

static const char *const preset_choices[] = {"llama-8b", "llama-1b", "tiny", NULL};

static void *gs_llm_options_new(void) {
  gs_llm_options *o = calloc(1, sizeof *o);
  if (!o) return NULL;
  o->preset = 0;
  // The first preset's values, shown by --help; the chosen preset's apply
  // to every dimension not given (gs_llm_options_shape).
  const gs_llm_shape *p = &gs_llm_presets[0].shape;
  o->hidden = p->hidden;
  o->layers = p->layers;
  o->heads = p->heads;
  o->kv_heads = p->kv_heads;
  o->ffn = p->ffn;
  o->vocab = p->vocab;
  o->rope_theta = p->rope_theta;
  o->scenario = GS_LLM_OFFLINE;
  o->dispatch = GS_LLM_DISPATCH_STATIC;
  o->batch = 8;
  o->samples = 64;
  o->input_min = 59;
  o->input_max = 71;
  o->output_min = 27;
  o->output_max = 32;
  o->rate = 4.0;
  o->ttft_bound = 2.0;
  o->tpot_bound = 0.2;
  o->decode_gemm = GS_LLM_GEMM_AUTO;
  o->tp = 1;
  o->pp = 1;
  gs_slo_none(&o->slo);
  o->slo_percentile = GS_SLO_DEFAULT_PERCENTILE;
  o->arrival = GS_LLM_ARRIVAL_POISSON;
  o->burstiness = 1.0;
  const gs_option table[] = {
      {.name = "model", .kind = GS_OPT_CHOICE, .target = &o->preset, .choices = preset_choices,
       .metavar = "PRESET",
       .help = "model shape: llama-8b, llama-1b or tiny (the CPU backend's default)",
       .given = &o->given_model},
      {.name = "hidden", .kind = GS_OPT_COUNT, .target = &o->hidden, .min = 8, .max = 65536,
       .metavar = "N", .help = "model width, a multiple of 8 (default: the --model preset's)",
       .given = &o->given_hidden},
      {.name = "layers", .kind = GS_OPT_COUNT, .target = &o->layers, .min = 1, .max = 1024,
       .metavar = "N", .help = "decoder layers (default: the --model preset's)",
       .given = &o->given_layers},
      {.name = "heads", .kind = GS_OPT_COUNT, .target = &o->heads, .min = 1, .max = 1024,
       .metavar = "N", .help = "query heads (default: the --model preset's)",
       .given = &o->given_heads},
      {.name = "kv-heads", .kind = GS_OPT_COUNT, .target = &o->kv_heads, .min = 1, .max = 1024,
       .metavar = "N", .help = "key/value heads, divides --heads (default: the --model preset's)",
       .given = &o->given_kv_heads},
      {.name = "ffn", .kind = GS_OPT_COUNT, .target = &o->ffn, .min = 8, .max = 1048576,
       .metavar = "N",
       .help = "SwiGLU inner width, a multiple of 8 (default: the --model preset's)",
       .given = &o->given_ffn},
      {.name = "vocab", .kind = GS_OPT_COUNT, .target = &o->vocab, .min = 2, .max = 1048576,
       .metavar = "N", .help = "vocabulary size (default: the --model preset's)",
       .given = &o->given_vocab},
      {.name = "rope-theta", .kind = GS_OPT_DOUBLE, .target = &o->rope_theta, .dmin = 1.0,
       .dmax = 1e12, .metavar = "T",
       .help = "rotary embedding base (default: the --model preset's)",
       .given = &o->given_rope_theta},
      {.name = "scenario", .kind = GS_OPT_CHOICE, .target = &o->scenario,
       .choices = gs_llm_scenario_names, .metavar = "S",
       .help = "offline (throughput), server (Poisson arrivals) or single-stream"},
      {.name = "dispatch", .kind = GS_OPT_CHOICE, .target = &o->dispatch,
       .choices = gs_llm_dispatch_names, .metavar = "D",
       .help = "static: even split of the samples over replicas; dynamic: shared queue"},
      {.name = "batch", .kind = GS_OPT_COUNT, .target = &o->batch, .min = 1,
       .max = GS_LLM_MAX_BATCH, .metavar = "N", .help = "sequences per batch (single-stream: 1)",
       .given = &o->given_batch},
      {.name = "samples", .kind = GS_OPT_COUNT, .target = &o->samples, .min = 1,
       .max = 10000000, .metavar = "N", .help = "samples in the stream (all replicas together)"},
      {.name = "input-min", .kind = GS_OPT_COUNT, .target = &o->input_min, .min = 1, .max = 1 << 20,
       .metavar = "N", .help = "shortest prompt in tokens"},
      {.name = "input-max", .kind = GS_OPT_COUNT, .target = &o->input_max, .min = 1, .max = 1 << 20,
       .metavar = "N", .help = "longest prompt in tokens"},
      {.name = "output-min", .kind = GS_OPT_COUNT, .target = &o->output_min, .min = 1,
       .max = 1 << 20, .metavar = "N", .help = "fewest generated tokens"},
      {.name = "output-max", .kind = GS_OPT_COUNT, .target = &o->output_max, .min = 1,
       .max = 1 << 20, .metavar = "N", .help = "most generated tokens"},
      {.name = "rate", .kind = GS_OPT_DOUBLE, .target = &o->rate, .dmin = 1e-6, .dmax = 1e9,
       .metavar = "R", .help = "server: target arrivals per second (all replicas)",
       .given = &o->given_rate},
      {.name = "ttft-bound", .kind = GS_OPT_DOUBLE, .target = &o->ttft_bound, .dmin = 1e-9,
       .dmax = 1e9, .metavar = "SEC", .help = "server: bound on the p99 time to first token",
       .given = &o->given_ttft_bound},
      {.name = "tpot-bound", .kind = GS_OPT_DOUBLE, .target = &o->tpot_bound, .dmin = 1e-9,
       .dmax = 1e9, .metavar = "SEC", .help = "server: bound on the p99 time per output token",
       .given = &o->given_tpot_bound},
      {.name = "sample-timeout", .kind = GS_OPT_DOUBLE, .target = &o->timeout, .dmin = 0.0,
       .dmax = 1e9, .metavar = "SEC",
       .help = "a sample not done this long after arrival is timed out (0: none)"},
      {.name = "no-graphs", .kind = GS_OPT_FLAG, .target = &o->no_graphs,
       .help = "CUDA: launch decode kernels one by one instead of replaying a CUDA graph"},
      {.name = "no-overlap", .kind = GS_OPT_FLAG, .target = &o->no_overlap,
       .help = "CUDA: start each kernel only when the previous one has ended (default on "
               "sm_90+: the next one starts early and streams its weights meanwhile)"},
      {.name = "decode-gemm", .kind = GS_OPT_CHOICE, .target = &o->decode_gemm,
       .choices = gs_llm_decode_gemm_names, .metavar = "K",
       .help = "CUDA: linear layers of <= 16 rows: auto (mma where K is a multiple of 64, "
               "else simt up to 8 rows), simt (<= 8 rows), mma or cublas (cuBLASLt)"},
      {.name = "tp", .kind = GS_OPT_COUNT, .target = &o->tp, .min = 1, .max = 64,
       .metavar = "N",
       .help = "tensor parallelism: each replica splits heads, FFN and vocabulary over N GPUs "
               "(all-reduce after attention and MLP); replicas = GPUs / N; under a launcher "
               "the shards are N consecutive processes",
       .given = &o->given_tp},
      {.name = "pp", .kind = GS_OPT_COUNT, .target = &o->pp, .min = 1, .max = GS_LLM_MAX_STAGES,
       .metavar = "P",
       .help = "pipeline parallelism: each replica's decoder layers split into P stages of --tp "
               "GPUs each, a batch moving through them as micro-batches; replicas = GPUs / (tp x P)",
       .given = &o->given_pp},
      {.name = "micro-batches", .kind = GS_OPT_COUNT, .target = &o->micro_batches, .min = 1,
       .max = GS_LLM_MAX_BATCH, .metavar = "M",
       .help = "with --pp: each prefill and decode step's sequences cut into M micro-batches, at "
               "most --batch (default: one per stage)",
       .given = &o->given_micro_batches},
      {.name = "stages", .kind = GS_OPT_COUNT_LIST, .target = &o->stage_bounds, .min = 1,
       .max = 1024, .metavar = "L1,L2,...",
       .help = "with --pp: first layer of stages 1..P-1 (default: equal stages)",
       .given = &o->given_stages},
      {.name = "slo", .kind = GS_OPT_STRING, .target = &o->slo_text, .metavar = "TARGETS",
       .help = "latency targets for goodput: ttft=DUR,tpot=DUR,latency=DUR (any subset; "
               "DUR with s, ms or us) or a preset: conversational (MLPerf Llama-3.1-8B: TTFT "
               "2 s, TPOT 100 ms) or interactive (500 ms, 30 ms)"},
      {.name = "slo-percentile", .kind = GS_OPT_DOUBLE, .target = &o->slo_percentile,
       .dmin = 1.0, .dmax = 100.0, .metavar = "P",
       .help = "the percentile of each targeted latency that must meet its target for a rate "
               "to count as met (default 99, MLPerf's server tail)",
       .given = &o->given_slo_percentile},
      {.name = "arrival", .kind = GS_OPT_CHOICE, .target = &o->arrival,
       .choices = gs_llm_arrival_names, .metavar = "A",
       .help = "server: gaps between arrivals: poisson (default), gamma (--burstiness) or "
               "constant (1 / rate)",
       .given = &o->given_arrival},
      {.name = "burstiness", .kind = GS_OPT_DOUBLE, .target = &o->burstiness, .dmin = 1e-3,
       .dmax = 1e3, .metavar = "F",
       .help = "--arrival gamma: the gaps' shape; 1 = Poisson, below 1 burstier, above more "
               "even (default 1)",
       .given = &o->given_burstiness},
      {.name = "max-concurrency", .kind = GS_OPT_COUNT, .target = &o->max_concurrency,
       .min = 1, .max = 1000000, .metavar = "N",
       .help = "server: at most N requests in flight (all replicas); a request is issued when "
               "it is due and a slot is free, and its times count from then",
       .given = &o->given_max_concurrency},
      {.name = "rates", .kind = GS_OPT_DOUBLE_LIST, .target = &o->rates, .dmin = 1e-6,
       .dmax = 1e9, .metavar = "R,R,...",
       .help = "server with --slo: measure each rate in turn and report each one's goodput and "
               "whether it met the targets"},
      {.name = "find-max-rate", .kind = GS_OPT_FLAG, .target = &o->find_max_rate,
       .help = "server with --slo: search the highest rate whose --slo-percentile latencies "
               "meet the targets (from --rate; at most 8 rates, within 5%)"},
      {.name = "layouts", .kind = GS_OPT_FLAG, .target = &o->layouts,
       .help = "run: measure every layout of the run's G GPUs in one sweep: G / (T x P) "
               "replicas of --tp T --pp P for each T x P that divides G, T splitting the model "
               "and P its layers; the frontier of tokens/s per user against tokens/s per GPU and "
               "the best layout meeting --slo"},
      {.name = NULL, .kind = GS_OPT_END},
  };
  _Static_assert(sizeof table <= sizeof o->table, "option table size");
  memcpy(o->table, table, sizeof table);
  return o;
}

static void gs_llm_options_free(void *opts) { free(opts); }

static const gs_option *gs_llm_options_table(void *opts) { return ((gs_llm_options *)opts)->table; }

gs_llm_shape gs_llm_options_shape(const gs_llm_options *o) {
  gs_llm_shape s = gs_llm_presets[o->preset].shape;
  if (o->given_hidden) s.hidden = o->hidden;
  if (o->given_layers) s.layers = o->layers;
  if (o->given_heads) s.heads = o->heads;
  if (o->given_kv_heads) s.kv_heads = o->kv_heads;
  if (o->given_ffn) s.ffn = o->ffn;
  if (o->given_vocab) s.vocab = o->vocab;
  if (o->given_rope_theta) s.rope_theta = o->rope_theta;
  return s;
}

/* The serving options: arrivals, the cap, rate sweeps and the search
 * belong to the server scenario; sweeps and the search need targets. */
static gs_status gs_llm_options_check_serving(const gs_llm_options *o) {
  const int server = o->scenario == GS_LLM_SERVER;
  if (!server && (o->given_arrival || o->given_burstiness || o->given_max_concurrency ||
                  o->rates.n || o->find_max_rate))
    return gs_error(GS_ERR_USAGE, "options --arrival, --burstiness, --max-concurrency, --rates "
                    "and --find-max-rate belong to --scenario server");
  if (o->given_burstiness && o->arrival != GS_LLM_ARRIVAL_GAMMA)
    return gs_error(GS_ERR_USAGE, "option --burstiness: only with --arrival gamma");
  if ((o->rates.n || o->find_max_rate) && !gs_slo_any(&o->slo))
    return gs_error(GS_ERR_USAGE, "option %s: needs latency targets (--slo) to judge each rate",
                    o->rates.n ? "--rates" : "--find-max-rate");
  if (o->rates.n && (o->find_max_rate || o->given_rate))
    return gs_error(GS_ERR_USAGE, "option --rates: not with %s",
                    o->find_max_rate ? "--find-max-rate" : "--rate");
  if (o->given_slo_percentile && !o->slo_text)
    return gs_error(GS_ERR_USAGE, "option --slo-percentile: needs --slo");
  return GS_OK;
}

/* --pp, --micro-batches and --stages: the split must exist, the
 * micro-batches need --pp and a sequence each. */
static gs_status gs_llm_options_check_pipeline(const gs_llm_options *o, const gs_llm_shape *s) {
  if (o->pp == 1) {
    if (o->given_micro_batches) return gs_error(GS_ERR_USAGE, "option --micro-batches: needs --pp above 1");
    if (o->given_stages) return gs_error(GS_ERR_USAGE, "option --stages: needs --pp above 1");
    return GS_OK;
  }
  uint32_t first[GS_LLM_MAX_STAGES + 1];
  GS_TRY(gs_llm_pp_split(s->layers, (uint32_t)o->pp, o->stage_bounds.v, o->stage_bounds.n, first));
  const uint64_t batch = o->scenario == GS_LLM_SINGLE_STREAM ? 1 : o->batch;
  if (o->given_micro_batches && o->micro_batches > batch)
    return gs_error(GS_ERR_USAGE, "option --micro-batches %llu: a batch of %llu sequences has "
                    "fewer (each micro-batch needs one)", (unsigned long long)o->micro_batches,
                    (unsigned long long)batch);
  if (o->layouts)
    return gs_error(GS_ERR_USAGE, "option --layouts: measures every --pp itself; not with --pp");
  return GS_OK;
}

static gs_status gs_llm_options_check(void *opts) {
  gs_llm_options *o = opts;
  gs_llm_shape s = gs_llm_options_shape(o);
  if (s.hidden % 8 != 0)
    return gs_error(GS_ERR_USAGE, "option --hidden: %llu is not a multiple of 8",
                    (unsigned long long)s.hidden);
  if (s.ffn % 8 != 0)
    return gs_error(GS_ERR_USAGE, "option --ffn: %llu is not a multiple of 8",
                    (unsigned long long)s.ffn);
  if (s.hidden % s.heads != 0 || (s.hidden / s.heads) % 2 != 0)
    return gs_error(GS_ERR_USAGE,
                    "option --heads: %llu heads must divide --hidden %llu into an even head size",
                    (unsigned long long)s.heads, (unsigned long long)s.hidden);
  if (s.heads % s.kv_heads != 0)
    return gs_error(GS_ERR_USAGE, "option --kv-heads: %llu does not divide --heads %llu",
                    (unsigned long long)s.kv_heads, (unsigned long long)s.heads);
  if (s.vocab > INT32_MAX || gs_llm_qkv_rows(&s) > INT32_MAX || 2 * s.ffn > INT32_MAX)
    return gs_error(GS_ERR_USAGE, "option --vocab/--ffn: model dimensions beyond 2^31");
  if (o->input_min > o->input_max)
    return gs_error(GS_ERR_USAGE, "option --input-min: %llu is above --input-max %llu",
                    (unsigned long long)o->input_min, (unsigned long long)o->input_max);
  if (o->output_min > o->output_max)
    return gs_error(GS_ERR_USAGE, "option --output-min: %llu is above --output-max %llu",
                    (unsigned long long)o->output_min, (unsigned long long)o->output_max);
  if (o->input_max + o->output_max > 65536)
    return gs_error(GS_ERR_USAGE,
                    "options --input-max + --output-max: %llu positions, at most 65536",
                    (unsigned long long)(o->input_max + o->output_max));
  if (o->scenario != GS_LLM_SERVER && (o->given_rate || o->given_ttft_bound || o->given_tpot_bound))
    return gs_error(GS_ERR_USAGE,
                    "options --rate, --ttft-bound and --tpot-bound belong to --scenario server");
  if (o->slo_text) GS_TRY(gs_slo_parse(o->slo_text, "--slo", &o->slo));
  o->slo.percentile = o->slo_percentile;
  GS_TRY(gs_llm_options_check_serving(o));
  char why[160];
  if (!gs_llm_shard_fits(&s, (uint32_t)o->tp, why, sizeof why))
    return gs_error(GS_ERR_USAGE, "option --tp %llu: %s", (unsigned long long)o->tp, why);
  GS_TRY(gs_llm_options_check_pipeline(o, &s));
  if (o->scenario == GS_LLM_SINGLE_STREAM && o->given_batch && o->batch != 1)
    return gs_error(GS_ERR_USAGE,
                    "option --batch: single-stream issues one sample at a time (batch 1), got %llu",
                    (unsigned long long)o->batch);
  return GS_OK;
}

gs_status gs_llm_options_for_backend(gs_llm_options *o, gs_backend backend) {
  if (backend != GS_BACKEND_CPU) return GS_OK;
  if (!o->given_model) {
    o->preset = 2;
    gs_llm_shape s = gs_llm_options_shape(o);
    gs_note("llm on the CPU backend: the model is the tiny preset (%llu parameters); "
            "--model chooses another", (unsigned long long)gs_llm_parameter_count(&s));
  }
  gs_llm_shape s = gs_llm_options_shape(o);
  if (gs_llm_parameter_count(&s) > GS_LLM_CPU_MAX_PARAMETERS)
    return gs_error(GS_ERR_USAGE,
                    "option --model: %s has %llu parameters; the CPU backend runs at most %llu "
                    "(use --model tiny or smaller dimensions)",
                    preset_choices[o->preset], (unsigned long long)gs_llm_parameter_count(&s),
                    (unsigned long long)GS_LLM_CPU_MAX_PARAMETERS);
  return gs_llm_options_check(o);
}

static cJSON *gs_llm_options_to_json(const void *opts) {
  const gs_llm_options *o = opts;
  gs_llm_shape s = gs_llm_options_shape(o);
  gs_json_build b = {0};
  cJSON *j = gs_json_check(&b, cJSON_CreateObject());
  gs_json_put_string(&b, j, "model", preset_choices[o->preset]);
  gs_json_put_number(&b, j, "hidden", (double)s.hidden);
  gs_json_put_number(&b, j, "layers", (double)s.layers);
  gs_json_put_number(&b, j, "heads", (double)s.heads);
  gs_json_put_number(&b, j, "kv_heads", (double)s.kv_heads);
  gs_json_put_number(&b, j, "ffn", (double)s.ffn);
  gs_json_put_number(&b, j, "vocab", (double)s.vocab);
  gs_json_put_number(&b, j, "rope_theta", s.rope_theta);
  gs_json_put_string(&b, j, "scenario", gs_llm_scenario_names[o->scenario]);
  gs_json_put_string(&b, j, "dispatch", gs_llm_dispatch_names[o->dispatch]);
  gs_json_put_number(&b, j, "batch", o->scenario == GS_LLM_SINGLE_STREAM ? 1.0 : (double)o->batch);
  gs_json_put_number(&b, j, "samples", (double)o->samples);
  gs_json_put_number(&b, j, "input_min", (double)o->input_min);
  gs_json_put_number(&b, j, "input_max", (double)o->input_max);
  gs_json_put_number(&b, j, "output_min", (double)o->output_min);
  gs_json_put_number(&b, j, "output_max", (double)o->output_max);
  gs_json_put_number(&b, j, "rate", o->rate);
  gs_json_put_number(&b, j, "ttft_bound", o->ttft_bound);
  gs_json_put_number(&b, j, "tpot_bound", o->tpot_bound);
  gs_json_put_number(&b, j, "sample_timeout", o->timeout);
  gs_json_put_bool(&b, j, "graphs", !o->no_graphs);
  gs_json_put_bool(&b, j, "overlap", !o->no_overlap);
  gs_json_put_string(&b, j, "decode_gemm", gs_llm_decode_gemm_names[o->decode_gemm]);
  gs_json_put_number(&b, j, "tp", (double)o->tp);
  if (o->pp > 1) {
    // Only with a pipeline, so that documents without one keep their options.
    gs_json_put_number(&b, j, "pp", (double)o->pp);
    gs_json_put_number(&b, j, "micro_batches", (double)o->micro_batches);
    cJSON *firsts = gs_json_put_array(&b, j, "stage_first_layers");
    uint32_t first[GS_LLM_MAX_STAGES + 1];
    if (gs_llm_pp_split(s.layers, (uint32_t)o->pp, o->stage_bounds.v, o->stage_bounds.n, first) ==
        GS_OK)
      for (uint64_t k = 0; k < o->pp; k++) gs_json_append_number(&b, firsts, first[k]);
  }
  gs_json_put_string_or_null(&b, j, "slo", o->slo_text);
  gs_json_put_number(&b, j, "slo_percentile", o->slo_percentile);
  gs_json_put_string(&b, j, "arrival", gs_llm_arrival_names[o->arrival]);
  gs_json_put_number(&b, j, "burstiness", o->burstiness);
  gs_json_put_number(&b, j, "max_concurrency", (double)o->max_concurrency);
  cJSON *rates = gs_json_put_array(&b, j, "rates");
  for (size_t i = 0; i < o->rates.n; i++) gs_json_append_number(&b, rates, o->rates.v[i]);
  gs_json_put_bool(&b, j, "find_max_rate", o->find_max_rate);
  gs_json_put_bool(&b, j, "layouts", o->layouts);
  return gs_json_build_finish(&b, j);
}

/* With --layouts one variant per layout (layout_tp x layout_pp). */
static size_t gs_llm_variant_count(const void *opts) {
  const gs_llm_options *o = opts;
  return o->layouts ? o->layout_tp.n : 0;
}

/* Without --layouts the sweep still selects its one variant (index 0):
 * the options stay as given, unnamed. */
static void gs_llm_variant_select(void *opts, size_t index, char *name, size_t size) {
  gs_llm_options *o = opts;
  if (!o->layouts || index >= o->layout_tp.n) {
    if (size) name[0] = '\0';
    return;
  }
  o->tp = o->layout_tp.v[index];
  o->pp = o->layout_pp.v[index];
  if (o->pp > 1)
    snprintf(name, size, "tp=%llu,pp=%llu", (unsigned long long)o->tp, (unsigned long long)o->pp);
  else
    snprintf(name, size, "tp=%llu", (unsigned long long)o->tp);
}

const gs_workload gs_workload_llm = {
    .key = "llm",
    .summary = "Llama-family decoder inference (random weights): offline, server, single-stream",
    .unit_name = "samples",
    .unit_option = "--samples",
    .item_unit = "tokens",
    .options_new = gs_llm_options_new,
    .options_free = gs_llm_options_free,
    .options_table = gs_llm_options_table,
    .options_check = gs_llm_options_check,
    .options_to_json = gs_llm_options_to_json,
    .driver = &gs_llm_driver,
    .variant_count = gs_llm_variant_count,
    .variant_select = gs_llm_variant_select,
};

void gs_llm_options_scenario(const gs_llm_options *o, const gs_run_config *run,
                          gs_llm_scenario_config *out) {
  uint64_t seed = run->seed;
  memset(out, 0, sizeof *out);
  gs_llm_engine_config *e = &out->engine;
  e->shape = gs_llm_options_shape(o);
  e->seed = seed;
  e->max_batch = o->scenario == GS_LLM_SINGLE_STREAM ? 1u : (uint32_t)o->batch;
  e->max_input = (uint32_t)o->input_max;
  e->max_seq = (uint32_t)(o->input_max + o->output_max);
  e->decode_graphs = !o->no_graphs;
  e->overlap_launches = !o->no_overlap;
  e->decode_gemm = o->decode_gemm;
  e->tp = (uint32_t)o->tp;
  e->nccl_max_ctas = run->nccl_max_ctas;
  e->pp = (uint32_t)o->pp;
  e->micro_batches = (uint32_t)o->micro_batches;
  if (o->pp > 1 && gs_llm_pp_split(e->shape.layers, e->pp, o->stage_bounds.v, o->stage_bounds.n,
                                   e->stage_first) != GS_OK)
    GS_BUG("llm --pp %u: the split checked with the options failed", e->pp);
  out->scenario = (gs_llm_scenario_kind)o->scenario;
  out->dispatch = (gs_llm_dispatch)o->dispatch;
  uint64_t per = run->scaling == GS_SCALING_WEAK ? (uint64_t)run->world_size : 1;
  out->stream = (gs_llm_stream_spec){.count = o->samples * per, .input_min = (uint32_t)o->input_min,
                                  .input_max = (uint32_t)o->input_max,
                                  .output_min = (uint32_t)o->output_min,
                                  .output_max = (uint32_t)o->output_max, .rate = o->rate,
                                  .arrival = (gs_llm_arrival)o->arrival,
                                  .burstiness = o->burstiness, .seed = seed};
  out->max_concurrency = o->max_concurrency;
  out->timeout = o->timeout;
  out->warmup = run->warmup;
  out->arrival_times = !run->no_arrival_times;
}
