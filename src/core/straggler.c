/* Straggler scores: the relative score of each rank with its simultaneous
 * 95% interval (a two-level block bootstrap: runs, then blocks of
 * consecutive iterations), the individual score with its 95% interval
 * (gs_stats_ratio_interval, runs as its groups) and the naming rule.
 * docs/statistics.md, "Straggler scores", defines them. */
#include "core/straggler.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/stats.h"

/* Per-rank scratch: the iteration ratios (as bootstrap groups), the
 * groups of the rank's own times. */
typedef struct {
  double *ratios, *others;
  gs_stats_group *ratio_groups, *time_groups;
} scratch;

static void scratch_free(scratch *s) {
  free(s->ratios);
  free(s->others);
  free(s->ratio_groups);
  free(s->time_groups);
}

static int scratch_alloc(scratch *s, size_t total, size_t n_runs, size_t n_ranks) {
  memset(s, 0, sizeof *s);
  s->ratios = malloc((total ? total : 1) * sizeof *s->ratios);
  s->others = malloc(n_ranks * sizeof *s->others);
  s->ratio_groups = calloc(n_runs ? n_runs : 1, sizeof *s->ratio_groups);
  s->time_groups = calloc(n_runs ? n_runs : 1, sizeof *s->time_groups);
  return s->ratios && s->others && s->ratio_groups && s->time_groups;
}

/* The median of the times of every peer of rank k but k in iteration i of
 * `run` (peer NULL: every rank is a peer); NaN without one. */
static double others_median(const gs_straggler_run *run, size_t n_ranks, const size_t *peer,
                            size_t k, size_t i, double *buf) {
  size_t m = 0;
  for (size_t j = 0; j < n_ranks; j++)
    if (j != k && (!peer || peer[j] == peer[k])) buf[m++] = run->times[j][i];
  if (m == 0) return NAN;
  gs_stats_sort(buf, m);
  return gs_stats_percentile_sorted(buf, m, 50.0);
}

/* The smallest mean of GS_STRAGGLER_WINDOW consecutive times of one run
 * (the run's mean when it is shorter) over the runs; *run_of and *start
 * say where that window lies, *len its length. */
static double best_window(const gs_straggler_run *runs, size_t n_runs, size_t k, size_t *run_of,
                          size_t *start, size_t *len) {
  double best = INFINITY;
  for (size_t r = 0; r < n_runs; r++) {
    const size_t n = runs[r].n_iters;
    if (n == 0) continue;
    const double *t = runs[r].times[k];
    const size_t w = n < GS_STRAGGLER_WINDOW ? n : GS_STRAGGLER_WINDOW;
    double sum = 0.0;
    for (size_t i = 0; i < w; i++) sum += t[i];
    for (size_t i = w;; i++) {
      if (sum / (double)w < best) {
        best = sum / (double)w;
        *run_of = r;
        *start = i - w;
        *len = w;
      }
      if (i == n) break;
      sum += t[i] - t[i - w];
    }
  }
  return best;
}

/* See straggler.h. */
size_t gs_straggler_block_length(size_t n) {
  size_t b = 1;
  while ((b + 1) * (b + 1) * (b + 1) <= n) b++;
  return b * b * b < n ? b + 1 : b; /* ceil(cbrt(n)) */
}

/* See straggler.h: bisection of the normal upper tail 0.5 erfc(z / sqrt 2). */
double gs_straggler_z(size_t n_ranks) {
  const double tail = 0.025 / (double)(n_ranks ? n_ranks : 1);
  double lo = 0.0, hi = 40.0;
  for (int i = 0; i < 200; i++) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * erfc(mid / sqrt(2.0)) > tail)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

/* One run's ratios for the block bootstrap: mean and the standard
 * deviation of its circular block means (for the normal limit). */
typedef struct {
  const double *x;
  size_t n, block;
  double mean, block_sd;
} boot_run;

static void boot_run_init(boot_run *b, const double *x, size_t n) {
  b->x = x;
  b->n = n;
  b->block = gs_straggler_block_length(n);
  double sum = 0.0;
  for (size_t i = 0; i < n; i++) sum += x[i];
  b->mean = sum / (double)n;
  // The n circular block means c_i = mean of x[i .. i+block) (mod n);
  // their mean is the run's mean.
  double window = 0.0, ss = 0.0;
  for (size_t j = 0; j < b->block; j++) window += x[j % n];
  for (size_t i = 0; i < n; i++) {
    const double c = window / (double)b->block - b->mean;
    ss += c * c;
    window += x[(i + b->block) % n] - x[i];
  }
  b->block_sd = sqrt(ss / (double)n);
}

