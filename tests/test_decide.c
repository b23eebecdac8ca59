/* Tests of the single-vs-multi rule and its table (measure/decide.c, cli/summary.c): the
 * thresholds at their edges, one line per variant with a 1-rank and a
 * multi-rank measurement, variants without both left out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/summary.h"
#include "measure/decide.h"

static void test_thresholds(void **state) {
  (void)state;
  assert_int_equal(gs_decide(0.0), GS_DECISION_UNKNOWN);
  assert_int_equal(gs_decide(-1.0), GS_DECISION_UNKNOWN);
  assert_int_equal(gs_decide(0.5), GS_DECISION_SINGLE);
  assert_int_equal(gs_decide(0.9499), GS_DECISION_SINGLE);
  assert_int_equal(gs_decide(0.95), GS_DECISION_MARGINAL);
  assert_int_equal(gs_decide(1.0999), GS_DECISION_MARGINAL);
  assert_int_equal(gs_decide(1.1), GS_DECISION_MULTI);
  assert_int_equal(gs_decide(1.9), GS_DECISION_MULTI);
  assert_string_equal(gs_decision_text(GS_DECISION_SINGLE), "single GPU preferred");
  assert_string_equal(gs_decision_text(GS_DECISION_MULTI), "multi-GPU beneficial");
}

static void measured(gs_measurement *m, const char *variant, int ranks, double throughput) {
  memset(m, 0, sizeof *m);
  snprintf(m->variant, sizeof m->variant, "%s", variant);
  m->world_size = ranks;
  m->status = GS_OK;
  m->cost.item_unit = "samples";
  m->aggregate.throughput = throughput;
}

static void test_table_one_line_per_variant(void **state) {
  (void)state;
  gs_measurement ms[5];
  measured(&ms[0], "batch=16", 1, 1000.0);
  measured(&ms[1], "batch=16", 2, 800.0);
  measured(&ms[2], "batch=8192", 1, 1000.0);
  measured(&ms[3], "batch=8192", 2, 1900.0);
  measured(&ms[4], "batch=99", 2, 5.0); /* no 1-rank measurement: left out */
  gs_runner_relate(ms, 2);
  gs_runner_relate(ms + 2, 2);
  char *text = NULL;
  size_t size = 0;
  FILE *out = open_memstream(&text, &size);
  assert_non_null(out);
  gs_decision_table_print(out, ms, 5);
  fclose(out);
  assert_non_null(strstr(text, "single vs multi (samples/s"));
  const char *small = strstr(text, "batch=16");
  const char *big = strstr(text, "batch=8192");
  assert_non_null(small);
  assert_non_null(big);
  assert_non_null(strstr(small, "0.80x"));
  assert_non_null(strstr(small, "single GPU preferred"));
  assert_non_null(strstr(big, "1.90x"));
  assert_non_null(strstr(big, "95.0%"));
  assert_non_null(strstr(big, "multi-GPU beneficial"));
  assert_null(strstr(text, "batch=99"));
  free(text);
}

static void test_table_silent_without_pairs(void **state) {
  (void)state;
  gs_measurement ms[1];
  measured(&ms[0], "", 1, 1000.0);
  char *text = NULL;
  size_t size = 0;
  FILE *out = open_memstream(&text, &size);
  gs_decision_table_print(out, ms, 1);
  fclose(out);
  assert_int_equal(size, 0);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_thresholds),
      cmocka_unit_test(test_table_one_line_per_variant),
      cmocka_unit_test(test_table_silent_without_pairs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
