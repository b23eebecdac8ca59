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
}

/* ---- building ------------------------------------------------------------- */

/* The builders below record an allocation failure in `*failed` and carry on;
 * cJSON's Add functions ignore a NULL parent, so one check at the end of a
 * build is enough. */
typedef struct {
  int failed;
} json_build;

static cJSON *built(json_build *b, cJSON *item) {
  if (!item) b->failed = 1;
  return item;
}

static void add_string(json_build *b, cJSON *o, const char *name, const char *s) {
  built(b, cJSON_AddStringToObject(o, name, s));
}

/* A string, or null when it is empty or absent. */
static void add_string_or_null(json_build *b, cJSON *o, const char *name, const char *s) {
  if (s && s[0])
    built(b, cJSON_AddStringToObject(o, name, s));
  else
    built(b, cJSON_AddNullToObject(o, name));
}

static void add_number(json_build *b, cJSON *o, const char *name, double v) {
  built(b, gs_json_add_number(o, name, v));
}

/* 64-bit counts travel as JSON numbers (doubles): exact up to 2^53. */
static void add_u64(json_build *b, cJSON *o, const char *name, uint64_t v) {
  add_number(b, o, name, (double)v);
}

/* A number, or null when it is 0 (the structs' "unknown"). */
static void add_number_or_null(json_build *b, cJSON *o, const char *name, double v) {
  if (v == 0.0)
    built(b, cJSON_AddNullToObject(o, name));
  else
    add_number(b, o, name, v);
}

static void add_samples(json_build *b, cJSON *o, const char *name, const double *v, size_t n) {
  if (!v && n > 0) {
    built(b, cJSON_AddNullToObject(o, name));
    return;
  }
  cJSON *arr = built(b, cJSON_AddArrayToObject(o, name));
  if (!arr) return;
  for (size_t i = 0; i < n; i++) {
    cJSON *item = isfinite(v[i]) ? cJSON_CreateNumber(v[i]) : cJSON_CreateNull();
    if (!item || !cJSON_AddItemToArray(arr, item)) {
      cJSON_Delete(item);
      b->failed = 1;
      return;
    }
  }
}

/* CUDA encodes versions as 1000 * major + 10 * minor (13000 = "13.0"). */
static void add_cuda_version(json_build *b, cJSON *o, const char *name, const char *name_text,
                             int version) {
  if (version <= 0) {
    built(b, cJSON_AddNullToObject(o, name));
    built(b, cJSON_AddNullToObject(o, name_text));
    return;
  }
  char text[32];
  snprintf(text, sizeof text, "%d.%d", version / 1000, (version % 1000) / 10);
  add_number(b, o, name, version);
  add_string(b, o, name_text, text);
}

/* Replaces the member `name` of doc in place (keeping the member order of a
 * new document), or appends it. Takes `item` over in every case. */
