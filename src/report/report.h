/* The report layer's analysis: result documents in, a table of scaling
 * numbers out. Reads result documents only (never a GPU) and depends on
 * core/ alone. Every number and its formula is written down in
 * docs/report.md; the field names here match that page. */
#ifndef GS_REPORT_H
#define GS_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/stats.h"
#include "core/status.h"

/* Default rank-mark thresholds: relative deviation of a rank's throughput
 * from the median rank throughput, as fractions (0.05 = 5%). */
#define GS_REPORT_MODERATE_DEFAULT 0.05
#define GS_REPORT_CRITICAL_DEFAULT 0.15
/* A sample counts as "stable" when within this fraction of its rank's mean. */
#define GS_REPORT_STABLE_BAND 0.15
/* A rank's cold start is flagged when first iteration / median exceeds this. */
#define GS_REPORT_COLD_FLAG 2.0
/* Speedup thresholds of the recommendation at the largest world size. */
#define GS_REPORT_BENEFICIAL_SPEEDUP 1.1
#define GS_REPORT_MARGINAL_SPEEDUP 0.95

typedef struct {
  double moderate; /* fraction; deviation above it is "moderate" */
  double critical; /* fraction; deviation above it is "critical" */
} gs_report_thresholds;

typedef enum {
  GS_MARK_NONE = 0, /* no throughput (no samples): not marked */
  GS_MARK_GOOD,
  GS_MARK_MODERATE,
  GS_MARK_CRITICAL
} gs_rank_mark;

/* "good", "moderate", "critical" or "n/a". */
const char *gs_rank_mark_name(gs_rank_mark mark);

/* One rank of one measurement, pooled over the measurement's runs. Doubles
 * that are not available are NaN. */
typedef struct {
  int rank;
  char status[32];           /* first non-"ok" status over the runs, else "ok" */
  const char *error;         /* that run's error text, or NULL; points into the document */
  const char *clock;         /* "device", "wall" or "mixed": which samples were used */
  uint64_t items_per_step;   /* the rank's share (from its first run) */
  size_t n;                  /* samples used */
  double mean, min, max, stddev, median;
  double stable_share;       /* samples within GS_REPORT_STABLE_BAND of mean / n */
  double throughput;         /* items_per_step / mean */
  double deviation;          /* |throughput - median rank throughput| / median */
  gs_rank_mark mark;
  double first_seconds;      /* first_iteration_seconds of the first run that has one */
  double cold_ratio;         /* first_seconds / median */
  int cold_flag;             /* cold_ratio > GS_REPORT_COLD_FLAG */
} gs_report_rank;

/* One measurement (a workload at one world size) of a series. */
typedef struct {
  size_t file;               /* index into gs_report.files */
  size_t measurement;        /* index in that document's measurements */
  int world_size;
  char status[32];           /* the measurement's status */
  char verification[32];     /* "passed", "failed", "skipped" or "-" */
  const char *error;         /* the measurement's error, or NULL (points into the document) */
  int has_step;              /* 1 when step_seconds held at least one number */
  gs_stats step;             /* over all runs' step_seconds (nulls skipped) */
  size_t step_nulls;         /* null elements of step_seconds skipped */
  uint64_t items_per_step;   /* cost.items_per_step; 0 when absent */
  double throughput;         /* items_per_step / step.mean */
  double speedup;            /* throughput / throughput of the series' 1-rank row */
  double efficiency;         /* speedup / world_size */
  double karp_flatt;         /* (1/S - 1/N) / (1 - 1/N), N > 1 */
  double ideal_throughput;   /* world_size * throughput of the 1-rank row */
  size_t n_ranks;
  gs_report_rank *ranks;     /* world_size entries, by rank number; owned */
  double spread_ratio;       /* max / min rank throughput (world_size > 1) */
  double spread_cv;          /* stddev (n - 1) / mean of rank throughputs */
  double rank_median;        /* median of rank throughputs */
  int straggler;             /* slowest rank when it is critical, else -1 */
} gs_report_row;

typedef enum {
  GS_VERDICT_NONE = 0,       /* no speedup at N > 1 is available */
  GS_VERDICT_BENEFICIAL,     /* speedup >= 1.1 */
  GS_VERDICT_MARGINAL,       /* 0.95 <= speedup < 1.1 */
  GS_VERDICT_SINGLE          /* speedup < 0.95 */
} gs_verdict;

/* "beneficial", "marginal", "single GPU preferred" or "none". */
const char *gs_verdict_name(gs_verdict verdict);

#define GS_REPORT_ADVICE_MAX 16

/* Measurements sharing workload, backend, scaling and workload options. */
typedef struct {
  char workload[64];
  char backend[64];          /* "" when null */
  char scaling[64];          /* "strong", "weak", "none" or "" */
  char *options;             /* canonical JSON of the workload options; owned */
  const char *item_unit;     /* e.g. "points", or NULL; points into a document */
  size_t n_rows;
  gs_report_row *rows;       /* sorted by world size, then file order; owned */
  gs_verdict verdict;
  int verdict_world_size;    /* the N the verdict is based on (0: none) */
  size_t n_advice;
  char *advice[GS_REPORT_ADVICE_MAX]; /* recommendation sentences citing numbers; owned */
} gs_report_series;

typedef struct {
  size_t n_files;
  char **files;              /* paths as given; owned */
  cJSON **docs;              /* the documents; owned */
  gs_report_thresholds thresholds;
  size_t n_series;
  gs_report_series *series;  /* in order of first appearance; owned */
} gs_report;

/* Reads the result documents `paths[0..n)` (n >= 1) with gs_result_read and
 * analyses them with the given thresholds (0 < moderate < critical). On
 * success `*out` owns everything (free with gs_report_free). Errors name the
 * file: GS_ERR_IO (unreadable), GS_ERR_FORMAT (invalid JSON, foreign schema,
 * or a measurement inconsistent with itself, e.g. a run whose ranks do not
 * match world_size), GS_ERR_USAGE (bad thresholds), GS_ERR_NOMEM. */
gs_status gs_report_load(const char *const *paths, size_t n, const gs_report_thresholds *th,
                         gs_report *out);

/* Frees everything `r` owns and zeroes it. Safe on a zeroed report. */
void gs_report_free(gs_report *r);

/* The base name of report file i (for display). */
const char *gs_report_file_name(const gs_report *r, size_t file);

#endif
