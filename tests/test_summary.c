/* Tests of the terminal verdict table (cli/summary.c): one line and one
 * sentence per series (variant and split policy), the verdict words of the
 * backend, a split series measured against the unsplit 1-rank row, series
 * without a 1-rank baseline left out. The rule itself is tested in
 * test_scaling.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/summary.h"

static void measured(gs_measurement *m, const char *variant, int ranks, double throughput) {
  memset(m, 0, sizeof *m);
  snprintf(m->workload, sizeof m->workload, "mlp");
  snprintf(m->backend, sizeof m->backend, "cuda");
  snprintf(m->variant, sizeof m->variant, "%s", variant);
  m->world_size = ranks;
  m->status = GS_OK;
  m->cost.item_unit = "samples";
  m->aggregate.throughput = throughput;
  // One run of 8 steps of 1 sample each within +-0.4% of 1 / throughput,
  // so that every speedup has a narrow interval.
  static const double wiggle[8] = {-0.004, 0.002, 0.0, 0.004, -0.002, 0.001, -0.001, 0.0};
  m->n_runs = 1;
  m->runs = calloc(1, sizeof *m->runs);
  assert_non_null(m->runs);
  m->runs[0].n_steps = 8;
  m->runs[0].step_seconds = malloc(8 * sizeof(double));
  assert_non_null(m->runs[0].step_seconds);
  for (int k = 0; k < 8; k++) m->runs[0].step_seconds[k] = (1.0 + wiggle[k]) / throughput;
}

static void release(gs_measurement *ms, size_t count) {
  for (size_t i = 0; i < count; i++) gs_measurement_free(&ms[i]);
}

static void table_of(const gs_measurement *ms, size_t count, char **text, size_t *size) {
  *text = NULL;
  FILE *out = open_memstream(text, size);
  assert_non_null(out);
  gs_decision_table_print(out, ms, NULL, count, NULL, NULL);
  fclose(out);
}

static void test_table_one_line_per_variant(void **state) {
  (void)state;
  gs_measurement ms[5];
  measured(&ms[0], "batch=16", 1, 1000.0);
  measured(&ms[1], "batch=16", 2, 800.0);
  measured(&ms[2], "batch=8192", 1, 1000.0);
  measured(&ms[3], "batch=8192", 2, 1900.0);
  measured(&ms[4], "batch=99", 2, 5.0); /* no 1-rank measurement: left out */
  size_t size = 0;
  char *text;
  table_of(ms, 5, &text, &size);
  assert_non_null(strstr(text, "single vs multi (samples/s"));
  const char *small = strstr(text, "mlp (variant batch=16) ");
  const char *big = strstr(text, "mlp (variant batch=8192) ");
  assert_non_null(small);
  assert_non_null(big);
  assert_non_null(strstr(small, "0.80x [0.80, 0.80]"));
  assert_non_null(strstr(small, "single GPU preferred"));
  assert_non_null(strstr(big, "1.90x [1.90, 1.90]"));
  assert_non_null(strstr(big, "95.0% [94.8, 95.2]"));
  assert_non_null(strstr(big, "multi-GPU beneficial"));
  assert_null(strstr(text, "batch=99"));
  assert_non_null(strstr(text, "  - mlp (variant batch=16): single GPU preferred: speedup 0.80x "
                               "[0.80, 0.80] at 2 ranks (interval < 0.95; 95% interval over 1 + 1 "
                               "runs), efficiency 40.0% [39.9, 40.1], Karp-Flatt serial fraction "
                               "1.500 [1.494, 1.506], throughput 800 samples/s of ideal 2.00 "
                               "Ksamples/s\n"));
  assert_non_null(strstr(text, "  - mlp (variant batch=8192): multi-GPU beneficial: speedup 1.90x"));
  free(text);
  release(ms, 5);
}

static void test_table_per_split_policy(void **state) {
  (void)state;
  gs_measurement ms[3];
  measured(&ms[0], "", 1, 1000.0);
  measured(&ms[1], "", 2, 500.0);
  measured(&ms[2], "", 2, 1000.0);
  for (int k = 0; k < 3; k++) snprintf(ms[k].backend, sizeof ms[k].backend, "cpu");
  ms[1].split.policy = GS_SPLIT_EVEN;
  ms[2].split.policy = GS_SPLIT_PROPORTIONAL;
  size_t size = 0;
  char *text;
  table_of(ms, 3, &text, &size);
  assert_non_null(strstr(text, "  - mlp (split even): single rank preferred: speedup 0.50x"));
  assert_non_null(strstr(text, "  - mlp (split proportional): multi-rank marginal: speedup 1.00x"));
  assert_null(strstr(text, "GPU"));
  free(text);
  release(ms, 3);
}

static void test_table_silent_without_pairs(void **state) {
  (void)state;
  gs_measurement ms[2];
  measured(&ms[0], "", 1, 1000.0);
  size_t size = 0;
  char *text;
  table_of(ms, 1, &text, &size);
  assert_int_equal(size, 0);
  free(text);
  // A failed multi-rank measurement gives no verdict either.
  measured(&ms[1], "", 2, 3000.0);
  ms[1].status = GS_ERR_VERIFY;
  table_of(ms, 2, &text, &size);
  assert_int_equal(size, 0);
  free(text);
  release(ms, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_one_line_per_variant),
      cmocka_unit_test(test_table_per_split_policy),
      cmocka_unit_test(test_table_silent_without_pairs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
