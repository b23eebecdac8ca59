/* The result document "gpuscale/result/v1" built from the measuring
 * structs: a new document, its config, environment, measurements and
 * status, and freeing a measurement. Writing is in result_write.c, reading
 * and validation in result_read.c; the schema is documented member by
 * member in docs/result-schema.md. */
#include "core/result.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/roofline.h"
#include "core/timer.h"
#include "gs_version.h"

void gs_measurement_free(gs_measurement *m) {
  if (!m) return;
  if (m->runs) {
    for (size_t r = 0; r < m->n_runs; r++) {
      gs_run_record *run = &m->runs[r];
      free(run->step_seconds);
      run->step_seconds = NULL;
      if (run->ranks) {
        for (size_t k = 0; k < run->n_ranks; k++) {
          free(run->ranks[k].device_seconds);
          free(run->ranks[k].wall_seconds);
          free(run->ranks[k].comm_seconds);
          run->ranks[k].comm_seconds = NULL;
          run->ranks[k].device_seconds = NULL;
          run->ranks[k].wall_seconds = NULL;
        }
      }
      free(run->ranks);
      run->ranks = NULL;
    }
  }
  free(m->runs);
  m->runs = NULL;
  m->n_runs = 0;
  cJSON_Delete(m->extra);
  m->extra = NULL;
  gs_arrival_free(m->arrival);
  m->arrival = NULL;
}

/* ---- building ------------------------------------------------------------- */

/* Built through core/json's checked builder: an allocation failure marks
 * the build and it carries on (cJSON's Add functions ignore a NULL parent),
 * so one check at the end of a build is enough. */

/* A number, or null when it is 0 (the structs' "unknown"). */
static void add_number_or_null(gs_json_build *b, cJSON *o, const char *name, double v) {
  if (v == 0.0)
    gs_json_put_null(b, o, name);
  else
    gs_json_put_number(b, o, name, v);
}

static void add_samples(gs_json_build *b, cJSON *o, const char *name, const double *v, size_t n) {
  if (!v && n > 0) {
    gs_json_put_null(b, o, name);
    return;
  }
  cJSON *arr = gs_json_put_array(b, o, name);
  if (!arr) return;
  for (size_t i = 0; i < n && !b->failed; i++) gs_json_append_number(b, arr, v[i]);
}

/* CUDA encodes versions as 1000 * major + 10 * minor (13000 = "13.0"). */
static void add_cuda_version(gs_json_build *b, cJSON *o, const char *name, const char *name_text,
                             int version) {
  if (version <= 0) {
    gs_json_put_null(b, o, name);
    gs_json_put_null(b, o, name_text);
    return;
  }
  char text[32];
  snprintf(text, sizeof text, "%d.%d", version / 1000, (version % 1000) / 10);
  gs_json_put_number(b, o, name, version);
  gs_json_put_string(b, o, name_text, text);
}

/* Replaces the member `name` of doc in place (keeping the member order of a
 * new document), or appends it. Takes `item` over in every case. */
static gs_status put_member(cJSON *doc, const char *name, cJSON *item) {
  if (!item) return gs_error(GS_ERR_NOMEM, "out of memory building the result document");
  if (!cJSON_IsObject(doc)) {
    cJSON_Delete(item);
    GS_BUG("result document is not a JSON object");
  }
  cJSON_bool ok = cJSON_GetObjectItemCaseSensitive(doc, name)
                      ? cJSON_ReplaceItemInObjectCaseSensitive(doc, name, item)
                      : cJSON_AddItemToObject(doc, name, item);
  if (!ok) {
    cJSON_Delete(item);
    return gs_error(GS_ERR_NOMEM, "out of memory building the result document");
  }
  return GS_OK;
}

/* The process's command line as main received it (gs_result_set_command_line). */
static int command_line_argc;
static char **command_line_argv;

