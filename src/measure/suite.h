/* The measuring engine of `gpuscale suite`: the standard set into one
 * results directory in one job — info.json (the machine), every registered
 * workload swept over rank counts with its default options (one document
 * each, through the sweep of run and scale), p2p.json with 2 or more GPUs
 * and coll.json (every collective) with 2 or more ranks. It prints only
 * through its observers and lists every document it wrote, however many
 * workloads are registered, for the command's report and node verdict. */
#ifndef GS_MEASURE_SUITE_H
#define GS_MEASURE_SUITE_H

#include <stddef.h>

#include "measure/coll_sweep.h"
#include "measure/job.h"
#include "measure/p2p.h"
#include "measure/sweep.h"

typedef struct gs_suite gs_suite;

/* Who hears of the suite's progress (the command, which prints). Called
 * only on the process that writes the documents; any member may be NULL. */
typedef struct {
  void *ctx;
  /* The machine is known (suite->env, suite->config); nothing measured yet. */
  void (*started)(void *ctx, const gs_suite *suite);
  /* p2p's matrices are measured and p2p.json is written. */
  void (*p2p_done)(void *ctx, const gs_p2p_options *o, const gs_p2p_outcome *outcome);
  const gs_sweep_observer *sweep; /* each workload's tables, as run and scale print them */
  const gs_coll_observer *coll;   /* each collective's table, as coll prints it */
} gs_suite_observer;

struct gs_suite {
  gs_common_options *common;     /* parsed (cli/cmd_suite.c's groups) */
  const char *dir;               /* the results directory, checked by the caller */
  /* Filled by gs_suite_start and gs_suite_measure. */
  gs_measure_job *job;
  gs_run_config config;          /* every selected rank */
  gs_u64_list counts;            /* the rank counts of the workloads' sweeps */
  gs_environment env;
  int have_env;
  char **files;                  /* the documents written, in order: info, workloads, p2p, coll */
  size_t n_files;
};

/* Starts the suite's job (launcher, ranks; every GPU unless --gpus narrows
 * it), resolves the rank counts and, on the process that writes, creates
 * the results directory `dir`. *suite is filled from `common` and `dir`;
 * end it with gs_suite_finish, also after a failure. GS_ERR_USAGE for
 * options that do not fit, GS_ERR_IO when the directory cannot be made. */
gs_status gs_suite_start(gs_suite *suite, gs_common_options *common, const char *dir);

/* Whether this process writes the documents (and so prints). */
int gs_suite_writes(const gs_suite *suite);

/* Measures the standard set after gs_suite_start returned GS_OK: collects
 * the environment, writes info.json, sweeps every registered workload
 * (its driver's defaults; --iters and --min-time set the fixed steps, a
 * driver with its own loop measures as it would without them), then p2p
 * (2 or more GPUs) and every
 * collective (2 or more ranks), which are left out under a launcher with a
 * note. Each document that exists afterwards is listed in suite->files.
 * A failure does not stop the next part, except a lost rank or a partial
 * sweep, which ends the workloads. Returns the first failure's status
 * (GS_OK when none). Called once from the main thread. */
gs_status gs_suite_measure(gs_suite *suite, const gs_suite_observer *observer);

/* Ends the job with `status` (gs_measure_job_finish) and frees what the
 * suite holds; returns the job's final status. */
gs_status gs_suite_finish(gs_suite *suite, gs_status status);

#endif
