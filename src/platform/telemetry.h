/* GPU telemetry during a measurement: a background thread reads, every
 * interval, each rank's GPU through NVML (utilization, memory used, power,
 * SM and memory clocks, temperature, throttle reasons) and keeps min, mean
 * and max per field, plus the whole series when asked. Without NVML (CPU
 * backend, no driver) telemetry is simply unavailable and says why. The
 * summary part is plain data, testable without a GPU. See docs/telemetry.md. */
#ifndef GS_TELEMETRY_H
#define GS_TELEMETRY_H

#include <pthread.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/result.h"
#include "platform/nvml.h"

/* The numeric fields, in the order of the result document. */
typedef enum {
  GS_TELEMETRY_UTILIZATION = 0, /* percent */
  GS_TELEMETRY_MEMORY_USED,     /* bytes */
  GS_TELEMETRY_POWER,           /* watts */
  GS_TELEMETRY_SM_CLOCK,        /* MHz */
  GS_TELEMETRY_MEMORY_CLOCK,    /* MHz */
  GS_TELEMETRY_TEMPERATURE,     /* degrees Celsius */
  GS_TELEMETRY_FIELD_COUNT
} gs_telemetry_field;

/* Running min/mean/max of one field; n == 0 means NVML never gave it. */
typedef struct {
  size_t n;
  double min, max, sum;
} gs_telemetry_range;

/* Everything sampled from one rank's GPU. */
typedef struct {
  int rank;
  int device;                          /* CUDA ordinal */
  char pci_bus_id[GS_TEXT_SHORT];
  size_t samples;                      /* readings taken (NVML found the GPU) */
  gs_telemetry_range range[GS_TELEMETRY_FIELD_COUNT];
  int throttle_known;                  /* NVML reported throttle reasons at least once */
  unsigned long long throttle_seen;    /* union of GS_NVML_THROTTLE_* bits seen */
  int ecc_known;                       /* NVML gave ECC counts at least once */
  unsigned long long ecc_corrected, ecc_uncorrected; /* largest volatile counts read */
  int processes_known;                 /* NVML listed the compute processes at least once */
  unsigned processes_max;              /* most compute processes at once, the measuring one
                                          included: others shared the GPU when > 1 */
  /* The series, kept only on request: series_n readings, values row-major
   * [reading][field] with NaN for a field NVML did not give. */
  size_t series_n, series_cap;
  double *series_time;                 /* seconds since the sampler started */
  double *series_values;
  unsigned long long *series_throttle; /* bits per reading */
  unsigned char *series_throttle_known;
} gs_telemetry_rank;

typedef struct {
  double interval_seconds;             /* 0 = sampling turned off */
  int keep_series;
  int available;                       /* 1 when the sampler ran with NVML */
  char reason[GS_TEXT_LONG];           /* why not available; "" when available */
  size_t n_ranks;
  gs_telemetry_rank *ranks;            /* owned */
  /* The sampler thread (valid while running). */
  gs_nvml *nvml;
  int running;
  int stop_requested;
  double started_at;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;
} gs_telemetry;

/* Name of a field as it appears in the document ("utilization_percent"). */
const char *gs_telemetry_field_name(gs_telemetry_field field);

/* Adds one value to a range. */
void gs_telemetry_range_add(gs_telemetry_range *r, double value);

/* Mean of a range; NaN when it has no value. */
double gs_telemetry_range_mean(const gs_telemetry_range *r);

/* Sets up `t` for n_ranks ranks (allocated) with the given interval, not
 * sampling; `available` 0 and reason "". Fails only on allocation. */
gs_status gs_telemetry_init(gs_telemetry *t, size_t n_ranks, double interval_seconds,
                            int keep_series);

/* Marks telemetry unavailable with a reason (printf-style). */
void gs_telemetry_set_unavailable(gs_telemetry *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Adds one reading of rank `rank` taken `seconds` after the start: found
 * fields enter their ranges (memory in bytes, power in watts), missing ones
 * stay unknown; with keep_series the reading is also appended to the series.
 * Called by the sampler thread, or by tests. Returns GS_ERR_NOMEM when the
 * series cannot grow (the summary is still updated). */
gs_status gs_telemetry_record(gs_telemetry *t, size_t rank, const gs_nvml_sample *sample,
                              double seconds);

/* Starts sampling `n` ranks (devices[k]: CUDA ordinal, bus_ids[k]: its PCI
 * bus id) every interval on a background thread after gs_telemetry_init.
 * When the interval is 0, the list is empty or NVML cannot be loaded,
 * nothing starts and `t` says why telemetry is unavailable: that is not an
 * error. Fails only on allocation or when the thread cannot start. Call from
 * the thread that will call gs_telemetry_stop. May be called again after
 * gs_telemetry_stop: the new readings add to the same summary and series
 * (times from the first start). */
gs_status gs_telemetry_start(gs_telemetry *t, const int *devices, const char *const *bus_ids);

/* Stops and joins the sampler (no-op when it is not running) and unloads
 * NVML. The summary is complete afterwards. */
void gs_telemetry_stop(gs_telemetry *t);

/* The "telemetry" member of a measurement (docs/result-schema.md): NULL
 * on allocation failure; the caller owns it. Call after gs_telemetry_stop. */
cJSON *gs_telemetry_to_json(const gs_telemetry *t);

/* Frees what `t` owns (stops the sampler first if needed). */
void gs_telemetry_free(gs_telemetry *t);

#endif