void gs_result_set_command_line(int argc, char **argv) {
  command_line_argc = argc;
  command_line_argv = argv;
}

cJSON *gs_result_new(const char *command) {
  const int argc = command_line_argc;
  char **argv = command_line_argv;
  gs_json_build b = {0};
  cJSON *doc = cJSON_CreateObject();
  if (!doc) return NULL;
  gs_json_put_string(&b, doc, "schema", GS_RESULT_SCHEMA);
  cJSON *tool = gs_json_put_object(&b, doc, "tool");
  gs_json_put_string(&b, tool, "name", "gpuscale");
  gs_json_put_string(&b, tool, "version", GS_VERSION_STRING);
  gs_json_put_string(&b, tool, "git_revision", GS_GIT_REVISION);
  char created[32];
  gs_time_utc_iso8601(created, sizeof created);
  gs_json_put_string(&b, doc, "created", created);
  gs_json_put_string(&b, doc, "command", command ? command : "");
  cJSON *args = gs_json_put_array(&b, doc, "argv");
  for (int i = 0; argv && i < argc; i++) {
    gs_json_append(&b, args, cJSON_CreateString(argv[i] ? argv[i] : ""));
  }
  gs_json_put_string(&b, doc, "status", "ok");
  // Placeholders keep a fresh document valid and fix the member order.
  gs_json_put_object(&b, doc, "config");
  gs_json_put_object(&b, doc, "environment");
  gs_json_put_array(&b, doc, "measurements");
  if (b.failed) {
    cJSON_Delete(doc);
    return NULL;
  }
  return doc;
}

gs_status gs_result_set_config(cJSON *doc, cJSON *config) {
  if (config && !cJSON_IsObject(config)) {
    cJSON_Delete(config);
    GS_BUG("result config must be a JSON object");
  }
  return put_member(doc, "config", config ? config : cJSON_CreateObject());
}

static cJSON *gpu_to_json(gs_json_build *b, const gs_gpu_desc *g) {
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  if (!o) return NULL;
  gs_json_put_number(b, o, "index", g->index);
  gs_json_put_string_or_null(b, o, "name", g->name);
  gs_json_put_string_or_null(b, o, "uuid", g->uuid);
  gs_json_put_string_or_null(b, o, "pci_bus_id", g->pci_bus_id);
  add_number_or_null(b, o, "memory_bytes", (double)g->memory_bytes);
  add_number_or_null(b, o, "sm_count", g->sm_count);
  if (g->cc_major > 0) {
    char cc[32];
    snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
    gs_json_put_string(b, o, "compute_capability", cc);
  } else {
    gs_json_put_null(b, o, "compute_capability");
  }
  add_number_or_null(b, o, "clock_mhz", g->clock_mhz);
  add_number_or_null(b, o, "memory_clock_mhz", g->memory_clock_mhz);
  add_number_or_null(b, o, "memory_bus_width_bits", g->memory_bus_width_bits);
  add_number_or_null(b, o, "peak_memory_bandwidth_bytes_per_s", g->peak_memory_bandwidth);
  add_number_or_null(b, o, "l2_cache_bytes", (double)g->l2_cache_bytes);
  return o;
}

