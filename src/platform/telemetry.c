/* GPU telemetry: the running summaries first (plain data), then the sampler
 * thread, then the result-document member. */
#include "platform/telemetry.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/json.h"
#include "core/timer.h"

static const char *const field_names[GS_TELEMETRY_FIELD_COUNT] = {
    "utilization_percent", "memory_used_bytes", "power_watts",
    "sm_clock_mhz",        "memory_clock_mhz",  "temperature_c"};

const char *gs_telemetry_field_name(gs_telemetry_field field) {
  return (unsigned)field < GS_TELEMETRY_FIELD_COUNT ? field_names[field] : "unknown";
}

void gs_telemetry_range_add(gs_telemetry_range *r, double value) {
  if (r->n == 0 || value < r->min) r->min = value;
  if (r->n == 0 || value > r->max) r->max = value;
  r->sum += value;
  r->n++;
}

double gs_telemetry_range_mean(const gs_telemetry_range *r) {
  return r->n ? r->sum / (double)r->n : NAN;
}

gs_status gs_telemetry_init(gs_telemetry *t, size_t n_ranks, double interval_seconds,
                            int keep_series) {
  memset(t, 0, sizeof *t);
  t->interval_seconds = interval_seconds;
  t->keep_series = keep_series;
  if (n_ranks) {
    t->ranks = calloc(n_ranks, sizeof *t->ranks);
    if (!t->ranks) return gs_error(GS_ERR_NOMEM, "cannot allocate telemetry for %zu ranks", n_ranks);
  }
  t->n_ranks = n_ranks;
  for (size_t k = 0; k < n_ranks; k++) {
    t->ranks[k].rank = (int)k;
    t->ranks[k].device = -1;
  }
  return GS_OK;
}

void gs_telemetry_set_unavailable(gs_telemetry *t, const char *fmt, ...) {
  t->available = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->reason, sizeof t->reason, fmt, ap);
  va_end(ap);
}

/* Makes room for one more reading in the series. */
static int series_reserve(gs_telemetry_rank *r) {
  if (r->series_n < r->series_cap) return 1;
  size_t cap = r->series_cap ? 2 * r->series_cap : 64;
  double *time = realloc(r->series_time, cap * sizeof *time);
  if (time) r->series_time = time;
  double *values = realloc(r->series_values, cap * GS_TELEMETRY_FIELD_COUNT * sizeof *values);
  if (values) r->series_values = values;
  unsigned long long *thr = realloc(r->series_throttle, cap * sizeof *thr);
  if (thr) r->series_throttle = thr;
  unsigned char *known = realloc(r->series_throttle_known, cap * sizeof *known);
  if (known) r->series_throttle_known = known;
  if (!time || !values || !thr || !known) return 0;
  r->series_cap = cap;
  return 1;
}

gs_status gs_telemetry_record(gs_telemetry *t, size_t rank, const gs_nvml_sample *s,
                              double seconds) {
  if (rank >= t->n_ranks || !s->found) return GS_OK;
  gs_telemetry_rank *r = &t->ranks[rank];
  double v[GS_TELEMETRY_FIELD_COUNT];
  v[GS_TELEMETRY_UTILIZATION] = s->has_utilization ? (double)s->utilization_percent : NAN;
  v[GS_TELEMETRY_MEMORY_USED] = s->has_memory_used ? (double)s->memory_used_bytes : NAN;
  v[GS_TELEMETRY_POWER] = s->has_power ? s->power_mw / 1000.0 : NAN;
  v[GS_TELEMETRY_SM_CLOCK] = s->has_sm_clock ? (double)s->sm_clock_mhz : NAN;
  v[GS_TELEMETRY_MEMORY_CLOCK] = s->has_memory_clock ? (double)s->memory_clock_mhz : NAN;
  v[GS_TELEMETRY_TEMPERATURE] = s->has_temperature ? (double)s->temperature_c : NAN;
  r->samples++;
  for (size_t f = 0; f < GS_TELEMETRY_FIELD_COUNT; f++)
    if (!isnan(v[f])) gs_telemetry_range_add(&r->range[f], v[f]);
  if (s->has_throttle) {
    r->throttle_known = 1;
    r->throttle_seen |= s->throttle_reasons;
  }
  if (s->has_ecc) {
    r->ecc_known = 1;
    if (s->ecc_corrected > r->ecc_corrected) r->ecc_corrected = s->ecc_corrected;
    if (s->ecc_uncorrected > r->ecc_uncorrected) r->ecc_uncorrected = s->ecc_uncorrected;
  }
  if (s->has_processes) {
    r->processes_known = 1;
    if (s->compute_processes > r->processes_max) r->processes_max = s->compute_processes;
  }
  if (!t->keep_series) return GS_OK;
  if (!series_reserve(r))
    return gs_error(GS_ERR_NOMEM, "cannot grow the telemetry series of rank %zu", rank);
  size_t i = r->series_n++;
  r->series_time[i] = seconds;
  memcpy(&r->series_values[i * GS_TELEMETRY_FIELD_COUNT], v, sizeof v);
  r->series_throttle[i] = s->throttle_reasons;
  r->series_throttle_known[i] = (unsigned char)(s->has_throttle != 0);
  return GS_OK;
}

