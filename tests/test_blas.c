/* Unit tests of platform/blas.c, cuBLAS opened on first use: the library's
 * own status text comes back (it was found and opened), and a call that
 * needs a device fails with a status, never a crash, where there is none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <string.h>

static void test_status_text_from_the_library(void **state) {
  (void)state;
  const char *text = cublasGetStatusString(CUBLAS_STATUS_SUCCESS);
  assert_non_null(text);
  // Our own texts say "cannot load" or "not loaded"; cuBLAS's does not.
  assert_null(strstr(text, "load"));
  assert_true(strlen(text) > 0);
}

static void test_create_returns_a_status(void **state) {
  (void)state;
  cublasHandle_t handle = NULL;
  cublasStatus_t rc = cublasCreate(&handle);
  if (rc == CUBLAS_STATUS_SUCCESS) {
    assert_int_equal(cublasDestroy(handle), CUBLAS_STATUS_SUCCESS);
  } else {
    // No device (or no driver): a status with its text, not a crash.
    assert_non_null(cublasGetStatusString(rc));
  }
  // (cublasLtCreate is left out: without a device it leaks inside cuBLASLt,
  // which the sanitizer suite would report as ours.)
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_text_from_the_library),
      cmocka_unit_test(test_create_returns_a_status),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
