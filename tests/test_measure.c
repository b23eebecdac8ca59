/* Tests of the measuring layer without a GPU (measure/common.c, job.c,
 * sweep.c): --gpus lists, ranges and duplicates; the resolution of the
 * common options into ranks; the rank counts of a sweep; every workload's
 * driver with its measuring defaults and refusals; --arrival-times into
 * the run config and the config block; the document status
 * rule; a sweep on CPU rank threads that writes its document, tells its
 * observer, and writes nothing for a request that cannot be measured; and
 * the order in which a sweep calls a driver's hooks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "runner/runner_driver.h"
#include "core/result.h"
#include "measure/sweep.h"
#include "tmpdir_fixture.h"
#include "workload_options_fixture.h"

static void test_gpus_lists_and_ranges(void **unused) {
  (void)unused;
  gs_run_config c;
  memset(&c, 0, sizeof c);
  assert_int_equal(gs_common_parse_gpus("0,2", "--gpus", 4, &c), GS_OK);
  assert_int_equal(c.world_size, 2);
  assert_true(c.devices[0] == 0 && c.devices[1] == 2);
  assert_int_equal(gs_common_parse_gpus("1-3,0", "--gpus", 4, &c), GS_OK);
  assert_int_equal(c.world_size, 4);
  assert_true(c.devices[0] == 1 && c.devices[2] == 3 && c.devices[3] == 0);
  // A lone number is one GPU's ordinal, as CUDA_VISIBLE_DEVICES reads it:
  // "0" is GPU 0 (once refused as a count below 1), "3" is GPU 3.
  assert_int_equal(gs_common_parse_gpus("0", "--gpus", 4, &c), GS_OK);
  assert_true(c.world_size == 1 && c.devices[0] == 0);
  assert_int_equal(gs_common_parse_gpus("3", "--gpus", 4, &c), GS_OK);
  assert_true(c.world_size == 1 && c.devices[0] == 3);
  // Without a device count only the syntax is checked.
  assert_int_equal(gs_common_parse_gpus("7,9-10", "--gpus", -1, &c), GS_OK);
  assert_true(c.world_size == 3 && c.devices[0] == 7 && c.devices[2] == 10);
}

static void test_gpus_refused(void **unused) {
  (void)unused;
  gs_run_config c;
  static const char *const bad[] = {"0,0", "0-2,1", "2-1", "6", "0,4", "5", "", ",", "x", "1-",
                                    "-1", "0-99", "0,,1", "0,", ",1", "2x", "1.5"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(&c, 0, sizeof c);
    gs_status st = gs_common_parse_gpus(bad[i], "--gpus", 4, &c);
    if (st != GS_ERR_USAGE)
      fail_msg("--gpus '%s' gave %s, not a usage error", bad[i], gs_status_name(st));
    assert_error_mentions("--gpus");
  }
  // Malformed text is refused without a device count too (no GPU present).
  static const char *const malformed[] = {"", "x", "1-", "-1", "0,,1", "2-1", "0,0", "64"};
  for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
    memset(&c, 0, sizeof c);
    if (gs_common_parse_gpus(malformed[i], "--gpus", -1, &c) != GS_ERR_USAGE)
      fail_msg("--gpus '%s' passed the syntax check", malformed[i]);
    assert_error_mentions("--gpus");
  }
  assert_int_equal(gs_common_parse_gpus("0,0", "--gpus", 4, &c), GS_ERR_USAGE);
  assert_error_mentions("twice");
  // A lone number past the devices was most likely a count: the hint says -g.
  assert_int_equal(gs_common_parse_gpus("4", "--gpus", 4, &c), GS_ERR_USAGE);
  assert_error_mentions("GPU 4 does not exist (4 present, 0-3); the first 4 GPUs are -g 4");
  assert_int_equal(gs_common_parse_gpus("2-5", "DEVICES", 4, &c), GS_ERR_USAGE);
  assert_error_mentions("option DEVICES: GPU 4 does not exist (4 present)");
}

static void test_common_groups(void **unused) {
  (void)unused;
  // A command's table holds exactly the options of the groups it names.
  gs_common_options o;
  gs_common_init(&o, GS_GROUP_OUTPUT | GS_GROUP_WARMUP | GS_GROUP_ITERS | GS_GROUP_TRACE);
  char names[512] = "";
  size_t at = 0;
  for (const gs_option *t = o.table; t->kind != GS_OPT_END; t++)
    at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", at ? " " : "", t->name);
  assert_string_equal(names, "out quiet no-progress warmup iters trace trace-steps");
  assert_int_equal(o.n_groups, 3);
  assert_string_equal(o.groups[1].title, "Timing");
  assert_int_equal(o.groups[1].begin, 3);
  assert_int_equal(o.groups[1].end, 5);
  // One meaning per short flag: -o out, -q quiet, -w warmup, -n iters, -g ngpus.
  gs_common_init(&o, GS_GROUP_MEASURE | GS_GROUP_SCALE | GS_GROUP_FAULTS | GS_GROUP_SPLIT |
                         GS_GROUP_GPU_MODE);
  size_t n = 0;
  for (const gs_option *t = o.table; t->kind != GS_OPT_END; t++, n++) {
    if (t->short_name == 0) continue;
    const char *want = t->short_name == 'o'   ? "out"
                       : t->short_name == 'q' ? "quiet"
                       : t->short_name == 'w' ? "warmup"
                       : t->short_name == 'n' ? "iters"
                       : t->short_name == 'g' ? "ngpus"
                                              : "?";
    assert_string_equal(t->name, want);
  }
  assert_int_equal(n, 25);
}

/* Asserts that `o`'s table has the count option `name` of 0..max. */
static void assert_count_option(const gs_common_options *o, const char *name, uint64_t max) {
  const gs_option *t = o->table;
  while (t->kind != GS_OPT_END && strcmp(t->name, name) != 0) t++;
  assert_int_equal(t->kind, GS_OPT_COUNT);
  assert_int_equal(t->min, 0);
  assert_int_equal(t->max, max);
}

