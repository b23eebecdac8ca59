/* Unit tests of platform/telemetry: running min/mean/max, readings with
 * fields NVML does not support (null in the document), throttle reasons as
 * names, the series on request, and every way telemetry is unavailable
 * (turned off, no GPU, no NVML) without an error. Runs without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/telemetry.h"

static gs_nvml_sample full_sample(unsigned util, unsigned long long mem, unsigned power_mw) {
  gs_nvml_sample s;
  memset(&s, 0, sizeof s);
  s.found = 1;
  s.has_utilization = s.has_memory_used = s.has_power = 1;
  s.utilization_percent = util;
  s.memory_used_bytes = mem;
  s.power_mw = power_mw;
  return s;
}

static double member(const cJSON *o, const char *field, const char *stat) {
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, field);
  assert_true(cJSON_IsObject(f));
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(f, stat);
  assert_true(cJSON_IsNumber(v));
  return v->valuedouble;
}

static void test_range(void **state) {
  (void)state;
  gs_telemetry_range r;
  memset(&r, 0, sizeof r);
  assert_true(isnan(gs_telemetry_range_mean(&r)));
  gs_telemetry_range_add(&r, 5.0);
  gs_telemetry_range_add(&r, -1.0);
  gs_telemetry_range_add(&r, 2.0);
  assert_int_equal(r.n, 3);
  assert_true(r.min == -1.0 && r.max == 5.0);
  assert_true(fabs(gs_telemetry_range_mean(&r) - 2.0) < 1e-12);
}

static void test_summary_with_unsupported_fields(void **state) {
  (void)state;
  gs_telemetry t;
  assert_int_equal(gs_telemetry_init(&t, 2, 0.1, 0), GS_OK);
  t.available = 1;
  gs_nvml_sample a = full_sample(10, 1000, 250000);
  a.has_throttle = 1;
  a.throttle_reasons = GS_NVML_THROTTLE_SW_POWER_CAP;
  gs_nvml_sample b = full_sample(30, 3000, 350000);
  b.has_throttle = 1;
  b.throttle_reasons = GS_NVML_THROTTLE_GPU_IDLE | (1ull << 40);
  // Volatile ECC counts only grow: the summary keeps the largest.
  a.has_ecc = b.has_ecc = 1;
  a.ecc_corrected = 3;
  b.ecc_corrected = 5;
  b.ecc_uncorrected = 1;
  // Compute processes: the most seen at once (another one came, then left).
  a.has_processes = b.has_processes = 1;
  a.compute_processes = 2;
  b.compute_processes = 1;
  assert_int_equal(gs_telemetry_record(&t, 0, &a, 0.0), GS_OK);
  assert_int_equal(gs_telemetry_record(&t, 0, &b, 0.1), GS_OK);
  gs_nvml_sample missing;
  memset(&missing, 0, sizeof missing);
  assert_int_equal(gs_telemetry_record(&t, 1, &missing, 0.0), GS_OK);  // GPU not in NVML
  assert_int_equal(gs_telemetry_record(&t, 5, &a, 0.0), GS_OK);        // no such rank: ignored
  assert_int_equal(t.ranks[0].samples, 2);
  assert_int_equal(t.ranks[1].samples, 0);

  cJSON *j = gs_telemetry_to_json(&t);
  assert_non_null(j);
  assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "available")));
  assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "reason")));
  assert_null(cJSON_GetObjectItemCaseSensitive(j, "series"));
  const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(j, "ranks");
  assert_int_equal(cJSON_GetArraySize(ranks), 2);
  const cJSON *r0 = cJSON_GetArrayItem(ranks, 0);
  assert_true(member(r0, "utilization_percent", "min") == 10.0);
  assert_true(member(r0, "utilization_percent", "mean") == 20.0);
  assert_true(member(r0, "utilization_percent", "max") == 30.0);
  assert_true(member(r0, "memory_used_bytes", "max") == 3000.0);
  assert_true(fabs(member(r0, "power_watts", "mean") - 300.0) < 1e-9);
  // Clocks and temperature were never given: null, not 0.
  assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r0, "sm_clock_mhz")));
  assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r0, "temperature_c")));
  const cJSON *thr = cJSON_GetObjectItemCaseSensitive(r0, "throttle_reasons");
  assert_int_equal(cJSON_GetArraySize(thr), 3);
  assert_string_equal(cJSON_GetArrayItem(thr, 0)->valuestring, "gpu_idle");
  assert_string_equal(cJSON_GetArrayItem(thr, 1)->valuestring, "sw_power_cap");
  assert_string_equal(cJSON_GetArrayItem(thr, 2)->valuestring, "bit_40");
  assert_true(member(r0, "ecc_errors", "corrected") == 5.0);
  assert_true(member(r0, "ecc_errors", "uncorrected") == 1.0);
  assert_true(member(r0, "compute_processes", "max") == 2.0);
  const cJSON *r1 = cJSON_GetArrayItem(ranks, 1);
  assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r1, "compute_processes")));
  assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r1, "ecc_errors")));
  assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r1, "utilization_percent")));
  assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r1, "throttle_reasons")));
  cJSON_Delete(j);
  gs_telemetry_free(&t);
}

static void test_series_on_request(void **state) {
  (void)state;
  gs_telemetry t;
  assert_int_equal(gs_telemetry_init(&t, 1, 0.05, 1), GS_OK);
  t.available = 1;
  for (int i = 0; i < 100; i++) {  // past the first growth of the arrays
    gs_nvml_sample s = full_sample((unsigned)i, 7, 1000);
    if (i == 3) s.has_power = 0;
    assert_int_equal(gs_telemetry_record(&t, 0, &s, i * 0.05), GS_OK);
  }
  cJSON *j = gs_telemetry_to_json(&t);
  const cJSON *series = cJSON_GetObjectItemCaseSensitive(j, "series");
  assert_int_equal(cJSON_GetArraySize(series), 1);
  const cJSON *s0 = cJSON_GetArrayItem(series, 0);
  const cJSON *util = cJSON_GetObjectItemCaseSensitive(s0, "utilization_percent");
  const cJSON *power = cJSON_GetObjectItemCaseSensitive(s0, "power_watts");
  const cJSON *time = cJSON_GetObjectItemCaseSensitive(s0, "time_seconds");
  assert_int_equal(cJSON_GetArraySize(util), 100);
  assert_true(cJSON_GetArrayItem(util, 99)->valuedouble == 99.0);
  assert_true(cJSON_IsNull(cJSON_GetArrayItem(power, 3)));
  assert_true(cJSON_GetArrayItem(power, 4)->valuedouble == 1.0);
  assert_true(fabs(cJSON_GetArrayItem(time, 2)->valuedouble - 0.1) < 1e-12);
  assert_true(cJSON_IsNull(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s0, "throttle_reasons"), 0)));
  cJSON_Delete(j);
  gs_telemetry_free(&t);
}

static const char *reason_of(const gs_telemetry *t) {
  cJSON *j = gs_telemetry_to_json(t);
  assert_non_null(j);
  assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "available")));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "ranks")), 0);
  static char text[256];
  snprintf(text, sizeof text, "%s", cJSON_GetObjectItemCaseSensitive(j, "reason")->valuestring);
  cJSON_Delete(j);
  return text;
}

static void test_unavailable_without_error(void **state) {
  (void)state;
  const int devices[1] = {0};
  const char *bus[1] = {"0000:18:00.0"};
  gs_telemetry t;
  assert_int_equal(gs_telemetry_init(&t, 1, 0.0, 0), GS_OK);
  assert_int_equal(gs_telemetry_start(&t, devices, bus), GS_OK);
  assert_non_null(strstr(reason_of(&t), "turned off"));
  gs_telemetry_free(&t);

  assert_int_equal(gs_telemetry_init(&t, 0, 0.1, 0), GS_OK);
  assert_int_equal(gs_telemetry_start(&t, devices, bus), GS_OK);
  assert_non_null(strstr(reason_of(&t), "no GPU"));
  gs_telemetry_free(&t);

  assert_int_equal(setenv("GPUSCALE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1), 0);
  assert_int_equal(gs_telemetry_init(&t, 1, 0.1, 1), GS_OK);
  assert_int_equal(gs_telemetry_start(&t, devices, bus), GS_OK);
  assert_false(t.running);
  gs_telemetry_stop(&t);  // nothing running: a no-op
  assert_non_null(strstr(reason_of(&t), "NVML unavailable"));
  gs_telemetry_free(&t);
}

static void test_names(void **state) {
  (void)state;
  assert_string_equal(gs_telemetry_field_name(GS_TELEMETRY_MEMORY_USED), "memory_used_bytes");
  assert_string_equal(gs_nvml_throttle_name(GS_NVML_THROTTLE_HW_THERMAL), "hw_thermal_slowdown");
  assert_null(gs_nvml_throttle_name(0x3));  // not a single documented bit
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_range),
      cmocka_unit_test(test_summary_with_unsupported_fields),
      cmocka_unit_test(test_series_on_request),
      cmocka_unit_test(test_unavailable_without_error),
      cmocka_unit_test(test_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