gs_status gs_result_set_environment(cJSON *doc, const gs_environment *env) {
  if (!env) GS_BUG("gs_result_set_environment: no environment");
  gs_json_build b = {0};
  cJSON *o = cJSON_CreateObject();
  if (!o) return gs_error(GS_ERR_NOMEM, "out of memory building the result document");
  gs_json_put_string_or_null(&b, o, "host", env->host);
  gs_json_put_string_or_null(&b, o, "os", env->os);
  cJSON *cpu = gs_json_put_object(&b, o, "cpu");
  gs_json_put_string_or_null(&b, cpu, "model", env->cpu_model);
  add_number_or_null(&b, cpu, "logical_cores", env->cpu_logical_cores);
  gs_json_put_number(&b, cpu, "load_average", env->load_average);
  add_number_or_null(&b, cpu, "l2_cache_bytes", (double)env->cpu_l2_cache_bytes);
  add_number_or_null(&b, o, "host_memory_bytes", (double)env->host_memory_bytes);
  cJSON *cuda = gs_json_put_object(&b, o, "cuda");
  add_cuda_version(&b, cuda, "driver_version", "driver_version_text", env->cuda_driver_version);
  add_cuda_version(&b, cuda, "runtime_version", "runtime_version_text",
                   env->cuda_runtime_version);
  gs_json_put_string_or_null(&b, cuda, "status", env->cuda_status);
  gs_json_put_string_or_null(&b, o, "nccl_version", env->nccl_version);
  gs_json_put_string_or_null(&b, o, "mpi_version", env->mpi_version);
  if (env->slurm.job_id[0]) {
    cJSON *slurm = gs_json_put_object(&b, o, "slurm");
    gs_json_put_string_or_null(&b, slurm, "job_id", env->slurm.job_id);
    gs_json_put_string_or_null(&b, slurm, "step_id", env->slurm.step_id);
    gs_json_put_string_or_null(&b, slurm, "node_list", env->slurm.node_list);
  }
  cJSON *gpus = gs_json_put_array(&b, o, "gpus");
  for (size_t i = 0; gpus && env->gpus && i < env->gpu_count; i++) {
    gs_json_append(&b, gpus, gpu_to_json(&b, &env->gpus[i]));
  }
  if (b.failed) {
    cJSON_Delete(o);
    return gs_error(GS_ERR_NOMEM, "out of memory building the result document");
  }
  return put_member(doc, "environment", o);
}

static const char *verify_status_name(gs_verify_status s) {
  switch (s) {
    case GS_VERIFY_PASSED: return "passed";
    case GS_VERIFY_FAILED: return "failed";
    case GS_VERIFY_SKIPPED: return "skipped";
  }
  return "skipped";
}

static void add_verification(gs_json_build *b, cJSON *parent, const gs_verification *v) {
  cJSON *o = gs_json_put_object(b, parent, "verification");
  gs_json_put_string(b, o, "status", verify_status_name(v->status));
  gs_json_put_number(b, o, "max_abs_error", v->max_abs_error);
  gs_json_put_number(b, o, "tolerance", v->tolerance);
  gs_json_put_u64(b, o, "mismatches", v->mismatches);
  gs_json_put_string_or_null(b, o, "detail", v->detail);
}

static cJSON *rank_to_json(gs_json_build *b, const gs_rank_record *r) {
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  if (!o) return NULL;
  gs_json_put_number(b, o, "rank", r->rank);
  if (r->device < 0)
    gs_json_put_null(b, o, "device");
  else
    gs_json_put_number(b, o, "device", r->device);
  gs_json_put_string_or_null(b, o, "host", r->host);
  gs_json_put_string(b, o, "status", gs_status_name(r->status));
  gs_json_put_string_or_null(b, o, "error", r->error);
  gs_json_put_u64(b, o, "items_per_step", r->items_per_step);
  if (r->first_iteration_seconds < 0)
    gs_json_put_null(b, o, "first_iteration_seconds");
  else
    gs_json_put_number(b, o, "first_iteration_seconds", r->first_iteration_seconds);
  if (r->device_seconds)
    add_samples(b, o, "device_seconds", r->device_seconds, r->n_samples);
  else
    gs_json_put_null(b, o, "device_seconds");
  add_samples(b, o, "wall_seconds", r->wall_seconds, r->n_samples);
  if (r->comm_seconds) add_samples(b, o, "comm_seconds", r->comm_seconds, r->n_samples);
  add_verification(b, o, &r->verification);
  if (r->failed_samples > 0) gs_json_put_u64(b, o, "failed_samples", r->failed_samples);
  // A failed verification ran every step; any other failure stopped early.
  if (r->status != GS_OK && r->status != GS_ERR_VERIFY)
    gs_json_put_u64(b, o, "last_completed_step", r->steps_completed);
  return o;
}

