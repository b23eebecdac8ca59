/* `gpuscale report FILES...`: reads result documents (never a GPU), analyses
 * scaling and rank symmetry (src/report/) and renders the analysis as text,
 * Markdown, HTML (with plots), CSV or JSON. See docs/report.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "measure/common.h"
#include "core/file.h"
#include "core/options.h"
#include "report/verdict/verdict.h"
#include "report/predict/predict.h"
#include "report/render/render.h"
#include "report/render/trace_report.h"
#include "report/analyze/report.h"
#include "report/analyze/trace_stats.h"

/* With --price: a note naming the GPU models no price matched. */
static void report_unpriced(const gs_report *r) {
  for (size_t i = 0; i < r->n_series; i++)
    for (size_t j = 0; j < r->series[i].n_rows; j++) {
      const gs_report_row *row = &r->series[i].rows[j];
      if (row->cost.gpu_model && !isfinite(row->cost.price_per_hour)) {
        gs_warn("--price: no price matches GPU '%s' (keys match whole words of the name, "
                "case-insensitively); its cost columns are n/a", row->cost.gpu_model);
        return;
      }
    }
}

/* How many of the files are traces (docs/traces.md) rather than result
 * documents; a mix is a usage error. */
static gs_status count_traces(const gs_cli_file_list *files, size_t *n_traces) {
  *n_traces = 0;
  size_t missing = 0;
  for (size_t i = 0; i < files->n; i++) {
    struct stat sb;
    // A file that cannot be found is neither: its reader says why.
    if (stat(files->paths[i], &sb) != 0) missing++;
    else *n_traces += (size_t)gs_trace_file_sniff(files->paths[i]);
  }
  if (*n_traces && *n_traces + missing != files->n)
    return gs_error(GS_ERR_USAGE, "gpuscale report: give trace files (PyTorch profiler or "
                    "gpuscale --trace) or result documents, not both in one report");
  return GS_OK;
}

/* The report of trace files: analysed one file at a time, written once. */
static gs_status report_traces(const gs_cli_file_list *files, int format, const char *out_path,
                               double kernel_wait_us) {
  gs_trace_stats stats;
  gs_status st = gs_trace_stats_load((const char *const *)files->paths, files->n, kernel_wait_us,
                                     &stats);
  if (st != GS_OK) return st;
  gs_file_out out;
  st = gs_file_out_open(&out, out_path, "the report");
  if (st == GS_OK) {
    st = gs_trace_report_render(out.f, &stats, (gs_report_format)format);
    if (st == GS_ERR_NOMEM) gs_error(st, "cannot render the report: out of memory");
    st = gs_file_out_finish(&out, st);
  }
  gs_trace_stats_free(&stats);
  return st;
}

static void print_help(const gs_option *table) {
  gs_help_usage("gpuscale report [options] FILE...");
  gs_help_para("Reads gpuscale result documents and reports, per series (workload, backend,\n"
         "scaling and workload options), the step-time statistics, throughput, speedup,\n"
         "parallel efficiency and Karp-Flatt serial fraction against 1 rank, the symmetry\n"
         "of the ranks and hosts (marks, straggler, cold start, requests), why the step is\n"
         "not N times faster (compute, communication, imbalance, host overhead), cost,\n"
         "plots (gnuplot) and recommendations, after an overview of every series. Every\n"
         "number is recomputed from the raw samples; formulas in docs/report.md.");
  gs_help_options("Options", table);
  gs_help_para("Trace files instead of documents (PyTorch profiler traces, one per rank, or\n"
               "gpuscale --trace files) give the trace analysis: temporal breakdown, overlap,\n"
               "idle split, top kernels, launch delays, collective skew (docs/traces.md).");
  gs_help_para("With an info document (info.json of a suite) the report starts with the node\n"
               "verdict, a pass/warn/fail table of the machine (docs/verdict.md).");
  gs_help_para("Exit codes: 0 report written, 1 a file is unreadable or not a valid result\n"
               "document (or the output cannot be written), or a collective's busbw is not its\n"
               "algbw x the op's bus factor (the report is written and names the rows), 2 usage\n"
               "error, 5 the report was written and its node verdict is fail.");
}