/* Asserts that `o`'s table does not list the option `name`. */
static void assert_not_listed(const gs_common_options *o, const char *name) {
  for (const gs_option *t = o->table; t->kind != GS_OPT_END; t++)
    assert_string_not_equal(t->name, name);
}

/* Asserts `is` (cJSON_IsTrue, cJSON_IsNull, ...) of the member `name` of
 * the config block that `o` and `c` give; with `is` NULL, that it is absent. */
static void assert_config_member(const gs_common_options *o, const gs_run_config *c,
                                 const char *name, cJSON_bool (*is)(const cJSON *)) {
  cJSON *config = gs_common_config_json(o, c, NULL, NULL);
  assert_non_null(config);
  const cJSON *member = cJSON_GetObjectItemCaseSensitive(config, name);
  if (is)
    assert_true(is(member));
  else
    assert_null(member);
  cJSON_Delete(config);
}

static void test_arrival_times_option(void **unused) {
  (void)unused;
  // --arrival-times: default 1 (recording), 0 into the run config's
  // no_arrival_times; config.arrival_times only where the command takes it.
  gs_common_options o;
  gs_run_config c;
  gs_common_init(&o, GS_GROUP_MEASURE);
  assert_count_option(&o, "arrival-times", 1);
  o.backend_choice = GS_BACKEND_CHOICE_CPU;
  o.ranks = 2;
  o.given_ranks = 1;
  assert_int_equal(gs_common_resolve(&o, 0, &c), GS_OK);
  assert_int_equal(c.no_arrival_times, 0);
  assert_config_member(&o, &c, "arrival_times", cJSON_IsTrue);
  o.arrival_times = 0;
  assert_int_equal(gs_common_resolve(&o, 0, &c), GS_OK);
  assert_int_equal(c.no_arrival_times, 1);
  assert_config_member(&o, &c, "arrival_times", cJSON_IsFalse);
  // A command without the group (exec) neither lists nor writes it, and
  // its configuration records (the default).
  gs_common_init(&o, GS_GROUP_OUTPUT | GS_GROUP_BACKEND | GS_GROUP_RANKS);
  assert_not_listed(&o, "arrival-times");
  o.backend_choice = GS_BACKEND_CHOICE_CPU;
  assert_int_equal(gs_common_resolve(&o, 0, &c), GS_OK);
  assert_int_equal(c.no_arrival_times, 0);
  assert_config_member(&o, &c, "arrival_times", NULL);
}

/* The runner's defaults on CUDA: --arrival-times off (its cost over 1% of
 * mlp's step, docs/stragglers.md) and at most 4 CTAs per collective where
 * the workload's collectives overlap its compute (mlp data parallel, not
 * with --pp; docs/workloads/mlp.md), NCCL's default elsewhere; on the cpu
 * backend recording on and NCCL's default. Given, each option is obeyed. */
