/* The job lifecycle of the measuring commands (docs/multinode.md): how
 * this process runs (threads mode, one process driving every rank; or mpi
 * mode, one rank per process under mpirun/srun), the control world over
 * all processes, who writes the document, and how the job ends when a rank
 * was lost. */
#ifndef GS_MEASURE_JOB_H
#define GS_MEASURE_JOB_H

#include "measure/common.h"

/* The process in its job: launch, control world and every process's place. */
typedef struct {
  gs_comm_job job;
  gs_comm_world *control;        /* mpi mode only */
  gs_rank_place places[GS_MAX_RANKS]; /* every process (on every process) */
  int broken;                    /* a rank was lost: the job cannot go on */
  int local_ranks;               /* ranks this process drives (threads mode: all) */
  int local_devices[GS_MAX_RANKS]; /* their CUDA ordinals (-1 on the cpu backend) */
  gs_trace *trace;               /* --trace's recorder, or NULL (freed by finish) */
  gs_file_stamp written;         /* the document this process last wrote */
} gs_measure_job;

/* Detects the launcher, starts MPI under one, installs the SIGINT/SIGTERM
 * handlers and resolves the common options into *config (this process's
 * rank and device in mpi mode, the world = the processes), and opens the
 * --trace recorder (mj->trace, also config->trace). Called once per
 * command from the main thread. */
gs_status gs_measure_job_start(gs_measure_job *mj, gs_common_options *common, int default_all,
                               gs_run_config *config);

/* The job of a command that drives every device from one process (plan,
 * p2p): detects the launcher and installs the SIGINT/SIGTERM handlers;
 * under mpirun/srun it refuses (GS_ERR_USAGE naming `command`), since
 * every process would measure the same devices and write the same file.
 * Called once per command from the main thread; end it with
 * gs_measure_job_finish. */
gs_status gs_measure_job_start_local(gs_measure_job *mj, const char *command);

/* Opens the --trace recorder of a local job (plan, p2p) into mj->trace,
 * checking its file against the result file `result_path`. */
gs_status gs_measure_job_trace(gs_measure_job *mj, const gs_common_options *common,
                               const char *result_path);

/* Whether this process writes documents and prints summaries: process 0,
 * or, once a rank was lost, the first process of process 0's host to
 * claim it among those alive (process 0 itself unless it died). */
int gs_measure_job_writes(const gs_measure_job *mj);

/* Ends the job: after a lost rank, process 0 (which has written its
 * document) aborts the whole job so that no process waits for the dead
 * one; otherwise the control world and MPI are shut down in order. Returns
 * `status`. */
gs_status gs_measure_job_finish(gs_measure_job *mj, gs_status status);

/* Adds the environment members "processes" (where every process ran) and
 * "launch" to `doc` (mpi mode only). */
gs_status gs_measure_job_add_processes(cJSON *doc, const gs_measure_job *mj);

/* Failures after which the processes of a job cannot go on together (a
 * lost or stalled rank, a signal, MPI itself). */
int gs_measure_loses_job(gs_status status);

/* Failures of a rank rather than of the request (the above, a rank stopped
 * because another failed, a CUDA or NCCL error, a run of exec's command): what was measured before
 * is kept and the command ends partial (exit 4). */
int gs_measure_rank_failure(gs_status status);

#endif
