/* Unit tests of report/verdict/check.c, the judgement of `gpuscale check`
 * level 1, on node states built by hand: the rules of docs/check.md that
 * the NVML test double cannot reach (idle PCIe generation, thermal and
 * power-brake reasons, unused NVLink, CUDA/NVML mismatch, an old driver,
 * pending page retirement, no NVML) and the counts and exit statuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "report/verdict/check.h"

/* A healthy H100-like GPU: ECC clean, rows not remapped, 18 links up,
 * PCIe gen 5 x16, idle. */
static void healthy_gpu(gs_gpu_health *h, int index) {
  memset(h, 0, sizeof *h);
  h->index = index;
  snprintf(h->pci_bus_id, sizeof h->pci_bus_id, "00000000:%02X:00.0", 0x18 + index);
  h->has_ecc_volatile = h->has_ecc_aggregate = 1;
  h->has_remap = 1;
  h->port_count = GS_HEALTH_MAX_LINKS;
  for (size_t l = 0; l < GS_HEALTH_MAX_LINKS; l++) {
    h->port_present[l] = h->link_up[l] = 1;
    h->link_errors[l].has_counters = 1;
  }
  h->has_pcie = 1;
  h->pcie_gen = h->pcie_gen_max = 5;
  h->pcie_width = h->pcie_width_max = 16;
  h->has_clock_events = 1;
  h->clock_events = 0x1;
}

static gs_gpu_health gpus[2];
static char cuda_ids[2][GS_TEXT_SHORT];

/* Two healthy GPUs that CUDA sees too (CUDA writes a 4-digit domain). */
static void healthy_node(gs_node_state *s) {
  memset(s, 0, sizeof *s);
  s->nvml_loaded = 1;
  snprintf(s->driver, sizeof s->driver, "550.54.15");
  s->cuda_driver_version = 12040;
  s->cuda_runtime_version = 12040;
  for (int i = 0; i < 2; i++) {
    healthy_gpu(&gpus[i], i);
    snprintf(cuda_ids[i], sizeof cuda_ids[i], "0000:%02X:00.0", 0x18 + i);
  }
  s->gpus = gpus;
  s->gpu_count = 2;
  s->cuda_bus_ids = cuda_ids;
  s->cuda_count = 2;
}

/* The one finding of `check` for `gpu`; fails the test when absent. */
static const gs_health_finding *finding(const gs_health_verdict *v, const char *check, int gpu) {
  for (size_t i = 0; i < v->n; i++)
    if (strcmp(v->items[i].check, check) == 0 && v->items[i].gpu == gpu) return &v->items[i];
  fail_msg("no finding %s of GPU %d", check, gpu);
  return NULL;
}

static void test_healthy_node_passes(void **state) {
  (void)state;
  gs_node_state s;
  healthy_node(&s);
  gs_health_verdict v;
  assert_int_equal(gs_health_judge(&s, 2, NULL, &v), GS_OK);
  assert_true(v.applicable);
  assert_int_equal(v.overall, GS_CHECK_PASS);
  // 2 node checks + 2 GPUs x (ecc, row_remap, nvlink, pcie, clocks); no page retirement.
  assert_int_equal(v.passed, 12);
  assert_int_equal(v.warned + v.failed, 0);
  assert_int_equal(finding(&v, "retired_pages", 1)->state, GS_CHECK_NA);
  assert_string_equal(finding(&v, "inventory", -1)->detail,
                      "2 GPUs seen by NVML, 2 usable by CUDA");
  assert_int_equal(gs_health_verdict_status(&v), GS_OK);
  gs_health_verdict_free(&v);
}