static void test_runner_cuda_defaults(void **unused) {
  (void)unused;
  const gs_workload_driver *runner = &gs_runner_driver;
  assert_non_null(runner->configure);
  const gs_workload *mlp = gs_workload_find("mlp"), *voxelize = gs_workload_find("voxelize");
  assert_non_null(mlp);
  assert_non_null(voxelize);
  const char *none[] = {NULL}, *pp[] = {"--pp", "2", NULL};
  void *dp_opts = workload_options(mlp, none), *pp_opts = workload_options(mlp, pp);
  void *vox_opts = workload_options(voxelize, none);
  gs_run_config c = {.backend = GS_BACKEND_CUDA};
  gs_given_options given = {0};
  assert_int_equal(runner->configure(mlp, dp_opts, &given, &c), GS_OK);
  assert_int_equal(c.no_arrival_times, 1);
  assert_int_equal(c.nccl_max_ctas, 4);
  c = (gs_run_config){.backend = GS_BACKEND_CUDA};
  assert_int_equal(runner->configure(mlp, pp_opts, &given, &c), GS_OK);
  assert_int_equal(c.nccl_max_ctas, 0);
  c = (gs_run_config){.backend = GS_BACKEND_CUDA};
  assert_int_equal(runner->configure(voxelize, vox_opts, &given, &c), GS_OK);
  assert_int_equal(c.nccl_max_ctas, 0);
  c = (gs_run_config){.backend = GS_BACKEND_CPU};
  assert_int_equal(runner->configure(mlp, dp_opts, &given, &c), GS_OK);
  assert_int_equal(c.no_arrival_times, 0);
  assert_int_equal(c.nccl_max_ctas, 0);
  given.arrival_times = 1;
  given.nccl_max_ctas = 1;
  c = (gs_run_config){.backend = GS_BACKEND_CUDA, .nccl_max_ctas = 16};
  assert_int_equal(runner->configure(mlp, dp_opts, &given, &c), GS_OK);
  assert_int_equal(c.no_arrival_times, 0);
  assert_int_equal(c.nccl_max_ctas, 16);
  c = (gs_run_config){.backend = GS_BACKEND_CUDA, .nccl_max_ctas = 0};
  assert_int_equal(runner->configure(mlp, dp_opts, &given, &c), GS_OK);
  assert_int_equal(c.nccl_max_ctas, 0);
  mlp->options_free(dp_opts);
  mlp->options_free(pp_opts);
  voxelize->options_free(vox_opts);
}

static void test_nccl_max_ctas_option(void **unused) {
  (void)unused;
  // --nccl-max-ctas: 0..GS_COMM_MAX_CTAS, default 0 (NCCL's default) into
  // the run config; N > 0 on the cpu backend is a usage error naming it;
  // config.nccl_max_ctas is null there, and absent without the group.
  gs_common_options o;
  gs_run_config c;
  gs_common_init(&o, GS_GROUP_MEASURE);
  assert_count_option(&o, "nccl-max-ctas", GS_COMM_MAX_CTAS);
  o.backend_choice = GS_BACKEND_CHOICE_CPU;
  assert_int_equal(gs_common_resolve(&o, 0, &c), GS_OK);
  assert_int_equal(c.nccl_max_ctas, 0);
  assert_config_member(&o, &c, "nccl_max_ctas", cJSON_IsNull);
  o.nccl_max_ctas = 4;
  o.given_nccl_max_ctas = 1;
  assert_int_equal(gs_common_resolve(&o, 0, &c), GS_ERR_USAGE);
  assert_error_mentions("option --nccl-max-ctas 4 applies to the cuda backend");
  // What a CUDA measurement's document says: the number, or null for 0.
  c = (gs_run_config){.backend = GS_BACKEND_CUDA, .nccl_max_ctas = 4};
  cJSON *config = gs_common_config_json(&o, &c, NULL, NULL);
  const cJSON *n = cJSON_GetObjectItemCaseSensitive(config, "nccl_max_ctas");
  assert_true(cJSON_IsNumber(n));
  assert_int_equal(n->valueint, 4);
  cJSON_Delete(config);
  c.nccl_max_ctas = 0;
  assert_config_member(&o, &c, "nccl_max_ctas", cJSON_IsNull);
  gs_common_init(&o, GS_GROUP_OUTPUT | GS_GROUP_BACKEND | GS_GROUP_RANKS);
  assert_not_listed(&o, "nccl-max-ctas");
  o.backend_choice = GS_BACKEND_CHOICE_CPU;
  assert_int_equal(gs_common_resolve(&o, 0, &c), GS_OK);
  assert_config_member(&o, &c, "nccl_max_ctas", NULL);
}

