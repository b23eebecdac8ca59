/* `gpuscale suite`: the standard set — every registered workload swept
 * over rank counts with its default options — into a results directory with
 * one result file per workload and summary.txt. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/measure.h"
#include "core/check.h"

static gs_status reject_positional(void *ctx, const char *arg) {
  (void)ctx;
  return gs_error(GS_ERR_USAGE, "gpuscale suite: unexpected argument '%s'", arg);
}

static void print_suite_help(gs_common_options *common) {
  printf("usage: gpuscale suite [options]\n\n"
         "Runs the standard set: every workload with its default options, swept over\n"
         "1, 2, 4, ... GPUs (or CPU ranks where there is no GPU). Writes one result file\n"
         "per workload and summary.txt into the output directory.\n\nWorkloads:\n");
  size_t n = 0;
  const gs_workload *const *all = gs_workload_list(&n);
  for (size_t i = 0; i < n; i++) printf("  %-12s %s\n", all[i]->key, all[i]->summary);
  printf("\nOptions:\n");
  gs_options_help(stdout, common->table);
}

gs_status gs_cmd_suite(int argc, char **argv) {
  gs_common_options common;
  gs_common_init(&common, GS_COMMON_SCALE | GS_COMMON_OUT_DIR);
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      print_suite_help(&common);
      return GS_OK;
    }
  }
  const gs_option *tables[] = {common.table, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale suite", argc, argv, reject_positional, NULL));
  gs_set_quiet(common.quiet);
  gs_run_config config;
  gs_measure_job *job = calloc(1, sizeof *job);
  if (!job) return gs_error(GS_ERR_NOMEM, "cannot allocate the job");
  gs_status status = gs_measure_job_start(job, &common, 1, &config);
  gs_u64_list counts = {0};
  if (status == GS_OK && common.given_counts) {
    counts = common.counts;
    for (size_t i = 0; i < counts.n && status == GS_OK; i++)
      if (counts.v[i] > (uint64_t)config.world_size)
        status = gs_error(GS_ERR_USAGE, "option --counts: %llu ranks asked for, %d selected",
                          (unsigned long long)counts.v[i], config.world_size);
  } else if (status == GS_OK) {
    gs_measure_default_counts(config.world_size, &counts);
  }
  const int writes = gs_measure_job_writes(job);
  const char *dir = common.out ? common.out : "results";
  if (status == GS_OK && writes && mkdir(dir, 0777) != 0 && errno != EEXIST)
    status = gs_error(GS_ERR_IO, "cannot create the directory %s: %s", dir, strerror(errno));
  char summary_path[GS_TEXT_LONG];
  snprintf(summary_path, sizeof summary_path, "%s/summary.txt", dir);
  FILE *summary = NULL;
  if (status == GS_OK && writes && !(summary = fopen(summary_path, "w")))
    status = gs_error(GS_ERR_IO, "cannot write %s: %s", summary_path, strerror(errno));
  if (status != GS_OK) {
    status = gs_measure_job_finish(job, status);
    free(job);
    return status;
  }

  gs_environment env;
  status = gs_common_environment(&env);
  gs_status first_failure = status;
  if (status == GS_OK) {
    if (summary)
      fprintf(summary, "gpuscale suite on %s: %s backend, %s\n", env.host,
            config.backend == GS_BACKEND_CUDA ? "cuda" : "cpu", env.cuda_status);
    size_t n = 0;
    const gs_workload *const *all = gs_workload_list(&n);
    for (size_t i = 0; i < n; i++) {
      const gs_workload *w = all[i];
      void *wopts = w->options_new();
      if (!wopts) {
        first_failure = gs_error(GS_ERR_NOMEM, "cannot allocate the options of %s", w->key);
        break;
      }
      char path[GS_TEXT_LONG];
      snprintf(path, sizeof path, "%s/%s.json", dir, w->key);
      gs_sweep sweep = {.command = "suite", .argc = argc, .argv = argv, .workload = w,
                        .workload_opts = wopts, .common = &common, .config = &config,
                        .env = &env, .path = path, .summary_copy = summary, .job = job};
      status = gs_measure_sweep(&sweep, &counts);
      if (status != GS_OK && first_failure == GS_OK) first_failure = status;
      w->options_free(wopts);
      if (job->broken || status == GS_ERR_PARTIAL) break;
    }
  }
  gs_environment_free(&env);
  if (summary && fclose(summary) != 0 && first_failure == GS_OK)
    first_failure = gs_error(GS_ERR_IO, "cannot write %s: %s", summary_path, strerror(errno));
  else if (summary)
    gs_note("summary written to %s", summary_path);
  first_failure = gs_measure_job_finish(job, first_failure);
  free(job);
  return first_failure;
}
