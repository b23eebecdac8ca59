/* Unit tests of report/verdict/check_burn.c, level 3's judgement, on
 * burn-in records built by hand: a clean run passes with its figures; a
 * wrong element, a CUDA failure, a hardware slowdown, the thermal limit
 * and a GPU slower than its peers each give their state and action; no
 * CUDA device is not applicable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "report/verdict/check.h"

enum { G = 4 };
static gs_gpu_health health[G];
static gs_gpu_burn burn[G];

/* Four GPUs that ran 600 s cleanly at about 700 TFLOP/s and 690 W. */
static void node(gs_node_state *s) {
  memset(s, 0, sizeof *s);
  s->nvml_loaded = 1;
  s->nvml_replaced = 1;
  for (int i = 0; i < G; i++) {
    memset(&health[i], 0, sizeof health[i]);
    health[i].index = i;
    snprintf(health[i].pci_bus_id, sizeof health[i].pci_bus_id, "00000000:%02X:00.0", 0x18 + i);
    gs_gpu_burn *g = &burn[i];
    memset(g, 0, sizeof *g);
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "0000:%02X:00.0", 0x18 + i);
    g->device = 3 - i;  // CUDA's order differs from NVML's: findings use NVML's
    g->ran = 1;
    g->gemms = 50000;
    g->triads = 10000;
    g->checks = 300;
    g->gemm_tflops = 700 + i;
    g->seconds = 600;
    g->power_known = g->clock_known = g->temperature_known = g->throttle_known = 1;
    g->power_mean_w = 690;
    g->power_max_w = 701;
    g->sm_clock_min_mhz = 1605;
    g->sm_clock_mean_mhz = 1755;
    g->temperature_max_c = 71;
    g->throttle_seen = 0x4;  // software power cap: expected at the limit
  }
  s->gpus = health;
  s->gpu_count = G;
  s->burn.level = 3;
  s->burn.n = G;
  s->burn.gpus = burn;
}

static gs_health_finding judged(const gs_node_state *s, int gpu) {
  gs_health_verdict v;
  assert_int_equal(gs_health_judge(s, 0, NULL, &v), GS_OK);
  gs_health_finding out;
  memset(&out, 0, sizeof out);
  for (size_t i = 0; i < v.n; i++)
    if (strcmp(v.items[i].check, "burn") == 0 && v.items[i].gpu == gpu) out = v.items[i];
  gs_health_verdict_free(&v);
  if (!out.check) fail_msg("no burn finding of GPU %d", gpu);
  return out;
}

static void test_clean_run_passes(void **state) {
  (void)state;
  gs_node_state s;
  node(&s);
  for (int i = 0; i < G; i++) assert_int_equal(judged(&s, i).state, GS_CHECK_PASS);
  assert_string_equal(judged(&s, 2).detail,
                      "50000 GEMMs at 702 TFLOP/s, 10000 triads, 300 checks, 0 wrong in 600 s; "
                      "power mean 690 W, max 701 W; SM clock min 1605, mean 1755 MHz; max 71 C; "
                      "clock event reasons seen 0x4");
}

static void test_faults(void **state) {
  (void)state;
  gs_node_state s;
  node(&s);
  burn[1].mismatches = 3;
  gs_health_finding f = judged(&s, 1);
  assert_int_equal(f.state, GS_CHECK_FAIL);
  assert_string_equal(f.action, "drain: GPU 1 computed 3 wrong elements during the burn-in");
  node(&s);
  snprintf(burn[0].error, sizeof burn[0].error, "an illegal memory access was encountered");
  assert_string_equal(judged(&s, 0).action, "drain: GPU 0 failed during the burn-in (an illegal "
                                            "memory access was encountered)");
  node(&s);
  burn[3].throttle_seen = 0x4 | 0x40;
  f = judged(&s, 3);
  assert_int_equal(f.state, GS_CHECK_FAIL);
  assert_string_equal(f.action, "investigate cooling and power: GPU 3 entered hardware thermal "
                                "slowdown during the burn-in");
  node(&s);
  burn[2].throttle_seen = 0x20;
  assert_int_equal(judged(&s, 2).state, GS_CHECK_WARN);
  node(&s);
  burn[2].gemm_tflops = 600;  // 86% of the median (701)
  f = judged(&s, 2);
  assert_int_equal(f.state, GS_CHECK_WARN);
  assert_string_equal(f.action, "investigate: GPU 2's GEMM throughput 600 TFLOP/s, 86% of the "
                                "node's median GPU");
  burn[2].gemm_tflops = 640;  // 91%: within the fraction
  assert_int_equal(judged(&s, 2).state, GS_CHECK_PASS);
}

static void test_no_device(void **state) {
  (void)state;
  gs_node_state s;
  node(&s);
  s.burn.n = 0;
  snprintf(s.burn.why, sizeof s.burn.why, "no CUDA device: none");
  gs_health_finding f = judged(&s, -1);
  assert_int_equal(f.state, GS_CHECK_NA);
  assert_string_equal(f.detail, "no CUDA device: none");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clean_run_passes),
      cmocka_unit_test(test_faults),
      cmocka_unit_test(test_no_device),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
