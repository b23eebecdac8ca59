/* Descriptive statistics of timing samples. Every formula is written down in
 * docs/statistics.md; the names here match that page. */
#ifndef GS_STATS_H
#define GS_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* Warning flags set by gs_stats_compute (bitwise OR). */
enum {
  GS_STATS_WARN_FEW_SAMPLES = 1 << 0, /* n < GS_STATS_MIN_SAMPLES */
  GS_STATS_WARN_NOISY = 1 << 1,       /* cv > GS_STATS_NOISY_CV */
  GS_STATS_WARN_SHORT = 1 << 2,       /* sum of samples < GS_STATS_MIN_TOTAL_SECONDS */
  GS_STATS_WARN_OUTLIERS = 1 << 3     /* more than GS_STATS_MAX_OUTLIER_SHARE outliers */
};

#define GS_STATS_MIN_SAMPLES 10
#define GS_STATS_NOISY_CV 0.05
#define GS_STATS_MIN_TOTAL_SECONDS 0.01
#define GS_STATS_MAX_OUTLIER_SHARE 0.05
#define GS_STATS_OUTLIER_Z 3.5 /* modified z-score threshold (Iglewicz-Hoaglin) */

typedef struct {
  size_t n;
  double mean;
  double median;
  double stddev;      /* sample standard deviation (n - 1); 0 when n < 2 */
  double cv;          /* stddev / mean; 0 when mean == 0 */
  double min, max;
  double p50, p90, p95, p99; /* linear interpolation between order statistics (Hyndman-Fan 7) */
  double ci95_low, ci95_high; /* mean +- t(0.975, n-1) * stddev / sqrt(n); = mean when n < 2 */
  double mad;         /* median absolute deviation from the median (unscaled) */
  size_t outliers;    /* samples with modified z-score |0.6745 (x - median) / mad| > 3.5 */
  double sum;
  unsigned warnings;  /* GS_STATS_WARN_* */
} gs_stats;

/* Computes all fields from `samples` (n >= 1, all finite; not modified).
 * Returns GS_ERR_USAGE for n == 0 or a non-finite sample, GS_ERR_NOMEM when
 * the scratch copy cannot be allocated. Thread-safe. */
gs_status gs_stats_compute(const double *samples, size_t n, gs_stats *out);

/* Sorts finite doubles ascending in place (radix sort; falls back to
 * qsort when its scratch memory cannot be allocated). */
void gs_stats_sort(double *v, size_t n);

/* Percentile p in [0, 100] of ascending-sorted data (Hyndman-Fan type 7:
 * h = (n - 1) p / 100, linear between the order statistics around h). */
double gs_stats_percentile_sorted(const double *sorted, size_t n, double p);

/* Samples from which gs_stats_median_interval's interval covers the
 * median with 95% or more: below it the interval is [min, max], which
 * covers it with 1 - 2^(1-n) only (93.8% at n = 5). */
#define GS_STATS_MEDIAN_INTERVAL_MIN_N 6

/* The median of v[0..n) (finite; sorted in place) and its 95%
 * distribution-free interval: the order statistics l = floor(n/2 - 0.98
 * sqrt(n)) and u = ceil(1 + n/2 + 0.98 sqrt(n)) (1-based, clamped to
 * 1..n), from the binomial count of values below the median (95% or a
 * little more from n = 6 on; [min, max] below that). All three NaN when
 * n == 0. Returns 1 when the interval is a 95% one (n >=
 * GS_STATS_MEDIAN_INTERVAL_MIN_N), 0 when the samples are too few for one.
 * Used by the arrival lateness and the cost of recording it, and by the
 * roofline fraction's interval (core/roofline.h). */
int gs_stats_median_interval(double *v, size_t n, double *median, double *low, double *high);

/* Two-sided 97.5% quantile of Student's t with `dof` degrees of freedom
 * (dof >= 1): exact table up to 30, then a series in 1/dof. */
double gs_stats_t975(size_t dof);

/* Cold-start penalty: first-iteration time divided by the median of the
 * timed samples (1.0 = no penalty). Returns 0 when median <= 0. */
double gs_stats_cold_start_ratio(double first_seconds, double median_seconds);

/* One group of samples (a run's step times) for the bootstrap below. */
typedef struct {
  const double *samples; /* n finite samples */
  size_t n;
} gs_stats_group;

/* Resamples drawn by gs_stats_ratio_interval, its seed, and the group size
 * above which the mean of a group's resample is drawn from its normal
 * limit instead of element by element (docs/statistics.md). */
#define GS_STATS_BOOTSTRAP_REPLICATES 2000
#define GS_STATS_BOOTSTRAP_SEED UINT64_C(0x67707363616c6521)
#define GS_STATS_BOOTSTRAP_EXACT 256

/* 95% interval of the ratio of means mean(a) / mean(b), where a and b are
 * samples in groups (runs of steps; a group with n = 0 is left out): a
 * two-level percentile bootstrap with GS_STATS_BOOTSTRAP_REPLICATES
 * replicates and the fixed seed, so the same samples always give the same
 * interval. Each replicate draws as many groups as there are, with
 * replacement, and within each drawn group as many samples as it holds,
 * with replacement; the replicate's ratio is the pooled mean of a's draw
 * over that of b's. [*low, *high] are the 2.5% and 97.5% percentiles
 * (Hyndman-Fan 7) of the replicate ratios; both NaN when a side has fewer
 * than 2 samples or a non-positive mean, or memory runs out. Thread-safe. */
void gs_stats_ratio_interval(const gs_stats_group *a, size_t na, const gs_stats_group *b,
                             size_t nb, double *low, double *high);

/* 95% interval of the ratio of means mean(a) / mean(b) of paired samples:
 * a[g] and b[g] are group g's samples (a run's steps or calls) taken
 * together, a[g].n == b[g].n (a group with n = 0 is left out). The same
 * two-level percentile bootstrap as gs_stats_ratio_interval (replicates,
 * seed, percentiles) except that each draw takes a group, and within it a
 * sample, for both sides at once, so that what moves a and b together (a
 * longer call that is both busier and idler) cancels in the ratio. A group
 * above GS_STATS_BOOTSTRAP_EXACT pairs contributes a draw from the
 * bivariate normal limit of its resample sums (means, population standard
 * deviations and correlation of its pairs). Both NaN when there are fewer
 * than 2 pairs, b's mean is not positive, or memory runs out; a's mean may
 * be 0 or negative. Thread-safe. */
void gs_stats_paired_ratio_interval(const gs_stats_group *a, const gs_stats_group *b,
                                    size_t n_groups, double *low, double *high);

/* Human-readable text of the warning flags, e.g. "noisy (cv 7.2% > 5%)";
 * writes "" when none. */
void gs_stats_describe_warnings(const gs_stats *s, char *buf, size_t size);

#endif
