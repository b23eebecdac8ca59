/* Reads the passive state of the node for `gpuscale check` (see check.h):
 * NVML's GPUs, each by its PCI bus id, and CUDA's, compared by bus id. */
#include "measure/check.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/json.h"
#include "core/timer.h"
#include "measure/check_burn.h"
#include "measure/check_stress.h"
#include "measure/common.h"
#include "platform/nvml.h"

/* What the reading thread is at, for the message when it hangs:
 * PHASE_CUDA, PHASE_NVML, the index of the GPU being read, or level 2's
 * phases (check_stress.h: PHASE_HOST, PHASE_P2P, PHASE_TRIAD + ordinal). */
enum { PHASE_WORKLOADS = -7, PHASE_ALLREDUCE = -6, PHASE_BURN = -5, PHASE_P2P = -4, PHASE_HOST = -3, PHASE_CUDA = -2, PHASE_NVML = -1, PHASE_TRIAD = 1000 };
static _Atomic int read_phase = PHASE_CUDA;

static void set_phase(int phase) { atomic_store(&read_phase, phase); }

void gs_check_state_free(gs_node_state *state) {
  gs_check_stress_free(&state->stress);
  gs_check_burn_free(&state->burn);
  free(state->cuda_bus_ids);
  free(state->gpus);
  state->cuda_bus_ids = NULL;
  state->gpus = NULL;
  state->cuda_count = state->gpu_count = 0;
}

/* Copies the software versions and CUDA's GPUs out of the environment. */
static gs_status take_cuda(gs_node_state *s, const gs_environment *env) {
  s->cuda_driver_version = env->cuda_driver_version;
  s->cuda_runtime_version = env->cuda_runtime_version;
  snprintf(s->cuda_status, sizeof s->cuda_status, "%s", env->cuda_status);
  snprintf(s->nccl_version, sizeof s->nccl_version, "%s", env->nccl_version);
  if (env->gpu_count == 0) return GS_OK;
  s->cuda_bus_ids = calloc(env->gpu_count, sizeof *s->cuda_bus_ids);
  if (!s->cuda_bus_ids) return gs_error(GS_ERR_NOMEM, "cannot allocate the GPU inventory");
  s->cuda_count = env->gpu_count;
  for (size_t i = 0; i < env->gpu_count; i++)
    snprintf(s->cuda_bus_ids[i], sizeof s->cuda_bus_ids[i], "%s", env->gpus[i].pci_bus_id);
  return GS_OK;
}

/* Every GPU NVML enumerates, with its passive state. */
static gs_status take_nvml(gs_node_state *s, gs_nvml *nvml) {
  unsigned count = 0;
  if (!gs_nvml_device_count(nvml, &count) || count == 0) return GS_OK;
  s->gpus = calloc(count, sizeof *s->gpus);
  if (!s->gpus) return gs_error(GS_ERR_NOMEM, "cannot allocate the GPU health table");
  for (unsigned i = 0; i < count; i++) {
    char bus[GS_TEXT_SHORT];
    gs_gpu_health *h = &s->gpus[s->gpu_count];
    atomic_store(&read_phase, (int)i);
    const double start = gs_time_seconds();
    // A device NVML lists but cannot describe keeps its place, unknown.
    if (!gs_nvml_device_bus_id(nvml, i, bus, sizeof bus) || !gs_nvml_health_get(nvml, bus, h)) {
      memset(h, 0, sizeof *h);
      snprintf(h->pci_bus_id, sizeof h->pci_bus_id, "%s", bus);
    } else {
      gs_nvml_health_figures_get(nvml, bus, h);
    }
    h->index = (int)i;
    h->read_at = start;
    h->read_seconds = gs_time_seconds() - start;
    s->gpu_count++;
  }
  return GS_OK;
}

gs_status gs_check_state_collect(gs_node_state *s) {
  memset(s, 0, sizeof *s);
  const char *lib = getenv("GPUSCALE_NVML_LIBRARY");
  s->nvml_replaced = lib && *lib;
  s->cuda_visible_set = getenv("CUDA_VISIBLE_DEVICES") != NULL;
  atomic_store(&read_phase, PHASE_CUDA);
  double t0 = gs_time_seconds();
  gs_environment env;
  memset(&env, 0, sizeof env);
  gs_status st = gs_common_environment(&env);
  if (st == GS_OK) st = take_cuda(s, &env);
  gs_environment_free(&env);
  if (st != GS_OK) return st;
  double t1 = gs_time_seconds();
  s->cuda_seconds = t1 - t0;
  atomic_store(&read_phase, PHASE_NVML);
  gs_nvml *nvml = gs_nvml_open(s->nvml_status, sizeof s->nvml_status);
  s->nvml_loaded = nvml != NULL;
  gs_nvml_driver_version(nvml, s->driver, sizeof s->driver);
  st = take_nvml(s, nvml);
  gs_nvml_close(nvml);
  double gpus = 0;
  for (size_t i = 0; i < s->gpu_count; i++) gpus += s->gpus[i].read_seconds;
  s->gpus_seconds = gpus;
  s->nvml_seconds = gs_time_seconds() - t1 - gpus;
  return st;
}