/* See commands.h. */
gs_status gs_cmd_report(int argc, char **argv) {
  int format = GS_REPORT_TEXT;
  const char *out_path = NULL;
  double moderate = 100.0 * GS_REPORT_MODERATE_DEFAULT;
  double critical = 100.0 * GS_REPORT_CRITICAL_DEFAULT;
  const char *price_text = NULL, *plots_dir = NULL, *predict_text = NULL;
  uint64_t expect_gpus = 0;
  int per_sample = 0, per_rate = 0;
  double kernel_wait = GS_TRACE_KERNEL_WAIT_US;
  const gs_option table[] = {
      {.name = "format", .short_name = 'f', .kind = GS_OPT_CHOICE, .target = &format,
       .choices = gs_report_format_choices, .metavar = "FMT",
       .help = "report format: aligned tables, GitHub tables, one CSV row per measurement, the "
               "analysis as JSON, or one self-contained HTML page with the plots"},
      {.name = "out", .short_name = 'o', .kind = GS_OPT_STRING, .target = &out_path,
       .metavar = "FILE", .help = "write the report to FILE (default: standard output)"},
      {.name = "moderate", .kind = GS_OPT_DOUBLE, .target = &moderate, .dmin = 0.0, .dmax = 1000.0,
       .metavar = "PCT",
       .help = "a rank whose throughput deviates from the median rank by more than PCT% is moderate"},
      {.name = "critical", .kind = GS_OPT_DOUBLE, .target = &critical, .dmin = 0.0, .dmax = 1000.0,
       .metavar = "PCT",
       .help = "... and by more than PCT% critical (must exceed --moderate)"},
      {.name = "price", .kind = GS_OPT_STRING, .target = &price_text, .metavar = "MODEL=USD,...",
       .help = "price per GPU-hour by GPU model, e.g. H100=7,A100=5: adds items/$ and $/M items"},
      {.name = "plots", .kind = GS_OPT_STRING, .target = &plots_dir, .metavar = "DIR",
       .help = "draw the plots with gnuplot as PNG and SVG into DIR (html embeds them anyway)"},
      {.name = "predict", .kind = GS_OPT_STRING, .target = &predict_text, .metavar = "LIST",
       .help = "predict these GPU counts (8,16,...; give a coll document for communicating "
               "workloads): dashed in the speedup plot, a table after text and markdown"},
      {.name = "expect-gpus", .kind = GS_OPT_COUNT, .target = &expect_gpus, .min = 1,
       .max = 4096, .metavar = "N",
       .help = "node verdict: the machine must have N GPUs (default: the count is not "
               "checked; docs/verdict.md)"},
      {.name = "kernel-wait", .kind = GS_OPT_DOUBLE, .target = &kernel_wait, .dmin = 0.0,
       .dmax = 1e6, .metavar = "US",
       .help = "traces: a gap between kernels shorter than US microseconds that the host did "
               "not cause is kernel wait (default 30, HTA's)"},
      {.name = "samples", .kind = GS_OPT_FLAG, .target = &per_sample,
       .help = "with --format csv: one row per raw sample instead of one per measurement"},
      {.name = "rate-points", .kind = GS_OPT_FLAG, .target = &per_rate,
       .help = "with --format csv: one row per rate of llm --rates or --find-max-rate "
               "instead of one per measurement"},
      {.kind = GS_OPT_END}};
  if (gs_cli_wants_help(argc, argv)) {
    print_help(table);
    return GS_OK;
  }
  gs_cli_file_list files = {0};
  const gs_option *tables[] = {table, NULL};
  gs_status st = gs_cli_parse_files(tables, "gpuscale report",
                                    "a result document written by run, scale or suite", argc, argv,
                                    &files);
  if (st == GS_OK && !(moderate > 0.0))
    st = gs_error(GS_ERR_USAGE, "option --moderate: must be above 0 (percent), got %g", moderate);
  if (st == GS_OK && !(critical > moderate))
    st = gs_error(GS_ERR_USAGE,
                  "options --moderate (%g) and --critical (%g) conflict: critical must exceed "
                  "moderate", moderate, critical);
  size_t n_traces = 0;
  if (st == GS_OK) st = count_traces(&files, &n_traces);
  if (st == GS_OK && n_traces && (price_text || plots_dir || predict_text || expect_gpus ||
                                  per_sample || per_rate))
    st = gs_error(GS_ERR_USAGE, "options --price, --plots, --predict, --expect-gpus, --samples "
                  "and --rate-points are for result documents, not trace files");
  if (st == GS_OK && !n_traces && kernel_wait != GS_TRACE_KERNEL_WAIT_US)
    st = gs_error(GS_ERR_USAGE, "option --kernel-wait: only for trace files");
  if (st == GS_OK && per_sample && format != GS_REPORT_CSV)
    st = gs_error(GS_ERR_USAGE, "option --samples: only with --format csv (got --format %s)",
                  gs_report_format_choices[format]);
  if (st == GS_OK && per_rate && format != GS_REPORT_CSV)
    st = gs_error(GS_ERR_USAGE, "option --rate-points: only with --format csv (got --format %s)",
                  gs_report_format_choices[format]);
  if (st == GS_OK && per_rate && per_sample)
    st = gs_error(GS_ERR_USAGE, "options --samples and --rate-points: one row per sample or one "
                  "per rate, not both");
  // Outputs are checked before any document is read: a bad --out costs no time.
  if (st == GS_OK && out_path) st = gs_file_check_output(out_path, "option --out");
  for (size_t i = 0; st == GS_OK && out_path && i < files.n; i++)
    st = gs_file_check_not_input(out_path, files.paths[i], NULL, "option --out");
  if (st == GS_OK && plots_dir) st = gs_file_check_output_dir(plots_dir, "option --plots");
  if (st == GS_OK && n_traces) {
    st = report_traces(&files, format, out_path, kernel_wait);
    free(files.paths);
    return st;
  }
  gs_report_prices prices = {0};
  if (st == GS_OK && price_text) st = gs_report_parse_prices(price_text, &prices);
  int *counts = NULL;
  size_t n_counts = 0;
  if (st == GS_OK && predict_text && (format == GS_REPORT_CSV || format == GS_REPORT_JSON))
    st = gs_error(GS_ERR_USAGE, "option --predict: drawn in the plots and shown after text and "
                  "markdown reports, not in %s (gpuscale predict --format json writes it as JSON)",
                  gs_report_format_choices[format]);
  if (st == GS_OK && predict_text)
    st = gs_predict_parse_counts(predict_text, "--predict", &counts, &n_counts);
  if (st != GS_OK) {
    free(files.paths);
    return st;
  }

  gs_report rep;
  gs_report_thresholds th = {.moderate = moderate / 100.0, .critical = critical / 100.0};
  int want_plots = plots_dir || format == GS_REPORT_HTML;
  // Only the per-sample CSV reads the documents' samples after the analysis;
  // the plots draw from the analysis' own copies.
  unsigned flags = per_sample ? 0 : GS_REPORT_DROP_SAMPLES;
  if (want_plots) flags |= GS_REPORT_ROW_SAMPLES;
  st = gs_report_load_with(files.paths, files.n, &th, &prices, flags, &rep);
  free(files.paths);
  if (st != GS_OK) {
    free(counts);
    return st;
  }
  rep.expect_gpus = (int)expect_gpus;
  if (price_text) report_unpriced(&rep);

  // The prediction of every series that has a model (docs/predict.md).
  gs_predict pred = {0};
  gs_predict_options popt = {.counts = counts,
                             .n_counts = n_counts,
                             .inter_node_bytes_per_second = GS_PREDICT_INTER_NODE_GBPS * 1e9,
                             .inter_node_latency_seconds = GS_PREDICT_INTER_NODE_LATENCY_US * 1e-6,
                             .skip_unmodelled = 1};
  if (predict_text && (st = gs_predict_build(&rep, &popt, &pred)) != GS_OK) {
    gs_report_free(&rep);
    free(counts);
    return st;
  }

  gs_report_plots plots = {0};
  if (want_plots &&
      (st = gs_report_plots_make(&rep, plots_dir, predict_text ? &pred : NULL, &plots)) !=
          GS_OK) {
    gs_predict_free(&pred);
    gs_report_free(&rep);
    free(counts);
    return st;
  }

  // Written atomically: a failed write leaves an existing report as it was.
  gs_file_out out;
  st = gs_file_out_open(&out, out_path, "the report");
  if (st == GS_OK) {
    st = gs_report_render_with(out.f, &rep, (gs_report_format)format,
                               want_plots ? &plots : NULL, per_sample ? GS_REPORT_CSV_SAMPLES : per_rate ? GS_REPORT_CSV_RATES : 0);
    if (st == GS_ERR_NOMEM) gs_error(st, "cannot render the report: out of memory");
    if (st == GS_OK && predict_text &&
        (format == GS_REPORT_TEXT || format == GS_REPORT_MARKDOWN)) {
      fputc('\n', out.f);
      st = gs_predict_render(out.f, &pred, format == GS_REPORT_MARKDOWN ? GS_PREDICT_MARKDOWN
                                                                       : GS_PREDICT_TEXT);
    }
    st = gs_file_out_finish(&out, st);
  }
  gs_predict_free(&pred);
  free(counts);
  // The report is written and says where; the command still fails, so a
  // pipeline notices a document whose busbw cannot be trusted.
  const gs_report_row *bad_row = NULL;
  size_t mismatches = gs_report_busbw_mismatches(&rep, &bad_row);
  if (st == GS_OK && mismatches > 0) {
    char point[192];
    gs_report_point_name(bad_row, point, sizeof point);
    st = gs_error(GS_ERR_FORMAT,
                  "%s: %zu collective row%s with a busbw that is not algbw x the op's bus "
                  "factor (first: %s at %d ranks); the report was written and names them",
                  rep.files[bad_row->file], mismatches, mismatches == 1 ? "" : "s", point,
                  bad_row->world_size);
  }
  // With an info document the report holds the node verdict: a fail is
  // the exit code, as for suite, once the report is written.
  if (st == GS_OK) {
    gs_node_verdict verdict;
    gs_report_node_verdict(&rep, &verdict);
    st = gs_node_verdict_status(&verdict);
  }
  gs_report_free(&rep);
  gs_report_plots_free(&plots);
  return st;
}
