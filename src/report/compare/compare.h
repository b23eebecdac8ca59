/* `gpuscale compare BASE NEW`: the measurements two result documents share,
 * metric by metric, with the change, its 95% confidence interval and a
 * Mann-Whitney U test; regressions beyond a threshold are flagged. Formulas
 * in docs/compare.md. */
#ifndef GS_REPORT_COMPARE_H
#define GS_REPORT_COMPARE_H

#include <stdio.h>

#include "core/ranktest.h"
#include "report/analyze/report.h"

/* The verdict of one metric. With samples: significance from the U test,
 * the direction from the test (gs_ranktest.direction), the size from the
 * change of the medians. Without samples (figures of ingested documents):
 * the change of the figures against the figure threshold alone. A p99 of
 * per-request times: significance from its bootstrap interval. */
typedef enum {
  GS_CHANGE_NOT_SIGNIFICANT = 0, /* p >= alpha */
  GS_CHANGE_WITHIN,              /* significant (or a figure), but not by more than the threshold
                                    in the test's direction */
  GS_CHANGE_IMPROVEMENT,         /* significant and better by more than the threshold */
  GS_CHANGE_REGRESSION,          /* significant and worse by more than the threshold */
  GS_CHANGE_UNDECIDABLE          /* too few samples: the test's smallest p is >= alpha (a p99:
                                    fewer than GS_COMPARE_TAIL_SAMPLES a side) */
} gs_change_verdict;

/* "not significant", "within threshold", "improvement", "regression",
 * "undecidable". */
const char *gs_change_verdict_name(gs_change_verdict v);

typedef struct {
  size_t series;             /* index into the BASE report's series */
  int world_size;
  char metric[64];           /* "step time", "throughput", "rank R time" */
  const char *unit;          /* "s" or "<items>/s" */
  int higher_is_better;
  size_t n_base, n_new;
  double base_mean, new_mean;
  double change;             /* (new - base) / base of the means (throughput: of items /
                                mean step, the report's definition) */
  double ci_low, ci_high;    /* 95% interval of the change (the two-level bootstrap of
                                docs/statistics.md), as fractions of base */
  double detectable;         /* the smallest change these samples can tell from noise: half
                                the interval's width (fraction); NaN for figures and
                                undecidable rows (no change could be found) */
  size_t samples_needed;     /* undecidable rows: the samples a side a verdict needs; else 0 */
  double min_p;              /* the smallest two-sided p the U test can give with these
                                sample counts (2 / C(m + n, m)) */
  double median_change;      /* median(new) / median(base) - 1: the size the verdict uses */
  int figure;                /* 1: compared by recorded figures (no samples): no test, the
                                test members are NaN and change == median_change */
  int percentile;            /* 1: a p99 of per-request times (tails.c): base_mean and
                                new_mean are the p99s, the interval is the bootstrap's of
                                their ratio and decides; no U test (its members NaN) */
  gs_ranktest test;
  gs_change_verdict verdict;
} gs_compare_row;

typedef struct {
  char base_name[512];       /* BASE and NEW as given (a file or a directory) */
  char new_name[512];
  gs_report base, next;      /* both sides' documents, analysed */
  double alpha;              /* significance level */
  double threshold;          /* fraction: smallest change that counts */
  double figure_threshold;   /* fraction: the same for figures compared without samples */
  size_t n_rows;
  gs_compare_row *rows;      /* owned */
  size_t n_notes;
  char **notes;              /* measurements only one side has; owned */
  size_t regressions;
  size_t undecidable;        /* rows whose sample counts cannot reach alpha */
} gs_compare;

/* Reads and compares BASE and NEW. Measurements are paired by the series
 * identity (gs_report_series_same) and point (gs_report_point_same), the
 * k-th repeat of a point with the k-th. Pairs with raw samples are tested
 * (alpha, threshold: fractions); pairs where a side has none are compared
 * by their recorded figures against `figure_threshold` (a fraction).
 * GS_ERR_FORMAT when the two share no measurement (the error lists what
 * each holds) unless neither has any measurement (then no rows and a
 * note), plus gs_report_load's errors. */
gs_status gs_compare_load(const char *base_path, const char *new_path, double alpha,
                          double threshold, double figure_threshold, gs_compare *out);

/* Like gs_compare_load with several documents a side (`base[0..n_base)`
 * and `next[0..n_next)`, n >= 1 each, read on all cores), named `base_name`
 * and `new_name` in the output (e.g. the directories they came from). Each
 * side's documents form one report: a point measured in k documents has k
 * repeats, paired in file order with the other side's. */
gs_status gs_compare_load_sets(const char *const *base, size_t n_base, const char *const *next,
                               size_t n_next, const char *base_name, const char *new_name,
                               double alpha, double threshold, double figure_threshold,
                               gs_compare *out);

void gs_compare_free(gs_compare *c);

/* Output formats of compare. */
typedef enum { GS_COMPARE_TEXT = 0, GS_COMPARE_MARKDOWN, GS_COMPARE_JSON } gs_compare_format;
extern const char *const gs_compare_format_choices[];

/* Writes the comparison; GS_ERR_IO when a write fails, GS_ERR_NOMEM. */
gs_status gs_compare_render(FILE *out, const gs_compare *c, gs_compare_format format);

#endif