static cJSON *run_to_json(gs_json_build *b, const gs_run_record *run) {
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  if (!o) return NULL;
  if (run->sequence > 0) gs_json_put_u64(b, o, "sequence", run->sequence - 1);
  if (run->started_unix_seconds > 0.0)
    gs_json_put_number(b, o, "started_unix_seconds", run->started_unix_seconds);
  if (run->other_cores_known) gs_json_put_number(b, o, "host_other_cores", run->other_cores);
  add_samples(b, o, "step_seconds", run->step_seconds, run->n_steps);
  cJSON *ranks = gs_json_put_array(b, o, "ranks");
  for (size_t k = 0; ranks && run->ranks && k < run->n_ranks; k++) {
    gs_json_append(b, ranks, rank_to_json(b, &run->ranks[k]));
  }
  return o;
}

static void add_stats(gs_json_build *b, cJSON *parent, const gs_stats *s) {
  // No samples means nothing was summarised: null, not a row of zeros.
  if (s->n == 0) {
    gs_json_put_null(b, parent, "step");
    return;
  }
  cJSON *o = gs_json_put_object(b, parent, "step");
  gs_json_put_u64(b, o, "n", s->n);
  gs_json_put_number(b, o, "mean", s->mean);
  gs_json_put_number(b, o, "median", s->median);
  gs_json_put_number(b, o, "stddev", s->stddev);
  gs_json_put_number(b, o, "cv", s->cv);
  gs_json_put_number(b, o, "min", s->min);
  gs_json_put_number(b, o, "max", s->max);
  gs_json_put_number(b, o, "p50", s->p50);
  gs_json_put_number(b, o, "p90", s->p90);
  gs_json_put_number(b, o, "p95", s->p95);
  gs_json_put_number(b, o, "p99", s->p99);
  gs_json_put_number(b, o, "ci95_low", s->ci95_low);
  gs_json_put_number(b, o, "ci95_high", s->ci95_high);
  gs_json_put_number(b, o, "mad", s->mad);
  gs_json_put_u64(b, o, "outliers", s->outliers);
  gs_json_put_number(b, o, "sum", s->sum);
  static const struct {
    unsigned flag;
    const char *name;
  } flags[] = {
      {GS_STATS_WARN_FEW_SAMPLES, "few-samples"},
      {GS_STATS_WARN_NOISY, "noisy"},
      {GS_STATS_WARN_SHORT, "short"},
      {GS_STATS_WARN_OUTLIERS, "outliers"},
  };
  cJSON *w = gs_json_put_array(b, o, "warnings");
  for (size_t i = 0; w && i < sizeof flags / sizeof flags[0]; i++) {
    if (!(s->warnings & flags[i].flag)) continue;
    gs_json_append(b, w, cJSON_CreateString(flags[i].name));
  }
}

cJSON *gs_result_stats_to_json(const gs_stats *stats) {
  gs_json_build b = {0};
  cJSON *holder = cJSON_CreateObject();
  if (!holder) return NULL;
  add_stats(&b, holder, stats);
  cJSON *step = cJSON_DetachItemFromObjectCaseSensitive(holder, "step");
  cJSON_Delete(holder);
  if (b.failed) {
    cJSON_Delete(step);
    return NULL;
  }
  return step;
}

const char *gs_split_policy_name(gs_split_policy policy) {
  switch (policy) {
    case GS_SPLIT_EVEN: return "even";
    case GS_SPLIT_PROPORTIONAL: return "proportional";
    case GS_SPLIT_NONE: break;
  }
  return "";
}

