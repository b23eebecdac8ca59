/* Tests of core/json: the checked builder (what each add writes, NaN and
 * infinity as null, empty strings as null, one failure flag that every
 * failed allocation sets and that the build's status reports) and the
 * member readers. Allocation failures are made by cJSON hooks that refuse
 * after a given number of allocations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"

/* ---- allocations that fail on demand ------------------------------------ */

static long allocations_left = -1;  // -1: never fail

static void *limited_malloc(size_t size) {
  if (allocations_left == 0) return NULL;
  if (allocations_left > 0) allocations_left--;
  return malloc(size);
}

static void allocations_limit(long n) {
  allocations_left = n;
  cJSON_Hooks hooks = {limited_malloc, free};
  cJSON_InitHooks(&hooks);
}

static void allocations_unlimited(void) {
  allocations_left = -1;
  cJSON_InitHooks(NULL);
}

/* The object's text without whitespace; the caller frees it. */
static char *text_of(const cJSON *o) {
  char *text = cJSON_PrintUnformatted(o);
  assert_non_null(text);
  return text;
}

/* ---- building ------------------------------------------------------------ */

static void test_puts_write_what_they_say(void **state) {
  (void)state;
  gs_json_build b = {0};
  cJSON *o = gs_json_check(&b, cJSON_CreateObject());
  gs_json_put_number(&b, o, "n", 1.5);
  gs_json_put_number(&b, o, "nan", NAN);
  gs_json_put_number(&b, o, "inf", INFINITY);
  gs_json_put_u64(&b, o, "u", (uint64_t)1 << 40);
  gs_json_put_string(&b, o, "s", "x");
  gs_json_put_string_or_null(&b, o, "empty", "");
  gs_json_put_string_or_null(&b, o, "none", NULL);
  gs_json_put_string_or_null(&b, o, "text", "y");
  gs_json_put_bool(&b, o, "t", 7);
  gs_json_put_bool_or_null(&b, o, "f", 0);
  gs_json_put_bool_or_null(&b, o, "unknown", -1);
  gs_json_put_null(&b, o, "null");
  cJSON *a = gs_json_put_array(&b, o, "a");
  gs_json_append_number(&b, a, 2);
  gs_json_append_number(&b, a, NAN);
  gs_json_append_string(&b, a, "z");
  gs_json_put_item(&b, gs_json_put_object(&b, o, "o"), "k", cJSON_CreateNumber(3));
  assert_int_equal(b.failed, 0);
  assert_int_equal(gs_json_build_status(&b, "a test"), GS_OK);
  char *text = text_of(o);
  assert_string_equal(text, "{\"n\":1.5,\"nan\":null,\"inf\":null,\"u\":1099511627776,\"s\":\"x\","
                            "\"empty\":null,\"none\":null,\"text\":\"y\",\"t\":true,\"f\":false,"
                            "\"unknown\":null,\"null\":null,\"a\":[2,null,\"z\"],\"o\":{\"k\":3}}");
  cJSON_free(text);
  cJSON_Delete(o);
}

/* A NULL parent (its creation failed) or a NULL item marks the build and
 * frees what it was given. */
static void test_failures_mark_the_build(void **state) {
  (void)state;
  gs_json_build b = {0};
  gs_json_put_number(&b, NULL, "n", 1);
  assert_int_equal(b.failed, 1);
  gs_json_build c = {0};
  cJSON *o = cJSON_CreateObject();
  gs_json_put_item(&c, o, "x", NULL);
  assert_int_equal(c.failed, 1);
  gs_json_build d = {0};
  gs_json_append(&d, NULL, cJSON_CreateString("freed, not leaked"));
  assert_int_equal(d.failed, 1);
  assert_int_equal(gs_json_build_status(&d, "the widget"), GS_ERR_NOMEM);
  assert_non_null(strstr(gs_last_error(), "out of memory building the widget"));
  cJSON_Delete(o);
}

/* Every allocation of a build fails in turn: the flag is set each time and
 * stays set, nothing crashes or leaks (the sanitizer build checks that). */
static void test_each_failed_allocation_is_seen(void **state) {
  (void)state;
  long needed = -1;
  for (long limit = 0; limit < 64 && needed < 0; limit++) {
    allocations_limit(limit);
    gs_json_build b = {0};
    cJSON *o = gs_json_check(&b, cJSON_CreateObject());
    gs_json_put_string(&b, o, "name", "value");
    gs_json_put_string_or_null(&b, o, "maybe", "text");
    cJSON *a = gs_json_put_array(&b, o, "list");
    for (int i = 0; i < 3; i++) gs_json_append_number(&b, a, i);
    gs_json_put_item(&b, o, "sub", cJSON_CreateObject());
    allocations_unlimited();
    if (!b.failed) needed = limit;
    cJSON_Delete(o);
  }
  // Every allocation below the count the build needs was refused and seen.
  assert_true(needed > 8);
}

/* gs_json_build_finish hands back the root of a build that did not fail
 * and frees the root of one that did (the sanitizer build sees a leak). */
static void test_finish_returns_or_frees(void **state) {
  (void)state;
  size_t built = 0, refused = 0;
  for (long limit = 0; limit < 16; limit++) {
    allocations_limit(limit);
    gs_json_build b = {0};
    cJSON *o = gs_json_check(&b, cJSON_CreateObject());
    gs_json_put_string(&b, o, "name", "value");
    gs_json_append_number(&b, gs_json_put_array(&b, o, "list"), 1);
    int failed = b.failed;
    cJSON *root = gs_json_build_finish(&b, o);
    allocations_unlimited();
    if (failed) {
      assert_null(root);
      refused++;
    } else {
      assert_ptr_equal(root, o);
      char *text = text_of(root);
      assert_string_equal(text, "{\"name\":\"value\",\"list\":[1]}");
      cJSON_free(text);
      cJSON_Delete(root);
      built++;
    }
  }
  assert_true(refused > 3);
  assert_true(built > 0);
  gs_json_build none = {0};
  assert_null(gs_json_build_finish(&none, NULL));
}

/* ---- reading ------------------------------------------------------------ */

static void test_member_readers(void **state) {
  (void)state;
  cJSON *doc = cJSON_Parse("{\"s\":\"text\",\"n\":2.5,\"z\":null,\"a\":[1],\"o\":{\"x\":1}}");
  assert_non_null(doc);
  assert_ptr_equal(gs_json_member(doc, "o"), cJSON_GetObjectItemCaseSensitive(doc, "o"));
  assert_null(gs_json_member(doc, "O"));  // case-sensitive
  assert_null(gs_json_member(NULL, "o"));
  assert_null(gs_json_member(gs_json_member(doc, "a"), "x"));
  assert_string_equal(gs_json_string_member(doc, "s", "-"), "text");
  assert_string_equal(gs_json_string_member(doc, "n", "-"), "-");
  assert_null(gs_json_string_member(NULL, "s", NULL));
  assert_true(gs_json_number_member(doc, "n") == 2.5);
  assert_true(isnan(gs_json_number_member(doc, "z")));
  assert_true(isnan(gs_json_number_member(doc, "s")));
  assert_true(isnan(gs_json_number_or_nan(NULL)));
  assert_string_equal(gs_json_type_name(gs_json_member(doc, "a")), "an array");
  assert_string_equal(gs_json_type_name(NULL), "missing");
  cJSON_Delete(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_puts_write_what_they_say),
      cmocka_unit_test(test_failures_mark_the_build),
      cmocka_unit_test(test_each_failed_allocation_is_seen),
      cmocka_unit_test(test_finish_returns_or_frees),
      cmocka_unit_test(test_member_readers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
