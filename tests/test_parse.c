/* Unit tests of core/parse: good values with every suffix form, and every
 * kind of bad value (sign, blanks, junk, empty, overflow, range), checking
 * that errors are usage errors naming the option and leave *out alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/parse.h"

/* Asserts that the last error mentions `needle`. */
static void assert_error_has(const char *needle) {
  if (strstr(gs_last_error(), needle) == NULL)
    fail_msg("error '%s' does not contain '%s'", gs_last_error(), needle);
}

static uint64_t count_ok(const char *text) {
  uint64_t v = 0;
  assert_int_equal(gs_parse_count(text, "--n", 0, UINT64_MAX, &v), GS_OK);
  return v;
}

static uint64_t size_ok(const char *text) {
  uint64_t v = 0;
  assert_int_equal(gs_parse_size(text, "--bytes", 0, UINT64_MAX, &v), GS_OK);
  return v;
}

static void count_bad(const char *text) {
  uint64_t v = 12345;
  gs_clear_error();
  assert_int_equal(gs_parse_count(text, "--iters", 0, UINT64_MAX, &v), GS_ERR_USAGE);
  assert_int_equal(v, 12345);
  assert_error_has("option --iters: ");
}

static void size_bad(const char *text) {
  uint64_t v = 12345;
  gs_clear_error();
  assert_int_equal(gs_parse_size(text, "--bytes", 0, UINT64_MAX, &v), GS_ERR_USAGE);
  assert_int_equal(v, 12345);
  assert_error_has("option --bytes: ");
}

static void double_bad(const char *text) {
  double v = 42.0;
  gs_clear_error();
  assert_int_equal(gs_parse_double(text, "--ratio", -1e300, 1e300, &v), GS_ERR_USAGE);
  assert_true(v == 42.0);
  assert_error_has("option --ratio: ");
}

static void test_count_good(void **state) {
  (void)state;
  assert_int_equal(count_ok("0"), 0);
  assert_int_equal(count_ok("100"), 100);
  assert_int_equal(count_ok("007"), 7);
  assert_int_equal(count_ok("10K"), 10000);
  assert_int_equal(count_ok("10k"), 10000);
  assert_int_equal(count_ok("3M"), 3000000);
  assert_int_equal(count_ok("3m"), 3000000);
  assert_int_equal(count_ok("2G"), 2000000000ull);
  assert_int_equal(count_ok("18446744073709551615"), UINT64_MAX);
  assert_int_equal(count_ok("18446744073709551K"), 18446744073709551000ull);
}

static void test_count_bad_text(void **state) {
  (void)state;
  count_bad("12x");
  assert_string_equal(gs_last_error(),
                      "option --iters: '12x' is not a whole number (expected e.g. 100 or 10K)");
  count_bad("");
  assert_error_has("empty value");
  count_bad(NULL);
  count_bad("-1");
  assert_error_has("'-1' is not a whole number");
  count_bad("+1");
  count_bad(" 1");
  count_bad("1 ");
  count_bad("\t1");
  count_bad("1.5");
  count_bad("1.5K");
  count_bad("0x10");
  count_bad("1e3");
  count_bad("10KB");  // B belongs to sizes only
  count_bad("10KK");
  count_bad("1T");
  count_bad("K");
}

static void test_count_overflow(void **state) {
  (void)state;
  count_bad("18446744073709551616");
  assert_error_has("'18446744073709551616' is too large");
  count_bad("99999999999999999999999");
  // fits before the multiplier, overflows after it
  count_bad("18446744073709552K");
  assert_error_has("too large");
  count_bad("18446744074G");
}

static void test_count_range(void **state) {
  (void)state;
  uint64_t v = 7;
  assert_int_equal(gs_parse_count("0", "--iters", 1, 1000, &v), GS_ERR_USAGE);
  assert_string_equal(gs_last_error(), "option --iters: 0 is below the minimum 1");
  assert_int_equal(v, 7);
  assert_int_equal(gs_parse_count("10K", "--iters", 1, 5000, &v), GS_ERR_USAGE);
  assert_error_has("'10K' (= 10000) is above the maximum 5000");
  assert_int_equal(gs_parse_count("1001", "--iters", 1, 1000, &v), GS_ERR_USAGE);
  assert_error_has("1001 is above the maximum 1000");
  assert_int_equal(gs_parse_count("1000", "--iters", 1, 1000, &v), GS_OK);
  assert_int_equal(v, 1000);
  assert_int_equal(gs_parse_count("1", "--iters", 1, 1000, &v), GS_OK);
  assert_int_equal(v, 1);
}

