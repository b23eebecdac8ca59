/* The llm workload's driver hooks (workload.h): each measurement is a
 * request stream run by scenario.c instead of the runner's fixed steps.
 * The hooks check the measuring options that do not apply to a request
 * stream, keep the rank counts that are whole tensor-parallel replicas,
 * hold the scenario results between measuring and writing, and add the
 * llm's members to the result document. */
#include "workloads/llm/llm_driver.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/timer.h"
#include "platform/comm.h"
#include "workloads/llm/llm_measure.h"
#include "workloads/llm/llm_layouts.h"
#include "workloads/llm/llm_rates.h"
#include "workloads/llm/llm_verify.h"

/* Scenario results of one sweep, kept until they are written. */
typedef struct {
  const gs_llm_options *opts;
  const gs_environment *env;
  size_t capacity;          /* measurements */
  gs_llm_run_result **runs; /* per measurement: n_runs[i] scenario runs */
  size_t *n_runs;
  gs_llm_summary *summaries; /* per measurement: its "llm" member as last written */
  int *summarized;           /* per measurement: 1 once summaries[i] is filled */
  gs_llm_rate_plan *plans;   /* per measurement: the rates measured (--rates, --find-max-rate) */
  uint64_t *tp;              /* per measurement: its tensor-parallel degree (--layouts varies it) */
  uint64_t *pp;              /* per measurement: its pipeline stages (--layouts varies them) */
  int *planned;              /* per measurement: 1 when plans[i] holds them */
} llm_sweep;

/* Runs of one call whose start is recorded (an interleaved sweep's call
 * has one; the rest of a longer call keep none). */
#define GS_LLM_RUNS_TIMED 64

/* Shapes up to this many parameters are verified as they are; larger ones
 * through the tiny preset (the CPU reference would take minutes). */
#define GS_LLM_VERIFY_MAX_PARAMETERS UINT64_C(20000000)

/* Under a launcher: every replica's check to every process (replica k is
 * checked by process k x per, the first of its `per` ranks; the other
 * processes contribute an empty one). */
static gs_status share_verifications(const gs_run_config *config, int per,
                                     gs_verification *verify) {
  const int procs = gs_comm_world_size(config->control), me = config->process_rank;
  gs_verification mine;
  memset(&mine, 0, sizeof mine);
  if (me < config->world_size && me % per == 0) mine = verify[me / per];
  gs_verification *all = calloc((size_t)procs, sizeof *all);
  if (!all) return gs_error(GS_ERR_NOMEM, "cannot gather %d GPU checks", procs);
  gs_status status = gs_comm_allgather(gs_comm_world_rank(config->control, 0), &mine, all,
                                       sizeof mine, GS_DTYPE_UINT8, NULL);
  for (int k = 0; status == GS_OK && k < config->world_size / per; k++) verify[k] = all[k * per];
  free(all);
  return status;
}

/* The shape the GPUs are verified on: the measured one, or where the CPU
 * reference would take too long the tiny preset, widened where needed so
 * that it splits over tp shards. */
static gs_llm_shape verification_shape(const gs_llm_shape *measured, uint32_t tp) {
  if (gs_llm_parameter_count(measured) <= GS_LLM_VERIFY_MAX_PARAMETERS) return *measured;
  gs_llm_shape s = gs_llm_presets[2].shape;
  char why[160];
  if (!gs_llm_shard_fits(&s, tp, why, sizeof why)) {
    s.kv_heads = tp;
    s.heads = 2 * (uint64_t)tp;
    s.hidden = 16 * s.heads;
    s.ffn = 88 * (uint64_t)tp;
    s.vocab = 256 * (uint64_t)tp;
  }
  return s;
}

/* GPUs are checked against the CPU reference; on the CPU backend a
 * pipelined replica, and one whose shards are processes, is checked
 * against the whole model on one rank (under a launcher over its
 * processes, as it is measured). */