/* ---- the sampler thread ------------------------------------------------- */

typedef struct {
  gs_telemetry *t;
  char (*bus_ids)[GS_TEXT_SHORT];
} sampler_args;

static void sample_all(gs_telemetry *t) {
  double now = gs_time_seconds() - t->started_at;
  for (size_t k = 0; k < t->n_ranks; k++) {
    gs_nvml_sample s;
    gs_nvml_sample_get(t->nvml, t->ranks[k].pci_bus_id, &s);
    // A full series only loses readings; the summary is still right.
    if (gs_telemetry_record(t, k, &s, now) != GS_OK) t->keep_series = 0;
  }
}

static void *sampler_main(void *arg) {
  gs_telemetry *t = arg;
  uint64_t interval_ns = (uint64_t)(t->interval_seconds * 1e9);
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  pthread_mutex_lock(&t->lock);
  while (!t->stop_requested) {
    pthread_mutex_unlock(&t->lock);
    sample_all(t);
    pthread_mutex_lock(&t->lock);
    // Deadlines on a fixed grid: a slow reading does not stretch the interval.
    uint64_t ns = (uint64_t)next.tv_nsec + interval_ns;
    next.tv_sec += (time_t)(ns / 1000000000u);
    next.tv_nsec = (long)(ns % 1000000000u);
    while (!t->stop_requested) {
      int rc = pthread_cond_timedwait(&t->wake, &t->lock, &next);
      if (rc == ETIMEDOUT) break;
    }
  }
  pthread_mutex_unlock(&t->lock);
  return NULL;
}

gs_status gs_telemetry_start(gs_telemetry *t, const int *devices, const char *const *bus_ids) {
  if (t->interval_seconds <= 0.0) {
    gs_telemetry_set_unavailable(t, "turned off (--telemetry-interval 0)");
    return GS_OK;
  }
  if (t->n_ranks == 0) {
    gs_telemetry_set_unavailable(t, "no GPU to sample (CPU backend)");
    return GS_OK;
  }
  for (size_t k = 0; k < t->n_ranks; k++) {
    t->ranks[k].device = devices[k];
    snprintf(t->ranks[k].pci_bus_id, sizeof t->ranks[k].pci_bus_id, "%s", bus_ids[k]);
  }
  char why[GS_TEXT_LONG] = "";
  t->nvml = gs_nvml_open(why, sizeof why);
  if (!t->nvml) {
    gs_telemetry_set_unavailable(t, "%s", why);
    return GS_OK;
  }
  pthread_condattr_t attr;
  int rc = pthread_condattr_init(&attr);
  if (rc == 0) rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  if (rc == 0) rc = pthread_cond_init(&t->wake, &attr);
  pthread_condattr_destroy(&attr);
  if (rc == 0 && (rc = pthread_mutex_init(&t->lock, NULL)) != 0) pthread_cond_destroy(&t->wake);
  if (rc != 0) {
    gs_nvml_close(t->nvml);
    t->nvml = NULL;
    return gs_error_system(rc, "cannot set up the telemetry sampler");
  }
  t->stop_requested = 0;
  // Started again (a later run of an interleaved sweep): the readings add
  // to the summary and the series keeps counting from the first start.
  if (t->started_at <= 0.0) t->started_at = gs_time_seconds();
  rc = pthread_create(&t->thread, NULL, sampler_main, t);
  if (rc != 0) {
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->wake);
    gs_nvml_close(t->nvml);
    t->nvml = NULL;
    return gs_error_system(rc, "cannot start the telemetry sampler thread");
  }
  t->running = 1;
  t->available = 1;
  t->reason[0] = '\0';
  return GS_OK;
}

void gs_telemetry_stop(gs_telemetry *t) {
  if (!t->running) return;
  pthread_mutex_lock(&t->lock);
  t->stop_requested = 1;
  pthread_cond_signal(&t->wake);
  pthread_mutex_unlock(&t->lock);
  pthread_join(t->thread, NULL);
  pthread_mutex_destroy(&t->lock);
  pthread_cond_destroy(&t->wake);
  t->running = 0;
  gs_nvml_close(t->nvml);
  t->nvml = NULL;
}

void gs_telemetry_free(gs_telemetry *t) {
  gs_telemetry_stop(t);
  for (size_t k = 0; k < t->n_ranks; k++) {
    free(t->ranks[k].series_time);
    free(t->ranks[k].series_values);
    free(t->ranks[k].series_throttle);
    free(t->ranks[k].series_throttle_known);
  }
  free(t->ranks);
  memset(t, 0, sizeof *t);
}

