/* The alpha-beta fit of a collective sweep (docs/collectives.md), measured
 * curves and the costs of allreduce algorithms (docs/predict.md). */
#include "core/coll_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

gs_status gs_coll_fit_alpha_beta(const double *x, const double *t, size_t n, gs_coll_fit *out) {
  memset(out, 0, sizeof *out);
  out->r_squared = NAN;
  if (n < 2) return gs_error(GS_ERR_USAGE, "an alpha-beta fit needs at least 2 sizes, got %zu", n);
  // Weighted least squares with w_i = 1 / t_i^2: the normal equations of
  // sum w (t - a - b x)^2.
  double sw = 0, swx = 0, swxx = 0, swt = 0, swxt = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(t[i] > 0.0) || !isfinite(t[i]) || !isfinite(x[i]) || x[i] < 0.0)
      return gs_error(GS_ERR_USAGE, "an alpha-beta fit needs positive times (point %zu)", i);
    double w = 1.0 / (t[i] * t[i]);
    sw += w;
    swx += w * x[i];
    swxx += w * x[i] * x[i];
    swt += w * t[i];
    swxt += w * x[i] * t[i];
  }
  double det = sw * swxx - swx * swx;
  if (!(fabs(det) > 1e-12 * sw * swxx))
    return gs_error(GS_ERR_USAGE, "an alpha-beta fit needs at least 2 different sizes");
  double beta = (sw * swxt - swx * swt) / det;
  double alpha = (swt - beta * swx) / sw;
  double mean = swt / sw, ss_res = 0, ss_tot = 0;
  for (size_t i = 0; i < n; i++) {
    double w = 1.0 / (t[i] * t[i]);
    double r = t[i] - alpha - beta * x[i];
    ss_res += w * r * r;
    ss_tot += w * (t[i] - mean) * (t[i] - mean);
  }
  out->alpha_seconds = alpha;
  out->beta_seconds_per_byte = beta;
  out->r_squared = ss_tot > 0.0 ? 1.0 - ss_res / ss_tot : NAN;
  out->points = n;
  return GS_OK;
}

double gs_coll_predict_seconds(const gs_coll_fit *fit, gs_coll_op op, uint64_t bytes, int ranks) {
  return fit->alpha_seconds +
         fit->beta_seconds_per_byte * (double)bytes * gs_coll_busbw_factor(op, ranks);
}

static int compare_by_size(const void *a, const void *b) {
  double x = ((const double *)a)[0], y = ((const double *)b)[0];
  return (x > y) - (x < y);
}

gs_status gs_coll_curve_build(const double *bytes, const double *seconds, size_t n, int ranks,
                              gs_coll_curve *out) {
  memset(out, 0, sizeof *out);
  out->ranks = ranks;
  // (size, time) pairs sorted by size, then each run of one size averaged.
  double *pairs = malloc((n ? n : 1) * 2 * sizeof *pairs);
  out->bytes = malloc((n ? n : 1) * sizeof *out->bytes);
  out->seconds = malloc((n ? n : 1) * sizeof *out->seconds);
  if (!pairs || !out->bytes || !out->seconds) {
    free(pairs);
    gs_coll_curve_free(out);
    return gs_error(GS_ERR_NOMEM, "out of memory for a collective curve of %zu points", n);
  }
  for (size_t i = 0; i < n; i++) {
    if (!(bytes[i] > 0.0) || !isfinite(bytes[i]) || !(seconds[i] > 0.0) || !isfinite(seconds[i])) {
      free(pairs);
      gs_coll_curve_free(out);
      return gs_error(GS_ERR_USAGE, "a collective curve needs positive sizes and times (point "
                      "%zu: %g B, %g s)", i, bytes[i], seconds[i]);
    }
    pairs[2 * i] = bytes[i];
    pairs[2 * i + 1] = seconds[i];
  }
  qsort(pairs, n, 2 * sizeof *pairs, compare_by_size);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    double sum = 0.0;
    for (; j < n && pairs[2 * j] == pairs[2 * i]; j++) sum += pairs[2 * j + 1];
    out->bytes[out->n] = pairs[2 * i];
    out->seconds[out->n] = sum / (double)(j - i);
    out->n++;
    i = j;
  }
  free(pairs);
  return GS_OK;
}

