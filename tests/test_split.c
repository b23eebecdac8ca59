/* Unit tests of work placement: even and proportional splits, fault
 * parsing (--inject) and its JSON, per-rank unit counts in the runner, and
 * on the CPU backend that with one rank slowed 3x by injection the
 * calibration sees it and the proportional split balances the step. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bug_fixture.h"
#include "core/fault.h"
#include "runner/split.h"
#include "workload_options_fixture.h"
#include "workloads/timeline/resample.h"

static void test_even(void **unused) {
  (void)unused;
  uint64_t c[4];
  gs_split_even(10, 4, c);
  assert_true(c[0] == 3 && c[1] == 3 && c[2] == 2 && c[3] == 2);
  gs_split_even(4, 4, c);
  assert_true(c[0] == 1 && c[3] == 1);
}

static void test_proportional(void **unused) {
  (void)unused;
  uint64_t c[3];
  const double two_to_one[] = {2.0, 1.0};
  assert_int_equal(gs_split_proportional(30, 2, two_to_one, c), GS_OK);
  assert_true(c[0] == 20 && c[1] == 10);
  const double equal[] = {5.0, 5.0, 5.0};
  assert_int_equal(gs_split_proportional(7, 3, equal, c), GS_OK);
  assert_int_equal(c[0] + c[1] + c[2], 7);
  assert_true(c[0] >= 2 && c[1] >= 2 && c[2] >= 2);
  // Every rank keeps at least one unit, however slow.
  const double lopsided[] = {1000.0, 1.0};
  assert_int_equal(gs_split_proportional(5, 2, lopsided, c), GS_OK);
  assert_true(c[0] == 4 && c[1] == 1);
  assert_int_equal(gs_split_proportional(1, 2, two_to_one, c), GS_ERR_USAGE);
  const double bad[] = {1.0, 0.0};
  assert_bug(gs_split_proportional(5, 2, bad, c), "rank 1 has a calibrated rate of 0");
}

static void test_fault_parse(void **unused) {
  (void)unused;
  gs_fault_list list = {0};
  assert_int_equal(gs_fault_parse("slow:rank=1,factor=2", &list), GS_OK);
  assert_int_equal(gs_fault_parse("slow:factor=1.5,rank=1", &list), GS_OK);
  assert_int_equal(list.n, 2);
  assert_true(fabs(gs_fault_slow_factor(&list, 1) - 3.0) < 1e-12);
  assert_true(gs_fault_slow_factor(&list, 0) == 1.0);
  assert_int_equal(gs_fault_check_ranks(&list, 2), GS_OK);
  assert_int_equal(gs_fault_check_ranks(&list, 1), GS_ERR_USAGE);
  assert_non_null(strstr(gs_last_error(), "rank 1 does not exist"));
  cJSON *json = gs_fault_list_to_json(&list, 2);
  char *text = cJSON_PrintUnformatted(json);
  assert_string_equal(text, "[{\"kind\":\"slow\",\"rank\":1,\"factor\":2},"
                            "{\"kind\":\"slow\",\"rank\":1,\"factor\":1.5}]");
  free(text);
  cJSON_Delete(json);
  json = gs_fault_list_to_json(&list, 1);  // faults on absent ranks are left out
  assert_int_equal(cJSON_GetArraySize(json), 0);
  cJSON_Delete(json);
  static const struct {
    const char *text, *error;
  } bad[] = {
      {"slow", "expected KIND:rank=R"},
      {"fast:rank=1,factor=2", "unknown fault kind 'fast'"},
      {"slow:rank=1", "missing factor"},
      {"slow:factor=2", "missing rank"},
      {"slow:rank=1,factor=0.5", "factor"},
      {"slow:rank=x,factor=2", "rank"},
      {"slow:rank=1,factor=2,rank=0", "given twice"},
      {"slow:rank=1,speed=2", "unknown parameter 'speed'"},
      {"slow:rank=1,factor", "not NAME=VALUE"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gs_fault_list l = {0};
    assert_int_equal(gs_fault_parse(bad[i].text, &l), GS_ERR_USAGE);
    if (!strstr(gs_last_error(), bad[i].error))
      fail_msg("'%s': '%s' lacks '%s'", bad[i].text, gs_last_error(), bad[i].error);
    assert_int_equal(l.n, 0);
  }
}

/* Checked resample options: `batch` elements of 300 samples, 1024 targets
 * and 64 float32 values. */
