/* The measuring driver shared by run, scale and suite. */
#include "cli/measure.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/split.h"
#include "cli/decide.h"
#include "cli/llm_driver.h"
#include "cli/summary.h"
#include "core/check.h"
#include "core/interrupt.h"
#include "core/process.h"
#include "core/timer.h"
#include "platform/telemetry.h"
#include "workloads/llm/llm_options.h"

/* Timed iterations of the calibration run of a proportional split. */
#define GS_SPLIT_CALIBRATION_ITERS 20

/* Where this process runs: host, device and its library versions. */
static gs_status describe_place(gs_rank_place *place, int local_rank, int device) {
  memset(place, 0, sizeof *place);
  gs_environment env;
  GS_TRY(gs_common_environment(&env));
  snprintf(place->host, sizeof place->host, "%s", gs_hostname());
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

/* The environment member "processes" (mpi mode): where every process ran. */
static gs_status add_processes(cJSON *doc, const gs_measure_job *mj) {
  cJSON *env = cJSON_GetObjectItemCaseSensitive(doc, "environment");
  cJSON *list = env ? cJSON_AddArrayToObject(env, "processes") : NULL;
  if (!list) return gs_error(GS_ERR_NOMEM, "cannot describe the processes");
  for (int k = 0; k < mj->job.process_count; k++) {
    const gs_rank_place *p = &mj->places[k];
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(list, o)) {
      cJSON_Delete(o);
      return gs_error(GS_ERR_NOMEM, "cannot describe the processes");
    }
    cJSON_AddNumberToObject(o, "rank", k);
    cJSON_AddStringToObject(o, "host", p->host);
    cJSON_AddNumberToObject(o, "local_rank", p->local_rank);
    cJSON_AddNumberToObject(o, "pid", p->pid);
    if (p->device >= 0) {
      cJSON_AddNumberToObject(o, "device", p->device);
      cJSON_AddStringToObject(o, "gpu_name", p->gpu_name);
      cJSON_AddStringToObject(o, "gpu_uuid", p->gpu_uuid);
    } else {
      cJSON_AddNullToObject(o, "device");
    }
    cJSON_AddNumberToObject(o, "cuda_driver_version", p->cuda_driver_version);
    cJSON_AddNumberToObject(o, "cuda_runtime_version", p->cuda_runtime_version);
    if (p->nccl_version[0])
      cJSON_AddStringToObject(o, "nccl_version", p->nccl_version);
    else
      cJSON_AddNullToObject(o, "nccl_version");
  }
  cJSON *launch = cJSON_AddObjectToObject(env, "launch");
  if (!launch || !cJSON_AddStringToObject(launch, "mode", "mpi") ||
      !cJSON_AddStringToObject(launch, "launcher", mj->job.launcher) ||
      !cJSON_AddNumberToObject(launch, "processes", mj->job.process_count))
    return gs_error(GS_ERR_NOMEM, "cannot describe the launch");
  return GS_OK;
}

