/* The communication layer: the process in its job (launcher environment,
 * MPI start), NCCL's transport switches, communicator worlds, collectives on
 * device buffers through NCCL, and waits that poll instead of hanging.
 * Collectives on host buffers live in comm_host.c. */
#include "platform/comm.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/check.h"
#include "core/env_record.h"
#include "core/interrupt.h"
#include "core/json.h"
#include "core/timer.h"
#include "platform/comm_internal.h"

extern char **environ;

const char *const gs_dtype_names[] = {"int8", "uint8",    "int32", "uint32", "int64", "uint64",
                                      "half", "bfloat16", "float", "double", NULL};
const char *const gs_redop_names[] = {"sum", "prod", "max", "min", "avg", NULL};
const char *const gs_transport_names[] = {"auto", "p2p", "shm", "net", NULL};

size_t gs_dtype_size(gs_dtype dtype) {
  switch (dtype) {
    case GS_DTYPE_INT8:
    case GS_DTYPE_UINT8: return 1;
    case GS_DTYPE_HALF:
    case GS_DTYPE_BFLOAT16: return 2;
    case GS_DTYPE_INT32:
    case GS_DTYPE_UINT32:
    case GS_DTYPE_FLOAT: return 4;
    case GS_DTYPE_INT64:
    case GS_DTYPE_UINT64:
    case GS_DTYPE_DOUBLE: return 8;
    case GS_DTYPE_COUNT: break;
  }
  return 0;
}

/* ---- the process in its job ------------------------------------------------ */

/* A non-negative integer from the environment, or -1 when absent or not a
 * plain number. */
static int env_int(const char *name) {
  const char *text = getenv(name);
  if (!text || !*text) return -1;
  char *end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  // SLURM writes counts like "2(x3)": the leading number is the count.
  if (errno != 0 || end == text || v < 0 || v > 1 << 24) return -1;
  return (int)v;
}

typedef struct {
  const char *launcher;
  const char *rank, *size, *local_rank, *local_size;
} launcher_vars;

static const launcher_vars known_launchers[] = {
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"mpich", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"pmi", "PMI_RANK", "PMI_SIZE", "PMI_LOCAL_RANK", "PMI_LOCAL_SIZE"},
    {"slurm", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE"},
};

void gs_comm_job_detect(gs_comm_job *job) {
  memset(job, 0, sizeof *job);
  job->launch = GS_COMM_LAUNCH_THREADS;
  snprintf(job->launcher, sizeof job->launcher, "none");
  job->process_count = 1;
  job->local_count = 1;
  for (size_t i = 0; i < sizeof known_launchers / sizeof known_launchers[0]; i++) {
    const launcher_vars *l = &known_launchers[i];
    // SLURM's variables exist in batch scripts too; only srun steps count.
    if (strcmp(l->launcher, "slurm") == 0 && !getenv("SLURM_STEP_ID")) continue;
    int rank = env_int(l->rank), size = env_int(l->size);
    if (rank < 0 || size < 1 || rank >= size) continue;
    snprintf(job->launcher, sizeof job->launcher, "%s", l->launcher);
    job->process_rank = rank;
    job->process_count = size;
    int local_rank = env_int(l->local_rank), local_size = env_int(l->local_size);
    job->local_rank = local_rank >= 0 ? local_rank : 0;
    job->local_count = local_size > 0 ? local_size : 1;
    if (size > 1) job->launch = GS_COMM_LAUNCH_MPI;
    return;
  }
}

gs_status gs_comm_job_start(gs_comm_job *job) {
  if (job->launch != GS_COMM_LAUNCH_MPI) return GS_OK;
#ifdef GS_HAVE_MPI
  int provided = 0;
  GS_CHECK_MPI(MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided));
  job->mpi_started = 1;
  // Errors come back as return codes (checked by GS_CHECK_MPI), so that a
  // peer's death ends in a status and a partial document, not an abort here.
  GS_CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  if (provided < MPI_THREAD_SERIALIZED)
    return gs_error(GS_ERR_MPI,
                    "the MPI library gives thread level %d; gpuscale needs "
                    "MPI_THREAD_SERIALIZED (one rank thread at a time calls MPI)",
                    provided);
  int rank = 0, size = 0;
  GS_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  GS_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  if (rank != job->process_rank || size != job->process_count)
    return gs_error(GS_ERR_MPI, "%s's environment says rank %d of %d but MPI says rank %d of %d",
                    job->launcher, job->process_rank, job->process_count, rank, size);
  return GS_OK;
