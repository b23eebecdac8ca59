/* Descriptive statistics of timing samples: location, spread, percentiles,
 * a 95% confidence interval on the mean, robust outlier counting and the
 * warnings derived from them. docs/statistics.md defines every field. */
#include "core/stats.h"

#include "core/rng.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 97.5% quantiles of Student's t for 1..30 degrees of freedom (index 0 unused). */
static const double t975_table[31] = {
    0.0,         12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836,
    2.446911851, 2.364624252,  2.306004135, 2.262157163, 2.228138852, 2.200985160,
    2.178812830, 2.160368656,  2.144786688, 2.131449546, 2.119905299, 2.109815578,
    2.100922040, 2.093024054,  2.085963447, 2.079613845, 2.073873068, 2.068657610,
    2.063898562, 2.059538553,  2.055529439, 2.051830516, 2.048407142, 2.045229642,
    2.042272456};

/* 97.5% quantile of the standard normal distribution. */
#define GS_Z975 1.959963984540054

/* Consistency constant of the modified z-score: the 75% normal quantile, so
 * that MAD / 0.6745 estimates the standard deviation of normal data. */
#define GS_MAD_SCALE 0.6745
/* Fallback when MAD == 0: mean absolute deviation times sqrt(pi / 2)
 * estimates the standard deviation of normal data. */
#define GS_MEANAD_SCALE 1.2533141373155003

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The bits of finite double x as an unsigned key in the same order:
 * negative numbers have all bits flipped, others the sign bit set. */
static uint64_t sort_key(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return (u >> 63) ? ~u : u | ((uint64_t)1 << 63);
}

/* See stats.h. Least-significant-digit radix sort on 8-bit digits, which
 * skips digits that all keys share (the high ones of timing samples);
 * several times faster than qsort at 10^4..10^6 samples. */
void gs_stats_sort(double *v, size_t n) {
  if (n < 256) {
    for (size_t i = 1; i < n; i++) {  // insertion sort: small n
      double x = v[i];
      size_t j = i;
      for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
      v[j] = x;
    }
    return;
  }
  double *tmp = malloc(n * sizeof *tmp);
  size_t (*count)[256] = calloc(8, sizeof *count);
  if (!tmp || !count) {
    free(tmp);
    free(count);
    qsort(v, n, sizeof *v, compare_doubles);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    uint64_t k = sort_key(v[i]);
    for (int d = 0; d < 8; d++) count[d][(k >> (8 * d)) & 0xff]++;
  }
  double *from = v, *to = tmp;
  for (int d = 0; d < 8; d++) {
    size_t *c = count[d];
    if (c[(sort_key(from[0]) >> (8 * d)) & 0xff] == n) continue;  // one bucket: no-op pass
    size_t at = 0;
    for (int b = 0; b < 256; b++) {
      size_t here = c[b];
      c[b] = at;
      at += here;
    }
    for (size_t i = 0; i < n; i++) to[c[(sort_key(from[i]) >> (8 * d)) & 0xff]++] = from[i];
    double *swap = from;
    from = to;
    to = swap;
  }
  if (from != v) memcpy(v, from, n * sizeof *v);
  free(tmp);
  free(count);
}

