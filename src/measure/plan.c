/* Task placement (see plan.h): parsing the tasks, running them at the same
 * time behind one gate, each device's throughput, and the document. */
#include "measure/plan.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_driver.h"
#include "core/check.h"
#include "core/file.h"
#include "core/json.h"
#include "measure/job.h"
#include "platform/device.h"

static gs_status reject_positional(void *ctx, const char *arg) {
  (void)ctx;
  return gs_error(GS_ERR_USAGE, "gpuscale plan: unexpected argument '%s' (tasks go in --task)",
                  arg);
}

/* Takes a task's own `--inject KIND:rank=R,...` (or `--inject=...`) out of
 * its words into its configuration: R is a rank of that task, and the kinds
 * are those of threads mode (a hang would hang the plan's process). */
static gs_status take_faults(gs_plan_task *t) {
  int kept = 1;
  for (int i = 1; i < t->n_words; i++) {
    const char *w = t->words[i], *value = NULL;
    if (strcmp(w, "--inject") == 0) {
      if (i + 1 == t->n_words)
        return gs_error(GS_ERR_USAGE, "option --task '%s': --inject needs a value", t->text);
      value = t->words[++i];
    } else if (strncmp(w, "--inject=", 9) == 0) {
      value = w + 9;
    }
    if (value == NULL) {
      t->words[kept++] = t->words[i];
      continue;
    }
    gs_status st = gs_fault_parse(value, &t->config.faults);
    if (st != GS_OK) {
      char why[GS_TEXT_ERROR];
      snprintf(why, sizeof why, "%s", gs_last_error());
      return gs_error(st, "option --task '%s': %s", t->text, why);
    }
  }
  t->n_words = kept;
  gs_status st = gs_fault_check_launch(&t->config.faults, 0);
  if (st == GS_OK) st = gs_fault_check_ranks(&t->config.faults, t->config.world_size);
  if (st != GS_OK) {
    char why[GS_TEXT_ERROR];
    snprintf(why, sizeof why, "%s", gs_last_error());
    return gs_error(st, "option --task '%s': %s", t->text, why);
  }
  return GS_OK;
}

/* Splits "DEVICES:WORKLOAD opt opt ..." and parses the devices and the
 * workload's options. `taken` marks devices already given to a task. */
static gs_status parse_task(gs_plan_task *t, const gs_run_config *base, int device_count,
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
  gs_status st = gs_common_parse_gpus(t->words_buf, "DEVICES", device_count, &t->config);
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
    if (t->n_words == GS_PLAN_MAX_WORDS)
      return gs_error(GS_ERR_USAGE, "option --task '%s': more than %d words", t->text,
                      GS_PLAN_MAX_WORDS);
    t->words[t->n_words++] = w;
  }
  if (t->n_words == 0)
    return gs_error(GS_ERR_USAGE, "option --task '%s': no workload after the devices", t->text);
  GS_TRY(take_faults(t));
  t->workload = gs_workload_find(t->words[0]);
  if (t->workload == NULL)
    return gs_error(GS_ERR_USAGE, "option --task '%s': unknown workload '%s'", t->text,
                    t->words[0]);
  // A plan's tasks start together behind one gate, which the driver must meet.
  if (!gs_runner_driver_of(t->workload)->meets_start_gate)
    return gs_error(GS_ERR_USAGE, "option --task '%s': %s measures itself (its own timing "
                    "loop) and cannot share a plan's start gate; run it with 'gpuscale run %s'",
                    t->text, t->workload->key, t->workload->key);
  t->opts = t->workload->options_new();
  if (t->opts == NULL) return gs_error(GS_ERR_NOMEM, "cannot allocate the options of %s", t->words[0]);
  char name[GS_TEXT_LONG];
  snprintf(name, sizeof name, "gpuscale plan task '%s'", t->text);
  const gs_option *tables[] = {t->workload->options_table(t->opts), NULL};
  GS_TRY(gs_options_parse(tables, name, t->n_words - 1, t->words + 1, reject_positional, NULL));
  return t->workload->options_check(t->opts);
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
    // A run interrupted before a rank's first sample has no sample array.
    if (rec->n_samples == 0 || src == NULL) continue;
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

static const char *item_unit(const gs_measurement *m) {
  return m->cost.item_unit ? m->cost.item_unit : "items";
}

