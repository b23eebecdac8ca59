/* `gpuscale suite`: the standard set into one results directory — info.json
 * (the machine), every workload swept over rank counts with its default
 * options (one result file each), p2p.json with 2 or more GPUs, coll.json
 * (every collective), summary.txt, and report.md, the report over all of
 * them; it ends with the node verdict of the machine (exit 5 on fail). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cmd_coll.h"
#include "cli/cmd_p2p.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "cli/summary.h"
#include "core/check.h"
#include "core/file.h"
#include "measure/info.h"
#include "measure/sweep.h"
#include "report/verdict/verdict.h"
#include "report/render/render.h"

static gs_status reject_positional(void *ctx, const char *arg) {
  (void)ctx;
  return gs_error(GS_ERR_USAGE, "gpuscale suite: unexpected argument '%s'", arg);
}

static void print_suite_help(gs_common_options *common, const gs_option *verdict_table) {
  gs_help_usage("gpuscale suite [options]");
  gs_help_para("Runs the standard set: every workload with its default options, swept over\n"
         "1, 2, 4, ... GPUs (or CPU ranks where there is no GPU). Writes into the output\n"
         "directory info.json (the machine, as 'gpuscale info'), one result file per\n"
         "workload, with 2 or more GPUs p2p.json (link bandwidth and latency, as\n"
         "'gpuscale p2p'), with 2 or more ranks coll.json (every collective, as\n"
         "'gpuscale coll all'), summary.txt, and report.md ('gpuscale report' over the\n"
         "result files).");
  gs_help_list("Workloads");
  size_t n = 0;
  const gs_workload *const *all = gs_workload_list(&n);
  for (size_t i = 0; i < n; i++) gs_help_item(all[i]->key, all[i]->summary);
  gs_help_options("Options", common->table);
  gs_help_para("The suite ends with the node verdict, a pass/warn/fail table of the machine\n"
               "(GPUs present and identical, links, p2p and allreduce bandwidth against the\n"
               "link's figure, per-GPU throughput, throttling; docs/verdict.md), also in\n"
               "summary.txt and report.md. Exit 5 when it is fail.");
  gs_help_options("Node verdict", verdict_table);
}

/* Every collective over the selected ranks into coll.json, 8 B to 1 GiB on
 * GPUs, to 64 KiB on the CPU backend (a smoke test of the host path), with
 * coll's own defaults and tables. */
static gs_status suite_collectives(const gs_run_config *config, const char *dir, int quiet) {
  char path[GS_TEXT_LONG], gpus[GS_TEXT_LONG] = "";
  snprintf(path, sizeof path, "%s/coll.json", dir);
  gs_common_options common;
  gs_common_init(&common, 0);
  gs_coll_common_defaults(&common);
  common.out = path;
  common.given_out = 1;
  common.no_progress = 1;
  common.quiet = quiet;
  if (config->backend == GS_BACKEND_CUDA) {
    size_t at = 0;
    for (int k = 0; k < config->world_size && at < sizeof gpus; k++)
      at += (size_t)snprintf(gpus + at, sizeof gpus - at, "%s%d", k ? "," : "", config->devices[k]);
    common.backend_choice = GS_BACKEND_CHOICE_CUDA;
    common.gpus_text = gpus;
    common.given_gpus = 1;
  } else {
    common.backend_choice = GS_BACKEND_CHOICE_CPU;
    common.ranks = (uint64_t)config->world_size;
    common.given_ranks = 1;
  }
  common.given_backend = 1;
  gs_coll_options co;
  gs_coll_options_init(&co);
  GS_TRY(gs_coll_options_take_op(&co, "all"));
  co.min_bytes = 8;
  co.max_bytes = config->backend == GS_BACKEND_CUDA ? UINT64_C(1) << 30 : UINT64_C(64) << 10;
  co.step_factor = 4;
  co.given_step_factor = 1;
  const gs_coll_observer printer = gs_coll_printer();
  const gs_coll_request request = {
      .coll = &co, .common = &common, .observer = &printer};
  return gs_measure_coll(&request);
}

/* info.json: the machine, as 'gpuscale info --format json'. */
static gs_status suite_info(const char *dir) {
  char path[GS_TEXT_LONG];
  snprintf(path, sizeof path, "%s/info.json", dir);
  gs_machine_info info;
  cJSON *doc = NULL;
  gs_status status = gs_machine_info_collect(&info);
  if (status == GS_OK) status = gs_machine_info_document(&info, "json", &doc);
  if (status == GS_OK) status = gs_result_write(doc, path);
  cJSON_Delete(doc);
  gs_machine_info_free(&info);
  return status;
}

