/* The measuring driver shared by run, scale and suite: a workload measured
 * at one or more rank counts into one result document, written after every
 * measurement so that nothing already measured is lost, then summarized. */
#ifndef GS_MEASURE_H
#define GS_MEASURE_H

#include <stdio.h>

#include "cli/common.h"

/* A workload measured by its own driver instead of the runner (llm's
 * scenarios): it fills the measurement, adds its own members to the
 * measurement's JSON and prints lines after the summary table. */
typedef struct {
  void *ctx;
  /* Measures measurement `index` at config->world_size ranks (as
   * gs_runner_measure does). */
  gs_status (*measure)(void *ctx, const gs_run_config *config, size_t index, gs_measurement *out);
  /* Adds the driver's members to measurement `index`'s JSON object. */
  gs_status (*annotate)(void *ctx, cJSON *measurement, size_t index);
  /* Prints the driver's lines for measurements 0..count-1. */
  void (*print)(void *ctx, FILE *out, size_t count);
} gs_sweep_driver;
/* The process in its job for the measuring commands (docs/multinode.md):
 * threads mode (one process drives every rank) or mpi mode (one rank per
 * process under mpirun/srun), the control world over all processes, and
 * where each process runs. */
typedef struct {
  gs_comm_job job;
  gs_comm_world *control;        /* mpi mode only */
  gs_rank_place places[GS_MAX_RANKS]; /* every process (on every process) */
  int broken;                    /* a rank was lost: the job cannot go on */
} gs_measure_job;

/* Detects the launcher, starts MPI under one, installs the SIGINT/SIGTERM
 * handlers and resolves the common options into *config (this process's
 * rank and device in mpi mode, the world = the processes). Called once per
 * command from the main thread. */
gs_status gs_measure_job_start(gs_measure_job *mj, gs_common_options *common, int default_all,
                               gs_run_config *config);

/* Whether this process writes documents and prints summaries: process 0,
 * or, once a rank was lost, the first process of process 0's host to
 * claim it among those alive (process 0 itself unless it died). */
int gs_measure_job_writes(const gs_measure_job *mj);

/* Ends the job: after a lost rank, process 0 (which has written its
 * document) aborts the whole job so that no process waits for the dead
 * one; otherwise the control world and MPI are shut down in order. Returns
 * `status`. */
gs_status gs_measure_job_finish(gs_measure_job *mj, gs_status status);

typedef struct {
  const char *command;           /* "run", "scale" or "suite" */
  int argc;                      /* the whole command line, for the document */
  char **argv;
  const gs_workload *workload;
  const void *workload_opts;
  const gs_common_options *common;
  const gs_run_config *config;   /* ranks: the largest count's devices */
  const gs_environment *env;
  const char *path;              /* result document */
  FILE *summary_copy;            /* also receives the summary; may be NULL */
  const gs_sweep_driver *driver; /* NULL: gs_measure_sweep chooses (llm's own
                                    driver for llm, else the runner) */
  gs_measure_job *job;           /* the process in its job */
} gs_sweep;

/* Default rank counts for a world of n: 1, 2, 4, ... below n, then n. */
void gs_measure_default_counts(int n, gs_u64_list *counts);

/* The llm's measuring defaults on `config` (docs/workloads/llm.md): the
 * model fitted to the backend, one run and one warm-up batch unless
 * --runs/--warmup were given. */
gs_status gs_measure_llm_defaults(const gs_common_options *common, gs_run_config *config,
                                  void *wopts);

/* Measures at each count in `counts` (prefixes of config->devices).
 * Returns GS_OK or the first failed measurement's status. */
/* Measures at each count in `counts` (prefixes of config->devices; in mpi
 * mode the first N processes, the others idle in lockstep). Returns GS_OK,
 * GS_ERR_PARTIAL when a rank was lost or the run was interrupted after
 * something was measured and written, or the first failure's status. */
gs_status gs_measure_sweep(const gs_sweep *sweep, const gs_u64_list *counts);

/* Parses "COMMAND WORKLOAD [options]" for run and scale: finds the workload
 * (argv[0]), its options and the common ones. *wopts is allocated (free with
 * workload->options_free). Returns GS_OK, GS_ERR_USAGE, or GS_OK with
 * *help_shown = 1 when --help was asked for. */
gs_status gs_measure_parse(const char *command, unsigned features, int argc, char **argv,
                           gs_common_options *common, const gs_workload **workload,
                           void **wopts, int *help_shown);

#endif
