/* Unit tests of platform/nccl.c, NCCL opened on first use. Where the
 * loader finds libnccl.so.2, the library's own version and texts come
 * back; where it does not, every call is a failed call (ncclSystemError)
 * whose text names the library and the loader's reason, never a crash.
 * `test_nccl missing` requires the second case (ctest runs it as
 * test_nccl_missing through scripts/without-nvidia, which hides the CUDA
 * toolkit); without an argument the test checks whichever case holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <nccl.h>
#include <string.h>

static int must_be_missing;

/* Whether the loader finds the library, asked apart from platform/nccl.c. */
static int library_present(void) {
  void *lib = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_LOCAL);
  if (lib) dlclose(lib);
  return lib != NULL;
}

static void test_present_library_answers(void **state) {
  (void)state;
  if (must_be_missing || !library_present()) skip();
  int code = 0;
  assert_int_equal(ncclGetVersion(&code), ncclSuccess);
  // major*10000 + minor*100 + patch, the major the headers were built with.
  assert_int_equal(code / 10000, NCCL_MAJOR);
  const char *text = ncclGetErrorString(ncclInvalidArgument);
  assert_non_null(text);
  assert_null(strstr(text, "could not be loaded"));
  assert_true(strlen(text) > 0);
}

static void test_missing_library_is_a_failed_call(void **state) {
  (void)state;
  if (must_be_missing) assert_false(library_present());
  if (library_present()) skip();
  int code = -1;
  assert_int_equal(ncclGetVersion(&code), ncclSystemError);
  assert_int_equal(code, -1);
  const char *text = ncclGetErrorString(ncclSystemError);
  const char *prefix = "NCCL could not be loaded: libnccl.so.2: ";
  assert_memory_equal(text, prefix, strlen(prefix));
  assert_non_null(strstr(text, "No such file"));
  // The same text whatever the code: no NCCL call was reached.
  assert_string_equal(ncclGetErrorString(ncclInternalError), text);
  assert_string_equal(ncclGetLastError(NULL), "");
  ncclComm_t comms[2] = {NULL, NULL};
  const int devices[2] = {0, 1};
  assert_int_equal(ncclCommInitAll(comms, 2, devices), ncclSystemError);
  assert_null(comms[0]);
  float x = 1.0f;
  assert_int_equal(ncclGroupStart(), ncclSystemError);
  assert_int_equal(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, NULL, NULL), ncclSystemError);
  assert_int_equal(ncclGroupEnd(), ncclSystemError);
  assert_true(x == 1.0f);
}

int main(int argc, char **argv) {
  must_be_missing = argc > 1 && strcmp(argv[1], "missing") == 0;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_present_library_answers),
      cmocka_unit_test(test_missing_library_is_a_failed_call),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
