/* The result document "gpuscale/result/v1": building it from the measuring
 * structs, writing it atomically with exact numbers, reading and validating
 * it. The schema is documented member by member in docs/result-schema.md. */
#include "core/result.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/timer.h"
#include "gs_version.h"

/* Readers refuse larger files: a result document that big is almost surely
 * not one, and parsing it would need several times its size in memory. */
#define GS_RESULT_MAX_BYTES ((uint64_t)1 << 30)

/* ---- freeing ------------------------------------------------------------ */

void gs_environment_free(gs_environment *env) {
  if (!env) return;
  free(env->gpus);
  env->gpus = NULL;
  env->gpu_count = 0;
}

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

/* ---- host description --------------------------------------------------- */

/* Copies the value of the first "model name" line of /proc/cpuinfo into buf;
 * returns 0 when there is none (e.g. on most Arm kernels). */
static int read_cpu_model(char *buf, size_t size) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return 0;
  char line[1024];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char *colon = strchr(line, ':');
    if (!colon) continue;
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t') v++;
    size_t len = strcspn(v, "\r\n");
    while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t')) len--;
    if (len == 0) continue;
    if (len >= size) len = size - 1;
    memcpy(buf, v, len);
    buf[len] = '\0';
    found = 1;
  }
  fclose(f);
  return found;
}

void gs_environment_collect_host(gs_environment *env) {
  snprintf(env->host, sizeof env->host, "%s", gs_hostname());

  struct utsname u;
  if (uname(&u) == 0)
    snprintf(env->os, sizeof env->os, "%s %s %s", u.sysname, u.release, u.machine);
  else
    snprintf(env->os, sizeof env->os, "unknown");

  if (!read_cpu_model(env->cpu_model, sizeof env->cpu_model))
    snprintf(env->cpu_model, sizeof env->cpu_model, "unknown");

  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  env->cpu_logical_cores = cores > 0 ? (int)cores : 0;

  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  env->host_memory_bytes =
      (pages > 0 && page_size > 0) ? (uint64_t)pages * (uint64_t)page_size : 0;
}

/* ---- building ------------------------------------------------------------- */

cJSON *gs_json_add_number(cJSON *object, const char *name, double value) {
  if (!isfinite(value)) return cJSON_AddNullToObject(object, name);
  return cJSON_AddNumberToObject(object, name, value);
}

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

cJSON *gs_result_new(const char *command, int argc, char **argv) {
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
  add_number_or_null(&b, o, "host_memory_bytes", (double)env->host_memory_bytes);
  cJSON *cuda = built(&b, cJSON_AddObjectToObject(o, "cuda"));
  add_cuda_version(&b, cuda, "driver_version", "driver_version_text", env->cuda_driver_version);
  add_cuda_version(&b, cuda, "runtime_version", "runtime_version_text",
                   env->cuda_runtime_version);
  add_string_or_null(&b, cuda, "status", env->cuda_status);
  add_string_or_null(&b, o, "nccl_version", env->nccl_version);
  add_string_or_null(&b, o, "mpi_version", env->mpi_version);
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

/* ---- writing ---------------------------------------------------------- */

/* Shortest decimal text that reads back as exactly `v`. cJSON's own printer
 * tries 15 digits and accepts them when they come back within an epsilon, so
 * 0.1 + 0.2 would be written as 0.3; we require bit equality instead. */
static void format_number(double v, char *buf, size_t size) {
  if (!isfinite(v)) {
    snprintf(buf, size, "null");
    return;
  }
  // Integers below 2^53 are exact: write them without exponent or point.
  if (v == floor(v) && fabs(v) < 9007199254740992.0) {
    snprintf(buf, size, "%.0f", v);
    return;
  }
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(buf, size, "%.*g", digits, v);
    if (strtod(buf, NULL) == v) return;
  }
}

static void print_indent(FILE *f, int depth) {
  for (int i = 0; i < depth; i++) fputs("  ", f);
}

static void print_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    switch (*p) {
      case '"': fputs("\\\"", f); break;
      case '\\': fputs("\\\\", f); break;
      case '\b': fputs("\\b", f); break;
      case '\f': fputs("\\f", f); break;
      case '\n': fputs("\\n", f); break;
      case '\r': fputs("\\r", f); break;
      case '\t': fputs("\\t", f); break;
      default:
        if (*p < 0x20)
          fprintf(f, "\\u%04x", (unsigned)*p);
        else
          fputc(*p, f);
    }
  }
  fputc('"', f);
}

static int is_container(const cJSON *item) { return cJSON_IsArray(item) || cJSON_IsObject(item); }

