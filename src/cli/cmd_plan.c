/* `gpuscale plan`: heterogeneous task placement. Parses the options, runs
 * the tasks at the same time (measure/plan.h) and prints each task's and
 * each device's throughput and the system total. Design:
 * docs/workloads/placement.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/help.h"
#include "cli/commands.h"
#include "core/check.h"
#include "core/format.h"
#include "measure/plan.h"

static gs_status reject_positional(void *ctx, const char *arg) {
  (void)ctx;
  return gs_error(GS_ERR_USAGE, "gpuscale plan: unexpected argument '%s' (tasks go in --task)",
                  arg);
}

static void print_plan_help(const gs_common_options *common, const gs_option *tasks) {
  gs_help_usage("gpuscale plan --task 'DEVICES:WORKLOAD [options]' --task ... [options]");
  gs_help_para("Runs different workloads on different GPUs at the same time (task placement) and\n"
         "reports each GPU's throughput and the system total. DEVICES lists CUDA ordinals\n"
         "(0, 0,1 or 2-3; on the cpu backend the list only counts CPU ranks); no device may\n"
         "serve two tasks. The result document is rewritten as each task ends; Ctrl-C,\n"
         "SIGTERM or a stalled rank keep what every task completed (exit 4). Example:");
  gs_help_example("gpuscale plan --task '0:voxelize --points 2M' --task '1:fuse --batch 64'");
  gs_help_list("Workloads");
  size_t n = 0;
  const gs_workload *const *all = gs_workload_list(&n);
  for (size_t i = 0; i < n; i++) gs_help_item(all[i]->key, all[i]->summary);
  gs_help_options("Tasks", tasks);
  gs_common_describe(common, gs_help_options);
  gs_help_para("'gpuscale run WORKLOAD --help' lists a workload's own options.");
}

static void print_plan(FILE *out, const gs_plan *plan) {
  size_t finished = 0;
  for (size_t i = 0; i < plan->n_tasks; i++) finished += plan->tasks[i].done != 0;
  if (finished == 0) return;
  fprintf(out, "\nplan: %zu task%s at the same time, %s backend\n\n", plan->n_tasks,
          plan->n_tasks == 1 ? "" : "s", plan->backend == GS_BACKEND_CUDA ? "cuda" : "cpu");
  fprintf(out, "  %4s  %-10s  %-10s  %11s  %18s  %-8s %s\n", "task", "devices", "workload",
          "median step", "throughput", "verify", "status");
  for (size_t i = 0; i < plan->n_tasks; i++) {
    const gs_measurement *m = &plan->tasks[i].m;
    if (!plan->tasks[i].done) continue;
    char devices[GS_TEXT_SHORT] = "", median[32], rate[32], rate_text[64];
    size_t at = 0;
    if (m->devices[0] < 0) snprintf(devices, sizeof devices, "%d CPU", m->world_size);
    for (int k = 0; m->devices[0] >= 0 && k < m->world_size && at < sizeof devices; k++)
      at += (size_t)snprintf(devices + at, sizeof devices - at, "%s%d", k ? "," : "GPU ",
                             m->devices[k]);
    gs_format_seconds(m->aggregate.step.n ? m->aggregate.step.median : -1.0, median, sizeof median);
    gs_format_rate(m->aggregate.throughput, rate, sizeof rate);
    snprintf(rate_text, sizeof rate_text, "%s %s/s", rate, m->cost.item_unit ? m->cost.item_unit : "");
    fprintf(out, "  %4zu  %-10s  %-10s  %11s  %18s  %-8s %s\n", i, devices, m->workload, median,
            rate_text,
            m->verification.status == GS_VERIFY_PASSED ? "passed"
            : m->verification.status == GS_VERIFY_FAILED ? "FAILED" : "skipped",
            m->status == GS_OK ? "ok" : gs_status_name(m->status));
  }
  fprintf(out, "\n  per device (its share of the items over its median step):\n");
  for (size_t i = 0; i < plan->n_tasks; i++) {
    const gs_plan_task *t = &plan->tasks[i];
    const gs_measurement *m = &t->m;
    if (!t->done) continue;
    for (size_t k = 0; m->n_runs > 0 && k < m->runs[0].n_ranks && k < GS_MAX_RANKS; k++) {
      char rate[32], name[32];
      gs_format_rate(t->rank_rates[k], rate, sizeof rate);
      if (m->devices[k] >= 0)
        snprintf(name, sizeof name, "GPU %d", m->devices[k]);
      else
        snprintf(name, sizeof name, "task %zu rank %zu", i, k);
      fprintf(out, "    %-14s %-10s %s %s/s\n", name, m->workload, rate,
              m->cost.item_unit ? m->cost.item_unit : "items");
    }
  }
  fprintf(out, "  system total:");
  for (size_t u = 0; u < plan->n_totals; u++) {
    char rate[32];
    gs_format_rate(plan->totals[u].throughput, rate, sizeof rate);
    fprintf(out, "%s %s %s/s", u == 0 ? "" : " +", rate, plan->totals[u].item_unit);
  }
  fprintf(out, "\n");
  for (size_t i = 0; i < plan->n_tasks; i++)
    if (plan->tasks[i].done && plan->tasks[i].m.status != GS_OK)
      fprintf(out, "  error: task %zu (%s): %s\n", i, plan->tasks[i].text, plan->tasks[i].m.error);
}

/* Options a plan does not take, and why: listed by no help page, refused
 * with the reason. */