/* Each finished task's device rates and the totals per item unit. */
static void summarize(gs_plan *plan) {
  plan->n_totals = 0;
  for (size_t i = 0; i < plan->n_tasks; i++) {
    gs_plan_task *t = &plan->tasks[i];
    if (!t->done) continue;
    for (size_t k = 0; t->m.n_runs > 0 && k < t->m.runs[0].n_ranks && k < GS_MAX_RANKS; k++)
      t->rank_rates[k] = rank_rate(&t->m, k);
    gs_plan_total *total = NULL;
    for (size_t u = 0; u < plan->n_totals && !total; u++)
      if (strcmp(plan->totals[u].item_unit, item_unit(&t->m)) == 0) total = &plan->totals[u];
    if (!total) {
      total = &plan->totals[plan->n_totals++];
      *total = (gs_plan_total){.item_unit = item_unit(&t->m), .throughput = 0.0};
    }
    total->throughput += t->m.aggregate.throughput;
  }
}

/* The document's "plan" member: per task and device throughput, and the
 * total per item unit (finished tasks only). */
static cJSON *plan_json(const gs_plan *plan) {
  gs_json_build build = {0}, *b = &build;
  cJSON *out = gs_json_check(b, cJSON_CreateObject());
  cJSON *list = gs_json_put_array(b, out, "tasks");
  cJSON *totals = gs_json_put_array(b, out, "totals");
  if (b->failed) {
    cJSON_Delete(out);
    return NULL;
  }
  for (size_t i = 0; i < plan->n_tasks; i++) {
    const gs_plan_task *t = &plan->tasks[i];
    if (!t->done) continue;
    const gs_measurement *m = &t->m;
    cJSON *o = cJSON_CreateObject();
    gs_json_append(b, list, o);
    if (b->failed) break;
    gs_json_put_number(b, o, "task", (double)i);
    gs_json_put_string(b, o, "spec", t->text);
    gs_json_put_string(b, o, "workload", m->workload);
    gs_json_put_string(b, o, "status", gs_status_name(m->status));
    gs_json_put_string(b, o, "item_unit", item_unit(m));
    gs_json_put_number(b, o, "throughput_items_per_second", m->aggregate.throughput);
    cJSON *per = gs_json_put_array(b, o, "devices");
    for (size_t k = 0; m->n_runs > 0 && k < m->runs[0].n_ranks && k < GS_MAX_RANKS; k++) {
      cJSON *d = cJSON_CreateObject();
      gs_json_append(b, per, d);
      if (b->failed) break;
      gs_json_put_number(b, d, "rank", (double)k);
      if (m->devices[k] >= 0)
        gs_json_put_number(b, d, "device", m->devices[k]);
      else
        gs_json_put_null(b, d, "device");
      gs_json_put_number(b, d, "items_per_second", t->rank_rates[k]);
    }
  }
  for (size_t u = 0; u < plan->n_totals; u++) {
    cJSON *total = cJSON_CreateObject();
    gs_json_append(b, totals, total);
    if (b->failed) break;
    gs_json_put_string(b, total, "item_unit", plan->totals[u].item_unit);
    gs_json_put_number(b, total, "throughput_items_per_second", plan->totals[u].throughput);
  }
  if (b->failed) {
    cJSON_Delete(out);
    return NULL;
  }
  return out;
}

/* Writes the document with the finished tasks; "partial" while some task
 * has not finished (a crash now would leave only these). */
static gs_status write_plan(const gs_plan_request *rq, const gs_run_config *base,
                            const gs_plan *plan, const gs_environment *env, const char *path) {
  cJSON *doc = gs_result_new("plan");
  if (!doc) return gs_error(GS_ERR_NOMEM, "cannot create the result document");
  gs_run_config shown = *base;
  shown.world_size = 0;
  cJSON *config = gs_common_config_json(rq->common, &shown, NULL, NULL);
  gs_json_build b = {0};
  cJSON *list = config ? gs_json_put_array(&b, config, "tasks") : NULL;
  for (size_t i = 0; list && i < plan->n_tasks; i++) {
    const gs_plan_task *t = &plan->tasks[i];
    cJSON *c = gs_common_config_json(rq->common, &t->config, t->workload, t->opts);
    gs_json_put_string(&b, c, "spec", t->text);
    gs_json_append(&b, list, c);
  }
  gs_status status = GS_OK;
  if (b.failed) {
    cJSON_Delete(config);
    status = gs_error(GS_ERR_NOMEM, "cannot build the config block");
  } else {
    status = gs_result_set_config(doc, config);
  }
  if (status == GS_OK) status = gs_result_set_environment(doc, env);
  gs_measurement ms[GS_PLAN_MAX_TASKS];
  size_t n = 0;
  for (size_t i = 0; status == GS_OK && i < plan->n_tasks; i++) {
    if (!plan->tasks[i].done) continue;
    status = gs_result_add_measurement(doc, &plan->tasks[i].m);
    ms[n++] = plan->tasks[i].m;
  }
  cJSON *summary = status == GS_OK ? plan_json(plan) : NULL;
  if (status == GS_OK && (!summary || !cJSON_AddItemToObject(doc, "plan", summary))) {
    cJSON_Delete(summary);
    status = gs_error(GS_ERR_NOMEM, "cannot add the plan to the result document");
  }
  if (status == GS_OK)
    status = gs_result_set_status(doc, gs_common_result_status(ms, n, n == plan->n_tasks));
  // The trace only once every task has ended: other tasks' ranks still
  // record while an early one is written.
  if (status == GS_OK && n == plan->n_tasks)
    status = gs_common_add_trace(doc, base->trace, path);
  if (status == GS_OK) status = gs_result_write(doc, path);
  cJSON_Delete(doc);
  return status;
}

