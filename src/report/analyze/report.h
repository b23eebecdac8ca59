/* The report's analysis: result documents in, series of rows with their
 * scaling numbers, verdicts and advice out. Reads result documents only
 * (never a GPU); the rows come from the read room (read/row.h). Every
 * number and its formula is written down in docs/report.md. */
#ifndef GS_REPORT_H
#define GS_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/scaling.h"
#include "core/stats.h"
#include "core/status.h"
#include "core/coll_model.h"
#include "report/read/row.h"

#define GS_REPORT_ADVICE_MAX 32

/* Measurements sharing workload, backend, scaling and workload options. */
typedef struct {
  char workload[64];
  char backend[64];          /* "" when null */
  char scaling[64];          /* "strong", "weak", "none" or "" */
  char *options;             /* canonical JSON of the workload options; owned */
  char label[192];           /* variant, scenario and plan task that also key the series
                                (e.g. "variant batch=8"); "" when none */
  char split[16];            /* split.policy ("even", "proportional") or "" */
  char title[256];           /* the series named by what tells it from the other series of
                                the report: "voxelize (cuda, grid=[256,256,256])";
                                unique within the report (gs_report_load sets it) */
  const char *item_unit;     /* e.g. "points", or NULL; points into a document */
  size_t n_rows;
  gs_report_row *rows;       /* sorted by world size, then file order; owned */
  gs_verdict verdict;
  int verdict_world_size;    /* the N the verdict is based on (0: none) */
  int single_run;            /* 1: not a series measured together (one rank count, or
                                another tool's runs): no speedup, no verdict */
  size_t n_advice;
  char *advice[GS_REPORT_ADVICE_MAX]; /* recommendation sentences citing numbers; owned */
} gs_report_series;


typedef struct {
  size_t n_files;
  char **files;              /* paths as given; owned */
  cJSON **docs;              /* the documents; owned */
  gs_report_thresholds thresholds;
  gs_report_prices prices;   /* from --price; n == 0 when none */
  unsigned flags;            /* GS_REPORT_* flags it was loaded with */
  int expect_gpus;           /* GPUs the node verdict expects (0: not given; machine.h) */
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

/* gs_report_load_with flag: free each document's sample arrays (step,
 * device, wall and comm seconds) once it is analysed. Saves memory and time
 * when only the analysis is rendered; only the per-sample CSV
 * (GS_REPORT_CSV_SAMPLES) reads the documents' samples afterwards (plots and
 * compare use GS_REPORT_ROW_SAMPLES). */
#define GS_REPORT_DROP_SAMPLES 1u

/* gs_report_load_with flag: keep each row's step samples and each rank's
 * samples as arrays of doubles (gs_report_rank.samples; the rows' step
 * samples are always kept), the analysis' own copies. With
 * GS_REPORT_DROP_SAMPLES too, a caller that needs the samples (compare,
 * plots) holds 8 bytes a sample instead of the documents' JSON nodes. */
#define GS_REPORT_ROW_SAMPLES 2u

/* Like gs_report_load, with prices for the cost columns (may be NULL) and
 * GS_REPORT_* flags. */
gs_status gs_report_load_with(const char *const *paths, size_t n, const gs_report_thresholds *th,
                              const gs_report_prices *prices, unsigned flags, gs_report *out);

/* Frees everything `r` owns and zeroes it. Safe on a zeroed report. */
void gs_report_free(gs_report *r);

/* The one series identity (docs/report.md#series), used by the analysis to
 * gather rows into series, by compare to pair series and by the plots:
 * 1 when `a` and `b` have the same workload, backend, scaling, canonical
 * workload options (they hold e.g. an llm's --tp and a coll sweep's
 * options), label (variant, scenario, plan task) and, unless
 * `ignore_split`, split policy. Only those members of `a` and `b` are
 * read. */
int gs_report_series_same(const gs_report_series *a, const gs_report_series *b, int ignore_split);


/* "WORKLOAD (LABEL, split POLICY)" of series `s` (only the parts it has,
 * e.g. "mlp (variant batch=8)" or plain "voxelize") into `out`. */
void gs_report_series_name(const gs_report_series *s, char *out, size_t size);

/* The warmup rule of the recommendations: 1 when rank `rk`'s first timed
 * sample (of its first run) is above GS_REPORT_WARMUP_FLAG x its median,
 * i.e. warmup ended before the rank was warm. A slow first iteration alone
 * (before warmup: graph capture, allocation) gives 0. */
int gs_report_needs_warmup(const gs_report_rank *rk);

/* How many collective rows of `r` have a bus bandwidth that disagrees with
 * algbw x the op's factor (busbw_mismatch); the first such row into
 * *first when not NULL. */
size_t gs_report_busbw_mismatches(const gs_report *r, const gs_report_row **first);

/* The base name of report file i (for display). */
const char *gs_report_file_name(const gs_report *r, size_t file);

/* The send/recv curve at 2 ranks of the ok coll sendrecv rows of `r`
 * measured on the host of document `file_of` with `backend` (time per op
 * against its bytes; analyze/pipeline.c), and the file it came from; 0
 * when there is none with two sizes or memory runs out. Free with
 * gs_coll_curve_free. */
int gs_report_sendrecv_curve(const gs_report *r, size_t file_of, const char *backend,
                             gs_coll_curve *out, const char **file);

#endif