static void test_resolve_gpus_options(void **unused) {
  (void)unused;
  // --gpus and --ngpus: conflicts and malformed lists are usage errors on a
  // machine without GPUs too, naming the option.
  gs_common_options o;
  gs_run_config c;
  gs_common_init(&o, GS_GROUP_MEASURE);
  o.gpus_text = "0";
  o.given_gpus = 1;
  o.ngpus = 2;
  o.given_ngpus = 1;
  assert_int_equal(gs_common_resolve(&o, 0, &c), GS_ERR_USAGE);
  assert_error_mentions("options --gpus and --ngpus conflict");
  o.given_gpus = 0;
  o.ranks = 2;
  o.given_ranks = 1;
  assert_int_equal(gs_common_resolve(&o, 0, &c), GS_ERR_USAGE);
  assert_error_mentions("options --ngpus and --ranks conflict");
  o.given_ranks = 0;
  o.given_ngpus = 0;
  o.given_gpus = 1;
  o.gpus_text = "0-";
  assert_int_equal(gs_common_resolve(&o, 0, &c), GS_ERR_USAGE);
  assert_error_mentions("option --gpus");
  // On the cpu backend either is a usage error naming it.
  o.gpus_text = "0";
  o.backend_choice = GS_BACKEND_CHOICE_CPU;
  assert_int_equal(gs_common_resolve(&o, 0, &c), GS_ERR_USAGE);
  assert_error_mentions("option --gpus applies to the cuda backend");
  o.given_gpus = 0;
  o.given_ngpus = 1;
  assert_int_equal(gs_common_resolve(&o, 0, &c), GS_ERR_USAGE);
  assert_error_mentions("option --ngpus applies to the cuda backend");
}

static void test_resolve_cpu_ranks(void **unused) {
  (void)unused;
  gs_common_options o;
  gs_run_config c;
  gs_common_init(&o, GS_GROUP_MEASURE | GS_GROUP_SCALE);
  o.backend_choice = GS_BACKEND_CHOICE_CPU;
  o.given_backend = 1;
  o.ranks = 3;
  o.given_ranks = 1;
  assert_int_equal(gs_common_resolve(&o, 1, &c), GS_OK);
  assert_int_equal(c.backend, GS_BACKEND_CPU);
  assert_int_equal(c.world_size, 3);
  for (int k = 0; k < 3; k++) assert_int_equal(c.devices[k], -1);
  assert_int_equal(c.scaling, GS_SCALING_STRONG);
  o.scaling_choice = GS_SCALING_CHOICE_WEAK;
  assert_int_equal(gs_common_resolve(&o, 1, &c), GS_OK);
  assert_int_equal(c.scaling, GS_SCALING_WEAK);
  // Conflicts name their options.
  o.given_gpus = 1;
  o.gpus_text = "0";
  assert_int_equal(gs_common_resolve(&o, 1, &c), GS_ERR_USAGE);
  assert_error_mentions("--gpus");
  o.given_gpus = 0;
  o.given_iters = o.given_min_time = 1;
  assert_int_equal(gs_common_resolve(&o, 1, &c), GS_ERR_USAGE);
  assert_error_mentions("--iters and --min-time");
  o.given_iters = o.given_min_time = 0;
  o.telemetry_interval = 0.001;
  assert_int_equal(gs_common_resolve(&o, 1, &c), GS_ERR_USAGE);
  assert_error_mentions("--telemetry-interval");
}

static void test_counts(void **unused) {
  (void)unused;
  gs_common_options o;
  gs_run_config c;
  gs_u64_list counts;
  gs_common_init(&o, GS_GROUP_MEASURE | GS_GROUP_SCALE);
  memset(&c, 0, sizeof c);
  c.world_size = 6;
  assert_int_equal(gs_common_counts(&o, &c, 1, &counts), GS_OK);
  assert_int_equal(counts.n, 4);
  assert_true(counts.v[0] == 1 && counts.v[1] == 2 && counts.v[2] == 4 && counts.v[3] == 6);
  assert_int_equal(gs_common_counts(&o, &c, 0, &counts), GS_OK);
  assert_true(counts.n == 1 && counts.v[0] == 6);
  o.given_counts = 1;
  o.counts.n = 2;
  o.counts.v[0] = 1;
  o.counts.v[1] = 8;
  assert_int_equal(gs_common_counts(&o, &c, 1, &counts), GS_ERR_USAGE);
  assert_error_mentions("--counts");
  o.counts.v[1] = 3;
  assert_int_equal(gs_common_counts(&o, &c, 1, &counts), GS_OK);
  assert_true(counts.n == 2 && counts.v[1] == 3);
}

/* Every workload has a driver: its own, or the runner's for fixed steps.
 * A driver's defaults apply where the user gave none and it refuses what
 * does not apply; the runner's change nothing and allow a split. */