/* Pretty printer with two-space indentation. Arrays of scalars (the raw
 * samples) stay on one line so that a result file remains browsable. */
static void print_value(FILE *f, const cJSON *item, int depth) {
  if (cJSON_IsNumber(item)) {
    char buf[64];
    format_number(item->valuedouble, buf, sizeof buf);
    fputs(buf, f);
  } else if (cJSON_IsString(item)) {
    print_string(f, item->valuestring);
  } else if (cJSON_IsTrue(item)) {
    fputs("true", f);
  } else if (cJSON_IsFalse(item)) {
    fputs("false", f);
  } else if (cJSON_IsRaw(item) && item->valuestring) {
    fputs(item->valuestring, f);
  } else if (is_container(item)) {
    int object = cJSON_IsObject(item);
    const cJSON *child = item->child;
    if (!child) {
      fputs(object ? "{}" : "[]", f);
      return;
    }
    int inline_scalars = !object;
    for (const cJSON *c = child; c && inline_scalars; c = c->next)
      if (is_container(c)) inline_scalars = 0;
    fputc(object ? '{' : '[', f);
    for (const cJSON *c = child; c; c = c->next) {
      if (inline_scalars) {
        if (c != child) fputs(", ", f);
      } else {
        fputc('\n', f);
        print_indent(f, depth + 1);
      }
      if (object) {
        print_string(f, c->string);
        fputs(": ", f);
      }
      print_value(f, c, depth + 1);
      if (!inline_scalars && c->next) fputc(',', f);
    }
    if (!inline_scalars) {
      fputc('\n', f);
      print_indent(f, depth);
    }
    fputc(object ? '}' : ']', f);
  } else {
    fputs("null", f);
  }
}

/* mkdir -p for the directory part of `path` (nothing when it has none). */
static gs_status make_parent_dirs(const char *path, const char *what) {
  char *dir = strdup(path);
  if (!dir) return gs_error(GS_ERR_NOMEM, "out of memory writing %s", what);
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir) {
    free(dir);
    return GS_OK;
  }
  *slash = '\0';
  gs_status st = GS_OK;
  for (char *p = dir + 1; st == GS_OK; p++) {
    if (*p != '/' && *p != '\0') continue;
    char saved = *p;
    *p = '\0';
    struct stat sb;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
      st = gs_error(GS_ERR_IO, "cannot write %s: cannot create directory %s: %s", what, dir,
                    strerror(errno));
    else if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
      st = gs_error(GS_ERR_IO, "cannot write %s: %s exists and is not a directory", what, dir);
    *p = saved;
    if (saved == '\0') break;
  }
  free(dir);
  return st;
}

/* fsync of the directory makes the rename itself durable. */
static gs_status sync_parent_dir(const char *path) {
  char *dir = strdup(path);
  if (!dir) return gs_error(GS_ERR_NOMEM, "out of memory writing %s", path);
  char *slash = strrchr(dir, '/');
  const char *name = ".";
  if (slash == dir)
    name = "/";
  else if (slash) {
    *slash = '\0';
    name = dir;
  }
  gs_status st = GS_OK;
  int fd = open(name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    st = gs_error(GS_ERR_IO, "cannot sync directory of %s: %s", path, strerror(errno));
  } else {
    // Some file systems cannot fsync a directory; the rename stands anyway.
    if (fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP)
      st = gs_error(GS_ERR_IO, "cannot sync directory of %s: %s", path, strerror(errno));
    close(fd);
  }
  free(dir);
  return st;
}

gs_status gs_result_write(const cJSON *doc, const char *path) {
  if (!doc || !path || !path[0])
    return gs_error(GS_ERR_INTERNAL, "gs_result_write: no document or no path");
  gs_status st = make_parent_dirs(path, path);
  if (st != GS_OK) return st;

  size_t tmp_size = strlen(path) + 32;
  char *tmp = malloc(tmp_size);
  if (!tmp) return gs_error(GS_ERR_NOMEM, "out of memory writing %s", path);
  snprintf(tmp, tmp_size, "%s.tmp.%ld", path, (long)getpid());

  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0 && errno == EEXIST) {
    // Left by an earlier process with our pid that died mid-write.
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  }
  if (fd < 0) {
    st = gs_error(GS_ERR_IO, "cannot write %s: cannot create %s: %s", path, tmp, strerror(errno));
    free(tmp);
    return st;
  }
  FILE *f = fdopen(fd, "w");
  if (!f) {
    st = gs_error(GS_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    close(fd);
    unlink(tmp);
    free(tmp);
    return st;
  }

  errno = 0;
  print_value(f, doc, 0);
  fputc('\n', f);
  int err = 0;
  if (fflush(f) != 0 || ferror(f))
    err = errno ? errno : EIO;
  else if (fsync(fd) != 0)
    err = errno;
  if (fclose(f) != 0 && !err) err = errno;
  if (!err && rename(tmp, path) != 0) err = errno;
  if (err) {
    unlink(tmp);
    free(tmp);
    return gs_error(GS_ERR_IO, "cannot write %s: %s", path, strerror(err));
  }
  free(tmp);
  return sync_parent_dir(path);
}

