/* Unit tests of the pure parts of p2p: --pairs parsing (and its errors),
 * which pairs are measured, the bandwidth formula, cell summaries, the
 * result-document member (measured, skipped and not-asked-for cells), the
 * terminal matrices, and the refusal with no GPU. Runs without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p2p/p2p.h"

static void test_parse_pairs(void **state) {
  (void)state;
  gs_p2p_options o;
  gs_p2p_options_default(&o);
  assert_int_equal(o.size_bytes, 1ull << 30);
  assert_int_equal(gs_p2p_parse_pairs("0:1,3:2", &o), GS_OK);
  assert_int_equal(o.n_pairs, 2);
  assert_int_equal(o.pairs[1][0], 3);
  assert_int_equal(o.pairs[1][1], 2);
  assert_true(gs_p2p_pair_wanted(&o, 0, 1));
  assert_false(gs_p2p_pair_wanted(&o, 1, 0));  // ordered
  assert_false(gs_p2p_pair_wanted(&o, 2, 2));
  static const char *const bad[] = {"", "0", "0:0", "0:1,0:1", "a:1", "0:1x", "0:-1", "1:64",
                                    "0:1,,", ":1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(gs_p2p_parse_pairs(bad[i], &o), GS_ERR_USAGE);
  gs_p2p_options_default(&o);
  assert_true(gs_p2p_pair_wanted(&o, 5, 2));  // no --pairs: every ordered pair
  assert_false(gs_p2p_pair_wanted(&o, 5, 5));
}

static void test_bandwidth_and_summary(void **state) {
  (void)state;
  // 1 GiB copied 8 times in 21.6 ms.
  double bw = gs_p2p_bandwidth(1ull << 30, 8, 0.0216);
  assert_true(fabs(bw - 8.0 * 1073741824.0 / 0.0216) < 1.0);
  assert_true(isnan(gs_p2p_bandwidth(1, 1, 0.0)));
  assert_true(isnan(gs_p2p_bandwidth(1, 1, -1.0)));
  gs_p2p_cell c;
  memset(&c, 0, sizeof c);
  double v[] = {3.0, 1.0, 10.0, 2.0};
  memcpy(c.samples, v, sizeof v);
  c.n = 4;
  assert_int_equal(gs_p2p_cell_summarize(&c), GS_OK);
  assert_true(c.median == 2.5 && c.min == 1.0 && c.max == 10.0);
  c.n = 0;
  assert_int_not_equal(gs_p2p_cell_summarize(&c), GS_OK);
}

/* Two GPUs, two tests: a bandwidth matrix with one measured, one skipped
 * and one failed cell, and a host test that was not selected. */
static void make_result(gs_p2p_result *r, gs_p2p_cell *cells, gs_p2p_test *tests) {
  memset(r, 0, sizeof *r);
  memset(cells, 0, 6 * sizeof *cells);
  memset(tests, 0, 2 * sizeof *tests);
  r->n_gpus = 2;
  r->devices[0] = 0;
  r->devices[1] = 1;
  r->n_tests = 2;
  r->tests = tests;
  tests[0] = (gs_p2p_test){.key = "ce_unidir_p2p", .title = "CE unidir (GB/s)",
                           .unit = GS_P2P_UNIT_BANDWIDTH, .cells = cells};
  gs_p2p_cell *m = &cells[1];  // GPU0 -> GPU1
  m->measured = 1;
  m->status = GS_OK;
  m->n = 3;
  m->samples[0] = 390e9;
  m->samples[1] = 396e9;
  m->samples[2] = 397e9;
  assert_int_equal(gs_p2p_cell_summarize(m), GS_OK);
  m->verify = GS_VERIFY_PASSED;
  gs_p2p_cell *s = &cells[2];  // GPU1 -> GPU0
  s->status = GS_ERR_UNSUPPORTED;
  snprintf(s->error, sizeof s->error, "no peer access");
  tests[1] = (gs_p2p_test){.key = "host_to_device", .title = "H2D (GB/s)",
                           .unit = GS_P2P_UNIT_BANDWIDTH, .per_gpu = 1, .skipped = 1,
                           .cells = &cells[4]};
  snprintf(tests[1].reason, sizeof tests[1].reason, "not selected by --mode ce");
}

