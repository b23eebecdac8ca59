/* Tests of the arrival skew (core/arrival) against figures worked out by
 * hand from the definitions in docs/stragglers.md, "Arrival skew": the last
 * rank and its count, the median lateness and its order-statistic
 * interval, noise, exit spread, clock error, the wait share, the period
 * and the material share, the naming rule,
 * merging, the document member's sample and round trip, the host-bound
 * share, and ranks that meet in groups (a pipeline's stages), summarized
 * per group. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "core/arrival.h"
#include "core/rng.h"

static void assert_near(double expected, double actual, double tol) {
  if (!(fabs(expected - actual) <= tol)) {
    print_error("expected %.10g, got %.10g\n", expected, actual);
    fail();
  }
}

/* n_ranks ranks of which the first `recording` take part in 4 iterations
 * as three_ranks' below do (rank 2 arriving 2 s late), the others with no
 * time. */
static gs_arrival *ranks_of(size_t n_ranks, size_t recording) {
  gs_arrival *a = gs_arrival_new(n_ranks, 2, "host", "shared");
  assert_non_null(a);
  for (int i = 0; i < 4; i++)
    for (size_t k = 0; k < recording; k++)
      assert_int_equal(gs_arrival_append(&a->ranks[k], 10.0 * i + (k == 2 ? 2.0 : 0.0),
                                         10.0 * i + 3.0),
                       GS_OK);
  return a;
}

/* Ranks 0 and 1 enter at 10 i, rank 2 at 10 i + 2; all leave at 10 i + 3.
 * Rank 2 is last in all 4 iterations, 2 s late against the median of the
 * others (interval [2, 2], no noise); ranks 0 and 1 are -1 s late (0 less
 * the median of 0 and 2). Per iteration ranks 0 and 1 wait 2 of their 3 s
 * and rank 2 none of its 1 s: 4 / 7 of the time is waiting. Every rank
 * leaves at once: no exit spread. */
static gs_arrival *three_ranks(void) { return ranks_of(3, 3); }

static void test_by_hand(void **state) {
  (void)state;
  gs_arrival *a = three_ranks();
  a->ranks[0].error_seconds = 0.3;
  a->ranks[1].error_seconds = 0.2;
  a->ranks[2].error_seconds = 0.1;
  gs_arrival_summary s;
  assert_int_equal(gs_arrival_summarize(a, &s), GS_OK);
  assert_int_equal(s.iterations, 4);
  assert_int_equal(s.last_rank, 2);
  assert_int_equal(s.last_count[0], 0);
  assert_int_equal(s.last_count[2], 4);
  assert_near(2.0, s.lateness, 1e-12);
  assert_near(2.0, s.lateness_low, 1e-12);
  assert_near(2.0, s.lateness_high, 1e-12);
  assert_near(-1.0, s.rank_lateness[0], 1e-12);
  assert_near(-1.0, s.rank_lateness[1], 1e-12);
  assert_near(0.0, s.noise, 1e-12);
  assert_near(0.0, s.exit_spread, 1e-12);
  assert_near(0.4, s.alignment_error, 1e-12); /* 0.1 + the largest other, 0.3 */
  assert_near(4.0 / 7.0, s.wait_share, 1e-12);
  assert_near(0.4, gs_arrival_threshold(&s), 1e-12);
  assert_near(10.0, s.period, 1e-12); /* median entries 10 i */
  assert_int_equal(gs_arrival_named(&s), 2);
  // Ranks outnumbering the host's cores raise the threshold on the host
  // clock only; a lateness of 2 s stays above the floor.
  assert_near(0.0, gs_arrival_floor("host", 3, 4), 0.0);
  assert_near(0.0, gs_arrival_floor("host", 3, 0), 0.0);
  assert_near(0.0, gs_arrival_floor("device", 4, 2), 0.0);
  s.floor = gs_arrival_floor("host", 4, 2);
  assert_near(GS_ARRIVAL_SHARED_CORES_SECONDS, s.floor, 0.0);
  assert_near(0.4, gs_arrival_threshold(&s), 1e-12);
  s.floor = 1.5;
  assert_near(1.5, gs_arrival_threshold(&s), 1e-12);
  assert_int_equal(gs_arrival_named(&s), 2);
  s.floor = 2.5;
  assert_int_equal(gs_arrival_named(&s), -1);
  // A clock error as large as the lateness names nobody.
  a->ranks[0].error_seconds = 2.0;
  assert_int_equal(gs_arrival_summarize(a, &s), GS_OK);
  assert_near(2.1, gs_arrival_threshold(&s), 1e-12);
  assert_int_equal(gs_arrival_named(&s), -1);
  gs_arrival_free(a);
}