static void test_configure(void **unused) {
  (void)unused;
  const gs_workload *llm = gs_workload_find("llm");
  const gs_workload *vox = gs_workload_find("voxelize");
  assert_non_null(llm);
  assert_non_null(vox);
  assert_ptr_equal(gs_runner_driver_of(llm), llm->driver);
  assert_ptr_equal(gs_runner_driver_of(vox), &gs_runner_driver);
  assert_non_null(gs_runner_driver.split);
  assert_null(llm->driver->split);
  gs_common_options o;
  gs_run_config c;
  gs_common_init(&o, GS_GROUP_MEASURE | GS_GROUP_SCALE | GS_GROUP_SPLIT);
  o.backend_choice = GS_BACKEND_CHOICE_CPU;
  void *lopts = llm->options_new();
  void *vopts = vox->options_new();
  assert_int_equal(gs_common_resolve(&o, 0, &c), GS_OK);
  assert_int_equal(gs_common_configure(&o, vox, vopts, &c), GS_OK);
  assert_int_equal(c.runs, 3);
  assert_int_equal(gs_common_configure(&o, llm, lopts, &c), GS_OK);
  assert_int_equal(c.runs, llm->driver->default_runs);
  assert_int_equal(c.warmup, llm->driver->default_warmup);
  o.runs = 5;
  o.given_runs = 1;
  assert_int_equal(gs_common_resolve(&o, 0, &c), GS_OK);
  assert_int_equal(gs_common_configure(&o, llm, lopts, &c), GS_OK);
  assert_int_equal(c.runs, 5);
  o.given_iters = 1;
  assert_int_equal(gs_common_configure(&o, llm, lopts, &c), GS_ERR_USAGE);
  assert_error_mentions("--iters");
  o.given_iters = 0;
  c.split_proportional = 1;
  assert_int_equal(gs_common_configure(&o, llm, lopts, &c), GS_ERR_USAGE);
  assert_error_mentions("--split");
  assert_int_equal(gs_common_configure(&o, vox, vopts, &c), GS_OK);
  llm->options_free(lopts);
  vox->options_free(vopts);
}

static void test_result_status(void **unused) {
  (void)unused;
  gs_measurement ms[2];
  memset(ms, 0, sizeof ms);
  assert_string_equal(gs_common_result_status(ms, 2, 1), "ok");
  // A sweep still under way says partial: a crash now keeps what it holds.
  assert_string_equal(gs_common_result_status(ms, 2, 0), "partial");
  ms[1].status = GS_ERR_VERIFY;
  assert_string_equal(gs_common_result_status(ms, 2, 1), "partial");
  ms[0].status = GS_ERR_CUDA;
  assert_string_equal(gs_common_result_status(ms, 2, 1), "failed");
  // A failed measurement that kept samples (a lost rank) is partial.
  double wall[1] = {1.0};
  gs_rank_record rank = {.n_samples = 1, .wall_seconds = wall};
  gs_run_record run = {.n_ranks = 1, .ranks = &rank};
  ms[0].n_runs = 1;
  ms[0].runs = &run;
  assert_string_equal(gs_common_result_status(ms, 2, 1), "partial");
}

typedef struct {
  size_t variants, measured, done_calls, done_count;
} seen;

/* Faults of the next sweep_voxelize (NULL: none), and whether its
 * sweep_done then records an error of its own. */
static const char *sweep_faults;
static int sweep_done_fails;

static void variant_done(void *ctx, const gs_sweep *sw, const gs_measurement *ms,
                         const gs_telemetry *tm, size_t count) {
  (void)sw;
  (void)ms;
  (void)tm;
  seen *s = ctx;
  s->variants++;
  s->measured += count;
}

static void sweep_done(void *ctx, const gs_sweep *sw, void *driver_ctx, const gs_measurement *ms,
                       const gs_telemetry *tm, size_t count) {
  (void)sw;
  (void)driver_ctx;
  (void)ms;
  (void)tm;
  seen *s = ctx;
  s->done_calls++;
  s->done_count = count;
  if (sweep_done_fails) gs_error(GS_ERR_FORMAT, "an error after the first failure");
}

/* The common options of a quiet scale on `ranks` CPU rank threads. */
static void cpu_scale_options(gs_common_options *o, int ranks) {
  gs_common_init(o, GS_GROUP_MEASURE | GS_GROUP_SCALE);
  o->backend_choice = GS_BACKEND_CHOICE_CPU;
  o->ranks = (uint64_t)ranks;
  o->given_ranks = 1;
  o->no_progress = 1;
  o->quiet = 1;
}

/* Runs a strong-scaling sweep of voxelize on `ranks` CPU threads into
 * `path` at `counts`; the observer's record in *s. */
/* Runs and order of sweep_voxelize's sweeps (0: one run; the default order). */
static uint64_t sweep_runs;
static int sweep_order;

