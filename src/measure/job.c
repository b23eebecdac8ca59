/* The job lifecycle of the measuring commands: launch, control world,
 * writer election and the end of a broken job (see job.h). */
#include "measure/job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/interrupt.h"
#include "core/process.h"
#include "core/timer.h"

#ifdef GS_HAVE_MPI
#include <mpi.h>
#endif

/* Where this process runs: host, device and its library versions. */
static gs_status describe_place(gs_rank_place *place, int local_rank, int device) {
  memset(place, 0, sizeof *place);
  gs_environment env;
  GS_TRY(gs_common_environment(&env));
  snprintf(place->host, sizeof place->host, "%s", gs_hostname());
  // Tests rehearse a job over hosts on one machine: each process its own.
  if (gs_comm_separate_hosts())
    snprintf(place->host, sizeof place->host, "%.200s-p%d", gs_hostname(), local_rank);
  place->device = device;
  place->pid = (int)getpid();
  place->local_rank = local_rank;
  place->cuda_driver_version = env.cuda_driver_version;
  place->cuda_runtime_version = env.cuda_runtime_version;
  snprintf(place->nccl_version, sizeof place->nccl_version, "%s", env.nccl_version);
  for (size_t i = 0; i < env.gpu_count; i++) {
    if (env.gpus[i].index != device) continue;
    snprintf(place->gpu_name, sizeof place->gpu_name, "%s", env.gpus[i].name);
    snprintf(place->gpu_uuid, sizeof place->gpu_uuid, "%s", env.gpus[i].uuid);
  }
  gs_environment_free(&env);
  return GS_OK;
}

int gs_measure_loses_job(gs_status status) {
  return status == GS_ERR_RANK_LOST || status == GS_ERR_TIMEOUT ||
         status == GS_ERR_INTERRUPTED || status == GS_ERR_MPI;
}

int gs_measure_rank_failure(gs_status status) {
  return gs_measure_loses_job(status) || status == GS_ERR_ABORTED || status == GS_ERR_CUDA ||
         status == GS_ERR_NCCL || status == GS_ERR_COMMAND;
}

gs_status gs_measure_job_add_processes(cJSON *doc, const gs_measure_job *mj) {
  cJSON *env = cJSON_GetObjectItemCaseSensitive(doc, "environment");
  gs_json_build build = {0}, *b = &build;
  cJSON *list = env ? gs_json_put_array(b, env, "processes") : NULL;
  if (!list) return gs_error(GS_ERR_NOMEM, "cannot describe the processes");
  for (int k = 0; k < mj->job.process_count; k++) {
    const gs_rank_place *p = &mj->places[k];
    cJSON *o = cJSON_CreateObject();
    gs_json_append(b, list, o);
    if (b->failed) return gs_error(GS_ERR_NOMEM, "cannot describe the processes");
    gs_json_put_number(b, o, "rank", k);
    gs_json_put_string(b, o, "host", p->host);
    gs_json_put_number(b, o, "local_rank", p->local_rank);
    gs_json_put_number(b, o, "pid", p->pid);
    if (p->device >= 0) {
      gs_json_put_number(b, o, "device", p->device);
      gs_json_put_string(b, o, "gpu_name", p->gpu_name);
      gs_json_put_string(b, o, "gpu_uuid", p->gpu_uuid);
    } else {
      gs_json_put_null(b, o, "device");
    }
    gs_json_put_number(b, o, "cuda_driver_version", p->cuda_driver_version);
    gs_json_put_number(b, o, "cuda_runtime_version", p->cuda_runtime_version);
    if (p->nccl_version[0])
      gs_json_put_string(b, o, "nccl_version", p->nccl_version);
    else
      gs_json_put_null(b, o, "nccl_version");
  }
  if (b->failed) return gs_error(GS_ERR_NOMEM, "cannot describe the processes");
  cJSON *launch = gs_json_put_object(b, env, "launch");
  gs_json_put_string(b, launch, "mode", "mpi");
  gs_json_put_string(b, launch, "launcher", mj->job.launcher);
  gs_json_put_number(b, launch, "processes", mj->job.process_count);
  if (b->failed) return gs_error(GS_ERR_NOMEM, "cannot describe the launch");
  return GS_OK;
}

/* Open MPI started by srun finds its peers through PMIx only (Debian's
 * build has no PMI-1/PMI-2 support): without srun's pmix plugin, which sets
 * PMIX_RANK, MPI_Init prints some 40 lines and aborts. Refused before it,
 * in one line that process 0 prints (the others exit with the status). */
static gs_status check_srun_pmix(const gs_comm_job *job) {
#if defined(GS_HAVE_MPI) && defined(OPEN_MPI)
  if (job->launch != GS_COMM_LAUNCH_MPI || !getenv("SLURM_STEP_ID") ||
      getenv("OMPI_COMM_WORLD_RANK") || getenv("PMIX_RANK"))
    return GS_OK;
  if (job->process_rank != 0) return GS_ERR_USAGE;
  const char *type = getenv("SLURM_MPI_TYPE");
  return gs_error(GS_ERR_USAGE,
                  "srun started %d processes without PMIx (--mpi=%s), which Open MPI needs to "
                  "start: run srun --mpi=pmix (srun --mpi=list shows this cluster's plugins)",
                  job->process_count, type && *type ? type : "none");
#else
  (void)job;
  return GS_OK;
#endif
}

