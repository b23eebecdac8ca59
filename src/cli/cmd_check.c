/* `gpuscale check`: node acceptance for a job's prolog. Level 1 reads the
 * node's passive state (inventory, driver/CUDA/NCCL, ECC, retired pages,
 * row remaps, NVLink, PCIe, clock event reasons), runs a short p2p and
 * all-reduce, and judges it pass, warn
 * or fail with an action per finding, as text or JSON, within a time budget
 * it reports. Exit 0 pass (or not applicable), 6 warn, 5 fail. See
 * docs/check.md. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "core/check.h"
#include "core/json.h"
#include "core/options.h"
#include "core/timer.h"
#include "measure/check.h"
#include "measure/check_burn.h"
#include "measure/check_stress.h"
#include "report/verdict/check.h"

/* The default budgets: level 1, a job prolog's share on an 8-GPU node;
 * level 2, after maintenance (issue 30). */
#define CHECK_LEVEL1_BUDGET_S 60.0
#define CHECK_LEVEL2_BUDGET_S 240.0
/* Level 3's default burn-in; its budget is level 2's, the burn-in and a
 * minute to set up and check. */
#define CHECK_BURN_DEFAULT_S 600.0

static const char *const format_choices[] = {"text", "json", NULL};
enum { FORMAT_TEXT = 0, FORMAT_JSON = 1 };
static const char *const level_choices[] = {"1", "2", "3", NULL};

static gs_status reject_positional(void *ctx, const char *arg) {
  (void)ctx;
  return gs_error(GS_ERR_USAGE, "gpuscale check: unexpected argument '%s'", arg);
}

static void gpu_label(const gs_health_finding *f, char *out, size_t size) {
  if (f->gpu >= 0)
    snprintf(out, size, "%d", f->gpu);
  else
    snprintf(out, size, "-");
}

static void print_text(FILE *out, const gs_health_verdict *v, const gs_node_state *s,
                       const gs_check_models *models, int level, double elapsed) {
  if (!v->applicable) {
    fprintf(out, "gpuscale check --level %d: not applicable: %s\n", level, v->why);
    return;
  }
  fprintf(out, "gpuscale check --level %d: %s (%zu passed, %zu warned, %zu failed) in %.2f s of "
          "a %g s budget\n", level, gs_check_state_name(v->overall), v->passed, v->warned,
          v->failed, elapsed, s->budget_s);
  if (!s->hung[0]) {
    size_t slowest = 0;
    for (size_t i = 1; i < s->gpu_count; i++)
      if (s->gpus[i].read_seconds > s->gpus[slowest].read_seconds) slowest = i;
    fprintf(out, "time: CUDA and NCCL %.3f s, NVML %.3f s, %zu GPUs %.3f s", s->cuda_seconds,
            s->nvml_seconds, s->gpu_count, s->gpus_seconds);
    if (s->gpu_count)
      fprintf(out, " (slowest GPU %d, %.3f s)", s->gpus[slowest].index,
              s->gpus[slowest].read_seconds);
    fprintf(out, "\n");
    if (s->stress.level == 1 && !s->stress.why[0])
      fprintf(out, "level 1: GPU pairs %.3f s, all-reduce %.3f s\n", s->stress.p2p_seconds,
              s->stress.allreduce_seconds);
    if (s->stress.level >= 2 && !s->stress.why[0])
      fprintf(out, "level 2: memory bandwidth %.3f s, host copies %.3f s, GPU pairs %.3f s, "
              "all-reduce %.3f s, workloads %.3f s\n", s->stress.membw_seconds,
              s->stress.host_seconds, s->stress.p2p_seconds, s->stress.allreduce_seconds,
              s->stress.workload_seconds);
    if (s->burn.level >= 3 && !s->burn.why[0])
      fprintf(out, "level 3: burn-in %.1f s of %g s on %zu GPUs%s%s\n", s->burn.seconds,
              s->burn.duration_s, s->burn.n, s->burn.telemetry_why[0] ? "; no telemetry: " : "",
              s->burn.telemetry_why);
  }
  fprintf(out, "\n");
  fprintf(out, "%-14s %-4s %-5s %s\n", "check", "GPU", "state", "detail");
  for (size_t i = 0; i < v->n; i++) {
    const gs_health_finding *f = &v->items[i];
    char gpu[16];
    gpu_label(f, gpu, sizeof gpu);
    fprintf(out, "%-14s %-4s %-5s %s\n", f->check, gpu, gs_check_state_name(f->state), f->detail);
  }
  fprintf(out, "\nExpected figures: %s%s%s\n", models->site ? models->site->path : "",
          models->site ? ", then " : "",
          models->shipped ? models->shipped->path : models->shipped_why);
  if (v->warned + v->failed == 0) return;
  fprintf(out, "\nActions\n");
  for (size_t i = 0; i < v->n; i++)
    if (v->items[i].action[0]) fprintf(out, "  %s\n", v->items[i].action);
}

