/* The sweep shared by run, scale, suite and exec: a workload measured
 * through its driver at each rank count (and each of its variants) into
 * one document. */
#include "measure/sweep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/runner.h"
#include "runner/runner_driver.h"
#include "core/check.h"
#include "core/host_cpu.h"
#include "measure/roofline.h"

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

/* The workload's driver and the context its open returned, for one sweep. */
typedef struct {
  const gs_workload_driver *driver;
  void *ctx;
  gs_measure_peaks peaks;  /* the GPU models' figures for every roofline */
} sweep_driver;

/* Writes the document of the sweep's first `count` measurements;
 * `interleaved`: the config says in which order the counts were measured
 * ("order"), `complete`: nothing more is to be measured. */
static gs_status write_document(const gs_sweep *sw, const sweep_driver *d,
                                const gs_measurement *ms, const gs_telemetry *tm, size_t count,
                                int interleaved, int complete) {
  cJSON *doc = gs_result_new(sw->command);
  if (!doc) return gs_error(GS_ERR_NOMEM, "cannot create the result document");
  cJSON *config = gs_common_config_json(sw->common, sw->config, sw->workload, sw->workload_opts);
  if (!config || !cJSON_AddStringToObject(config, "order",
                                          interleaved ? "interleaved" : "sequential")) {
    cJSON_Delete(config);
    cJSON_Delete(doc);
    return gs_error(GS_ERR_NOMEM, "cannot describe the configuration in the result document");
  }
  gs_status status = gs_result_set_config(doc, config);
  if (status == GS_OK) status = gs_result_set_environment(doc, sw->env);
  if (status == GS_OK && sw->job && sw->job->control) status = gs_measure_job_add_processes(doc, sw->job);
  for (size_t i = 0; i < count && status == GS_OK; i++) {
    status = gs_result_add_measurement(doc, &ms[i]);
    if (status == GS_OK && d->driver->annotate) {
      cJSON *all = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
      status = d->driver->annotate(d->ctx, &ms[i],
                                cJSON_GetArrayItem(all, cJSON_GetArraySize(all) - 1), i);
    }
  }
  if (status == GS_OK) status = add_telemetry(doc, tm, count);
  if (status == GS_OK) status = gs_common_add_trace(doc, sw->config->trace, sw->path);
  if (status == GS_OK) status = gs_common_write_result(doc, ms, count, complete, sw->path,
                                                       sw->job ? &sw->job->written : NULL);
  cJSON_Delete(doc);
  return status;
}

/* Starts telemetry on the GPUs of `config` (none on the CPU backend);
 * `resume`: a later run of a measurement whose telemetry was started
 * before, whose readings it adds to. */