static int replicas_verified(const gs_run_config *config, const gs_llm_engine_config *e) {
  return config->backend == GS_BACKEND_CUDA || e->pp > 1 || (config->control && e->tp > 1);
}

/* Under a launcher, replicas of tp shards x pp stages are checked over
 * their processes (gs_llm_verify_processes); with tp > 1 every process
 * takes part in the split of the job into the stages' groups, and on
 * CUDA with stages in the making of the pipeline's links. */
static gs_status verify_over_processes(const gs_run_config *config,
                                       const gs_llm_engine_config *layout,
                                       gs_verification *verify) {
  const int tp = layout->tp ? (int)layout->tp : 1, per = tp * (layout->pp ? (int)layout->pp : 1);
  const int me = config->process_rank, at = me % per;
  const uint32_t pp = layout->pp ? layout->pp : 1;
  gs_llm_process_comms groups = {0};
  if (tp > 1 || (pp > 1 && config->backend == GS_BACKEND_CUDA))
    GS_TRY(gs_llm_process_join(config->control, config->backend, config->devices[me],
                               (uint32_t)tp, pp, config->comm_timeout_seconds,
                               config->nccl_max_ctas, &groups));
  gs_status status = GS_OK;
  if (me < config->world_size) {
    const gs_llm_engine_place place = {.control = gs_comm_world_rank(config->control, 0),
                                       .tp = groups.tp,
                                       .out = groups.out,
                                       .in = groups.in,
                                       .first_rank = me - at,
                                       .stage = (uint32_t)(at / tp),
                                       .shard = (uint32_t)(at % tp),
                                       .device = config->devices[me]};
    status = gs_llm_verify_processes(layout, config->backend, &place, &verify[me / per]);
  }
  gs_llm_process_leave(&groups, status != GS_OK);
  return status;
}

/* The replica checked: the measured layout on verification_shape; where
 * that is not the measured shape, one layer per pipeline stage. */
static gs_llm_engine_config verification_layout(const gs_llm_engine_config *measured) {
  gs_llm_engine_config v = *measured;
  const uint32_t tp = v.tp ? v.tp : 1, pp = v.pp ? v.pp : 1;
  v.shape = verification_shape(&measured->shape, tp);
  if (pp > 1 && v.shape.layers != measured->shape.layers) {
    v.shape.layers = pp;
    for (uint32_t s = 0; s <= pp; s++) v.stage_first[s] = s;
  }
  return v;
}

/* Under a launcher, when the replicas' verification broke with `status`
 * (a wait interrupted by the launcher's signal, timed out, or an MPI
 * error: most often a process was lost while the job started): the lost
 * rank (gs_comm_find_lost), or -1 when none is found. *status then names
 * it. */
static int lost_in_verification(const gs_run_config *config, gs_status *status) {
  if (!config->control || (*status != GS_ERR_INTERRUPTED && *status != GS_ERR_TIMEOUT &&
                           *status != GS_ERR_MPI))
    return -1;
  char how[GS_TEXT_LONG] = "";
  const int lost = gs_comm_find_lost(config->control, how, sizeof how);
  if (lost < 0) return -1;
  *status = gs_error(GS_ERR_RANK_LOST, "rank %d on %s lost during the replicas' verification, "
                     "before the first request: %s", lost, config->places[lost].host, how);
  return lost;
}

