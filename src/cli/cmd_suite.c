/* `gpuscale suite`: parses its options, has measure/suite.c measure the
 * standard set into one results directory (info.json, one document per
 * workload, p2p.json, coll.json) while it prints each part's tables, also
 * into summary.txt, then writes report.md, the report over all of them,
 * and ends with the node verdict of the machine (exit 5 on fail). */
#include <stdio.h>

#include "cli/args.h"
#include "cli/cmd_coll.h"
#include "cli/cmd_p2p.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "cli/summary.h"
#include "core/check.h"
#include "core/file.h"
#include "measure/suite.h"
#include "report/render/render.h"
#include "report/verdict/verdict.h"

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
  gs_common_describe(common, gs_help_options);
  gs_help_para("The suite ends with the node verdict, a pass/warn/fail table of the machine\n"
               "(GPUs present and identical, links, p2p and allreduce bandwidth against the\n"
               "link's figure, per-GPU throughput, throttling; docs/verdict.md), also in\n"
               "summary.txt and report.md. Exit 5 when it is fail.");
  gs_help_options("Node verdict", verdict_table);
}

/* report.md: the report over every document the suite wrote; then the node
 * verdict of the same documents (report/verdict/verdict.c, docs/verdict.md) on
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

/* Options a suite does not take, and why: listed by no help page, refused
 * with the reason. */
static const gs_option refused[] = {
    {.name = "trace", .kind = GS_OPT_REFUSED,
     .help = "a suite writes one document per workload; trace one with run or scale"},
    {.name = "trace-steps", .kind = GS_OPT_REFUSED,
     .help = "a suite writes one document per workload; trace one with run or scale"},
    {.kind = GS_OPT_END}};

/* What the suite prints as it measures: each workload's tables (as run and
 * scale print them), p2p's matrices and each collective's table; the
 * tables and matrices also into summary.txt (`summary`, NULL when this
 * process does not write). */
typedef struct {
  FILE *summary;
  gs_sweep_observer sweep;
  gs_coll_observer coll;
} suite_printer;

static void print_started(void *ctx, const gs_suite *suite) {
  const suite_printer *p = ctx;
  if (p->summary)
    fprintf(p->summary, "gpuscale suite on %s: %s backend, %s\n", suite->env.host,
            suite->config.backend == GS_BACKEND_CUDA ? "cuda" : "cpu", suite->env.cuda_status);
}

static void print_links(void *ctx, const gs_p2p_options *o, const gs_p2p_outcome *outcome) {
  const suite_printer *p = ctx;
  gs_p2p_print_outcome(o, outcome, p->summary);
}

gs_status gs_cmd_suite(int argc, char **argv) {
  gs_common_options common;
  gs_common_init(&common, (GS_GROUP_MEASURE & ~GS_GROUP_TRACE) | GS_GROUP_OUT_DIR |
                              GS_GROUP_SCALE);
  uint64_t expect_gpus = 0;
  const gs_option verdict_table[] = {
      {.name = "expect-gpus", .kind = GS_OPT_COUNT, .target = &expect_gpus, .min = 1,
       .max = 4096, .metavar = "N",
       .help = "node verdict: the machine must have N GPUs (default: the count is not "
               "checked; docs/verdict.md)"},
      {.kind = GS_OPT_END}};
  if (gs_cli_wants_help(argc, argv)) {
    print_suite_help(&common, verdict_table);
    return GS_OK;
  }
  const gs_option *tables[] = {common.table, verdict_table, refused, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale suite", argc, argv, reject_positional, NULL));
  gs_set_quiet(common.quiet);
  const char *dir = common.out ? common.out : "results";
  GS_TRY(gs_file_check_output_dir(dir, "option --out"));
  gs_suite suite;
  gs_status status = gs_suite_start(&suite, &common, dir);
  char summary_path[GS_TEXT_LONG];
  snprintf(summary_path, sizeof summary_path, "%s/summary.txt", dir);
  // summary.txt goes to a temp file beside it and replaces an older one
  // only when the suite is over and every line of it was written.
  gs_file_out summary_out = {0};
  if (status == GS_OK && gs_suite_writes(&suite))
    status = gs_file_out_open(&summary_out, summary_path, NULL);
  if (status != GS_OK) return gs_suite_finish(&suite, status);

  suite_printer printer = {.summary = summary_out.f, .coll = gs_coll_printer()};
  printer.sweep = gs_summary_observer(printer.summary);
  const gs_suite_observer observer = {.ctx = &printer, .started = print_started,
                                      .p2p_done = print_links, .sweep = &printer.sweep,
                                      .coll = &printer.coll};
  gs_status first_failure = GS_OK;
  gs_error_kept first_error = {""};  // its text: later failures do not replace it
  gs_error_keep_first(gs_suite_measure(&suite, &observer), &first_failure, &first_error);
  gs_status verdict = GS_OK;
  if (suite.n_files > 0 && gs_suite_writes(&suite)) {
    status = suite_report(dir, (const char *const *)suite.files, suite.n_files, (int)expect_gpus,
                          printer.summary, first_failure, &verdict);
    gs_error_keep_first(status, &first_failure, &first_error);
  }
  if (printer.summary) {
    gs_status written = gs_file_out_commit(&summary_out);
    if (written == GS_OK)
      gs_note("summary written to %s", summary_path);
    else
      gs_error_keep_first(written, &first_failure, &first_error);
  }
  if (first_failure != GS_OK) gs_error_restore(&first_error);
  first_failure = gs_suite_finish(&suite, first_failure);
  // A failed or partial run says so first; a run that worked on a machine
  // that fails its verdict exits GS_NODE_FAIL (docs/verdict.md).
  return first_failure != GS_OK ? first_failure : verdict;
}