/* The tasks' threads and how the main thread hears that one finished. */
typedef struct {
  gs_plan *plan;
  pthread_mutex_t lock;
  pthread_cond_t finished;
} plan_run;

typedef struct {
  plan_run *run;
  gs_plan_task *task;
  const gs_environment *env;
} task_thread;

/* One task's measurement through its workload's driver (a task is a sweep
 * of one measurement). A driver that cannot open still meets the gate, so
 * that the other tasks start. */
static void *task_main(void *arg) {
  task_thread *tt = arg;
  gs_plan_task *t = tt->task;
  const gs_workload_driver *driver = gs_runner_driver_of(t->workload);
  void *ctx = NULL;
  gs_status status = driver->open(t->workload, t->opts, tt->env, 1, &ctx);
  if (status == GS_OK) {
    status = driver->measure(ctx, &t->config, 0, &t->m);
  } else {
    t->m.status = status;
    snprintf(t->m.error, sizeof t->m.error, "%s", gs_last_error());
    (void)gs_barrier_wait(t->config.start_gate);
  }
  driver->close(ctx);
  pthread_mutex_lock(&tt->run->lock);
  t->status = status;
  t->done = 1;
  pthread_cond_signal(&tt->run->finished);
  pthread_mutex_unlock(&tt->run->lock);
  return NULL;
}

/* Starts every task behind the gate and writes the document each time one
 * finishes. */
static gs_status run_tasks(const gs_plan_request *rq, const gs_run_config *base, gs_plan *plan,
                           const gs_environment *env, const char *path) {
  const size_t n = plan->n_tasks;
  gs_barrier gate;
  int rc = gs_barrier_init(&gate, (int)n);
  if (rc != 0) return gs_error_system(rc, "cannot create the plan's start gate");
  plan_run run = {.plan = plan};
  pthread_mutex_init(&run.lock, NULL);
  pthread_cond_init(&run.finished, NULL);
  pthread_t threads[GS_PLAN_MAX_TASKS];
  task_thread tt[GS_PLAN_MAX_TASKS];
  size_t started = 0;
  gs_status status = GS_OK;
  for (size_t i = 0; i < n && status == GS_OK; i++) {
    // Task i is measurement i of the document once every task is done.
    gs_plan_task *t = &plan->tasks[i];
    t->config.trace_measurement = (int)i;
    status = gs_trace_measurement_start(base->trace, (int)i, t->text, base->backend,
                                        gs_runner_driver_of(t->workload)->trace_host_only);
  }
  for (; started < n && status == GS_OK; started++) {
    plan->tasks[started].config.start_gate = &gate;
    tt[started] = (task_thread){.run = &run, .task = &plan->tasks[started], .env = env};
    if ((rc = pthread_create(&threads[started], NULL, task_main, &tt[started])) != 0) break;
  }
  if (status == GS_OK && started < n) {
    gs_barrier_abort(&gate);
    status = gs_error_system(rc, "cannot start the thread of task %zu", started);
  }
  // Written as each task ends: the main thread only waits meanwhile.
  for (size_t written = 0; status == GS_OK && written < n;) {
    pthread_mutex_lock(&run.lock);
    size_t done = 0;
    for (;;) {
      done = 0;
      for (size_t i = 0; i < n; i++) done += plan->tasks[i].done != 0;
      if (done > written) break;
      pthread_cond_wait(&run.finished, &run.lock);
    }
    pthread_mutex_unlock(&run.lock);
    gs_json_build b = {0};
    for (size_t i = 0; i < n; i++) {
      gs_plan_task *t = &plan->tasks[i];
      if (!t->done || gs_json_member(t->m.extra, "task")) continue;
      if (!t->m.extra) t->m.extra = gs_json_check(&b, cJSON_CreateObject());
      gs_json_put_number(&b, t->m.extra, "task", (double)i);
    }
    status = gs_json_build_status(&b, "the tasks' numbers");
    written = done;
    // A finished task's records are no longer written to by its thread.
    pthread_mutex_lock(&run.lock);
    summarize(plan);
    pthread_mutex_unlock(&run.lock);
    if (status == GS_OK) status = write_plan(rq, base, plan, env, path);
  }
  for (size_t i = 0; i < started; i++) pthread_join(threads[i], NULL);
  if (base->trace) {
    // CUPTI's records go to the ranks once every task has ended.
    gs_trace_measurement_stop(base->trace);
    if (status == GS_OK) status = write_plan(rq, base, plan, env, path);
  }
  gs_barrier_destroy(&gate);
  pthread_cond_destroy(&run.finished);
  pthread_mutex_destroy(&run.lock);
  return status;
}

