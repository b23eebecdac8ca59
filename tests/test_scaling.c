/* Tests of core/scaling: speedup, strong and weak efficiency, Karp-Flatt,
 * the verdict thresholds at their edges, the wording per backend, which
 * measurement of a series the verdict speaks of, and the series name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/scaling.h"

static void test_speedup_and_efficiency(void **state) {
  (void)state;
  assert_float_equal(gs_scaling_speedup(80e6, 100e6), 1.25, 1e-15);
  assert_true(isnan(gs_scaling_speedup(0.0, 100.0)));
  assert_true(isnan(gs_scaling_speedup(100.0, -1.0)));
  assert_true(isnan(gs_scaling_speedup(NAN, 100.0)));
  assert_true(isnan(gs_scaling_speedup(100.0, INFINITY)));
  assert_float_equal(gs_scaling_efficiency(1.25, 2), 0.625, 1e-15);
  assert_true(isnan(gs_scaling_efficiency(1.25, 0)));
  assert_true(isnan(gs_scaling_efficiency(NAN, 2)));
}

/* Strong scaling: 1e6 items in 12.5 ms on 1 rank, 10 ms on 2: the speedup
 * is T(1)/T(N) and the efficiency T(1)/(N T(N)). Weak scaling: each rank
 * does 1e6 items; 2 ranks take 12.5 ms for 2e6 items against 10 ms for 1e6
 * on one: the efficiency is T(1)/T(N) = 0.8 and the scaled speedup 1.6. */
static void test_strong_and_weak(void **state) {
  (void)state;
  const double t1 = 0.010, items = 1e6;
  double s = gs_scaling_speedup(items / 0.0125, items / t1);
  assert_float_equal(s, 0.0125 / t1, 1e-12);
  s = gs_scaling_speedup(items / t1, items / 0.005);
  assert_float_equal(gs_scaling_efficiency(s, 2), t1 / (2 * 0.005), 1e-12);
  // Weak: 2e6 items over 2 ranks in 12.5 ms.
  s = gs_scaling_speedup(items / t1, 2 * items / 0.0125);
  assert_float_equal(s, 1.6, 1e-12);
  assert_float_equal(gs_scaling_efficiency(s, 2), t1 / 0.0125, 1e-12);
  // The ideal step: divided under strong scaling, unchanged under weak.
  assert_float_equal(gs_scaling_ideal_step(GS_SCALING_STRONG, 0.110, 2), 0.055, 1e-15);
  assert_float_equal(gs_scaling_ideal_step(GS_SCALING_WEAK, 0.110, 4), 0.110, 1e-15);
  assert_float_equal(gs_scaling_ideal_step(GS_SCALING_NONE, 0.110, 4), 0.110, 1e-15);
  assert_true(isnan(gs_scaling_ideal_step(GS_SCALING_STRONG, NAN, 2)));
  assert_int_equal(gs_scaling_of("strong"), GS_SCALING_STRONG);
  assert_int_equal(gs_scaling_of("weak"), GS_SCALING_WEAK);
  assert_int_equal(gs_scaling_of("none"), GS_SCALING_NONE);
  assert_int_equal(gs_scaling_of(NULL), GS_SCALING_NONE);
}

static void test_karp_flatt(void **state) {
  (void)state;
  // S = 1.25 at N = 2: (0.8 - 0.5) / 0.5 = 0.6 (docs/report.md's example).
  assert_float_equal(gs_scaling_karp_flatt(1.25, 2), 0.6, 1e-12);
  // Perfect scaling has no serial fraction; S = 1 at any N is all serial.
  assert_float_equal(gs_scaling_karp_flatt(4.0, 4), 0.0, 1e-12);
  assert_float_equal(gs_scaling_karp_flatt(1.0, 8), 1.0, 1e-12);
  // S = 3 at N = 4: (1/3 - 1/4) / (3/4) = 1/9.
  assert_float_equal(gs_scaling_karp_flatt(3.0, 4), 1.0 / 9.0, 1e-12);
  assert_true(isnan(gs_scaling_karp_flatt(1.0, 1)));
  assert_true(isnan(gs_scaling_karp_flatt(0.0, 2)));
}

/* The verdict needs the whole interval in one zone (single < 0.95 <=
 * marginal < 1.1 <= beneficial); an interval across a threshold, or none,
 * is inconclusive; a speedup of 1.01 N or more, or an interval wholly
 * above N, is suspect; a hair above N is rounding. */