static gs_status sweep_voxelize(const char *path, const char *clouds, int ranks,
                                const gs_u64_list *counts, seen *s) {
  const gs_workload *w = gs_workload_find("voxelize");
  const char *args[] = {"--points", "2000", "--clouds", clouds, "--grid", "16", NULL};
  void *opts = workload_options(w, args);
  gs_common_options o;
  gs_run_config c;
  cpu_scale_options(&o, ranks);
  o.iters = 3;
  o.given_iters = 1;
  o.runs = sweep_runs ? sweep_runs : 1;
  o.order_choice = sweep_order;
  o.warmup = 0;
  assert_int_equal(gs_common_resolve(&o, 1, &c), GS_OK);
  if (sweep_faults) assert_int_equal(gs_fault_parse(sweep_faults, &c.faults), GS_OK);
  gs_environment env;
  assert_int_equal(gs_common_environment(&env), GS_OK);
  memset(s, 0, sizeof *s);
  const gs_sweep_observer observer = {.ctx = s, .variant_done = variant_done,
                                      .sweep_done = sweep_done};
  const gs_sweep sw = {.command = "scale", .workload = w,
                       .workload_opts = opts, .common = &o, .config = &c, .env = &env,
                       .path = path, .job = NULL, .observer = &observer};
  gs_status st = gs_measure_sweep(&sw, counts);
  gs_environment_free(&env);
  w->options_free(opts);
  return st;
}

static void test_sweep_writes_and_tells(void **state) {
  char path[512];
  path_in(*state, "sweep.json", path, sizeof path);
  gs_u64_list counts = {.n = 2, .v = {1, 2}};
  seen s;
  assert_int_equal(sweep_voxelize(path, "4", 2, &counts, &s), GS_OK);
  assert_int_equal(s.variants, 1);
  assert_int_equal(s.measured, 2);
  assert_true(s.done_calls == 1 && s.done_count == 2);
  cJSON *doc = NULL;
  assert_int_equal(gs_result_read(path, &doc), GS_OK);
  const cJSON *ms = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
  assert_int_equal(cJSON_GetArraySize(ms), 2);
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(doc, "status")->valuestring, "ok");
  cJSON_Delete(doc);
}

/* The runs of measurement `i` of `doc`: each one's "sequence" into seq[],
 * and whether their start times rise with it. Returns the number of runs. */
static int run_sequences(const cJSON *doc, int i, int *seq) {
  const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "measurements"), i);
  const cJSON *runs = cJSON_GetObjectItemCaseSensitive(m, "runs");
  int n = 0;
  double last = 0.0;
  const cJSON *r = NULL;
  cJSON_ArrayForEach(r, runs) {
    seq[n++] = cJSON_GetObjectItemCaseSensitive(r, "sequence")->valueint;
    const double t = cJSON_GetObjectItemCaseSensitive(r, "started_unix_seconds")->valuedouble;
    assert_true(t > last);
    last = t;
  }
  return n;
}

static const char *member_text(const cJSON *o, const char *a, const char *b) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
  return cJSON_GetObjectItemCaseSensitive(x, b)->valuestring;
}

/* Rank counts measured interleaved (the default): one run of each count per
 * round, merged into its count's measurement; sequential: a count's runs
 * together. Either way a measurement holds every run of its count, and its
 * verification and statistics cover them all. */