/* The expected figures each GPU was held to, with their sources
 * (docs/check.md, "expected"). NULL when memory runs out. */
static cJSON *expected_json(const gs_check_models *models, const gs_node_state *s) {
  gs_json_build build = {0}, *b = &build;
  cJSON *e = gs_json_check(b, cJSON_CreateObject());
  gs_json_put_string_or_null(b, e, "site_file", models->site ? models->site->path : "");
  gs_json_put_string_or_null(b, e, "shipped_file", models->shipped ? models->shipped->path : "");
  gs_json_put_string_or_null(b, e, "why", models->shipped ? "" : models->shipped_why);
  cJSON *gpus = gs_json_put_array(b, e, "gpus");
  for (size_t i = 0; gpus && i < s->gpu_count; i++) {
    gs_gpu_model model;
    const gs_gpu_model *m = gs_check_model_of(models, &s->gpus[i], &model) ? &model : NULL;
    cJSON *g = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_number(b, g, "gpu", s->gpus[i].index);
    gs_json_put_string_or_null(b, g, "model", m ? m->model : "");
    cJSON *figs = m ? gs_json_put_object(b, g, "figures") : NULL;
    if (!m) gs_json_put_null(b, g, "figures");
    for (int k = 0; figs && k < GS_FIG_COUNT; k++) {
      if (!m->fig[k].has) continue;
      cJSON *f = gs_json_put_object(b, figs, gs_figure_key((gs_figure)k));
      gs_json_put_number(b, f, "value", m->fig[k].value);
      gs_json_put_string(b, f, "source", m->fig[k].source);
    }
    gs_json_append(b, gpus, g);
  }
  return gs_json_build_finish(b, e);
}

/* A bandwidth in GB/s, or null when not measured. */
static void put_gbs(gs_json_build *b, cJSON *o, const char *name, double v) {
  if (isfinite(v))
    gs_json_put_number(b, o, name, v);
  else
    gs_json_put_null(b, o, name);
}

/* Level 2's measurements (docs/check.md, "stress"). NULL when memory runs
 * out. */
