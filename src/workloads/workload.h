/* The workload interface: a small table of functions that every workload
 * fills, and the one interface through which every workload is measured.
 * A workload of fixed steps only parses its options, sets up one rank,
 * enqueues one step, verifies against its CPU reference, describes its cost
 * and tears down; the fixed-step runner (runner/runner_driver.c) measures it
 * through the driver interface below, owning timing, repetition and the
 * split of work over ranks. A workload that owns its timing loop (llm)
 * fills the driver hooks itself instead of the step functions. Callers ask
 * gs_runner_driver_of for a workload's driver and never tell the two kinds
 * apart. Workloads are registered by key in workloads/registry.c; nothing
 * above this layer knows their names. */
#ifndef GS_WORKLOAD_H
#define GS_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>
#include <cuda_runtime_api.h>

#include "core/options.h"
#include "core/result.h"
#include "core/status.h"
#include "core/types.h"
#include "workloads/run_config.h"

/* What one rank is asked to do. The rank owns work units
 * [unit_begin, unit_begin + unit_count) of the step's unit_total (e.g.
 * clouds); data for a unit must depend only on the seed and the unit's
 * index, so that any split over ranks computes the same thing and, under
 * weak scaling (unit_total = world_size times the workload's units, rank k
 * owning [k*U, (k+1)*U)), every rank has units of its own. */
typedef struct {
  int rank;
  int world_size;
  gs_backend backend;
  int device;                 /* CUDA ordinal (current on the calling thread), -1 on CPU */
  cudaStream_t stream;        /* the rank's stream on CUDA, NULL on CPU */
  uint64_t seed;
  uint64_t unit_begin;
  uint64_t unit_count;        /* >= 1 */
  uint64_t unit_total;        /* units of the whole step over every rank */
  /* The rank's communicator (platform/comm.h) when the workload sets
   * `communicates`, else NULL. Used only from this rank's thread. */
  struct gs_comm *comm;
} gs_rank_context;

/* Which measuring options the user gave on the command line (the others
 * hold their defaults), for a driver that has defaults of its own or
 * refuses options that do not apply to it. */
typedef struct {
  int iters, min_time, runs, warmup, gpu_mode, arrival_times, nccl_max_ctas;
} gs_given_options;

struct gs_workload;

/* How a workload is measured: the hooks the measuring layer calls for
 * every measurement (run, scale, suite, exec, plan, --gpu-mode auto). The
 * fixed-step runner is one implementation (gs_runner_driver); a workload
 * with its own timing loop (llm's request streams) is another. A sweep
 * calls configure once, select_counts once, open, check for every variant
 * and rank count, then per rank count split (with --split proportional),
 * measure and annotate per measurement, print when it is done, and close.
 * Optional hooks may be NULL. */
typedef struct {
  /* The driver's own defaults of --runs and --warmup (0: the common ones),
   * applied where the user gave none (gs_common_driver_defaults). */
  uint64_t default_runs, default_warmup;
  /* What the median/p95/p99 of its samples are, for the summary table
   * under the measurements (e.g. "per-request latency (...)"); NULL: steps
   * in lockstep. */
  const char *samples_note;
  /* Non-NULL when the workload's GPU work runs where this process does not
   * see it (another program): why its --trace has host lanes only. */
  const char *trace_host_only;
  /* Non-zero when measure meets config->start_gate before its first timed
   * step, so that a plan's tasks start together; a plan refuses a driver
   * that does not (it would leave the other tasks waiting at the gate). */
  int meets_start_gate;
  /* Non-zero when measure may be called once per run: with config->runs 1,
   * several times for the same index, each call a complete measurement of
   * one run that the sweep merges into the index's measurement
   * (gs_runner_merge), so that a sweep measures its rank counts
   * interleaved (1, 2, 4, 1, 2, 4, ...; docs/statistics.md). Zero: a
   * measurement's runs come from one call (a driver that keeps state per
   * index), and its counts are measured one after the other. */
  int interleaves;
  /* Optional, with `interleaves`: NULL when `opts` let measurements be
   * taken one run per call, else why they keep a measurement's runs in one
   * call (static text, which the sweep prints; e.g. llm's rate sweep,
   * whose runs are one search's probes). NULL hook: always one run per
   * call. */
  const char *(*keeps_runs_together)(const void *opts);
  /* Optional, with `interleaves`: called after the sweep merged a later
   * call's run into measurement `index` (*m holds every run so far, in
   * call order, its statistics recomputed by the runner's rules), to put
   * back what the driver defines otherwise (llm: the throughput over its
   * runs' seconds, not items over the mean sample). */
  gs_status (*merged)(void *ctx, size_t index, gs_measurement *m);
  /* Optional. Checks the measuring configuration against the workload
   * (GS_ERR_USAGE naming the option that does not apply) and fits the
   * configuration to the workload. Called before anything is measured,
   * from the main thread. */
  gs_status (*configure)(const struct gs_workload *workload, void *opts,
                         const gs_given_options *given, gs_run_config *config);
  /* Optional. Keeps in `counts` the rank counts the workload can be
   * measured at (e.g. whole tensor-parallel replicas), noting any it
   * leaves out; GS_ERR_USAGE when none is left. NULL: every count. */
  gs_status (*select_counts)(const void *opts, const gs_run_config *config, gs_u64_list *counts);
  /* A context for a sweep of `workload` with `opts` of up to `count`
   * measurements (freed by close, which accepts NULL). `env` is the
   * machine the document records. */
  gs_status (*open)(const struct gs_workload *workload, const void *opts,
                    const gs_environment *env, size_t count, void **ctx);
  /* Optional. Whether a measurement at config->world_size can be made,
   * decided before anything is measured or written (the runner: its split
   * of work units); GS_ERR_USAGE naming the options otherwise. */
  gs_status (*check)(void *ctx, const gs_run_config *config);
  /* Optional: the driver splits work units over ranks. Calibrates each
   * rank's speed under `config` and fills world_size entries of an even
   * split, of one proportional to the speeds, and of the calibrated items
   * per second. NULL: nothing to split, and --split proportional is
   * refused. */
  gs_status (*split)(void *ctx, const gs_run_config *config, uint64_t *even,
                     uint64_t *proportional, double *rates);
  /* Measures measurement `index` at config->world_size ranks into *out
   * (filled even when ranks fail, as gs_runner_measure does). */
  gs_status (*measure)(void *ctx, const gs_run_config *config, size_t index, gs_measurement *out);
  /* Optional. Adds the workload's own members to measurement `index`'s
   * JSON object, written from *m. */
  gs_status (*annotate)(void *ctx, const gs_measurement *m, cJSON *measurement, size_t index);
  /* Optional. Prints the workload's lines for measurements 0..count-1. */
  void (*print)(void *ctx, FILE *out, size_t count);
  void (*close)(void *ctx);
} gs_workload_driver;