static gs_status driver_measure(void *ctx, const gs_run_config *config, size_t index,
                                gs_measurement *out) {
  llm_sweep *d = ctx;
  memset(out, 0, sizeof *out);
  if (index >= d->capacity) GS_BUG("llm measurement %zu of %zu", index, d->capacity);
  gs_llm_scenario_config sc;
  gs_llm_options_scenario(d->opts, config, &sc);
  gs_verification verify[GS_MAX_RANKS];
  memset(verify, 0, sizeof verify);
  gs_status status = GS_OK;
  const int verified = replicas_verified(config, &sc.engine);
  if (verified) {
    const gs_llm_engine_config layout = verification_layout(&sc.engine);
    const int per = (int)gs_llm_options_replica_ranks(d->opts);
    // Each replica (tp x pp GPUs) is checked. Under a launcher each process
    // checks its own GPU and the results are shared, so that every process
    // holds every rank's verification.
    const int over_processes = config->control && per > 1;
    if (over_processes) status = verify_over_processes(config, &layout, verify);
    for (int k = 0; !over_processes && k < config->world_size / per && status == GS_OK; k++)
      if (!config->control || k * per == config->process_rank)
        status = gs_llm_verify_replica(&layout, config->backend,
                                       config->devices + (size_t)k * per, &verify[k]);
    if (config->control && status == GS_OK) status = share_verifications(config, per, verify);
  }
  const int lost = verified && status != GS_OK ? lost_in_verification(config, &status) : -1;
  const gs_llm_options *o = d->opts;
  d->tp[index] = o->tp;
  d->pp[index] = o->pp;
  size_t before = 0;  /* runs of the measurement from earlier calls */
  double started[GS_LLM_RUNS_TIMED] = {0};
  if (status == GS_OK && (o->rates.n || o->find_max_rate)) {
    d->planned[index] = 1;
    status = gs_llm_rates_measure(o, config, &sc, &d->plans[index], &d->runs[index],
                                  &d->n_runs[index]);
    if (!d->runs[index]) {
      if (status == GS_OK) GS_BUG("llm rates kept no runs");
      return status;
    }
  } else {
    // An interleaved sweep calls again for the same measurement, one run
    // per call: its runs go after the earlier calls' ones, and `out` holds
    // only its own (the sweep merges them, then calls driver_merged).
    before = d->n_runs[index];
    gs_llm_run_result *all = realloc(d->runs[index], (before + config->runs) * sizeof *all);
    if (!all)
      return gs_error(GS_ERR_NOMEM, "cannot allocate %llu scenario runs",
                      (unsigned long long)(before + config->runs));
    memset(all + before, 0, config->runs * sizeof *all);
    d->runs[index] = all;
    d->n_runs[index] = before + config->runs;
    for (uint64_t r = 0; r < config->runs && status == GS_OK; r++) {
      // The label of an interleaved sweep's call names its run already.
      if (config->show_progress && !gs_is_quiet() && config->runs > 1)
        gs_note("%s: %s scenario, run %llu of %llu", config->label ? config->label : "llm",
                gs_llm_scenario_names[sc.scenario], (unsigned long long)r + 1,
                (unsigned long long)config->runs);
      else if (config->show_progress && !gs_is_quiet())
        gs_note("%s: %s scenario", config->label ? config->label : "llm",
                gs_llm_scenario_names[sc.scenario]);
      if (r < GS_LLM_RUNS_TIMED) started[r] = gs_time_unix_seconds();
      status = gs_llm_scenario_run(&sc, config, &all[before + r]);
      if (status != GS_OK) d->n_runs[index] = before + r + 1;
    }
  }
  gs_status filled =
      gs_llm_measurement_fill(d->opts, config, d->runs[index] + before, d->n_runs[index] - before,
                              verified ? verify : NULL, out);
  // When each run's stream began, as the runner records its first timed step.
  for (size_t r = 0; r < out->n_runs && r < GS_LLM_RUNS_TIMED && started[r] > 0.0; r++)
    out->runs[r].started_unix_seconds = started[r];
  if (status != GS_OK) {
    out->status = status;
    if (!out->error[0]) snprintf(out->error, sizeof out->error, "%s", gs_last_error());
    if (lost >= 0) {
      gs_failure_record *f = &out->failure;
      *f = (gs_failure_record){.present = 1, .rank = lost, .status = status};
      snprintf(f->host, sizeof f->host, "%s", config->places[lost].host);
      snprintf(f->reason, sizeof f->reason, "%s", out->error);
    }
    return status;
  }
  return filled != GS_OK ? filled : out->status;
}

