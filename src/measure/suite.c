/* The standard set of `gpuscale suite` (see suite.h): the machine, every
 * workload, the links and the collectives into one results directory. */
#include "measure/suite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/interrupt.h"
#include "measure/info.h"

/* Lists `path` among the suite's documents. */
static gs_status add_file(gs_suite *s, const char *path) {
  char **grown = realloc(s->files, (s->n_files + 1) * sizeof *grown);
  if (!grown) return gs_error(GS_ERR_NOMEM, "cannot list %zu result files", s->n_files + 1);
  s->files = grown;
  s->files[s->n_files] = strdup(path);
  if (!s->files[s->n_files]) return gs_error(GS_ERR_NOMEM, "cannot list the result file %s", path);
  s->n_files++;
  return GS_OK;
}

/* A file as it was before a part of the suite ran (exists: 0 when absent). */
typedef struct {
  int exists;
  struct stat st;
} file_before;

static file_before before_part(const char *path) {
  file_before b;
  b.exists = stat(path, &b.st) == 0;
  return b;
}

/* Lists `path` when the part that wrote it left a document there (a
 * failed part may still have written what it measured): a new file, or
 * another one than `before` (documents are renamed into place). An earlier
 * suite's file that this run left alone is not its own. */
static gs_status add_file_if_written(gs_suite *s, const char *path, const file_before *before) {
  struct stat now;
  if (stat(path, &now) != 0) return GS_OK;
  const int same = before->exists && now.st_ino == before->st.st_ino &&
                   now.st_dev == before->st.st_dev &&
                   now.st_mtim.tv_sec == before->st.st_mtim.tv_sec &&
                   now.st_mtim.tv_nsec == before->st.st_mtim.tv_nsec;
  return same ? GS_OK : add_file(s, path);
}

/* Keeps the first failure in *first and its error in *kept, prefixed with
 * the part of the suite it came from, so that the message says where the
 * suite was. */
static void keep_first_of(gs_status *first, gs_error_kept *kept, gs_status status,
                          const char *part) {
  if (status != GS_OK && *first == GS_OK)
    gs_error_keep_first(gs_error(status, "suite step %s: %s", part, gs_last_error()), first, kept);
}

/* info.json: the machine, as 'gpuscale info --format json'. */
static gs_status write_info(const char *path) {
  gs_machine_info info;
  cJSON *doc = NULL;
  gs_status status = gs_machine_info_collect(&info);
  if (status == GS_OK) status = gs_machine_info_document(&info, "json", &doc);
  if (status == GS_OK) status = gs_result_write(doc, path);
  cJSON_Delete(doc);
  gs_machine_info_free(&info);
  return status;
}

/* Every registered workload swept over the suite's counts with its default
 * options into DIR/KEY.json. Stops after a lost rank or a partial sweep. */
static gs_status measure_workloads(gs_suite *s, const gs_sweep_observer *printer) {
  gs_status first_failure = GS_OK;
  gs_error_kept first_error = {""};  // later failures do not replace its text
  size_t n = 0;
  const gs_workload *const *registered = gs_workload_list(&n);
  for (size_t i = 0; i < n; i++) {
    const gs_workload *w = registered[i];
    void *wopts = w->options_new();
    if (!wopts) {
      gs_status failed = gs_error(GS_ERR_NOMEM, "cannot allocate the options of %s", w->key);
      gs_error_keep_first(failed, &first_failure, &first_error);
      break;
    }
    gs_run_config wconfig = s->config;
    // --iters and --min-time set the steps of the fixed-step workloads; a
    // workload with its own timing loop measures as it would without them.
    gs_common_options wcommon = *s->common;
    wcommon.given_iters = wcommon.given_min_time = 0;
    gs_status status = gs_common_configure(&wcommon, w, wopts, &wconfig);
    char path[GS_TEXT_LONG];
    snprintf(path, sizeof path, "%s/%s.json", s->dir, w->key);
    const gs_sweep sweep = {.command = "suite", .workload = w, .workload_opts = wopts,
                            .common = s->common, .config = &wconfig, .env = &s->env,
                            .path = path, .job = s->job, .observer = printer};
    // Under a launcher a workload that communicates runs at the full job only.
    gs_u64_list wcounts = s->counts;
    if (w->communicates && s->config.control) {
      wcounts.n = 1;
      wcounts.v[0] = (uint64_t)s->config.world_size;
    }
    const file_before before = before_part(path);
    if (status == GS_OK) status = gs_measure_sweep(&sweep, &wcounts);
    keep_first_of(&first_failure, &first_error, status, w->key);
    gs_error_keep_first(add_file_if_written(s, path, &before), &first_failure, &first_error);
    w->options_free(wopts);
    if (s->job->broken || status == GS_ERR_PARTIAL || gs_interrupt_signal() != 0) break;
  }
  if (first_failure != GS_OK) gs_error_restore(&first_error);
  return first_failure;
}

/* The links between the selected GPUs, every ordered pair of them, into
 * DIR/p2p.json. */
static gs_status measure_links(gs_suite *s, const gs_suite_observer *observer) {
  gs_p2p_options p2p;
  gs_p2p_options_default(&p2p);
  const size_t max_pairs = sizeof p2p.pairs / sizeof p2p.pairs[0];
  for (int a = 0; a < s->config.world_size; a++)
    for (int b = 0; b < s->config.world_size; b++)
      if (a != b && p2p.n_pairs < max_pairs) {
        p2p.pairs[p2p.n_pairs][0] = s->config.devices[a];
        p2p.pairs[p2p.n_pairs][1] = s->config.devices[b];
        p2p.n_pairs++;
      }
  char path[GS_TEXT_LONG];
  snprintf(path, sizeof path, "%s/p2p.json", s->dir);
  gs_p2p_outcome outcome;
  const file_before before = before_part(path);
  gs_status status = gs_measure_p2p(&p2p, &s->env, NULL, path, &outcome);
  if (outcome.have_topology && observer && observer->p2p_done)
    observer->p2p_done(observer->ctx, &p2p, &outcome);
  gs_p2p_outcome_free(&outcome);
  gs_status listed = add_file_if_written(s, path, &before);
  return status != GS_OK ? status : listed;
}