/* Rank 1 enters i + 1 s after rank 0 in iteration i (i < 20): its
 * lateness is 1..20, median 10.5, interval the 5th and 16th order
 * statistics (floor(10 - 0.98 sqrt 20) = 5, ceil(11 + 0.98 sqrt 20) = 16):
 * [5, 16]. Its absolute deviations from 10.5 are 0.5, 0.5, 1.5, 1.5, ...
 * with median 5, so the noise is 1.4826 x 5 = 7.413 and the interval's
 * low end (5) is within it: nobody, although rank 1 is last every time.
 * Rank 1 leaves 0.5 s after rank 0: the exit spread. */
static void test_interval_and_noise(void **state) {
  (void)state;
  gs_arrival *a = gs_arrival_new(2, 4, "device", "shared");
  assert_non_null(a);
  for (int i = 0; i < 20; i++) {
    assert_int_equal(gs_arrival_append(&a->ranks[0], 100.0 * i, 100.0 * i + i + 2.0), GS_OK);
    assert_int_equal(gs_arrival_append(&a->ranks[1], 100.0 * i + i + 1.0, 100.0 * i + i + 2.5),
                     GS_OK);
  }
  gs_arrival_summary s;
  assert_int_equal(gs_arrival_summarize(a, &s), GS_OK);
  assert_int_equal(s.last_rank, 1);
  assert_int_equal(s.last_count[1], 20);
  assert_near(10.5, s.lateness, 1e-12);
  assert_near(5.0, s.lateness_low, 1e-12);
  assert_near(16.0, s.lateness_high, 1e-12);
  assert_near(1.4826 * 5.0, s.noise, 1e-12);
  assert_near(0.5, s.exit_spread, 1e-12);
  assert_int_equal(gs_arrival_named(&s), -1);
  gs_arrival_free(a);
}

/* The material share: two ranks with no noise, no clock error and no exit
 * spread, iterations 1000 s apart (median entries 1000 i + late / 2, so
 * the period is 1000 s and 1% of it 10 s): rank 1 5 s late every time is
 * steady but immaterial (nobody); 20 s late, named. Without a period (a
 * document before it) the term is left out. */
static void test_material_share(void **state) {
  (void)state;
  for (int late = 5; late <= 20; late += 15) {
    gs_arrival *a = gs_arrival_new(2, 8, "device", "shared");
    assert_non_null(a);
    for (int i = 0; i < 8; i++) {
      assert_int_equal(gs_arrival_append(&a->ranks[0], 1000.0 * i, 1000.0 * i + 30.0), GS_OK);
      assert_int_equal(gs_arrival_append(&a->ranks[1], 1000.0 * i + late, 1000.0 * i + 30.0),
                       GS_OK);
    }
    gs_arrival_summary s;
    assert_int_equal(gs_arrival_summarize(a, &s), GS_OK);
    assert_near(1000.0, s.period, 1e-9);
    assert_near(10.0, gs_arrival_threshold(&s), 1e-9);
    assert_int_equal(gs_arrival_named(&s), late == 5 ? -1 : 1);
    s.period = NAN;
    assert_near(0.0, gs_arrival_threshold(&s), 0.0);
    assert_int_equal(gs_arrival_named(&s), 1);
    gs_arrival_free(a);
  }
}

/* An iteration with a missing time of any rank is left out for all. */
static void test_incomplete_iterations(void **state) {
  (void)state;
  gs_arrival *a = three_ranks();
  a->ranks[1].exit[3] = NAN;
  gs_arrival_summary s;
  assert_int_equal(gs_arrival_summarize(a, &s), GS_OK);
  assert_int_equal(s.iterations, 3);
  assert_int_equal(s.last_count[2], 3);
  assert_int_equal(gs_arrival_recorded(a), 1);
  for (size_t i = 0; i < 4; i++) a->ranks[0].entry[i] = NAN; /* no collective marked */
  assert_int_equal(gs_arrival_recorded(a), 0);
  gs_arrival_free(a);
}

/* Simulated ranks: 4 ranks entering with up to 100 us of jitter, rank 3
 * 50 ms late in every iteration when `late`. The late rank is named with
 * its lateness within 1%; without it nobody is named. */
