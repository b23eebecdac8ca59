/* The growable array of doubles: order kept across growth, free empties. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/dvec.h"

static void test_push_grows_and_keeps_order(void **state) {
  (void)state;
  gs_dvec d = {0};
  for (int i = 0; i < 1000; i++) assert_int_equal(gs_dvec_push(&d, i * 0.5), GS_OK);
  assert_int_equal(d.n, 1000);
  assert_true(d.cap >= 1000);
  for (int i = 0; i < 1000; i++) assert_true(d.v[i] == i * 0.5);
  gs_dvec_free(&d);
  assert_null(d.v);
  assert_int_equal(d.n, 0);
  assert_int_equal(gs_dvec_push(&d, 2.0), GS_OK); /* usable again */
  assert_true(d.v[0] == 2.0);
  gs_dvec_free(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_push_grows_and_keeps_order)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