static void *resample_options(const char *batch) {
  const char *words[] = {"--batch", batch, "--samples", "300", "--targets", "1024", "--dims",
                         "64", "--dtype", "float32", NULL};
  return workload_options(&gs_workload_resample, words);
}

static gs_run_config cpu_config(int ranks) {
  gs_run_config c = {.backend = GS_BACKEND_CPU, .world_size = ranks, .scaling = GS_SCALING_STRONG,
                     .warmup = 1, .iters = 12, .runs = 1, .seed = 1};
  for (int k = 0; k < ranks; k++) c.devices[k] = -1;
  return c;
}

/* gs_split_check: strong needs a unit per rank (usage error naming the
 * options), weak takes any count but no proportional split; gs_split_plan
 * gives weak rank k the units [k*U, (k+1)*U) of N*U. */
static void test_split_check(void **unused) {
  (void)unused;
  void *opts = resample_options("8");
  gs_run_config c = cpu_config(8);
  assert_int_equal(gs_split_check(&gs_workload_resample, opts, &c), GS_OK);
  c.world_size = 16;
  assert_int_equal(gs_split_check(&gs_workload_resample, opts, &c), GS_ERR_USAGE);
  assert_non_null(strstr(gs_last_error(), "cannot split 8 batch elements over 16 ranks"));
  assert_non_null(strstr(gs_last_error(), "--batch 16 or more"));
  assert_non_null(strstr(gs_last_error(), "--ranks/--gpus"));
  c.split_proportional = 1;
  c.world_size = 2;
  assert_int_equal(gs_split_check(&gs_workload_resample, opts, &c), GS_OK);
  c.scaling = GS_SCALING_WEAK;
  assert_int_equal(gs_split_check(&gs_workload_resample, opts, &c), GS_ERR_USAGE);
  assert_non_null(strstr(gs_last_error(), "--split proportional"));
  c.split_proportional = 0;
  c.world_size = 16;
  assert_int_equal(gs_split_check(&gs_workload_resample, opts, &c), GS_OK);
  uint64_t begin[GS_MAX_RANKS], count[GS_MAX_RANKS], total = 0;
  assert_int_equal(gs_split_plan(&gs_workload_resample, opts, &c, begin, count, &total), GS_OK);
  assert_true(total == 16 * 8);
  for (int k = 0; k < 16; k++) assert_true(begin[k] == 8 * (uint64_t)k && count[k] == 8);
  c.scaling = GS_SCALING_STRONG;
  c.world_size = 3;
  assert_int_equal(gs_split_plan(&gs_workload_resample, opts, &c, begin, count, &total), GS_OK);
  assert_true(total == 8 && begin[0] == 0 && count[0] == 3 && begin[1] == 3 && count[1] == 3 &&
              begin[2] == 6 && count[2] == 2);
  gs_workload_resample.options_free(opts);
}

/* Weak scaling through the runner: rank 1 owns elements past --batch,
 * verifies them, and the cost is that of both ranks' elements. */
static void test_runner_weak(void **unused) {
  (void)unused;
  void *opts = resample_options("3");
  gs_run_config c = cpu_config(2);
  c.scaling = GS_SCALING_WEAK;
  gs_measurement m;
  assert_int_equal(gs_runner_measure(&gs_workload_resample, opts, &c, &m), GS_OK);
  assert_int_equal(m.cost.items, 2 * 3 * 1024 * 64);
  assert_int_equal(m.runs[0].ranks[1].items_per_step, 3 * 1024 * 64);
  assert_int_equal(m.runs[0].ranks[1].verification.status, GS_VERIFY_PASSED);
  assert_non_null(strstr(m.runs[0].ranks[1].verification.detail, "[3,6)"));
  gs_measurement_free(&m);
  gs_workload_resample.options_free(opts);
}