/* The reading thread's job; freed by whichever side finishes last. */
typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t done_cv;
  int done, abandoned;
  int stress;                  /* run level 2 (or level 1's short p2p and all-reduce)
                                  after the passive reads */
  gs_check_stress_options stress_options;
  int burn;                    /* then level 3's burn-in */
  gs_check_burn_options burn_options;
  gs_status st;
  char error[GS_TEXT_ERROR];
  gs_node_state state;
} collect_job;

static void job_free(collect_job *job) {
  gs_check_state_free(&job->state);
  pthread_cond_destroy(&job->done_cv);
  pthread_mutex_destroy(&job->lock);
  free(job);
}

/* The XID events `w` queued into s (w NULL: not watched, `why` says why). */
static void take_xids(gs_node_state *s, gs_nvml_xid_watch *w, const char *why, double seconds) {
  s->xid_watched = w != NULL;
  snprintf(s->xid_why, sizeof s->xid_why, "%s", w ? "" : why);
  s->xid_seconds = seconds;
  gs_nvml_xid seen[GS_HEALTH_MAX_XIDS];
  for (;;) {
    size_t n = gs_nvml_xid_watch_collect(w, seen, GS_HEALTH_MAX_XIDS);
    for (size_t i = 0; i < n; i++, s->xid_count++) {
      if (s->xid_count >= GS_HEALTH_MAX_XIDS) continue;
      gs_health_xid *x = &s->xids[s->xid_count];
      snprintf(x->pci_bus_id, sizeof x->pci_bus_id, "%s", seen[i].pci_bus_id);
      x->xid = seen[i].xid;
    }
    if (n < GS_HEALTH_MAX_XIDS) break;
  }
}

/* Level 2: each GPU's NVLink error counters read again after the load,
 * with the seconds since the first read (the window of their rates). */
static void reread_links(gs_node_state *s, gs_nvml *nvml) {
  gs_gpu_health *after = malloc(sizeof *after);
  if (!after) return;  // the counters during the load stay unknown
  for (size_t i = 0; i < s->gpu_count; i++) {
    gs_gpu_health *h = &s->gpus[i];
    const double at = gs_time_seconds();
    if (!gs_nvml_health_get(nvml, h->pci_bus_id, after)) continue;
    h->has_link_errors_after = 1;
    h->link_errors_seconds = at - h->read_at;
    memcpy(h->link_errors_after, after->link_errors, sizeof h->link_errors_after);
  }
  free(after);
}

static void *collect_thread(void *arg) {
  collect_job *job = arg;
  // XID events are watched on a handle of their own, from before the
  // first read to after the last check (NVML counts its initialisations).
  char why[GS_TEXT_LONG] = "";
  const double t0 = gs_time_seconds();
  gs_nvml *nvml = gs_nvml_open(why, sizeof why);
  gs_nvml_xid_watch *watch = nvml ? gs_nvml_xid_watch_start(nvml, why, sizeof why) : NULL;
  gs_status st = gs_check_state_collect(&job->state);
  if (st == GS_OK && job->stress)
    st = gs_check_stress_run(&job->stress_options, &job->state.stress, set_phase);
  if (st == GS_OK && job->burn) {
    set_phase(PHASE_BURN);
    st = gs_check_burn_run(&job->burn_options, &job->state.burn);
  }
  // The counters' change under load is level 2's (level 1's load is
  // too short to tell a rate).
  if (st == GS_OK && job->stress && !job->stress_options.short_run)
    reread_links(&job->state, nvml);
  if (st == GS_OK) take_xids(&job->state, watch, why, gs_time_seconds() - t0);
  gs_nvml_xid_watch_stop(watch);
  gs_nvml_close(nvml);
  pthread_mutex_lock(&job->lock);
  job->st = st;
  if (st != GS_OK) snprintf(job->error, sizeof job->error, "%s", gs_last_error());
  job->done = 1;
  const int abandoned = job->abandoned;
  pthread_cond_signal(&job->done_cv);
  pthread_mutex_unlock(&job->lock);
  if (abandoned) job_free(job);
  return NULL;
}