static cJSON *stress_json(const gs_node_stress *x) {
  gs_json_build build = {0}, *b = &build;
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  gs_json_put_string_or_null(b, o, "why", x->why);
  gs_json_put_string_or_null(b, o, "over_budget", x->over_budget);
  cJSON *gpus = gs_json_put_array(b, o, "gpus");
  for (size_t i = 0; gpus && i < x->n; i++) {
    const gs_gpu_stress *g = &x->gpus[i];
    cJSON *e = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_number(b, e, "cuda_device", g->device);
    gs_json_put_string(b, e, "pci_bus_id", g->pci_bus_id);
    put_gbs(b, e, "membw_gbs", g->membw_done && !g->membw_error[0] ? g->membw_gbs : NAN);
    gs_json_put_number(b, e, "membw_slowdown", g->membw_slowdown);
    gs_json_put_u64(b, e, "membw_mismatches", g->membw_mismatches);
    gs_json_put_string_or_null(b, e, "membw_error", g->membw_error);
    put_gbs(b, e, "host_to_device_gbs", g->h2d_gbs);
    put_gbs(b, e, "device_to_host_gbs", g->d2h_gbs);
    gs_json_put_string_or_null(b, e, "host_error", g->host_error);
    gs_json_append(b, gpus, e);
  }
  cJSON *rows = gs_json_put_array(b, o, "p2p_gbs");
  for (size_t i = 0; rows && i < x->n; i++) {
    cJSON *row = gs_json_check(b, cJSON_CreateArray());
    for (size_t j = 0; row && j < x->n; j++)
      gs_json_append_number(b, row, x->p2p_gbs[i * x->n + j]);
    gs_json_append(b, rows, row);
  }
  gs_json_put_string_or_null(b, o, "p2p_error", x->p2p_error);
  cJSON *ar = gs_json_put_object(b, o, "allreduce");
  gs_json_put_bool(b, ar, "measured", x->allreduce_done);
  cJSON *points = gs_json_put_array(b, ar, "points");
  for (size_t i = 0; points && i < x->allreduce_n; i++) {
    cJSON *p = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_u64(b, p, "bytes", x->allreduce_bytes[i]);
    put_gbs(b, p, "busbw_gbs", x->allreduce_busbw_gbs[i]);
    gs_json_append(b, points, p);
  }
  gs_json_put_u64(b, ar, "wrong", x->allreduce_wrong);
  gs_json_put_string_or_null(b, ar, "error", x->allreduce_error);
  cJSON *wl = gs_json_put_object(b, o, "workloads");
  for (size_t w = 0; wl && w < x->workload_n; w++) {
    cJSON *row = gs_json_put_array(b, wl, x->workload_keys[w]);
    for (size_t i = 0; row && i < x->n; i++)
      gs_json_append_number(b, row, x->workload_rate[w * x->n + i]);
  }
  gs_json_put_string_or_null(b, o, "workloads_error", x->workload_error);
  // Each GPU's ratio to the node's median GPU with its interval, and the
  // mean step of each round behind it (docs/check.md, "stress").
  gs_json_put_u64(b, o, "workload_rounds", x->workload_rounds);
  cJSON *ratios = gs_json_put_object(b, o, "workload_ratios");
  cJSON *means = gs_json_put_object(b, o, "workload_round_mean_seconds");
  for (size_t w = 0; ratios && means && w < x->workload_n; w++) {
    cJSON *row = gs_json_put_array(b, ratios, x->workload_keys[w]);
    cJSON *mrow = gs_json_put_array(b, means, x->workload_keys[w]);
    for (size_t i = 0; row && mrow && i < x->n; i++) {
      double ratio, low, high;
      const int known = gs_check_workload_ratio(x, w, i, &ratio, &low, &high);
      cJSON *e = gs_json_check(b, known ? cJSON_CreateObject() : cJSON_CreateNull());
      if (known) {
        gs_json_put_number(b, e, "ratio", ratio);
        gs_json_put_number(b, e, "low", low);
        gs_json_put_number(b, e, "high", high);
      }
      gs_json_append(b, row, e);
      cJSON *rounds = gs_json_check(b, cJSON_CreateArray());
      for (size_t r = 0; rounds && x->workload_steps && r < x->workload_rounds; r++) {
        const gs_health_steps *g =
            &x->workload_steps[(w * x->n + i) * GS_HEALTH_WORKLOAD_ROUNDS + r];
        double sum = 0;
        for (size_t k = 0; k < g->n; k++) sum += g->seconds[k];
        gs_json_append_number(b, rounds, g->n ? sum / (double)g->n : NAN);
      }
      gs_json_append(b, mrow, rounds);
    }
  }
  return gs_json_build_finish(b, o);
}

/* A figure, or null when NVML did not give it. */
static void put_known(gs_json_build *b, cJSON *o, const char *name, int known, double v) {
  if (known)
    gs_json_put_number(b, o, name, v);
  else
    gs_json_put_null(b, o, name);
}