/* Every collective over the selected ranks into DIR/coll.json, 8 B to
 * 1 GiB on GPUs, to 64 KiB on the CPU backend (a smoke test of the host
 * path), with coll's own defaults and tables and the suite's
 * --arrival-times. */
static gs_status measure_collectives(gs_suite *s, const gs_coll_observer *printer) {
  const gs_run_config *config = &s->config;
  char path[GS_TEXT_LONG], gpus[GS_TEXT_LONG] = "";
  snprintf(path, sizeof path, "%s/coll.json", s->dir);
  gs_common_options common;
  gs_common_init(&common, GS_GROUP_ARRIVAL);
  gs_coll_common_defaults(&common);
  common.arrival_times = s->common->arrival_times;
  common.out = path;
  common.given_out = 1;
  common.no_progress = 1;
  common.quiet = s->common->quiet;
  if (config->backend == GS_BACKEND_CUDA) {
    size_t at = 0;
    for (int k = 0; k < config->world_size && at < sizeof gpus; k++)
      at += (size_t)snprintf(gpus + at, sizeof gpus - at, "%s%d", k ? "," : "", config->devices[k]);
    common.backend_choice = GS_BACKEND_CHOICE_CUDA;
    common.gpus_text = gpus;
    common.given_gpus = 1;
  } else {
    common.backend_choice = GS_BACKEND_CHOICE_CPU;
    common.ranks = (uint64_t)config->world_size;
    common.given_ranks = 1;
  }
  common.given_backend = 1;
  gs_coll_options co;
  gs_coll_options_init(&co);
  GS_TRY(gs_coll_options_take_op(&co, "all"));
  co.min_bytes = 8;
  co.max_bytes = config->backend == GS_BACKEND_CUDA ? UINT64_C(1) << 30 : UINT64_C(64) << 10;
  co.step_factor = 4;
  co.given_step_factor = 1;
  const gs_coll_request request = {.coll = &co, .common = &common, .observer = printer};
  const file_before before = before_part(path);
  gs_status status = gs_measure_coll(&request);
  gs_status listed = add_file_if_written(s, path, &before);
  return status != GS_OK ? status : listed;
}

gs_status gs_suite_start(gs_suite *s, gs_common_options *common, const char *dir) {
  memset(s, 0, sizeof *s);
  s->common = common;
  s->dir = dir;
  s->job = calloc(1, sizeof *s->job);
  if (!s->job) return gs_error(GS_ERR_NOMEM, "cannot allocate the job");
  GS_TRY(gs_measure_job_start(s->job, common, 1, &s->config));
  GS_TRY(gs_common_counts(common, &s->config, 1, &s->counts));
  if (gs_suite_writes(s) && mkdir(dir, 0777) != 0 && errno != EEXIST)
    return gs_error(GS_ERR_IO, "cannot create the directory %s: %s", dir, strerror(errno));
  return GS_OK;
}

int gs_suite_writes(const gs_suite *s) { return s->job && gs_measure_job_writes(s->job); }

gs_status gs_suite_measure(gs_suite *s, const gs_suite_observer *observer) {
  // Freed by gs_suite_finish, also when it could be collected only in part.
  s->have_env = 1;
  GS_TRY(gs_common_environment(&s->env));
  const int writes = gs_suite_writes(s);
  const int control = s->config.control != NULL;
  if (writes && observer && observer->started) observer->started(observer->ctx, s);
  gs_status first_failure = GS_OK;
  gs_error_kept first_error = {""};  // later failures do not replace its text
  if (writes) {
    char path[GS_TEXT_LONG];
    snprintf(path, sizeof path, "%s/info.json", s->dir);
    gs_status status = write_info(path);
    keep_first_of(&first_failure, &first_error, status, "info");
    if (status == GS_OK) gs_error_keep_first(add_file(s, path), &first_failure, &first_error);
  }
  gs_status status = measure_workloads(s, observer ? observer->sweep : NULL);
  gs_error_keep_first(status, &first_failure, &first_error);
  // p2p and coll drive every GPU from one process (coll has its own MPI
  // mode: 'mpirun ... gpuscale coll all'); under a launcher they are left out.
  if (control && writes && s->config.world_size >= 2)
    gs_note("suite: p2p and coll are not run under a launcher; run 'gpuscale p2p' and "
            "'mpirun ... gpuscale coll all'");
  // A stop request ends the suite after the part it stopped.
  const int stopped = gs_interrupt_signal() != 0;
  if (!stopped && !control && s->config.backend == GS_BACKEND_CUDA && s->config.world_size >= 2)
    keep_first_of(&first_failure, &first_error, measure_links(s, observer), "p2p");
  if (!stopped && !control && s->config.world_size >= 2)
    keep_first_of(&first_failure, &first_error,
                  measure_collectives(s, observer ? observer->coll : NULL), "coll");
  if (first_failure != GS_OK) gs_error_restore(&first_error);
  return first_failure;
}

gs_status gs_suite_finish(gs_suite *s, gs_status status) {
  if (s->job) status = gs_measure_job_finish(s->job, status);
  free(s->job);
  if (s->have_env) gs_environment_free(&s->env);
  for (size_t i = 0; i < s->n_files; i++) free(s->files[i]);
  free(s->files);
  memset(s, 0, sizeof *s);
  return status;
}