#else
  return gs_error(GS_ERR_UNSUPPORTED,
                  "started by %s as process %d of %d, but this gpuscale was built without MPI: "
                  "rebuild with MPI (libopenmpi-dev) or run one process with several GPUs",
                  job->launcher, job->process_rank, job->process_count);
#endif
}

void gs_comm_job_finish(gs_comm_job *job) {
#ifdef GS_HAVE_MPI
  if (job->mpi_started) MPI_Finalize();
#endif
  job->mpi_started = 0;
}

void gs_comm_job_abort(const gs_comm_job *job, int exit_code) {
#ifdef GS_HAVE_MPI
  // The process ends here, before main could print the command's error.
  if (job->mpi_started) {
    gs_error_print();
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
  }
#else
  (void)job;
  (void)exit_code;
#endif
}

/* ---- transport and environment ---------------------------------------------- */

static gs_status set_switch(const char *name, const char *value, const char *transport) {
  const char *now = getenv(name);
  if (now && strcmp(now, value) != 0)
    return gs_error(GS_ERR_USAGE,
                    "option --transport %s sets %s=%s, but the environment has %s=%s: unset it "
                    "or use --transport auto",
                    transport, name, value, name, now);
  if (setenv(name, value, 1) != 0) return gs_error_system(errno, "cannot set %s", name);
  return GS_OK;
}

gs_status gs_comm_transport_apply(gs_transport transport) {
  const char *name = gs_transport_names[transport];
  switch (transport) {
    case GS_TRANSPORT_AUTO: return GS_OK;
    case GS_TRANSPORT_P2P:
      GS_TRY(set_switch("NCCL_P2P_DISABLE", "0", name));
      return set_switch("NCCL_SHM_DISABLE", "1", name);
    case GS_TRANSPORT_SHM:
      GS_TRY(set_switch("NCCL_P2P_DISABLE", "1", name));
      return set_switch("NCCL_SHM_DISABLE", "0", name);
    case GS_TRANSPORT_NET:
      GS_TRY(set_switch("NCCL_P2P_DISABLE", "1", name));
      return set_switch("NCCL_SHM_DISABLE", "1", name);
  }
  GS_BUG("unknown transport %d", (int)transport);
}

cJSON *gs_comm_nccl_environment_json(void) {
  gs_json_build build = {0};
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, "NCCL_", 5) != 0 || !gs_env_recordable(*e)) continue;
    const char *eq = strchr(*e, '=');
    if (!eq) continue;
    char name[GS_TEXT_SHORT * 2];
    size_t len = (size_t)(eq - *e);
    if (len >= sizeof name) len = sizeof name - 1;
    memcpy(name, *e, len);
    name[len] = '\0';
    gs_json_put_string(&build, o, name, eq + 1);
  }
  return gs_json_build_finish(&build, o);
}

/* ---- worlds ------------------------------------------------------------------ */

ncclDataType_t comm_nccl_type(gs_dtype dtype) {
  static const ncclDataType_t types[] = {ncclInt8,    ncclUint8,  ncclInt32,   ncclUint32,
                                         ncclInt64,   ncclUint64, ncclFloat16, ncclBfloat16,
                                         ncclFloat32, ncclFloat64};
  return types[dtype];
}

ncclRedOp_t comm_nccl_op(gs_redop op) {
  static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  return ops[op];
}

