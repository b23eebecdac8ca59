/* Unit tests of platform/nvml: NVML missing (no library, or a library that
 * is not NVML) is reported as unavailable without crashing and leaves every
 * field unknown; CPU sets format as ranges. Runs without a GPU or driver. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/nvml.h"

static void test_missing_library_is_unavailable(void **state) {
  (void)state;
  assert_int_equal(setenv("GPUSCALE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1), 0);
  char why[256] = "untouched";
  gs_nvml *nvml = gs_nvml_open(why, sizeof why);
  assert_null(nvml);
  assert_int_equal(strncmp(why, "NVML unavailable: ", 18), 0);
  assert_non_null(strstr(why, "/nonexistent/libnvidia-ml.so.1"));
  gs_nvml_close(nvml);  // NULL is allowed
  assert_null(gs_nvml_open(NULL, 0));  // no message buffer: still no crash
}

static void test_library_without_nvml_symbols(void **state) {
  (void)state;
  // libm is on every glibc system and has no NVML entry points.
  assert_int_equal(setenv("GPUSCALE_NVML_LIBRARY", "libm.so.6", 1), 0);
  char why[256] = "";
  gs_nvml *nvml = gs_nvml_open(why, sizeof why);
  assert_null(nvml);
  assert_int_equal(strncmp(why, "NVML unavailable: ", 18), 0);
  assert_non_null(strstr(why, "nvmlInit_v2"));
}

static void test_fields_unknown_without_nvml(void **state) {
  (void)state;
  gs_nvml_gpu_info info;
  memset(&info, 0x5a, sizeof info);
  gs_nvml_gpu_info_get(NULL, "0000:18:00.0", &info);
  assert_int_equal(info.found, 0);
  assert_string_equal(info.name, "");
  assert_string_equal(info.uuid, "");
  assert_int_equal(info.power_limit_mw, 0);
  assert_int_equal(info.max_sm_clock_mhz, 0);
  assert_int_equal(info.max_memory_clock_mhz, 0);
  assert_int_equal(info.sm_clock_mhz, 0);
  assert_int_equal(info.memory_clock_mhz, 0);
  assert_int_equal(info.numa_node, -1);
  assert_string_equal(info.cpu_affinity, "");

  char driver[64] = "x";
  assert_int_equal(gs_nvml_driver_version(NULL, driver, sizeof driver), 0);
  assert_string_equal(driver, "");

  int level = 1234;
  assert_int_equal(gs_nvml_common_ancestor(NULL, "0000:18:00.0", "0000:2a:00.0", &level), 0);
  assert_int_equal(level, 1234);

  gs_nvlink_ports ports;
  memset(&ports, 0x5a, sizeof ports);
  gs_nvml_nvlink_ports_get(NULL, "0000:18:00.0", &ports);
  assert_string_equal(ports.pci_bus_id, "0000:18:00.0");
  assert_int_equal(ports.port_count, 0);
  assert_int_equal(ports.version, 0);
  for (size_t l = 0; l < GS_NVLINK_MAX_LINKS; l++) assert_int_equal(ports.active[l], 0);
}

static void set_cpu(unsigned long *set, size_t cpu) {
  const size_t bits = sizeof(unsigned long) * CHAR_BIT;
  set[cpu / bits] |= 1ul << (cpu % bits);
}

static void test_format_cpu_set(void **state) {
  (void)state;
  const size_t bits = sizeof(unsigned long) * CHAR_BIT;
  unsigned long set[4] = {0, 0, 0, 0};
  char out[128];
  gs_nvml_format_cpu_set(set, 4, out, sizeof out);
  assert_string_equal(out, "");
  for (size_t c = 0; c < 4; c++) set_cpu(set, c);
  set_cpu(set, 6);
  // A range that crosses from one word into the next.
  for (size_t c = bits - 2; c < bits + 3; c++) set_cpu(set, c);
  set_cpu(set, 4 * bits - 1);
  gs_nvml_format_cpu_set(set, 4, out, sizeof out);
  char want[128];
  snprintf(want, sizeof want, "0-3,6,%zu-%zu,%zu", bits - 2, bits + 2, 4 * bits - 1);
  assert_string_equal(out, want);
  // Too small a buffer: cut and marked, never overrun.
  char tiny[8];
  gs_nvml_format_cpu_set(set, 4, tiny, sizeof tiny);
  assert_true(strlen(tiny) < sizeof tiny);
  assert_non_null(strstr(tiny, "..."));
}

/* Compute processes through the NVML test double (tests/nvml_double.c,
 * named by GS_NVML_DOUBLE, which ctest sets): the count NVML gives,
 * whatever the layout of its process records. */
static void test_compute_processes(void **state) {
  (void)state;
  const char *lib = getenv("GS_NVML_DOUBLE");
  assert_non_null(lib);
  assert_int_equal(setenv("GPUSCALE_NVML_LIBRARY", lib, 1), 0);
  assert_int_equal(setenv("GS_NVML_DOUBLE_GPUS", "2", 1), 0);
  assert_int_equal(setenv("GS_NVML_DOUBLE_FAULTS", "processes:1:3", 1), 0);
  gs_nvml *nvml = gs_nvml_open(NULL, 0);
  assert_non_null(nvml);
  for (unsigned g = 0; g < 2; g++) {
    char bus[64];
    assert_true(gs_nvml_device_bus_id(nvml, g, bus, sizeof bus));
    gs_nvml_sample s;
    gs_nvml_sample_get(nvml, bus, &s);
    assert_true(s.found && s.has_processes);
    assert_int_equal(s.compute_processes, g == 0 ? 0 : 3);
  }
  gs_nvml_close(nvml);
  unsetenv("GS_NVML_DOUBLE_FAULTS");
  unsetenv("GS_NVML_DOUBLE_GPUS");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_missing_library_is_unavailable),
      cmocka_unit_test(test_library_without_nvml_symbols),
      cmocka_unit_test(test_fields_unknown_without_nvml),
      cmocka_unit_test(test_format_cpu_set),
      cmocka_unit_test(test_compute_processes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