/* ---- the result-document member ------------------------------------------ */

/* {"min","mean","max"} or null when the field was never given. */
static void put_range(gs_json_build *b, cJSON *o, const char *name, const gs_telemetry_range *r) {
  if (r->n == 0) {
    gs_json_put_null(b, o, name);
    return;
  }
  cJSON *x = gs_json_put_object(b, o, name);
  gs_json_put_number(b, x, "min", r->min);
  gs_json_put_number(b, x, "mean", gs_telemetry_range_mean(r));
  gs_json_put_number(b, x, "max", r->max);
}

/* Names of the bits in `bits`, in bit order; NULL (the build marked) when it
 * cannot be allocated. */
static cJSON *throttle_to_json(gs_json_build *b, unsigned long long bits) {
  cJSON *a = gs_json_check(b, cJSON_CreateArray());
  for (unsigned k = 0; a && k < 64; k++) {
    unsigned long long bit = 1ull << k;
    if (!(bits & bit)) continue;
    const char *name = gs_nvml_throttle_name(bit);
    char other[32];
    if (!name) {
      snprintf(other, sizeof other, "bit_%u", k);
      name = other;
    }
    gs_json_append_string(b, a, name);
  }
  return a;
}

static void append_rank_summary(gs_json_build *b, cJSON *ranks, const gs_telemetry_rank *r) {
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  gs_json_put_number(b, o, "rank", r->rank);
  gs_json_put_number(b, o, "device", r->device);
  gs_json_put_string(b, o, "pci_bus_id", r->pci_bus_id);
  gs_json_put_u64(b, o, "samples", r->samples);
  for (size_t f = 0; f < GS_TELEMETRY_FIELD_COUNT; f++)
    put_range(b, o, field_names[f], &r->range[f]);
  if (r->throttle_known)
    gs_json_put_item(b, o, "throttle_reasons", throttle_to_json(b, r->throttle_seen));
  else
    gs_json_put_null(b, o, "throttle_reasons");
  if (r->ecc_known) {
    cJSON *ecc = gs_json_put_object(b, o, "ecc_errors");
    gs_json_put_u64(b, ecc, "corrected", r->ecc_corrected);
    gs_json_put_u64(b, ecc, "uncorrected", r->ecc_uncorrected);
  } else {
    gs_json_put_null(b, o, "ecc_errors");
  }
  if (r->processes_known) {
    cJSON *procs = gs_json_put_object(b, o, "compute_processes");
    gs_json_put_u64(b, procs, "max", r->processes_max);
  } else {
    gs_json_put_null(b, o, "compute_processes");
  }
  gs_json_append(b, ranks, o);
}

/* Column arrays of one rank's series; unknown values are null. */
static void append_rank_series(gs_json_build *b, cJSON *series, const gs_telemetry_rank *r) {
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  gs_json_put_number(b, o, "rank", r->rank);
  gs_json_put_number(b, o, "device", r->device);
  cJSON *time = gs_json_put_array(b, o, "time_seconds");
  for (size_t i = 0; !b->failed && i < r->series_n; i++)
    gs_json_append_number(b, time, r->series_time[i]);
  for (size_t f = 0; f < GS_TELEMETRY_FIELD_COUNT; f++) {
    cJSON *col = gs_json_put_array(b, o, field_names[f]);
    for (size_t i = 0; !b->failed && i < r->series_n; i++)
      gs_json_append_number(b, col, r->series_values[i * GS_TELEMETRY_FIELD_COUNT + f]);
  }
  cJSON *thr = gs_json_put_array(b, o, "throttle_reasons");
  for (size_t i = 0; !b->failed && i < r->series_n; i++)
    gs_json_append(b, thr,
                   r->series_throttle_known[i] ? throttle_to_json(b, r->series_throttle[i])
                                               : gs_json_check(b, cJSON_CreateNull()));
  gs_json_append(b, series, o);
}

cJSON *gs_telemetry_to_json(const gs_telemetry *t) {
  gs_json_build b = {0};
  cJSON *o = gs_json_check(&b, cJSON_CreateObject());
  gs_json_put_bool(&b, o, "available", t->available != 0);
  gs_json_put_string_or_null(&b, o, "reason", t->reason);
  gs_json_put_number(&b, o, "interval_seconds", t->interval_seconds);
  cJSON *ranks = gs_json_put_array(&b, o, "ranks");
  for (size_t k = 0; !b.failed && t->available && k < t->n_ranks; k++)
    append_rank_summary(&b, ranks, &t->ranks[k]);
  if (t->available && t->keep_series) {
    cJSON *series = gs_json_put_array(&b, o, "series");
    for (size_t k = 0; !b.failed && k < t->n_ranks; k++)
      append_rank_series(&b, series, &t->ranks[k]);
  }
  return gs_json_build_finish(&b, o);
}