gs_status gs_measure_job_start(gs_measure_job *mj, gs_common_options *common, int default_all,
                               gs_run_config *config) {
  memset(mj, 0, sizeof *mj);
  gs_comm_job_detect(&mj->job);
  GS_TRY(check_srun_pmix(&mj->job));
  gs_interrupt_install();
  GS_TRY(gs_comm_job_start(&mj->job));
  GS_TRY(gs_common_choose_ranks(common, default_all, &mj->job, config, &mj->local_ranks,
                                mj->local_devices));
  GS_TRY(gs_measure_job_trace(mj, common, common->out));
  config->trace = mj->trace;
  if (mj->job.launch != GS_COMM_LAUNCH_MPI) return GS_OK;
  gs_comm_world_config wc = {.backend = GS_BACKEND_CPU, .local_ranks = 1,
                             .timeout_seconds = config->comm_timeout_seconds};
  GS_TRY(gs_comm_world_create(&mj->job, &wc, &mj->control));
  gs_rank_place mine;
  GS_TRY(describe_place(&mine, mj->job.local_rank, mj->local_devices[0]));
  const int me = mj->job.process_rank;
  GS_TRY(gs_comm_allgather(gs_comm_world_rank(mj->control, 0), &mine, mj->places, sizeof mine,
                           GS_DTYPE_UINT8, NULL));
  for (int k = 0; k < config->world_size; k++) config->devices[k] = mj->places[k].device;
  config->control = mj->control;
  config->process_rank = me;
  config->places = mj->places;
  if (me == 0)
    gs_note("%s launched %d processes: one rank each (mpi mode)", mj->job.launcher,
            mj->job.process_count);
  return GS_OK;
}

gs_status gs_measure_job_start_local(gs_measure_job *mj, const char *command) {
  memset(mj, 0, sizeof *mj);
  gs_comm_job_detect(&mj->job);
  if (mj->job.launch == GS_COMM_LAUNCH_MPI)
    return gs_error(GS_ERR_USAGE,
                    "gpuscale %s drives every device from one process: start it without %s",
                    command, mj->job.launcher);
  gs_interrupt_install();
  return GS_OK;
}

gs_status gs_measure_job_trace(gs_measure_job *mj, const gs_common_options *common,
                               const char *result_path) {
  gs_trace_free(mj->trace);
  mj->trace = NULL;
  return gs_common_trace_open(common, result_path, &mj->trace);
}

/* After a broken job: the process that writes the document, the lowest
 * process on process 0's host that is alive and still answers (process 0
 * may be the rank that was lost, dead, stopped or hung; every process holds
 * every rank's records), or -1 when none is. */
static int writer_process(const gs_measure_job *mj) {
  const gs_rank_place *first = &mj->places[0];
  const int me = mj->job.process_rank;
  // Over hosts no process sees the others' pids: the lowest process that
  // answered the roll call writes, the same answer on every host.
  // A process that found itself lost (stopped long enough for the others
  // to go on without it) is not one of them.
  const unsigned char *heard = gs_comm_roll_call(mj->control);
  for (int k = 0; heard && k < mj->job.process_count; k++)
    if (heard[k] && !(k == me && gs_comm_self_lost(mj->control))) return k;
  if (heard) return -1;
  for (int k = 0; k < mj->job.process_count; k++) {
    if (strcmp(mj->places[k].host, first->host) != 0) continue;
    if (k == me || (gs_process_alive(mj->places[k].pid) &&
                    gs_comm_answering(mj->control, k) != 0))
      return k;
  }
  return -1;
}

int gs_measure_job_writes(const gs_measure_job *mj) {
  if (mj == NULL || mj->control == NULL) return 1;
  const int me = mj->job.process_rank;
  if (!mj->broken) return me == 0;
  // The claim settles it for good: the writer may end the job and die
  // before a slower process gets here, finds it gone and thinks itself next.
  return writer_process(mj) == me && gs_comm_claim_writer(mj->control);
}

/* Seconds a process that does not write waits for the writer to end the
 * job, and how long when the writer is on another host (its pid cannot be
 * watched from here). */
#define GS_WRITER_WAIT_SECONDS 60.0
#define GS_REMOTE_WRITER_WAIT_SECONDS 5.0

/* A process that does not write waits while the writer is alive: the
 * writer ends the job once its document is on disk. Ending the job on a
 * fixed delay instead would kill a writer that a busy machine slowed. */
static void wait_for_writer(const gs_measure_job *mj) {
  const int claimed = gs_comm_writer_claimed(mj->control);
  const int writer = claimed >= 0 ? claimed : writer_process(mj);
  if (writer < 0 || writer == mj->job.process_rank) return;
  const gs_rank_place *mine = &mj->places[mj->job.process_rank];
  const int watched = strcmp(mj->places[writer].host, mine->host) == 0;
  const double until =
      gs_time_seconds() + (watched ? GS_WRITER_WAIT_SECONDS : GS_REMOTE_WRITER_WAIT_SECONDS);
  while (gs_time_seconds() < until && (!watched || gs_process_alive(mj->places[writer].pid)))
    gs_sleep_seconds(0.05);
}

gs_status gs_measure_job_finish(gs_measure_job *mj, gs_status status) {
  fflush(stdout);
  if (mj->broken && mj->job.mpi_started) {
    // The lost rank cannot take part in an orderly shutdown: the writer
    // ends the job once its document is written; the others wait for it.
    if (!gs_measure_job_writes(mj)) wait_for_writer(mj);
    gs_comm_job_abort(&mj->job, gs_status_exit_code(status));
  }
  gs_comm_world_destroy(mj->control);
  mj->control = NULL;
  gs_trace_free(mj->trace);
  mj->trace = NULL;
  gs_comm_job_finish(&mj->job);
  return status;
}
