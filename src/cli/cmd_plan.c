/* `gpuscale plan`: heterogeneous task placement. Several workloads, each on
 * its own GPUs (or CPU ranks), measured at the same time: every task's
 * ranks start their steps together behind one gate, and the result holds
 * one measurement per task plus each device's throughput and the system
 * total. Design: docs/workloads/placement.md. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "measure/common.h"
#include "cli/summary.h"
#include "core/check.h"
#include "platform/device.h"

#define PLAN_MAX_TASKS 16
#define PLAN_MAX_WORDS 64

typedef struct {
  const char *text;              /* the --task value as given */
  char words_buf[1024];
  char *words[PLAN_MAX_WORDS];   /* workload options, split at spaces */
  int n_words;
  const gs_workload *workload;
  void *opts;
  gs_run_config config;
  gs_measurement m;
  gs_status status;
} plan_task;

static gs_status reject_positional(void *ctx, const char *arg) {
  (void)ctx;
  return gs_error(GS_ERR_USAGE, "gpuscale plan: unexpected argument '%s' (tasks go in --task)",
                  arg);
}

static void print_plan_help(gs_common_options *common) {
  printf("usage: gpuscale plan --task 'DEVICES:WORKLOAD [options]' --task ... [options]\n\n"
         "Runs different workloads on different GPUs at the same time (task placement) and\n"
         "reports each GPU's throughput and the system total. DEVICES lists CUDA ordinals\n"
         "(0, 0,1 or 2-3; on the cpu backend the list only counts CPU ranks); no device may\n"
         "serve two tasks. Example:\n\n"
         "  gpuscale plan --task '0:voxelize --points 2M' --task '1:fuse --batch 64'\n\n"
         "Workloads:\n");
  size_t n = 0;
  const gs_workload *const *all = gs_workload_list(&n);
  for (size_t i = 0; i < n; i++) printf("  %-12s %s\n", all[i]->key, all[i]->summary);
  printf("\nOptions:\n");
  gs_options_help(stdout, common->table);
  printf("\n'gpuscale run WORKLOAD --help' lists a workload's own options.\n");
}

/* Splits "DEVICES:WORKLOAD opt opt ..." and parses the devices and the
 * workload's options. `taken` marks devices already given to a task. */