static gs_status create_progress(gs_comm_world *w) {
#ifdef GS_HAVE_MPI
  if (w->job.launch == GS_COMM_LAUNCH_MPI) {
    // The processes of one host share their progress counters, so that a
    // timed-out rank can name which neighbour fell behind without its help.
    if (gs_comm_separate_hosts())
      GS_CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, w->job.process_rank, 0, &w->node_comm));
    else
      GS_CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                       &w->node_comm));
    int node_rank = 0, node_size = 0;
    GS_CHECK_MPI(MPI_Comm_rank(w->node_comm, &node_rank));
    GS_CHECK_MPI(MPI_Comm_size(w->node_comm, &node_size));
    // Four slots per process (progress, heartbeat, signal, pid), laid out
    // as four arrays; the last process also holds the writer claim, so that
    // it follows them in the window.
    const int last = node_rank == node_size - 1;
    const int slots = COMM_HOST_ARRAYS + last;
    void *mine = NULL;
    GS_CHECK_MPI(MPI_Win_allocate_shared((MPI_Aint)(slots * sizeof(uint64_t)),
                                         (int)sizeof(uint64_t), MPI_INFO_NULL, w->node_comm, &mine,
                                         &w->progress_window));
    MPI_Aint bytes = 0;
    int unit = 0;
    void *base = NULL;
    GS_CHECK_MPI(MPI_Win_shared_query(w->progress_window, 0, &bytes, &unit, &base));
    w->progress = base;
    w->heartbeat = w->progress + node_size;
    w->left = w->heartbeat + node_size;
    w->pids = w->left + node_size;
    atomic_store(&w->progress[node_rank], 0);
    atomic_store(&w->heartbeat[node_rank], comm_now_ns());
    atomic_store(&w->left[node_rank], 0);
    atomic_store(&w->pids[node_rank], (uint64_t)getpid());
    w->writer_claim = w->pids + node_size;
    comm_world_register(w, 1);
    if (last) atomic_store(w->writer_claim, 0);
    w->progress_count = node_size;
    w->progress_ranks = calloc((size_t)node_size, sizeof *w->progress_ranks);
    if (!w->progress_ranks) return gs_error(GS_ERR_NOMEM, "cannot allocate the rank table");
    int me = w->job.process_rank;
    GS_CHECK_MPI(MPI_Allgather(&me, 1, MPI_INT, w->progress_ranks, 1, MPI_INT, w->node_comm));
    w->ranks[0].progress_index = node_rank;
    GS_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    return GS_OK;
  }
#endif
  w->progress = calloc((size_t)w->local_ranks, sizeof *w->progress);
  w->progress_ranks = calloc((size_t)w->local_ranks, sizeof *w->progress_ranks);
  if (!w->progress || !w->progress_ranks)
    return gs_error(GS_ERR_NOMEM, "cannot allocate the progress table");
  w->progress_count = w->local_ranks;
  for (int k = 0; k < w->local_ranks; k++) {
    w->progress_ranks[k] = k;
    w->ranks[k].progress_index = k;
  }
  return GS_OK;
}

/* NCCL's settings for the world's communicators: at most `max_ctas` CTAs
 * per collective, every other field NCCL's default. Groups split from the
 * world (ncclCommSplit with a NULL config, comm_group.c) inherit these
 * settings from their parent in NCCL, so they need no config of their own. */
static ncclConfig_t nccl_world_config(int max_ctas) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.maxCTAs = max_ctas;
  return config;
}

/* Selects every local rank's GPU once, then `caller_device` again; names
 * the GPU that cannot be selected. */
static gs_status select_each_device(const gs_comm_world *w, int caller_device) {
  cudaError_t rc = cudaSuccess;
  int k = 0;
  for (; k < w->local_ranks && rc == cudaSuccess; k++) rc = cudaSetDevice(w->config.devices[k]);
  cudaError_t restore_rc = cudaSetDevice(caller_device);
  if (rc != cudaSuccess)
    return gs_error(GS_ERR_CUDA, "cannot select GPU %d for its NCCL communicator: %s",
                    w->config.devices[k - 1], cudaGetErrorString(rc));
  if (restore_rc != cudaSuccess)
    return gs_error(GS_ERR_CUDA, "cannot select GPU %d again: %s", caller_device,
                    cudaGetErrorString(restore_rc));
  return GS_OK;
}

/* Threads mode with a CTA limit: ncclCommInitAll takes no settings, so one
 * ncclCommInitRankConfig per local rank on its device, all in one NCCL group
 * (the calls of one group wait for each other at ncclGroupEnd, not inside
 * the loop). The caller's current device is restored afterwards. On failure
 * the communicators made so far are aborted and `comms` left all NULL. */
