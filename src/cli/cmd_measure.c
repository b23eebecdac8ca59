/* `gpuscale run` and `gpuscale scale`: one workload at one rank count, or
 * swept over rank counts, into one result document. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/measure.h"
#include "core/check.h"

static gs_status measure_command(const char *command, unsigned features, int default_all,
                                 int argc, char **argv, int full_argc, char **full_argv) {
  gs_common_options common;
  const gs_workload *w = NULL;
  void *wopts = NULL;
  int help_shown = 0;
  GS_TRY(gs_measure_parse(command, features, argc, argv, &common, &w, &wopts, &help_shown));
  if (help_shown) return GS_OK;

  gs_run_config config;
  gs_environment env = {0};
  gs_measure_job *job = calloc(1, sizeof *job);
  if (!job) {
    w->options_free(wopts);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the job");
  }
  gs_status status = gs_measure_job_start(job, &common, default_all, &config);
  if (status == GS_OK && strcmp(command, "run") == 0) config.scaling = GS_SCALING_NONE;
  if (status == GS_OK && config.control && config.split_proportional)
    status = gs_error(GS_ERR_USAGE, "option --split proportional: not available under a "
                      "launcher yet (one process per rank); run it in one process");
  gs_u64_list counts = {0};
  if (status == GS_OK) {
    if (common.given_counts) {
      counts = common.counts;
      for (size_t i = 0; i < counts.n && status == GS_OK; i++)
        if (counts.v[i] > (uint64_t)config.world_size)
          status = gs_error(GS_ERR_USAGE, "option --counts: %llu ranks asked for, %d selected",
                            (unsigned long long)counts.v[i], config.world_size);
    } else if (features & GS_COMMON_SCALE) {
      gs_measure_default_counts(config.world_size, &counts);
    } else {
      counts.n = 1;
      counts.v[0] = (uint64_t)config.world_size;
    }
  }
  if (status == GS_OK) status = gs_common_environment(&env);
  if (status == GS_OK) {
    char path[GS_TEXT_LONG];
    if (common.out)
      snprintf(path, sizeof path, "%s", common.out);
    else
      snprintf(path, sizeof path, "results/%s-%s.json", command, w->key);
    gs_sweep sweep = {.command = command, .argc = full_argc, .argv = full_argv, .workload = w,
                      .workload_opts = wopts, .common = &common, .config = &config, .env = &env,
                      .path = path, .summary_copy = NULL, .job = job};
    status = gs_measure_sweep(&sweep, &counts);
  }
  status = gs_measure_job_finish(job, status);
  free(job);
  gs_environment_free(&env);
  w->options_free(wopts);
  return status;
}

gs_status gs_cmd_run(int argc, char **argv) {
  return measure_command("run", GS_COMMON_FAULTS | GS_COMMON_SPLIT, 0, argc, argv, argc, argv);
}

gs_status gs_cmd_scale(int argc, char **argv) {
  return measure_command("scale", GS_COMMON_SCALE | GS_COMMON_FAULTS | GS_COMMON_SPLIT, 1, argc,
                         argv, argc, argv);
}