/* After the sweep merged a later call's run into measurement `index`: the
 * throughput and cold start as llm defines them, over every run so far. */
static gs_status driver_merged(void *ctx, size_t index, gs_measurement *m) {
  llm_sweep *d = ctx;
  // The measurement holds the kept runs in call order; a call whose fill
  // failed (out of memory) may have kept a run that it does not hold.
  if (index >= d->capacity || !d->runs[index] || d->n_runs[index] < m->n_runs)
    GS_BUG("llm merge of measurement %zu: %zu runs kept, %zu merged", index,
           index < d->capacity ? d->n_runs[index] : 0, m->n_runs);
  gs_llm_measurement_totals(d->runs[index], m->n_runs, m);
  return GS_OK;
}

/* A rate sweep or search is one measurement's probes, run in one call. */
static const char *driver_keeps_runs_together(const void *opts) {
  const gs_llm_options *o = opts;
  return o->rates.n || o->find_max_rate ? "--rates and --find-max-rate measure every rate of a "
                                          "count in one search"
                                        : NULL;
}

static gs_status driver_annotate(void *ctx, const gs_measurement *m, cJSON *measurement,
                                 size_t index) {
  llm_sweep *d = ctx;
  if (!measurement || index >= d->capacity || !d->runs[index])
    GS_BUG("llm annotation of measurement %zu without results", index);
  double peak = 0.0;
  if (strcmp(m->backend, "cuda") == 0 && m->world_size > 0)
    for (size_t g = 0; g < d->env->gpu_count; g++)
      if (d->env->gpus[g].index == m->devices[0]) peak = d->env->gpus[g].peak_memory_bandwidth;
  d->summarized[index] = 0;
  // With rates measured in turn, the measurement's requests are those of
  // the rate kept: its figures are of that rate.
  gs_llm_options at_rate = *d->opts;
  if (d->planned[index]) at_rate.rate = d->plans[index].kept_rate;
  at_rate.tp = d->tp[index];
  at_rate.pp = d->pp[index];
  GS_TRY(gs_llm_summary_compute(&at_rate, d->runs[index], d->n_runs[index], m, peak,
                                &d->summaries[index]));
  d->summarized[index] = 1;
  GS_TRY(gs_llm_measurement_annotate(measurement, &d->summaries[index], d->runs[index],
                                     d->n_runs[index]));
  if (!d->planned[index]) return GS_OK;
  gs_json_build b = {0};
  gs_llm_rates_to_json(&b, cJSON_GetObjectItemCaseSensitive(measurement, "llm"),
                       &d->plans[index], &d->opts->slo);
  return gs_json_build_status(&b, "the llm rates");
}

static void driver_print(void *ctx, FILE *out, size_t count) {
  llm_sweep *d = ctx;
  for (size_t i = 0; i < count && i < d->capacity; i++)
    if (d->summarized[i]) {
      gs_llm_measurement_print(out, &d->summaries[i]);
      if (d->planned[i]) gs_llm_rates_print(out, &d->plans[i], &d->opts->slo);
    }
  if (d->opts->layouts) gs_llm_layouts_print(out, d->summaries, d->summarized, count);
}

static void driver_close(void *ctx) {
  llm_sweep *d = ctx;
  if (!d) return;
  for (size_t i = 0; d->runs && i < d->capacity; i++) {
    for (size_t r = 0; d->runs[i] && r < d->n_runs[i]; r++) gs_llm_run_result_free(&d->runs[i][r]);
    free(d->runs[i]);
  }
  free(d->runs);
  free(d->n_runs);
  free(d->summaries);
  free(d->summarized);
  free(d->plans);
  free(d->planned);
  free(d->tp);
  free(d->pp);
  free(d);
}