static const gs_option refused[] = {
    {.name = "gpus", .kind = GS_OPT_REFUSED,
     .help = "each --task names its devices (DEVICES:WORKLOAD)"},
    {.name = "ngpus", .short_name = 'g', .kind = GS_OPT_REFUSED,
     .help = "each --task names its devices (DEVICES:WORKLOAD)"},
    {.name = "ranks", .kind = GS_OPT_REFUSED,
     .help = "each --task names its devices (DEVICES:WORKLOAD), CPU ranks too"},
    {.name = "telemetry-interval", .kind = GS_OPT_REFUSED, .help = "plan records no GPU telemetry"},
    {.name = "telemetry-series", .kind = GS_OPT_REFUSED, .help = "plan records no GPU telemetry"},
    {.kind = GS_OPT_END}};

gs_status gs_cmd_plan(int argc, char **argv) {
  gs_common_options common;
  gs_common_init(&common, GS_GROUP_OUTPUT | GS_GROUP_BACKEND | GS_GROUP_TIMING | GS_GROUP_SEED |
                              GS_GROUP_TIMEOUT | GS_GROUP_ARRIVAL | GS_GROUP_NCCL | GS_GROUP_TRACE);
  static const gs_cli_wording wording[] = {{"out", "result file (default results/plan.json)"},
                                           {NULL, NULL}};
  gs_cli_reword_options(common.table, wording);
  gs_string_list task_texts = {0};
  const gs_option tasks[] = {
      {.name = "task", .kind = GS_OPT_STRING_LIST, .target = &task_texts,
       .metavar = "'DEVICES:WORKLOAD [opts]'",
       .help = "one task: its devices, workload and options (repeat)"},
      {.kind = GS_OPT_END}};
  if (gs_cli_wants_help(argc, argv)) {
    print_plan_help(&common, tasks);
    return GS_OK;
  }
  const gs_option *tables[] = {tasks, common.table, refused, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale plan", argc, argv, reject_positional, NULL));
  gs_set_quiet(common.quiet);
  gs_plan *plan = calloc(1, sizeof *plan);
  if (!plan) return gs_error(GS_ERR_NOMEM, "cannot allocate the plan");
  const gs_plan_request request = {.common = &common,
                                   .tasks = &task_texts};
  gs_status status = gs_measure_plan(&request, plan);
  print_plan(stdout, plan);
  gs_plan_free(plan);
  free(plan);
  return status;
}
