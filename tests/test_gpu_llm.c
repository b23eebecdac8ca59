/* GPU against CPU reference for the llm model: logits and greedy tokens of
 * prefill and decode (GEMV and cuBLAS paths, CUDA graphs) on the tiny
 * preset, on an odd shape (head size 64, one KV head, ragged widths), on
 * a shape whose widths all divide by 64 (decode splits its RMSNorms over
 * the tensor-core GEMVs around them), and a tensor-parallel replica over two GPUs (skipped on one). Exits 77
 * with the reason when no GPU is present. */
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

static void expect_verified_on(const gs_llm_shape *shape, const int *devices, uint32_t tp) {
  gs_verification v;
  assert_int_equal(gs_llm_verify_gpu(shape, 7, devices, tp, &v), GS_OK);
  printf("  %s\n", v.detail);
  assert_int_equal(v.status, GS_VERIFY_PASSED);
  assert_int_equal(v.mismatches, 0);
  assert_true(v.max_abs_error <= v.tolerance);
}

static void expect_verified(const gs_llm_shape *shape) {
  const int first = 0;
  expect_verified_on(shape, &first, 1);
}

/* A replica split over two GPUs (NCCL all-reduces inside the decode
 * graphs) against the CPU reference of the whole model; skipped with the
 * reason on one GPU. */
static void test_tensor_parallel_matches_cpu(void **state) {
  (void)state;
  char why[256];
  if (gs_device_count(why, sizeof why) < 2) {
    printf("  skipped: tensor parallelism needs 2 GPUs (%s)\n", why[0] ? why : "one found");
    skip();
  }
  const int devices[2] = {0, 1};
  expect_verified_on(&gs_llm_presets[2].shape, devices, 2);
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

/* Every width a multiple of 64: decode takes the tensor-core GEMV for
 * every projection and splits each RMSNorm over the GEMVs around it. */
static void test_split_norms_match_cpu(void **state) {
  (void)state;
  gs_llm_shape s = {.hidden = 256,
                    .layers = 2,
                    .heads = 4,
                    .kv_heads = 2,
                    .ffn = 512,
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
      cmocka_unit_test(test_split_norms_match_cpu),
      cmocka_unit_test(test_tensor_parallel_matches_cpu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