static void test_size_good(void **state) {
  (void)state;
  assert_int_equal(size_ok("8"), 8);
  assert_int_equal(size_ok("8B"), 8);
  assert_int_equal(size_ok("4K"), 4096);
  assert_int_equal(size_ok("4k"), 4096);
  assert_int_equal(size_ok("64M"), 67108864);
  assert_int_equal(size_ok("64MB"), 67108864);
  assert_int_equal(size_ok("64MiB"), 67108864);
  assert_int_equal(size_ok("64mib"), 67108864);
  assert_int_equal(size_ok("1G"), 1073741824ull);
  assert_int_equal(size_ok("16GiB"), 17179869184ull);
  // 2^34 - 1 GiB is the largest whole number of GiB below 2^64
  assert_int_equal(size_ok("17179869183G"), UINT64_MAX - 1073741823ull);
}

static void test_size_bad(void **state) {
  (void)state;
  size_bad("64X");
  assert_error_has("'64X' is not a size (expected bytes, e.g. 4096, 64K, 64MiB or 1G)");
  size_bad("");
  size_bad("-1M");
  size_bad(" 64M");
  size_bad("64M ");
  size_bad("64 M");
  size_bad("64iB");  // "iB" needs a K/M/G in front
  size_bad("64Mi");
  size_bad("64MBB");
  size_bad("64MiBB");
  size_bad("1T");
  size_bad("1.5G");
  size_bad("17179869184G");  // 2^64 exactly
  assert_error_has("too large");
  uint64_t v = 0;
  assert_int_equal(gs_parse_size("2G", "--bytes", 1, 1073741824ull, &v), GS_ERR_USAGE);
  assert_error_has("'2G' (= 2147483648) is above the maximum 1073741824");
}

static void test_double(void **state) {
  (void)state;
  double v = 0.0;
  assert_int_equal(gs_parse_double("0.5", "--ratio", 0.0, 1.0, &v), GS_OK);
  assert_true(v == 0.5);
  assert_int_equal(gs_parse_double("1e-3", "--ratio", 0.0, 1.0, &v), GS_OK);
  assert_true(v == 1e-3);
  assert_int_equal(gs_parse_double("-2.5", "--ratio", -10.0, 10.0, &v), GS_OK);
  assert_true(v == -2.5);
  assert_int_equal(gs_parse_double("+1", "--ratio", -10.0, 10.0, &v), GS_OK);
  assert_true(v == 1.0);
  assert_int_equal(gs_parse_double(".25", "--ratio", -10.0, 10.0, &v), GS_OK);
  assert_true(v == 0.25);
  assert_int_equal(gs_parse_double("5.", "--ratio", -10.0, 10.0, &v), GS_OK);
  assert_true(v == 5.0);

  double_bad("");
  double_bad(NULL);
  double_bad("abc");
  assert_error_has("'abc' is not a number");
  double_bad(" 1");
  double_bad("1 ");
  double_bad("1,5");
  double_bad("1e");
  double_bad(".");
  double_bad("-");
  double_bad("nan");
  double_bad("inf");
  double_bad("-inf");
  double_bad("infinity");
  double_bad("0x1p3");
  double_bad("1e400");
  assert_error_has("out of the range");

  v = 9.0;
  assert_int_equal(gs_parse_double("0", "--voxel", 0.001, 1.0, &v), GS_ERR_USAGE);
  assert_string_equal(gs_last_error(), "option --voxel: 0 is below the minimum 0.001");
  assert_int_equal(gs_parse_double("1.5", "--voxel", 0.001, 1.0, &v), GS_ERR_USAGE);
  assert_error_has("1.5 is above the maximum 1");
  assert_true(v == 9.0);
}

