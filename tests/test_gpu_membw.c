/* GPU test of p2p/membw (label gpu; skips with exit 77 without a CUDA
 * device): the STREAM triad on device 0 is verified against the CPU
 * reference and reaches a plausible bandwidth, and an injected slowdown of
 * 0.8 measures 0.8 of the unslowed figure within 5%. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "p2p/membw.h"
#include "platform/device.h"

static void test_triad_and_slowdown(void **state) {
  (void)state;
  gs_membw_options o;
  gs_membw_options_default(&o);
  o.array_bytes = 256ull << 20;
  gs_membw_result plain, slow;
  assert_int_equal(gs_membw_measure(0, &o, &plain), GS_OK);
  if (plain.status != GS_OK) fail_msg("triad: %s", plain.error);
  assert_int_equal(plain.mismatches, 0);
  assert_int_equal(plain.n, 5);
  printf("triad on device 0: %.0f GB/s\n", plain.median / 1e9);
  // Any GPU with HBM or GDDR moves more than 100 GB/s; none 20 TB/s.
  assert_true(plain.median > 100e9 && plain.median < 20e12);
  o.slowdown = 0.8;
  assert_int_equal(gs_membw_measure(0, &o, &slow), GS_OK);
  assert_int_equal(slow.status, GS_OK);
  assert_int_equal(slow.extra_triads, 5);
  const double ratio = slow.median / plain.median;
  printf("slowed 0.8: %.0f GB/s, ratio %.3f\n", slow.median / 1e9, ratio);
  assert_true(fabs(ratio - 0.8) < 0.04);
}

int main(void) {
  char why[256] = "";
  if (gs_device_count(why, sizeof why) == 0) {
    printf("skipped: %s\n", why);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_triad_and_slowdown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
