/* Tests of the straggler scores (core/straggler) against figures worked out
 * by hand from the definitions in docs/statistics.md, and against the
 * normal-theory interval of a mean computed here independently. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/straggler.h"

static void assert_near(double expected, double actual, double tol) {
  if (!(fabs(expected - actual) <= tol)) {
    print_error("expected %.10g, got %.10g\n", expected, actual);
    fail();
  }
}

/* Ranks 0 and 1 take {1, 2, 1, 2} s, rank 2 1.2 times as long. Rank 2's
 * ratio to the median of the others is 1.2 in every iteration (interval
 * [1.2, 1.2]); rank 0's is 1 / ((1 + 1.2) / 2) = 1 / 1.1. Four iterations
 * are shorter than the window, so the best window is the whole run and
 * every individual score is 1. */
static void test_by_hand(void **state) {
  (void)state;
  const double t0[] = {1, 2, 1, 2}, t1[] = {1, 2, 1, 2}, t2[] = {1.2, 2.4, 1.2, 2.4};
  const double *times[] = {t0, t1, t2};
  const gs_straggler_run run = {4, times};
  gs_straggler s;
  assert_int_equal(gs_straggler_compute(&run, 1, 3, &s), GS_OK);
  assert_int_equal(s.n_ranks, 3);
  assert_int_equal(s.scores[2].n, 4);
  assert_near(1.2, s.scores[2].relative, 1e-12);
  assert_near(1.2, s.scores[2].relative_low, 1e-12);
  assert_near(1.2, s.scores[2].relative_high, 1e-12);
  assert_near(1.0 / 1.1, s.scores[0].relative, 1e-12);
  assert_near(1.0 / 1.1, s.scores[1].relative, 1e-12);
  for (size_t k = 0; k < 3; k++) assert_near(1.0, s.scores[k].individual, 1e-12);
  assert_true(s.scores[2].straggler);
  assert_false(s.scores[0].straggler);
  assert_int_equal(s.named, 2);
  gs_straggler_free(&s);
  assert_int_equal(s.named, -1);
  assert_null(s.scores);
}

/* Two ranks: the median of the others is the other rank. Rank 1 runs 8
 * iterations at 1 s then 8 at 1.5 s: its best window is the first 8
 * (mean 1), its mean 1.25, so its individual score is 1.25; against rank 0
 * at a steady 1 s its relative score is the mean of the ratios, 1.25;
 * rank 0's is the mean of 1/1 and 1/1.5, 5/6 (a mean of ratios, not
 * 1/1.25). */
static void test_individual(void **state) {
  (void)state;
  double t0[16], t1[16];
  for (int i = 0; i < 16; i++) {
    t0[i] = 1.0;
    t1[i] = i < 8 ? 1.0 : 1.5;
  }
  const double *times[] = {t0, t1};
  const gs_straggler_run run = {16, times};
  gs_straggler s;
  assert_int_equal(gs_straggler_compute(&run, 1, 2, &s), GS_OK);
  assert_near(1.25, s.scores[1].individual, 1e-12);
  assert_near(1.0, s.scores[0].individual, 1e-12);
  assert_near(1.25, s.scores[1].relative, 1e-12);
  assert_near(5.0 / 6.0, s.scores[0].relative, 1e-12);
  // The best window has no spread (all 1): the interval is that of rank 1's
  // mean, which straddles 1.25 and stays inside [1, 1.5].
  assert_true(s.scores[1].individual_low < 1.25 && s.scores[1].individual_high > 1.25);
  assert_true(s.scores[1].individual_low >= 1.0 && s.scores[1].individual_high <= 1.5);
  gs_straggler_free(&s);
}

#define RANKS 4
#define ITERS 200

/* Four ranks of ITERS iterations in one run: a shared per-iteration load
 * (uniform 0..20%) times each rank's own noise (uniform +-3%), rank 3
 * `slow` times longer. */
static void noisy_run(uint64_t seed, double slow, double t[RANKS][ITERS]) {
  gs_rng rng;
  gs_rng_seed(&rng, seed, 7);
  for (size_t i = 0; i < ITERS; i++) {
    const double load = 1.0 + 0.2 * gs_rng_double(&rng);
    for (size_t k = 0; k < RANKS; k++)
      t[k][i] = 1e-3 * load * (1.0 + 0.06 * (gs_rng_double(&rng) - 0.5)) * (k == 3 ? slow : 1.0);
  }
}

