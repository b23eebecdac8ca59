/* `gpuscale compare BASE NEW`: per metric the change between two result
 * documents with a confidence interval and a Mann-Whitney U test; exit 3
 * on a significant regression so that CI pipelines can gate on it. See
 * docs/compare.md. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "measure/common.h"
#include "core/file.h"
#include "core/options.h"
#include "report/compare.h"

typedef struct {
  const char *paths[2];
  int n;
} two_files;

static gs_status add_file(void *ctx, const char *arg) {
  two_files *f = ctx;
  if (f->n == 2)
    return gs_error(GS_ERR_USAGE, "gpuscale compare: too many files ('%s'): give BASE and NEW",
                    arg);
  f->paths[f->n++] = arg;
  return GS_OK;
}

static void print_help(const gs_option *table) {
  gs_help_usage("gpuscale compare [options] BASE NEW");
  gs_help_para("Compares two gpuscale result documents measurement by measurement (same workload,\n"
         "backend, scaling, workload options and rank count): for the step time, the\n"
         "throughput and each rank's time, the change of the mean with a 95%% interval and\n"
         "a two-sided Mann-Whitney U test on the raw samples. A change is a regression when\n"
         "p < --alpha, the test says NEW is worse and the medians differ by more than\n"
         "--threshold percent. Documents without raw samples (ingested results) are compared\n"
         "by their figures (bus bandwidth, throughput): worse by more than --figure-threshold\n"
         "percent is a regression. See docs/compare.md.");
  gs_help_options("Options", table);
  gs_help_para("Exit codes: 0 no significant regression, 3 at least one significant regression,\n"
               "1 a file is unreadable, invalid, or shares no measurement with the other,\n"
               "2 usage error.");
}

/* See commands.h. */
gs_status gs_cmd_compare(int argc, char **argv) {
  int format = GS_COMPARE_TEXT;
  const char *out_path = NULL;
  double alpha = 0.05, threshold = 5.0, figure_threshold = 5.0;
  const gs_option table[] = {
      {.name = "format", .short_name = 'f', .kind = GS_OPT_CHOICE, .target = &format,
       .choices = gs_compare_format_choices, .metavar = "FMT",
       .help = "aligned text, GitHub Markdown table, or JSON"},
      {.name = "out", .short_name = 'o', .kind = GS_OPT_STRING, .target = &out_path,
       .metavar = "FILE", .help = "write the comparison to FILE (default: standard output)"},
      {.name = "alpha", .kind = GS_OPT_DOUBLE, .target = &alpha, .dmin = 1e-9, .dmax = 0.5,
       .metavar = "P", .help = "significance level of the U test (default 0.05)"},
      {.name = "threshold", .kind = GS_OPT_DOUBLE, .target = &threshold, .dmin = 0.0,
       .dmax = 1000.0, .metavar = "PCT",
       .help = "smallest change in percent that counts as a regression (default 5)"},
      {.name = "figure-threshold", .kind = GS_OPT_DOUBLE, .target = &figure_threshold,
       .dmin = 0.0, .dmax = 1000.0, .metavar = "PCT",
       .help = "the same for figures compared without raw samples (default 5)"},
      {.kind = GS_OPT_END}};
  if (gs_cli_wants_help(argc, argv)) {
    print_help(table);
    return GS_OK;
  }
  two_files files = {0};
  const gs_option *tables[] = {table, NULL};
  gs_status st = gs_options_parse(tables, "gpuscale compare", argc, argv, add_file, &files);
  if (st == GS_OK && files.n != 2)
    st = gs_error(GS_ERR_USAGE, "gpuscale compare: give two result documents, BASE and NEW "
                                "(got %d)", files.n);
  if (st == GS_OK && out_path) st = gs_file_check_output(out_path, "option --out");
  if (st != GS_OK) return st;

  gs_compare cmp;
  st = gs_compare_load(files.paths[0], files.paths[1], alpha, threshold / 100.0,
                       figure_threshold / 100.0, &cmp);
  if (st != GS_OK) return st;
  // Written atomically: a failed write leaves an existing file as it was.
  gs_file_out out;
  st = gs_file_out_open(&out, out_path, "the comparison");
  if (st == GS_OK) {
    st = gs_compare_render(out.f, &cmp, (gs_compare_format)format);
    if (st == GS_ERR_NOMEM) gs_error(st, "cannot render the comparison: out of memory");
    st = gs_file_out_finish(&out, st);
  }
  if (st == GS_OK && cmp.regressions > 0) {
    gs_error(GS_REGRESSION, "%zu significant regression(s)", cmp.regressions);
    st = GS_REGRESSION;
  }
  gs_compare_free(&cmp);
  return st;
}
