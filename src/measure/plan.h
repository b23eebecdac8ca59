/* The measuring engine of `gpuscale plan` (docs/workloads/placement.md):
 * several workloads, each on its own GPUs (or CPU ranks), measured at the
 * same time behind one start gate, in one process. The document holds one
 * measurement per task, each device's throughput and the system total; it
 * is rewritten whenever a task finishes, so that a signal, a stalled rank
 * or a crash keeps what the tasks completed. */
#ifndef GS_MEASURE_PLAN_H
#define GS_MEASURE_PLAN_H

#include "measure/common.h"

#define GS_PLAN_MAX_TASKS 16
#define GS_PLAN_MAX_WORDS 64

typedef struct {
  const char *text;              /* the --task value as given */
  char words_buf[1024];
  char *words[GS_PLAN_MAX_WORDS]; /* workload options, split at spaces */
  int n_words;
  const gs_workload *workload;
  void *opts;
  gs_run_config config;
  gs_measurement m;
  gs_status status;
  int done;                      /* its measurement has ended (under the plan's lock) */
  double rank_rates[GS_MAX_RANKS]; /* items per second of each rank: its share over
                                      its median step */
} gs_plan_task;

/* The system total of one item unit. */
typedef struct {
  const char *item_unit;
  double throughput;             /* items per second, summed over the tasks */
} gs_plan_total;

typedef struct {
  gs_backend backend;
  size_t n_tasks;
  gs_plan_task tasks[GS_PLAN_MAX_TASKS];
  size_t n_totals;
  gs_plan_total totals[GS_PLAN_MAX_TASKS];
} gs_plan;

typedef struct {
  gs_common_options *common;     /* parsed; --gpus/--ranks do not apply */
  const gs_string_list *tasks;   /* the --task values */
} gs_plan_request;

/* Parses the tasks, measures them at the same time and writes the document
 * (common->out, default results/plan.json) after each task ends. Fills
 * *plan (free it with gs_plan_free, also after a failure). Returns GS_OK;
 * GS_ERR_USAGE for a bad task or option, or under mpirun/srun;
 * GS_ERR_PARTIAL when a signal or a stalled rank stopped a task after
 * something was measured (the document holds it); else the first task's
 * failure. Called once from the main thread. */
gs_status gs_measure_plan(const gs_plan_request *request, gs_plan *plan);

/* Frees what the tasks of *plan own. */
void gs_plan_free(gs_plan *plan);

#endif