static void test_idle_pcie_generation_passes_width_fails(void **state) {
  (void)state;
  gs_node_state s;
  healthy_node(&s);
  gpus[0].pcie_gen = 1;  // idle power saving
  gpus[1].pcie_width = 4;
  gs_health_verdict v;
  assert_int_equal(gs_health_judge(&s, 0, NULL, &v), GS_OK);
  assert_int_equal(finding(&v, "pcie", 0)->state, GS_CHECK_PASS);
  assert_non_null(strstr(finding(&v, "pcie", 0)->detail, "gen 1 x16 of gen 5 x16"));
  assert_int_equal(finding(&v, "pcie", 1)->state, GS_CHECK_FAIL);
  assert_string_equal(finding(&v, "pcie", 1)->action, "reseat or replace: GPU 1 at PCIe x4 of x16");
  assert_int_equal(gs_health_verdict_status(&v), GS_NODE_FAIL);
  gs_health_verdict_free(&v);
}

static void test_clock_reasons_classified(void **state) {
  (void)state;
  gs_node_state s;
  healthy_node(&s);
  gs_health_verdict v;
  gpus[0].clock_events = 0x4;   // software power cap: normal under load
  gpus[1].clock_events = 0x20;  // software thermal slowdown
  assert_int_equal(gs_health_judge(&s, 0, NULL, &v), GS_OK);
  assert_int_equal(finding(&v, "clocks", 0)->state, GS_CHECK_PASS);
  assert_int_equal(finding(&v, "clocks", 1)->state, GS_CHECK_WARN);
  assert_int_equal(v.overall, GS_CHECK_WARN);
  assert_int_equal(gs_health_verdict_status(&v), GS_NODE_WARN);
  gs_health_verdict_free(&v);
  gpus[0].clock_events = 0x40 | 0x4;
  gpus[1].clock_events = 0x80;
  assert_int_equal(gs_health_judge(&s, 0, NULL, &v), GS_OK);
  assert_string_equal(finding(&v, "clocks", 0)->action,
                      "investigate cooling and power: GPU 0 in hardware thermal slowdown "
                      "(hw_thermal_slowdown)");
  assert_string_equal(finding(&v, "clocks", 1)->action,
                      "investigate cooling and power: GPU 1 in external power brake "
                      "(hw_power_brake_slowdown)");
  assert_int_equal(v.failed, 2);
  gs_health_verdict_free(&v);
}

static void test_unused_nvlink_not_applicable(void **state) {
  (void)state;
  gs_node_state s;
  healthy_node(&s);
  for (size_t l = 0; l < GS_HEALTH_MAX_LINKS; l++) gpus[0].link_up[l] = 0;
  gpus[1].port_count = 0;
  gs_health_verdict v;
  assert_int_equal(gs_health_judge(&s, 0, NULL, &v), GS_OK);
  assert_int_equal(finding(&v, "nvlink", 0)->state, GS_CHECK_NA);
  assert_int_equal(finding(&v, "nvlink", 1)->state, GS_CHECK_NA);
  assert_int_equal(v.overall, GS_CHECK_PASS);
  gs_health_verdict_free(&v);
}

static void test_inventory_and_software(void **state) {
  (void)state;
  gs_node_state s;
  healthy_node(&s);
  s.cuda_count = 1;  // CUDA lost GPU 1
  s.cuda_driver_version = 12020;  // driver older than the runtime
  snprintf(s.cuda_status, sizeof s.cuda_status, "1 device");
  gs_health_verdict v;
  assert_int_equal(gs_health_judge(&s, 0, NULL, &v), GS_OK);
  assert_string_equal(finding(&v, "inventory", -1)->action,
                      "investigate: CUDA cannot use 1 of 2 GPUs (first at 00000000:19:00.0)");
  assert_string_equal(finding(&v, "software", -1)->action,
                      "update the driver: CUDA runtime 12.4 needs a driver for CUDA 12.4 or "
                      "later (it supports 12.2)");
  gs_health_verdict_free(&v);
  s.cuda_visible_set = 1;  // the job hid it: expected
  s.cuda_driver_version = 12040;
  assert_int_equal(gs_health_judge(&s, 0, NULL, &v), GS_OK);
  assert_int_equal(v.overall, GS_CHECK_PASS);
  gs_health_verdict_free(&v);
  assert_int_equal(gs_health_judge(&s, 8, NULL, &v), GS_OK);
  assert_string_equal(finding(&v, "inventory", -1)->action, "investigate: 2 GPUs of 8 expected");
  gs_health_verdict_free(&v);
}

