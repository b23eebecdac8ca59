/* `gpuscale p2p`: parses the options, measures the links between GPUs and
 * between host and GPU (measure/p2p.h) and prints the matrices (see
 * docs/p2p.md). Exit codes: 0 measured, 1 no CUDA device (nothing to
 * measure) or a cell failed, 2 usage error, 4 interrupted (the document
 * holds the cells measured before). */
#include <stdlib.h>

#include "cli/args.h"
#include "cli/cmd_p2p.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "core/check.h"
#include "measure/common.h"
#include "measure/p2p.h"

static gs_status reject_positional(void *ctx, const char *arg) {
  (void)ctx;
  return gs_error(GS_ERR_USAGE, "gpuscale p2p: unexpected argument '%s'", arg);
}

static void print_outcome(FILE *out, const gs_p2p_options *o, const gs_p2p_outcome *r) {
  fprintf(out, "gpuscale p2p: %zu GPU%s, %llu bytes per copy, median of %llu samples of %llu "
          "copies\n",
          r->result.n_gpus, r->result.n_gpus == 1 ? "" : "s", (unsigned long long)o->size_bytes,
          (unsigned long long)o->samples, (unsigned long long)o->iters);
  gs_p2p_print(out, &r->result, &r->topology);
}

void gs_p2p_print_outcome(const gs_p2p_options *o, const gs_p2p_outcome *r, FILE *copy) {
  print_outcome(stdout, o, r);
  if (copy) {
    fprintf(copy, "\ngpuscale p2p (%llu bytes per copy)\n", (unsigned long long)o->size_bytes);
    gs_p2p_print(copy, &r->result, &r->topology);
  }
}

/* Measures with `o` and the trace of common's --trace, writes the
 * document to `path` and prints the matrices; gs_measure_p2p's status. */
static gs_status run_and_write(const gs_p2p_options *o, const gs_common_options *common,
                               const char *path) {
  gs_p2p_outcome r;
  gs_status st = gs_measure_p2p(o, NULL, common, path, &r);
  if (r.have_topology) gs_p2p_print_outcome(o, &r, NULL);
  gs_p2p_outcome_free(&r);
  return st;
}

/* Common options p2p does not take, and why: listed by no help page,
 * refused with the reason. */
static const gs_option refused[] = {
    {.name = "backend", .kind = GS_OPT_REFUSED,
     .help = "p2p measures copies between GPUs and host; there is no cpu backend"},
    {.name = "gpus", .kind = GS_OPT_REFUSED,
     .help = "p2p measures every GPU; choose ordered pairs with --pairs"},
    {.name = "ngpus", .short_name = 'g', .kind = GS_OPT_REFUSED,
     .help = "p2p measures every GPU; choose ordered pairs with --pairs"},
    {.name = "ranks", .kind = GS_OPT_REFUSED, .help = "p2p measures GPUs, not CPU ranks"},
    {.name = "warmup", .short_name = 'w', .kind = GS_OPT_REFUSED,
     .help = "every cell takes one untimed warm-up sample"},
    {.name = "min-time", .kind = GS_OPT_REFUSED,
     .help = "a cell is timed by --samples samples of -n/--iters copies"},
    {.name = "runs", .kind = GS_OPT_REFUSED,
     .help = "a cell is timed by --samples samples of -n/--iters copies"},
    {.name = "seed", .kind = GS_OPT_REFUSED, .help = "the copies move a fixed pattern"},
    {.name = "telemetry-interval", .kind = GS_OPT_REFUSED, .help = "p2p records no GPU telemetry"},
    {.name = "telemetry-series", .kind = GS_OPT_REFUSED, .help = "p2p records no GPU telemetry"},
    {.name = "timeout", .kind = GS_OPT_REFUSED,
     .help = "one process drives every GPU: no rank waits for another"},
    {.kind = GS_OPT_END}};

static void print_p2p_help(const gs_option *table, const gs_common_options *common) {
  gs_help_usage("gpuscale p2p [options]");
  gs_help_para("Measures bandwidth between every ordered pair of GPUs (copy engines and an SM copy\n"
         "kernel, P2P enabled and disabled, one way and both ways at once), between host\n"
         "and each GPU (pinned memory), and the GPU-to-GPU latency. Prints the matrices and\n"
         "writes a result document. With one GPU only host transfers run; with no GPU it\n"
         "exits 1 saying why. Ctrl-C or SIGTERM stop it between cells: the document keeps\n"
         "the cells measured (exit 4).");
  gs_help_options("Options", table);
  gs_common_describe(common, gs_help_options);
}

gs_status gs_cmd_p2p(int argc, char **argv) {
  gs_p2p_options o;
  gs_p2p_options_default(&o);
  const char *pairs = NULL;
  gs_common_options common;
  gs_common_init(&common, GS_GROUP_OUTPUT | GS_GROUP_TRACE);
  static const gs_cli_wording wording[] = {{"out", "result file (default results/p2p.json)"},
                                           {NULL, NULL}};
  gs_cli_reword_options(common.table, wording);
  const gs_option table[] = {
      {.name = "size", .short_name = 's', .kind = GS_OPT_SIZE, .target = &o.size_bytes,
       .min = 16, .max = 1ull << 40, .metavar = "BYTES",
       .help = "bytes per copy, multiple of 16 (K, M, G = 1024^n)"},
      {.name = "iters", .short_name = 'n', .kind = GS_OPT_COUNT, .target = &o.iters, .min = 1,
       .max = 1000, .metavar = "N", .help = "copies per timed sample"},
      {.name = "samples", .kind = GS_OPT_COUNT, .target = &o.samples, .min = 1,
       .max = GS_P2P_MAX_SAMPLES, .metavar = "N", .help = "timed samples per cell (median shown)"},
      {.name = "streams", .kind = GS_OPT_COUNT, .target = &o.streams, .min = 1, .max = 16,
       .metavar = "N", .help = "streams sharing one copy in the multi-stream test"},
      {.name = "latency-rounds", .kind = GS_OPT_COUNT, .target = &o.latency_rounds, .min = 1,
       .max = 1000000, .metavar = "N", .help = "ping-pong round trips per latency sample"},
      {.name = "sm-ctas", .kind = GS_OPT_COUNT, .target = &o.sm_ctas, .min = 1, .max = 32,
       .metavar = "N", .help = "SM copy kernel: CTAs of 512 threads per SM"},
      {.name = "pairs", .kind = GS_OPT_STRING, .target = &pairs, .metavar = "LIST",
       .help = "ordered GPU pairs SRC:DST,... (default: every pair)"},
      {.name = "mode", .kind = GS_OPT_CHOICE, .target = &o.mode, .choices = gs_p2p_mode_names,
       .metavar = "M", .help = "what to measure: all, ce, sm, host or latency"},
      {.kind = GS_OPT_END},
  };
  if (gs_cli_wants_help(argc, argv)) {
    print_p2p_help(table, &common);
    return GS_OK;
  }
  const gs_option *tables[] = {table, common.table, refused, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale p2p", argc, argv, reject_positional, NULL));
  if (o.size_bytes % 16 != 0)
    return gs_error(GS_ERR_USAGE, "option --size: %llu bytes is not a multiple of 16",
                    (unsigned long long)o.size_bytes);
  if (pairs) GS_TRY(gs_p2p_parse_pairs(pairs, &o));
  gs_set_quiet(common.quiet);

  return run_and_write(&o, &common, common.out ? common.out : "results/p2p.json");
}