/* The median of three numbers, written out apart from the module's sort. */
static double median3(double a, double b, double c) {
  return fmax(fmin(a, b), fmin(fmax(a, b), c));
}

/* Rank 3 10% slower: its relative score is the mean of its ratios to the
 * median of the others (computed here), the bootstrap interval (its noise
 * is independent from iteration to iteration) is within a quarter of the
 * normal-theory half width z sd / sqrt(n) of that mean, z = 2.4977 the
 * normal quantile of 1 - 0.025 / 4 (four ranks), and only rank 3 is
 * named. */
static void test_slow_rank_named(void **state) {
  (void)state;
  static double t[RANKS][ITERS];
  noisy_run(11, 1.1, t);
  const double *times[RANKS] = {t[0], t[1], t[2], t[3]};
  const gs_straggler_run run = {ITERS, times};
  gs_straggler s;
  assert_int_equal(gs_straggler_compute(&run, 1, RANKS, &s), GS_OK);
  double sum = 0.0, ss = 0.0, q[ITERS];
  for (size_t i = 0; i < ITERS; i++) {
    q[i] = t[3][i] / median3(t[0][i], t[1][i], t[2][i]);
    sum += q[i];
  }
  const double mean = sum / ITERS;
  for (size_t i = 0; i < ITERS; i++) ss += (q[i] - mean) * (q[i] - mean);
  const double half = 2.497705 * sqrt(ss / (ITERS - 1)) / sqrt((double)ITERS);
  const gs_straggler_score *sc = &s.scores[3];
  assert_near(mean, sc->relative, 1e-12);
  assert_near(1.1, sc->relative, 0.01);
  assert_near(half, (sc->relative_high - sc->relative_low) / 2.0, 0.25 * half);
  assert_true(sc->relative_low < mean && mean < sc->relative_high);
  assert_int_equal(s.named, 3);
  for (size_t k = 0; k < 3; k++) {
    assert_false(s.scores[k].straggler);
    assert_true(s.scores[k].relative < 1.0);
  }
  gs_straggler_free(&s);
}

/* Twenty clean runs (different seeds) name nobody, and every relative
 * interval holds 1 or lies within the threshold of it. */
static void test_clean_names_nobody(void **state) {
  (void)state;
  static double t[RANKS][ITERS];
  for (uint64_t seed = 1; seed <= 20; seed++) {
    noisy_run(seed, 1.0, t);
    const double *times[RANKS] = {t[0], t[1], t[2], t[3]};
    const gs_straggler_run run = {ITERS, times};
    gs_straggler s;
    assert_int_equal(gs_straggler_compute(&run, 1, RANKS, &s), GS_OK);
    assert_int_equal(s.named, -1);
    for (size_t k = 0; k < RANKS; k++)
      assert_true(s.scores[k].relative_low <= 1.0 + GS_STRAGGLER_THRESHOLD);
    gs_straggler_free(&s);
  }
}

/* Runs are the bootstrap's groups: two runs of a steady 2-rank job, rank 1
 * 1.2x in one run and 1.0x in the other, score 1.1 overall; a replicate's
 * mean is 1.0, 1.1 or 1.2 with chances 1/4, 1/2, 1/4 (standard error
 * 0.1 / sqrt 2), so the interval is 1.1 -+ 2.2414 x 0.0707 (z of
 * 1 - 0.025 / 2), within the error of 2000 replicates. An empty run is
 * left out. */
static void test_runs_and_refusals(void **state) {
  (void)state;
  double a0[10], a1[10], b0[10], b1[10];
  for (int i = 0; i < 10; i++) {
    a0[i] = b0[i] = b1[i] = 1.0;
    a1[i] = 1.2;
  }
  const double *ta[] = {a0, a1}, *tb[] = {b0, b1}, *te[] = {a0, a1};
  const gs_straggler_run runs[] = {{10, ta}, {0, te}, {10, tb}};
  gs_straggler s;
  assert_int_equal(gs_straggler_compute(runs, 3, 2, &s), GS_OK);
  assert_int_equal(s.scores[1].n, 20);
  assert_near(1.1, s.scores[1].relative, 1e-12);
  const double half = 2.241403 * 0.1 / sqrt(2.0);
  assert_near(1.1 - half, s.scores[1].relative_low, 0.05 * half);
  assert_near(1.1 + half, s.scores[1].relative_high, 0.05 * half);
  assert_int_equal(s.named, -1);  // the interval holds 1: not named
  gs_straggler_free(&s);

  assert_int_equal(gs_straggler_compute(runs, 1, 1, &s), GS_ERR_USAGE);
  assert_int_equal(s.named, -1);
  double bad[10] = {1, 1, 1, 0, 1, 1, 1, 1, 1, 1};
  const double *tbad[] = {a0, bad};
  const gs_straggler_run r_bad = {10, tbad};
  assert_int_equal(gs_straggler_compute(&r_bad, 1, 2, &s), GS_ERR_USAGE);
}

