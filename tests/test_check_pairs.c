/* Tests of localization by pairs: the schedules (core/pair_schedule: every
 * pair met once in rounds of disjoint pairs; the bisection of nodes) and
 * the judgement by elimination (report/verdict/check_pairs) on pair times
 * built here: a slow unit, a slow link, a clean set, and pairs that
 * cannot be told apart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "core/pair_schedule.h"
#include "core/rng.h"
#include "report/verdict/check_pairs.h"

/* 2 .. 9 units: every round's pairs are disjoint and symmetric, and every
 * pair of units meets exactly once over the rounds. */
static void test_tournament(void **state) {
  (void)state;
  assert_int_equal(gs_pairs_tournament_rounds(1), 0);
  assert_int_equal(gs_pairs_tournament_rounds(4), 3);
  assert_int_equal(gs_pairs_tournament_rounds(5), 5);
  assert_int_equal(gs_pairs_tournament_rounds(8), 7);
  for (size_t n = 2; n <= 9; n++) {
    int met[9][9];
    memset(met, 0, sizeof met);
    for (size_t r = 0; r < gs_pairs_tournament_rounds(n); r++) {
      size_t out = 0;
      for (size_t u = 0; u < n; u++) {
        const int p = gs_pairs_tournament_partner(n, r, u);
        if (p < 0) {
          out++;
          continue;
        }
        assert_true((size_t)p < n && (size_t)p != u);
        assert_int_equal(gs_pairs_tournament_partner(n, r, (size_t)p), (int)u);
        met[u][p]++;
      }
      assert_int_equal(out, n % 2);
    }
    for (size_t u = 0; u < n; u++)
      for (size_t v = 0; v < n; v++) assert_int_equal(met[u][v], u == v ? 0 : 1);
  }
  assert_int_equal(gs_pairs_tournament_partner(4, 3, 0), -1); /* no round 3 */
}

/* ceil(log2 N) rounds; partners differ in the round's bit. */
static void test_bisection(void **state) {
  (void)state;
  assert_int_equal(gs_pairs_bisection_rounds(1), 0);
  assert_int_equal(gs_pairs_bisection_rounds(2), 1);
  assert_int_equal(gs_pairs_bisection_rounds(4), 2);
  assert_int_equal(gs_pairs_bisection_rounds(5), 3);
  assert_int_equal(gs_pairs_bisection_rounds(16), 4);
  assert_int_equal(gs_pairs_bisection_partner(4, 0, 2), 3);
  assert_int_equal(gs_pairs_bisection_partner(4, 1, 2), 0);
  assert_int_equal(gs_pairs_bisection_partner(5, 0, 4), -1); /* node 5 does not exist */
  assert_int_equal(gs_pairs_bisection_partner(5, 2, 4), 0);
  for (size_t n = 2; n <= 16; n++)
    for (size_t r = 0; r < gs_pairs_bisection_rounds(n); r++)
      for (size_t u = 0; u < n; u++) {
        const int p = gs_pairs_bisection_partner(n, r, u);
        if (p >= 0) assert_int_equal(gs_pairs_bisection_partner(n, r, (size_t)p), (int)u);
      }
}

#define UNITS 4
#define PAIRS 6
#define N 20

/* The six pairs of 4 units, 20 times each: 1 ms with +-5% noise, times
 * `factor` for the pairs holding unit `slow_unit` or equal to the pair
 * (link_a, link_b). */
static void build(double t[PAIRS][N], gs_pairs_sample *p, int slow_unit, int link_a, int link_b,
                  double factor, uint64_t seed) {
  gs_rng rng;
  gs_rng_seed(&rng, seed, 30);
  size_t i = 0;
  for (int a = 0; a < UNITS; a++)
    for (int b = a + 1; b < UNITS; b++, i++) {
      const int hit = a == slow_unit || b == slow_unit || (a == link_a && b == link_b);
      for (size_t k = 0; k < N; k++)
        t[i][k] = 1e-3 * (1.0 + 0.1 * (gs_rng_double(&rng) - 0.5)) * (hit ? factor : 1.0);
      p[i] = (gs_pairs_sample){a, b, t[i], N};
    }
}