static void simulate(int late, int *named, double *lateness) {
  gs_rng rng;
  gs_rng_seed(&rng, 29, (uint64_t)late);
  gs_arrival *a = gs_arrival_new(4, 0, "host", "shared");
  assert_non_null(a);
  for (int i = 0; i < 200; i++) {
    double latest = 0.0, entry[4];
    for (int k = 0; k < 4; k++) {
      entry[k] = 0.1 * i + 100e-6 * gs_rng_double(&rng) + (late && k == 3 ? 0.05 : 0.0);
      if (entry[k] > latest) latest = entry[k];
    }
    for (int k = 0; k < 4; k++)
      assert_int_equal(gs_arrival_append(&a->ranks[k], entry[k], latest + 20e-6), GS_OK);
  }
  gs_arrival_summary s;
  assert_int_equal(gs_arrival_summarize(a, &s), GS_OK);
  *named = gs_arrival_named(&s);
  *lateness = s.lateness;
  gs_arrival_free(a);
}

static void test_simulated(void **state) {
  (void)state;
  int named = 0;
  double lateness = 0.0;
  simulate(1, &named, &lateness);
  assert_int_equal(named, 3);
  assert_near(0.05, lateness, 0.0005);
  simulate(0, &named, &lateness);
  assert_int_equal(named, -1);
}

/* Merging appends each rank's iterations and keeps the larger error. */
static void test_merge(void **state) {
  (void)state;
  gs_arrival *a = three_ranks(), *b = three_ranks();
  b->ranks[1].error_seconds = 0.5;
  assert_int_equal(gs_arrival_merge(a, b), GS_OK);
  assert_int_equal(a->ranks[1].n, 8);
  assert_near(0.5, a->ranks[1].error_seconds, 0.0);
  gs_arrival_summary s;
  assert_int_equal(gs_arrival_summarize(a, &s), GS_OK);
  assert_int_equal(s.last_count[2], 8);
  gs_arrival *two = gs_arrival_new(2, 1, "host", "shared");
  assert_int_not_equal(gs_arrival_merge(a, two), GS_OK);
  gs_arrival_free(two);
  gs_arrival_free(a);
  gs_arrival_free(b);
}

/* The member keeps at most 64 iterations, evenly spread (j * n / 64), with
 * times from the earliest entry, and its summary reads back the same. */
static void test_json(void **state) {
  (void)state;
  gs_arrival *a = gs_arrival_new(2, 0, "host", "ping-pong");
  assert_non_null(a);
  for (int i = 0; i < 100; i++) {
    assert_int_equal(gs_arrival_append(&a->ranks[0], 50.0 + i, 50.5 + i), GS_OK);
    assert_int_equal(gs_arrival_append(&a->ranks[1], 50.25 + i, 50.5 + i), GS_OK);
  }
  cJSON *j = gs_arrival_to_json(a);
  assert_non_null(j);
  const cJSON *sample = cJSON_GetObjectItemCaseSensitive(j, "sample");
  assert_int_equal(cJSON_GetArraySize(sample), 64);
  assert_near(98.0, cJSON_GetArrayItem(sample, 63)->valuedouble, 0.0); /* 63 * 100 / 64 */
  const cJSON *r1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "ranks"), 1);
  const cJSON *entry = cJSON_GetObjectItemCaseSensitive(r1, "entry_seconds");
  assert_int_equal(cJSON_GetArraySize(entry), 64);
  assert_near(0.25, cJSON_GetArrayItem(entry, 0)->valuedouble, 1e-12);
  assert_near(98.25, cJSON_GetArrayItem(entry, 63)->valuedouble, 1e-9);
  gs_arrival_summary s, back;
  assert_int_equal(gs_arrival_summarize(a, &s), GS_OK);
  assert_int_equal(gs_arrival_summary_from_json(j, "test", &back), GS_OK);
  assert_int_equal(back.iterations, 100);
  assert_int_equal(back.last_rank, 1);
  assert_int_equal(back.last_count[1], 100);
  assert_near(s.lateness, back.lateness, 0.0);
  assert_near(s.wait_share, back.wait_share, 0.0);
  assert_int_equal(gs_arrival_named(&back), gs_arrival_named(&s));
  // A malformed member is an error naming the file.
  cJSON_ReplaceItemInObject(j, "wait_share", cJSON_CreateString("high"));
  assert_int_equal(gs_arrival_summary_from_json(j, "test", &back), GS_ERR_FORMAT);
  cJSON_Delete(j);
  gs_arrival_free(a);
}

