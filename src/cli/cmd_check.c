/* `gpuscale check`: node acceptance for a job's prolog. Level 1 reads the
 * node's passive state (inventory, driver/CUDA/NCCL, ECC, retired pages,
 * row remaps, NVLink, PCIe, clock event reasons) and judges it pass, warn
 * or fail with an action per finding, as text or JSON, within a time budget
 * it reports. Exit 0 pass (or not applicable), 6 warn, 5 fail. See
 * docs/check.md. */
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
#include "report/verdict/check.h"

/* Level 1's default budget: a job prolog's share on an 8-GPU node (issue 30). */
#define CHECK_LEVEL1_BUDGET_S 60.0

static const char *const format_choices[] = {"text", "json", NULL};
enum { FORMAT_TEXT = 0, FORMAT_JSON = 1 };
/* Levels 2 (stress against the model's figures) and 3 (burn-in) are not
 * built yet: the option offers only what runs. */
static const char *const level_choices[] = {"1", NULL};

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
                       double elapsed) {
  if (!v->applicable) {
    fprintf(out, "gpuscale check --level 1: not applicable: %s\n", v->why);
    return;
  }
  fprintf(out, "gpuscale check --level 1: %s (%zu passed, %zu warned, %zu failed) in %.2f s of "
          "a %g s budget\n", gs_check_state_name(v->overall), v->passed, v->warned,
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
  }
  fprintf(out, "\n");
  fprintf(out, "%-14s %-4s %-5s %s\n", "check", "GPU", "state", "detail");
  for (size_t i = 0; i < v->n; i++) {
    const gs_health_finding *f = &v->items[i];
    char gpu[16];
    gpu_label(f, gpu, sizeof gpu);
    fprintf(out, "%-14s %-4s %-5s %s\n", f->check, gpu, gs_check_state_name(f->state), f->detail);
  }
  if (v->warned + v->failed == 0) return;
  fprintf(out, "\nActions\n");
  for (size_t i = 0; i < v->n; i++)
    if (v->items[i].action[0]) fprintf(out, "  %s\n", v->items[i].action);
}

/* The check document: a result document ("command": "check") whose "check"
 * member holds the verdict, the findings, the actions and the passive
 * state (docs/check.md). *doc is the caller's. */
static gs_status check_document(const gs_health_verdict *v, const gs_node_state *s,
                                size_t expect_gpus, double elapsed, cJSON **doc) {
  *doc = NULL;
  cJSON *made = gs_result_new("check");
  if (!made) return gs_error(GS_ERR_NOMEM, "out of memory building the check document");
  gs_json_build build = {0}, *b = &build;
  cJSON *config = gs_json_check(b, cJSON_CreateObject());
  gs_json_put_number(b, config, "level", 1);
  if (expect_gpus)
    gs_json_put_u64(b, config, "expect_gpus", expect_gpus);
  else
    gs_json_put_null(b, config, "expect_gpus");
  gs_status st = gs_json_build_status(b, "the check document");
  if (st == GS_OK) st = gs_result_set_config(made, config);
  else cJSON_Delete(config);
  cJSON *c = st == GS_OK ? gs_json_put_object(b, made, "check") : NULL;
  gs_json_put_number(b, c, "level", 1);
  gs_json_put_string(b, c, "verdict", v->applicable ? gs_check_state_name(v->overall)
                                                    : "not applicable");
  gs_json_put_string_or_null(b, c, "why", v->applicable ? "" : v->why);
  gs_json_put_number(b, c, "budget_seconds", s->budget_s);
  gs_json_put_number(b, c, "elapsed_seconds", elapsed);
  cJSON *t = gs_json_put_object(b, c, "seconds");
  gs_json_put_number(b, t, "cuda", s->cuda_seconds);
  gs_json_put_number(b, t, "nvml", s->nvml_seconds);
  gs_json_put_number(b, t, "gpus", s->gpus_seconds);
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
               "pass (or not applicable: no GPU), 6 warn, 5 fail. See docs/check.md.");
  gs_help_example("gpuscale check --level 1 --expect-gpus 8");
  gs_help_options("Options", table);
}

gs_status gs_cmd_check(int argc, char **argv) {
  int format = FORMAT_TEXT, level = 0;
  uint64_t expect_gpus = 0;
  double budget = CHECK_LEVEL1_BUDGET_S;
  const char *out_path = NULL;
  const gs_option table[] = {
      {.name = "level", .short_name = 'l', .kind = GS_OPT_CHOICE, .target = &level,
       .choices = level_choices, .metavar = "1",
       .help = "1: passive state, within 60 s (levels 2 and 3 are not built yet)"},
      {.name = "expect-gpus", .kind = GS_OPT_COUNT, .target = &expect_gpus, .min = 1,
       .max = 4096, .metavar = "N", .help = "fail unless NVML lists N GPUs (default: any)"},
      {.name = "budget", .kind = GS_OPT_DOUBLE, .target = &budget, .dmin = 0.1, .dmax = 3600,
       .metavar = "SECONDS",
       .help = "give up on a GPU that has not answered after SECONDS and fail (default 60)"},
      {.name = "format", .short_name = 'f', .kind = GS_OPT_CHOICE, .target = &format,
       .choices = format_choices, .metavar = "text|json",
       .help = "output: a table with the actions, or a result document"},
      {.name = "out", .short_name = 'o', .kind = GS_OPT_STRING, .target = &out_path,
       .metavar = "FILE", .help = "write to FILE instead of standard output"},
      {.kind = GS_OPT_END},
  };
  if (gs_cli_wants_help(argc, argv)) {
    print_check_help(table);
    return GS_OK;
  }
  const gs_option *tables[] = {table, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale check", argc, argv, reject_positional, NULL));
  if (out_path) GS_TRY(gs_file_check_output(out_path, "option --out"));

  const double start = gs_time_seconds();
  gs_node_state state;
  gs_health_verdict verdict;
  memset(&verdict, 0, sizeof verdict);
  gs_status st = gs_check_state_collect_within(&state, budget);
  if (st == GS_OK) st = gs_health_judge(&state, (size_t)expect_gpus, &verdict);
  // A GPU that hung its reads is the finding; the rest was not read.
  const double elapsed = gs_time_seconds() - start;
  if (st == GS_OK && format == FORMAT_JSON) {
    cJSON *doc = NULL;
    st = check_document(&verdict, &state, (size_t)expect_gpus, elapsed, &doc);
    if (st == GS_OK) st = out_path ? gs_result_write(doc, out_path) : gs_json_print(stdout, doc);
    cJSON_Delete(doc);
  } else if (st == GS_OK) {
    gs_file_out out;
    st = gs_file_out_open(&out, out_path, NULL);
    if (st == GS_OK) {
      print_text(out.f, &verdict, &state, elapsed);
      st = gs_file_out_commit(&out);
    }
  }
  // The verdict decides the exit code once everything is written.
  if (st == GS_OK) st = gs_health_verdict_status(&verdict);
  gs_health_verdict_free(&verdict);
  gs_check_state_free(&state);
  return st;
}