static gs_status create_nccl_threads_config(gs_comm_world *w, ncclComm_t *comms) {
  int caller_device = 0;
  GS_CHECK_CUDA(cudaGetDevice(&caller_device));
  // A device that failed inside the group would leave the ranks already in
  // it waiting at ncclGroupEnd for the missing one: every GPU is tried first.
  GS_TRY(select_each_device(w, caller_device));
  ncclUniqueId id;
  GS_CHECK_NCCL(ncclGetUniqueId(&id));
  ncclConfig_t config = nccl_world_config(w->config.nccl_max_ctas);
  GS_CHECK_NCCL(ncclGroupStart());
  cudaError_t device_rc = cudaSuccess;
  ncclResult_t init_rc = ncclSuccess;
  int k = 0;
  for (; k < w->local_ranks; k++) {
    device_rc = cudaSetDevice(w->config.devices[k]);
    if (device_rc != cudaSuccess) break;
    init_rc = ncclCommInitRankConfig(&comms[k], w->local_ranks, id, k, &config);
    if (init_rc != ncclSuccess) break;
  }
  // The group is closed even after a failed call, so that NCCL is left out of it.
  ncclResult_t end_rc = ncclGroupEnd();
  cudaError_t restore_rc = cudaSetDevice(caller_device);
  gs_status status = GS_OK;
  if (device_rc != cudaSuccess)
    status = gs_error(GS_ERR_CUDA, "cannot select GPU %d for its NCCL communicator: %s",
                      w->config.devices[k], cudaGetErrorString(device_rc));
  else if (init_rc != ncclSuccess || end_rc != ncclSuccess)
    status = gs_error(GS_ERR_NCCL,
                      "cannot create the NCCL communicators of %d GPUs with at most %d CTAs "
                      "per collective (ncclCommInitRankConfig): %s",
                      w->local_ranks, w->config.nccl_max_ctas,
                      ncclGetErrorString(init_rc != ncclSuccess ? init_rc : end_rc));
  else if (restore_rc != cudaSuccess)
    status = gs_error(GS_ERR_CUDA, "cannot select GPU %d again after creating communicators: %s",
                      caller_device, cudaGetErrorString(restore_rc));
  if (status != GS_OK)
    for (int j = 0; j < w->local_ranks; j++) {
      if (comms[j]) ncclCommAbort(comms[j]);
      comms[j] = NULL;
    }
  return status;
}

/* Threads mode: the communicators of all local ranks, with NCCL's default
 * settings (ncclCommInitAll) unless a CTA limit is set. */
static gs_status create_nccl_threads(gs_comm_world *w) {
  ncclComm_t *comms = calloc((size_t)w->local_ranks, sizeof *comms);
  if (!comms) return gs_error(GS_ERR_NOMEM, "cannot allocate communicators");
  gs_status status = GS_OK;
  if (w->config.nccl_max_ctas > 0) {
    status = create_nccl_threads_config(w, comms);
  } else {
    ncclResult_t rc = ncclCommInitAll(comms, w->local_ranks, w->config.devices);
    if (rc != ncclSuccess)
      status = gs_error(GS_ERR_NCCL, "cannot create the NCCL communicators of %d GPUs: %s",
                        w->local_ranks, ncclGetErrorString(rc));
  }
  if (status == GS_OK)
    for (int k = 0; k < w->local_ranks; k++) w->ranks[k].nccl = comms[k];
  free(comms);
  return status;
}