/* The sum of one block resample of run `b`: ceil(n / block) circular
 * blocks at uniform starts, cut to n values; above GS_STATS_BOOTSTRAP_EXACT
 * iterations its normal limit n mean + sqrt(n block) sd_c Z. */
static double boot_run_draw(const boot_run *b, gs_rng *rng) {
  if (b->n > GS_STATS_BOOTSTRAP_EXACT) {
    const double u = 1.0 - gs_rng_double(rng), v = gs_rng_double(rng);
    const double z = sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
    return (double)b->n * b->mean + sqrt((double)b->n * (double)b->block) * b->block_sd * z;
  }
  double sum = 0.0;
  size_t taken = 0;
  while (taken < b->n) {
    const size_t start = (size_t)gs_rng_below(rng, b->n);
    for (size_t j = 0; j < b->block && taken < b->n; j++, taken++)
      sum += b->x[(start + j) % b->n];
  }
  return sum;
}

/* The standard error of the pooled mean of the groups' ratios: the
 * standard deviation of GS_STATS_BOOTSTRAP_REPLICATES replicates, each
 * drawing as many runs as there are with replacement, then a block
 * resample of each drawn run (fixed seed). NaN with fewer than 2 ratios
 * or no memory. */
static double relative_se(const gs_stats_group *groups, size_t n_groups, size_t total) {
  if (total < 2) return NAN;
  boot_run *runs = malloc(n_groups * sizeof *runs);
  if (!runs) return NAN;
  for (size_t g = 0; g < n_groups; g++) boot_run_init(&runs[g], groups[g].samples, groups[g].n);
  gs_rng rng;
  gs_rng_seed(&rng, GS_STATS_BOOTSTRAP_SEED, 0);
  double mean = 0.0, m2 = 0.0; /* Welford */
  for (size_t r = 0; r < GS_STATS_BOOTSTRAP_REPLICATES; r++) {
    double sum = 0.0, count = 0.0;
    for (size_t k = 0; k < n_groups; k++) {
      const boot_run *b = &runs[gs_rng_below(&rng, n_groups)];
      sum += boot_run_draw(b, &rng);
      count += (double)b->n;
    }
    const double x = sum / count, d = x - mean;
    mean += d / (double)(r + 1);
    m2 += d * (x - mean);
  }
  free(runs);
  return sqrt(m2 / (double)(GS_STATS_BOOTSTRAP_REPLICATES - 1));
}

/* Scores rank k into *sc. */
static void score_rank(const gs_straggler_run *runs, size_t n_runs, size_t n_ranks,
                       const size_t *peer, size_t k, scratch *s, gs_straggler_score *sc) {
  size_t at = 0, groups = 0;
  double ratio_sum = 0.0, time_sum = 0.0;
  for (size_t r = 0; r < n_runs; r++) {
    const size_t n = runs[r].n_iters;
    if (n == 0) continue;
    for (size_t i = 0; i < n; i++) {
      const double q = runs[r].times[k][i] / others_median(&runs[r], n_ranks, peer, k, i, s->others);
      s->ratios[at + i] = q;
      ratio_sum += q;
      time_sum += runs[r].times[k][i];
    }
    s->ratio_groups[groups] = (gs_stats_group){s->ratios + at, n};
    s->time_groups[groups] = (gs_stats_group){runs[r].times[k], n};
    groups++;
    at += n;
  }
  sc->n = at;
  sc->relative = sc->individual = NAN;
  sc->relative_low = sc->relative_high = sc->individual_low = sc->individual_high = NAN;
  sc->straggler = 0;
  if (at == 0) return;
  sc->relative = ratio_sum / (double)at;
  // Simultaneous over the ranks (Bonferroni): z of 1 - 0.025 / n_ranks.
  const double se = isfinite(sc->relative) ? relative_se(s->ratio_groups, groups, at) : NAN;
  if (isfinite(se)) {
    const double z = gs_straggler_z(n_ranks);
    sc->relative_low = sc->relative - z * se;
    sc->relative_high = sc->relative + z * se;
  }
  size_t best_run = 0, start = 0, len = 0;
  const double best = best_window(runs, n_runs, k, &best_run, &start, &len);
  sc->individual = time_sum / (double)at / best;
  const gs_stats_group window = {runs[best_run].times[k] + start, len};
  gs_stats_ratio_interval(s->time_groups, groups, &window, 1, &sc->individual_low,
                          &sc->individual_high);
}

/* See straggler.h. */
gs_status gs_straggler_compute(const gs_straggler_run *runs, size_t n_runs, size_t n_ranks,
                               gs_straggler *out) {
  return gs_straggler_compute_peers(runs, n_runs, n_ranks, NULL, out);
}