gs_status gs_measure_plan(const gs_plan_request *rq, gs_plan *plan) {
  memset(plan, 0, sizeof *plan);
  gs_common_options *common = rq->common;
  if (rq->tasks->n == 0)
    return gs_error(GS_ERR_USAGE, "gpuscale plan: no --task given (see 'gpuscale plan --help')");
  if (rq->tasks->n > GS_PLAN_MAX_TASKS)
    return gs_error(GS_ERR_USAGE, "gpuscale plan: more than %d tasks", GS_PLAN_MAX_TASKS);
  if (common->given_gpus || common->given_ranks)
    return gs_error(GS_ERR_USAGE,
                    "gpuscale plan: each --task names its devices; --gpus and --ranks do not apply");
  char path[GS_TEXT_LONG];
  snprintf(path, sizeof path, "%s", common->out ? common->out : "results/plan.json");
  GS_TRY(gs_file_check_output(path, "option --out"));
  gs_measure_job mj;
  gs_status status = gs_measure_job_start_local(&mj, "plan");
  gs_run_config base;
  if (status == GS_OK) status = gs_common_resolve(common, 0, &base);
  if (status == GS_OK) status = gs_measure_job_trace(&mj, common, path);
  if (status != GS_OK) return gs_measure_job_finish(&mj, status);
  base.trace = mj.trace;
  base.show_progress = 0;
  plan->backend = base.backend;
  char why[GS_TEXT_LONG] = "";
  const int device_count =
      base.backend == GS_BACKEND_CUDA ? gs_device_count(why, sizeof why) : GS_MAX_RANKS;
  unsigned char taken[GS_MAX_RANKS] = {0};
  plan->n_tasks = rq->tasks->n;
  for (size_t i = 0; i < plan->n_tasks && status == GS_OK; i++) {
    plan->tasks[i].text = rq->tasks->v[i];
    status = parse_task(&plan->tasks[i], &base, device_count, taken);
  }
  gs_environment env = {0};
  if (status == GS_OK) status = gs_common_environment(&env);
  if (status == GS_OK) status = run_tasks(rq, &base, plan, &env, path);
  if (status == GS_OK) gs_note("result written to %s", path);
  gs_environment_free(&env);
  int stopped = 0, kept = 0;
  for (size_t i = 0; i < plan->n_tasks; i++) {
    const gs_plan_task *t = &plan->tasks[i];
    if (!t->done) continue;
    stopped |= gs_measure_rank_failure(t->status);
    kept |= t->status == GS_OK || strcmp(gs_common_result_status(&t->m, 1, 1), "partial") == 0;
  }
  const gs_failure_record *first = NULL;
  size_t first_task = 0;
  for (size_t i = 0; i < plan->n_tasks && !first; i++)
    if (plan->tasks[i].done && plan->tasks[i].m.failure.present) {
      first = &plan->tasks[i].m.failure;
      first_task = i;
    }
  if (status == GS_OK && stopped && kept && first && first->rank >= 0)
    status = gs_error(GS_ERR_PARTIAL, "plan stopped early (task %zu: rank %d on %s %s after "
                      "step %llu); the document holds what each task completed", first_task,
                      first->rank, first->host, gs_status_name(first->status),
                      (unsigned long long)first->last_completed_step);
  else if (status == GS_OK && stopped && kept)
    status = gs_error(GS_ERR_PARTIAL, "plan stopped early; the document holds what each "
                            "task completed");
  for (size_t i = 0; i < plan->n_tasks && status == GS_OK; i++)
    if (plan->tasks[i].status != GS_OK)  // its error was recorded on the task's thread
      status = gs_error(plan->tasks[i].status, "task %zu: %s", i, plan->tasks[i].m.error);
  return gs_measure_job_finish(&mj, status);
}

void gs_plan_free(gs_plan *plan) {
  for (size_t i = 0; i < plan->n_tasks; i++) {
    gs_measurement_free(&plan->tasks[i].m);
    if (plan->tasks[i].workload) plan->tasks[i].workload->options_free(plan->tasks[i].opts);
  }
  memset(plan, 0, sizeof *plan);
}