static gs_status create_nccl(gs_comm_world *w) {
  if (w->job.launch == GS_COMM_LAUNCH_THREADS) return create_nccl_threads(w);
#ifdef GS_HAVE_MPI
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (w->job.process_rank == 0) GS_CHECK_NCCL(ncclGetUniqueId(&id));
  GS_CHECK_MPI(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
  GS_CHECK_CUDA(cudaSetDevice(w->ranks[0].device));
  if (w->config.nccl_max_ctas > 0) {
    ncclConfig_t config = nccl_world_config(w->config.nccl_max_ctas);
    GS_CHECK_NCCL(
        ncclCommInitRankConfig(&w->ranks[0].nccl, w->size, id, w->job.process_rank, &config));
  } else {
    GS_CHECK_NCCL(ncclCommInitRank(&w->ranks[0].nccl, w->size, id, w->job.process_rank));
  }
  return GS_OK;
#else
  GS_BUG("mpi launch in a build without MPI");
#endif
}

gs_status gs_comm_world_create(const gs_comm_job *job, const gs_comm_world_config *config,
                               gs_comm_world **out) {
  *out = NULL;
  int mpi = job->launch == GS_COMM_LAUNCH_MPI;
  if (config->local_ranks < 1 || (mpi && config->local_ranks != 1))
    GS_BUG("a communicator world of %d local ranks in %s mode", config->local_ranks,
           mpi ? "mpi" : "threads");
  if (config->nccl_max_ctas < 0 || config->nccl_max_ctas > GS_COMM_MAX_CTAS)
    GS_BUG("a communicator world of at most %d CTAs per collective", config->nccl_max_ctas);
  gs_comm_world *w = calloc(1, sizeof *w);
  if (!w) return gs_error(GS_ERR_NOMEM, "cannot allocate a communicator world");
  w->job = *job;
  w->config = *config; /* devices and faults: valid during creation only */
  for (size_t i = 0; config->faults && i < config->faults->n; i++)
    if (config->faults->items[i].kind == GS_FAULT_SLOWPAIR)
      w->faults.items[w->faults.n++] = config->faults->items[i];
  w->local_ranks = config->local_ranks;
  w->lost_process = -1;
  w->size = mpi ? job->process_count : config->local_ranks;
  w->ranks = calloc((size_t)w->local_ranks, sizeof *w->ranks);
  if (!w->ranks) {
    free(w);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the rank handles");
  }
  for (int k = 0; k < w->local_ranks; k++) {
    gs_comm *c = &w->ranks[k];
    c->world = w;
    c->rank = mpi ? job->process_rank : k;
    c->device = config->backend == GS_BACKEND_CUDA ? config->devices[k] : -1;
    snprintf(c->op_name, sizeof c->op_name, "setup");
  }
  gs_status status = create_progress(w);
  // The rank threads of one process meet at the exchange's barrier; on the
  // cpu backend it also carries their data.
  if (status == GS_OK && !mpi) status = comm_exchange_init(&w->exchange, w->local_ranks);
  if (status == GS_OK && config->backend == GS_BACKEND_CUDA) status = create_nccl(w);
  w->config.devices = NULL;
  w->config.faults = NULL;
  if (status != GS_OK) {
    gs_comm_world_destroy(w);
    return status;
  }
  *out = w;
  return GS_OK;
}

void gs_comm_world_destroy(gs_comm_world *w) {
  if (!w) return;
  int mpi = w->job.launch == GS_COMM_LAUNCH_MPI;
  for (int k = 0; k < w->local_ranks; k++) {
    gs_comm *c = &w->ranks[k];
    if (c->nccl) {
      if (c->device >= 0) cudaSetDevice(c->device);
      if (c->aborted)
        ncclCommAbort(c->nccl);
      else
        ncclCommDestroy(c->nccl);
    }
    for (int e = 0; e < c->exposed_events_made; e++) cudaEventDestroy(c->exposed_events[e]);
    free(c->scratch);
    comm_p2p_release(c);
    comm_arrival_release(c);
  }
  if (!mpi && w->exchange.parties > 0) comm_exchange_destroy(&w->exchange);
#ifdef GS_HAVE_MPI
  if (mpi) {
    comm_world_register(w, 0);
    if (w->progress) MPI_Win_free(&w->progress_window);
    if (w->node_comm != MPI_COMM_NULL && w->node_comm) MPI_Comm_free(&w->node_comm);
    w->progress = NULL;
    w->heartbeat = w->left = w->pids = NULL;
    w->writer_claim = NULL;
  }
#endif
  if (!mpi) free((void *)w->progress);
  free(w->progress_ranks);
  free(w->ranks);
  free(w);
}

int gs_comm_world_size(const gs_comm_world *w) {
  return w->size;
}

gs_comm *gs_comm_world_rank(gs_comm_world *w, int local_index) {
  if (local_index < 0 || local_index >= w->local_ranks) return NULL;
  return &w->ranks[local_index];
}

int gs_comm_rank(const gs_comm *c) {
  return c->rank;
}
int gs_comm_size(const gs_comm *c) {
  return c->world->size;
}

/* ---- waiting, errors, abort ------------------------------------------------- */

double comm_time_left(const gs_comm *c, double start) {
  double limit = c->world->config.timeout_seconds;
  if (limit <= 0.0) return HUGE_VAL;
  return limit - (gs_time_seconds() - start);
}

int comm_look_due(double *next) {
  const double now = gs_time_seconds();
  if (now < *next) return 0;
  *next = now + COMM_LOOK_SECONDS;
  return 1;
}

void gs_comm_progress(gs_comm *c, uint64_t step) {
  atomic_store(&c->world->progress[c->progress_index], step + 1);
  int ignored;
  (void)comm_poll_peers(c, &ignored);
}

/* Names the ranks whose progress is below `mine` into buf ("rank 1, rank 3"
 * or a sentence saying none was found). */
static void describe_laggards(const gs_comm *c, uint64_t mine, char *buf, size_t size) {
  const gs_comm_world *w = c->world;
  size_t at = 0;
  buf[0] = '\0';
  for (int j = 0; j < w->progress_count && at < size; j++) {
    uint64_t theirs = atomic_load(&w->progress[j]);
    if (j == c->progress_index || theirs >= mine) continue;
    at += (size_t)snprintf(
        buf + at, size - at, "%srank %d (%llu operations started, this rank %llu)", at ? ", " : "",
        w->progress_ranks[j], (unsigned long long)theirs, (unsigned long long)mine);
  }
  if (at == 0) {
    if (w->job.launch == GS_COMM_LAUNCH_MPI && w->job.process_count > w->progress_count)
      snprintf(buf, size, "no rank on this host is behind; a rank on another host stalled");
    else
      snprintf(buf, size, "no rank is behind in its steps; the communication itself stalled");
  }
}

gs_status comm_stalled(const gs_comm *c, const char *tail) {
  const uint64_t mine = atomic_load(&c->world->progress[c->progress_index]);
  char who[GS_TEXT_LONG];
  describe_laggards(c, mine, who, sizeof who);
  return gs_error(GS_ERR_TIMEOUT, "%s did not complete within %.3g s; stalled: %s%s", c->op_name,
                  c->world->config.timeout_seconds, who, tail);
}

void gs_comm_abort(gs_comm *c) {
  if (c->aborted) return;
  c->aborted = 1;
  atomic_store(&c->world->any_aborted, 1);
  if (c->nccl) ncclCommAbort(c->nccl), c->nccl = NULL;
  if (c->world->job.launch == GS_COMM_LAUNCH_THREADS) comm_exchange_abort(&c->world->exchange);
}

static gs_status check_usable(gs_comm *c) {
  if (c->aborted) return gs_error(GS_ERR_ABORTED, "the communicator was aborted");
  if (atomic_load(&c->world->any_aborted)) {
    gs_comm_abort(c);
    return gs_error(GS_ERR_ABORTED, "stopped in %s because another rank failed", c->op_name);
  }
  return GS_OK;
}

gs_status gs_comm_check(gs_comm *c) {
  GS_TRY(check_usable(c));
  if (!c->nccl) return GS_OK;
  ncclResult_t async = ncclSuccess;
  GS_CHECK_NCCL(ncclCommGetAsyncError(c->nccl, &async));
  if (async != ncclSuccess && async != ncclInProgress) {
    gs_comm_abort(c);
    return gs_error(GS_ERR_NCCL, "NCCL reported an asynchronous error in %s: %s", c->op_name,
                    ncclGetErrorString(async));
  }
  return GS_OK;
}

/* Polls `event` when `of_event`, else `stream` (which may be the default
 * stream), as gs_comm_wait says. */
static gs_status comm_wait_for(gs_comm *c, int of_event, cudaStream_t stream, cudaEvent_t event) {
  GS_TRY(check_usable(c));
  if (c->world->config.backend != GS_BACKEND_CUDA) return GS_OK;
  double start = gs_time_seconds(), look = 0.0;
  for (;;) {
    cudaError_t rc = of_event ? cudaEventQuery(event) : cudaStreamQuery(stream);
    if (rc == cudaSuccess) return GS_OK;
    if (rc != cudaErrorNotReady) GS_CHECK_CUDA(rc);
    if (comm_look_due(&look)) {
      GS_TRY(gs_comm_check(c));
      int peer_signal = 0;
      const int peer = comm_poll_peers(c, &peer_signal);
      if (gs_interrupt_signal() != 0) {
        gs_comm_abort(c);
        return gs_error(GS_ERR_INTERRUPTED, "%s interrupted by signal %d", c->op_name,
                              gs_interrupt_signal());
      }
      if (peer >= 0) {
        gs_comm_abort(c);
        return gs_error(GS_ERR_INTERRUPTED, "%s stopped: rank %d was stopped by signal %d",
                        c->op_name, peer, peer_signal);
      }
      if (comm_time_left(c, start) <= 0.0) {
        gs_comm_abort(c);
        return comm_stalled(c, "; communicator aborted");
      }
    }
    sched_yield();
  }
}

gs_status gs_comm_wait(gs_comm *c, cudaStream_t stream) {
  return comm_wait_for(c, 0, stream, NULL);
}

gs_status gs_comm_wait_event(gs_comm *c, cudaEvent_t event) {
  return comm_wait_for(c, 1, NULL, event);
}

gs_status gs_comm_barrier(gs_comm *c) { return gs_comm_barrier_idle(c, 0.0); }

gs_status gs_comm_barrier_idle(gs_comm *c, double nap) {
  GS_TRY(check_usable(c));
  snprintf(c->op_name, sizeof c->op_name, "barrier");
  if (c->world->job.launch == GS_COMM_LAUNCH_THREADS) return comm_exchange_barrier(c);
#ifdef GS_HAVE_MPI
  MPI_Request request;
  GS_CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &request));
  return comm_mpi_complete_napping(c, &request, 1, nap);