/* The host-bound counts (device clock): the last rank's share of its
 * checked iterations whose stream waited for its host; merged by adding,
 * written per rank and as the summary's share, read back; unknown (NaN,
 * null) where nothing was checked, and in a document written before it. */
static void test_host_bound(void **state) {
  (void)state;
  gs_arrival *a = three_ranks(), *b = three_ranks();
  gs_arrival_summary s, back;
  assert_int_equal(gs_arrival_summarize(a, &s), GS_OK);
  assert_true(isnan(s.host_bound_share));
  a->ranks[2].host_checked = 4;
  a->ranks[2].host_bound = 3;
  b->ranks[2].host_checked = 4;
  b->ranks[2].host_bound = 4;
  assert_int_equal(gs_arrival_merge(a, b), GS_OK);
  assert_int_equal(a->ranks[2].host_checked, 8);
  assert_int_equal(a->ranks[2].host_bound, 7);
  assert_int_equal(gs_arrival_summarize(a, &s), GS_OK);
  assert_int_equal(s.last_rank, 2);
  assert_near(7.0 / 8.0, s.host_bound_share, 1e-15);
  cJSON *j = gs_arrival_to_json(a);
  assert_non_null(j);
  const cJSON *r2 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "ranks"), 2);
  assert_near(7.0, cJSON_GetObjectItemCaseSensitive(r2, "host_bound")->valuedouble, 0.0);
  assert_null(cJSON_GetObjectItemCaseSensitive(
      cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "ranks"), 0), "host_checked"));
  assert_int_equal(gs_arrival_summary_from_json(j, "test", &back), GS_OK);
  assert_near(7.0 / 8.0, back.host_bound_share, 1e-15);
  cJSON_DeleteItemFromObject(j, "last_rank_host_bound_share");
  assert_int_equal(gs_arrival_summary_from_json(j, "test", &back), GS_OK);
  assert_true(isnan(back.host_bound_share));
  cJSON_Delete(j);
  gs_arrival_free(a);
  gs_arrival_free(b);
}

/* Four ranks as two pipeline stages of two replicas (group = rank % 2).
 * Stage 0 (ranks 0, 2) enters at 10 i, rank 2 (its replica 1) 2 s late;
 * stage 1 (ranks 1, 3) enters at 10 i + 5, rank 1 (its replica 0) 0.5 s
 * later; all leave at 10 i + 8. Per group: stage 0's replica 1 is last
 * every time, 2 s late, waiting 2 of 8 + 6 s; stage 1's replica 0 is last,
 * 0.5 s late, waiting 0.5 of 3 + 2.5 s. Over the world rank 1 would be
 * last every time, and rank 2's lateness at its own group not seen. */