gs_status gs_check_state_collect_within(gs_node_state *state, double budget_s,
                                        const gs_check_stress_options *stress,
                                        const gs_check_burn_options *burn) {
  memset(state, 0, sizeof *state);
  state->budget_s = budget_s;
  collect_job *job = calloc(1, sizeof *job);
  if (!job) return gs_error(GS_ERR_NOMEM, "cannot allocate the check");
  if (stress) {
    job->stress = 1;
    job->stress_options = *stress;
  }
  if (burn) {
    job->burn = 1;
    job->burn_options = *burn;
  }
  pthread_mutex_init(&job->lock, NULL);
  pthread_cond_init(&job->done_cv, NULL);
  atomic_store(&read_phase, PHASE_CUDA);
  pthread_t thread;
  int rc = pthread_create(&thread, NULL, collect_thread, job);
  if (rc != 0) {
    job_free(job);
    return gs_error_system(rc, "cannot start the check's reading thread");
  }
  struct timespec until;
  gs_time_deadline(budget_s, &until);
  pthread_mutex_lock(&job->lock);
  int waited = 0;
  while (!job->done && waited != ETIMEDOUT)
    waited = pthread_cond_timedwait(&job->done_cv, &job->lock, &until);
  if (!job->done) {
    // Hung inside CUDA or NVML: say where, and leave the thread its job.
    job->abandoned = 1;
    pthread_mutex_unlock(&job->lock);
    pthread_detach(thread);
    const int phase = atomic_load(&read_phase);
    if (phase == PHASE_CUDA)
      snprintf(state->hung, sizeof state->hung, "CUDA (the device count)");
    else if (phase == PHASE_NVML)
      snprintf(state->hung, sizeof state->hung, "NVML (its initialisation)");
    else if (phase == PHASE_HOST)
      snprintf(state->hung, sizeof state->hung, "the host-GPU copies (level 2)");
    else if (phase == PHASE_WORKLOADS)
      snprintf(state->hung, sizeof state->hung, "the workloads' throughput (level 2)");
    else if (phase == PHASE_ALLREDUCE)
      snprintf(state->hung, sizeof state->hung, "the all-reduce");
    else if (phase == PHASE_BURN)
      snprintf(state->hung, sizeof state->hung, "the burn-in (level 3)");
    else if (phase == PHASE_P2P)
      snprintf(state->hung, sizeof state->hung, "the GPU pairs' copies");
    else if (phase >= PHASE_TRIAD)
      snprintf(state->hung, sizeof state->hung, "CUDA device %d's triad (level 2)",
               phase - PHASE_TRIAD);
    else
      snprintf(state->hung, sizeof state->hung, "GPU %d", phase);
    return GS_OK;
  }
  pthread_mutex_unlock(&job->lock);
  pthread_join(thread, NULL);
  gs_status st = job->st;
  if (st == GS_OK) {
    *state = job->state;
    memset(&job->state, 0, sizeof job->state);
    state->budget_s = budget_s;
  } else {
    gs_error(st, "%s", job->error);
  }
  job_free(job);
  return st;
}

#define MODELS_FILE "gpu-models.json"

/* The directory of the running binary into dir ("" when unknown). */
static void binary_dir(char *dir, size_t size) {
  dir[0] = '\0';
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash) return;
  *slash = '\0';
  snprintf(dir, size, "%s", exe[0] ? exe : "/");
}

gs_status gs_check_models_shipped(gs_gpu_models *models, int *found, char *why, size_t why_size) {
  memset(models, 0, sizeof *models);
  *found = 0;
  char candidates[3][4096];
  size_t n = 0;
  const char *env = getenv("GPUSCALE_DATA_DIR");
  if (env && *env) snprintf(candidates[n++], sizeof candidates[0], "%s/" MODELS_FILE, env);
  char dir[3900] = "";
  if (!(env && *env)) binary_dir(dir, sizeof dir);
  if (dir[0]) {
    snprintf(candidates[n++], sizeof candidates[0], "%s/share/gpuscale/" MODELS_FILE, dir);
    snprintf(candidates[n++], sizeof candidates[0], "%s/../share/gpuscale/" MODELS_FILE, dir);
  }
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(candidates[i], &st) != 0) continue;
    GS_TRY(gs_gpu_models_load(candidates[i], models));
    *found = 1;
    return GS_OK;
  }
  if (why && why_size)
    snprintf(why, why_size, "%s not found in %s", MODELS_FILE,
             env && *env ? "$GPUSCALE_DATA_DIR" : "share/gpuscale/ beside the binary or above it");
  return GS_OK;
}

/* A count, or null when not reported. */
static void put_count(gs_json_build *b, cJSON *o, const char *name, int known,
                      unsigned long long v) {
  if (known)
    gs_json_put_u64(b, o, name, v);
  else
    gs_json_put_null(b, o, name);
}

static void put_flag(gs_json_build *b, cJSON *o, const char *name, int known, int v) {
  gs_json_put_bool_or_null(b, o, name, known ? (v != 0) : -1);
}