/* An array of the first `n` (at most GS_MAX_RANKS) counts. */
static void add_u64_array(gs_json_build *b, cJSON *o, const char *name, const uint64_t *v, int n) {
  cJSON *arr = gs_json_put_array(b, o, name);
  for (int k = 0; arr && k < n && k < GS_MAX_RANKS; k++) {
    gs_json_append(b, arr, cJSON_CreateNumber((double)v[k]));
  }
}

/* The optional members of the typed model, in the order the measuring code
 * has always produced them: "faults", "work_units", "failure", "split",
 * "roofline". */
static void add_typed_members(gs_json_build *b, cJSON *o, const gs_measurement *m) {
  if (m->faults.n > 0) {
    gs_json_put_item(b, o, "faults", gs_fault_list_to_json(&m->faults, m->world_size));
  }
  const gs_work_units_record *w = &m->work_units;
  if (w->unit) {
    cJSON *u = gs_json_put_object(b, o, "work_units");
    add_u64_array(b, u, "begin", w->begin, w->ranks);
    add_u64_array(b, u, "count", w->count, w->ranks);
    gs_json_put_string(b, u, "unit", w->unit);
    gs_json_put_u64(b, u, "total", w->total);
  }
  const gs_failure_record *f = &m->failure;
  if (f->present) {
    cJSON *fo = gs_json_put_object(b, o, "failure");
    if (f->rank >= 0) {
      gs_json_put_number(b, fo, "rank", f->rank);
      gs_json_put_string(b, fo, "host", f->host);
      gs_json_put_u64(b, fo, "last_completed_step", f->last_completed_step);
    } else {
      gs_json_put_null(b, fo, "rank");
      gs_json_put_null(b, fo, "host");
      gs_json_put_null(b, fo, "last_completed_step");
    }
    gs_json_put_string(b, fo, "status", gs_status_name(f->status));
    gs_json_put_string(b, fo, "reason", f->reason);
  }
  const gs_split_record *sp = &m->split;
  if (sp->policy != GS_SPLIT_NONE) {
    cJSON *so = gs_json_put_object(b, o, "split");
    add_u64_array(b, so, "units", sp->units, sp->ranks);
    cJSON *rates = gs_json_put_array(b, so, "calibration_items_per_second");
    for (int k = 0; rates && k < sp->ranks && k < GS_MAX_RANKS; k++) {
      gs_json_append(b, rates, cJSON_CreateNumber(sp->calibration_items_per_second[k]));
    }
    gs_json_put_string(b, so, "policy", gs_split_policy_name(sp->policy));
  }
  const gs_roofline_record *rl = &m->roofline;
  if (rl->bound != GS_BOUND_NONE) {
    cJSON *ro = gs_json_put_object(b, o, "roofline");
    gs_json_put_string(b, ro, "bound", gs_bound_name(rl->bound));
    gs_json_put_number(b, ro, "achieved_per_second", rl->achieved);
    gs_json_put_number(b, ro, "achieved_low_per_second", rl->achieved_low);
    gs_json_put_number(b, ro, "achieved_high_per_second", rl->achieved_high);
    gs_json_put_number(b, ro, "peak_per_second", rl->peak);
    gs_json_put_number(b, ro, "fraction", rl->fraction);
    gs_json_put_number(b, ro, "fraction_low", rl->fraction_low);
    gs_json_put_number(b, ro, "fraction_high", rl->fraction_high);
    gs_json_put_string_or_null(b, ro, "model", rl->model);
    gs_json_put_string_or_null(b, ro, "why", rl->why);
  }
}

