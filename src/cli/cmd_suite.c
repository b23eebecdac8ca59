/* `gpuscale suite`: the standard set — every registered workload swept
 * over rank counts with its default options — into a results directory with
 * one result file per workload and summary.txt. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cmd_p2p.h"
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
         "per workload and summary.txt into the output directory; with 2 or more GPUs\n"
         "also p2p.json, the link bandwidth and latency matrices of 'gpuscale p2p'.\n\n"
         "Workloads:\n");
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
  GS_TRY(gs_common_resolve(&common, 1, &config));
  gs_u64_list counts;
  if (common.given_counts) {
    counts = common.counts;
    for (size_t i = 0; i < counts.n; i++)
      if (counts.v[i] > (uint64_t)config.world_size)
        return gs_error(GS_ERR_USAGE, "option --counts: %llu ranks asked for, %d selected",
                        (unsigned long long)counts.v[i], config.world_size);
  } else {
    gs_measure_default_counts(config.world_size, &counts);
  }

  const char *dir = common.out ? common.out : "results";
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return gs_error(GS_ERR_IO, "cannot create the directory %s: %s", dir, strerror(errno));
  char summary_path[GS_TEXT_LONG];
  snprintf(summary_path, sizeof summary_path, "%s/summary.txt", dir);
  FILE *summary = fopen(summary_path, "w");
  if (!summary) return gs_error(GS_ERR_IO, "cannot write %s: %s", summary_path, strerror(errno));

  gs_environment env;
  gs_status status = gs_common_environment(&env);
  gs_status first_failure = status;
  if (status == GS_OK) {
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
                        .env = &env, .path = path, .summary_copy = summary};
      status = gs_measure_sweep(&sweep, &counts);
      if (status != GS_OK && first_failure == GS_OK) first_failure = status;
      w->options_free(wopts);
    }
    if (config.backend == GS_BACKEND_CUDA && config.world_size >= 2) {
      // The links between the selected GPUs: every ordered pair of them.
      gs_p2p_options p2p;
      gs_p2p_options_default(&p2p);
      for (int a = 0; a < config.world_size; a++)
        for (int b = 0; b < config.world_size; b++)
          if (a != b && p2p.n_pairs < sizeof p2p.pairs / sizeof p2p.pairs[0]) {
            p2p.pairs[p2p.n_pairs][0] = config.devices[a];
            p2p.pairs[p2p.n_pairs][1] = config.devices[b];
            p2p.n_pairs++;
          }
      char path[GS_TEXT_LONG];
      snprintf(path, sizeof path, "%s/p2p.json", dir);
      status = gs_p2p_run_and_write(&p2p, &env, path, summary, argc, argv);
      if (status != GS_OK && first_failure == GS_OK) first_failure = status;
    }
  }
  gs_environment_free(&env);
  if (fclose(summary) != 0 && first_failure == GS_OK)
    first_failure = gs_error(GS_ERR_IO, "cannot write %s: %s", summary_path, strerror(errno));
  else
    gs_note("summary written to %s", summary_path);
  return first_failure;
}