static void test_count_list(void **state) {
  (void)state;
  gs_u64_list l;
  assert_int_equal(gs_parse_count_list("0,1,3", "--gpus", 0, 63, &l), GS_OK);
  assert_int_equal(l.n, 3);
  assert_int_equal(l.v[0], 0);
  assert_int_equal(l.v[1], 1);
  assert_int_equal(l.v[2], 3);
  assert_int_equal(gs_parse_count_list("5", "--gpus", 0, 63, &l), GS_OK);
  assert_int_equal(l.n, 1);
  assert_int_equal(l.v[0], 5);
  assert_int_equal(gs_parse_count_list("1K,2K", "--points", 0, UINT64_MAX, &l), GS_OK);
  assert_int_equal(l.n, 2);
  assert_int_equal(l.v[1], 2000);

  const char *bad[] = {"", ",", "1,,2", "1,", ",1", "1, 2", "1,x", "1,-2", "1,64"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    l.n = 99;
    gs_clear_error();
    assert_int_equal(gs_parse_count_list(bad[k], "--gpus", 0, 63, &l), GS_ERR_USAGE);
    assert_int_equal(l.n, 99);
    assert_error_has("option --gpus: ");
  }
  assert_int_equal(gs_parse_count_list("1,,2", "--gpus", 0, 63, &l), GS_ERR_USAGE);
  assert_error_has("empty entry at position 2");
  assert_int_equal(gs_parse_count_list("1,x", "--gpus", 0, 63, &l), GS_ERR_USAGE);
  assert_error_has("'x' is not a whole number");
  assert_int_equal(gs_parse_count_list(NULL, "--gpus", 0, 63, &l), GS_ERR_USAGE);

  // exactly GS_LIST_MAX entries pass, one more fails
  char text[GS_LIST_MAX * 3 + 8] = "";
  for (int k = 0; k < GS_LIST_MAX; k++) strcat(text, k ? ",7" : "7");
  assert_int_equal(gs_parse_count_list(text, "--gpus", 0, 63, &l), GS_OK);
  assert_int_equal(l.n, GS_LIST_MAX);
  strcat(text, ",7");
  assert_int_equal(gs_parse_count_list(text, "--gpus", 0, 63, &l), GS_ERR_USAGE);
  assert_error_has("more than 64 entries");

  // an entry longer than any valid number
  char long_text[300];
  memset(long_text, '1', sizeof long_text - 1);
  long_text[sizeof long_text - 1] = '\0';
  assert_int_equal(gs_parse_count_list(long_text, "--gpus", 0, 63, &l), GS_ERR_USAGE);
}

static void test_double_list(void **state) {
  (void)state;
  gs_double_list l;
  assert_int_equal(gs_parse_double_list("0.1,0.1,0.2", "--voxel", 0.001, 1.0, &l), GS_OK);
  assert_int_equal(l.n, 3);
  assert_true(l.v[0] == 0.1 && l.v[1] == 0.1 && l.v[2] == 0.2);
  l.n = 99;
  assert_int_equal(gs_parse_double_list("0.1,,0.2", "--voxel", 0.001, 1.0, &l), GS_ERR_USAGE);
  assert_int_equal(gs_parse_double_list("0.1,nan", "--voxel", 0.001, 1.0, &l), GS_ERR_USAGE);
  assert_int_equal(gs_parse_double_list("0.1,2", "--voxel", 0.001, 1.0, &l), GS_ERR_USAGE);
  assert_error_has("2 is above the maximum 1");
  assert_int_equal(l.n, 99);
}

static void test_choice(void **state) {
  (void)state;
  const char *const choices[] = {"a", "b", "c", NULL};
  int idx = -1;
  assert_int_equal(gs_parse_choice("a", "--mode", choices, &idx), GS_OK);
  assert_int_equal(idx, 0);
  assert_int_equal(gs_parse_choice("c", "--mode", choices, &idx), GS_OK);
  assert_int_equal(idx, 2);
  idx = -1;
  assert_int_equal(gs_parse_choice("d", "--mode", choices, &idx), GS_ERR_USAGE);
  assert_string_equal(gs_last_error(), "option --mode: 'd' is not one of: a, b, c");
  assert_int_equal(gs_parse_choice("A", "--mode", choices, &idx), GS_ERR_USAGE);
  assert_int_equal(gs_parse_choice("", "--mode", choices, &idx), GS_ERR_USAGE);
  assert_int_equal(gs_parse_choice(NULL, "--mode", choices, &idx), GS_ERR_USAGE);
  assert_int_equal(idx, -1);
}

static void test_unnamed_option(void **state) {
  (void)state;
  uint64_t v;
  assert_int_equal(gs_parse_count("x", NULL, 0, 10, &v), GS_ERR_USAGE);
  assert_error_has("option value: 'x'");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_count_good),   cmocka_unit_test(test_count_bad_text),
      cmocka_unit_test(test_count_overflow), cmocka_unit_test(test_count_range),
      cmocka_unit_test(test_size_good),    cmocka_unit_test(test_size_bad),
      cmocka_unit_test(test_double),       cmocka_unit_test(test_count_list),
      cmocka_unit_test(test_double_list),  cmocka_unit_test(test_choice),
      cmocka_unit_test(test_unnamed_option),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