static void test_groups(void **state) {
  (void)state;
  gs_arrival *a = gs_arrival_new(4, 4, "host", "shared");
  assert_non_null(a);
  const double at[4] = {0.0, 5.5, 2.0, 5.0};
  for (int i = 0; i < 4; i++)
    for (size_t k = 0; k < 4; k++)
      assert_int_equal(gs_arrival_append(&a->ranks[k], 10.0 * i + at[k], 10.0 * i + 8.0), GS_OK);
  gs_arrival_summary s;
  assert_int_equal(gs_arrival_summarize(a, &s), GS_OK);
  assert_int_equal(s.last_rank, 1);
  const int group[4] = {0, 1, 0, 1};
  gs_arrival_set_groups(a, group);
  gs_arrival view;
  int members[GS_MAX_RANKS];
  gs_arrival_group_view(a, 1, &view, members);
  assert_int_equal(view.n_ranks, 2);
  assert_int_equal(members[0], 1);
  assert_int_equal(members[1], 3);
  cJSON *j = gs_arrival_groups_to_json(a);
  assert_non_null(j);
  assert_int_equal(cJSON_GetArraySize(j), 2);
  const double late[2] = {2.0, 0.5}, wait[2] = {2.0 / 14.0, 0.5 / 5.5};
  const int last[2] = {1, 0};
  for (int g = 0; g < 2; g++) {
    const cJSON *o = cJSON_GetArrayItem(j, g);
    assert_near(g, cJSON_GetObjectItemCaseSensitive(o, "stage")->valuedouble, 0.0);
    const cJSON *global = cJSON_GetObjectItemCaseSensitive(o, "global_ranks");
    assert_int_equal(cJSON_GetArraySize(global), 2);
    assert_near(g, cJSON_GetArrayItem(global, 0)->valuedouble, 0.0);
    assert_near(g + 2, cJSON_GetArrayItem(global, 1)->valuedouble, 0.0);
    gs_arrival_summary back;
    assert_int_equal(gs_arrival_summary_from_json(o, "test", &back), GS_OK);
    assert_int_equal(back.n_ranks, 2);
    assert_int_equal(back.iterations, 4);
    assert_int_equal(back.last_rank, last[g]);
    assert_int_equal(back.last_count[last[g]], 4);
    assert_near(late[g], back.lateness, 1e-12);
    assert_near(wait[g], back.wait_share, 1e-12);
    assert_int_equal(gs_arrival_named(&back), last[g]);
  }
  cJSON_Delete(j);
  // Grouped by replica and stage (llm: 2 stages a replica): group 1 is
  // replica 0's stage 1, written with both and no other change.
  a->group_stages = 2;
  j = gs_arrival_groups_to_json(a);
  assert_non_null(j);
  for (int g = 0; g < 2; g++) {
    const cJSON *o = cJSON_GetArrayItem(j, g);
    assert_near(g, cJSON_GetObjectItemCaseSensitive(o, "stage")->valuedouble, 0.0);
    assert_near(0, cJSON_GetObjectItemCaseSensitive(o, "replica")->valuedouble, 0.0);
    assert_near(g + 2,
                cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "global_ranks"), 1)
                    ->valuedouble,
                0.0);
  }
  cJSON_Delete(j);
  a->group_stages = 0;
  // Merging: an ungrouped record takes the groups; other groups refuse.
  gs_arrival *b = gs_arrival_new(4, 0, "host", "shared");
  assert_non_null(b);
  assert_int_equal(gs_arrival_merge(b, a), GS_OK);
  assert_int_equal(b->grouped, 1);
  assert_int_equal(b->group[3], 1);
  assert_int_equal(b->ranks[2].n, 4);
  const int other[4] = {0, 0, 1, 1};
  gs_arrival_set_groups(b, other);
  assert_int_equal(gs_arrival_merge(b, a), GS_ERR_USAGE);
  gs_arrival_free(b);
  gs_arrival_free(a);
}

/* A grouped record where one group's rank recorded nothing (a replica
 * that failed at once) keeps the other group: recorded, and written with
 * that group alone; an ungrouped one with such a rank is not recorded. */
static void test_failed_group(void **state) {
  (void)state;
  gs_arrival *a = ranks_of(4, 3);
  assert_int_equal(gs_arrival_append(&a->ranks[3], NAN, NAN), GS_OK);
  assert_int_equal(gs_arrival_recorded(a), 0);
  const int group[4] = {0, 1, 0, 1};
  gs_arrival_set_groups(a, group);
  assert_int_equal(gs_arrival_recorded(a), 1);
  cJSON *j = gs_arrival_groups_to_json(a);
  assert_non_null(j);
  assert_int_equal(cJSON_GetArraySize(j), 1);
  const cJSON *o = cJSON_GetArrayItem(j, 0);
  assert_near(0, cJSON_GetObjectItemCaseSensitive(o, "stage")->valuedouble, 0.0);
  gs_arrival_summary back;
  assert_int_equal(gs_arrival_summary_from_json(o, "test", &back), GS_OK);
  assert_int_equal(back.iterations, 4);
  assert_int_equal(back.last_rank, 1); /* rank 2, member 1 of group 0 */
  cJSON_Delete(j);
  // Neither group whole: nothing recorded.
  const int apart[4] = {0, 0, 1, 1};
  gs_arrival_set_groups(a, apart);
  for (size_t i = 0; i < a->ranks[0].n; i++) a->ranks[0].entry[i] = NAN;
  assert_int_equal(gs_arrival_recorded(a), 0);
  gs_arrival_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_by_hand),
      cmocka_unit_test(test_interval_and_noise),
      cmocka_unit_test(test_material_share),
      cmocka_unit_test(test_incomplete_iterations),
      cmocka_unit_test(test_simulated),
      cmocka_unit_test(test_merge),
      cmocka_unit_test(test_json),
      cmocka_unit_test(test_host_bound),
      cmocka_unit_test(test_groups),
      cmocka_unit_test(test_failed_group),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