static void test_runner_unit_counts(void **unused) {
  (void)unused;
  void *opts = resample_options("6");
  gs_run_config c = cpu_config(2);
  const uint64_t counts[] = {5, 1};
  c.unit_counts = counts;
  gs_measurement m;
  assert_int_equal(gs_runner_measure(&gs_workload_resample, opts, &c, &m), GS_OK);
  assert_int_equal(m.runs[0].ranks[0].items_per_step, 5 * 1024 * 64);
  assert_int_equal(m.runs[0].ranks[1].items_per_step, 1 * 1024 * 64);
  // No faults given; the work units name each rank's share.
  assert_int_equal(m.faults.n, 0);
  assert_string_equal(m.work_units.unit, "batch elements");
  assert_int_equal(m.work_units.total, 6);
  assert_int_equal(m.work_units.ranks, 2);
  assert_int_equal(m.work_units.begin[0], 0);
  assert_int_equal(m.work_units.begin[1], 5);
  assert_int_equal(m.work_units.count[0], 5);
  assert_int_equal(m.work_units.count[1], 1);
  assert_int_equal(m.failure.present, 0);
  gs_measurement_free(&m);
  // Counts that do not add up are the caller's bug.
  const uint64_t wrong[] = {5, 2};
  c.unit_counts = wrong;
  assert_bug(gs_runner_measure(&gs_workload_resample, opts, &c, &m), "add up to 7, not 6");
  gs_workload_resample.options_free(opts);
  // A split that cannot work: no rank ran, the failure names none and gives
  // the measurement's error.
  opts = resample_options("1");
  c.unit_counts = NULL;
  assert_int_equal(gs_runner_measure(&gs_workload_resample, opts, &c, &m), GS_ERR_USAGE);
  assert_int_equal(m.failure.present, 1);
  assert_int_equal(m.failure.rank, -1);
  assert_int_equal(m.failure.status, GS_ERR_USAGE);
  assert_string_equal(m.failure.reason, m.error);
  gs_measurement_free(&m);
  gs_workload_resample.options_free(opts);
}

/* Rank 1 slowed 3x: the calibration sees it, and the proportional split
 * gives it about a quarter of the batch, which by the calibrated rates
 * makes the step at least 1.4x shorter than the even split (ideal 2x:
 * 12 and 3 x 12 unit-times against 18 and 3 x 6).
 * Both splits then run; the measured gain is printed, not asserted: on a
 * shared CI machine it swings with the load (a timing claim belongs in a
 * benchmark, and `gpuscale run --split proportional` reports it). */
static void test_proportional_beats_even(void **unused) {
  (void)unused;
  void *opts = resample_options("24");
  gs_run_config c = cpu_config(2);
  assert_int_equal(gs_fault_parse("slow:rank=1,factor=3", &c.faults), GS_OK);
  // A calibration is a few timed steps: on a shared 2-core machine one
  // descheduled step of rank 0 can hide the slowdown (CI saw it fail
  // once), so the slowdown must show in one of three calibrations.
  double rates[2] = {0.0, 0.0};
  for (int attempt = 0; attempt < 3 && !(rates[0] > 1.8 * rates[1]); attempt++)
    assert_int_equal(gs_split_calibrate(&gs_workload_resample, opts, &c, 10, rates), GS_OK);
  assert_true(rates[0] > 1.8 * rates[1]);
  uint64_t even[2], prop[2];
  gs_split_even(24, 2, even);
  assert_int_equal(gs_split_proportional(24, 2, rates, prop), GS_OK);
  assert_true(prop[0] >= 16 && prop[1] <= 8);
  const double even_step = fmax(even[0] / rates[0], even[1] / rates[1]);
  const double prop_step = fmax(prop[0] / rates[0], prop[1] / rates[1]);
  assert_true(even_step > 1.4 * prop_step);
  gs_measurement m_even, m_prop;
  c.unit_counts = even;
  assert_int_equal(gs_runner_measure(&gs_workload_resample, opts, &c, &m_even), GS_OK);
  c.unit_counts = prop;
  assert_int_equal(gs_runner_measure(&gs_workload_resample, opts, &c, &m_prop), GS_OK);
  const double gain = m_prop.aggregate.throughput / m_even.aggregate.throughput;
  print_message("calibrated %.3g vs %.3g values/s; split %llu/%llu; predicted gain %.2fx, "
                "measured %.2fx\n", rates[0], rates[1], (unsigned long long)prop[0],
                (unsigned long long)prop[1], even_step / prop_step, gain);
  assert_true(gain > 0.0);
  assert_int_equal(m_prop.faults.n, 1);
  assert_int_equal(m_prop.faults.items[0].rank, 1);
  gs_measurement_free(&m_even);
  gs_measurement_free(&m_prop);
  gs_workload_resample.options_free(opts);
}

int main(void) {
  gs_set_quiet(1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_even),
      cmocka_unit_test(test_proportional),
      cmocka_unit_test(test_fault_parse),
      cmocka_unit_test(test_split_check),
      cmocka_unit_test(test_runner_weak),
      cmocka_unit_test(test_runner_unit_counts),
      cmocka_unit_test(test_proportional_beats_even),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
