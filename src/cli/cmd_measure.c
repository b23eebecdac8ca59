/* `gpuscale run` and `gpuscale scale`: one workload at one rank count, or
 * swept over rank counts, into one result document. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "cli/summary.h"
#include "runner/runner_driver.h"
#include "measure/decide.h"
#include "measure/sweep.h"
#include "core/check.h"
#include "core/file.h"

/* Parses "COMMAND WORKLOAD [options]" for run and scale: finds the workload
 * (argv[0]), its options and the common ones. *wopts is allocated (free with
 * workload->options_free). Returns GS_OK, GS_ERR_USAGE, or GS_OK with
 * *help_shown = 1 when --help was asked for. */
static void print_measure_help(const char *command, unsigned features, const gs_workload *w,
                               void *wopts, gs_common_options *common) {
  gs_help_usage("gpuscale %s WORKLOAD [options]", command);
  if (strcmp(command, "run") == 0)
    gs_help_para("Measures one workload on the chosen GPUs (or CPU ranks) and writes a result file.");
  else
    gs_help_para("Measures one workload at 1, 2, 4, ... ranks (strong or weak scaling) into one\n"
                 "result file and prints speedup and parallel efficiency against 1 rank.");
  gs_help_list("Workloads");
  size_t n = 0;
  const gs_workload *const *all = gs_workload_list(&n);
  for (size_t i = 0; i < n; i++) gs_help_item(all[i]->key, all[i]->summary);
  gs_common_init(common, features);
  // The table shows the defaults of the workload's driver.
  if (w) gs_common_driver_defaults(common, gs_runner_driver_of(w));
  gs_common_describe(common, gs_help_options);
  if (w) {
    char title[GS_TEXT_SHORT * 2];
    snprintf(title, sizeof title, "Options of %s", w->key);
    gs_help_options(title, w->options_table(wopts));
  } else {
    gs_help_para("'gpuscale %s WORKLOAD --help' lists the workload's own options.", command);
  }
}

static gs_status reject_positional(void *ctx, const char *arg) {
  return gs_error(GS_ERR_USAGE, "gpuscale %s: unexpected argument '%s'", (const char *)ctx, arg);
}

static gs_status parse_measure_command(const char *command, unsigned features, int argc, char **argv,
                           gs_common_options *common, const gs_workload **workload,
                           void **wopts, int *help_shown) {
  *workload = NULL;
  *wopts = NULL;
  *help_shown = 0;
  gs_common_init(common, features);
  const gs_workload *w = NULL;
  if (argc > 0 && argv[0][0] != '-') {
    w = gs_workload_find(argv[0]);
    if (!w) {
      size_t n = 0;
      const gs_workload *const *all = gs_workload_list(&n);
      char names[GS_TEXT_LONG] = "";
      size_t at = 0;
      for (size_t i = 0; i < n && at < sizeof names; i++)
        at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "", all[i]->key);
      return gs_error(GS_ERR_USAGE, "gpuscale %s: unknown workload '%s' (one of: %s)", command,
                      argv[0], names);
    }
  }
  void *opts = w ? w->options_new() : NULL;
  if (w && !opts) return gs_error(GS_ERR_NOMEM, "cannot allocate the options of %s", w->key);
  if (gs_cli_wants_help(argc, argv)) {
    print_measure_help(command, features, w, opts, common);
    if (w) w->options_free(opts);
    *help_shown = 1;
    return GS_OK;
  }
  if (!w) {
    return gs_error(GS_ERR_USAGE, "gpuscale %s: missing WORKLOAD (see 'gpuscale %s --help')",
                    command, command);
  }
  char name[GS_TEXT_SHORT * 2];
  snprintf(name, sizeof name, "gpuscale %s %s", command, w->key);
  const gs_option *tables[] = {common->table, w->options_table(opts), NULL};
  gs_status status = gs_options_parse(tables, name, argc - 1, argv + 1, reject_positional,
                                      (void *)command);
  if (status == GS_OK) status = w->options_check(opts);
  if (status != GS_OK) {
    w->options_free(opts);
    return status;
  }
  gs_set_quiet(common->quiet);
  *workload = w;
  *wopts = opts;
  return GS_OK;
}