void gs_coll_curve_free(gs_coll_curve *c) {
  free(c->bytes);
  free(c->seconds);
  memset(c, 0, sizeof *c);
}

int gs_coll_curve_seconds(const gs_coll_curve *c, double bytes, double *seconds) {
  if (!c || c->n < 2 || !(bytes >= c->bytes[0]) || !(bytes <= c->bytes[c->n - 1])) return 0;
  size_t hi = 1;
  while (hi < c->n - 1 && c->bytes[hi] < bytes) hi++;
  size_t lo = hi - 1;
  // Between two measured sizes the time is taken as a latency plus a size
  // over a bandwidth: the straight line through them. It is exact where the
  // alpha-beta form holds locally; a line in log(size)-log(time) would bend
  // it (10 us + 1e-11 s/B measured at 256 KiB and 4 MiB: 25 us at 1 MB on
  // the straight line, 31 us on the log-log one).
  double f = (bytes - c->bytes[lo]) / (c->bytes[hi] - c->bytes[lo]);
  *seconds = c->seconds[lo] + f * (c->seconds[hi] - c->seconds[lo]);
  return 1;
}

void gs_coll_allreduce_pairs(gs_coll_algorithm alg, double bytes, int ranks, double *pairs,
                             double *pair_bytes) {
  *pairs = 0.0;
  *pair_bytes = 0.0;
  if (ranks <= 1) return;
  double p = (double)ranks;
  *pairs = alg == GS_COLL_TREE ? ceil(log2(p)) : p - 1.0;
  *pair_bytes = 2.0 * bytes / (alg == GS_COLL_TREE ? *pairs : p);
}

/* Seconds of one 2-rank allreduce of `bytes`: measured on `curve` where it
 * covers the size (`*measured` set), else 2a + x b on `link`. */
static double pair_seconds(const gs_coll_link *link, const gs_coll_curve *curve, double bytes,
                           int *measured) {
  double t;
  if (gs_coll_curve_seconds(curve, bytes, &t)) {
    *measured = 1;
    return t;
  }
  *measured = 0;
  return 2.0 * link->alpha_seconds + bytes * link->beta_seconds_per_byte;
}

/* An allreduce by `alg` as its pairs of 2-rank allreduces. */
static double allreduce_as_pairs(gs_coll_algorithm alg, const gs_coll_link *link,
                                 const gs_coll_curve *curve, double bytes, int ranks,
                                 int *measured) {
  double pairs, pair_bytes;
  gs_coll_allreduce_pairs(alg, bytes, ranks, &pairs, &pair_bytes);
  *measured = 0;
  return pairs > 0.0 ? pairs * pair_seconds(link, curve, pair_bytes, measured) : 0.0;
}

double gs_coll_allreduce_best_measured(const gs_coll_link *link, const gs_coll_curve *pair_curve,
                                       double bytes, int ranks, gs_coll_algorithm *alg,
                                       int *measured) {
  int ring_measured, tree_measured;
  double ring = allreduce_as_pairs(GS_COLL_RING, link, pair_curve, bytes, ranks, &ring_measured);
  double tree = allreduce_as_pairs(GS_COLL_TREE, link, pair_curve, bytes, ranks, &tree_measured);
  int use_tree = tree < ring;
  if (alg) *alg = use_tree ? GS_COLL_TREE : GS_COLL_RING;
  if (measured) *measured = use_tree ? tree_measured : ring_measured;
  return use_tree ? tree : ring;
}

double gs_coll_allreduce_hierarchical(double intra_seconds, const gs_coll_link *network,
                                      const gs_coll_curve *pair_curve, double bytes, int per_node,
                                      int nodes, gs_coll_algorithm *alg, int *measured) {
  double share = per_node > 1 ? bytes / (double)per_node : bytes;
  return (per_node > 1 ? intra_seconds : 0.0) +
         gs_coll_allreduce_best_measured(network, pair_curve, share, nodes, alg, measured);
}