typedef struct gs_workload {
  const char *key;            /* stable name on the command line and in results */
  const char *summary;        /* one line for help */
  const char *unit_name;      /* what is split over ranks, e.g. "clouds" */
  const char *unit_option;    /* the option that sets work_units, e.g. "--clouds" */
  const char *item_unit;      /* what throughput counts, e.g. "points" */
  /* Non-zero: the runner creates a communicator world before setup and
   * gives each rank its handle in ctx->comm; after every timed step it
   * records gs_comm_exposed_take into the rank record's comm_seconds. */
  int communicates;
  /* Optional, for a workload that communicates: non-zero when under
   * `opts` its collectives run beside its compute (a data-parallel step's
   * gradient all-reduce during the backward GEMMs) rather than on its
   * critical path (a pipeline's transfers between stages). The runner
   * then gives NCCL fewer CTAs by default (runner_driver.c). NULL: never. */
  int (*overlaps_collectives)(const void *opts);

  /* Default options; the caller frees them with options_free. */
  void *(*options_new)(void);
  void (*options_free)(void *opts);
  /* The option table bound to `opts` (lives as long as opts). */
  const gs_option *(*options_table)(void *opts);
  /* Cross-option checks after parsing; GS_ERR_USAGE naming the option. */
  gs_status (*options_check)(void *opts);
  /* Every option value, for the result document's config; NULL when it
   * cannot be allocated (built through core/json's builder). */
  cJSON *(*options_to_json)(const void *opts);

  /* Optional: the workload measures itself through these hooks; then
   * work_units, cost, setup, step, verify and teardown are NULL. NULL: the
   * fixed-step runner measures it. Read only by gs_runner_driver_of. */
  const gs_workload_driver *driver;

  /* Work units in one step of the configured problem (before any split). */
  uint64_t (*work_units)(const void *opts);
  /* Cost of one step over `units` work units. */
  void (*cost)(const void *opts, uint64_t units, gs_cost *out);

  /* Allocates and fills one rank's inputs (untimed). On CUDA the caller has
   * made ctx->device current. *state is owned by the workload. */
  gs_status (*setup)(const void *opts, const gs_rank_context *ctx, void **state);
  /* One step: enqueued on ctx->stream (CUDA, asynchronous) or run (CPU). */
  gs_status (*step)(void *state);
  /* Compares the last step's output with the CPU reference (untimed). */
  gs_status (*verify)(void *state, gs_verification *out);
  /* Frees everything setup allocated; accepts NULL. */
  void (*teardown)(void *state);
  /* Optional (NULL: none). What rank `rank` of `world` does beyond its
   * share, for messages that name it (e.g. "pipeline stage 1 of 3,
   * replica 0"); writes "" when nothing. Pure; any thread. */
  void (*rank_role)(const void *opts, int rank, int world, char *buf, size_t size);
  /* Optional (NULL: the world's). The group among which rank `rank` of
   * `world` reaches its step's collectives (e.g. mlp --pp: its pipeline
   * stage, whose replicas sum their gradients), or -1 when they span the
   * world: the runner's arrival times are then summarized per group
   * (docs/stragglers.md). Pure; any thread. */
  int (*collective_group)(const void *opts, int rank, int world);

  /* Optional (NULL: one problem). How many problem variants the options
   * ask for (e.g. mlp's --batch-sizes; 0 or 1: just the options as given),
   * and a call that sets the options to variant `index` and names it in
   * `name` (e.g. "batch=512"). run and scale measure each variant in turn. */
  size_t (*variant_count)(const void *opts);
  void (*variant_select)(void *opts, size_t index, char *name, size_t name_size);
} gs_workload;

/* Checks that a rank's share lies in the step: unit_count >= 1 and
 * unit_begin + unit_count <= unit_total. A workload's setup calls it before
 * anything else; a share outside the step is a bug (the runner's split is
 * wrong), reported naming the workload `key` and its `unit_name`. Any thread. */
gs_status gs_workload_check_share(const gs_rank_context *ctx, const char *key,
                                  const char *unit_name);

/* The workload registered under `key`, or NULL. */
const gs_workload *gs_workload_find(const char *key);

/* All registered workloads in registration order; *count receives the number. */
const gs_workload *const *gs_workload_list(size_t *count);

#endif
