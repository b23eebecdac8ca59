/* `gpuscale exec [options] -- COMMAND [ARGS...]`: the user's own program at
 * 1, 2, 4 ... GPUs into one result document (docs/exec.md). Parses the
 * options, checks the output, then measures through the sweep of run and
 * scale with exec's driver (measure/exec.h) and prints its tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "cli/summary.h"
#include "runner/runner_driver.h"
#include "core/check.h"
#include "measure/exec.h"
#include "measure/sweep.h"

/* Options with no meaning for a command run as a whole, and why: listed by
 * no help page, refused with the reason. */
static const gs_option refused[] = {
    {.name = "ranks", .kind = GS_OPT_REFUSED, .help = "without GPUs --counts sets {n}"},
    {.name = "iters", .short_name = 'n', .kind = GS_OPT_REFUSED,
     .help = "the command decides its own steps; --runs repeats it"},
    {.name = "min-time", .kind = GS_OPT_REFUSED,
     .help = "the command decides its own steps; --runs repeats it"},
    {.name = "seed", .kind = GS_OPT_REFUSED, .help = "the command makes its own data"},
    {.kind = GS_OPT_END}};

/* The common groups exec takes (see `refused` for the others). */
#define EXEC_GROUPS                                                                          \
  (GS_GROUP_OUTPUT | GS_GROUP_BACKEND | GS_GROUP_GPUS | GS_GROUP_WARMUP | GS_GROUP_RUNS |      \
   GS_GROUP_SCALE | GS_GROUP_TELEMETRY | GS_GROUP_TIMEOUT | GS_GROUP_TRACE)

/* The common options in exec's words. */
static const gs_cli_wording wording[] = {
    {"warmup", "untimed runs of the command before a count's first timed run"},
    {"runs", "timed runs of the command at each count"},
    {"timeout", "longest a run may take: then its process group is stopped and the run fails "
                "(0: no limit)"},
    {"counts", "GPU counts to run at, {n} (default 1,2,4,... and every selected GPU; 1 on a "
               "machine without GPUs)"},
    {"out", "result file (default results/exec-<program>.json); the runs' output goes to FILE "
            "without .json, plus .logs/"},
    {"scaling", "strong: the command does the same total work at every count; weak: the same "
                "work per GPU"},
    {NULL, NULL}};

/* The common options with exec's defaults and wording. */
static void init_common(gs_common_options *common) {
  gs_common_init(common, EXEC_GROUPS);
  gs_common_driver_defaults(common, gs_runner_driver_of(gs_exec_workload()));
  common->timeout = 0.0;
  gs_cli_reword_options(common->table, wording);
}

static void print_help(const gs_common_options *common, const gs_exec_options *eo) {
  gs_help_usage("gpuscale exec [options] -- COMMAND [ARGS...]");
  gs_help_para(
      "Runs your own program at each GPU count (--warmup untimed and --runs timed runs each)\n"
      "and writes one result document with its figure, speedup and efficiency and the GPUs'\n"
      "telemetry, which report and compare read like any other. In COMMAND, {n} is the GPU\n"
      "count of the step and {gpus} its GPUs (0,1); CUDA_VISIBLE_DEVICES is set to them.\n"
      "The figure: lines the program prints as {\"metric\": NAME, \"value\": V, \"unit\": U,\n"
      "\"step\": S} (docs/exec.md), a --metric NAME=REGEX, or else each run's wall time.\n"
      "A step time may say the items its step processed ({..., \"items\": 4096, \"item_unit\":\n"
      "\"samples\"}, or --items N): the throughput then counts them.\n"
      "A run that exits non-zero, is killed, times out or misses its metric fails with the\n"
      "end of its stderr; what was measured is kept (exit 4), also on Ctrl-C. Example:");
  gs_help_example("gpuscale exec --counts 1,2,4 -- torchrun --nproc_per_node={n} examples/ddp_mlp.py");
  gs_help_options("Options of exec", eo->table);
  gs_common_describe(common, gs_help_options);
}

static gs_status reject_positional(void *ctx, const char *arg) {
  (void)ctx;
  return gs_error(GS_ERR_USAGE, "gpuscale exec: unexpected argument '%s' (the command goes "
                  "after --)", arg);
}

/* Parses "[options] -- COMMAND [ARGS...]" into the two option sets. */
static gs_status parse(int argc, char **argv, gs_common_options *common, gs_exec_options *eo,
                       int *help_shown) {
  *help_shown = 0;
  init_common(common);
  gs_exec_options_init(eo);
  int dashes = 0;
  while (dashes < argc && strcmp(argv[dashes], "--") != 0) dashes++;
  if (gs_cli_wants_help(dashes, argv)) {
    print_help(common, eo);
    *help_shown = 1;
    return GS_OK;
  }
  const gs_option *tables[] = {common->table, eo->table, refused, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale exec", dashes, argv, reject_positional, NULL));
  if (dashes == argc)
    return gs_error(GS_ERR_USAGE, "gpuscale exec: missing '-- COMMAND' (see 'gpuscale exec "
                    "--help')");
  eo->argc = argc - dashes - 1;
  eo->argv = argv + dashes + 1;
  GS_TRY(gs_exec_options_check(eo));
  gs_set_quiet(common->quiet);
  return GS_OK;
}

static gs_status measure(gs_common_options *common, gs_exec_options *eo, const char *path) {
  gs_measure_job *job = calloc(1, sizeof *job);
  if (!job) return gs_error(GS_ERR_NOMEM, "cannot allocate the job");
  gs_run_config config;
  gs_u64_list counts = {0};
  gs_environment env = {0};
  gs_status status = gs_measure_job_start_local(job, "exec");
  if (status == GS_OK) status = gs_measure_job_trace(job, common, path);
  if (status == GS_OK) status = gs_exec_prepare(common, eo, &config, &counts, path);
  if (status == GS_OK) status = gs_common_configure(common, gs_exec_workload(), eo, &config);
  config.trace = job->trace;
  if (status == GS_OK) status = gs_common_environment(&env);
  if (status == GS_OK) {
    const gs_sweep_observer printer = gs_summary_observer(NULL);
    const gs_sweep sweep = {.command = "exec", .workload = gs_exec_workload(),
                            .workload_opts = eo, .common = common, .config = &config,
                            .env = &env, .path = path, .job = job, .observer = &printer};
    status = gs_measure_sweep(&sweep, &counts);
  }
  status = gs_measure_job_finish(job, status);
  free(job);
  gs_environment_free(&env);
  return status;
}

gs_status gs_cmd_exec(int argc, char **argv) {
  gs_common_options common;
  gs_exec_options *eo = calloc(1, sizeof *eo);
  if (!eo) return gs_error(GS_ERR_NOMEM, "cannot allocate the options of exec");
  int help_shown = 0;
  gs_status status = parse(argc, argv, &common, eo, &help_shown);
  char path[GS_TEXT_LONG];
  if (status == GS_OK && !help_shown) {
    if (common.out)
      snprintf(path, sizeof path, "%s", common.out);
    else
      gs_exec_default_out(eo, path, sizeof path);
    // Checked before anything runs: a bad --out costs no time, writes nothing.
    status = gs_file_check_output(path, "option --out");
    if (status == GS_OK) status = measure(&common, eo, path);
  }
  gs_exec_options_free(eo);
  free(eo);
  return status;
}