gs_status gs_result_add_measurement(cJSON *doc, const gs_measurement *m) {
  if (!m) GS_BUG("gs_result_add_measurement: no measurement");
  cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
  if (!cJSON_IsArray(list)) {
    if (list || !cJSON_IsObject(doc))
      GS_BUG("result document has no \"measurements\" array");
    list = cJSON_AddArrayToObject(doc, "measurements");
    if (!list) return gs_error(GS_ERR_NOMEM, "out of memory building the result document");
  }

  gs_json_build b = {0};
  cJSON *o = cJSON_CreateObject();
  if (!o) return gs_error(GS_ERR_NOMEM, "out of memory building the result document");
  gs_json_put_string(&b, o, "workload", m->workload);
  gs_json_put_string_or_null(&b, o, "backend", m->backend);
  gs_json_put_string_or_null(&b, o, "scaling", m->scaling);
  if (m->variant[0]) gs_json_put_string(&b, o, "variant", m->variant);
  gs_json_put_number(&b, o, "world_size", m->world_size);
  cJSON *devices = gs_json_put_array(&b, o, "devices");
  size_t n_dev = m->world_size > 0 ? (size_t)m->world_size : 0;
  const size_t max_dev = sizeof m->devices / sizeof m->devices[0];
  if (n_dev > max_dev) n_dev = max_dev;
  for (size_t i = 0; devices && i < n_dev; i++) {
    gs_json_append(&b, devices, m->devices[i] < 0 ? cJSON_CreateNull() : cJSON_CreateNumber(m->devices[i]));
  }
  gs_json_put_string(&b, o, "status", gs_status_name(m->status));
  gs_json_put_string_or_null(&b, o, "error", m->error);

  cJSON *cost = gs_json_put_object(&b, o, "cost");
  gs_json_put_u64(&b, cost, "items_per_step", m->cost.items);
  gs_json_put_string_or_null(&b, cost, "item_unit", m->cost.item_unit);
  gs_json_put_u64(&b, cost, "bytes_per_step", m->cost.bytes);
  gs_json_put_u64(&b, cost, "flops_per_step", m->cost.flops);

  add_verification(&b, o, &m->verification);

  cJSON *runs = gs_json_put_array(&b, o, "runs");
  for (size_t r = 0; runs && m->runs && r < m->n_runs; r++) {
    gs_json_append(&b, runs, run_to_json(&b, &m->runs[r]));
  }

  cJSON *agg = gs_json_put_object(&b, o, "aggregate");
  add_stats(&b, agg, &m->aggregate.step);
  add_number_or_null(&b, agg, "throughput_items_per_second", m->aggregate.throughput);
  add_number_or_null(&b, agg, "cold_start_ratio", m->aggregate.cold_start_ratio);
  add_number_or_null(&b, agg, "speedup", m->aggregate.speedup);
  add_number_or_null(&b, agg, "efficiency", m->aggregate.efficiency);
  add_typed_members(&b, o, m);
  // Ranks that meet in groups (a pipeline's stages) are summarized per group.
  if (m->arrival && m->arrival->grouped)
    gs_json_put_item(&b, o, "arrival_groups", gs_arrival_groups_to_json(m->arrival));
  else if (m->arrival)
    gs_json_put_item(&b, o, "arrival", gs_arrival_to_json(m->arrival));
  for (const cJSON *item = m->extra ? m->extra->child : NULL; item; item = item->next) {
    gs_json_put_item(&b, o, item->string, cJSON_Duplicate(item, 1));
  }

  if (b.failed || !cJSON_AddItemToArray(list, o)) {
    cJSON_Delete(o);
    return gs_error(GS_ERR_NOMEM, "out of memory building the result document");
  }
  return GS_OK;
}

gs_status gs_result_set_status(cJSON *doc, const char *status) {
  if (!status || (strcmp(status, "ok") != 0 && strcmp(status, "partial") != 0 &&
                  strcmp(status, "failed") != 0))
    GS_BUG("result status must be ok, partial or failed, not \"%s\"", status ? status : "(null)");
  return put_member(doc, "status", cJSON_CreateString(status));
}

const char *gs_result_status_rule(size_t measurements, size_t failed, size_t failed_with_samples,
                                  int complete) {
  if (failed == 0) return complete ? "ok" : "partial";
  if (failed == measurements && failed_with_samples == 0) return "failed";
  return "partial";
}
