/* Tests of localization by pairs: the schedules (core/pair_schedule: every
 * pair met once in rounds of disjoint pairs; the bisection of nodes; the
 * slots of a round on hosts with few CPUs) and the judgement by
 * elimination (report/verdict/check_pairs) on pair times built here: a
 * slow unit, a slow link, a clean set, pairs that cannot be told apart,
 * the confirming round's pairs and the decision after it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
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


/* The slots of a round: 2 pairs of 4 ranks on one host of 2 CPUs take 2
 * slots; on 4 CPUs one; pairs across 2 hosts of 2 CPUs each (one rank of
 * each pair on each) fit together; a host of 1 CPU still runs a pair per
 * slot. */
static void test_slots(void **state) {
  (void)state;
  const int a[3] = {0, 1, 4}, b[3] = {3, 2, 5};
  const int one_host[6] = {0, 0, 0, 0, 0, 0}, split[6] = {0, 0, 1, 1, 0, 1};
  int scratch[3 * 2];
  size_t slot[3];
  int two[2] = {2, 2}, four[1] = {4}, one[1] = {1};
  assert_int_equal(gs_pairs_slots(2, a, b, one_host, two, 1, scratch, slot), 2);
  assert_int_equal(slot[0], 0);
  assert_int_equal(slot[1], 1);
  assert_int_equal(gs_pairs_slots(2, a, b, one_host, four, 1, scratch, slot), 1);
  assert_int_equal(slot[1], 0);
  assert_int_equal(gs_pairs_slots(2, a, b, one_host, one, 1, scratch, slot), 2);
  // Hosts 0 {0, 1, 4} and 1 {2, 3, 5}: each pair holds one rank of each,
  // two pairs fill both hosts' 2 CPUs, the third waits for a slot.
  assert_int_equal(gs_pairs_slots(3, a, b, split, two, 2, scratch, slot), 2);
  assert_int_equal(slot[0], 0);
  assert_int_equal(slot[1], 0);
  assert_int_equal(slot[2], 1);
  assert_int_equal(gs_pairs_slots(0, a, b, split, two, 2, scratch, slot), 0);
}

/* Judges both kinds of the pairs (the same times for both). */
static void judge2(const gs_pairs_sample *p, size_t n, size_t units, gs_pairs_verdict v[2]) {
  assert_int_equal(gs_pairs_judge(p, n, units, &v[0]), GS_OK);
  assert_int_equal(gs_pairs_judge(p, n, units, &v[1]), GS_OK);
}

static void free2(gs_pairs_verdict v[2]) {
  gs_pairs_verdict_free(&v[0]);
  gs_pairs_verdict_free(&v[1]);
}

/* The confirming round's pairs: the suspects, then the references; none
 * when nothing is slow; for the bisection's units with no other partner,
 * a pair with a unit found fine. */
static void test_confirm_choose(void **state) {
  (void)state;
  static double t[PAIRS][N];
  gs_pairs_sample p[PAIRS];
  gs_pairs_verdict v[2];
  int *a = NULL, *b = NULL;
  size_t n = 99;
  build(t, p, -1, -1, -1, 1.0, 5);
  judge2(p, PAIRS, UNITS, v);
  assert_int_equal(gs_pairs_confirm_choose(v, &a, &b, &n), GS_OK);
  assert_int_equal(n, 0);
  assert_null(a);
  free2(v);
  // The link 1-3 slow: it first, then the reference pairs, never again.
  build(t, p, -1, 1, 3, 3.0, 6);
  judge2(p, PAIRS, UNITS, v);
  assert_int_equal(gs_pairs_confirm_choose(v, &a, &b, &n), GS_OK);
  assert_true(n >= 2 && n <= PAIRS);
  assert_int_equal(a[0], 1);
  assert_int_equal(b[0], 3);
  for (size_t i = 1; i < n; i++) {
    assert_false(a[i] == 1 && b[i] == 3);
    size_t k = 0;
    while (!(p[k].a == a[i] && p[k].b == b[i])) k++;
    assert_true(v[0].pairs[k].reference || v[1].pairs[k].reference);
  }
  free(a);
  free(b);
  free2(v);
  // Of 4 nodes only (0,1) and (0,2) measured: (0, 1) slow; node 1 has no
  // other pair, so it is paired with node 2, the lowest unit in no
  // suspect that it has not met.
  build(t, p, 1, -1, -1, 3.0, 7); /* pairs (0,1) slow, (0,2) fine */
  judge2(p, 2, UNITS, v);
  assert_int_equal(gs_pairs_confirm_choose(v, &a, &b, &n), GS_OK);
  assert_int_equal(n, 3);
  assert_int_equal(a[0], 0);
  assert_int_equal(b[0], 1);
  assert_int_equal(a[1], 0);
  assert_int_equal(b[1], 2);
  assert_int_equal(a[2], 1);
  assert_int_equal(b[2], 2);
  free(a);
  free(b);
  free2(v);
}