static void gpu_json(gs_json_build *b, cJSON *g, const gs_gpu_health *h) {
  gs_json_put_number(b, g, "index", h->index);
  gs_json_put_string(b, g, "pci_bus_id", h->pci_bus_id);
  gs_json_put_string_or_null(b, g, "name", h->name);
  gs_json_put_string_or_null(b, g, "uuid", h->uuid);
  cJSON *ecc = gs_json_put_object(b, g, "ecc");
  put_count(b, ecc, "volatile_corrected", h->has_ecc_volatile, h->ecc_volatile_corrected);
  put_count(b, ecc, "volatile_uncorrected", h->has_ecc_volatile, h->ecc_volatile_uncorrected);
  put_count(b, ecc, "aggregate_corrected", h->has_ecc_aggregate, h->ecc_aggregate_corrected);
  put_count(b, ecc, "aggregate_uncorrected", h->has_ecc_aggregate, h->ecc_aggregate_uncorrected);
  cJSON *ret = gs_json_put_object(b, g, "retired_pages");
  put_count(b, ret, "single_bit", h->has_retired_pages, h->retired_sbe);
  put_count(b, ret, "double_bit", h->has_retired_pages, h->retired_dbe);
  put_flag(b, ret, "pending", h->has_retired_pending, h->retired_pending);
  cJSON *remap = gs_json_put_object(b, g, "row_remap");
  put_count(b, remap, "uncorrectable_rows", h->has_remap, h->remap_uncorrected);
  put_count(b, remap, "correctable_rows", h->has_remap, h->remap_corrected);
  put_flag(b, remap, "pending", h->has_remap, h->remap_pending);
  put_flag(b, remap, "failed", h->has_remap, h->remap_failed);
  cJSON *links = gs_json_put_array(b, g, "nvlink");
  for (size_t l = 0; links && l < h->port_count; l++) {
    if (!h->port_present[l]) continue;
    const gs_health_link_errors *e = &h->link_errors[l];
    cJSON *o = gs_json_check(b, cJSON_CreateObject());
    if (!o) break;
    gs_json_put_number(b, o, "link", (double)l);
    gs_json_put_bool(b, o, "up", h->link_up[l]);
    put_count(b, o, "replay", e->has_counters, e->replay);
    put_count(b, o, "recovery", e->has_counters, e->recovery);
    put_count(b, o, "crc_flit", e->has_counters, e->crc_flit);
    put_count(b, o, "crc_data", e->has_counters, e->crc_data);
    gs_json_append(b, links, o);
  }
  cJSON *pcie = gs_json_put_object(b, g, "pcie");
  put_count(b, pcie, "generation", h->has_pcie, h->pcie_gen);
  put_count(b, pcie, "width", h->has_pcie, h->pcie_width);
  put_count(b, pcie, "max_generation", h->has_pcie, h->pcie_gen_max);
  put_count(b, pcie, "max_width", h->has_pcie, h->pcie_width_max);
  put_count(b, g, "clock_event_reasons", h->has_clock_events, h->clock_events);
  put_count(b, g, "memory_total_bytes", h->has_memory_total, h->memory_total_bytes);
  if (h->has_power_limit)
    gs_json_put_number(b, g, "power_limit_w", h->power_limit_mw / 1000.0);
  else
    gs_json_put_null(b, g, "power_limit_w");
  put_count(b, g, "max_sm_clock_mhz", h->has_max_clocks, h->max_sm_clock_mhz);
  put_count(b, g, "max_memory_clock_mhz", h->has_max_clocks, h->max_memory_clock_mhz);
  gs_json_put_number(b, g, "read_seconds", h->read_seconds);
  if (!h->has_clock_events) {
    gs_json_put_null(b, g, "clock_event_names");
    return;
  }
  cJSON *names = gs_json_put_array(b, g, "clock_event_names");
  for (unsigned bit = 0; names && bit < 64; bit++) {
    unsigned long long mask = 1ull << bit;
    if (!(h->clock_events & mask)) continue;
    const char *name = gs_nvml_throttle_name(mask);
    gs_json_append_string(b, names, name ? name : "undocumented");
  }
}

cJSON *gs_check_state_json(const gs_node_state *s) {
  gs_json_build build = {0}, *b = &build;
  cJSON *gpus = gs_json_check(b, cJSON_CreateArray());
  for (size_t i = 0; gpus && i < s->gpu_count && !b->failed; i++) {
    cJSON *g = gs_json_check(b, cJSON_CreateObject());
    if (g) gpu_json(b, g, &s->gpus[i]);
    gs_json_append(b, gpus, g);
  }
  if (b->failed) {
    cJSON_Delete(gpus);
    return NULL;
  }
  return gpus;
}
