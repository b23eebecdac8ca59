/* `gpuscale predict FILES...`: fits models of compute and communication to
 * workload result documents and a coll document of the same machine, and
 * predicts step time (tokens/s for llm), speedup, efficiency and cost at
 * GPU counts past the machine; --holdout checks the models on measurements
 * they were not fitted to. Models in src/report/predict*.c; docs/predict.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "core/file.h"
#include "core/options.h"
#include "report/predict/predict.h"
#include "report/analyze/report.h"

static void print_help(const gs_option *table) {
  gs_help_usage("gpuscale predict [options] FILE... --ngpus 8,16,64,1024");
  gs_help_para("Predicts how measured workloads scale on GPU counts that were not measured,\n"
               "one node or many. From workload result documents (run or scale; voxelize,\n"
               "resample, fuse, mlp, llm offline) and a coll document of the same machine it\n"
               "fits per workload its compute (the part that divides over the GPUs and the\n"
               "fixed per-step overhead), the noise that makes the slowest rank late, the\n"
               "gradient all-reduce that does not overlap (alpha-beta per collective; ring,\n"
               "tree and intra-node then inter-node; the measured time where a coll document\n"
               "covers the size) or the batch rounds of llm replicas, and\n"
               "prints per GPU count the step (or tokens/s), speedup, efficiency and the terms\n"
               "that make it up. --holdout N fits below N GPUs and shows the error at N and\n"
               "above; --holdout-layout tp=T,pp=P fits llm on its other layouts (tensor and\n"
               "pipeline parallel, replicas) and shows the error of that one, with its 95%%\n"
               "interval. Models and their assumptions: docs/predict.md.");
  gs_help_example("gpuscale predict voxelize.json mlp.json llm.json coll.json --ngpus 8,16,64,1024 \\\n"
                  "    --gpus-per-node 8 --inter-node 50 --inter-node-latency 5\n"
                  "gpuscale predict mlp.json coll.json --ngpus 16,64 --gpus-per-node 8 \\\n"
                  "    --inter-node-coll coll-2nodes.json\n"
                  "gpuscale predict voxelize.json mlp.json llm.json coll.json --holdout 4\n"
                  "gpuscale predict llm-1.json llm-tp2.json llm-pp2.json llm-pp3.json \\\n"
                  "    sendrecv.json allreduce.json --holdout-layout tp=1,pp=3");
  gs_help_options("Options", table);
  gs_help_para("Exit codes: 0 prediction written, 1 a file is unreadable or not a valid result\n"
               "document (or the output cannot be written), 2 usage error (including inputs\n"
               "that cannot be predicted: a coll document of another machine, a collective\n"
               "measured at one size, a workload without a model, an --inter-node-coll\n"
               "document without a 2-rank allreduce, and a model that does not reproduce a\n"
               "measurement it was fitted to, such as a super-linear series: predict refuses\n"
               "to extrapolate and names that measurement).");
}

/* See commands.h. */
gs_status gs_cmd_predict(int argc, char **argv) {
  int format = GS_PREDICT_TEXT;
  const char *out_path = NULL, *gpus_text = NULL, *price_text = NULL;
  uint64_t per_node = 0, holdout = 0, tp = 0, pp = 0;
  const char *layout_text = NULL;
  const char *net_path = NULL;
  // NaN until given: the defaults apply only without --inter-node-coll.
  double gbps = NAN, latency_us = NAN;
  double target = 0.0;
  const gs_option table[] = {
      {.name = "ngpus", .short_name = 'g', .kind = GS_OPT_STRING, .target = &gpus_text,
       .metavar = "LIST",
       .help = "GPU counts to predict: 8,16,64,1024, ranges 1-8, ranges with a step 8-8192:8"},
      {.name = "gpus-per-node", .kind = GS_OPT_COUNT, .target = &per_node, .min = 1,
       .max = 1048576, .metavar = "N",
       .help = "GPUs of one node (default: the GPUs of the measured machine)"},
      {.name = "inter-node", .kind = GS_OPT_DOUBLE, .target = &gbps, .dmin = 1e-3, .dmax = 1e6,
       .metavar = "GBPS", .help = "network bandwidth between nodes per GPU in GB/s (default 50)"},
      {.name = "inter-node-latency", .kind = GS_OPT_DOUBLE, .target = &latency_us, .dmin = 0.0,
       .dmax = 1e6, .metavar = "US",
       .help = "network latency of one message step in microseconds (default 5)"},
      {.name = "inter-node-coll", .kind = GS_OPT_STRING, .target = &net_path, .metavar = "FILE",
       .help = "the network between nodes as measured: a coll allreduce document of 2 ranks, "
               "one GPU on each of 2 nodes (instead of --inter-node, --inter-node-latency)"},
      {.name = "holdout", .kind = GS_OPT_COUNT, .target = &holdout, .min = 2, .max = 1048576,
       .metavar = "N",
       .help = "fit on the measurements below N GPUs; show predicted vs measured at N and above "
               "(default: fit on all)"},
      {.name = "tp", .kind = GS_OPT_COUNT, .target = &tp, .min = 1, .max = 1048576,
       .metavar = "N", .help = "llm: replicas of N tensor-parallel GPUs (default: as measured)"},
      {.name = "pp", .kind = GS_OPT_COUNT, .target = &pp, .min = 1, .max = 1048576,
       .metavar = "N",
       .help = "llm: replicas of N pipeline stages, each of --tp GPUs (default: as measured)"},
      {.name = "holdout-layout", .kind = GS_OPT_STRING, .target = &layout_text,
       .metavar = "tp=T,pp=P",
       .help = "llm: fit on the other layouts of the same request stream; show predicted vs "
               "measured for this one"},
      {.name = "price", .kind = GS_OPT_STRING, .target = &price_text, .metavar = "MODEL=USD,...",
       .help = "price per GPU-hour by GPU model, e.g. H100=7: cost per million items, cheapest "
               "count"},
      {.name = "target", .kind = GS_OPT_DOUBLE, .target = &target, .dmin = 1.0, .dmax = 1e30,
       .metavar = "ITEMS",
       .help = "time (and cost, with --price) to process ITEMS items (default: none)"},
      {.name = "format", .short_name = 'f', .kind = GS_OPT_CHOICE, .target = &format,
       .choices = gs_predict_format_choices, .metavar = "FMT",
       .help = "aligned text, GitHub Markdown, or JSON (gpuscale/predict/v1)"},
      {.name = "out", .short_name = 'o', .kind = GS_OPT_STRING, .target = &out_path,
       .metavar = "FILE", .help = "write the prediction to FILE (default: standard output)"},
      {.kind = GS_OPT_END}};
  // --gpus names GPUs by ordinal in the measuring commands; predict's are counts.
  static const gs_option refused[] = {
      {.name = "gpus", .kind = GS_OPT_REFUSED,
       .help = "predict takes GPU counts: -g/--ngpus LIST (--gpus names GPUs by CUDA ordinal "
               "in the measuring commands)"},
      {.kind = GS_OPT_END}};
  if (gs_cli_wants_help(argc, argv)) {
    print_help(table);
    return GS_OK;
  }
  gs_cli_file_list files = {0};
  int *counts = NULL;
  size_t n_counts = 0;
  gs_report_prices prices = {0};
  const gs_option *tables[] = {table, refused, NULL};
  gs_status st = gs_cli_parse_files(tables, "gpuscale predict",
                                    "workload result documents and a coll document of the same "
                                    "machine", argc, argv, &files);
  if (st == GS_OK && gpus_text) st = gs_predict_parse_counts(gpus_text, "--ngpus", &counts, &n_counts);
  gs_predict_layout held = {0, 0, 0, 0.0};
  if (st == GS_OK && layout_text)
    st = gs_predict_parse_layout(layout_text, "--holdout-layout", &held);
  if (st == GS_OK && !gpus_text && holdout == 0 && !layout_text)
    st = gs_error(GS_ERR_USAGE, "gpuscale predict: give --ngpus LIST (the counts to predict), "
                                "--holdout N (check the models on measured counts) or "
                                "--holdout-layout tp=T,pp=P (check llm on a measured layout)");
  if (st == GS_OK && net_path && (!isnan(gbps) || !isnan(latency_us)))
    st = gs_error(GS_ERR_USAGE, "gpuscale predict: --inter-node-coll describes the network by its "
                                "measured allreduce; give it or --inter-node/--inter-node-latency, "
                                "not both");
  if (st == GS_OK && target > 0.0 && !isfinite(target))
    st = gs_error(GS_ERR_USAGE, "option --target: must be finite");
  if (st == GS_OK && out_path) st = gs_file_check_output(out_path, "option --out");
  for (size_t i = 0; st == GS_OK && out_path && i < files.n; i++)
    st = gs_file_check_not_input(out_path, files.paths[i], NULL, "option --out");
  if (st == GS_OK && out_path && net_path)
    st = gs_file_check_not_input(out_path, net_path, NULL, "option --out");
  if (st == GS_OK && price_text) st = gs_report_parse_prices(price_text, &prices);
  if (st != GS_OK) {
    free(files.paths);
    free(counts);
    return st;
  }

  gs_report rep, net = {0};
  gs_report_thresholds th = {.moderate = GS_REPORT_MODERATE_DEFAULT,
                             .critical = GS_REPORT_CRITICAL_DEFAULT};
  st = gs_report_load_with(files.paths, files.n, &th, &prices, GS_REPORT_DROP_SAMPLES, &rep);
  free(files.paths);
  if (st != GS_OK) {
    free(counts);
    return st;
  }
  if (net_path &&
      (st = gs_report_load_with(&net_path, 1, &th, &prices, GS_REPORT_DROP_SAMPLES, &net)) != GS_OK) {
    st = gs_error(st, "option --inter-node-coll: %s", gs_last_error());
    gs_report_free(&rep);
    free(counts);
    return st;
  }
  gs_predict_options opt = {
      .counts = counts,
      .n_counts = n_counts,
      .gpus_per_node = (int)per_node,
      .inter_node_bytes_per_second = (isnan(gbps) ? GS_PREDICT_INTER_NODE_GBPS : gbps) * 1e9,
      .inter_node_latency_seconds =
          (isnan(latency_us) ? GS_PREDICT_INTER_NODE_LATENCY_US : latency_us) * 1e-6,
      .holdout = (int)holdout,
      .tensor_parallel = (int)tp,
      .pipeline_stages = (int)pp,
      .holdout_layout = held,
      .target_items = target,
      .inter_node_coll = net_path ? &net : NULL};
  gs_predict pred;
  st = gs_predict_build(&rep, &opt, &pred);
  if (st == GS_OK) {
    for (size_t i = 0; i < pred.n_workloads && price_text; i++)
      if (!isfinite(pred.workloads[i].price_per_gpu_hour))
        gs_warn("--price: no price matches the GPU of %s; its cost columns are left out",
                pred.workloads[i].name);
    // Written atomically: a failed write leaves an existing file as it was.
    gs_file_out out;
    st = gs_file_out_open(&out, out_path, "the prediction");
    if (st == GS_OK) st = gs_file_out_finish(&out, gs_predict_render(out.f, &pred,
                                                                     (gs_predict_format)format));
    gs_predict_free(&pred);
  }
  if (net_path) gs_report_free(&net);
  gs_report_free(&rep);
  free(counts);
  return st;
}