static gs_status telemetry_begin(const gs_sweep *sw, const gs_run_config *config,
                                 gs_telemetry *tm, int resume) {
  int cuda = config->backend == GS_BACKEND_CUDA;
  size_t n = cuda ? (size_t)config->world_size : 0;
  if (!resume)
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

/* A sweep under way: the workload's driver, every measurement and its
 * telemetry, and the order they were measured in. */
typedef struct {
  const gs_sweep *sw;
  const sweep_driver *d;
  gs_measurement *ms;
  gs_telemetry *tm;
  size_t done;        /* measurements filled: ms[0, done) */
  uint64_t runs;      /* runs measured so far: the next run's "sequence" */
  int interleaved;    /* one run of each count per round (gs_common_interleaved) */
} sweep_state;

/* Measurement `index` of the sweep, by the workload's driver, with
 * telemetry around it. Sampling covers the whole measurement (setup,
 * warmup, timing, checks); telemetry that cannot start is recorded as
 * unavailable, not a failure. In a later round of an interleaved sweep
 * (`round` > 0) the run is measured on its own and merged into
 * ms[index], its telemetry added to tm[index]. */
static gs_status measure_one(sweep_state *st, const gs_run_config *config, size_t index,
                             uint64_t round) {
  const sweep_driver *d = st->d;
  gs_telemetry *tm = &st->tm[index];
  gs_measurement later = {0}, *m = round == 0 ? &st->ms[index] : &later;
  gs_error_kept kept;
  gs_error_keep(&kept);
  if (telemetry_begin(st->sw, config, tm, round > 0) != GS_OK)
    gs_telemetry_set_unavailable(tm, "sampler did not start: %s", gs_last_error());
  gs_error_restore(&kept);
  gs_run_config traced = *config;
  traced.trace_measurement = (int)index;
  gs_status status = gs_trace_measurement_start(config->trace, (int)index, config->label,
                                                config->backend, d->driver->trace_host_only);
  // Other work on the host's CPUs while these runs were measured; under a
  // launcher this process holds one rank, and the others count as other work.
  gs_host_cpu_sample cpu_before, cpu_after;
  gs_host_cpu_read(&cpu_before);
  if (status == GS_OK) status = d->driver->measure(d->ctx, &traced, index, m);
  gs_host_cpu_read(&cpu_after);
  const double other_cores = config->control ? NAN : gs_host_cpu_other_cores(&cpu_before, &cpu_after);
  // Every driver's failed measurement names its failure the same way.
  if (m->status != GS_OK && !m->failure.present && m->n_runs > 0) gs_runner_name_failure(m);
  gs_trace_measurement_stop(config->trace);
  gs_telemetry_stop(tm);
  for (size_t r = 0; r < m->n_runs; r++) {
    m->runs[r].sequence = ++st->runs;
    m->runs[r].other_cores_known = isfinite(other_cores);
    m->runs[r].other_cores = other_cores;
  }
  if (round == 0) return status;
  if (status == GS_ERR_USAGE) {
    // Not a measurement (the caller stops the sweep): nothing of it is kept.
    gs_measurement_free(&later);
    return status;
  }
  gs_error_keep(&kept);
  gs_status merged = gs_runner_merge(&st->ms[index], &later);
  if (merged == GS_OK && d->driver->merged) merged = d->driver->merged(d->ctx, index, &st->ms[index]);
  if (merged == GS_OK || status != GS_OK) gs_error_restore(&kept);
  return status != GS_OK ? status : merged;
}

/* Records the split of a measurement (its "split" member). */
static void record_split(gs_measurement *m, gs_split_policy policy, const uint64_t *units,
                         const double *rates, int ranks) {
  gs_split_record *split = &m->split;
  split->policy = policy;
  split->ranks = ranks < GS_MAX_RANKS ? ranks : GS_MAX_RANKS;
  for (int k = 0; k < split->ranks; k++) {
    split->units[k] = units[k];
    split->calibration_items_per_second[k] = rates[k];
  }
}

/* One rank count of the variant being measured: where its measurements lie
 * in the sweep (set by its first round), whether a failure ended it, and
 * the proportional split calibrated in its first round and kept for every
 * later one (the runs of one measurement split their units alike). */
typedef struct {
  size_t slot, n_slots;
  int ended;
  int calibrated;
  uint64_t even[GS_MAX_RANKS], proportional[GS_MAX_RANKS];
  double rates[GS_MAX_RANKS];
} sweep_count;

/* Proportional split at config->world_size ranks: calibrates each rank
 * (first round), then measures the even split and the proportional one
 * into measurements `index` and `index` + 1 (*measured receives how many
 * were filled). */
static gs_status measure_split(sweep_state *st, const gs_run_config *config, sweep_count *c,
                               size_t index, uint64_t round, size_t *measured) {
  const sweep_driver *d = st->d;
  *measured = 0;
  const int n = config->world_size;
  gs_run_config untraced = *config;  /* the calibration is no measurement of the document */
  untraced.trace = NULL;
  // gs_common_configure refused the split for a driver without one.
  if (!d->driver->split) GS_BUG("a proportional split of %s, whose driver splits nothing",
                                st->sw->workload->key);
  if (!c->calibrated)
    GS_TRY(d->driver->split(d->ctx, &untraced, c->even, c->proportional, c->rates));
  c->calibrated = 1;
  gs_status first_failure = GS_OK;
  gs_error_kept first_error = {""};  // the even split's failure stays the one reported
  for (int p = 0; p < 2; p++) {
    gs_run_config cfg = *config;
    cfg.unit_counts = p == 0 ? c->even : c->proportional;
    gs_status status = measure_one(st, &cfg, index + (size_t)p, round);
    *measured = (size_t)p + 1;
    record_split(&st->ms[index + (size_t)p], p == 0 ? GS_SPLIT_EVEN : GS_SPLIT_PROPORTIONAL,
                 cfg.unit_counts, c->rates, n);
    gs_error_keep_first(status, &first_failure, &first_error);
  }
  if (first_failure != GS_OK) gs_error_restore(&first_error);
  return first_failure;
}

/* Variants of the workload's options (1 when it has none). */
static size_t variant_total(const gs_sweep *sw) {
  const gs_workload *w = sw->workload;
  size_t n = w->variant_count ? w->variant_count(sw->workload_opts) : 0;
  return n > 0 ? n : 1;
}

/* The driver's check of every variant at every rank count, before anything
 * is measured or written (the runner: a split that cannot work is a usage
 * error). */
static gs_status check_counts(const gs_sweep *sw, const sweep_driver *d,
                              const gs_u64_list *counts, size_t variants) {
  if (!d->driver->check) return GS_OK;
  for (size_t v = 0; v < variants; v++) {
    char name[GS_TEXT_SHORT] = "";
    if (sw->workload->variant_select)
      sw->workload->variant_select((void *)sw->workload_opts, v, name, sizeof name);
    for (size_t i = 0; i < counts->n; i++) {
      gs_run_config config = *sw->config;
      config.world_size = (int)counts->v[i];
      GS_TRY(d->driver->check(d->ctx, &config));
    }
  }
  return GS_OK;
}

/* Whether any of the n measurements holds a sample or a completed step. */
static int measured_any(const gs_measurement *ms, size_t n) {
  for (size_t i = 0; i < n; i++)
    for (size_t r = 0; r < ms[i].n_runs; r++)
      for (size_t k = 0; k < ms[i].runs[r].n_ranks; k++)
        if (ms[i].runs[r].ranks[k].n_samples > 0 || ms[i].runs[r].ranks[k].steps_completed > 0)
          return 1;
  return 0;
}

/* The configuration of one call of the driver: `ranks` ranks, labelled
 * with the variant (and the run, when an interleaved sweep measures one
 * run per call); only the first round is traced, since a trace keeps one
 * recording per measurement. */
static gs_run_config count_config(const sweep_state *st, int ranks, const char *variant,
                                  uint64_t round, char *label, size_t label_size) {
  gs_run_config config = *st->sw->config;
  config.world_size = ranks;
  const int cuda = config.backend == GS_BACKEND_CUDA;
  int at = snprintf(label, label_size, "%s%s%s on %d %s", st->sw->workload->key,
                    variant[0] ? " " : "", variant, ranks,
                    cuda ? (ranks == 1 ? "GPU" : "GPUs") : (ranks == 1 ? "CPU rank" : "CPU ranks"));
  if (st->interleaved) {
    if (config.runs > 1 && at > 0 && (size_t)at < label_size)
      snprintf(label + at, label_size - (size_t)at, ", run %llu of %llu",
               (unsigned long long)round + 1, (unsigned long long)config.runs);
    config.runs = 1;
    if (round > 0) config.trace = NULL;
  }
  config.label = label;
  return config;
}

static gs_status sweep_counts(const gs_sweep *sw, const sweep_driver *d,
                              const gs_u64_list *counts) {
  const size_t variants = variant_total(sw);
  GS_TRY(check_counts(sw, d, counts, variants));
  // A proportional split measures two splits per rank count.
  const size_t total = 2 * variants * counts->n;
  sweep_state st = {.sw = sw, .d = d, .ms = calloc(total, sizeof *st.ms),
                    .tm = calloc(total, sizeof *st.tm),
                    .interleaved = 0};
  const char *sequential_why = NULL;
  st.interleaved = counts->n > 1 && gs_common_interleaved(sw->common, sw->workload,
                                                          sw->workload_opts, &sequential_why);
  // Asked for (the default) and not possible: said, as config.order records.
  if (counts->n > 1 && sequential_why && gs_measure_job_writes(sw->job))
    gs_note("%s: rank counts measured one after the other, not interleaved: %s",
            sw->workload->key, sequential_why);
  sweep_count *cs = calloc(counts->n, sizeof *cs);
  if (!st.ms || !st.tm || !cs) {
    free(st.ms);
    free(st.tm);
    free(cs);
    return gs_error(GS_ERR_NOMEM, "cannot allocate %zu measurements", total);
  }
  gs_measurement *ms = st.ms;
  gs_status first_failure = GS_OK;
  gs_error_kept first_error = {""};  // its text: later failures and documents do not replace it
  // Measurements the sweep will have, and calls of the driver it will make,
  // when nothing stops it: until then every document it writes says partial.
  size_t expected = 0;
  for (size_t i = 0; i < counts->n; i++)
    expected += sw->config->split_proportional && counts->v[i] > 1 ? 2 : 1;
  expected *= variants;
  const uint64_t rounds = st.interleaved ? sw->config->runs : 1;
  const uint64_t calls_expected = variants * rounds * counts->n;
  uint64_t calls = 0;
  int stop = 0, kept_old = 0;
  for (size_t v = 0; v < variants && !stop; v++) {
    char variant[GS_TEXT_SHORT] = "";
    // The options are the caller's; selecting a variant rewrites them in place.
    if (sw->workload->variant_select)
      sw->workload->variant_select((void *)sw->workload_opts, v, variant, sizeof variant);
    const size_t group = st.done;
    memset(cs, 0, counts->n * sizeof *cs);
    for (uint64_t round = 0; round < rounds && !stop; round++) {
      for (size_t i = 0; i < counts->n && !stop; i++) {
        sweep_count *c = &cs[i];
        calls++;
        if (c->ended) continue;
        char label[GS_TEXT_LONG];
        gs_run_config config = count_config(&st, (int)counts->v[i], variant, round, label,
                                            sizeof label);
        // The first round puts a count's measurements after the others'.
        if (round == 0) c->slot = st.done;
        gs_status status;
        size_t measured = 1;
        if (config.split_proportional && config.world_size > 1)
          status = measure_split(&st, &config, c, c->slot, round, &measured);
        else
          status = measure_one(&st, &config, c->slot, round);
        if (round == 0) {
          c->n_slots = measured;
          st.done += measured;
          for (size_t k = c->slot; k < st.done; k++)
            snprintf(ms[k].variant, sizeof ms[k].variant, "%s", variant);
        }
        gs_error_keep_first(status, &first_failure, &first_error);
        if (status == GS_ERR_USAGE) {
          // A request that cannot be measured is not a measurement: nothing of
          // it is written, and a document from an earlier run stays as it was.
          if (round == 0) {
            for (size_t k = c->slot; k < st.done; k++) {
              gs_measurement_free(&ms[k]);
              gs_telemetry_free(&st.tm[k]);
            }
            st.done = c->slot;
          }
          stop = 1;
          continue;
        }
        // A count that failed is not measured again in a later round.
        if (status != GS_OK || c->n_slots == 0) c->ended = 1;
        // A lost rank ends the job: no later measurement can run in lockstep.
        const int lost = sw->job && sw->job->control && gs_measure_loses_job(status);
        if (lost) sw->job->broken = 1;
        if (status == GS_ERR_INTERRUPTED || lost) stop = 1;
        // Under a launcher only one process writes documents and prints
        // (process 0, or its stand-in once it is lost); every process measures.
        if (!gs_measure_job_writes(sw->job)) continue;
        gs_runner_relate(ms + group, st.done - group);
        gs_status roofline = GS_OK;
        for (size_t k = group; k < st.done && roofline == GS_OK; k++)
          roofline = gs_measure_roofline(&d->peaks, sw->env, &ms[k]);
        gs_error_keep_first(roofline, &first_failure, &first_error);
        if (roofline != GS_OK) stop = 1;
        // A run stopped before it measured anything never replaces an
        // earlier document with an empty one.
        if (gs_measure_loses_job(status) && !measured_any(ms, st.done) &&
            access(sw->path, F_OK) == 0) {
          kept_old = 1;
          continue;
        }
        // Written after every measurement: a later crash keeps what was measured.
        gs_status written = write_document(sw, d, ms, st.tm, st.done, st.interleaved,
                                           st.done == expected && calls == calls_expected);
        gs_error_keep_first(written, &first_failure, &first_error);
        if (written != GS_OK) stop = 1;
      }
    }
    if (gs_measure_job_writes(sw->job) && sw->observer && sw->observer->variant_done)
      sw->observer->variant_done(sw->observer->ctx, sw, ms + group, st.tm + group,
                                 st.done - group);
  }
  const int writes = gs_measure_job_writes(sw->job);
  if (kept_old && writes) {
    // The first failure's text, extended: the restore below keeps it.
    if (first_failure != GS_OK) gs_error_restore(&first_error);
    first_failure = gs_error(first_failure, "%s%sstopped before anything was measured: %s was "
                             "left as it was", gs_last_error(), gs_last_error()[0] ? "; " : "",
                             sw->path);
    gs_error_keep(&first_error);
  } else if (gs_measure_rank_failure(first_failure) && st.done > 0 && writes)
    first_failure = GS_ERR_PARTIAL;
  if (writes && sw->observer && sw->observer->sweep_done)
    sw->observer->sweep_done(sw->observer->ctx, sw, d->ctx, ms, st.tm, st.done);
  for (size_t i = 0; i < st.done; i++) {
    gs_measurement_free(&ms[i]);
    gs_telemetry_free(&st.tm[i]);
  }
  free(ms);
  free(st.tm);
  free(cs);
  if (first_failure != GS_OK) gs_error_restore(&first_error);
  return first_failure;
}

gs_status gs_measure_sweep(const gs_sweep *sw, const gs_u64_list *counts) {
  sweep_driver d = {.driver = gs_runner_driver_of(sw->workload)};
  gs_u64_list selected = *counts;
  if (d.driver->select_counts)
    GS_TRY(d.driver->select_counts(sw->workload_opts, sw->config, &selected));
  gs_measure_peaks_open(&d.peaks);
  // Room for as many measurements as sweep_counts has (two per count when
  // a split is measured beside the even one).
  gs_status status = d.driver->open(sw->workload, sw->workload_opts, sw->env,
                                    2 * selected.n * variant_total(sw), &d.ctx);
  if (status == GS_OK) status = sweep_counts(sw, &d, &selected);
  d.driver->close(d.ctx);
  gs_measure_peaks_close(&d.peaks);
  return status;
}