/* Level 3's record (docs/check.md, "burn"). NULL when memory runs out. */
static cJSON *burn_json(const gs_node_burn *x) {
  gs_json_build build = {0}, *b = &build;
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  gs_json_put_string_or_null(b, o, "why", x->why);
  gs_json_put_number(b, o, "duration_seconds", x->duration_s);
  gs_json_put_number(b, o, "seconds", x->seconds);
  gs_json_put_string_or_null(b, o, "telemetry_why", x->telemetry_why);
  // Every reading over time (docs/telemetry.md's form), null without NVML.
  cJSON *series = x->telemetry ? gs_json_check(b, cJSON_Duplicate(x->telemetry, 1)) : NULL;
  if (series)
    gs_json_put_item(b, o, "telemetry", series);
  else
    gs_json_put_null(b, o, "telemetry");
  cJSON *gpus = gs_json_put_array(b, o, "gpus");
  for (size_t i = 0; gpus && i < x->n; i++) {
    const gs_gpu_burn *g = &x->gpus[i];
    cJSON *e = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_number(b, e, "cuda_device", g->device);
    gs_json_put_string(b, e, "pci_bus_id", g->pci_bus_id);
    gs_json_put_string_or_null(b, e, "error", g->error);
    gs_json_put_u64(b, e, "gemms", g->gemms);
    gs_json_put_u64(b, e, "triads", g->triads);
    gs_json_put_u64(b, e, "checks", g->checks);
    gs_json_put_u64(b, e, "mismatches", g->mismatches);
    gs_json_put_number(b, e, "gemm_tflops", g->gemm_tflops);
    gs_json_put_number(b, e, "seconds", g->seconds);
    gs_json_put_u64(b, e, "readings", g->readings);
    put_known(b, e, "power_mean_w", g->power_known, g->power_mean_w);
    put_known(b, e, "power_max_w", g->power_known, g->power_max_w);
    put_known(b, e, "temperature_max_c", g->temperature_known, g->temperature_max_c);
    put_known(b, e, "sm_clock_min_mhz", g->clock_known, g->sm_clock_min_mhz);
    put_known(b, e, "sm_clock_mean_mhz", g->clock_known, g->sm_clock_mean_mhz);
    put_known(b, e, "clock_event_reasons_seen", g->throttle_known, (double)g->throttle_seen);
    gs_json_append(b, gpus, e);
  }
  return gs_json_build_finish(b, o);
}

/* The check document: a result document ("command": "check") whose "check"
 * member holds the verdict, the findings, the actions and the passive
 * state (docs/check.md). *doc is the caller's. */
