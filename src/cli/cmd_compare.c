/* `gpuscale compare BASE NEW`: per metric the change between two result
 * documents (or two directories of them) with a confidence interval and a
 * Mann-Whitney U test; exit 3 on a significant regression so that CI
 * pipelines can gate on it. See docs/compare.md. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "measure/common.h"
#include "core/check.h"
#include "core/file.h"
#include "core/options.h"
#include "report/compare/compare.h"
#include "report/compare/trace_diff.h"

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

/* The documents of one side: `arg` itself, or for a directory every
 * regular file in it whose name ends in ".json", sorted by name. *paths
 * (and its strings) are the caller's to free with free_documents. */
typedef struct {
  size_t n;
  char **paths;
} document_list;

static void free_documents(document_list *l) {
  for (size_t i = 0; i < l->n; i++) free(l->paths[i]);
  free(l->paths);
  l->paths = NULL;
  l->n = 0;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static gs_status list_documents(const char *arg, const char *side, document_list *out) {
  memset(out, 0, sizeof *out);
  struct stat info;
  if (stat(arg, &info) != 0 || !S_ISDIR(info.st_mode)) {
    out->paths = malloc(sizeof *out->paths);
    if (out->paths && (out->paths[0] = strdup(arg)) != NULL) out->n = 1;
    return out->n ? GS_OK : gs_error(GS_ERR_NOMEM, "out of memory");
  }
  DIR *dir = opendir(arg);
  if (!dir) return gs_error(GS_ERR_IO, "cannot read %s directory %s: %s", side, arg, strerror(errno));
  gs_status st = GS_OK;
  size_t cap = 0;
  for (struct dirent *e; st == GS_OK && (e = readdir(dir)) != NULL;) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
    char *path = malloc(strlen(arg) + len + 2);
    if (!path) {
      st = gs_error(GS_ERR_NOMEM, "out of memory");
      break;
    }
    sprintf(path, "%s/%s", arg, e->d_name);
    if (stat(path, &info) != 0 || !S_ISREG(info.st_mode)) {
      free(path);
      continue;
    }
    if (out->n == cap) {
      cap = cap ? 2 * cap : 16;
      char **grown = realloc(out->paths, cap * sizeof *grown);
      if (!grown) {
        free(path);
        st = gs_error(GS_ERR_NOMEM, "out of memory");
        break;
      }
      out->paths = grown;
    }
    out->paths[out->n++] = path;
  }
  closedir(dir);
  if (st == GS_OK && out->n == 0)
    st = gs_error(GS_ERR_IO, "%s directory %s holds no .json result document", side, arg);
  if (st != GS_OK) free_documents(out);
  else qsort(out->paths, out->n, sizeof *out->paths, compare_names);
  return st;
}

static void print_help(const gs_option *table) {
  gs_help_usage("gpuscale compare [options] BASE NEW");
  gs_help_para("BASE and NEW are result documents, or directories whose .json documents are\n"
               "read as one side each (a point measured in k documents has k repeats, paired\n"
               "in file-name order).");
  gs_help_para("Compares two gpuscale result documents measurement by measurement (same workload,\n"
         "backend, scaling, workload options and rank count): for the step time, the\n"
         "throughput and each rank's time, the change of the mean with a 95%% interval and\n"
         "a two-sided Mann-Whitney U test on the raw samples. A change is a regression when\n"
         "p < --alpha, the test says NEW is worse and the medians differ by more than\n"
         "--threshold percent. Documents without raw samples (ingested results) are compared\n"
         "by their figures (bus bandwidth, throughput): worse by more than --figure-threshold\n"
         "percent is a regression. See docs/compare.md.");
  gs_help_para("BASE and NEW may be traces instead (PyTorch profiler or gpuscale --trace files,\n"
               "or directories of them, a side's files its ranks): the GPU kernels by name,\n"
               "added, removed or changed in count or time (by more than --threshold percent).\n"
               "See docs/traces.md.");
  gs_help_options("Options", table);
  gs_help_para("Exit codes: 0 no significant regression, 3 at least one significant regression,\n"
               "1 a file is unreadable, invalid, or shares no measurement with the other,\n"
               "2 usage error.");
}

/* The trace diff of two trace files or directories of them. */
static gs_status compare_traces(const document_list *base, const document_list *next,
                                double threshold, int format, const char *out_path) {
  gs_trace_diff diff;
  GS_TRY(gs_trace_diff_load((const char *const *)base->paths, base->n,
                            (const char *const *)next->paths, next->n, threshold, &diff));
  gs_file_out out;
  gs_status st = gs_file_out_open(&out, out_path, "the comparison");
  if (st == GS_OK) {
    st = gs_trace_diff_render(out.f, &diff, (gs_compare_format)format);
    if (st == GS_ERR_NOMEM) gs_error(st, "cannot render the comparison: out of memory");
    st = gs_file_out_finish(&out, st);
  }
  gs_trace_diff_free(&diff);
  return st;
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
  for (int i = 0; st == GS_OK && out_path && i < files.n; i++)
    st = gs_file_check_not_input(out_path, files.paths[i], NULL, "option --out");
  if (st != GS_OK) return st;

  document_list base = {0}, next = {0};
  st = list_documents(files.paths[0], "BASE", &base);
  if (st == GS_OK) st = list_documents(files.paths[1], "NEW", &next);
  // Traces on both sides: the kernels' diff (docs/traces.md).
  if (st == GS_OK && base.n && next.n && gs_trace_file_sniff(base.paths[0]) &&
      gs_trace_file_sniff(next.paths[0])) {
    st = compare_traces(&base, &next, threshold / 100.0, format, out_path);
    free_documents(&base);
    free_documents(&next);
    return st;
  }
  gs_compare cmp;
  if (st == GS_OK)
    st = gs_compare_load_sets((const char *const *)base.paths, base.n,
                              (const char *const *)next.paths, next.n, files.paths[0],
                              files.paths[1], alpha, threshold / 100.0, figure_threshold / 100.0,
                              &cmp);
  free_documents(&base);
  free_documents(&next);
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
