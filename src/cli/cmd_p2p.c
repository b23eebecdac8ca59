/* `gpuscale p2p`: GPU-to-GPU and host-to-GPU bandwidth and latency matrices
 * (see docs/p2p.md). Exit codes: 0 measured, 1 no CUDA device (nothing to
 * measure) or a cell failed, 2 usage error. */
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_p2p.h"
#include "cli/commands.h"
#include "measure/common.h"
#include "core/check.h"
#include "platform/nvml.h"
#include "platform/topology.h"

static gs_status reject_positional(void *ctx, const char *arg) {
  (void)ctx;
  return gs_error(GS_ERR_USAGE, "gpuscale p2p: unexpected argument '%s'", arg);
}

/* The first failed cell's status, for the exit code. */
static gs_status first_cell_failure(const gs_p2p_result *r) {
  for (size_t ti = 0; ti < r->n_tests; ti++) {
    const gs_p2p_test *t = &r->tests[ti];
    size_t cells = t->per_gpu ? r->n_gpus : r->n_gpus * r->n_gpus;
    for (size_t k = 0; k < cells; k++)
      if (t->cells[k].measured && t->cells[k].status != GS_OK) return t->cells[k].status;
  }
  return GS_OK;
}

static gs_status write_document(const gs_p2p_options *o, const gs_environment *env,
                                const gs_topology *topo, const gs_p2p_result *r,
                                const char *path, int argc, char **argv) {
  cJSON *doc = gs_result_new("p2p", argc, argv);
  if (!doc) return gs_error(GS_ERR_NOMEM, "cannot create the result document");
  gs_status st = gs_result_set_config(doc, gs_p2p_options_to_json(o));
  if (st == GS_OK) st = gs_result_set_environment(doc, env);
  cJSON *envj = cJSON_GetObjectItemCaseSensitive(doc, "environment");
  cJSON *topoj = gs_topology_to_json(topo);
  cJSON *p2p = gs_p2p_to_json(r);
  if (st == GS_OK && (!envj || !topoj || !cJSON_AddItemToObject(envj, "topology", topoj))) {
    cJSON_Delete(topoj);
    st = gs_error(GS_ERR_NOMEM, "out of memory building the p2p document");
  } else if (st != GS_OK) {
    cJSON_Delete(topoj);
  }
  if (st == GS_OK && (!p2p || !cJSON_AddItemToObject(doc, "p2p", p2p))) {
    cJSON_Delete(p2p);
    p2p = NULL;
    st = gs_error(GS_ERR_NOMEM, "out of memory building the p2p document");
  } else if (st != GS_OK) {
    cJSON_Delete(p2p);
  }
  if (st == GS_OK) st = gs_result_set_status(doc, gs_p2p_any_failed(r) ? "partial" : "ok");
  if (st == GS_OK) st = gs_result_write(doc, path);
  if (st == GS_OK) gs_note("result written to %s", path);
  cJSON_Delete(doc);
  return st;
}

gs_status gs_p2p_run_and_write(const gs_p2p_options *o, const gs_environment *env,
                               const char *path, FILE *copy, int argc, char **argv) {
  for (size_t k = 0; k < o->n_pairs; k++)
    for (int e = 0; e < 2; e++)
      if ((size_t)o->pairs[k][e] >= env->gpu_count && env->gpu_count > 0)
        return gs_error(GS_ERR_USAGE, "option --pairs: GPU %d does not exist (%zu present)",
                        o->pairs[k][e], env->gpu_count);
  gs_p2p_result r;
  gs_status st = gs_p2p_measure(o, env, &r);
  if (st != GS_OK) {
    gs_p2p_result_free(&r);
    return st;
  }
  gs_topology topo;
  gs_nvml *nvml = gs_nvml_open(NULL, 0);
  st = gs_topology_collect(&topo, env, nvml);
  gs_nvml_close(nvml);
  if (st == GS_OK) {
    printf("gpuscale p2p: %zu GPU%s, %llu bytes per copy, median of %llu samples of %llu "
           "copies\n",
           r.n_gpus, r.n_gpus == 1 ? "" : "s", (unsigned long long)o->size_bytes,
           (unsigned long long)o->samples, (unsigned long long)o->iters);
    gs_p2p_print(stdout, &r, &topo);
    if (copy) {
      fprintf(copy, "\ngpuscale p2p (%llu bytes per copy)\n", (unsigned long long)o->size_bytes);
      gs_p2p_print(copy, &r, &topo);
    }
    st = write_document(o, env, &topo, &r, path, argc, argv);
    gs_topology_free(&topo);
  }
  if (st == GS_OK) st = first_cell_failure(&r);
  gs_p2p_result_free(&r);
  return st;
}

static void print_p2p_help(const gs_option *table) {
  printf("usage: gpuscale p2p [options]\n\n"
         "Measures bandwidth between every ordered pair of GPUs (copy engines and an SM copy\n"
         "kernel, P2P enabled and disabled, one way and both ways at once), between host\n"
         "and each GPU (pinned memory), and the GPU-to-GPU latency. Prints the matrices and\n"
         "writes a result document. With one GPU only host transfers run; with no GPU it\n"
         "exits 1 saying why.\n\nOptions:\n");
  gs_options_help(stdout, table);
}

gs_status gs_cmd_p2p(int argc, char **argv) {
  gs_p2p_options o;
  gs_p2p_options_default(&o);
  const char *pairs = NULL;
  const char *out = "results/p2p.json";
  int quiet = 0;
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
      {.name = "out", .short_name = 'o', .kind = GS_OPT_STRING, .target = &out,
       .metavar = "FILE", .help = "result file"},
      {.name = "quiet", .short_name = 'q', .kind = GS_OPT_FLAG, .target = &quiet,
       .help = "no notes"},
      {.kind = GS_OPT_END},
  };
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) break;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      print_p2p_help(table);
      return GS_OK;
    }
  }
  const gs_option *tables[] = {table, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale p2p", argc, argv, reject_positional, NULL));
  if (o.size_bytes % 16 != 0)
    return gs_error(GS_ERR_USAGE, "option --size: %llu bytes is not a multiple of 16",
                    (unsigned long long)o.size_bytes);
  if (pairs) GS_TRY(gs_p2p_parse_pairs(pairs, &o));
  gs_set_quiet(quiet);

  gs_environment env;
  gs_status st = gs_common_environment(&env);
  // argv as typed: "gpuscale p2p ..." (main passes the arguments after it).
  char **full = calloc((size_t)argc + 2, sizeof *full);
  if (st == GS_OK && !full) st = gs_error(GS_ERR_NOMEM, "out of memory");
  if (st == GS_OK) {
    full[0] = "gpuscale";
    full[1] = "p2p";
    for (int k = 0; k < argc; k++) full[k + 2] = argv[k];
    st = gs_p2p_run_and_write(&o, &env, out, NULL, argc + 2, full);
  }
  free(full);
  gs_environment_free(&env);
  return st;
}