/* run --gpu-mode: single keeps the first selected device, multi all of
 * them, auto decides from a short calibration and says why. */
static gs_status apply_gpu_mode(const gs_common_options *common, const gs_workload *w,
                                const void *wopts, const gs_environment *env,
                                gs_run_config *config, gs_u64_list *counts) {
  int chosen = config->world_size;
  if (common->gpu_mode_choice == GS_GPU_MODE_SINGLE) chosen = 1;
  if (common->gpu_mode_choice == GS_GPU_MODE_AUTO) {
    char why[GS_TEXT_ERROR];
    GS_TRY(gs_decide_calibrate(w, wopts, env, config, &chosen, why, sizeof why));
    if (!common->quiet) fprintf(stderr, "gpuscale: --gpu-mode auto: %s\n", why);
  }
  config->world_size = chosen;
  counts->n = 1;
  counts->v[0] = (uint64_t)chosen;
  return GS_OK;
}

static gs_status measure_command(const char *command, unsigned features, int default_all,
                                 int argc, char **argv) {
  gs_common_options common;
  const gs_workload *w = NULL;
  void *wopts = NULL;
  int help_shown = 0;
  GS_TRY(parse_measure_command(command, features, argc, argv, &common, &w, &wopts, &help_shown));
  if (help_shown) return GS_OK;
  // The output is checked before anything is measured: a bad --out costs
  // no time and writes nothing.
  char path[GS_TEXT_LONG];
  if (common.out)
    snprintf(path, sizeof path, "%s", common.out);
  else
    snprintf(path, sizeof path, "results/%s-%s.json", command, w->key);
  gs_status checked = gs_file_check_output(path, "option --out");
  if (checked != GS_OK) {
    w->options_free(wopts);
    return checked;
  }

  gs_run_config config;
  gs_environment env = {0};
  gs_measure_job *job = calloc(1, sizeof *job);
  if (!job) {
    w->options_free(wopts);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the job");
  }
  // --gpu-mode multi or auto means every GPU unless --gpus narrows it.
  const int all = default_all || (common.given_gpu_mode && common.gpu_mode_choice != GS_GPU_MODE_SINGLE);
  gs_status status = gs_measure_job_start(job, &common, all, &config);
  if (status == GS_OK && strcmp(command, "run") == 0) config.scaling = GS_SCALING_NONE;
  if (status == GS_OK && config.control && config.split_proportional)
    status = gs_error(GS_ERR_USAGE, "option --split proportional: not available under a "
                      "launcher yet (one process per rank); run it in one process");
  if (status == GS_OK) status = gs_common_configure(&common, w, wopts, &config);
  gs_u64_list counts = {0};
  if (status == GS_OK) status = gs_common_counts(&common, &config, features & GS_GROUP_SCALE, &counts);
  if (status == GS_OK) status = gs_common_environment(&env);
  if (status == GS_OK && common.given_gpu_mode)
    status = apply_gpu_mode(&common, w, wopts, &env, &config, &counts);
  if (status == GS_OK) {
    const gs_sweep_observer printer = gs_summary_observer(NULL);
    gs_sweep sweep = {.command = command, .workload = w,
                      .workload_opts = wopts, .common = &common, .config = &config, .env = &env,
                      .path = path, .job = job, .observer = &printer};
    status = gs_measure_sweep(&sweep, &counts);
  }
  status = gs_measure_job_finish(job, status);
  free(job);
  gs_environment_free(&env);
  w->options_free(wopts);
  return status;
}

gs_status gs_cmd_run(int argc, char **argv) {
  return measure_command("run", GS_GROUP_MEASURE | GS_GROUP_FAULTS | GS_GROUP_SPLIT |
                         GS_GROUP_GPU_MODE, 0, argc, argv);
}

gs_status gs_cmd_scale(int argc, char **argv) {
  return measure_command("scale", GS_GROUP_MEASURE | GS_GROUP_SCALE | GS_GROUP_FAULTS |
                         GS_GROUP_SPLIT, 1, argc, argv);
}