gs_status gs_measure_job_start(gs_measure_job *mj, gs_common_options *common, int default_all,
                               gs_run_config *config) {
  memset(mj, 0, sizeof *mj);
  gs_comm_job_detect(&mj->job);
  gs_interrupt_install();
  GS_TRY(gs_comm_job_start(&mj->job));
  int local_ranks = 0, local_devices[GS_MAX_RANKS];
  GS_TRY(gs_common_choose_ranks(common, default_all, &mj->job, config, &local_ranks, local_devices));
  if (mj->job.launch != GS_COMM_LAUNCH_MPI) return GS_OK;
  gs_comm_world_config wc = {.backend = GS_BACKEND_CPU, .local_ranks = 1,
                             .timeout_seconds = config->comm_timeout_seconds};
  GS_TRY(gs_comm_world_create(&mj->job, &wc, &mj->control));
  gs_rank_place mine;
  GS_TRY(describe_place(&mine, mj->job.local_rank, local_devices[0]));
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

/* After a broken job: the process that writes the document, the lowest
 * live process on process 0's host (process 0 may be the rank that was
 * lost; every process holds every rank's records), or -1 when none is. */
static int writer_process(const gs_measure_job *mj) {
  const gs_rank_place *first = &mj->places[0];
  const int me = mj->job.process_rank;
  for (int k = 0; k < mj->job.process_count; k++) {
    if (strcmp(mj->places[k].host, first->host) != 0) continue;
    if (k == me || gs_process_alive(mj->places[k].pid)) return k;
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
  gs_comm_job_finish(&mj->job);
  return status;
}

/* Failures after which the processes of a job cannot go on together. */
static int loses_the_job(gs_status status) {
  return status == GS_ERR_RANK_LOST || status == GS_ERR_TIMEOUT ||
         status == GS_ERR_INTERRUPTED || status == GS_ERR_MPI;
}

/* Failures of a rank (not of the request): what was measured is kept and
 * the run is reported as partial. */
static int is_rank_failure(gs_status status) {
  return loses_the_job(status) || status == GS_ERR_ABORTED || status == GS_ERR_CUDA ||
         status == GS_ERR_NCCL;
}

void gs_measure_default_counts(int n, gs_u64_list *counts) {
  counts->n = 0;
  for (int c = 1; c < n && counts->n < GS_LIST_MAX - 1; c *= 2) counts->v[counts->n++] = (uint64_t)c;
  counts->v[counts->n++] = (uint64_t)n;
}

/* Adds each measurement's telemetry to its entry of "measurements". */
static gs_status add_telemetry(cJSON *doc, const gs_telemetry *tm, size_t count) {
  cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
  size_t i = 0;
  cJSON *m = NULL;
  cJSON_ArrayForEach(m, list) {
    if (i >= count) break;
    cJSON *item = gs_telemetry_to_json(&tm[i++]);
    if (!item || !cJSON_AddItemToObject(m, "telemetry", item)) {
      cJSON_Delete(item);
      return gs_error(GS_ERR_NOMEM, "out of memory adding telemetry to the result document");
    }
  }
  return GS_OK;
}

static gs_status write_document(const gs_sweep *sw, const gs_measurement *ms,
                                const gs_telemetry *tm, size_t count) {
  cJSON *doc = gs_result_new(sw->command, sw->argc, sw->argv);
  if (!doc) return gs_error(GS_ERR_NOMEM, "cannot create the result document");
  gs_status status = gs_result_set_config(
      doc, gs_common_config_json(sw->common, sw->config, sw->workload, sw->workload_opts));
  if (status == GS_OK) status = gs_result_set_environment(doc, sw->env);
  if (status == GS_OK && sw->job && sw->job->control) status = add_processes(doc, sw->job);
  for (size_t i = 0; i < count && status == GS_OK; i++) {
    status = gs_result_add_measurement(doc, &ms[i]);
    if (status == GS_OK && sw->driver && sw->driver->annotate) {
      cJSON *all = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
      status = sw->driver->annotate(sw->driver->ctx,
                                    cJSON_GetArrayItem(all, cJSON_GetArraySize(all) - 1), i);
    }
  }
  if (status == GS_OK) status = add_telemetry(doc, tm, count);
  if (status == GS_OK) status = gs_common_write_result(doc, ms, count, sw->path);
  cJSON_Delete(doc);
  return status;
}

static void summary_title(const gs_sweep *sw, char *buf, size_t size) {
  cJSON *opts = sw->workload->options_to_json(sw->workload_opts);
  char *text = opts ? cJSON_PrintUnformatted(opts) : NULL;
  snprintf(buf, size, "%s %s", sw->workload->key, text ? text : "");
  free(text);
  cJSON_Delete(opts);
}

/* Starts telemetry on the GPUs of `config` (none on the CPU backend). */
static gs_status telemetry_begin(const gs_sweep *sw, const gs_run_config *config,
                                 gs_telemetry *tm) {
  int cuda = config->backend == GS_BACKEND_CUDA;
  size_t n = cuda ? (size_t)config->world_size : 0;
  GS_TRY(gs_telemetry_init(tm, n, sw->common->telemetry_interval, sw->common->telemetry_series));
  if (!cuda) {
    gs_telemetry_set_unavailable(tm, "CPU backend: no GPU to sample");
    return GS_OK;
  }
  const char *bus_ids[GS_MAX_RANKS];
  for (size_t k = 0; k < n; k++) {
    int d = config->devices[k];
    bus_ids[k] = d >= 0 && (size_t)d < sw->env->gpu_count ? sw->env->gpus[d].pci_bus_id : "";
  }
  if (config->control) {
    // One rank per process: the writing process samples the GPUs of the
    // ranks on its own host (found by UUID); other hosts' ranks get none.
    if (!gs_measure_job_writes(sw->job)) {
      gs_telemetry_set_unavailable(tm, "sampled by the process that writes the document");
      return GS_OK;
    }
    for (size_t k = 0; k < n; k++) {
      const gs_rank_place *p = &config->places[k];
      bus_ids[k] = "";
      for (size_t g = 0; g < sw->env->gpu_count && strcmp(p->host, sw->env->host) == 0; g++)
        if (strcmp(sw->env->gpus[g].uuid, p->gpu_uuid) == 0) bus_ids[k] = sw->env->gpus[g].pci_bus_id;
    }
  }
  return gs_telemetry_start(tm, config->devices, bus_ids);
}

/* Measurement `index` of the sweep, by the runner or the workload's own
 * driver, with telemetry around it. Sampling covers the whole measurement
 * (setup, warmup, timing, checks); telemetry that cannot start is recorded
 * as unavailable, not a failure. */
static gs_status measure_one(const gs_sweep *sw, const gs_run_config *config, size_t index,
                             gs_measurement *m, gs_telemetry *tm) {
  if (telemetry_begin(sw, config, tm) != GS_OK)
    gs_telemetry_set_unavailable(tm, "sampler did not start: %s", gs_last_error());
  gs_status status = sw->driver ? sw->driver->measure(sw->driver->ctx, config, index, m)
                                : gs_runner_measure(sw->workload, sw->workload_opts, config, m);
  gs_telemetry_stop(tm);
  return status;
}

/* Records the split of a measurement as its "split" member. */
static gs_status record_split(gs_measurement *m, const char *policy, const uint64_t *units,
                              const double *rates, int ranks) {
  if (!m->extra && !(m->extra = cJSON_CreateObject()))
    return gs_error(GS_ERR_NOMEM, "cannot record the split");
  cJSON *split = cJSON_AddObjectToObject(m->extra, "split");
  cJSON *u = split ? cJSON_AddArrayToObject(split, "units") : NULL;
  cJSON *r = split ? cJSON_AddArrayToObject(split, "calibration_items_per_second") : NULL;
  if (!split || !u || !r || !cJSON_AddStringToObject(split, "policy", policy))
    return gs_error(GS_ERR_NOMEM, "cannot record the split");
  for (int k = 0; k < ranks; k++) {
    cJSON_AddItemToArray(u, cJSON_CreateNumber((double)units[k]));
    cJSON_AddItemToArray(r, cJSON_CreateNumber(rates[k]));
  }
  return GS_OK;
}

/* Proportional split at config->world_size ranks: calibrates each rank,
 * then measures the even split and the proportional one into ms[0], ms[1]
 * (measurements `index` and `index` + 1 of the sweep) with their telemetry
 * in tm[0], tm[1] (*measured receives how many were filled). */
static gs_status measure_split(const gs_sweep *sw, const gs_run_config *config, size_t index,
                               gs_measurement *ms, gs_telemetry *tm, size_t *measured) {
  *measured = 0;
  const int n = config->world_size;
  double rates[GS_MAX_RANKS];
  uint64_t even[GS_MAX_RANKS], proportional[GS_MAX_RANKS];
  GS_TRY(gs_split_calibrate(sw->workload, sw->workload_opts, config, GS_SPLIT_CALIBRATION_ITERS,
                            rates));
  const uint64_t units = sw->workload->work_units(sw->workload_opts);
  gs_split_even(units, n, even);
  GS_TRY(gs_split_proportional(units, n, rates, proportional));
  gs_status first_failure = GS_OK;
  for (int p = 0; p < 2; p++) {
    gs_run_config c = *config;
    c.unit_counts = p == 0 ? even : proportional;
    gs_status status = measure_one(sw, &c, index + (size_t)p, &ms[p], &tm[p]);
    *measured = (size_t)p + 1;
    gs_status recorded = record_split(&ms[p], p == 0 ? "even" : "proportional", c.unit_counts,
                                      rates, n);
    if (status == GS_OK) status = recorded;
    if (status != GS_OK && first_failure == GS_OK) first_failure = status;
  }
  return first_failure;
}

/* One line per proportional measurement: both splits' throughput and the
 * gain of proportional over even. */
static void print_split_gains(FILE *out, const gs_measurement *ms, size_t count) {
  for (size_t i = 0; i + 1 < count; i++) {
    const cJSON *even = cJSON_GetObjectItemCaseSensitive(ms[i].extra, "split");
    const cJSON *prop = cJSON_GetObjectItemCaseSensitive(ms[i + 1].extra, "split");
    const cJSON *units = cJSON_GetObjectItemCaseSensitive(prop, "units");
    if (!even || !prop || !cJSON_IsArray(units)) continue;
    char rate_even[32], rate_prop[32], list[GS_TEXT_LONG] = "";
    gs_format_rate(ms[i].aggregate.throughput, rate_even, sizeof rate_even);
    gs_format_rate(ms[i + 1].aggregate.throughput, rate_prop, sizeof rate_prop);
    size_t at = 0;
    for (const cJSON *u = units->child; u && at < sizeof list; u = u->next)
      at += (size_t)snprintf(list + at, sizeof list - at, "%s%.0f", u == units->child ? "" : ",",
                             u->valuedouble);
    const double gain = ms[i].aggregate.throughput > 0.0
                            ? ms[i + 1].aggregate.throughput / ms[i].aggregate.throughput
                            : 0.0;
    fprintf(out, "  split at %d ranks: even %s/s, proportional (units %s) %s/s: gain %.2fx\n",
            ms[i].world_size, rate_even, list, rate_prop, gain);
  }
}

/* Variants of the workload's options (1 when it has none). */
static size_t variant_total(const gs_sweep *sw) {
  const gs_workload *w = sw->workload;
  size_t n = w->variant_count ? w->variant_count(sw->workload_opts) : 0;
  return n > 0 ? n : 1;
}

/* Summary, telemetry and split lines of one variant's measurements. */
static void print_group(FILE *out, const gs_sweep *sw, const gs_measurement *ms,
                        const gs_telemetry *tm, size_t count) {
  char title[2 * GS_TEXT_LONG];
  summary_title(sw, title, sizeof title);
  gs_summary_print(out, title, ms, count, sw->env);
  gs_summary_print_telemetry(out, ms, tm, count);
  print_split_gains(out, ms, count);
}

static gs_status sweep_counts(const gs_sweep *sw, const gs_u64_list *counts) {
  const size_t variants = variant_total(sw);
  // A proportional split measures two splits per rank count.
  const size_t total = 2 * variants * counts->n;
  gs_measurement *ms = calloc(total, sizeof *ms);
  gs_telemetry *tm = calloc(total, sizeof *tm);
  if (!ms || !tm) {
    free(ms);
    free(tm);
    return gs_error(GS_ERR_NOMEM, "cannot allocate %zu measurements", total);
  }
  gs_status first_failure = GS_OK;
  size_t done = 0;
  int stop = 0;
  for (size_t v = 0; v < variants && !stop; v++) {
    char variant[GS_TEXT_SHORT] = "";
    // The options are the caller's; selecting a variant rewrites them in place.
    if (sw->workload->variant_select)
      sw->workload->variant_select((void *)sw->workload_opts, v, variant, sizeof variant);
    const size_t group = done;
    for (size_t i = 0; i < counts->n && !stop; i++) {
      gs_run_config config = *sw->config;
      config.world_size = (int)counts->v[i];
      char label[GS_TEXT_LONG];
      snprintf(label, sizeof label, "%s%s%s on %d %s", sw->workload->key, variant[0] ? " " : "",
               variant, config.world_size,
               config.backend == GS_BACKEND_CUDA
                   ? (config.world_size == 1 ? "GPU" : "GPUs")
                   : (config.world_size == 1 ? "CPU rank" : "CPU ranks"));
      config.label = label;
      const size_t first = done;
      gs_status status;
      if (config.split_proportional && config.world_size > 1) {
        size_t measured = 0;
        status = measure_split(sw, &config, done, &ms[done], &tm[done], &measured);
        done += measured;
      } else {
        status = measure_one(sw, &config, done, &ms[done], &tm[done]);
        done++;
      }
      for (size_t k = first; k < done; k++)
        snprintf(ms[k].variant, sizeof ms[k].variant, "%s", variant);
      if (status != GS_OK && first_failure == GS_OK) first_failure = status;
      // A lost rank ends the job: no later measurement can run in lockstep.
      const int lost = sw->job && sw->job->control && loses_the_job(status);
      if (lost) sw->job->broken = 1;
      if (status == GS_ERR_USAGE || status == GS_ERR_INTERRUPTED || lost) stop = 1;
      // Under a launcher only one process writes documents and prints
      // (process 0, or its stand-in once it is lost); every process measures.
      if (!gs_measure_job_writes(sw->job)) continue;
      gs_runner_relate(ms + group, done - group);
      // Written after every measurement: a later crash keeps what was measured.
      gs_status written = write_document(sw, ms, tm, done);
      if (written != GS_OK && first_failure == GS_OK) first_failure = written;
      if (written != GS_OK) stop = 1;
    }
    if (gs_measure_job_writes(sw->job)) {
      print_group(stdout, sw, ms + group, tm + group, done - group);
      if (sw->summary_copy) print_group(sw->summary_copy, sw, ms + group, tm + group, done - group);
    }
  }
  const int writes = gs_measure_job_writes(sw->job);
  if (is_rank_failure(first_failure) && done > 0 && writes) first_failure = GS_ERR_PARTIAL;
  if (writes) {
    if (sw->driver && sw->driver->print) sw->driver->print(sw->driver->ctx, stdout, done);
    gs_decision_table_print(stdout, ms, done);
    if (sw->summary_copy) gs_decision_table_print(sw->summary_copy, ms, done);
  }
  for (size_t i = 0; i < done; i++) {
    gs_measurement_free(&ms[i]);
    gs_telemetry_free(&tm[i]);
  }
  free(ms);
  free(tm);
  return first_failure;
}

gs_status gs_measure_llm_defaults(const gs_common_options *common, gs_run_config *config,
                                  void *wopts) {
  GS_TRY(gs_llm_options_for_backend(wopts, config->backend));
  if (!common->given_runs) config->runs = 1;
  if (!common->given_warmup) config->warmup = 1;
  return GS_OK;
}

gs_status gs_measure_sweep(const gs_sweep *sw, const gs_u64_list *counts) {
  if (sw->workload != &gs_workload_llm || sw->driver) return sweep_counts(sw, counts);
  // A tensor-parallel replica needs --tp GPUs: only whole replicas are measured.
  const uint64_t tp = ((const gs_llm_options *)sw->workload_opts)->tp;
  gs_u64_list whole = {0};
  for (size_t i = 0; i < counts->n; i++)
    if (counts->v[i] % tp == 0) whole.v[whole.n++] = counts->v[i];
  if (whole.n == 0)
    return gs_error(GS_ERR_USAGE,
                    "option --tp %llu: a replica needs %llu %s, and no measured size (largest "
                    "%llu) is a multiple of that",
                    (unsigned long long)tp, (unsigned long long)tp,
                    sw->config->backend == GS_BACKEND_CUDA ? "GPUs" : "ranks",
                    (unsigned long long)counts->v[counts->n - 1]);
  if (whole.n < counts->n)
    gs_note("llm --tp %llu: measuring only the sizes that are whole replicas (multiples of %llu)",
            (unsigned long long)tp, (unsigned long long)tp);
  // The llm runs request streams through its own driver (cli/llm_driver.c).
  gs_llm_driver llm;
  GS_TRY(gs_llm_driver_init(&llm, sw->workload_opts, sw->env, whole.n));
  gs_sweep with_driver = *sw;
  with_driver.driver = &llm.hooks;
  gs_status status = sweep_counts(&with_driver, &whole);
  gs_llm_driver_free(&llm);
  return status;
}

static void print_measure_help(const char *command, unsigned features, const gs_workload *w,
                               void *wopts, gs_common_options *common) {
  printf("usage: gpuscale %s WORKLOAD [options]\n\n", command);
  if (strcmp(command, "run") == 0)
    printf("Measures one workload on the chosen GPUs (or CPU ranks) and writes a result file.\n");
  else
    printf("Measures one workload at 1, 2, 4, ... ranks (strong or weak scaling) into one\n"
           "result file and prints speedup and parallel efficiency against 1 rank.\n");
  printf("\nWorkloads:\n");
  size_t n = 0;
  const gs_workload *const *all = gs_workload_list(&n);
  for (size_t i = 0; i < n; i++) printf("  %-12s %s\n", all[i]->key, all[i]->summary);
  printf("  %-12s %s\n", gs_workload_llm.key, gs_workload_llm.summary);
  printf("\nCommon options:\n");
  gs_common_init(common, features);
  if (w == &gs_workload_llm) {
    // The llm's own defaults (cmd_measure.c): one run, one warm-up batch.
    common->runs = 1;
    common->warmup = 1;
  }
  gs_options_help(stdout, common->table);
  if (w) {
    printf("\nOptions of %s:\n", w->key);
    gs_options_help(stdout, w->options_table(wopts));
  } else {
    printf("\n'gpuscale %s WORKLOAD --help' lists the workload's own options.\n", command);
  }
}

static gs_status reject_positional(void *ctx, const char *arg) {
  return gs_error(GS_ERR_USAGE, "gpuscale %s: unexpected argument '%s'", (const char *)ctx, arg);
}

gs_status gs_measure_parse(const char *command, unsigned features, int argc, char **argv,
                           gs_common_options *common, const gs_workload **workload,
                           void **wopts, int *help_shown) {
  *workload = NULL;
  *wopts = NULL;
  *help_shown = 0;
  gs_common_init(common, features);
  const gs_workload *w = NULL;
  if (argc > 0 && argv[0][0] != '-') {
    w = gs_workload_find(argv[0]);
    if (!w && strcmp(argv[0], gs_workload_llm.key) == 0) w = &gs_workload_llm;
    if (!w) {
      size_t n = 0;
      const gs_workload *const *all = gs_workload_list(&n);
      char names[GS_TEXT_LONG] = "";
      size_t at = 0;
      for (size_t i = 0; i < n && at < sizeof names; i++)
        at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "", all[i]->key);
      return gs_error(GS_ERR_USAGE, "gpuscale %s: unknown workload '%s' (one of: %s)", command,
                      argv[0], names);
    }
  }
  void *opts = w ? w->options_new() : NULL;
  if (w && !opts) return gs_error(GS_ERR_NOMEM, "cannot allocate the options of %s", w->key);
  if (gs_cli_wants_help(argc, argv)) {
    print_measure_help(command, features, w, opts, common);
    if (w) w->options_free(opts);
    *help_shown = 1;
    return GS_OK;
  }
  if (!w) {
    return gs_error(GS_ERR_USAGE, "gpuscale %s: missing WORKLOAD (see 'gpuscale %s --help')",
                    command, command);
  }
  char name[GS_TEXT_SHORT * 2];
  snprintf(name, sizeof name, "gpuscale %s %s", command, w->key);
  const gs_option *tables[] = {common->table, w->options_table(opts), NULL};
  gs_status status = gs_options_parse(tables, name, argc - 1, argv + 1, reject_positional,
                                      (void *)command);
  if (status == GS_OK) status = w->options_check(opts);
  if (status != GS_OK) {
    w->options_free(opts);
    return status;
  }
  gs_set_quiet(common->quiet);
  *workload = w;
  *wopts = opts;
  return GS_OK;
}
