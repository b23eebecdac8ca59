/* A pipelined llm replica on GPUs against the CPU reference of the whole
 * model (logits and greedy tokens of prefill and decode, every decode GEMV
 * path): 2 stages on 2 GPUs with one and with two micro-batches per call,
 * uneven stages (--stages), and 2 stages of 2 tensor-parallel shards on 4
 * GPUs. Exits 77 with the reason without a GPU; a case needing more GPUs
 * than present is skipped with its reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "platform/device.h"
#include "workloads/llm/llm_pp.h"
#include "workloads/llm/llm_verify.h"

/* tp x pp GPUs from 0 verified for the tiny shape with 4 layers split at
 * `bound` (0: equal stages). */
static void expect_pipeline_verified(uint32_t tp, uint32_t pp, uint32_t micro, uint64_t bound) {
  char why[256] = "";
  const int have = gs_device_count(why, sizeof why);
  if (have < (int)(tp * pp)) {
    printf("  skipped: %u GPUs needed, %d found%s%s\n", tp * pp, have, why[0] ? ": " : "", why);
    skip();
  }
  gs_llm_engine_config layout = {.seed = 7, .tp = tp, .pp = pp, .micro_batches = micro};
  layout.shape = gs_llm_presets[2].shape;
  layout.shape.layers = 4;
  assert_int_equal(gs_llm_pp_split(4, pp, bound ? &bound : NULL, bound ? 1 : 0, layout.stage_first),
                   GS_OK);
  int devices[8];
  for (int k = 0; k < 8; k++) devices[k] = k;
  gs_verification v;
  assert_int_equal(gs_llm_verify_replica(&layout, GS_BACKEND_CUDA, devices, &v), GS_OK);
  printf("  %s\n", v.detail);
  assert_int_equal(v.status, GS_VERIFY_PASSED);
  assert_int_equal(v.mismatches, 0);
  assert_true(v.max_abs_error <= v.tolerance);
}

static void test_two_stages(void **state) {
  (void)state;
  expect_pipeline_verified(1, 2, 1, 0);
  expect_pipeline_verified(1, 2, 2, 0);
}

static void test_uneven_stages(void **state) {
  (void)state;
  expect_pipeline_verified(1, 2, 2, 1);
}

static void test_tensor_and_pipeline(void **state) {
  (void)state;
  expect_pipeline_verified(2, 2, 2, 0);
}

int main(void) {
  char why[256];
  if (gs_device_count(why, sizeof why) == 0) {
    printf("skipped: %s\n", why);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_stages),
      cmocka_unit_test(test_uneven_stages),
      cmocka_unit_test(test_tensor_and_pipeline),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