static void test_sweep_interleaves(void **state) {
  char path[512];
  path_in(*state, "order.json", path, sizeof path);
  gs_u64_list counts = {.n = 2, .v = {1, 2}};
  seen s;
  sweep_runs = 3;
  assert_int_equal(sweep_voxelize(path, "4", 2, &counts, &s), GS_OK);
  assert_true(s.variants == 1 && s.done_count == 2);
  cJSON *doc = NULL;
  assert_int_equal(gs_result_read(path, &doc), GS_OK);
  assert_string_equal(member_text(doc, "config", "order"), "interleaved");
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(doc, "status")->valuestring, "ok");
  int seq[8];
  assert_int_equal(run_sequences(doc, 0, seq), 3);
  assert_true(seq[0] == 0 && seq[1] == 2 && seq[2] == 4);
  assert_int_equal(run_sequences(doc, 1, seq), 3);
  assert_true(seq[0] == 1 && seq[1] == 3 && seq[2] == 5);
  for (int i = 0; i < 2; i++) {
    const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "measurements"), i);
    const cJSON *agg = cJSON_GetObjectItemCaseSensitive(m, "aggregate");
    // 3 timed steps in each of 3 runs; every rank of every run verified.
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(agg, "step"), "n")->valueint, 9);
    assert_non_null(strstr(member_text(m, "verification", "detail"), i == 0 ? "3 of 3" : "6 of 6"));
  }
  cJSON_Delete(doc);

  sweep_order = GS_ORDER_CHOICE_SEQUENTIAL;
  assert_int_equal(sweep_voxelize(path, "4", 2, &counts, &s), GS_OK);
  assert_int_equal(gs_result_read(path, &doc), GS_OK);
  assert_string_equal(member_text(doc, "config", "order"), "sequential");
  assert_int_equal(run_sequences(doc, 0, seq), 3);
  assert_true(seq[0] == 0 && seq[1] == 1 && seq[2] == 2);
  assert_int_equal(run_sequences(doc, 1, seq), 3);
  assert_true(seq[0] == 3 && seq[1] == 4 && seq[2] == 5);
  cJSON_Delete(doc);
  sweep_order = GS_ORDER_CHOICE_INTERLEAVED;

  // A count that fails is not measured again; the others go on, and the
  // document keeps the failed run and ends partial.
  sweep_faults = "kill:rank=1,after=1";
  assert_int_equal(sweep_voxelize(path, "4", 2, &counts, &s), GS_ERR_PARTIAL);
  sweep_faults = NULL;
  sweep_runs = 0;
  assert_int_equal(gs_result_read(path, &doc), GS_OK);
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(doc, "status")->valuestring, "partial");
  assert_int_equal(run_sequences(doc, 0, seq), 3);
  assert_true(seq[0] == 0 && seq[1] == 2 && seq[2] == 3);
  assert_int_equal(run_sequences(doc, 1, seq), 1);
  assert_int_equal(seq[0], 1);
  const cJSON *two = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "measurements"), 1);
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(two, "status")->valuestring, "rank-lost");
  cJSON_Delete(doc);
}

/* More ranks than work units: refused before anything is measured, and a
 * document already at the path stays byte for byte. */
static void test_sweep_usage_error_writes_nothing(void **state) {
  char path[512];
  path_in(*state, "kept.json", path, sizeof path);
  static const char old[] = "{\"an\": \"earlier document\"}\n";
  write_text(path, old);
  gs_u64_list counts = {.n = 2, .v = {1, 4}};
  seen s;
  assert_int_equal(sweep_voxelize(path, "2", 4, &counts, &s), GS_ERR_USAGE);
  assert_int_equal(s.measured, 0);
  char buf[128] = "";
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  assert_string_equal(buf, old);
  assert_int_equal(count_entries(((fixture *)*state)->dir, ".tmp"), 0);
}

/* ---- a driver of the test's own: the sweep calls the one interface ------- */

/* What the sweep asked of the test's driver. */
typedef struct {
  int opens, checks, closes, annotates;
  size_t capacity, measured;
  size_t indices[8];
  int sizes[8];
} hook_log;

static hook_log hooks;

static gs_status log_open(const gs_workload *workload, const void *opts, const gs_environment *env,
                          size_t count, void **ctx) {
  (void)workload;
  (void)opts;
  (void)env;
  hooks.opens++;
  hooks.capacity = count;
  *ctx = &hooks;
  return GS_OK;
}

/* Refuses more than 2 ranks, as a runner refuses a split of too few units. */
static gs_status log_check(void *ctx, const gs_run_config *config) {
  ((hook_log *)ctx)->checks++;
  if (config->world_size > 2)
    return gs_error(GS_ERR_USAGE, "option --log: %d ranks", config->world_size);
  return GS_OK;
}

static gs_status log_measure(void *ctx, const gs_run_config *config, size_t index,
                             gs_measurement *out) {
  hook_log *h = ctx;
  memset(out, 0, sizeof *out);
  snprintf(out->workload, sizeof out->workload, "log");
  snprintf(out->backend, sizeof out->backend, "cpu");
  out->world_size = config->world_size;
  h->indices[h->measured] = index;
  h->sizes[h->measured++] = config->world_size;
  return GS_OK;
}

static gs_status log_annotate(void *ctx, const gs_measurement *m, cJSON *measurement,
                              size_t index) {
  (void)m;
  ((hook_log *)ctx)->annotates++;
  return cJSON_AddNumberToObject(measurement, "log_index", (double)index)
             ? GS_OK
             : gs_error(GS_ERR_NOMEM, "cannot annotate");
}

static void log_close(void *ctx) {
  if (ctx) ((hook_log *)ctx)->closes++;
}

static const gs_workload_driver log_driver = {
    .open = log_open, .check = log_check, .measure = log_measure,
    .annotate = log_annotate, .close = log_close};

static cJSON *log_options_json(const void *opts) {
  (void)opts;
  return cJSON_CreateObject();
}

static const gs_workload log_workload = {.key = "log", .item_unit = "items",
                                         .options_to_json = log_options_json,
                                         .driver = &log_driver};

