/* Unit tests of core/fault: every kind parses with its parameter, bad
 * kinds, parameters and values are usage errors naming what was wrong, the
 * lookups find the right fault, hang is refused in threads mode, and the
 * "faults" member lists the kinds with their parameters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "core/fault.h"
#include "core/timer.h"

static void assert_error_has(const char *needle) {
  if (strstr(gs_last_error(), needle) == NULL)
    fail_msg("error '%s' does not contain '%s'", gs_last_error(), needle);
}

static void test_every_kind_parses(void **state) {
  (void)state;
  gs_fault_list list = {0};
  assert_int_equal(gs_fault_parse("slow:rank=1,factor=2.5", &list), GS_OK);
  assert_int_equal(gs_fault_parse("fail:rank=2,rate=0.25", &list), GS_OK);
  assert_int_equal(gs_fault_parse("kill:after=7,rank=3", &list), GS_OK);
  assert_int_equal(gs_fault_parse("delay:rank=0,seconds=1.5", &list), GS_OK);
  assert_int_equal(gs_fault_parse("hang:rank=1,after=0", &list), GS_OK);
  assert_int_equal(list.n, 5);
  assert_int_equal(list.items[1].kind, GS_FAULT_FAIL);
  assert_int_equal(list.items[1].rank, 2);
  assert_true(list.items[1].params[0] == 0.25);
  assert_int_equal(list.items[2].kind, GS_FAULT_KILL);
  assert_int_equal(list.items[2].rank, 3);
  assert_true(list.items[2].params[0] == 7.0);
  assert_true(list.items[3].params[0] == 1.5);
}

static void test_bad_faults(void **state) {
  (void)state;
  gs_fault_list list = {0};
  assert_int_equal(gs_fault_parse("crash:rank=1", &list), GS_ERR_USAGE);
  assert_error_has("unknown fault kind 'crash'");
  assert_int_equal(gs_fault_parse("fail:rank=1,rate=1.5", &list), GS_ERR_USAGE);
  assert_error_has("rate");
  assert_int_equal(gs_fault_parse("kill:rank=1,after=2.5", &list), GS_ERR_USAGE);
  assert_error_has("whole number");
  assert_int_equal(gs_fault_parse("kill:rank=1", &list), GS_ERR_USAGE);
  assert_error_has("missing after=VALUE");
  assert_int_equal(gs_fault_parse("delay:seconds=2", &list), GS_ERR_USAGE);
  assert_error_has("missing rank=R");
  assert_int_equal(gs_fault_parse("delay:rank=0,seconds=-1", &list), GS_ERR_USAGE);
  assert_int_equal(gs_fault_parse("fail:rank=0,rate=0.1,rate=0.2", &list), GS_ERR_USAGE);
  assert_error_has("given twice");
  assert_int_equal(list.n, 0);
}

static void test_lookups_and_checks(void **state) {
  (void)state;
  gs_fault_list list = {0};
  assert_int_equal(gs_fault_parse("kill:rank=2,after=3", &list), GS_OK);
  assert_int_equal(gs_fault_parse("fail:rank=1,rate=0.5", &list), GS_OK);
  assert_null(gs_fault_find(&list, GS_FAULT_KILL, 1));
  const gs_fault *kill = gs_fault_find(&list, GS_FAULT_KILL, 2);
  assert_non_null(kill);
  assert_true(kill->params[0] == 3.0);
  assert_int_equal(gs_fault_check_ranks(&list, 3), GS_OK);
  assert_int_equal(gs_fault_check_ranks(&list, 2), GS_ERR_USAGE);
  assert_error_has("rank 2 does not exist");
  assert_int_equal(gs_fault_check_launch(&list, 0), GS_OK);
  assert_int_equal(gs_fault_parse("hang:rank=1,after=4", &list), GS_OK);
  assert_int_equal(gs_fault_check_launch(&list, 0), GS_ERR_USAGE);
  assert_error_has("hang");
  assert_int_equal(gs_fault_check_launch(&list, 1), GS_OK);
}

static void test_json(void **state) {
  (void)state;
  gs_fault_list list = {0};
  assert_int_equal(gs_fault_parse("kill:rank=1,after=5", &list), GS_OK);
  assert_int_equal(gs_fault_parse("delay:rank=3,seconds=0.5", &list), GS_OK);
  cJSON *array = gs_fault_list_to_json(&list, 2); /* rank 3 is outside a world of 2 */
  assert_non_null(array);
  assert_int_equal(cJSON_GetArraySize(array), 1);
  const cJSON *f = cJSON_GetArrayItem(array, 0);
  assert_string_equal(cJSON_GetObjectItem(f, "kind")->valuestring, "kill");
  assert_int_equal(cJSON_GetObjectItem(f, "rank")->valueint, 1);
  assert_int_equal(cJSON_GetObjectItem(f, "after")->valueint, 5);
  cJSON_Delete(array);
}

/* late: the microseconds of a rank's late faults add up, in seconds; the
 * wait lasts at least as long as asked (only a lower bound: a loaded
 * machine may take longer). */
static void test_late(void **state) {
  (void)state;
  gs_fault_list list = {0};
  assert_int_equal(gs_fault_parse("late:rank=2,us=50", &list), GS_OK);
  assert_int_equal(gs_fault_parse("late:rank=2,us=25,world=4", &list), GS_OK);
  assert_int_equal(list.items[0].kind, GS_FAULT_LATE);
  assert_string_equal(gs_fault_kind_name(GS_FAULT_LATE), "late");
  assert_true(fabs(gs_fault_late_seconds(&list, 2) - 75e-6) < 1e-15);
  assert_true(gs_fault_late_seconds(&list, 1) == 0.0);
  assert_int_equal(gs_fault_parse("late:rank=1,us=-1", &list), GS_ERR_USAGE);
  assert_int_equal(gs_fault_parse("late:rank=1", &list), GS_ERR_USAGE);
  assert_error_has("missing us=VALUE");
  for (int i = 0; i < 3; i++) {
    const double seconds = i == 0 ? 50e-6 : i == 1 ? 300e-6 : 0.0;
    const double t0 = gs_time_seconds();
    gs_fault_late_wait(seconds);
    assert_true(gs_time_seconds() - t0 >= seconds);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_kind_parses),
      cmocka_unit_test(test_bad_faults),
      cmocka_unit_test(test_lookups_and_checks),
      cmocka_unit_test(test_json),
      cmocka_unit_test(test_late),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
