/* GPU against CPU reference for the llm model: logits and greedy tokens of
 * prefill and decode (GEMV and cuBLAS paths, CUDA graphs) on the tiny
 * preset and on an odd shape (head size 64, one KV head, ragged widths).
 * Exits 77 with the reason when no GPU is present. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "platform/device.h"
#include "workloads/llm/llm_verify.h"

static void expect_verified(const gs_llm_shape *shape) {
  gs_verification v;
  assert_int_equal(gs_llm_verify_gpu(shape, 7, 0, &v), GS_OK);
  printf("  %s\n", v.detail);
  assert_int_equal(v.status, GS_VERIFY_PASSED);
  assert_int_equal(v.mismatches, 0);
  assert_true(v.max_abs_error <= v.tolerance);
}

static void test_tiny_matches_cpu(void **state) {
  (void)state;
  expect_verified(&gs_llm_presets[2].shape);
}

static void test_odd_shape_matches_cpu(void **state) {
  (void)state;
  gs_llm_shape s = {.hidden = 128,
                    .layers = 3,
                    .heads = 2,
                    .kv_heads = 1,
                    .ffn = 264,
                    .vocab = 1000,
                    .rope_theta = 500000.0,
                    .norm_eps = 1e-5};
  expect_verified(&s);
}

int main(void) {
  char why[256] = "";
  if (gs_device_count(why, sizeof why) == 0) {
    printf("skipped: %s\n", why);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tiny_matches_cpu),
      cmocka_unit_test(test_odd_shape_matches_cpu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