/* ---- reading and validating --------------------------------------------- */

const char *gs_json_type_name(const cJSON *item) {
  if (!item) return "missing";
  if (cJSON_IsObject(item)) return "an object";
  if (cJSON_IsArray(item)) return "an array";
  if (cJSON_IsString(item)) return "a string";
  if (cJSON_IsNumber(item)) return "a number";
  if (cJSON_IsBool(item)) return "a boolean";
  if (cJSON_IsNull(item)) return "null";
  return "invalid";
}

typedef enum { WANT_OBJECT, WANT_ARRAY, WANT_STRING, WANT_NUMBER } json_want;

static int has_type(const cJSON *item, json_want want) {
  switch (want) {
    case WANT_OBJECT: return cJSON_IsObject(item);
    case WANT_ARRAY: return cJSON_IsArray(item);
    case WANT_STRING: return cJSON_IsString(item);
    case WANT_NUMBER: return cJSON_IsNumber(item);
  }
  return 0;
}

static const char *want_name(json_want want) {
  switch (want) {
    case WANT_OBJECT: return "an object";
    case WANT_ARRAY: return "an array";
    case WANT_STRING: return "a string";
    case WANT_NUMBER: return "a number";
  }
  return "?";
}

/* Member `name` of `object` (whose JSON path is `where`, "" for the top)
 * with the wanted type, or NULL after reporting which path is wrong. */
static const cJSON *require(const cJSON *object, const char *where, const char *name,
                            json_want want, const char *source) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
  const char *dot = where[0] ? "." : "";
  if (!item) {
    gs_error(GS_ERR_FORMAT, "%s: required member %s%s%s is missing", source, where, dot, name);
    return NULL;
  }
  if (!has_type(item, want)) {
    gs_error(GS_ERR_FORMAT, "%s: member %s%s%s must be %s but is %s", source, where, dot, name,
             want_name(want), gs_json_type_name(item));
    return NULL;
  }
  return item;
}

/* An element of an array that must be an object. */
static int require_object_element(const cJSON *item, const char *where, const char *source) {
  if (cJSON_IsObject(item)) return 1;
  gs_error(GS_ERR_FORMAT, "%s: %s must be an object but is %s", source, where,
           gs_json_type_name(item));
  return 0;
}

gs_status gs_result_validate(const cJSON *doc, const char *source) {
  if (!source) source = "result document";
  if (!cJSON_IsObject(doc))
    return gs_error(GS_ERR_FORMAT, "%s: not a gpuscale result document (top level is %s, not an object)",
                    source, gs_json_type_name(doc));

  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(doc, "schema");
  if (!schema)
    return gs_error(GS_ERR_FORMAT,
                    "%s: not a gpuscale result document (no \"schema\" member; expected \"%s\")",
                    source, GS_RESULT_SCHEMA);
  if (!cJSON_IsString(schema))
    return gs_error(GS_ERR_FORMAT, "%s: member schema must be a string but is %s", source,
                    gs_json_type_name(schema));
  if (strcmp(schema->valuestring, GS_RESULT_SCHEMA) != 0)
    return gs_error(GS_ERR_FORMAT,
                    "%s: unsupported schema \"%s\"; this gpuscale (%s) reads only \"%s\"", source,
                    schema->valuestring, GS_VERSION_STRING, GS_RESULT_SCHEMA);

  if (!require(doc, "", "tool", WANT_OBJECT, source) ||
      !require(doc, "", "created", WANT_STRING, source) ||
      !require(doc, "", "command", WANT_STRING, source) ||
      !require(doc, "", "config", WANT_OBJECT, source) ||
      !require(doc, "", "environment", WANT_OBJECT, source))
    return GS_ERR_FORMAT;
  const cJSON *measurements = require(doc, "", "measurements", WANT_ARRAY, source);
  if (!measurements) return GS_ERR_FORMAT;

  char mpath[64], rpath[96], kpath[128];
  size_t mi = 0;
  for (const cJSON *m = measurements->child; m; m = m->next, mi++) {
    snprintf(mpath, sizeof mpath, "measurements[%zu]", mi);
    if (!require_object_element(m, mpath, source) ||
        !require(m, mpath, "workload", WANT_STRING, source) ||
        !require(m, mpath, "world_size", WANT_NUMBER, source) ||
        !require(m, mpath, "status", WANT_STRING, source))
      return GS_ERR_FORMAT;
    const cJSON *runs = require(m, mpath, "runs", WANT_ARRAY, source);
    if (!runs) return GS_ERR_FORMAT;
    size_t ri = 0;
    for (const cJSON *run = runs->child; run; run = run->next, ri++) {
      snprintf(rpath, sizeof rpath, "%s.runs[%zu]", mpath, ri);
      if (!require_object_element(run, rpath, source)) return GS_ERR_FORMAT;
      const cJSON *ranks = require(run, rpath, "ranks", WANT_ARRAY, source);
      if (!ranks) return GS_ERR_FORMAT;
      size_t ki = 0;
      for (const cJSON *rank = ranks->child; rank; rank = rank->next, ki++) {
        snprintf(kpath, sizeof kpath, "%s.ranks[%zu]", rpath, ki);
        if (!require_object_element(rank, kpath, source) ||
            !require(rank, kpath, "rank", WANT_NUMBER, source) ||
            !require(rank, kpath, "status", WANT_STRING, source))
          return GS_ERR_FORMAT;
      }
    }
  }
  return GS_OK;
}