#else
  (void)nap;
  GS_BUG("mpi launch in a build without MPI");
#endif
}

/* ---- collectives ---------------------------------------------------------- */

static int is_host(const gs_comm *c) {
  return c->world->config.backend == GS_BACKEND_CPU;
}

gs_status comm_nccl_result(gs_comm *c, ncclResult_t rc, const char *what) {
  if (rc == ncclSuccess || rc == ncclInProgress) return GS_OK;
  return gs_error(GS_ERR_NCCL, "%s failed: %s%s%s", what, ncclGetErrorString(rc),
                  ncclGetLastError(c->nccl)[0] ? ": " : "", ncclGetLastError(c->nccl));
}

gs_status gs_comm_collective(gs_comm *c, const gs_comm_call *call, cudaStream_t stream) {
  const gs_coll_desc *d = gs_coll_desc_of(call->op);
  GS_TRY(check_usable(c));
  snprintf(c->op_name, sizeof c->op_name, "%s", d->name);
  int n = c->world->size;
  if (d->has_peers &&
      (call->send_peer < 0 || call->send_peer >= n || call->recv_peer < 0 || call->recv_peer >= n))
    GS_BUG("%s peers %d and %d outside a world of %d", d->name, call->send_peer,
           call->recv_peer, n);
  if (!is_host(c) && !comm_coll_impls[call->op].nccl)
    GS_BUG("%s has no NCCL call in platform/comm_coll.c", d->name);
  if (c->arrival) GS_TRY(comm_arrival_enter(c, stream));
  gs_status st = is_host(c) ? comm_host_run(c, call) : comm_coll_impls[call->op].nccl(c, call, stream);
  if (st == GS_OK && c->arrival) st = comm_arrival_leave(c, stream);
  return st;
}