static gs_status check_document(const gs_health_verdict *v, const gs_node_state *s,
                                const gs_check_models *models, int level,
                                const char *const *injected, size_t n_injected,
                                size_t expect_gpus, double elapsed, cJSON **doc) {
  *doc = NULL;
  cJSON *made = gs_result_new("check");
  if (!made) return gs_error(GS_ERR_NOMEM, "out of memory building the check document");
  gs_json_build build = {0}, *b = &build;
  cJSON *config = gs_json_check(b, cJSON_CreateObject());
  gs_json_put_number(b, config, "level", level);
  cJSON *inject = gs_json_put_array(b, config, "inject");
  for (size_t i = 0; inject && i < n_injected; i++) gs_json_append_string(b, inject, injected[i]);
  gs_json_put_string_or_null(b, config, "expect", models->site ? models->site->path : "");
  if (expect_gpus)
    gs_json_put_u64(b, config, "expect_gpus", expect_gpus);
  else
    gs_json_put_null(b, config, "expect_gpus");
  gs_status st = gs_json_build_status(b, "the check document");
  if (st == GS_OK) st = gs_result_set_config(made, config);
  else cJSON_Delete(config);
  cJSON *c = st == GS_OK ? gs_json_put_object(b, made, "check") : NULL;
  gs_json_put_number(b, c, "level", level);
  gs_json_put_string(b, c, "verdict", v->applicable ? gs_check_state_name(v->overall)
                                                    : "not applicable");
  gs_json_put_string_or_null(b, c, "why", v->applicable ? "" : v->why);
  gs_json_put_number(b, c, "budget_seconds", s->budget_s);
  gs_json_put_number(b, c, "elapsed_seconds", elapsed);
  cJSON *t = gs_json_put_object(b, c, "seconds");
  gs_json_put_number(b, t, "cuda", s->cuda_seconds);
  gs_json_put_number(b, t, "nvml", s->nvml_seconds);
  gs_json_put_number(b, t, "gpus", s->gpus_seconds);
  if (level >= 2) gs_json_put_number(b, t, "membw", s->stress.membw_seconds);
  if (level >= 2) gs_json_put_number(b, t, "host", s->stress.host_seconds);
  gs_json_put_number(b, t, "p2p", s->stress.p2p_seconds);
  gs_json_put_number(b, t, "allreduce", s->stress.allreduce_seconds);
  if (level >= 2) gs_json_put_number(b, t, "workloads", s->stress.workload_seconds);
  if (level >= 3) gs_json_put_number(b, t, "burn", s->burn.seconds);
  gs_json_put_bool(b, c, "nvml_replaced", s->nvml_replaced);
  gs_json_put_string_or_null(b, c, "nvml_status", s->nvml_status);
  gs_json_put_string_or_null(b, c, "driver_version", s->driver);
  cJSON *findings = gs_json_put_array(b, c, "findings");
  cJSON *actions = gs_json_put_array(b, c, "actions");
  for (size_t i = 0; findings && actions && i < v->n; i++) {
    const gs_health_finding *f = &v->items[i];
    cJSON *o = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_string(b, o, "check", f->check);
    if (f->gpu >= 0) gs_json_put_number(b, o, "gpu", f->gpu);
    else gs_json_put_null(b, o, "gpu");
    gs_json_put_string(b, o, "state", gs_check_state_name(f->state));
    gs_json_put_string(b, o, "detail", f->detail);
    gs_json_put_string_or_null(b, o, "action", f->action);
    gs_json_append(b, findings, o);
    if (f->action[0]) gs_json_append_string(b, actions, f->action);
  }
  if (c) gs_json_put_item(b, c, "gpus", gs_check_state_json(s));
  if (c) gs_json_put_item(b, c, "expected", expected_json(models, s));
  // The fractions of the model's figures (and of the node's median) that
  // the measured values are held to, for a GPU run to confirm them.
  cJSON *fr = gs_json_put_object(b, c, "fractions");
  gs_json_put_number(b, fr, "membw_of_model", GS_CHECK_MEMBW_FRACTION);
  gs_json_put_number(b, fr, "membw_of_median", GS_CHECK_MEMBW_MEDIAN_FRACTION);
  gs_json_put_number(b, fr, "host_warn_of_link", GS_CHECK_HOST_WARN_FRACTION);
  gs_json_put_number(b, fr, "host_fail_of_link", GS_CHECK_HOST_FAIL_FRACTION);
  gs_json_put_number(b, fr, "p2p_warn_of_nvlink", GS_CHECK_P2P_WARN_FRACTION);
  gs_json_put_number(b, fr, "p2p_warn_of_median", GS_CHECK_P2P_MEDIAN_FRACTION);
  gs_json_put_number(b, fr, "p2p_fail_of_nvlink", GS_CHECK_P2P_FAIL_FRACTION);
  gs_json_put_number(b, fr, "allreduce_warn_of_nvlink",
                     level == 1 ? GS_CHECK_ALLREDUCE_SHORT_FRACTION : GS_CHECK_ALLREDUCE_FRACTION);
  gs_json_put_number(b, fr, "workloads_warn_of_median", GS_CHECK_WORKLOAD_MEDIAN_FRACTION);
  gs_json_put_number(b, fr, "workloads_fail_of_median", GS_CHECK_WORKLOAD_FAIL_FRACTION);
  if (c) gs_json_put_item(b, c, "stress", stress_json(&s->stress));
  if (c && level >= 3) gs_json_put_item(b, c, "burn", burn_json(&s->burn));
  if (st == GS_OK) st = gs_json_build_status(b, "the check document");
  if (st == GS_OK) st = gs_result_set_status(made, "ok");
  if (st != GS_OK) {
    cJSON_Delete(made);
    return st;
  }
  *doc = made;
  return GS_OK;
}