static gs_status parse_task(plan_task *t, const gs_run_config *base, int device_count,
                            unsigned char *taken) {
  if (strlen(t->text) >= sizeof t->words_buf)
    return gs_error(GS_ERR_USAGE, "option --task: '%.40s...' is too long", t->text);
  snprintf(t->words_buf, sizeof t->words_buf, "%s", t->text);
  char *colon = strchr(t->words_buf, ':');
  if (colon == NULL)
    return gs_error(GS_ERR_USAGE, "option --task '%s': expected DEVICES:WORKLOAD [options]",
                    t->text);
  *colon = '\0';
  t->config = *base;
  gs_status st = gs_common_parse_gpus(t->words_buf, device_count, 0, &t->config);
  if (st != GS_OK) {
    char why[GS_TEXT_ERROR];
    snprintf(why, sizeof why, "%s", gs_last_error());
    return gs_error(st, "option --task '%s': %s", t->text, why);
  }
  for (int k = 0; k < t->config.world_size; k++) {
    const int d = t->config.devices[k];
    if (taken[d])
      return gs_error(GS_ERR_USAGE, "option --task '%s': device %d already serves another task",
                      t->text, d);
    taken[d] = 1;
    if (base->backend == GS_BACKEND_CPU) t->config.devices[k] = -1;
  }
  char *save = NULL;
  for (char *w = strtok_r(colon + 1, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
    if (t->n_words == PLAN_MAX_WORDS)
      return gs_error(GS_ERR_USAGE, "option --task '%s': more than %d words", t->text,
                      PLAN_MAX_WORDS);
    t->words[t->n_words++] = w;
  }
  if (t->n_words == 0)
    return gs_error(GS_ERR_USAGE, "option --task '%s': no workload after the devices", t->text);
  t->workload = gs_workload_find(t->words[0]);
  if (t->workload == NULL)
    return gs_error(GS_ERR_USAGE, "option --task '%s': unknown workload '%s'", t->text,
                    t->words[0]);
  t->opts = t->workload->options_new();
  if (t->opts == NULL) return gs_error(GS_ERR_NOMEM, "cannot allocate the options of %s", t->words[0]);
  char name[GS_TEXT_LONG];
  snprintf(name, sizeof name, "gpuscale plan task '%s'", t->text);
  const gs_option *tables[] = {t->workload->options_table(t->opts), NULL};
  GS_TRY(gs_options_parse(tables, name, t->n_words - 1, t->words + 1, reject_positional, NULL));
  return t->workload->options_check(t->opts);
}

static void *task_main(void *arg) {
  plan_task *t = arg;
  t->status = gs_runner_measure(t->workload, t->opts, &t->config, &t->m);
  return NULL;
}

/* Items per second of rank k of m: its share over its median step time. */
static double rank_rate(const gs_measurement *m, size_t k) {
  size_t total = 0;
  for (size_t r = 0; r < m->n_runs; r++) total += m->runs[r].ranks[k].n_samples;
  double *all = total ? malloc(total * sizeof *all) : NULL;
  if (all == NULL) return 0.0;
  size_t at = 0;
  uint64_t items = 0;
  for (size_t r = 0; r < m->n_runs; r++) {
    const gs_rank_record *rec = &m->runs[r].ranks[k];
    const double *src = rec->device_seconds ? rec->device_seconds : rec->wall_seconds;
    memcpy(all + at, src, rec->n_samples * sizeof *all);
    at += rec->n_samples;
    items = rec->items_per_step;
  }
  gs_stats st;
  const double rate = gs_stats_compute(all, total, &st) == GS_OK && st.median > 0.0
                          ? (double)items / st.median
                          : 0.0;
  free(all);
  return rate;
}

/* The document's "plan" member: per task and device throughput, and the
 * total per item unit. */
static cJSON *plan_json(const plan_task *tasks, size_t n) {
  cJSON *plan = cJSON_CreateObject();
  cJSON *list = cJSON_AddArrayToObject(plan, "tasks");
  cJSON *totals = cJSON_AddArrayToObject(plan, "totals");
  for (size_t i = 0; i < n; i++) {
    const gs_measurement *m = &tasks[i].m;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(list, o);
    cJSON_AddNumberToObject(o, "task", (double)i);
    cJSON_AddStringToObject(o, "spec", tasks[i].text);
    cJSON_AddStringToObject(o, "workload", m->workload);
    cJSON_AddStringToObject(o, "status", gs_status_name(m->status));
    cJSON_AddStringToObject(o, "item_unit", m->cost.item_unit ? m->cost.item_unit : "items");
    gs_json_add_number(o, "throughput_items_per_second", m->aggregate.throughput);
    cJSON *per = cJSON_AddArrayToObject(o, "devices");
    for (size_t k = 0; m->n_runs > 0 && k < m->runs[0].n_ranks; k++) {
      cJSON *d = cJSON_CreateObject();
      cJSON_AddItemToArray(per, d);
      cJSON_AddNumberToObject(d, "rank", (double)k);
      if (m->devices[k] >= 0)
        cJSON_AddNumberToObject(d, "device", m->devices[k]);
      else
        cJSON_AddNullToObject(d, "device");
      gs_json_add_number(d, "items_per_second", rank_rate(m, k));
    }
    const char *unit = m->cost.item_unit ? m->cost.item_unit : "items";
    cJSON *total = NULL;
    for (cJSON *x = totals->child; x && !total; x = x->next)
      if (strcmp(cJSON_GetObjectItemCaseSensitive(x, "item_unit")->valuestring, unit) == 0) total = x;
    if (!total) {
      total = cJSON_CreateObject();
      cJSON_AddItemToArray(totals, total);
      cJSON_AddStringToObject(total, "item_unit", unit);
      cJSON_AddNumberToObject(total, "throughput_items_per_second", 0.0);
    }
    cJSON *sum = cJSON_GetObjectItemCaseSensitive(total, "throughput_items_per_second");
    cJSON_SetNumberValue(sum, sum->valuedouble + m->aggregate.throughput);
  }
  return plan;
}

static void print_plan(FILE *out, const plan_task *tasks, size_t n, const cJSON *plan) {
  fprintf(out, "\nplan: %zu task%s at the same time, %s backend\n\n", n, n == 1 ? "" : "s",
          tasks[0].config.backend == GS_BACKEND_CUDA ? "cuda" : "cpu");
  fprintf(out, "  %4s  %-10s  %-10s  %11s  %18s  %-8s %s\n", "task", "devices", "workload",
          "median step", "throughput", "verify", "status");
  for (size_t i = 0; i < n; i++) {
    const gs_measurement *m = &tasks[i].m;
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
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(plan, "tasks");
  int task = 0;
  for (const cJSON *t = list->child; t; t = t->next, task++) {
    const char *workload = cJSON_GetObjectItemCaseSensitive(t, "workload")->valuestring;
    const char *unit = cJSON_GetObjectItemCaseSensitive(t, "item_unit")->valuestring;
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(t, "devices");
    for (const cJSON *d = devs->child; d; d = d->next) {
      const cJSON *dev = cJSON_GetObjectItemCaseSensitive(d, "device");
      char rate[32], name[32];
      gs_format_rate(cJSON_GetObjectItemCaseSensitive(d, "items_per_second")->valuedouble, rate,
                     sizeof rate);
      if (cJSON_IsNumber(dev))
        snprintf(name, sizeof name, "GPU %d", dev->valueint);
      else
        snprintf(name, sizeof name, "task %d rank %d", task,
                 cJSON_GetObjectItemCaseSensitive(d, "rank")->valueint);
      fprintf(out, "    %-14s %-10s %s %s/s\n", name, workload, rate, unit);
    }
  }
  fprintf(out, "  system total:");
  const cJSON *totals = cJSON_GetObjectItemCaseSensitive(plan, "totals");
  for (const cJSON *x = totals->child; x; x = x->next) {
    char rate[32];
    gs_format_rate(cJSON_GetObjectItemCaseSensitive(x, "throughput_items_per_second")->valuedouble,
                   rate, sizeof rate);
    fprintf(out, "%s %s %s/s", x == totals->child ? "" : " +", rate,
            cJSON_GetObjectItemCaseSensitive(x, "item_unit")->valuestring);
  }
  fprintf(out, "\n");
  for (size_t i = 0; i < n; i++)
    if (tasks[i].m.status != GS_OK)
      fprintf(out, "  error: task %zu (%s): %s\n", i, tasks[i].text, tasks[i].m.error);
}

static gs_status write_plan(const gs_common_options *common, const gs_run_config *base,
                            plan_task *tasks, size_t n, const gs_environment *env, int argc,
                            char **argv, const cJSON *plan, const char *path) {
  cJSON *doc = gs_result_new("plan", argc, argv);
  if (!doc) return gs_error(GS_ERR_NOMEM, "cannot create the result document");
  gs_run_config shown = *base;
  shown.world_size = 0;
  cJSON *config = gs_common_config_json(common, &shown, NULL, NULL);
  cJSON *list = config ? cJSON_AddArrayToObject(config, "tasks") : NULL;
  for (size_t i = 0; list && i < n; i++) {
    cJSON *t = gs_common_config_json(common, &tasks[i].config, tasks[i].workload, tasks[i].opts);
    if (t) cJSON_AddStringToObject(t, "spec", tasks[i].text);
    cJSON_AddItemToArray(list, t);
  }
  gs_status status = gs_result_set_config(doc, config);
  if (status == GS_OK) status = gs_result_set_environment(doc, env);
  gs_measurement *ms = calloc(n, sizeof *ms);
  if (!ms && status == GS_OK) status = gs_error(GS_ERR_NOMEM, "cannot list the measurements");
  for (size_t i = 0; status == GS_OK && i < n; i++) {
    if (!tasks[i].m.extra) tasks[i].m.extra = cJSON_CreateObject();
    cJSON_AddNumberToObject(tasks[i].m.extra, "task", (double)i);
    status = gs_result_add_measurement(doc, &tasks[i].m);
    ms[i] = tasks[i].m;
  }
  if (status == GS_OK && !cJSON_AddItemToObject(doc, "plan", cJSON_Duplicate(plan, 1)))
    status = gs_error(GS_ERR_NOMEM, "cannot add the plan to the result document");
  if (status == GS_OK) status = gs_common_write_result(doc, ms, n, path);
  free(ms);
  cJSON_Delete(doc);
  return status;
}

gs_status gs_cmd_plan(int argc, char **argv) {
  gs_common_options common;
  gs_common_init(&common, 0);
  gs_string_list task_texts = {0};
  // --task joins the common options in the table (before its end marker).
  size_t end = 0;
  while (common.table[end].kind != GS_OPT_END) end++;
  common.table[end] = (gs_option){.name = "task", .kind = GS_OPT_STRING_LIST,
                                  .target = &task_texts, .metavar = "'DEVICES:WORKLOAD [opts]'",
                                  .help = "one task: its devices, workload and options (repeat)"};
  common.table[end + 1] = (gs_option){.kind = GS_OPT_END};
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      print_plan_help(&common);
      return GS_OK;
    }
  }
  const gs_option *tables[] = {common.table, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale plan", argc, argv, reject_positional, NULL));
  gs_set_quiet(common.quiet);
  if (task_texts.n == 0)
    return gs_error(GS_ERR_USAGE, "gpuscale plan: no --task given (see 'gpuscale plan --help')");
  if (task_texts.n > PLAN_MAX_TASKS)
    return gs_error(GS_ERR_USAGE, "gpuscale plan: more than %d tasks", PLAN_MAX_TASKS);
  if (common.given_gpus || common.given_ranks)
    return gs_error(GS_ERR_USAGE,
                    "gpuscale plan: each --task names its devices; --gpus and --ranks do not apply");
  gs_run_config base;
  GS_TRY(gs_common_resolve(&common, 0, &base));
  base.show_progress = 0;
  char why[GS_TEXT_LONG] = "";
  const int device_count =
      base.backend == GS_BACKEND_CUDA ? gs_device_count(why, sizeof why) : GS_MAX_RANKS;

  plan_task *tasks = calloc(task_texts.n, sizeof *tasks);
  if (!tasks) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu tasks", task_texts.n);
  unsigned char taken[GS_MAX_RANKS] = {0};
  gs_status status = GS_OK;
  size_t n = task_texts.n;
  for (size_t i = 0; i < n && status == GS_OK; i++) {
    tasks[i].text = task_texts.v[i];
    status = parse_task(&tasks[i], &base, device_count, taken);
  }
  gs_barrier gate;
  gs_environment env = {0};
  if (status == GS_OK) status = gs_common_environment(&env);
  if (status == GS_OK && gs_barrier_init(&gate, (int)n) != 0)
    status = gs_error(GS_ERR_INTERNAL, "cannot create the plan's start gate");
  if (status == GS_OK) {
    pthread_t threads[PLAN_MAX_TASKS];
    size_t started = 0;
    for (; started < n; started++) {
      tasks[started].config.start_gate = &gate;
      if (pthread_create(&threads[started], NULL, task_main, &tasks[started]) != 0) break;
    }
    if (started < n) {
      gs_barrier_abort(&gate);
      status = gs_error(GS_ERR_INTERNAL, "cannot start the thread of task %zu", started);
    }
    for (size_t i = 0; i < started; i++) pthread_join(threads[i], NULL);
    gs_barrier_destroy(&gate);
    if (started == n) {
      cJSON *plan = plan_json(tasks, n);
      char path[GS_TEXT_LONG];
      snprintf(path, sizeof path, "%s", common.out ? common.out : "results/plan.json");
      status = plan ? write_plan(&common, &base, tasks, n, &env, argc, argv, plan, path)
                    : gs_error(GS_ERR_NOMEM, "cannot build the plan summary");
      if (plan) print_plan(stdout, tasks, n, plan);
      cJSON_Delete(plan);
      for (size_t i = 0; i < n && status == GS_OK; i++)
        if (tasks[i].status != GS_OK) status = tasks[i].status;
    }
  }
  for (size_t i = 0; i < n; i++) {
    gs_measurement_free(&tasks[i].m);
    if (tasks[i].workload) tasks[i].workload->options_free(tasks[i].opts);
  }
  gs_environment_free(&env);
  free(tasks);
  return status;
}