static void test_slow_unit_and_link(void **state) {
  (void)state;
  static double t[PAIRS][N];
  gs_pairs_sample p[PAIRS];
  gs_pairs_verdict v;
  // Unit 2 twice as slow with every partner: unit 2, no link.
  build(t, p, 2, -1, -1, 2.0, 1);
  assert_int_equal(gs_pairs_judge(p, PAIRS, UNITS, &v), GS_OK);
  assert_int_equal(v.units_named, 1);
  assert_true(v.unit_slow[2]);
  assert_int_equal(v.links_named, 0);
  assert_int_equal(v.undecided, 0);
  for (size_t i = 0; i < PAIRS; i++) {
    const int hit = v.pairs[i].a == 2 || v.pairs[i].b == 2;
    assert_int_equal(v.pairs[i].slow, hit);
    if (hit) assert_true(fabs(v.pairs[i].ratio - 2.0) < 0.1);
    assert_true(v.pairs[i].low <= v.pairs[i].ratio && v.pairs[i].ratio <= v.pairs[i].high);
  }
  gs_pairs_verdict_free(&v);
  // The link 1-3 twice as slow: the link, no unit.
  build(t, p, -1, 1, 3, 2.0, 2);
  assert_int_equal(gs_pairs_judge(p, PAIRS, UNITS, &v), GS_OK);
  assert_int_equal(v.units_named, 0);
  assert_int_equal(v.links_named, 1);
  for (size_t i = 0; i < PAIRS; i++)
    assert_int_equal(v.pairs[i].slow, v.pairs[i].a == 1 && v.pairs[i].b == 3);
  gs_pairs_verdict_free(&v);
  // Clean, and a unit only 10% slow (under the threshold): nothing named.
  for (int slow = -1; slow <= 0; slow++) {
    build(t, p, slow, -1, -1, 1.1, 3);
    assert_int_equal(gs_pairs_judge(p, PAIRS, UNITS, &v), GS_OK);
    assert_int_equal(v.units_named + v.links_named + v.undecided, 0);
    gs_pairs_verdict_free(&v);
  }
}

/* Two units, one pair: a slow pair is undecided (GPU or link); bad input
 * is refused. */
static void test_undecided_and_refusals(void **state) {
  (void)state;
  static double t[PAIRS][N];
  gs_pairs_sample p[PAIRS];
  gs_pairs_verdict v;
  build(t, p, 1, -1, -1, 3.0, 4); /* pairs (0,1), (0,2), (0,3), (1,2) ... */
  // Pair (0, 1) slow and pair (0, 2) fine: unit 1 has one pair only.
  assert_int_equal(gs_pairs_judge(p, 2, UNITS, &v), GS_OK);
  assert_int_equal(v.units_named, 0);
  assert_int_equal(v.links_named, 0);
  assert_int_equal(v.undecided, 1);
  gs_pairs_verdict_free(&v);
  gs_pairs_sample bad = {1, 1, t[0], N};
  assert_int_equal(gs_pairs_judge(&bad, 1, UNITS, &v), GS_ERR_USAGE);
  bad = (gs_pairs_sample){0, 4, t[0], N};
  assert_int_equal(gs_pairs_judge(&bad, 1, UNITS, &v), GS_ERR_USAGE);
  t[0][3] = 0.0;
  bad = (gs_pairs_sample){0, 1, t[0], N};
  assert_int_equal(gs_pairs_judge(&bad, 1, UNITS, &v), GS_ERR_USAGE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tournament),
      cmocka_unit_test(test_bisection),
      cmocka_unit_test(test_slow_unit_and_link),
      cmocka_unit_test(test_undecided_and_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