/* `n` pairs of `times`, each N samples of `ms` milliseconds (+-5%). */
static void fill(double t[][N], gs_pairs_sample *p, const int *a, const int *b, const double *ms,
                 size_t n, uint64_t seed) {
  gs_rng rng;
  gs_rng_seed(&rng, seed, 30);
  for (size_t i = 0; i < n; i++) {
    for (size_t k = 0; k < N; k++) t[i][k] = 1e-3 * ms[i] * (1.0 + 0.1 * (gs_rng_double(&rng) - 0.5));
    p[i] = (gs_pairs_sample){a[i], b[i], t[i], N};
  }
}

/* The decision: a link confirmed alone is named; pairs slow in the rounds
 * and fine alone name nothing (the extra links an oversubscribed host
 * made); a pair neither slow nor fine alone is inconclusive, with a
 * reason naming the CPUs shared; the bisection's added pair tells the
 * link from the node. */
static void test_decide(void **state) {
  (void)state;
  static double t[PAIRS][N], c[PAIRS][N];
  gs_pairs_sample p[PAIRS], q[PAIRS];
  gs_pairs_verdict v[2], w[2];
  gs_pairs_decision d;
  const int a[PAIRS] = {0, 1, 0, 1, 0, 2}, b[PAIRS] = {3, 2, 2, 3, 1, 3};
  // Rounds: 1-2 slow (the link) and, as the host's turns made them, 0-2
  // and 1-3 too: 2 and 1 would have no fine pair but 0-1 / 2-3... the
  // rounds alone name links 1-2, 0-2, 1-3.
  const double rounds_ms[PAIRS] = {1, 20, 1.8, 1.8, 1, 1};
  fill(t, p, a, b, rounds_ms, PAIRS, 8);
  judge2(p, PAIRS, UNITS, v);
  int *ca = NULL, *cb = NULL;
  size_t cn = 0;
  assert_int_equal(gs_pairs_confirm_choose(v, &ca, &cb, &cn), GS_OK);
  assert_true(cn >= 4);
  assert_int_equal(gs_pairs_decide(v, NULL, &d), GS_OK); /* without confirming: 3 links */
  assert_int_equal(d.links, 3);
  gs_pairs_decision_free(&d);
  // Alone: 1-2 still slow, 0-2 and 1-3 as fast as the references.
  double alone_ms[PAIRS];
  for (size_t i = 0; i < cn; i++) alone_ms[i] = ca[i] == 1 && cb[i] == 2 ? 20.0 : 1.0;
  fill(c, q, ca, cb, alone_ms, cn, 9);
  judge2(q, cn, UNITS, w);
  assert_int_equal(gs_pairs_decide(v, w, &d), GS_OK);
  assert_string_equal(d.overall, "fail");
  assert_int_equal(d.links, 1);
  assert_int_equal(d.units + d.undecided + d.inconclusive, 0);
  assert_int_equal(d.judged[1], GS_PAIRS_LINK);
  assert_int_equal(d.judged[2], GS_PAIRS_FINE);
  assert_int_equal(d.n_pairs, PAIRS);
  gs_pairs_decision_free(&d);
  free2(w);
  // Alone, 0-2 is 1.3x: its interval holds 1.3, neither slow nor fine:
  // inconclusive, and the reason says the CPUs were shared.
  for (size_t i = 0; i < cn; i++) alone_ms[i] = ca[i] == 0 && cb[i] == 2 ? 1.3 : 1.0;
  fill(c, q, ca, cb, alone_ms, cn, 10);
  judge2(q, cn, UNITS, w);
  assert_int_equal(gs_pairs_decide(v, w, &d), GS_OK);
  assert_string_equal(d.overall, "inconclusive");
  assert_int_equal(d.units + d.links, 0);
  assert_int_equal(d.judged[2], GS_PAIRS_INCONCLUSIVE);
  char why[512];
  const gs_pairs_host host = {.unit = "rank", .host = "vm", .ranks = 4, .cpus = 2,
                              .load_average = 7.25};
  gs_pairs_reason(&d, v, w, &host, why, sizeof why);
  assert_non_null(strstr(why, "4 ranks share 2 CPUs of host vm (load average 7.2): ranks 0 and 2"));
  assert_non_null(strstr(why, "neither clearly slow nor clearly fine"));
  gs_pairs_decision_free(&d);
  free2(w);
  free(ca);
  free(cb);
  free2(v);
  // The bisection: (0,1) slow, (0,2) fine; the added (1,2) slow alone too:
  // node 1 slow with both partners. Fine alone: the link 0-1.
  const int ba[2] = {0, 0}, bb[2] = {1, 2};
  const double bms[2] = {3, 1};
  fill(t, p, ba, bb, bms, 2, 11);
  judge2(p, 2, UNITS, v);
  assert_int_equal(gs_pairs_confirm_choose(v, &ca, &cb, &cn), GS_OK);
  assert_int_equal(cn, 3);
  for (int node = 1; node >= 0; node--) {
    const double ms[3] = {3, 1, node ? 3 : 1};
    fill(c, q, ca, cb, ms, cn, 12);
    judge2(q, cn, UNITS, w);
    assert_int_equal(gs_pairs_decide(v, w, &d), GS_OK);
    assert_int_equal(d.n_pairs, 3); /* the added pair after the rounds' */
    assert_int_equal(d.a[2], 1);
    assert_int_equal(d.b[2], 2);
    assert_int_equal(d.units, (size_t)node);
    assert_int_equal(d.unit[1], node);
    assert_int_equal(d.links, (size_t)!node);
    assert_int_equal(d.judged[0], node ? GS_PAIRS_UNIT : GS_PAIRS_LINK);
    gs_pairs_decision_free(&d);
    free2(w);
  }
  free(ca);
  free(cb);
  free2(v);
}