/* Sweeps log_workload on `ranks` CPU ranks at `counts` into `path`. */
static gs_status sweep_log(const char *path, int ranks, const gs_u64_list *counts) {
  gs_common_options o;
  gs_run_config c;
  cpu_scale_options(&o, ranks);
  assert_int_equal(gs_common_resolve(&o, 1, &c), GS_OK);
  assert_int_equal(gs_common_configure(&o, &log_workload, NULL, &c), GS_OK);
  gs_environment env;
  assert_int_equal(gs_common_environment(&env), GS_OK);
  memset(&hooks, 0, sizeof hooks);
  const gs_sweep sw = {.command = "scale", .workload = &log_workload, .common = &o,
                       .config = &c, .env = &env, .path = path};
  gs_status st = gs_measure_sweep(&sw, counts);
  gs_environment_free(&env);
  return st;
}

/* One open for the whole sweep with room for every measurement, a check
 * of every count before any measuring, each measurement by its index, its
 * annotation in every document written, one close. */
static void test_sweep_calls_the_driver(void **state) {
  char path[512];
  path_in(*state, "log.json", path, sizeof path);
  const gs_u64_list counts = {.n = 2, .v = {1, 2}};
  assert_int_equal(sweep_log(path, 2, &counts), GS_OK);
  assert_int_equal(hooks.opens, 1);
  assert_int_equal(hooks.capacity, 4);
  assert_int_equal(hooks.checks, 2);
  assert_int_equal(hooks.measured, 2);
  assert_true(hooks.indices[0] == 0 && hooks.sizes[0] == 1);
  assert_true(hooks.indices[1] == 1 && hooks.sizes[1] == 2);
  // Rewritten after each measurement: 1 annotation, then 2.
  assert_int_equal(hooks.annotates, 3);
  assert_int_equal(hooks.closes, 1);
  cJSON *doc = NULL;
  assert_int_equal(gs_result_read(path, &doc), GS_OK);
  const cJSON *ms = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
  assert_int_equal(cJSON_GetArraySize(ms), 2);
  const cJSON *second = cJSON_GetArrayItem(ms, 1);
  assert_int_equal(cJSON_GetObjectItemCaseSensitive(second, "log_index")->valueint, 1);
  cJSON_Delete(doc);

  // A count the driver refuses: nothing measured, nothing written, closed.
  path_in(*state, "log-refused.json", path, sizeof path);
  const gs_u64_list too_many = {.n = 2, .v = {1, 4}};
  assert_int_equal(sweep_log(path, 4, &too_many), GS_ERR_USAGE);
  assert_error_mentions("--log");
  assert_int_equal(hooks.measured, 0);
  assert_int_equal(hooks.closes, 1);
  assert_int_equal(access(path, F_OK), -1);
}

/* Rank 0 stops at step 1 of both measurements; what fails later (here the
 * observer) does not replace the first failure's error, which the command
 * prints, and the document holds both measurements. */
static void test_sweep_keeps_first_error(void **state) {
  char path[512];
  path_in(*state, "failed.json", path, sizeof path);
  gs_u64_list counts = {.n = 2, .v = {1, 2}};
  seen s;
  sweep_faults = "kill:rank=0,after=1";
  sweep_done_fails = 1;
  gs_status st = sweep_voxelize(path, "4", 2, &counts, &s);
  sweep_faults = NULL;
  sweep_done_fails = 0;
  assert_int_equal(st, GS_ERR_PARTIAL);
  assert_int_equal(s.done_count, 2);
  assert_non_null(strstr(gs_last_error(), "killed by fault injection (kill:rank=0,after=1)"));
  cJSON *doc = NULL;
  assert_int_equal(gs_result_read(path, &doc), GS_OK);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "measurements")), 2);
  cJSON_Delete(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpus_lists_and_ranges),
      cmocka_unit_test(test_gpus_refused),
      cmocka_unit_test(test_common_groups),
      cmocka_unit_test(test_arrival_times_option),
      cmocka_unit_test(test_nccl_max_ctas_option),
      cmocka_unit_test(test_runner_cuda_defaults),
      cmocka_unit_test(test_resolve_gpus_options),
      cmocka_unit_test(test_resolve_cpu_ranks),
      cmocka_unit_test(test_counts),
      cmocka_unit_test(test_configure),
      cmocka_unit_test(test_result_status),
      cmocka_unit_test_setup_teardown(test_sweep_writes_and_tells, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_sweep_usage_error_writes_nothing,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_sweep_interleaves, setup, teardown),
      cmocka_unit_test_setup_teardown(test_sweep_calls_the_driver, setup, teardown),
      cmocka_unit_test_setup_teardown(test_sweep_keeps_first_error, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