static void print_check_help(const gs_option *table) {
  gs_help_usage("gpuscale check [options]");
  gs_help_para("Node acceptance for a job's prolog. Level 1 reads, without changing anything, the\n"
               "GPUs NVML lists: inventory, driver/CUDA/NCCL, ECC errors, retired pages, row\n"
               "remaps, NVLink state and error counters, PCIe generation and width, clock event\n"
               "reasons. Each check passes, warns or fails, with an action per failure. Exit 0\n"
               "pass (or not applicable: no GPU), 6 warn, 5 fail. See docs/check.md.\n"
               "`gpuscale check pairs` localizes a slow rank, link or node by pairs (see\n"
               "`gpuscale check pairs --help`).");
  gs_help_example("gpuscale check --level 1 --expect-gpus 8");
  gs_help_example("gpuscale check --expect site-figures.json");
  gs_help_example("gpuscale check --level 2 --inject membw:gpu=1,factor=0.8");
  gs_help_example("gpuscale check --level 3 --duration 900");
  gs_help_example("mpirun -np 8 gpuscale check pairs");
  gs_help_options("Options", table);
}

gs_status gs_cmd_check(int argc, char **argv) {
  int format = FORMAT_TEXT, level = 0;
  uint64_t expect_gpus = 0;
  double budget = 0, duration = 0;
  gs_string_list injects = {0};
  const char *out_path = NULL, *expect_path = NULL;
  const gs_option table[] = {
      {.name = "level", .short_name = 'l', .kind = GS_OPT_CHOICE, .target = &level,
       .choices = level_choices, .metavar = "1|2|3",
       .help = "1: passive state and a short p2p and all-reduce, within 60 s; 2: also memory, "
               "host and every GPU pair's bandwidth "
               "against the model's figures, within 240 s; 3: also a burn-in (--duration)"},
      {.name = "duration", .kind = GS_OPT_DOUBLE, .target = &duration, .dmin = 1, .dmax = 86400,
       .metavar = "SECONDS", .help = "level 3: the burn-in's length (default 600)"},
      {.name = "inject", .kind = GS_OPT_STRING_LIST, .target = &injects,
       .metavar = "membw:gpu=G,factor=F",
       .help = "level 2: rehearse a fault: CUDA device G's triads take 1/F times as long"},
      {.name = "expect-gpus", .kind = GS_OPT_COUNT, .target = &expect_gpus, .min = 1,
       .max = 4096, .metavar = "N", .help = "fail unless NVML lists N GPUs (default: any)"},
      {.name = "expect", .kind = GS_OPT_STRING, .target = &expect_path, .metavar = "FILE",
       .help = "hold GPUs to the site's own figures in FILE first (the form of the shipped "
               "gpu-models.json; docs/check.md)"},
      {.name = "budget", .kind = GS_OPT_DOUBLE, .target = &budget, .dmin = 0.1, .dmax = 90000,
       .metavar = "SECONDS",
       .help = "give up on a GPU that has not answered after SECONDS and fail (default 60 "
               "at level 1, 240 at level 2, 300 + the burn-in at level 3)"},
      {.name = "format", .short_name = 'f', .kind = GS_OPT_CHOICE, .target = &format,
       .choices = format_choices, .metavar = "text|json",
       .help = "output: a table with the actions, or a result document"},
      {.name = "out", .short_name = 'o', .kind = GS_OPT_STRING, .target = &out_path,
       .metavar = "FILE", .help = "write to FILE instead of standard output"},
      {.kind = GS_OPT_END},
  };
  if (argc > 0 && strcmp(argv[0], "pairs") == 0) return gs_cmd_check_pairs(argc - 1, argv + 1);
  if (gs_cli_wants_help(argc, argv)) {
    print_check_help(table);
    return GS_OK;
  }
  const gs_option *tables[] = {table, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale check", argc, argv, reject_positional, NULL));
  if (out_path) GS_TRY(gs_file_check_output(out_path, "option --out"));
  // The figures are read before anything is checked: a malformed file is
  // the error, never a node held to nothing.
  gs_gpu_models site, shipped;
  memset(&site, 0, sizeof site);
  gs_check_models models;
  memset(&models, 0, sizeof models);
  int found = 0;
  gs_status st = gs_check_models_shipped(&shipped, &found, models.shipped_why,
                                         sizeof models.shipped_why);
  if (st == GS_OK && expect_path) {
    st = gs_gpu_models_load(expect_path, &site);
    if (st != GS_OK) {
      char why[GS_TEXT_ERROR];
      snprintf(why, sizeof why, "%s", gs_last_error());
      st = gs_error(GS_ERR_USAGE, "option --expect: %s", why);
    }
  }
  models.site = expect_path ? &site : NULL;
  models.shipped = found ? &shipped : NULL;

  const int level_n = level + 1;
  gs_check_burn_options burn;
  gs_check_burn_options_default(&burn);
  if (duration > 0) burn.duration_s = duration;
  if (st == GS_OK && duration > 0 && level_n < 3)
    st = gs_error(GS_ERR_USAGE, "option --duration: the burn-in is level 3's (--level 3)");
  if (st == GS_OK && level_n >= 3 && budget > 0 && budget < burn.duration_s + 60)
    st = gs_error(GS_ERR_USAGE, "option --budget: %g s cannot hold a %g s burn-in and its minute "
                  "of setup and checks", budget, burn.duration_s);
  if (budget == 0)
    budget = level_n >= 3   ? CHECK_LEVEL2_BUDGET_S + burn.duration_s + 60
             : level_n == 2 ? CHECK_LEVEL2_BUDGET_S
                            : CHECK_LEVEL1_BUDGET_S;
  gs_check_stress_options stress;
  gs_check_stress_options_default(&stress);
  stress.short_run = level_n == 1;
  for (size_t i = 0; st == GS_OK && i < injects.n; i++)
    st = gs_check_inject_parse(injects.v[i], &stress);
  if (st == GS_OK && injects.n && level_n < 2)
    st = gs_error(GS_ERR_USAGE, "option --inject: faults are rehearsed at --level 2");

  const double start = gs_time_seconds();
  // Level 2's checks start only while the budget lasts; the time after the
  // deadline is the running check's end.
  stress.deadline = start + (level_n >= 3 ? CHECK_LEVEL2_BUDGET_S : budget);
  gs_node_state state;
  gs_health_verdict verdict;
  memset(&verdict, 0, sizeof verdict);
  memset(&state, 0, sizeof state);
  if (st == GS_OK)
    st = gs_check_state_collect_within(&state, budget, &stress,
                                       level_n >= 3 ? &burn : NULL);
  if (st == GS_OK) st = gs_health_judge(&state, (size_t)expect_gpus, &models, &verdict);
  // A GPU that hung its reads is the finding; the rest was not read.
  const double elapsed = gs_time_seconds() - start;
  if (st == GS_OK && format == FORMAT_JSON) {
    cJSON *doc = NULL;
    st = check_document(&verdict, &state, &models, level_n, injects.v, injects.n,
                        (size_t)expect_gpus, elapsed, &doc);
    if (st == GS_OK) st = out_path ? gs_result_write(doc, out_path) : gs_json_print(stdout, doc);
    cJSON_Delete(doc);
  } else if (st == GS_OK) {
    gs_file_out out;
    st = gs_file_out_open(&out, out_path, NULL);
    if (st == GS_OK) {
      print_text(out.f, &verdict, &state, &models, level_n, elapsed);
      st = gs_file_out_commit(&out);
    }
  }
  // The verdict decides the exit code once everything is written.
  if (st == GS_OK) st = gs_health_verdict_status(&verdict);
  gs_health_verdict_free(&verdict);
  gs_check_state_free(&state);
  gs_gpu_models_free(&site);
  gs_gpu_models_free(&shipped);
  return st;
}