static void test_thresholds_at_edges(void **state) {
  (void)state;
  assert_int_equal(gs_scaling_verdict(NAN, 1.0, 1.0, 2), GS_VERDICT_NONE);
  assert_int_equal(gs_scaling_verdict(0.0, 0.0, 0.0, 2), GS_VERDICT_NONE);
  assert_int_equal(gs_scaling_verdict(-1.0, -1.0, -1.0, 2), GS_VERDICT_NONE);
  assert_int_equal(gs_scaling_verdict(0.5, 0.4, 0.6, 2), GS_VERDICT_SINGLE);
  assert_int_equal(gs_scaling_verdict(0.9, 0.8, nextafter(0.95, 0.0), 2), GS_VERDICT_SINGLE);
  assert_int_equal(gs_scaling_verdict(0.9, 0.8, 0.95, 2), GS_VERDICT_INCONCLUSIVE);
  assert_int_equal(gs_scaling_verdict(1.0, 0.95, nextafter(1.1, 0.0), 2), GS_VERDICT_MARGINAL);
  assert_int_equal(gs_scaling_verdict(1.05, 0.95, 1.1, 2), GS_VERDICT_INCONCLUSIVE);
  assert_int_equal(gs_scaling_verdict(1.2, 1.1, 1.3, 2), GS_VERDICT_BENEFICIAL);
  assert_int_equal(gs_scaling_verdict(1.2, nextafter(1.1, 0.0), 1.3, 2), GS_VERDICT_INCONCLUSIVE);
  assert_int_equal(gs_scaling_verdict(1.9, 1.8, 2.0, 2), GS_VERDICT_BENEFICIAL);
  assert_int_equal(gs_scaling_verdict(1.9, NAN, NAN, 2), GS_VERDICT_INCONCLUSIVE);
  // From 1.01 N: suspect, even with the interval reaching below N.
  assert_int_equal(gs_scaling_verdict(2.02, 1.5, 2.5, 2), GS_VERDICT_SUSPECT);
  assert_int_equal(gs_scaling_verdict(nextafter(2.02, 0.0), 1.9, 2.1, 2), GS_VERDICT_BENEFICIAL);
  assert_int_equal(gs_scaling_verdict(2.01, nextafter(2.0, 3.0), 2.1, 2), GS_VERDICT_SUSPECT);
  assert_int_equal(gs_scaling_verdict(2.05, NAN, NAN, 2), GS_VERDICT_SUSPECT);
  assert_int_equal(gs_scaling_verdict(3.62, 3.5, 3.7, 2), GS_VERDICT_SUSPECT);
  assert_int_equal(gs_scaling_verdict(2.0, 1.9, 2.1, 2), GS_VERDICT_BENEFICIAL);
  assert_string_equal(gs_verdict_name(GS_VERDICT_BENEFICIAL), "beneficial");
  assert_string_equal(gs_verdict_name(GS_VERDICT_MARGINAL), "marginal");
  assert_string_equal(gs_verdict_name(GS_VERDICT_SINGLE), "single GPU preferred");
  assert_string_equal(gs_verdict_name(GS_VERDICT_INCONCLUSIVE), "inconclusive");
  assert_string_equal(gs_verdict_name(GS_VERDICT_SUSPECT), "suspect");
  assert_string_equal(gs_verdict_name(GS_VERDICT_NONE), "none");
  char text[64];
  gs_scaling_format_ratio(1.7234, 1.6949, 1.7512, 1.0, 2, "x", text, sizeof text);
  assert_string_equal(text, "1.72x [1.69, 1.75]");
  gs_scaling_format_ratio(0.8612, 0.845, 0.8751, 100.0, 1, "%", text, sizeof text);
  assert_string_equal(text, "86.1% [84.5, 87.5]");
  gs_scaling_format_ratio(1.5, NAN, 1.6, 1.0, 2, "x", text, sizeof text);
  assert_string_equal(text, "1.50x [-]");
  gs_scaling_format_ratio(NAN, 1.0, 1.6, 1.0, 2, "x", text, sizeof text);
  assert_string_equal(text, "-");
}

/* All ordered bootstrap draws of groups g[0..n) are equally likely: every
 * sequence of n group picks, then every sequence of samples within each
 * picked group. Calls visit(mean) for each, with its probability. */
typedef struct {
  double value, weight;
} outcome;

typedef struct {
  outcome *v;
  size_t n, cap;
} outcomes;

static void push(outcomes *o, double value, double weight) {
  assert_true(o->n < o->cap);
  o->v[o->n++] = (outcome){value, weight};
}

/* Every resample sum of `g` with its probability, added to `sum`/`count`
 * of the picks made so far: a brute-force walk over the picks. */
static void walk(const gs_stats_group *g, size_t n, size_t pick, const size_t *picks,
                 size_t *chosen, double weight, outcomes *out) {
  if (pick == n) {
    // Enumerate the within-group draws of the chosen groups, one by one.
    size_t idx[16] = {0}, len[16], total = 0, slots = 0;
    for (size_t k = 0; k < n; k++)
      for (size_t i = 0; i < g[chosen[k]].n; i++) len[slots++] = g[chosen[k]].n, total++;
    double combos = 1.0;
    for (size_t s = 0; s < slots; s++) combos *= (double)len[s];
    for (;;) {
      double sum = 0.0;
      size_t slot = 0;
      for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < g[chosen[k]].n; i++, slot++) sum += g[chosen[k]].samples[idx[slot]];
      push(out, sum / (double)total, weight / combos);
      size_t s = 0;
      while (s < slots && ++idx[s] == len[s]) idx[s++] = 0;
      if (s == slots) break;
    }
    return;
  }
  for (size_t c = 0; c < n; c++) {
    chosen[pick] = c;
    walk(g, n, pick + 1, picks, chosen, weight / (double)n, out);
  }
}