/* See stats.h; returns NaN for dof == 0 (no spread estimate exists). */
double gs_stats_t975(size_t dof) {
  if (dof == 0) return NAN;
  if (dof <= 30) return t975_table[dof];
  // Cornish-Fisher expansion of t in powers of 1/dof around the normal
  // quantile (Abramowitz & Stegun 26.7.5); error < 1e-7 for dof > 30.
  const double z = GS_Z975, z2 = z * z;
  const double z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
  const double g1 = (z3 + z) / 4.0;
  const double g2 = (5.0 * z5 + 16.0 * z3 + 3.0 * z) / 96.0;
  const double g3 = (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / 384.0;
  const double g4 = (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z) / 92160.0;
  const double v = 1.0 / (double)dof;
  return z + v * (g1 + v * (g2 + v * (g3 + v * g4)));
}

/* See stats.h; p outside [0, 100] is clamped, and an empty list or a NaN p
 * gives NaN. */
double gs_stats_percentile_sorted(const double *sorted, size_t n, double p) {
  if (sorted == NULL || n == 0 || isnan(p)) return NAN;
  if (p <= 0.0) return sorted[0];
  if (p >= 100.0) return sorted[n - 1];
  double h = (double)(n - 1) * p / 100.0;
  size_t lo = (size_t)floor(h);
  if (lo >= n - 1) return sorted[n - 1];
  double frac = h - (double)lo;
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

int gs_stats_median_interval(double *v, size_t n, double *median, double *low, double *high) {
  *median = *low = *high = NAN;
  if (n == 0) return 0;
  gs_stats_sort(v, n);
  *median = gs_stats_percentile_sorted(v, n, 50.0);
  const double half = 0.5 * (double)n, spread = 0.98 * sqrt((double)n);
  double l = floor(half - spread), u = ceil(1.0 + half + spread);
  if (l < 1.0) l = 1.0;
  if (u > (double)n) u = (double)n;
  *low = v[(size_t)l - 1];
  *high = v[(size_t)u - 1];
  return n >= GS_STATS_MEDIAN_INTERVAL_MIN_N;
}

/* See stats.h; also 0 when either time is not finite. */
double gs_stats_cold_start_ratio(double first_seconds, double median_seconds) {
  if (!isfinite(first_seconds) || !isfinite(median_seconds) || median_seconds <= 0.0) return 0.0;
  return first_seconds / median_seconds;
}

/* Counts samples whose modified z-score exceeds GS_STATS_OUTLIER_Z. */
static size_t count_outliers(const double *samples, size_t n, double median, double mad) {
  double scale;  // divides |x - median| to give the modified z-score
  if (mad > 0.0) {
    scale = mad / GS_MAD_SCALE;
  } else {
    // More than half the samples equal the median; fall back to the mean
    // absolute deviation so that a lone slow sample is still caught, while
    // a set of identical samples has no outliers at all.
    double sum_abs = 0.0;
    for (size_t i = 0; i < n; i++) sum_abs += fabs(samples[i] - median);
    double mean_ad = sum_abs / (double)n;
    if (mean_ad == 0.0) return 0;
    scale = GS_MEANAD_SCALE * mean_ad;
  }
  size_t count = 0;
  for (size_t i = 0; i < n; i++)
    if (fabs(samples[i] - median) / scale > GS_STATS_OUTLIER_Z) count++;
  return count;
}

/* See stats.h. cv divides by |mean| so that it is never negative; a sum
 * that overflows is rejected like a non-finite sample; *out is zeroed on
 * any error. */
gs_status gs_stats_compute(const double *samples, size_t n, gs_stats *out) {
  if (out == NULL) GS_BUG("statistics: no output structure");
  memset(out, 0, sizeof *out);
  if (n == 0 || samples == NULL) return gs_error(GS_ERR_USAGE, "statistics: no samples");
  for (size_t i = 0; i < n; i++)
    if (!isfinite(samples[i]))
      return gs_error(GS_ERR_USAGE, "statistics: sample %zu of %zu is not a finite number", i + 1,
                      n);

  double sum = 0.0;
  for (size_t i = 0; i < n; i++) sum += samples[i];
  if (!isfinite(sum))
    return gs_error(GS_ERR_USAGE, "statistics: the sum of %zu samples overflows", n);
  double mean = sum / (double)n;

  // Corrected two-pass variance: the second term removes the rounding error
  // left in the mean (it is exactly 0 in exact arithmetic).
  double ss = 0.0, comp = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = samples[i] - mean;
    ss += d * d;
    comp += d;
  }
  double stddev = 0.0;
  if (n >= 2) {
    double var = (ss - comp * comp / (double)n) / (double)(n - 1);
    stddev = var > 0.0 ? sqrt(var) : 0.0;
  }

  double *scratch = malloc(n * sizeof *scratch);
  if (scratch == NULL)
    return gs_error(GS_ERR_NOMEM, "statistics: cannot allocate %zu samples", n);
  memcpy(scratch, samples, n * sizeof *scratch);
  gs_stats_sort(scratch, n);

  out->n = n;
  out->sum = sum;
  out->mean = mean;
  out->stddev = stddev;
  out->cv = mean != 0.0 ? stddev / fabs(mean) : 0.0;
  out->min = scratch[0];
  out->max = scratch[n - 1];
  out->p50 = gs_stats_percentile_sorted(scratch, n, 50.0);
  out->p90 = gs_stats_percentile_sorted(scratch, n, 90.0);
  out->p95 = gs_stats_percentile_sorted(scratch, n, 95.0);
  out->p99 = gs_stats_percentile_sorted(scratch, n, 99.0);
  out->median = out->p50;
  if (n >= 2) {
    double half = gs_stats_t975(n - 1) * stddev / sqrt((double)n);
    out->ci95_low = mean - half;
    out->ci95_high = mean + half;
  } else {
    out->ci95_low = out->ci95_high = mean;
  }

  // The scratch copy is reused for the absolute deviations from the median.
  for (size_t i = 0; i < n; i++) scratch[i] = fabs(scratch[i] - out->median);
  gs_stats_sort(scratch, n);
  out->mad = gs_stats_percentile_sorted(scratch, n, 50.0);
  free(scratch);
  out->outliers = count_outliers(samples, n, out->median, out->mad);

  if (n < GS_STATS_MIN_SAMPLES) out->warnings |= GS_STATS_WARN_FEW_SAMPLES;
  if (out->cv > GS_STATS_NOISY_CV) out->warnings |= GS_STATS_WARN_NOISY;
  if (sum < GS_STATS_MIN_TOTAL_SECONDS) out->warnings |= GS_STATS_WARN_SHORT;
  if ((double)out->outliers > GS_STATS_MAX_OUTLIER_SHARE * (double)n)
    out->warnings |= GS_STATS_WARN_OUTLIERS;
  return GS_OK;
}

/* One side of a ratio for the bootstrap: its groups with each group's
 * mean and population standard deviation (for the normal limit). */
typedef struct {
  const gs_stats_group *groups;
  size_t n;
  double *mean, *sd;
  double pooled; /* mean of all samples */
} boot_side;

/* Fills `side` from groups[0..n), leaving empty groups out; 0 when it has
 * no samples, a non-positive pooled mean or memory runs out. */
static int side_init(boot_side *side, const gs_stats_group *groups, size_t n) {
  memset(side, 0, sizeof *side);
  gs_stats_group *kept = malloc((n ? n : 1) * sizeof *kept);
  side->mean = malloc((n ? n : 1) * sizeof *side->mean);
  side->sd = malloc((n ? n : 1) * sizeof *side->sd);
  side->groups = kept;
  if (!kept || !side->mean || !side->sd) return 0;
  double sum = 0.0;
  size_t count = 0;
  for (size_t g = 0; g < n; g++) {
    if (!groups || groups[g].n == 0 || !groups[g].samples) continue;
    const gs_stats_group *x = &groups[g];
    double s = 0.0, ss = 0.0;
    for (size_t i = 0; i < x->n; i++) s += x->samples[i];
    const double m = s / (double)x->n;
    for (size_t i = 0; i < x->n; i++) ss += (x->samples[i] - m) * (x->samples[i] - m);
    side->mean[side->n] = m;
    side->sd[side->n] = sqrt(ss / (double)x->n);
    kept[side->n++] = *x;
    sum += s;
    count += x->n;
  }
  side->pooled = count ? sum / (double)count : NAN;
  // One sample has no spread to resample: no interval rather than a false
  // certainty.
  return count >= 2 && isfinite(side->pooled) && side->pooled > 0.0;
}

static void side_free(boot_side *side) {
  free((void *)side->groups);
  free(side->mean);
  free(side->sd);
}

/* A standard normal draw (Box-Muller; 1 - u keeps the logarithm finite). */
static double normal_draw(gs_rng *rng) {
  const double u = 1.0 - gs_rng_double(rng), v = gs_rng_double(rng);
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* The pooled mean of one bootstrap draw of `side`: groups drawn with
 * replacement, then samples within each drawn group. A group above
 * GS_STATS_BOOTSTRAP_EXACT samples contributes a draw from the normal
 * limit of its resample sum: n mean + sqrt(n) sd Z, sd the population
 * standard deviation (the exact resample sum's mean and variance). */
static double side_draw(const boot_side *side, gs_rng *rng) {
  double sum = 0.0, count = 0.0;
  for (size_t k = 0; k < side->n; k++) {
    const size_t g = (size_t)gs_rng_below(rng, side->n);
    const gs_stats_group *x = &side->groups[g];
    if (x->n > GS_STATS_BOOTSTRAP_EXACT) {
      const double n = (double)x->n;
      sum += n * side->mean[g] + sqrt(n) * side->sd[g] * normal_draw(rng);
    } else {
      for (size_t i = 0; i < x->n; i++) sum += x->samples[gs_rng_below(rng, x->n)];
    }
    count += (double)x->n;
  }
  return sum / count;
}

/* See stats.h. */
void gs_stats_ratio_interval(const gs_stats_group *a, size_t na, const gs_stats_group *b,
                             size_t nb, double *low, double *high) {
  *low = *high = NAN;
  boot_side sa, sb;
  const int ok_a = side_init(&sa, a, na), ok_b = side_init(&sb, b, nb);
  double *ratios = malloc(GS_STATS_BOOTSTRAP_REPLICATES * sizeof *ratios);
  if (ok_a && ok_b && ratios) {
    gs_rng rng;
    gs_rng_seed(&rng, GS_STATS_BOOTSTRAP_SEED, 0);
    size_t kept = 0;
    for (size_t r = 0; r < GS_STATS_BOOTSTRAP_REPLICATES; r++) {
      const double ma = side_draw(&sa, &rng), mb = side_draw(&sb, &rng);
      // A normal-limit draw can reach 0 or below only for absurd spreads.
      if (ma > 0.0 && mb > 0.0) ratios[kept++] = ma / mb;
    }
    if (kept > 0) {
      gs_stats_sort(ratios, kept);
      *low = gs_stats_percentile_sorted(ratios, kept, 2.5);
      *high = gs_stats_percentile_sorted(ratios, kept, 97.5);
    }
  }
  free(ratios);
  side_free(&sa);
  side_free(&sb);
}

/* One group of pairs for the paired bootstrap: its means, population
 * standard deviations and correlation (for the normal limit). */
typedef struct {
  const double *a, *b;
  size_t n;
  double ma, mb, sa, sb, rho;
} boot_pairs;

/* See stats.h. */
void gs_stats_paired_ratio_interval(const gs_stats_group *a, const gs_stats_group *b,
                                    size_t n_groups, double *low, double *high) {
  *low = *high = NAN;
  boot_pairs *g = malloc((n_groups ? n_groups : 1) * sizeof *g);
  double *ratios = malloc(GS_STATS_BOOTSTRAP_REPLICATES * sizeof *ratios);
  size_t n = 0, count = 0;
  double sum_b = 0.0;
  for (size_t k = 0; g && k < n_groups; k++) {
    if (a[k].n != b[k].n)
      GS_BUG("paired ratio interval: group %zu has %zu and %zu samples", k, a[k].n, b[k].n);
    if (a[k].n == 0 || !a[k].samples || !b[k].samples) continue;
    boot_pairs *x = &g[n++];
    *x = (boot_pairs){a[k].samples, b[k].samples, a[k].n, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < x->n; i++) x->ma += x->a[i], x->mb += x->b[i];
    sum_b += x->mb;
    x->ma /= (double)x->n, x->mb /= (double)x->n;
    double saa = 0.0, sbb = 0.0, sab = 0.0;
    for (size_t i = 0; i < x->n; i++) {
      const double da = x->a[i] - x->ma, db = x->b[i] - x->mb;
      saa += da * da, sbb += db * db, sab += da * db;
    }
    x->sa = sqrt(saa / (double)x->n), x->sb = sqrt(sbb / (double)x->n);
    x->rho = saa > 0.0 && sbb > 0.0 ? sab / sqrt(saa * sbb) : 0.0;
    count += x->n;
  }
  if (g && ratios && count >= 2 && sum_b > 0.0 && isfinite(sum_b)) {
    gs_rng rng;
    gs_rng_seed(&rng, GS_STATS_BOOTSTRAP_SEED, 0);
    size_t kept = 0;
    for (size_t r = 0; r < GS_STATS_BOOTSTRAP_REPLICATES; r++) {
      double sa = 0.0, sb = 0.0;
      for (size_t k = 0; k < n; k++) {
        const boot_pairs *x = &g[gs_rng_below(&rng, n)];
        if (x->n > GS_STATS_BOOTSTRAP_EXACT) {
          const double m = (double)x->n, z1 = normal_draw(&rng), z2 = normal_draw(&rng);
          sa += m * x->ma + sqrt(m) * x->sa * z1;
          sb += m * x->mb +
                sqrt(m) * x->sb * (x->rho * z1 + sqrt(fmax(0.0, 1.0 - x->rho * x->rho)) * z2);
        } else {
          for (size_t i = 0; i < x->n; i++) {
            const size_t j = (size_t)gs_rng_below(&rng, x->n);
            sa += x->a[j], sb += x->b[j];
          }
        }
      }
      // The counts of a replicate's two sides are equal and cancel.
      if (sb > 0.0 && isfinite(sa)) ratios[kept++] = sa / sb;
    }
    if (kept > 0) {
      gs_stats_sort(ratios, kept);
      *low = gs_stats_percentile_sorted(ratios, kept, 2.5);
      *high = gs_stats_percentile_sorted(ratios, kept, 97.5);
    }
  }
  free(ratios);
  free(g);
}

/* Appends one warning phrase to buf, separated by "; ", truncating safely. */
static void append_phrase(char *buf, size_t size, const char *phrase) {
  size_t used = strlen(buf);
  if (used + 1 >= size) return;
  snprintf(buf + used, size - used, "%s%s", used > 0 ? "; " : "", phrase);
}

/* See stats.h; phrases are joined by "; " and truncated to fit `size`. */
void gs_stats_describe_warnings(const gs_stats *s, char *buf, size_t size) {
  if (buf == NULL || size == 0) return;
  buf[0] = '\0';
  if (s == NULL) return;
  char phrase[160];
  if (s->warnings & GS_STATS_WARN_FEW_SAMPLES) {
    snprintf(phrase, sizeof phrase, "few samples (n %zu < %d)", s->n, GS_STATS_MIN_SAMPLES);
    append_phrase(buf, size, phrase);
  }
  if (s->warnings & GS_STATS_WARN_NOISY) {
    snprintf(phrase, sizeof phrase, "noisy (cv %.1f%% > %g%%)", 100.0 * s->cv,
             100.0 * GS_STATS_NOISY_CV);
    append_phrase(buf, size, phrase);
  }
  if (s->warnings & GS_STATS_WARN_SHORT) {
    snprintf(phrase, sizeof phrase, "short (total %.3g ms < %g ms)", 1e3 * s->sum,
             1e3 * GS_STATS_MIN_TOTAL_SECONDS);
    append_phrase(buf, size, phrase);
  }
  if (s->warnings & GS_STATS_WARN_OUTLIERS) {
    double share = s->n > 0 ? 100.0 * (double)s->outliers / (double)s->n : 0.0;
    snprintf(phrase, sizeof phrase, "outliers (%zu of %zu samples, %.1f%% > %g%%)", s->outliers,
             s->n, share, 100.0 * GS_STATS_MAX_OUTLIER_SHARE);
    append_phrase(buf, size, phrase);
  }
}