static gs_status put_member(cJSON *doc, const char *name, cJSON *item) {
  if (!item) return gs_error(GS_ERR_NOMEM, "out of memory building the result document");
  if (!cJSON_IsObject(doc)) {
    cJSON_Delete(item);
    return gs_error(GS_ERR_INTERNAL, "result document is not a JSON object");
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
  json_build b = {0};
  cJSON *doc = cJSON_CreateObject();
  if (!doc) return NULL;
  add_string(&b, doc, "schema", GS_RESULT_SCHEMA);
  cJSON *tool = built(&b, cJSON_AddObjectToObject(doc, "tool"));
  add_string(&b, tool, "name", "gpuscale");
  add_string(&b, tool, "version", GS_VERSION_STRING);
  add_string(&b, tool, "git_revision", GS_GIT_REVISION);
  char created[32];
  gs_time_utc_iso8601(created, sizeof created);
  add_string(&b, doc, "created", created);
  add_string(&b, doc, "command", command ? command : "");
  cJSON *args = built(&b, cJSON_AddArrayToObject(doc, "argv"));
  for (int i = 0; argv && i < argc; i++) {
    cJSON *s = cJSON_CreateString(argv[i] ? argv[i] : "");
    if (!s || !cJSON_AddItemToArray(args, s)) {
      cJSON_Delete(s);
      b.failed = 1;
    }
  }
  add_string(&b, doc, "status", "ok");
  // Placeholders keep a fresh document valid and fix the member order.
  built(&b, cJSON_AddObjectToObject(doc, "config"));
  built(&b, cJSON_AddObjectToObject(doc, "environment"));
  built(&b, cJSON_AddArrayToObject(doc, "measurements"));
  if (b.failed) {
    cJSON_Delete(doc);
    return NULL;
  }
  return doc;
}

gs_status gs_result_set_config(cJSON *doc, cJSON *config) {
  if (config && !cJSON_IsObject(config)) {
    cJSON_Delete(config);
    return gs_error(GS_ERR_INTERNAL, "result config must be a JSON object");
  }
  return put_member(doc, "config", config ? config : cJSON_CreateObject());
}

static cJSON *gpu_to_json(json_build *b, const gs_gpu_desc *g) {
  cJSON *o = built(b, cJSON_CreateObject());
  if (!o) return NULL;
  add_number(b, o, "index", g->index);
  add_string_or_null(b, o, "name", g->name);
  add_string_or_null(b, o, "uuid", g->uuid);
  add_string_or_null(b, o, "pci_bus_id", g->pci_bus_id);
  add_number_or_null(b, o, "memory_bytes", (double)g->memory_bytes);
  add_number_or_null(b, o, "sm_count", g->sm_count);
  if (g->cc_major > 0) {
    char cc[32];
    snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
    add_string(b, o, "compute_capability", cc);
  } else {
    built(b, cJSON_AddNullToObject(o, "compute_capability"));
  }
  add_number_or_null(b, o, "clock_mhz", g->clock_mhz);
  add_number_or_null(b, o, "memory_clock_mhz", g->memory_clock_mhz);
  add_number_or_null(b, o, "memory_bus_width_bits", g->memory_bus_width_bits);
  add_number_or_null(b, o, "peak_memory_bandwidth_bytes_per_s", g->peak_memory_bandwidth);
  return o;
}

gs_status gs_result_set_environment(cJSON *doc, const gs_environment *env) {
  if (!env) return gs_error(GS_ERR_INTERNAL, "gs_result_set_environment: no environment");
  json_build b = {0};
  cJSON *o = cJSON_CreateObject();
  if (!o) return gs_error(GS_ERR_NOMEM, "out of memory building the result document");
  add_string_or_null(&b, o, "host", env->host);
  add_string_or_null(&b, o, "os", env->os);
  cJSON *cpu = built(&b, cJSON_AddObjectToObject(o, "cpu"));
  add_string_or_null(&b, cpu, "model", env->cpu_model);
  add_number_or_null(&b, cpu, "logical_cores", env->cpu_logical_cores);
  add_number(&b, cpu, "load_average", env->load_average);
  add_number_or_null(&b, o, "host_memory_bytes", (double)env->host_memory_bytes);
  cJSON *cuda = built(&b, cJSON_AddObjectToObject(o, "cuda"));
  add_cuda_version(&b, cuda, "driver_version", "driver_version_text", env->cuda_driver_version);
  add_cuda_version(&b, cuda, "runtime_version", "runtime_version_text",
                   env->cuda_runtime_version);
  add_string_or_null(&b, cuda, "status", env->cuda_status);
  add_string_or_null(&b, o, "nccl_version", env->nccl_version);
  add_string_or_null(&b, o, "mpi_version", env->mpi_version);
  if (env->slurm.job_id[0]) {
    cJSON *slurm = built(&b, cJSON_AddObjectToObject(o, "slurm"));
    add_string_or_null(&b, slurm, "job_id", env->slurm.job_id);
    add_string_or_null(&b, slurm, "step_id", env->slurm.step_id);
    add_string_or_null(&b, slurm, "node_list", env->slurm.node_list);
  }
  cJSON *gpus = built(&b, cJSON_AddArrayToObject(o, "gpus"));
  for (size_t i = 0; gpus && env->gpus && i < env->gpu_count; i++) {
    cJSON *g = gpu_to_json(&b, &env->gpus[i]);
    if (g && !cJSON_AddItemToArray(gpus, g)) {
      cJSON_Delete(g);
      b.failed = 1;
    }
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

static void add_verification(json_build *b, cJSON *parent, const gs_verification *v) {
  cJSON *o = built(b, cJSON_AddObjectToObject(parent, "verification"));
  add_string(b, o, "status", verify_status_name(v->status));
  add_number(b, o, "max_abs_error", v->max_abs_error);
  add_number(b, o, "tolerance", v->tolerance);
  add_u64(b, o, "mismatches", v->mismatches);
  add_string_or_null(b, o, "detail", v->detail);
}

static cJSON *rank_to_json(json_build *b, const gs_rank_record *r) {
  cJSON *o = built(b, cJSON_CreateObject());
  if (!o) return NULL;
  add_number(b, o, "rank", r->rank);
  if (r->device < 0)
    built(b, cJSON_AddNullToObject(o, "device"));
  else
    add_number(b, o, "device", r->device);
  add_string_or_null(b, o, "host", r->host);
  add_string(b, o, "status", gs_status_name(r->status));
  add_string_or_null(b, o, "error", r->error);
  add_u64(b, o, "items_per_step", r->items_per_step);
  if (r->first_iteration_seconds < 0)
    built(b, cJSON_AddNullToObject(o, "first_iteration_seconds"));
  else
    add_number(b, o, "first_iteration_seconds", r->first_iteration_seconds);
  if (r->device_seconds)
    add_samples(b, o, "device_seconds", r->device_seconds, r->n_samples);
  else
    built(b, cJSON_AddNullToObject(o, "device_seconds"));
  add_samples(b, o, "wall_seconds", r->wall_seconds, r->n_samples);
  if (r->comm_seconds) add_samples(b, o, "comm_seconds", r->comm_seconds, r->n_samples);
  add_verification(b, o, &r->verification);
  if (r->failed_samples > 0) add_u64(b, o, "failed_samples", r->failed_samples);
  // A failed verification ran every step; any other failure stopped early.
  if (r->status != GS_OK && r->status != GS_ERR_VERIFY)
    add_u64(b, o, "last_completed_step", r->steps_completed);
  return o;
}

static cJSON *run_to_json(json_build *b, const gs_run_record *run) {
  cJSON *o = built(b, cJSON_CreateObject());
  if (!o) return NULL;
  add_samples(b, o, "step_seconds", run->step_seconds, run->n_steps);
  cJSON *ranks = built(b, cJSON_AddArrayToObject(o, "ranks"));
  for (size_t k = 0; ranks && run->ranks && k < run->n_ranks; k++) {
    cJSON *r = rank_to_json(b, &run->ranks[k]);
    if (r && !cJSON_AddItemToArray(ranks, r)) {
      cJSON_Delete(r);
      b->failed = 1;
    }
  }
  return o;
}

static void add_stats(json_build *b, cJSON *parent, const gs_stats *s) {
  // No samples means nothing was summarised: null, not a row of zeros.
  if (s->n == 0) {
    built(b, cJSON_AddNullToObject(parent, "step"));
    return;
  }
  cJSON *o = built(b, cJSON_AddObjectToObject(parent, "step"));
  add_u64(b, o, "n", s->n);
  add_number(b, o, "mean", s->mean);
  add_number(b, o, "median", s->median);
  add_number(b, o, "stddev", s->stddev);
  add_number(b, o, "cv", s->cv);
  add_number(b, o, "min", s->min);
  add_number(b, o, "max", s->max);
  add_number(b, o, "p50", s->p50);
  add_number(b, o, "p90", s->p90);
  add_number(b, o, "p95", s->p95);
  add_number(b, o, "p99", s->p99);
  add_number(b, o, "ci95_low", s->ci95_low);
  add_number(b, o, "ci95_high", s->ci95_high);
  add_number(b, o, "mad", s->mad);
  add_u64(b, o, "outliers", s->outliers);
  add_number(b, o, "sum", s->sum);
  static const struct {
    unsigned flag;
    const char *name;
  } flags[] = {
      {GS_STATS_WARN_FEW_SAMPLES, "few-samples"},
      {GS_STATS_WARN_NOISY, "noisy"},
      {GS_STATS_WARN_SHORT, "short"},
      {GS_STATS_WARN_OUTLIERS, "outliers"},
  };
  cJSON *w = built(b, cJSON_AddArrayToObject(o, "warnings"));
  for (size_t i = 0; w && i < sizeof flags / sizeof flags[0]; i++) {
    if (!(s->warnings & flags[i].flag)) continue;
    cJSON *item = cJSON_CreateString(flags[i].name);
    if (!item || !cJSON_AddItemToArray(w, item)) {
      cJSON_Delete(item);
      b->failed = 1;
    }
  }
}

cJSON *gs_result_stats_to_json(const gs_stats *stats) {
  json_build b = {0};
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
static void add_u64_array(json_build *b, cJSON *o, const char *name, const uint64_t *v, int n) {
  cJSON *arr = built(b, cJSON_AddArrayToObject(o, name));
  for (int k = 0; arr && k < n && k < GS_MAX_RANKS; k++) {
    cJSON *item = cJSON_CreateNumber((double)v[k]);
    if (!item || !cJSON_AddItemToArray(arr, item)) {
      cJSON_Delete(item);
      b->failed = 1;
    }
  }
}

/* The optional members of the typed model, in the order the measuring code
 * has always produced them: "faults", "work_units", "failure", "split". */
static void add_typed_members(json_build *b, cJSON *o, const gs_measurement *m) {
  if (m->faults.n > 0) {
    cJSON *faults = gs_fault_list_to_json(&m->faults, m->world_size);
    if (!faults || !cJSON_AddItemToObject(o, "faults", faults)) {
      cJSON_Delete(faults);
      b->failed = 1;
    }
  }
  const gs_work_units_record *w = &m->work_units;
  if (w->unit) {
    cJSON *u = built(b, cJSON_AddObjectToObject(o, "work_units"));
    add_u64_array(b, u, "begin", w->begin, w->ranks);
    add_u64_array(b, u, "count", w->count, w->ranks);
    add_string(b, u, "unit", w->unit);
    add_u64(b, u, "total", w->total);
  }
  const gs_failure_record *f = &m->failure;
  if (f->present) {
    cJSON *fo = built(b, cJSON_AddObjectToObject(o, "failure"));
    if (f->rank >= 0) {
      add_number(b, fo, "rank", f->rank);
      add_string(b, fo, "host", f->host);
      add_u64(b, fo, "last_completed_step", f->last_completed_step);
    } else {
      built(b, cJSON_AddNullToObject(fo, "rank"));
      built(b, cJSON_AddNullToObject(fo, "host"));
      built(b, cJSON_AddNullToObject(fo, "last_completed_step"));
    }
    add_string(b, fo, "status", gs_status_name(f->status));
    add_string(b, fo, "reason", f->reason);
  }
  const gs_split_record *sp = &m->split;
  if (sp->policy != GS_SPLIT_NONE) {
    cJSON *so = built(b, cJSON_AddObjectToObject(o, "split"));
    add_u64_array(b, so, "units", sp->units, sp->ranks);
    cJSON *rates = built(b, cJSON_AddArrayToObject(so, "calibration_items_per_second"));
    for (int k = 0; rates && k < sp->ranks && k < GS_MAX_RANKS; k++) {
      cJSON *item = cJSON_CreateNumber(sp->calibration_items_per_second[k]);
      if (!item || !cJSON_AddItemToArray(rates, item)) {
        cJSON_Delete(item);
        b->failed = 1;
      }
    }
    add_string(b, so, "policy", gs_split_policy_name(sp->policy));
  }
}

gs_status gs_result_add_measurement(cJSON *doc, const gs_measurement *m) {
  if (!m) return gs_error(GS_ERR_INTERNAL, "gs_result_add_measurement: no measurement");
  cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
  if (!cJSON_IsArray(list)) {
    if (list || !cJSON_IsObject(doc))
      return gs_error(GS_ERR_INTERNAL, "result document has no \"measurements\" array");
    list = cJSON_AddArrayToObject(doc, "measurements");
    if (!list) return gs_error(GS_ERR_NOMEM, "out of memory building the result document");
  }

  json_build b = {0};
  cJSON *o = cJSON_CreateObject();
  if (!o) return gs_error(GS_ERR_NOMEM, "out of memory building the result document");
  add_string(&b, o, "workload", m->workload);
  add_string_or_null(&b, o, "backend", m->backend);
  add_string_or_null(&b, o, "scaling", m->scaling);
  if (m->variant[0]) add_string(&b, o, "variant", m->variant);
  add_number(&b, o, "world_size", m->world_size);
  cJSON *devices = built(&b, cJSON_AddArrayToObject(o, "devices"));
  size_t n_dev = m->world_size > 0 ? (size_t)m->world_size : 0;
  const size_t max_dev = sizeof m->devices / sizeof m->devices[0];
  if (n_dev > max_dev) n_dev = max_dev;
  for (size_t i = 0; devices && i < n_dev; i++) {
    cJSON *d = m->devices[i] < 0 ? cJSON_CreateNull() : cJSON_CreateNumber(m->devices[i]);
    if (!d || !cJSON_AddItemToArray(devices, d)) {
      cJSON_Delete(d);
      b.failed = 1;
    }
  }
  add_string(&b, o, "status", gs_status_name(m->status));
  add_string_or_null(&b, o, "error", m->error);

  cJSON *cost = built(&b, cJSON_AddObjectToObject(o, "cost"));
  add_u64(&b, cost, "items_per_step", m->cost.items);
  add_string_or_null(&b, cost, "item_unit", m->cost.item_unit);
  add_u64(&b, cost, "bytes_per_step", m->cost.bytes);
  add_u64(&b, cost, "flops_per_step", m->cost.flops);

  add_verification(&b, o, &m->verification);

  cJSON *runs = built(&b, cJSON_AddArrayToObject(o, "runs"));
  for (size_t r = 0; runs && m->runs && r < m->n_runs; r++) {
    cJSON *run = run_to_json(&b, &m->runs[r]);
    if (run && !cJSON_AddItemToArray(runs, run)) {
      cJSON_Delete(run);
      b.failed = 1;
    }
  }

  cJSON *agg = built(&b, cJSON_AddObjectToObject(o, "aggregate"));
  add_stats(&b, agg, &m->aggregate.step);
  add_number_or_null(&b, agg, "throughput_items_per_second", m->aggregate.throughput);
  add_number_or_null(&b, agg, "cold_start_ratio", m->aggregate.cold_start_ratio);
  add_number_or_null(&b, agg, "speedup", m->aggregate.speedup);
  add_number_or_null(&b, agg, "efficiency", m->aggregate.efficiency);
  add_typed_members(&b, o, m);
  for (const cJSON *item = m->extra ? m->extra->child : NULL; item; item = item->next) {
    cJSON *copy = cJSON_Duplicate(item, 1);
    if (!copy || !item->string || !cJSON_AddItemToObject(o, item->string, copy)) {
      cJSON_Delete(copy);
      b.failed = 1;
    }
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
    return gs_error(GS_ERR_INTERNAL, "result status must be ok, partial or failed, not \"%s\"",
                    status ? status : "(null)");
  return put_member(doc, "status", cJSON_CreateString(status));
}

const char *gs_result_status_rule(size_t measurements, size_t failed, size_t failed_with_samples,
                                  int complete) {
  if (failed == 0) return complete ? "ok" : "partial";
  if (failed == measurements && failed_with_samples == 0) return "failed";
  return "partial";
}
