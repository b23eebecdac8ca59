/* The llm request stream and dispatch: lengths within their ranges and
 * seeded, Poisson arrivals with the right mean and spread, the even static
 * split, and the queue that hands out arrived samples. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "bug_fixture.h"
#include "workloads/llm/requests.h"

static void test_lengths_in_range_and_seeded(void **state) {
  (void)state;
  gs_llm_stream_spec spec = {.count = 4000,
                             .input_min = 59,
                             .input_max = 71,
                             .output_min = 27,
                             .output_max = 32,
                             .seed = 5};
  gs_llm_sample *a = NULL, *b = NULL;
  assert_int_equal(gs_llm_stream_make(&spec, &a), GS_OK);
  assert_int_equal(gs_llm_stream_make(&spec, &b), GS_OK);
  uint32_t lo = UINT32_MAX, hi = 0, olo = UINT32_MAX, ohi = 0;
  for (uint64_t i = 0; i < spec.count; i++) {
    assert_int_equal(a[i].id, i);
    assert_int_equal(a[i].input_tokens, b[i].input_tokens);
    assert_int_equal(a[i].output_tokens, b[i].output_tokens);
    assert_true(a[i].arrival == 0.0); /* rate 0: all at once */
    if (a[i].input_tokens < lo) lo = a[i].input_tokens;
    if (a[i].input_tokens > hi) hi = a[i].input_tokens;
    if (a[i].output_tokens < olo) olo = a[i].output_tokens;
    if (a[i].output_tokens > ohi) ohi = a[i].output_tokens;
  }
  assert_int_equal(lo, 59);
  assert_int_equal(hi, 71);
  assert_int_equal(olo, 27);
  assert_int_equal(ohi, 32);
  free(a);
  free(b);
  spec.input_min = 80; /* above input_max */
  assert_bug(gs_llm_stream_make(&spec, &a), "bad llm stream");
}

/* Gaps of a Poisson process are exponential: mean 1/rate, and standard
 * deviation equal to the mean. With 20000 gaps both are within 3%. */
static void test_poisson_arrivals(void **state) {
  (void)state;
  gs_llm_stream_spec spec = {.count = 20000,
                             .input_min = 1,
                             .input_max = 1,
                             .output_min = 1,
                             .output_max = 1,
                             .rate = 10.0,
                             .seed = 9};
  gs_llm_sample *s = NULL;
  assert_int_equal(gs_llm_stream_make(&spec, &s), GS_OK);
  double sum = 0.0, sq = 0.0, prev = 0.0;
  size_t below_mean = 0;
  for (uint64_t i = 0; i < spec.count; i++) {
    double gap = s[i].arrival - prev;
    assert_true(gap > 0.0);
    prev = s[i].arrival;
    sum += gap;
    sq += gap * gap;
    if (gap < 0.1) below_mean++;
  }
  double mean = sum / (double)spec.count;
  double sd = sqrt(sq / (double)spec.count - mean * mean);
  assert_true(fabs(mean - 0.1) < 0.003);
  assert_true(fabs(sd / mean - 1.0) < 0.03);
  // P(gap < mean) = 1 - 1/e = 0.632 for an exponential.
  assert_true(fabs((double)below_mean / (double)spec.count - (1.0 - exp(-1.0))) < 0.015);
  free(s);
}

/* Mean and coefficient of variation of the gaps of a stream. */
static void gap_moments(const gs_llm_stream_spec *spec, double *mean, double *cv) {
  gs_llm_sample *s = NULL;
  assert_int_equal(gs_llm_stream_make(spec, &s), GS_OK);
  double sum = 0.0, sq = 0.0, prev = 0.0;
  for (uint64_t i = 0; i < spec->count; i++) {
    const double gap = s[i].arrival - prev;
    assert_true(gap > 0.0);
    prev = s[i].arrival;
    sum += gap;
    sq += gap * gap;
  }
  *mean = sum / (double)spec->count;
  *cv = sqrt(sq / (double)spec->count - *mean * *mean) / *mean;
  free(s);
}