static gs_status driver_open(const gs_workload *workload, const void *opts,
                             const gs_environment *env, size_t count, void **ctx) {
  (void)workload;
  llm_sweep *d = calloc(1, sizeof *d);
  *ctx = d;
  if (!d) return gs_error(GS_ERR_NOMEM, "cannot allocate the llm driver");
  d->opts = opts;
  d->env = env;
  d->capacity = count;
  d->runs = calloc(count, sizeof *d->runs);
  d->n_runs = calloc(count, sizeof *d->n_runs);
  d->summaries = calloc(count, sizeof *d->summaries);
  d->summarized = calloc(count, sizeof *d->summarized);
  d->plans = calloc(count, sizeof *d->plans);
  d->planned = calloc(count, sizeof *d->planned);
  d->tp = calloc(count, sizeof *d->tp);
  d->pp = calloc(count, sizeof *d->pp);
  if (!d->runs || !d->n_runs || !d->summaries || !d->summarized || !d->plans || !d->planned ||
      !d->tp || !d->pp) {
    driver_close(d);
    *ctx = NULL;
    return gs_error(GS_ERR_NOMEM, "cannot allocate the llm driver");
  }
  return GS_OK;
}

/* --layouts: every tensor-parallel degree T and pipeline depth P with
 * T x P dividing the run's ranks, T splitting the heads and P the layers
 * into equal stages, into o->layout_tp and o->layout_pp (one variant each,
 * by T then P). */
static gs_status choose_layouts(gs_llm_options *o, const gs_run_config *config) {
  if (config->scaling != GS_SCALING_NONE)
    return gs_error(GS_ERR_USAGE, "option --layouts: measures the layouts of one run's GPUs; use "
                    "run, not scale");
  if (o->given_tp)
    return gs_error(GS_ERR_USAGE, "option --layouts: measures every --tp itself; not with --tp");
  if (config->control)
    return gs_error(GS_ERR_USAGE, "option --layouts: measures its layouts in one process; run "
                    "without the launcher");
  const gs_llm_shape shape = gs_llm_options_shape(o);
  o->layout_tp.n = o->layout_pp.n = 0;
  for (int t = 1; t <= config->world_size && o->layout_tp.n < GS_LIST_MAX; t++) {
    char why[160];
    if (config->world_size % t != 0 || !gs_llm_shard_fits(&shape, (uint32_t)t, why, sizeof why))
      continue;
    for (int p = 1; t * p <= config->world_size && o->layout_tp.n < GS_LIST_MAX; p++) {
      // The equal split of gs_llm_pp_split, tested without recording its error.
      if (config->world_size % (t * p) != 0 || p > GS_LLM_MAX_STAGES ||
          (uint64_t)p > shape.layers || shape.layers % (uint64_t)p != 0)
        continue;
      o->layout_tp.v[o->layout_tp.n] = (uint64_t)t;
      o->layout_pp.v[o->layout_pp.n++] = (uint64_t)p;
      o->layout_tp.n++;
    }
  }
  if (o->layout_tp.n < 2)
    gs_note("llm --layouts: %d %s split only one way (tp 1, pp 1) for this model", config->world_size,
            config->backend == GS_BACKEND_CUDA ? "GPUs" : "ranks");
  return GS_OK;
}

/* A request stream per measurement, not timed iterations: --iters and
 * --min-time do not apply (docs/workloads/llm.md). */