/* report.md: the report over every document the suite wrote; then the node
 * verdict of the same documents (report/verdict.c, docs/verdict.md) on
 * standard output and in summary.txt. Sets `*verdict` to GS_NODE_FAIL when
 * the verdict is fail (with the failed checks recorded as the error unless
 * `failed_before` says an earlier failure's error stands). */
static gs_status suite_report(const char *dir, const char *const *files, size_t n_files,
                              int expect_gpus, FILE *summary, gs_status failed_before,
                              gs_status *verdict) {
  char path[GS_TEXT_LONG];
  snprintf(path, sizeof path, "%s/report.md", dir);
  const gs_report_thresholds th = {.moderate = GS_REPORT_MODERATE_DEFAULT,
                                   .critical = GS_REPORT_CRITICAL_DEFAULT};
  gs_report rep;
  GS_TRY(gs_report_load_with(files, n_files, &th, NULL, GS_REPORT_DROP_SAMPLES, &rep));
  rep.expect_gpus = expect_gpus;
  gs_file_out out;
  gs_status status = gs_file_out_open(&out, path, "the report");
  if (status == GS_OK)
    status = gs_file_out_finish(&out, gs_report_render(out.f, &rep, GS_REPORT_MARKDOWN));
  if (status == GS_OK) gs_note("report written to %s", path);
  gs_report_render_node_verdict(stdout, &rep, GS_REPORT_TEXT);
  if (summary) gs_report_render_node_verdict(summary, &rep, GS_REPORT_TEXT);
  gs_node_verdict v;
  gs_report_node_verdict(&rep, &v);
  // The error of an earlier failure is the one main prints: it decides the exit code.
  gs_error_kept kept;
  gs_error_keep(&kept);
  *verdict = gs_node_verdict_status(&v);
  if (failed_before != GS_OK) gs_error_restore(&kept);
  gs_report_free(&rep);
  return status;
}

/* Common options a suite cannot apply, and why. */
static gs_cli_refusal refusals[] = {
    {"trace", "a suite writes one document per workload; trace one with run or scale", 0},
    {"trace-steps", "a suite writes one document per workload; trace one with run or scale", 0},
    {NULL, NULL, 0}};