gs_status gs_comm_allreduce(gs_comm *c, const void *send, void *recv, size_t count, gs_dtype dtype,
                            gs_redop op, cudaStream_t stream) {
  gs_comm_call call = {.op = GS_COLL_ALLREDUCE, .send = send, .recv = recv, .count = count,
                       .dtype = dtype, .redop = op};
  return gs_comm_collective(c, &call, stream);
}

gs_status gs_comm_allgather(gs_comm *c, const void *send, void *recv, size_t count, gs_dtype dtype,
                            cudaStream_t stream) {
  gs_comm_call call = {.op = GS_COLL_ALLGATHER, .send = send, .recv = recv, .count = count,
                       .dtype = dtype};
  return gs_comm_collective(c, &call, stream);
}

gs_status gs_comm_broadcast(gs_comm *c, const void *send, void *recv, size_t count, gs_dtype dtype,
                            int root, cudaStream_t stream) {
  gs_comm_call call = {.op = GS_COLL_BROADCAST, .send = send, .recv = recv, .count = count,
                       .dtype = dtype, .root = root};
  return gs_comm_collective(c, &call, stream);
}

/* ---- exposed communication time ------------------------------------------ */

gs_status gs_comm_exposed_begin(gs_comm *c, cudaStream_t stream) {
  if (!is_host(c) && c->exposed_count >= GS_COMM_EXPOSED_MAX)
    GS_BUG("more than %d exposed-communication brackets in one step", GS_COMM_EXPOSED_MAX);
  if (is_host(c)) {
    c->exposed_host_begin = gs_time_seconds();
    return GS_OK;
  }
  // Event pairs are made as brackets first need them (a pipeline's step
  // brackets each of its transfers).
  while (c->exposed_events_made < 2 * (c->exposed_count + 1)) {
    GS_CHECK_CUDA(cudaEventCreate(&c->exposed_events[c->exposed_events_made]));
    c->exposed_events_made++;
  }
  GS_CHECK_CUDA(cudaEventRecord(c->exposed_events[2 * c->exposed_count], stream));
  return GS_OK;
}