/* P(a / b <= x) under the exact two-level bootstrap distribution. */
static double exact_cdf(const outcomes *a, const outcomes *b, double x, int strict) {
  double p = 0.0;
  for (size_t i = 0; i < a->n; i++)
    for (size_t j = 0; j < b->n; j++) {
      const double r = a->v[i].value / b->v[j].value;
      if (strict ? r < x : r <= x) p += a->v[i].weight * b->v[j].weight;
    }
  return p;
}

/* The bootstrap against a brute-force enumeration of its exact
 * distribution: each bound must sit at the 2.5% / 97.5% point of the
 * exact distribution within the Monte-Carlo error of 2000 replicates
 * (sd of a 2.5% quantile's level: sqrt(0.025 x 0.975 / 2000) = 0.0035;
 * the test allows 0.015). */
static void test_interval_against_enumeration(void **state) {
  (void)state;
  const double a0[] = {1.0, 1.3, 2.2}, a1[] = {1.1, 1.6};
  const double b0[] = {0.50, 0.61, 0.55}, b1[] = {0.72, 0.52};
  const gs_stats_group a[] = {{a0, 3}, {a1, 2}}, b[] = {{b0, 3}, {b1, 2}};
  static outcome va[4096], vb[4096];
  outcomes oa = {va, 0, 4096}, ob = {vb, 0, 4096};
  size_t chosen[2];
  walk(a, 2, 0, NULL, chosen, 1.0, &oa);
  walk(b, 2, 0, NULL, chosen, 1.0, &ob);
  double wa = 0.0;
  for (size_t i = 0; i < oa.n; i++) wa += oa.v[i].weight;
  assert_float_equal(wa, 1.0, 1e-12);
  double lo, hi;
  gs_stats_ratio_interval(a, 2, b, 2, &lo, &hi);
  assert_true(lo < hi);
  assert_true(exact_cdf(&oa, &ob, lo, 1) <= 0.025 + 0.015);
  assert_true(exact_cdf(&oa, &ob, lo, 0) >= 0.025 - 0.015);
  assert_true(exact_cdf(&oa, &ob, hi, 1) <= 0.975 + 0.015);
  assert_true(exact_cdf(&oa, &ob, hi, 0) >= 0.975 - 0.015);
  // The same samples always give the same interval (fixed seed).
  double lo2, hi2;
  gs_stats_ratio_interval(a, 2, b, 2, &lo2, &hi2);
  assert_true(lo2 == lo && hi2 == hi);
}

/* Closed forms: no spread gives the point itself; one run {a, b} against a
 * constant has resample means a, (a+b)/2, b with probabilities 1/4, 1/2,
 * 1/4, so with 2000 replicates both percentiles fall on the extremes. */
static void test_interval_closed_form(void **state) {
  (void)state;
  const double flat1[] = {0.2, 0.2, 0.2, 0.2}, flatn[] = {0.1, 0.1, 0.1};
  const gs_stats_group g1 = {flat1, 4}, gn = {flatn, 3};
  double lo, hi;
  gs_stats_ratio_interval(&g1, 1, &gn, 1, &lo, &hi);
  assert_float_equal(lo, 2.0, 1e-12);
  assert_float_equal(hi, 2.0, 1e-12);
  const double two[] = {0.2, 0.3};
  const gs_stats_group g2 = {two, 2};
  gs_stats_ratio_interval(&g2, 1, &gn, 1, &lo, &hi);
  assert_float_equal(lo, 2.0, 1e-12);
  assert_float_equal(hi, 3.0, 1e-12);
  // The speedup's interval scales the ratio's to the speedup: T(1) / T(N)
  // is 2.5 here and the speedup 2.5 (same items), so [2.0, 3.0] again,
  // and 5 items against 10 halve both.
  const gs_scaling_point base = {.world_size = 1, .ok = 1, .throughput = 10.0 / 0.25,
                                 .runs = &g2, .n_runs = 1};
  const gs_scaling_point p = {.world_size = 4, .ok = 1, .throughput = 10.0 / 0.1, .runs = &gn,
                              .n_runs = 1};
  gs_scaling_interval(&base, &p, 2.5, &lo, &hi);
  assert_float_equal(lo, 2.0, 1e-12);
  assert_float_equal(hi, 3.0, 1e-12);
  gs_scaling_interval(&base, &p, 1.25, &lo, &hi);
  assert_float_equal(lo, 1.0, 1e-12);
  assert_float_equal(hi, 1.5, 1e-12);
  // No samples on a side: no interval.
  const gs_scaling_point bare = {.world_size = 4, .ok = 1, .throughput = 100.0};
  gs_scaling_interval(&base, &bare, 2.5, &lo, &hi);
  assert_true(isnan(lo) && isnan(hi));
  // Above GS_STATS_BOOTSTRAP_EXACT samples a run's resample mean comes from
  // its normal limit: 1000 steps alternating 1 and 3 ms (mean 2, population
  // sd 1) against a constant 1 ms give a ratio of 2 +- 1.96 / sqrt(1000).
  static double alt[1000];
  for (size_t i = 0; i < 1000; i++) alt[i] = i % 2 ? 3e-3 : 1e-3;
  const double one[] = {1e-3};
  const gs_stats_group ga = {alt, 1000}, g1ms = {one, 1};
  gs_stats_ratio_interval(&ga, 1, &g1ms, 1, &lo, &hi);
  assert_float_equal(lo, 2.0 - 1.96 / sqrt(1000.0), 0.01);
  assert_float_equal(hi, 2.0 + 1.96 / sqrt(1000.0), 0.01);
}