static void test_json(void **state) {
  (void)state;
  gs_p2p_result r;
  gs_p2p_cell cells[6];
  gs_p2p_test tests[2];
  make_result(&r, cells, tests);
  cJSON *j = gs_p2p_to_json(&r);
  assert_non_null(j);
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "tests");
  assert_int_equal(cJSON_GetArraySize(list), 2);
  const cJSON *t0 = cJSON_GetArrayItem(list, 0);
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(t0, "unit")->valuestring, "bytes_per_second");
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(t0, "status")->valuestring, "ran");
  const cJSON *rows = cJSON_GetObjectItemCaseSensitive(t0, "cells");
  assert_true(cJSON_IsNull(cJSON_GetArrayItem(cJSON_GetArrayItem(rows, 0), 0)));  // diagonal
  const cJSON *m = cJSON_GetArrayItem(cJSON_GetArrayItem(rows, 0), 1);
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(m, "status")->valuestring, "ok");
  assert_true(cJSON_GetObjectItemCaseSensitive(m, "median")->valuedouble == 396e9);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "samples")), 3);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "verification");
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(v, "status")->valuestring, "passed");
  const cJSON *s = cJSON_GetArrayItem(cJSON_GetArrayItem(rows, 1), 0);
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(s, "status")->valuestring, "skipped");
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(s, "reason")->valuestring, "no peer access");
  const cJSON *t1 = cJSON_GetArrayItem(list, 1);
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(t1, "status")->valuestring, "skipped");
  assert_null(cJSON_GetObjectItemCaseSensitive(t1, "cells"));
  cJSON_Delete(j);
  assert_false(gs_p2p_any_failed(&r));
  cells[3].measured = 1;
  cells[3].status = GS_ERR_CUDA;
  assert_true(gs_p2p_any_failed(&r));
}

static void test_print(void **state) {
  (void)state;
  gs_p2p_result r;
  gs_p2p_cell cells[6];
  gs_p2p_test tests[2];
  make_result(&r, cells, tests);
  gs_topology topo;
  assert_int_equal(gs_topology_init(&topo, 2), GS_OK);
  topo.nvlink_bw[1] = 450e9;
  char *text = NULL;
  size_t size = 0;
  FILE *out = open_memstream(&text, &size);
  assert_non_null(out);
  gs_p2p_print(out, &r, &topo);
  fclose(out);
  assert_non_null(strstr(text, "CE unidir (GB/s)"));
  assert_non_null(strstr(text, "GPU0    X       396.0"));
  assert_non_null(strstr(text, "GPU1    -       X"));
  assert_non_null(strstr(text, "GPU1 -> GPU0: no peer access"));
  assert_non_null(strstr(text, "GPU0 -> GPU1  396.0 GB/s (ce_unidir_p2p), 88% of 450 GB/s"));
  assert_null(strstr(text, "H2D"));  // not selected: not shown
  free(text);
  gs_topology_free(&topo);
}

static void test_no_gpu_is_unsupported(void **state) {
  (void)state;
  gs_environment env;
  memset(&env, 0, sizeof env);
  snprintf(env.cuda_status, sizeof env.cuda_status, "no CUDA driver");
  gs_p2p_options o;
  gs_p2p_options_default(&o);
  gs_p2p_result r;
  assert_int_equal(gs_p2p_measure(&o, &env, &r), GS_ERR_UNSUPPORTED);
  assert_non_null(strstr(gs_last_error(), "no CUDA driver"));
  gs_p2p_result_free(&r);
  cJSON *c = gs_p2p_options_to_json(&o);
  assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(c, "pairs")));
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(c, "mode")->valuestring, "all");
  cJSON_Delete(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_pairs),
      cmocka_unit_test(test_bandwidth_and_summary),
      cmocka_unit_test(test_json),
      cmocka_unit_test(test_print),
      cmocka_unit_test(test_no_gpu_is_unsupported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