/* See result.h. */
gs_status gs_file_read(const char *path, uint64_t max_bytes, const char *what, char **data_out,
                       size_t *size_out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return gs_error(GS_ERR_IO, "cannot read %s: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return gs_error(GS_ERR_IO, "cannot read %s: %s", path, strerror(e));
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return gs_error(GS_ERR_IO, "cannot read %s: %s", path,
                    S_ISDIR(sb.st_mode) ? "is a directory" : "not a regular file");
  }
  if ((uint64_t)sb.st_size > max_bytes) {
    close(fd);
    int gib = max_bytes % ((uint64_t)1 << 30) == 0;
    return gs_error(GS_ERR_FORMAT, "%s is %llu bytes; %s larger than %llu %s (%llu bytes) are refused",
                    path, (unsigned long long)sb.st_size, what,
                    (unsigned long long)(max_bytes >> (gib ? 30 : 20)), gib ? "GiB" : "MiB",
                    (unsigned long long)max_bytes);
  }
  size_t size = (size_t)sb.st_size;
  char *data = malloc(size + 1);
  if (!data) {
    close(fd);
    return gs_error(GS_ERR_NOMEM, "out of memory reading %s (%zu bytes)", path, size);
  }
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, data + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      free(data);
      close(fd);
      return gs_error(GS_ERR_IO, "cannot read %s: %s", path, strerror(e));
    }
    if (n == 0) break;  // file shrank while we read it: parse what is there
    got += (size_t)n;
  }
  close(fd);
  data[got] = '\0';
  *data_out = data;
  *size_out = got;
  return GS_OK;
}

gs_status gs_result_read(const char *path, cJSON **doc_out) {
  *doc_out = NULL;
  char *data = NULL;
  size_t size = 0;
  gs_status st = gs_file_read(path, GS_RESULT_MAX_BYTES, "result documents", &data, &size);
  if (st != GS_OK) return st;

  if (size == 0) {
    free(data);
    return gs_error(GS_ERR_FORMAT, "%s: empty file, not a result document", path);
  }
  const char *nul = memchr(data, '\0', size);
  if (nul) {
    size_t off = (size_t)(nul - data);
    free(data);
    return gs_error(GS_ERR_FORMAT, "%s: invalid JSON: NUL byte at offset %zu", path, off);
  }

  const char *end = NULL;
  // Length includes the terminator so that trailing garbage is rejected.
  cJSON *doc = cJSON_ParseWithLengthOpts(data, size + 1, &end, 1);
  if (!doc) {
    size_t off = (end && end >= data && end <= data + size) ? (size_t)(end - data) : size;
    size_t line = 1, col = 1;
    for (size_t i = 0; i < off; i++) {
      if (data[i] == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    free(data);
    return gs_error(GS_ERR_FORMAT,
                    "%s: invalid JSON at byte offset %zu (line %zu, column %zu)%s", path, off,
                    line, col, off >= size ? ": unexpected end of file (truncated?)" : "");
  }
  free(data);

  st = gs_result_validate(doc, path);
  if (st != GS_OK) {
    cJSON_Delete(doc);
    return st;
  }
  *doc_out = doc;
  return GS_OK;
}