gs_status gs_cmd_suite(int argc, char **argv) {
  gs_common_options common;
  gs_common_init(&common, GS_COMMON_SCALE | GS_COMMON_OUT_DIR);
  uint64_t expect_gpus = 0;
  const gs_option verdict_table[] = {
      {.name = "expect-gpus", .kind = GS_OPT_COUNT, .target = &expect_gpus, .min = 1,
       .max = 4096, .metavar = "N",
       .help = "node verdict: the machine must have N GPUs (default: the count is not "
               "checked; docs/verdict.md)"},
      {.kind = GS_OPT_END}};
  gs_cli_refuse_options(common.table, refusals);
  if (gs_cli_wants_help(argc, argv)) {
    print_suite_help(&common, verdict_table);
    return GS_OK;
  }
  const gs_option *tables[] = {common.table, verdict_table, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale suite", argc, argv, reject_positional, NULL));
  GS_TRY(gs_cli_refused("suite", refusals));
  gs_set_quiet(common.quiet);
  const char *dir = common.out ? common.out : "results";
  GS_TRY(gs_file_check_output_dir(dir, "option --out"));
  gs_run_config config;
  gs_measure_job *job = calloc(1, sizeof *job);
  if (!job) return gs_error(GS_ERR_NOMEM, "cannot allocate the job");
  gs_status status = gs_measure_job_start(job, &common, 1, &config);
  gs_u64_list counts = {0};
  if (status == GS_OK) status = gs_common_counts(&common, &config, 1, &counts);
  const int writes = gs_measure_job_writes(job);
  if (status == GS_OK && writes && mkdir(dir, 0777) != 0 && errno != EEXIST)
    status = gs_error(GS_ERR_IO, "cannot create the directory %s: %s", dir, strerror(errno));
  char summary_path[GS_TEXT_LONG];
  snprintf(summary_path, sizeof summary_path, "%s/summary.txt", dir);
  // summary.txt goes to a temp file beside it and replaces an older one
  // only when the suite is over and every line of it was written.
  gs_file_out summary_out = {0};
  FILE *summary = NULL;
  if (status == GS_OK && writes) {
    status = gs_file_out_open(&summary_out, summary_path, NULL);
    summary = summary_out.f;
  }
  if (status != GS_OK) {
    status = gs_measure_job_finish(job, status);
    free(job);
    return status;
  }

  gs_environment env;
  status = gs_common_environment(&env);
  gs_status first_failure = status;
  // Result files for the report: every workload's, then coll.json.
  enum { MAX_FILES = 12 };
  char files[MAX_FILES][GS_TEXT_LONG];
  const char *file_list[MAX_FILES];
  size_t n_files = 0;
  const gs_sweep_observer printer = gs_summary_observer(summary);
  if (status == GS_OK) {
    if (summary)
      fprintf(summary, "gpuscale suite on %s: %s backend, %s\n", env.host,
            config.backend == GS_BACKEND_CUDA ? "cuda" : "cpu", env.cuda_status);
    if (writes) {
      status = suite_info(dir);
      if (status != GS_OK && first_failure == GS_OK) first_failure = status;
      char *path = files[n_files];
      snprintf(path, GS_TEXT_LONG, "%s/info.json", dir);
      if (status == GS_OK) file_list[n_files++] = path;
    }
    size_t n = 0;
    const gs_workload *const *registered = gs_workload_list(&n);
    for (size_t i = 0; i < n; i++) {
      const gs_workload *w = registered[i];
      void *wopts = w->options_new();
      if (!wopts) {
        first_failure = gs_error(GS_ERR_NOMEM, "cannot allocate the options of %s", w->key);
        break;
      }
      gs_run_config wconfig = config;
      // --iters and --min-time set the steps of the fixed-step workloads; a
      // workload with its own timing loop measures as it would without them.
      gs_common_options wcommon = common;
      wcommon.given_iters = wcommon.given_min_time = 0;
      status = gs_common_configure(&wcommon, w, wopts, &wconfig);
      char *path = files[n_files];
      snprintf(path, GS_TEXT_LONG, "%s/%s.json", dir, w->key);
      gs_sweep sweep = {.command = "suite", .workload = w,
                        .workload_opts = wopts, .common = &common, .config = &wconfig,
                        .env = &env, .path = path, .job = job, .observer = &printer};
      // Under a launcher a workload that communicates runs at the full job only.
      gs_u64_list wcounts = counts;
      if (w->communicates && config.control) {
        wcounts.n = 1;
        wcounts.v[0] = (uint64_t)config.world_size;
      }
      if (status == GS_OK) status = gs_measure_sweep(&sweep, &wcounts);
      if (status != GS_OK && first_failure == GS_OK) first_failure = status;
      if (access(path, F_OK) == 0 && n_files < MAX_FILES - 1) file_list[n_files++] = path;
      w->options_free(wopts);
      if (job->broken || status == GS_ERR_PARTIAL) break;
    }
    // p2p and coll drive every GPU from one process (coll has its own MPI
    // mode: 'mpirun ... gpuscale coll all'); under a launcher they are left out.
    if (config.control && writes && config.world_size >= 2)
      gs_note("suite: p2p and coll are not run under a launcher; run 'gpuscale p2p' and "
              "'mpirun ... gpuscale coll all'");
    if (!config.control && config.backend == GS_BACKEND_CUDA && config.world_size >= 2) {
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
      char *path = files[n_files];
      snprintf(path, GS_TEXT_LONG, "%s/p2p.json", dir);
      status = gs_p2p_run_and_write(&p2p, &env, NULL, path, summary);
      if (status != GS_OK && first_failure == GS_OK) first_failure = status;
      if (access(path, F_OK) == 0 && n_files < MAX_FILES - 1) file_list[n_files++] = path;
    }
    if (!config.control && config.world_size >= 2) {
      status = suite_collectives(&config, dir, common.quiet);
      if (status != GS_OK && first_failure == GS_OK) first_failure = status;
      char *path = files[n_files];
      snprintf(path, GS_TEXT_LONG, "%s/coll.json", dir);
      if (access(path, F_OK) == 0) file_list[n_files++] = path;
    }
  }
  gs_status verdict = GS_OK;
  if (n_files > 0 && gs_measure_job_writes(job)) {
    status = suite_report(dir, file_list, n_files, (int)expect_gpus, summary, first_failure,
                          &verdict);
    if (status != GS_OK && first_failure == GS_OK) first_failure = status;
  }
  gs_environment_free(&env);
  if (summary) {
    gs_status written = gs_file_out_commit(&summary_out);
    if (written == GS_OK)
      gs_note("summary written to %s", summary_path);
    else if (first_failure == GS_OK)
      first_failure = written;
  }
  first_failure = gs_measure_job_finish(job, first_failure);
  free(job);
  // A failed or partial run says so first; a run that worked on a machine
  // that fails its verdict exits GS_NODE_FAIL (docs/verdict.md).
  return first_failure != GS_OK ? first_failure : verdict;
}