/* See straggler.h. */
gs_status gs_straggler_compute_peers(const gs_straggler_run *runs, size_t n_runs, size_t n_ranks,
                                     const size_t *peer_group, gs_straggler *out) {
  if (out == NULL) GS_BUG("straggler: no output structure");
  memset(out, 0, sizeof *out);
  out->named = -1;
  out->suspect = -1;
  if (n_ranks < 2) return gs_error(GS_ERR_USAGE, "straggler scores need 2 or more ranks");
  size_t total = 0;
  for (size_t r = 0; r < n_runs; r++) {
    for (size_t k = 0; k < n_ranks; k++)
      for (size_t i = 0; i < runs[r].n_iters; i++) {
        const double t = runs[r].times[k][i];
        if (!isfinite(t) || t <= 0.0)
          return gs_error(GS_ERR_USAGE,
                          "straggler: time %zu of rank %zu in run %zu is not a positive number",
                          i + 1, k, r + 1);
      }
    total += runs[r].n_iters;
  }
  scratch s;
  out->scores = calloc(n_ranks, sizeof *out->scores);
  if (!out->scores || !scratch_alloc(&s, total, n_runs, n_ranks)) {
    if (out->scores) scratch_free(&s);
    gs_straggler_free(out);
    return gs_error(GS_ERR_NOMEM, "straggler: out of memory for %zu ranks", n_ranks);
  }
  out->n_ranks = n_ranks;
  out->grouped = peer_group != NULL;
  for (size_t k = 0; k < n_ranks; k++)
    score_rank(runs, n_runs, n_ranks, peer_group, k, &s, &out->scores[k]);
  scratch_free(&s);
  gs_straggler_judge(out, NULL);
  return GS_OK;
}

/* See straggler.h. */
int gs_straggler_shared_cores(const gs_straggler_host *h) {
  return h && h->cpu && h->cores > 0 && h->ranks > h->cores;
}

/* The rank with the largest relative score among those whose low end is
 * above `threshold`, the lowest on a tie; -1 none. */
static int largest_above(const gs_straggler *s, double threshold) {
  int best = -1;
  for (size_t k = 0; k < s->n_ranks; k++) {
    const gs_straggler_score *sc = &s->scores[k];
    if (isfinite(sc->relative_low) && sc->relative_low > threshold &&
        (best < 0 || sc->relative > s->scores[best].relative))
      best = (int)k;
  }
  return best;
}

/* See straggler.h. */
void gs_straggler_judge(gs_straggler *s, const gs_straggler_host *h) {
  const double threshold = 1.0 + GS_STRAGGLER_THRESHOLD;
  const int may_name = !gs_straggler_shared_cores(h);
  s->threshold = threshold;
  for (size_t k = 0; k < s->n_ranks; k++) {
    gs_straggler_score *sc = &s->scores[k];
    sc->straggler = may_name && isfinite(sc->relative_low) && sc->relative_low > threshold;
  }
  const int above = largest_above(s, threshold);
  s->named = may_name ? above : -1;
  s->suspect = may_name ? -1 : above;
}

/* Appends printf-style text to buf (size > 0) at *at, cut to fit. */
static void put(char *buf, size_t size, size_t *at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int w = vsnprintf(buf + *at, size - *at, fmt, ap);
  va_end(ap);
  if (w > 0) *at = *at + (size_t)w >= size ? size - 1 : *at + (size_t)w;
}

/* See straggler.h. */
void gs_straggler_host_text(const gs_straggler_host *h, char *buf, size_t size) {
  if (size == 0) return;
  buf[0] = '\0';
  if (!gs_straggler_shared_cores(h)) return;
  size_t at = 0;
  put(buf, size, &at, "%d ranks share %d CPUs of host %s", h->ranks, h->cores,
      h->host ? h->host : "-");
  if (isfinite(h->load_average)) put(buf, size, &at, " (load average %.1f)", h->load_average);
}

/* See straggler.h. */
void gs_straggler_reason(const gs_straggler *s, const gs_straggler_host *h, char *buf,
                         size_t size) {
  if (size == 0) return;
  buf[0] = '\0';
  if (s->suspect < 0 || (size_t)s->suspect >= s->n_ranks) return;
  const gs_straggler_score *sc = &s->scores[s->suspect];
  gs_straggler_host_text(h, buf, size);
  size_t at = strlen(buf);
  put(buf, size, &at,
      "%srank %d scored %.2fx [%.2f, %.2f], above %.2f, and the scheduler's shares of the "
      "CPUs can explain it",
      at > 0 ? ": " : "", s->suspect, sc->relative, sc->relative_low, sc->relative_high,
      s->threshold);
}

/* See straggler.h. */
void gs_straggler_free(gs_straggler *s) {
  if (s == NULL) return;
  free(s->scores);
  memset(s, 0, sizeof *s);
  s->named = -1;
  s->suspect = -1;
}