/* Gamma gaps of shape k at rate 10 have mean 0.1 and cv 1 / sqrt(k): 1.414
 * at burstiness 0.5, 0.5 at 4, 1 at 1 (Poisson); constant gaps are all
 * 0.1 (cv 0). 40000 gaps: mean within 2%, cv within 4%. */
static void test_gamma_and_constant_arrivals(void **state) {
  (void)state;
  gs_llm_stream_spec spec = {.count = 40000, .input_min = 1, .input_max = 1, .output_min = 1,
                             .output_max = 1, .rate = 10.0, .seed = 3,
                             .arrival = GS_LLM_ARRIVAL_GAMMA};
  const double shapes[] = {0.5, 1.0, 4.0};
  for (size_t i = 0; i < 3; i++) {
    spec.burstiness = shapes[i];
    double mean, cv;
    gap_moments(&spec, &mean, &cv);
    assert_true(fabs(mean - 0.1) < 0.002);
    assert_true(fabs(cv - 1.0 / sqrt(shapes[i])) < 0.04 / sqrt(shapes[i]));
  }
  spec.arrival = GS_LLM_ARRIVAL_CONSTANT;
  gs_llm_sample *s = NULL;
  spec.count = 5;
  assert_int_equal(gs_llm_stream_make(&spec, &s), GS_OK);
  for (uint64_t i = 0; i < 5; i++) assert_float_equal(s[i].arrival, 0.1 * (double)(i + 1), 1e-12);
  free(s);
  spec.arrival = GS_LLM_ARRIVAL_GAMMA;
  spec.burstiness = 0.0;
  assert_bug(gs_llm_stream_make(&spec, &s), "bad llm stream");
}

static void test_static_split(void **state) {
  (void)state;
  uint64_t begin, n, next = 0;
  const uint64_t expect[3] = {4, 3, 3};
  for (int r = 0; r < 3; r++) {
    gs_llm_dispatch_static(10, 3, r, &begin, &n);
    assert_int_equal(begin, next);
    assert_int_equal(n, expect[r]);
    next += n;
  }
  gs_llm_dispatch_static(1, 2, 1, &begin, &n);
  assert_int_equal(n, 0);
}

static void test_queue_takes_arrived_samples(void **state) {
  (void)state;
  gs_llm_sample s[4] = {{0, 1, 1, 0.1}, {1, 1, 1, 0.2}, {2, 1, 1, 0.3}, {3, 1, 1, 0.4}};
  gs_llm_queue q;
  assert_int_equal(gs_llm_queue_init(&q, s, 0, 3), 0); /* the fourth is outside the range */
  uint32_t ids[8];
  double next = 0.0;
  assert_int_equal(gs_llm_queue_take(&q, 0.05, 8, ids, &next), 0);
  assert_true(next == 0.1);
  assert_int_equal(gs_llm_queue_take(&q, 0.25, 8, ids, &next), 2);
  assert_int_equal(ids[0], 0);
  assert_int_equal(ids[1], 1);
  assert_true(next == 0.3);
  assert_int_equal(gs_llm_queue_take(&q, 10.0, 8, ids, &next), 1);
  assert_int_equal(ids[0], 2);
  assert_int_equal(gs_llm_queue_take(&q, 10.0, 8, ids, &next), 0);
  assert_true(next < 0.0);
  gs_llm_queue_destroy(&q);
}

static void test_prompts_seeded(void **state) {
  (void)state;
  int32_t a[50], b[50], c[50];
  gs_llm_prompt_tokens(1, 3, 50, 100, a);
  gs_llm_prompt_tokens(1, 3, 50, 100, b);
  gs_llm_prompt_tokens(1, 4, 50, 100, c);
  assert_memory_equal(a, b, sizeof a);
  int differ = 0;
  for (int i = 0; i < 50; i++) {
    assert_true(a[i] >= 0 && a[i] < 100);
    differ |= a[i] != c[i];
  }
  assert_true(differ);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lengths_in_range_and_seeded),
      cmocka_unit_test(test_poisson_arrivals),
      cmocka_unit_test(test_gamma_and_constant_arrivals),
      cmocka_unit_test(test_static_split),
      cmocka_unit_test(test_queue_takes_arrived_samples),
      cmocka_unit_test(test_prompts_seeded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