static gs_status driver_configure(const gs_workload *workload, void *opts,
                                  const gs_given_options *given, gs_run_config *config) {
  (void)workload;
  const gs_llm_options *o = opts;
  if (given->iters || given->min_time)
    return gs_error(GS_ERR_USAGE, "options --iters and --min-time do not apply to llm: it runs "
                    "--samples requests per measurement");
  // Requests are dispatched by --dispatch, not split in fixed units per rank.
  if (config->split_proportional)
    return gs_error(GS_ERR_USAGE, "option --split proportional does not apply to llm: use "
                    "--dispatch dynamic to balance requests over unequal GPUs");
  for (size_t i = 0; i < config->faults.n; i++) {
    const gs_fault_kind kind = config->faults.items[i].kind;
    if (kind != GS_FAULT_SLOW && kind != GS_FAULT_LATE)
      return gs_error(GS_ERR_USAGE, "option --inject %s: llm simulates only slow (each forward "
                      "pass of the replica takes the factor times its own time) and late (the "
                      "rank waits, on a GPU its stream spins, before each prefill and decode)",
                      gs_fault_kind_name(kind));
  }
  if (config->control && o->max_concurrency)
    return gs_error(GS_ERR_USAGE, "option --max-concurrency: the slots are shared in one process; "
                    "under a launcher (one process per rank) run without it");
  if (given->gpu_mode)
    return gs_error(GS_ERR_USAGE, "option --gpu-mode does not apply to llm");
  // A shared queue lives in one process; between processes requests are split.
  if (config->control && o->dispatch == GS_LLM_DISPATCH_DYNAMIC)
    return gs_error(GS_ERR_USAGE, "option --dispatch dynamic: not available under a launcher "
                    "(one process per rank); use --dispatch static, or one process");
  // A pipeline stage's GPUs are not stamped yet: without the option such
  // a run records nothing, and asking for it is refused.
  if (given->arrival_times && !config->no_arrival_times && o->pp > 1 &&
      config->backend != GS_BACKEND_CPU)
    return gs_error(GS_ERR_USAGE, "option --arrival-times 1: on CUDA only without --pp (a "
                    "pipeline stage's GPUs are not stamped yet, docs/stragglers.md)");
  GS_TRY(gs_llm_options_for_backend(opts, config->backend));
  return o->layouts ? choose_layouts(opts, config) : GS_OK;
}

/* A tensor-parallel replica needs --tp GPUs: only whole replicas are measured. */
static gs_status driver_select_counts(const void *opts, const gs_run_config *config,
                                      gs_u64_list *counts) {
  const gs_llm_options *o = opts;
  const uint64_t tp = gs_llm_options_replica_ranks(o);
  char option[64];
  if (o->pp > 1 && o->tp > 1)
    snprintf(option, sizeof option, "--tp %llu x --pp %llu", (unsigned long long)o->tp,
             (unsigned long long)o->pp);
  else
    snprintf(option, sizeof option, "--%s %llu", o->pp > 1 ? "pp" : "tp",
             (unsigned long long)(o->pp > 1 ? o->pp : o->tp));
  gs_u64_list whole = {0};
  for (size_t i = 0; i < counts->n; i++)
    if (counts->v[i] % tp == 0) whole.v[whole.n++] = counts->v[i];
  if (whole.n == 0)
    return gs_error(GS_ERR_USAGE,
                    "option %s: a replica needs %llu %s, and no measured size (largest "
                    "%llu) is a multiple of that",
                    option, (unsigned long long)tp,
                    config->backend == GS_BACKEND_CUDA ? "GPUs" : "ranks",
                    (unsigned long long)counts->v[counts->n - 1]);
  if (whole.n < counts->n)
    gs_note("llm %s: measuring only the sizes that are whole replicas (multiples of %llu)",
            option, (unsigned long long)tp);
  *counts = whole;
  return GS_OK;
}

/* One run with one warm-up batch by default: a request stream is long. */
const gs_workload_driver gs_llm_driver = {
    .default_runs = 1,
    .default_warmup = 1,
    .samples_note = "per-request latency (every request of every rank, monotonic clock); cold: "
                    "first warm-up batch / median request",
    .interleaves = 1,
    .keeps_runs_together = driver_keeps_runs_together,
    .merged = driver_merged,
    .configure = driver_configure,
    .select_counts = driver_select_counts,
    .open = driver_open,
    .measure = driver_measure,
    .annotate = driver_annotate,
    .print = driver_print,
    .close = driver_close,
};