/* A slow pair whose unit's other pair is not slow but not clearly fine
 * either (CI's load average of 18: node 2's pair with node 3 at 2.1x
 * [1.11, 4.95]) is no link: the decision is inconclusive. */
static void test_weak_neighbour(void **state) {
  (void)state;
  gs_pairs_result r[4] = {{.a = 0, .b = 1, .ratio = 1.0, .low = 0.9, .high = 1.1},
                          {.a = 2, .b = 3, .ratio = 2.1, .low = 1.11, .high = 4.95},
                          {.a = 0, .b = 2, .ratio = 3.0, .low = 1.5, .high = 5.2, .slow = 1},
                          {.a = 1, .b = 3, .ratio = 1.0, .low = 0.9, .high = 1.2}};
  int none[4] = {0, 0, 0, 0};
  gs_pairs_verdict v[2] = {{.n_units = 4, .n_pairs = 4, .pairs = r, .unit_slow = none},
                           {.n_units = 4, .n_pairs = 4, .pairs = r, .unit_slow = none}};
  gs_pairs_decision d;
  assert_int_equal(gs_pairs_decide(v, NULL, &d), GS_OK);
  assert_string_equal(d.overall, "inconclusive");
  assert_int_equal(d.links + d.units, 0);
  assert_int_equal(d.judged[2], GS_PAIRS_INCONCLUSIVE);
  assert_int_equal(d.judged[1], GS_PAIRS_INCONCLUSIVE); /* 2.1x, not shown: a suspect */
  assert_int_equal(d.judged[0], GS_PAIRS_FINE);
  char why[512];
  const gs_pairs_host host = {.unit = "node", .host = "vm", .ranks = 4, .cpus = 8,
                              .load_average = NAN};
  gs_pairs_reason(&d, v, NULL, &host, why, sizeof why);
  assert_string_equal(why, "4 ranks on 8 CPUs of host vm: nodes 2 and 3, all-reduce 2.10x [1.11, "
                           "4.95] in the rounds, copy 2.10x [1.11, 4.95] in the rounds: neither "
                           "clearly slow nor clearly fine (and 1 more pair(s))");
  // Alone, 2-3 clearly fine and 0-2 slow: each of nodes 0 and 2 has a
  // fine pair besides (0-1, 2-3), so the link is named.
  gs_pairs_decision_free(&d);
  gs_pairs_result alone[4] = {{.a = 2, .b = 3, .ratio = 1.0, .low = 0.95, .high = 1.1},
                              {.a = 0, .b = 2, .ratio = 3.0, .low = 2.5, .high = 3.4, .slow = 1},
                              {.a = 0, .b = 1, .ratio = 1.0, .low = 0.9, .high = 1.05}};
  gs_pairs_verdict w[2] = {{.n_units = 4, .n_pairs = 3, .pairs = alone, .unit_slow = none},
                           {.n_units = 4, .n_pairs = 3, .pairs = alone, .unit_slow = none}};
  assert_int_equal(gs_pairs_decide(v, w, &d), GS_OK);
  assert_string_equal(d.overall, "fail");
  assert_int_equal(d.links, 1);
  assert_int_equal(d.judged[2], GS_PAIRS_LINK);
  assert_int_equal(d.judged[1], GS_PAIRS_FINE);
  gs_pairs_decision_free(&d);
  // The confirming round: both suspects (2-3 by its ratio), the reference
  // 0-1, the neighbour 1-3 once its interval reaches 1.4 (not clearly
  // fine), and node 2 with node 1, node 2 having no pair but suspects.
  int *a = NULL, *b = NULL;
  size_t n = 0;
  r[0].reference = 1;
  r[3].high = 1.4; /* 1-3 now not clearly fine: a neighbour of the suspects */
  assert_int_equal(gs_pairs_confirm_choose(v, &a, &b, &n), GS_OK);
  assert_int_equal(n, 5);
  assert_int_equal(a[0] * 10 + b[0], 23);
  assert_int_equal(a[1] * 10 + b[1], 2);
  assert_int_equal(a[2] * 10 + b[2], 1);  /* the reference */
  assert_int_equal(a[3] * 10 + b[3], 13); /* the neighbour */
  assert_int_equal(a[4] * 10 + b[4], 12); /* node 2's pairs are all suspects: added */
  free(a);
  free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tournament),
      cmocka_unit_test(test_bisection),
      cmocka_unit_test(test_slow_unit_and_link),
      cmocka_unit_test(test_undecided_and_refusals),
      cmocka_unit_test(test_slots),
      cmocka_unit_test(test_confirm_choose),
      cmocka_unit_test(test_decide),
      cmocka_unit_test(test_weak_neighbour),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