static void test_memory_errors(void **state) {
  (void)state;
  gs_node_state s;
  healthy_node(&s);
  gpus[0].has_retired_pages = gpus[0].has_retired_pending = 1;
  gpus[0].retired_dbe = 2;
  gpus[0].retired_pending = 1;
  gpus[1].ecc_volatile_corrected = 1000;  // corrected: shown, not judged
  gpus[1].ecc_aggregate_uncorrected = 3;  // history: shown, not judged
  gs_health_verdict v;
  assert_int_equal(gs_health_judge(&s, 0, NULL, &v), GS_OK);
  assert_int_equal(finding(&v, "retired_pages", 0)->state, GS_CHECK_FAIL);
  assert_string_equal(finding(&v, "retired_pages", 0)->action,
                      "reset: GPU 0 has a page retirement pending; reload the driver or reset "
                      "the GPU");
  assert_int_equal(finding(&v, "ecc", 1)->state, GS_CHECK_PASS);
  assert_string_equal(finding(&v, "ecc", 1)->detail,
                      "volatile 1000 corrected, 0 uncorrected; aggregate 0 corrected, 3 "
                      "uncorrected");
  assert_int_equal(v.failed, 1);
  gs_health_verdict_free(&v);
}

static void test_no_nvml_and_no_gpu(void **state) {
  (void)state;
  gs_node_state s;
  memset(&s, 0, sizeof s);
  snprintf(s.nvml_status, sizeof s.nvml_status, "NVML unavailable: gone");
  snprintf(s.cuda_status, sizeof s.cuda_status, "no usable CUDA device: none");
  gs_health_verdict v;
  assert_int_equal(gs_health_judge(&s, 0, NULL, &v), GS_OK);
  assert_false(v.applicable);
  assert_string_equal(v.why, "no GPU: NVML unavailable: gone; CUDA: no usable CUDA device: none");
  assert_int_equal(gs_health_verdict_status(&v), GS_OK);
  gs_health_verdict_free(&v);
  // CUDA has GPUs but NVML is missing: the passive state is unknown: warn.
  static char one[1][GS_TEXT_SHORT] = {"0000:18:00.0"};
  s.cuda_bus_ids = one;
  s.cuda_count = 1;
  assert_int_equal(gs_health_judge(&s, 0, NULL, &v), GS_OK);
  assert_true(v.applicable);
  assert_int_equal(finding(&v, "passive", -1)->state, GS_CHECK_WARN);
  assert_int_equal(gs_health_verdict_status(&v), GS_NODE_WARN);
  gs_health_verdict_free(&v);
}

static void test_hung_read_fails(void **state) {
  (void)state;
  gs_node_state s;
  memset(&s, 0, sizeof s);
  snprintf(s.hung, sizeof s.hung, "GPU 3");
  s.budget_s = 60;
  gs_health_verdict v;
  assert_int_equal(gs_health_judge(&s, 0, NULL, &v), GS_OK);
  assert_true(v.applicable);
  assert_int_equal(v.n, 1);
  assert_string_equal(v.items[0].check, "budget");
  assert_string_equal(v.items[0].action, "drain: no answer from GPU 3 within the 60 s budget");
  assert_int_equal(gs_health_verdict_status(&v), GS_NODE_FAIL);
  gs_health_verdict_free(&v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_healthy_node_passes),
      cmocka_unit_test(test_idle_pcie_generation_passes_width_fails),
      cmocka_unit_test(test_clock_reasons_classified),
      cmocka_unit_test(test_unused_nvlink_not_applicable),
      cmocka_unit_test(test_inventory_and_software),
      cmocka_unit_test(test_memory_errors),
      cmocka_unit_test(test_no_nvml_and_no_gpu),
      cmocka_unit_test(test_hung_read_fails),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
