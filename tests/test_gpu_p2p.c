/* GPU tests of p2p: the fill kernel against the CPU pattern, the SM copy
 * kernel, and gs_p2p_measure end to end on small buffers (host transfers on
 * one GPU; every pair test with two or more): every measured cell ok and
 * verified, latencies plausible. Skips (exit 77) without a CUDA device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "measure/common.h"
#include "p2p/p2p.h"
#include "p2p/p2p_kernels.h"
#include "platform/device.h"

static void test_fill_matches_cpu_pattern(void **state) {
  (void)state;
  const uint64_t bytes = 4096 * 4 + 16;
  uint32_t *dev = NULL;
  uint32_t *host = malloc(bytes);
  assert_non_null(host);
  assert_int_equal(cudaMalloc((void **)&dev, bytes), cudaSuccess);
  assert_int_equal(gs_p2p_fill(dev, bytes, 1234u, 0), cudaSuccess);
  assert_int_equal(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  for (uint64_t i = 0; i < bytes / 4; i++) assert_int_equal(host[i], gs_p2p_pattern(i, 1234u));
  // The check kernel finds exactly the words changed.
  unsigned long long *bad = NULL;
  assert_int_equal(cudaMalloc((void **)&bad, sizeof *bad), cudaSuccess);
  assert_int_equal(cudaMemset(bad, 0, sizeof *bad), cudaSuccess);
  assert_int_equal(cudaMemset(dev + 7, 0xff, 3 * sizeof *dev), cudaSuccess);
  assert_int_equal(gs_p2p_check(dev, bytes, 1234u, bad, 0), cudaSuccess);
  unsigned long long count = 0;
  assert_int_equal(cudaMemcpy(&count, bad, sizeof count, cudaMemcpyDeviceToHost), cudaSuccess);
  assert_int_equal(count, 3);
  cudaFree(bad);
  cudaFree(dev);
  free(host);
}

static void test_sm_copy_copies_every_byte(void **state) {
  (void)state;
  const uint64_t bytes = (1u << 20) + 48;  // not a multiple of the unrolled stride
  void *src = NULL, *dst = NULL;
  assert_int_equal(cudaMalloc(&src, bytes), cudaSuccess);
  assert_int_equal(cudaMalloc(&dst, bytes), cudaSuccess);
  assert_int_equal(gs_p2p_fill(src, bytes, 99u, 0), cudaSuccess);
  assert_int_equal(cudaMemset(dst, 0, bytes), cudaSuccess);
  assert_int_equal(gs_p2p_sm_copy(src, dst, bytes, 7, 0), cudaSuccess);
  uint32_t *host = malloc(bytes);
  assert_non_null(host);
  assert_int_equal(cudaMemcpy(host, dst, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  for (uint64_t i = 0; i < bytes / 4; i++) assert_int_equal(host[i], gs_p2p_pattern(i, 99u));
  assert_int_equal(gs_p2p_sm_copy(src, dst, 15, 1, 0), cudaErrorInvalidValue);
  free(host);
  cudaFree(src);
  cudaFree(dst);
}

static void test_measure_small(void **state) {
  (void)state;
  gs_environment env;
  assert_int_equal(gs_common_environment(&env), GS_OK);
  gs_p2p_options o;
  gs_p2p_options_default(&o);
  o.size_bytes = 4u << 20;
  o.iters = 2;
  o.samples = 3;
  o.latency_rounds = 200;
  gs_p2p_result r;
  assert_int_equal(gs_p2p_measure(&o, &env, &r), GS_OK);
  size_t n = r.n_gpus, measured = 0;
  for (size_t ti = 0; ti < r.n_tests; ti++) {
    const gs_p2p_test *t = &r.tests[ti];
    if (!t->per_gpu && n < 2) {
      assert_true(t->skipped);
      assert_non_null(strstr(t->reason, "at least 2 GPUs"));
      continue;
    }
    size_t cells = t->per_gpu ? n : n * n;
    for (size_t k = 0; k < cells; k++) {
      const gs_p2p_cell *c = &t->cells[k];
      if (!c->measured) continue;
      measured++;
      if (c->status != GS_OK) fail_msg("%s cell %zu: %s", t->key, k, c->error);
      assert_int_equal(c->verify, GS_VERIFY_PASSED);
      assert_int_equal(c->n, 3);
      assert_true(c->min <= c->median && c->median <= c->max);
      if (t->unit == GS_P2P_UNIT_LATENCY) {
        assert_true(c->median > 1e-8 && c->median < 1e-3);
      } else {
        assert_true(c->median > 1e8);  // > 0.1 GB/s on any real link
      }
    }
  }
  assert_true(measured >= n);  // at least the host tests
  assert_false(gs_p2p_any_failed(&r));
  gs_p2p_result_free(&r);
  gs_environment_free(&env);
}

int main(void) {
  char why[256] = "";
  if (gs_device_count(why, sizeof why) == 0) {
    printf("skipped: %s\n", why);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fill_matches_cpu_pattern),
      cmocka_unit_test(test_sm_copy_copies_every_byte),
      cmocka_unit_test(test_measure_small),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