gs_status gs_comm_exposed_end(gs_comm *c, cudaStream_t stream) {
  if (is_host(c)) {
    c->exposed_host_sum += gs_time_seconds() - c->exposed_host_begin;
    c->exposed_count++;
    return GS_OK;
  }
  GS_CHECK_CUDA(cudaEventRecord(c->exposed_events[2 * c->exposed_count + 1], stream));
  c->exposed_count++;
  return GS_OK;
}

gs_status gs_comm_exposed_take(gs_comm *c, double *seconds) {
  double sum = 0.0;
  if (is_host(c)) {
    sum = c->exposed_host_sum;
  } else {
    for (int b = 0; b < c->exposed_count; b++) {
      float ms = 0.0f;
      GS_CHECK_CUDA(
          cudaEventElapsedTime(&ms, c->exposed_events[2 * b], c->exposed_events[2 * b + 1]));
      sum += (double)ms * 1e-3;
    }
  }
  c->exposed_count = 0;
  c->exposed_host_sum = 0.0;
  *seconds = sum;
  return GS_OK;
}

/* ---- host data between processes --------------------------------------------- */

gs_status gs_comm_world_allgather(gs_comm_world *w, const void *send, size_t bytes, void *recv) {
  if (w->job.launch == GS_COMM_LAUNCH_THREADS) {
    memcpy(recv, send, bytes);
    return GS_OK;
  }
#ifdef GS_HAVE_MPI
  if (bytes > (size_t)INT32_MAX)
    return gs_error(GS_ERR_UNSUPPORTED, "gather of %zu bytes per process is too large", bytes);
  MPI_Request request;
  GS_CHECK_MPI(MPI_Iallgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE,
                              MPI_COMM_WORLD, &request));
  snprintf(w->ranks[0].op_name, sizeof w->ranks[0].op_name, "result gather");
  return comm_mpi_complete(&w->ranks[0], &request, 1);
#else
  (void)recv;
  GS_BUG("mpi launch in a build without MPI");
#endif
}

/* See comm_internal.h. */
double comm_pair_factor(const gs_comm *c, int peer) {
  if (c->world->config.backend != GS_BACKEND_CPU) return 1.0;
  return gs_fault_pair_factor(&c->world->faults, c->rank, peer);
}

/* See comm_internal.h. */
void comm_pair_stretch(double factor, double t0) {
  if (factor > 1.0) gs_fault_late_wait((factor - 1.0) * (gs_time_seconds() - t0));
}