static void test_words_per_backend(void **state) {
  (void)state;
  static const struct {
    gs_verdict verdict;
    const char *backend, *words;
  } cases[] = {
      {GS_VERDICT_BENEFICIAL, "cuda", "multi-GPU beneficial"},
      {GS_VERDICT_MARGINAL, "cuda", "multi-GPU marginal"},
      {GS_VERDICT_SINGLE, "cuda", "single GPU preferred"},
      {GS_VERDICT_BENEFICIAL, "cpu", "multi-rank beneficial"},
      {GS_VERDICT_MARGINAL, "cpu", "multi-rank marginal"},
      {GS_VERDICT_SINGLE, "cpu", "single rank preferred"},
      {GS_VERDICT_NONE, "cpu", "no verdict"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char w[64];
    gs_scaling_verdict_words(cases[i].verdict, cases[i].backend, w, sizeof w);
    assert_string_equal(w, cases[i].words);
  }
}

static void test_which_measurement(void **state) {
  (void)state;
  const gs_scaling_point p[] = {
      {.world_size = 1, .ok = 0, .throughput = 50.0},  /* failed: not the baseline */
      {.world_size = 1, .ok = 1, .throughput = 100.0}, /* the baseline */
      {.world_size = 2, .ok = 1, .throughput = 190.0},
      {.world_size = 4, .ok = 1, .throughput = 300.0},
      {.world_size = 4, .ok = 1, .throughput = 90.0}, /* later at the same N: this one */
      {.world_size = 8, .ok = 0, .throughput = 900.0}, /* failed: skipped */
  };
  assert_int_equal(gs_scaling_baseline(p, 6), 1);
  gs_scaling_assessment a;
  gs_scaling_assess(p, 6, &p[1], NULL, &a);
  assert_int_equal(a.point, 4);
  assert_int_equal(a.world_size, 4);
  assert_int_equal(a.largest, 8);
  // No samples: no interval, so no verdict beyond "inconclusive".
  assert_int_equal(a.verdict, GS_VERDICT_INCONCLUSIVE);
  assert_float_equal(a.speedup, 0.9, 1e-12);
  assert_float_equal(a.efficiency, 0.225, 1e-12);
  assert_float_equal(a.ideal_throughput, 400.0, 1e-12);
  assert_null(a.none_reason);
  char text[512];
  gs_scaling_verdict_sentence(&a, "fuse (variant v, split even)", "cuda", "values", text,
                              sizeof text);
  assert_string_equal(text, "fuse (variant v, split even): inconclusive: speedup 0.90x [-] at 4 "
                            "ranks (no interval), efficiency 22.5% "
                            "[-], Karp-Flatt serial fraction 1.148 [-], throughput 90.0 values/s "
                            "of ideal 400 values/s; inconclusive: no step samples to put an "
                            "interval on the speedup");
}

/* Verdicts from samples: a clear gain is beneficial with its interval in
 * the sentence; a gain within the noise is inconclusive and says how many
 * runs would decide it; a slowed baseline that makes 2 ranks 3.6x faster
 * is suspect and names the injected faults, the noisy baseline and a busy
 * host. */
static void test_verdict_from_samples(void **state) {
  (void)state;
  const double b0[] = {0.100, 0.101, 0.099, 0.100}, b1[] = {0.101, 0.100, 0.100, 0.099};
  const double p0[] = {0.060, 0.061, 0.059, 0.060}, p1[] = {0.060, 0.060, 0.061, 0.059};
  const gs_stats_group gb[] = {{b0, 4}, {b1, 4}}, gp[] = {{p0, 4}, {p1, 4}};
  gs_scaling_point pts[] = {{.world_size = 1, .ok = 1, .throughput = 1.0 / 0.1, .runs = gb,
                             .n_runs = 2, .clock_mhz = NAN},
                            {.world_size = 2, .ok = 1, .throughput = 1.0 / 0.06, .runs = gp,
                             .n_runs = 2, .clock_mhz = NAN}};
  gs_scaling_assessment a;
  gs_scaling_assess(pts, 2, &pts[0], NULL, &a);
  assert_int_equal(a.verdict, GS_VERDICT_BENEFICIAL);
  assert_true(a.speedup_low > 1.6 && a.speedup_high < 1.72 && a.speedup_low < a.speedup);
  assert_float_equal(a.efficiency_low, a.speedup_low / 2.0, 1e-15);
  assert_float_equal(a.karp_flatt_low, gs_scaling_karp_flatt(a.speedup_high, 2), 1e-15);
  assert_int_equal(a.base_runs, 2);
  assert_string_equal(a.why, "");
  // 1.08x with 10% noise: across 1.10.
  const double q0[] = {0.085, 0.100, 0.092, 0.080}, q1[] = {0.095, 0.078, 0.099, 0.088};
  const gs_stats_group gq[] = {{q0, 4}, {q1, 4}};
  pts[1].runs = gq;
  pts[1].throughput = 1.0 / 0.0896;
  gs_scaling_assess(pts, 2, &pts[0], NULL, &a);
  assert_int_equal(a.verdict, GS_VERDICT_INCONCLUSIVE);
  assert_non_null(strstr(a.why, "reaches across 1.10"));
  assert_non_null(strstr(a.why, "runs a side"));
  // The baseline slowed 3.6x and noisy, the faults recorded, a busy host.
  const double s0[] = {0.30, 0.42, 0.35, 0.38}, s1[] = {0.36, 0.33, 0.40, 0.31};
  const gs_stats_group gs[] = {{s0, 4}, {s1, 4}};
  pts[0].runs = gs;
  pts[0].throughput = 1.0 / 0.356;
  pts[0].faults = 1;
  pts[1].runs = gp;
  pts[1].throughput = 1.0 / 0.06;
  const gs_scaling_host host = {.cores = 2, .load_average = 3.5, .cpu_ranks = 1};
  gs_scaling_assess(pts, 2, &pts[0], &host, &a);
  assert_int_equal(a.verdict, GS_VERDICT_SUSPECT);
  assert_true(a.efficiency_low > 1.0);
  assert_non_null(strstr(a.why, "whole interval of the efficiency lies above 100%"));
  assert_non_null(strstr(a.why, "injected faults slow the 1-rank baseline (1 at 1 rank, 0 at 2 "
                                "ranks)"));
  assert_non_null(strstr(a.why, "noisier 1-rank baseline"));
  assert_non_null(strstr(a.why, "busy host (load average 3.50 on 2 cores"));
  char text[2048];
  gs_scaling_verdict_sentence(&a, "voxelize", "cpu", "points", text, sizeof text);
  assert_non_null(strstr(text, "voxelize: suspect: speedup 5.93x ["));
  assert_non_null(strstr(text, "(efficiency above 100%; 95% interval over 2 + 2 runs)"));
}

/* A suspect 2-rank result (2.5x from a steady baseline) with each cause of
 * the document's own data, alone: other processes on the baseline's GPU;
 * a rank's data that fits its cache at 2 ranks and not at 1; neither,
 * where the sentence says no cause was found and which data was missing. */
static void test_suspect_causes_from_data(void **state) {
  (void)state;
  const double b0[] = {0.100, 0.101, 0.099, 0.100}, b1[] = {0.101, 0.100, 0.100, 0.099};
  const double p0[] = {0.040, 0.041, 0.039, 0.040}, p1[] = {0.040, 0.040, 0.041, 0.039};
  const gs_stats_group gb[] = {{b0, 4}, {b1, 4}}, gp[] = {{p0, 4}, {p1, 4}};
  gs_scaling_point pts[] = {{.world_size = 1, .ok = 1, .throughput = 10.0, .runs = gb,
                             .n_runs = 2, .clock_mhz = NAN},
                            {.world_size = 2, .ok = 1, .throughput = 25.0, .runs = gp,
                             .n_runs = 2, .clock_mhz = NAN}};
  gs_scaling_assessment a;
  gs_scaling_assess(pts, 2, &pts[0], NULL, &a);
  assert_int_equal(a.verdict, GS_VERDICT_SUSPECT);
  assert_non_null(strstr(a.why, "no cause found among those checked"));
  assert_non_null(strstr(a.why, "a rank's data against its cache where recorded)"));
  // Another process on the baseline's GPU.
  pts[0].other_processes = 2;
  gs_scaling_assess(pts, 2, &pts[0], NULL, &a);
  assert_non_null(strstr(a.why, "likely cause: other processes shared the 1-rank baseline's GPU "
                                "(up to 2 besides gpuscale's; 0 at 2 ranks)"));
  assert_null(strstr(a.why, "no cause found"));
  pts[0].other_processes = 0;
  // 48 MiB a step at 1 rank, 24 MiB at 2, against a 40 MiB L2 (an A100's).
  const gs_scaling_host l2 = {.load_average = NAN, .cache_bytes = 40.0 * 1048576.0,
                              .cache_name = "GPU's L2 cache"};
  pts[0].rank_bytes = 48.0 * 1048576.0;
  pts[1].rank_bytes = 24.0 * 1048576.0;
  gs_scaling_assess(pts, 2, &pts[0], &l2, &a);
  assert_non_null(strstr(a.why, "likely cause: a rank's data fits the GPU's L2 cache at 2 ranks "
                                "(24 MiB of 40 MiB) but not at 1 rank (48 MiB)"));
  // Both sides fit (or neither does): not this cause, and nothing else found.
  pts[0].rank_bytes = 32.0 * 1048576.0;
  gs_scaling_assess(pts, 2, &pts[0], &l2, &a);
  assert_null(strstr(a.why, "fits the"));
  assert_non_null(strstr(a.why, "against its cache where recorded)"));
  // A beneficial verdict names no cause at all.
  pts[1].throughput = 18.0;
  const double q0[] = {0.0556, 0.0556, 0.0555, 0.0556}, q1[] = {0.0556, 0.0557, 0.0556, 0.0556};
  const gs_stats_group gq[] = {{q0, 4}, {q1, 4}};
  pts[1].runs = gq;
  pts[0].other_processes = 3;
  gs_scaling_assess(pts, 2, &pts[0], &l2, &a);
  assert_int_equal(a.verdict, GS_VERDICT_BENEFICIAL);
  assert_string_equal(a.why, "");
}

/* The same data read from a document's JSON: telemetry's compute processes
 * less the measuring one, the SM clock's mean over GPUs, cost.bytes per
 * rank; the cache of the GPU measured (by index) or of a CPU core. */
static void test_point_and_host_from_document(void **state) {
  (void)state;
  cJSON *m = cJSON_Parse(
      "{\"world_size\": 4, \"cost\": {\"bytes_per_step\": 1000},"
      " \"telemetry\": {\"ranks\": [{\"sm_clock_mhz\": {\"mean\": 1500},"
      " \"compute_processes\": {\"max\": 1}}, {\"sm_clock_mhz\": {\"mean\": 1700},"
      " \"compute_processes\": {\"max\": 3}}]},"
      " \"runs\": [{\"host_other_cores\": 0.4}, {\"host_other_cores\": 1.25}, {}]}");
  assert_non_null(m);
  gs_scaling_point p = {.clock_mhz = NAN};
  gs_scaling_point_add_document(&p, m);
  assert_float_equal(p.clock_mhz, 1600.0, 1e-12);
  assert_int_equal(p.other_processes, 2);
  assert_float_equal(p.rank_bytes, 250.0, 1e-12);
  assert_float_equal(p.other_cores, 1.25, 0.0);
  cJSON_Delete(m);
  // Nothing recorded: the point stays as it was.
  m = cJSON_Parse("{\"world_size\": 2, \"telemetry\": {\"available\": false}}");
  gs_scaling_point q = {.clock_mhz = NAN};
  gs_scaling_point_add_document(&q, m);
  assert_true(isnan(q.clock_mhz) && q.other_processes == 0 && q.rank_bytes == 0.0 &&
              q.other_cores == 0.0);
  cJSON_Delete(m);
  cJSON *env = cJSON_Parse(
      "{\"cpu\": {\"l2_cache_bytes\": 2097152}, \"gpus\": [{\"index\": 0, \"l2_cache_bytes\": 1000},"
      " {\"index\": 1, \"l2_cache_bytes\": 52428800}]}");
  gs_scaling_host h = {.load_average = NAN};
  gs_scaling_host_add_document(&h, env, "cuda", 1);
  assert_float_equal(h.cache_bytes, 52428800.0, 0.0);
  assert_string_equal(h.cache_name, "GPU's L2 cache");
  gs_scaling_host_add_document(&h, env, "cpu", -1);
  assert_float_equal(h.cache_bytes, 2097152.0, 0.0);
  assert_string_equal(h.cache_name, "L2 cache of a CPU core");
  cJSON_Delete(env);
}

/* Other work on the host's CPUs decides nothing, and so makes a verdict
 * inconclusive, only for CPU ranks that needed more cores than were left
 * to them: a clear 1.9x on 2 ranks is "beneficial" on a quiet 2-core host
 * (also beside 0.9 cores of other work at 1 rank, which leaves it a core)
 * and on a 16-core host with 1.2 cores of other work, "inconclusive"
 * (naming the figures) on the 2-core host where other work kept 1.2 cores
 * busy during the 1-rank runs; where the ranks are GPUs' it stays. A
 * suspect result names the contention as a likely cause. */
static void test_other_work_on_the_host(void **state) {
  (void)state;
  const double b0[] = {0.100, 0.101, 0.099, 0.100}, b1[] = {0.101, 0.100, 0.100, 0.099};
  const double p0[] = {0.0526, 0.0530, 0.0522, 0.0526}, p1[] = {0.0527, 0.0525, 0.0526, 0.0528};
  const gs_stats_group gb[] = {{b0, 4}, {b1, 4}}, gp[] = {{p0, 4}, {p1, 4}};
  gs_scaling_point pts[] = {{.world_size = 1, .ok = 1, .throughput = 10.0, .runs = gb,
                             .n_runs = 2, .clock_mhz = NAN},
                            {.world_size = 2, .ok = 1, .throughput = 19.0, .runs = gp,
                             .n_runs = 2, .clock_mhz = NAN}};
  const gs_scaling_host two = {.cores = 2, .load_average = NAN, .cpu_ranks = 1};
  const gs_scaling_host many = {.cores = 16, .load_average = NAN, .cpu_ranks = 1};
  const gs_scaling_host gpus = {.cores = 2, .load_average = NAN, .cpu_ranks = 0};
  gs_scaling_assessment a;
  gs_scaling_assess(pts, 2, &pts[0], &two, &a);
  assert_int_equal(a.verdict, GS_VERDICT_BENEFICIAL);
  pts[0].other_cores = 0.2; /* below GS_SCALING_OTHER_WORK_CORES */
  gs_scaling_assess(pts, 2, &pts[0], &two, &a);
  assert_int_equal(a.verdict, GS_VERDICT_BENEFICIAL);
  pts[0].other_cores = 0.9; /* 1 rank and 0.9 cores fit 2 */
  gs_scaling_assess(pts, 2, &pts[0], &two, &a);
  assert_int_equal(a.verdict, GS_VERDICT_BENEFICIAL);
  pts[0].other_cores = 1.2;
  gs_scaling_assess(pts, 2, &pts[0], &many, &a);
  assert_int_equal(a.verdict, GS_VERDICT_BENEFICIAL);
  gs_scaling_assess(pts, 2, &pts[0], &gpus, &a);
  assert_int_equal(a.verdict, GS_VERDICT_BENEFICIAL);
  gs_scaling_assess(pts, 2, &pts[0], &two, &a);
  assert_int_equal(a.verdict, GS_VERDICT_INCONCLUSIVE);
  assert_true(a.speedup_low >= GS_SCALING_BENEFICIAL); /* the interval alone would decide */
  assert_non_null(strstr(a.why, "inconclusive: other work kept up to 1.20 of the host's 2 cores "
                                "busy during the runs at 1 rank and 0.00 at 2 ranks"));
  // The same at 2 ranks only, and a single-rank verdict as well.
  pts[0].other_cores = 0.0;
  pts[1].other_cores = 0.5;
  pts[1].throughput = 8.0;
  const double s0[] = {0.125, 0.126, 0.124, 0.125}, s1[] = {0.126, 0.125, 0.125, 0.124};
  const gs_stats_group gs[] = {{s0, 4}, {s1, 4}};
  pts[1].runs = gs;
  gs_scaling_assess(pts, 2, &pts[0], &two, &a);
  assert_int_equal(a.verdict, GS_VERDICT_INCONCLUSIVE);
  pts[1].other_cores = 0.0;
  gs_scaling_assess(pts, 2, &pts[0], &two, &a);
  assert_int_equal(a.verdict, GS_VERDICT_SINGLE);
  // Suspect stays suspect, with the contention among its likely causes.
  const double q0[] = {0.040, 0.041, 0.039, 0.040}, q1[] = {0.040, 0.040, 0.041, 0.039};
  const gs_stats_group gq[] = {{q0, 4}, {q1, 4}};
  pts[1].runs = gq;
  pts[1].throughput = 25.0;
  pts[0].other_cores = 1.1;
  gs_scaling_assess(pts, 2, &pts[0], &two, &a);
  assert_int_equal(a.verdict, GS_VERDICT_SUSPECT);
  assert_non_null(strstr(a.why, "likely cause: other work kept up to 1.10 of the host's 2 cores"));
  assert_null(strstr(a.why, "no cause found"));
}

static void test_no_verdict(void **state) {
  (void)state;
  gs_scaling_assessment a;
  const gs_scaling_point one[] = {{.world_size = 1, .ok = 1, .throughput = 100.0}};
  gs_scaling_assess(one, 1, &one[0], NULL, &a);
  assert_int_equal(a.verdict, GS_VERDICT_NONE);
  assert_int_equal(a.point, -1);
  assert_non_null(strstr(a.none_reason, "only 1 rank"));
  const gs_scaling_point two[] = {{.world_size = 2, .ok = 1, .throughput = 100.0}};
  gs_scaling_assess(two, 1, NULL, NULL, &a);
  assert_int_equal(a.verdict, GS_VERDICT_NONE);
  assert_non_null(strstr(a.none_reason, "no usable 1-rank"));
  const gs_scaling_point failed[] = {{.world_size = 1, .ok = 1, .throughput = 100.0},
                                     {.world_size = 2, .ok = 0, .throughput = 300.0}};
  gs_scaling_assess(failed, 2, &failed[0], NULL, &a);
  assert_int_equal(a.verdict, GS_VERDICT_NONE);
  assert_non_null(strstr(a.none_reason, "more than 1 rank"));
}

static void test_series_name(void **state) {
  (void)state;
  char label[128], name[256];
  gs_scaling_series_label("batch=8", NULL, -1, NULL, label, sizeof label);
  assert_string_equal(label, "variant batch=8");
  gs_scaling_series_label("", "offline", 0, "0:resample", label, sizeof label);
  assert_string_equal(label, "scenario offline, task 0 (0:resample)");
  gs_scaling_series_label(NULL, NULL, -1, NULL, label, sizeof label);
  assert_string_equal(label, "");
  gs_scaling_series_name("voxelize", "", "", name, sizeof name);
  assert_string_equal(name, "voxelize");
  gs_scaling_series_name("voxelize", "", "proportional", name, sizeof name);
  assert_string_equal(name, "voxelize (split proportional)");
  gs_scaling_series_name("mlp", "variant batch=8", "even", name, sizeof name);
  assert_string_equal(name, "mlp (variant batch=8, split even)");
  gs_scaling_series_name("mlp", "variant batch=8", NULL, name, sizeof name);
  assert_string_equal(name, "mlp (variant batch=8)");
}

/* The losses of a step against its 1-rank split (the mlp large,
 * batch 8192, on 4 x H200: the 1-GPU step 2.58 ms of compute and 0.02 ms
 * of host; at 4 GPUs compute 989 us, exposed communication 26.5 us,
 * imbalance 10 us, host 5 us). Compute lost 989 - 645 = 344 us, the main
 * loss; its efficiency 645 / 989 = 65.2%. */
static void test_losses(void **state) {
  (void)state;
  const double base[GS_PART_COUNT] = {2.58e-3, 0, 0, 0.02e-3};
  const double four[GS_PART_COUNT] = {989e-6, 26.5e-6, 10e-6, 5e-6};
  gs_scaling_losses l;
  gs_scaling_losses_of(GS_SCALING_STRONG, base, four, 4, &l);
  assert_true(fabs(l.compute_ideal - 645e-6) < 1e-12);
  assert_true(fabs(l.compute_efficiency - 645.0 / 989.0) < 1e-12);
  assert_true(fabs(l.lost[GS_PART_COMPUTE] - 344e-6) < 1e-12);
  assert_true(fabs(l.lost[GS_PART_COMM] - 26.5e-6) < 1e-12);
  assert_true(fabs(l.lost[GS_PART_HOST] - 0.0) < 1e-12);  // 5 us = a quarter of 20 us
  assert_int_equal(l.main_loss, GS_PART_COMPUTE);
  // The losses add up to the step less the ideal step.
  double lost = 0, step = 0, ideal = 0;
  for (int p = 0; p < GS_PART_COUNT; p++) {
    lost += l.lost[p];
    step += four[p];
    ideal += base[p] / 4;
  }
  assert_true(fabs(lost - (step - ideal)) < 1e-15);
  // Weak scaling: each rank's share is the whole 1-rank work.
  const double weak[GS_PART_COUNT] = {2.6e-3, 0.4e-3, 0, 0.02e-3};
  gs_scaling_losses_of(GS_SCALING_WEAK, base, weak, 4, &l);
  assert_true(fabs(l.compute_efficiency - 2.58 / 2.6) < 1e-12);
  assert_int_equal(l.main_loss, GS_PART_COMM);
  assert_string_equal(gs_scaling_part_name(GS_PART_COMM), "exposed communication");
  // Nothing lost, or a part unknown: no main loss.
  gs_scaling_losses_of(GS_SCALING_WEAK, base, base, 4, &l);
  assert_int_equal(l.main_loss, -1);
  assert_true(fabs(l.compute_efficiency - 1.0) < 1e-12);
  const double unknown[GS_PART_COUNT] = {989e-6, NAN, 0, 0};
  gs_scaling_losses_of(GS_SCALING_STRONG, base, unknown, 4, &l);
  assert_int_equal(l.main_loss, -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_losses),
      cmocka_unit_test(test_speedup_and_efficiency),
      cmocka_unit_test(test_strong_and_weak),
      cmocka_unit_test(test_karp_flatt),
      cmocka_unit_test(test_thresholds_at_edges),
      cmocka_unit_test(test_interval_against_enumeration),
      cmocka_unit_test(test_interval_closed_form),
      cmocka_unit_test(test_verdict_from_samples),
      cmocka_unit_test(test_words_per_backend),
      cmocka_unit_test(test_which_measurement),
      cmocka_unit_test(test_suspect_causes_from_data),
      cmocka_unit_test(test_point_and_host_from_document),
      cmocka_unit_test(test_other_work_on_the_host),
      cmocka_unit_test(test_no_verdict),
      cmocka_unit_test(test_series_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