/* The block length ceil(n^(1/3)) and the simultaneous normal quantile. */
static void test_block_and_z(void **state) {
  (void)state;
  const size_t n[] = {1, 2, 8, 9, 27, 28, 200, 216, 217, 1000};
  const size_t b[] = {1, 2, 2, 3, 3, 4, 6, 6, 7, 10};
  for (size_t i = 0; i < sizeof n / sizeof n[0]; i++)
    assert_int_equal(gs_straggler_block_length(n[i]), b[i]);
  assert_near(1.959964, gs_straggler_z(1), 1e-6);
  assert_near(2.241403, gs_straggler_z(2), 1e-6);
  assert_near(2.497705, gs_straggler_z(4), 1e-6);
  assert_near(3.359354, gs_straggler_z(64), 1e-6);
}

/* A standard normal draw (Box-Muller), written here apart from core/stats. */
static double normal(gs_rng *rng) {
  const double u = 1.0 - gs_rng_double(rng), v = gs_rng_double(rng);
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

#define JOB_RUNS 3

/* One job of the noise seen on 4 x H200 (docs/statistics.md, "Straggler
 * scores"): JOB_RUNS runs of ITERS iterations of RANKS ranks, each time
 * exp(job offset + run offset + shared load + own noise), rank 1 `slow`
 * times longer: the rank's offset for the whole job (sd 1%) and for each
 * run (sd 1%), a load shared by the ranks in each iteration (sd 3%), and
 * the rank's own noise (sd 4%) correlated from one iteration to the next
 * (AR(1), coefficient 0.5). */
static void realistic_job(uint64_t seed, double slow, double t[JOB_RUNS][RANKS][ITERS]) {
  gs_rng rng;
  gs_rng_seed(&rng, seed, 29);
  double job[RANKS];
  for (size_t k = 0; k < RANKS; k++) job[k] = 0.01 * normal(&rng);
  for (size_t r = 0; r < JOB_RUNS; r++) {
    double run[RANKS], e[RANKS];
    for (size_t k = 0; k < RANKS; k++) {
      run[k] = 0.01 * normal(&rng);
      e[k] = 0.04 * normal(&rng);
    }
    for (size_t i = 0; i < ITERS; i++) {
      const double load = 0.03 * normal(&rng);
      for (size_t k = 0; k < RANKS; k++) {
        if (i > 0) e[k] = 0.5 * e[k] + 0.04 * sqrt(1.0 - 0.25) * normal(&rng);
        t[r][k][i] = 1e-4 * exp(job[k] + run[k] + load + e[k]) * (k == 1 ? slow : 1.0);
      }
    }
  }
}

/* The rule that was replaced, computed here: an interval that takes the
 * pooled ratios as independent (mean -+ 1.96 sd / sqrt(n)), one rank at a
 * time, against 1.03. 1 when it names rank k. */
static int naive_names(double t[JOB_RUNS][RANKS][ITERS], size_t k) {
  double sum = 0.0, ss = 0.0, q[JOB_RUNS * ITERS];
  size_t n = 0;
  for (size_t r = 0; r < JOB_RUNS; r++)
    for (size_t i = 0; i < ITERS; i++) {
      double o[RANKS - 1];
      size_t m = 0;
      for (size_t j = 0; j < RANKS; j++)
        if (j != k) o[m++] = t[r][j][i];
      q[n] = t[r][k][i] / median3(o[0], o[1], o[2]);
      sum += q[n++];
    }
  const double mean = sum / (double)n;
  for (size_t i = 0; i < n; i++) ss += (q[i] - mean) * (q[i] - mean);
  return mean - 1.959964 * sqrt(ss / (double)(n - 1)) / sqrt((double)n) > 1.03;
}

/* Issue 29's targets on synthetic jobs with that noise, 100 of each: no
 * clean job names a rank, and rank 1 made 10% slower is named in at least
 * 99 of 100 (at 1 miss in 100, 20 of 20 in 82% of twenty-job tries; seen:
 * 1 miss in 200 at seed 17, its low end 1.032, the clean jobs' highest low
 * end 1.036). Printed: the margins and how many clean ranks the replaced
 * rule named. */
#define JOBS 100
static void test_realistic_noise(void **state) {
  (void)state;
  static double t[JOB_RUNS][RANKS][ITERS];
  int naive_clean = 0, named[2] = {0, 0};
  double slow_low = INFINITY, clean_low = -INFINITY;
  for (uint64_t seed = 1; seed <= JOBS; seed++) {
    for (int slowed = 0; slowed <= 1; slowed++) {
      realistic_job(seed + 1000 * (uint64_t)slowed, slowed ? 1.1 : 1.0, t);
      const double *times[JOB_RUNS][RANKS];
      gs_straggler_run runs[JOB_RUNS];
      for (size_t r = 0; r < JOB_RUNS; r++) {
        for (size_t k = 0; k < RANKS; k++) times[r][k] = t[r][k];
        runs[r] = (gs_straggler_run){ITERS, times[r]};
      }
      gs_straggler s;
      assert_int_equal(gs_straggler_compute(runs, JOB_RUNS, RANKS, &s), GS_OK);
      assert_true(s.named == -1 || s.named == (slowed ? 1 : s.named));
      named[slowed] += s.named >= 0;
      if (slowed) slow_low = fmin(slow_low, s.scores[1].relative_low);
      for (size_t k = 0; !slowed && k < RANKS; k++) {
        naive_clean += naive_names(t, k);
        clean_low = fmax(clean_low, s.scores[k].relative_low);
      }
      gs_straggler_free(&s);
    }
  }
  print_message("%d of %d clean jobs named a rank, the slowed rank named in %d of %d; lowest "
                "low end of the slowed rank %.4f, highest of a clean rank %.4f; the replaced "
                "rule named %d ranks in the clean jobs\n",
                named[0], JOBS, named[1], JOBS, slow_low, clean_low, naive_clean);
  assert_int_equal(named[0], 0);
  assert_true(named[1] >= JOBS - 1);
}

/* Where a host's CPU ranks outnumber its cores nobody is named: a rank
 * whose low end clears 1.04 makes the judgement inconclusive, with the
 * host in the reason, however far above it is; judged for an unknown
 * host, or one with cores enough, or device ranks, it is named. Ranks 0-2
 * take {1, 2, 1, 2} s, rank 3 1.12 times as long (1.12x [1.12, 1.12]);
 * then rank 3 1.5 times as long. */
static void test_shared_cores(void **state) {
  (void)state;
  const double base = 1.0 + GS_STRAGGLER_THRESHOLD;
  const gs_straggler_host shared = {"vm", 1, 4, 2, 7.2};
  gs_straggler_host h = shared;
  assert_true(gs_straggler_shared_cores(&h));
  assert_false(gs_straggler_shared_cores(NULL));
  h.cpu = 0; /* device ranks: the CPUs only feed them */
  assert_false(gs_straggler_shared_cores(&h));
  h = shared;
  h.ranks = 2; /* as many ranks as cores */
  assert_false(gs_straggler_shared_cores(&h));
  const gs_straggler_host enough = h;
  h = shared;
  h.cores = 0; /* cores unknown */
  assert_false(gs_straggler_shared_cores(&h));
  char text[256];
  gs_straggler_host_text(&h, text, sizeof text);
  assert_string_equal(text, "");
  gs_straggler_host_text(&shared, text, sizeof text);
  assert_string_equal(text, "4 ranks share 2 CPUs of host vm (load average 7.2)");

  double t[4][4] = {{1, 2, 1, 2}, {1, 2, 1, 2}, {1, 2, 1, 2}, {1.12, 2.24, 1.12, 2.24}};
  const double *times[] = {t[0], t[1], t[2], t[3]};
  const gs_straggler_run run = {4, times};
  for (int slowed = 0; slowed < 2; slowed++) {
    if (slowed)
      for (size_t i = 0; i < 4; i++) t[3][i] = 1.5 * t[0][i];
    const double score = slowed ? 1.5 : 1.12;
    gs_straggler s;
    assert_int_equal(gs_straggler_compute(&run, 1, 4, &s), GS_OK);
    assert_near(base, s.threshold, 0);
    assert_int_equal(s.named, 3);
    assert_int_equal(s.suspect, -1);
    assert_true(s.scores[3].straggler);
    gs_straggler_reason(&s, &shared, text, sizeof text);
    assert_string_equal(text, "");
    gs_straggler_judge(&s, &shared);
    assert_near(base, s.threshold, 0);
    assert_int_equal(s.named, -1);
    assert_int_equal(s.suspect, 3);
    assert_false(s.scores[3].straggler);
    char expected[256];
    snprintf(expected, sizeof expected,
             "4 ranks share 2 CPUs of host vm (load average 7.2): rank 3 scored %.2fx [%.2f, "
             "%.2f], above 1.04, and the scheduler's shares of the CPUs can explain it",
             score, score, score);
    gs_straggler_reason(&s, &shared, text, sizeof text);
    assert_string_equal(text, expected);
    char small[16];
    gs_straggler_reason(&s, &shared, small, sizeof small);
    assert_string_equal(small, "4 ranks share 2");
    gs_straggler_judge(&s, &enough);
    assert_int_equal(s.named, 3);
    assert_int_equal(s.suspect, -1);
    gs_straggler_judge(&s, NULL);
    assert_int_equal(s.named, 3);
    gs_straggler_free(&s);
    assert_int_equal(s.suspect, -1);
  }
}

/* A pipeline of 2 stages and 2 replicas (stage = rank % 2): stage 1 does 5
 * times the work of stage 0. Held against every rank, both stage-1 ranks
 * look 5x slow and one is named; held against its own stage only, every
 * rank of a clean run scores 1 and nobody is named, while a rank of stage
 * 0 made 1.5 times slower scores 1.5 against its peer. With one replica
 * a stage has no peer: no relative score, nobody named, and the
 * individual score still holds. */
static void test_peer_groups(void **state) {
  (void)state;
  const double fast[] = {1, 2, 1, 2}, slow[] = {5, 10, 5, 10}, slowed[] = {1.5, 3, 1.5, 3};
  const size_t stage[] = {0, 1, 0, 1};
  const double *clean[] = {fast, slow, fast, slow};
  const gs_straggler_run run = {4, clean};
  gs_straggler s;
  assert_int_equal(gs_straggler_compute(&run, 1, 4, &s), GS_OK);
  assert_int_equal(s.named, 1);
  assert_false(s.grouped);
  gs_straggler_free(&s);
  assert_int_equal(gs_straggler_compute_peers(&run, 1, 4, stage, &s), GS_OK);
  assert_true(s.grouped);
  assert_int_equal(s.named, -1);
  for (size_t k = 0; k < 4; k++) assert_near(1.0, s.scores[k].relative, 1e-12);
  gs_straggler_free(&s);

  const double *one_slow[] = {fast, slow, slowed, slow};
  const gs_straggler_run run2 = {4, one_slow};
  assert_int_equal(gs_straggler_compute_peers(&run2, 1, 4, stage, &s), GS_OK);
  assert_int_equal(s.named, 2);
  assert_near(1.5, s.scores[2].relative, 1e-12);
  assert_near(1.0 / 1.5, s.scores[0].relative, 1e-12);
  assert_near(1.0, s.scores[1].relative, 1e-12);
  gs_straggler_free(&s);

  const double *alone[] = {fast, slow};
  const gs_straggler_run run3 = {4, alone};
  assert_int_equal(gs_straggler_compute_peers(&run3, 1, 2, stage, &s), GS_OK);
  assert_int_equal(s.named, -1);
  assert_int_equal(s.suspect, -1);
  for (size_t k = 0; k < 2; k++) {
    assert_true(isnan(s.scores[k].relative));
    assert_true(isnan(s.scores[k].relative_low));
    assert_false(s.scores[k].straggler);
    assert_near(1.0, s.scores[k].individual, 1e-12);
  }
  gs_straggler_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_by_hand),
      cmocka_unit_test(test_individual),
      cmocka_unit_test(test_slow_rank_named),
      cmocka_unit_test(test_clean_names_nobody),
      cmocka_unit_test(test_runs_and_refusals),
      cmocka_unit_test(test_block_and_z),
      cmocka_unit_test(test_realistic_noise),
      cmocka_unit_test(test_shared_cores),
      cmocka_unit_test(test_peer_groups),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
