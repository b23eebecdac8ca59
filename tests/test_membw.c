/* Unit tests of level 2's host-side maths: STREAM triad bytes and
 * bandwidth, the extra triads of an injected slowdown, the CPU reference,
 * --inject's strict parsing (p2p/membw.c, measure/check_stress.c), the
 * PCIe payload rate and the level 2 judgement on measurements built by
 * hand (report/verdict/check_stress.c): a GPU at 80% of its peers' memory
 * bandwidth fails with its action, and healthy figures pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/check_stress.h"
#include "p2p/membw.h"
#include "report/verdict/check.h"

static void test_triad_maths(void **state) {
  (void)state;
  assert_int_equal(gs_membw_triad_bytes(1000), 24000);
  // 512 MiB arrays: 64 Mi doubles, 1.5 GiB per triad; 20 triads in 8 ms.
  const uint64_t n = (512ull << 20) / 8;
  assert_true(fabs(gs_membw_bandwidth(n, 20, 0.008) - 3.0 * 8 * n * 20 / 0.008) < 1);
  assert_true(isnan(gs_membw_bandwidth(n, 20, 0)));
  assert_int_equal(gs_membw_extra_triads(20, 1.0), 0);
  assert_int_equal(gs_membw_extra_triads(20, 0.8), 5);   // 20 / 25 = 0.8
  assert_int_equal(gs_membw_extra_triads(20, 0.5), 20);
  assert_int_equal(gs_membw_extra_triads(20, 0.9), 2);   // 20 / 22 = 0.909
  gs_membw_options o;
  gs_membw_options_default(&o);
  assert_int_equal(o.array_bytes, 512ull << 20);
  assert_int_equal(o.triads, 20);
  assert_int_equal(o.samples, 5);
}

static void test_cpu_reference(void **state) {
  (void)state;
  enum { N = 4096 };
  double *a = malloc(N * sizeof *a);
  assert_non_null(a);
  for (uint64_t i = 0; i < N; i++) a[i] = gs_membw_b(i) + 3.0 * gs_membw_c(i);
  assert_int_equal(gs_membw_mismatches(a, N), 0);
  // Exact whole numbers: b = i mod 1024, c = (i / 8) mod 512.
  assert_true(a[1023] == 1023 + 3 * 127.0);
  assert_true(a[4095] == 1023 + 3 * 511.0);
  assert_true(a[8] == 8 + 3 * 1.0);
  a[7] += 1;
  a[4000] = 0;
  assert_int_equal(gs_membw_mismatches(a, N), 2);
  free(a);
}

static void test_inject_parse(void **state) {
  (void)state;
  gs_check_stress_options o;
  gs_check_stress_options_default(&o);
  assert_int_equal(gs_check_inject_parse("membw:gpu=1,factor=0.8", &o), GS_OK);
  assert_true(o.membw_slowdown[1] == 0.8 && o.membw_slowdown[0] == 1.0);
  assert_int_equal(gs_check_inject_parse("membw:gpu=1,factor=0.5", &o), GS_ERR_USAGE);
  assert_non_null(strstr(gs_last_error(), "slowed twice"));
  const char *const bad[] = {"slow:rank=1,factor=2", "membw:gpu=x,factor=0.8",
                             "membw:gpu=64,factor=0.8", "membw:gpu=1", "membw:gpu=1,factor=1",
                             "membw:gpu=1,factor=0", "membw:gpu=1,factor=0.8x",
                             "membw:gpu=-1,factor=0.8", "membw:gpu=2,factor=nan"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(gs_check_inject_parse(bad[i], &o), GS_ERR_USAGE);
    assert_non_null(strstr(gs_last_error(), "option --inject"));
  }
}

static void test_pcie_rate(void **state) {
  (void)state;
  assert_true(fabs(gs_check_pcie_gbs(5, 16) - 63.015) < 0.01);
  assert_true(fabs(gs_check_pcie_gbs(4, 16) - 31.508) < 0.01);
  assert_true(fabs(gs_check_pcie_gbs(3, 16) - 15.754) < 0.01);
  assert_true(fabs(gs_check_pcie_gbs(2, 8) - 4.0) < 1e-9);
  assert_true(fabs(gs_check_pcie_gbs(5, 8) - 31.508) < 0.01);
  assert_true(isnan(gs_check_pcie_gbs(0, 16)) && isnan(gs_check_pcie_gbs(7, 16)) &&
              isnan(gs_check_pcie_gbs(5, 0)));
}

/* Four H200s, NVML and CUDA agreeing on bus ids, measured healthy: triad
 * 4300 GB/s, host copies 55 GB/s, pairs 380 GB/s. */
enum { G = 4 };
static gs_gpu_health health[G];
static gs_gpu_stress stress[G];
static double pairs[G * G];

static void node(gs_node_state *s) {
  memset(s, 0, sizeof *s);
  s->nvml_loaded = 1;
  s->nvml_replaced = 1;
  s->budget_s = 240;
  for (int i = 0; i < G; i++) {
    gs_gpu_health *h = &health[i];
    memset(h, 0, sizeof *h);
    h->index = i;
    snprintf(h->name, sizeof h->name, "NVIDIA H200");
    snprintf(h->pci_bus_id, sizeof h->pci_bus_id, "00000000:%02X:00.0", 0x18 + i);
    h->has_pcie = 1;
    h->pcie_gen = 1;  // idle: the judgement takes the most generation
    h->pcie_gen_max = 5;
    h->pcie_width = h->pcie_width_max = 16;
    gs_gpu_stress *g = &stress[i];
    memset(g, 0, sizeof *g);
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "0000:%02X:00.0", 0x18 + i);
    g->device = i;
    g->membw_done = g->host_done = 1;
    g->membw_gbs = 4300;
    g->membw_slowdown = 1;
    g->h2d_gbs = 55;
    g->d2h_gbs = 54;
  }
  for (int i = 0; i < G * G; i++) pairs[i] = i / G == i % G ? NAN : 380;
  s->gpus = health;
  s->gpu_count = G;
  s->stress.level = 2;
  s->stress.n = G;
  s->stress.gpus = stress;
  s->stress.p2p_gbs = pairs;
}

static gs_health_finding judged(const gs_node_state *s, const char *check, int gpu) {
  gs_gpu_models m;
  assert_int_equal(gs_gpu_models_load(GS_SOURCE_DIR "/data/gpu-models.json", &m), GS_OK);
  gs_check_models models = {.shipped = &m};
  gs_health_verdict v;
  assert_int_equal(gs_health_judge(s, 0, &models, &v), GS_OK);
  gs_health_finding out;
  memset(&out, 0, sizeof out);
  for (size_t i = 0; i < v.n; i++)
    if (strcmp(v.items[i].check, check) == 0 && v.items[i].gpu == gpu) out = v.items[i];
  gs_health_verdict_free(&v);
  gs_gpu_models_free(&m);
  if (!out.check) fail_msg("no finding %s of GPU %d", check, gpu);
  return out;
}

static void test_healthy_level2_passes(void **state) {
  (void)state;
  gs_node_state s;
  node(&s);
  for (int i = 0; i < G; i++) {
    const char *const checks[] = {"membw", "host_bw", "p2p"};
    for (size_t k = 0; k < 3; k++) {
      gs_health_finding f = judged(&s, checks[k], i);
      if (f.state != GS_CHECK_PASS) fail_msg("%s of GPU %d: %s", checks[k], i, f.detail);
    }
  }
  assert_string_equal(judged(&s, "membw", 2).detail,
                      "STREAM triad 4300 GB/s, 90% of the H200 SXM 141GB's 4800 GB/s (fail "
                      "below 75%: 3600 GB/s), 100% of the node's median (fail below 90%)");
  assert_string_equal(judged(&s, "p2p", 1).detail,
                      "slowest copy to GPU 0 380 GB/s, node median 380 GB/s; 84% of the H200 SXM "
                      "141GB's 450 GB/s NVLink (warn below 70% or 85% of the median, fail below "
                      "50%)");
  assert_string_equal(judged(&s, "host_bw", 0).detail,
                      "host to device 55.0 GB/s, device to host 54.0 GB/s; 86% of PCIe gen 5 x16 "
                      "(63.0 GB/s; warn below 70%, fail below 50%)");
}

static void test_slow_memory_fails(void **state) {
  (void)state;
  gs_node_state s;
  node(&s);
  // 20% lower than its peers: 80% of the median, 72% of the H200's.
  stress[1].membw_gbs = 3440;
  stress[1].membw_slowdown = 0.8;
  gs_health_finding f = judged(&s, "membw", 1);
  assert_int_equal(f.state, GS_CHECK_FAIL);
  assert_string_equal(f.action, "investigate: GPU 1 memory bandwidth 72% of the H200 SXM 141GB's "
                                "(3440 of 4800 GB/s)");
  assert_int_equal(judged(&s, "membw", 0).state, GS_CHECK_PASS);
  // 85% of the median but above 75% of the model: the median catches it.
  stress[1].membw_gbs = 3700;
  f = judged(&s, "membw", 1);
  assert_int_equal(f.state, GS_CHECK_FAIL);
  assert_string_equal(f.action, "investigate: GPU 1 memory bandwidth 86% of the node's median "
                                "(3700 of 4300 GB/s)");
  stress[1].membw_gbs = 4300;
  stress[1].membw_mismatches = 12;
  snprintf(stress[1].membw_error, sizeof stress[1].membw_error, "wrong");
  assert_string_equal(judged(&s, "membw", 1).action,
                      "drain: GPU 1 computed 12 wrong elements in the memory bandwidth test");
}

static void test_host_and_pairs(void **state) {
  (void)state;
  gs_node_state s;
  node(&s);
  stress[2].h2d_gbs = 40;  // 63%: warn
  gs_health_finding f = judged(&s, "host_bw", 2);
  assert_int_equal(f.state, GS_CHECK_WARN);
  assert_string_equal(f.action, "investigate: GPU 2 host copies at 40.0 GB/s, 63% of its PCIe "
                                "gen 5 x16 link");
  stress[2].h2d_gbs = 25;  // 40%: fail
  assert_int_equal(judged(&s, "host_bw", 2).state, GS_CHECK_FAIL);
  node(&s);
  pairs[0 * G + 3] = 200;  // 44% of 450: fail
  f = judged(&s, "p2p", 0);
  assert_int_equal(f.state, GS_CHECK_FAIL);
  assert_string_equal(f.action, "drain: GPU 0 to GPU 3 copies at 200 GB/s, 44% of the 450 GB/s "
                                "NVLink of an H200 SXM 141GB");
  pairs[0 * G + 3] = 300;  // 67% of 450, 79% of the median: warn
  assert_int_equal(judged(&s, "p2p", 0).state, GS_CHECK_WARN);
  assert_int_equal(judged(&s, "p2p", 3).state, GS_CHECK_PASS);
}

static void test_no_device_not_applicable(void **state) {
  (void)state;
  gs_node_state s;
  node(&s);
  s.stress.n = 0;
  snprintf(s.stress.why, sizeof s.stress.why, "no CUDA device: none");
  gs_health_finding f = judged(&s, "stress", -1);
  assert_int_equal(f.state, GS_CHECK_NA);
  node(&s);
  snprintf(s.stress.over_budget, sizeof s.stress.over_budget, "p2p");
  f = judged(&s, "budget", -1);
  assert_int_equal(f.state, GS_CHECK_FAIL);
  assert_string_equal(f.action, "investigate: level 2 did not finish within 240 s (not run: p2p)");
}

static void test_allreduce(void **state) {
  (void)state;
  gs_node_state s;
  node(&s);
  gs_node_stress *x = &s.stress;
  x->allreduce_done = 1;
  x->allreduce_n = 3;
  const uint64_t bytes[] = {8ull << 20, 64ull << 20, 512ull << 20};
  const double busbw[] = {120, 300, 380};
  for (int i = 0; i < 3; i++) {
    x->allreduce_bytes[i] = bytes[i];
    x->allreduce_busbw_gbs[i] = busbw[i];
  }
  gs_health_finding f = judged(&s, "allreduce", -1);
  assert_int_equal(f.state, GS_CHECK_PASS);
  assert_string_equal(f.detail, "bus bandwidth over 4 GPUs: 8 MiB 120 GB/s, 64 MiB 300 GB/s, 512 "
                                "MiB 380 GB/s; 84% of the H200 SXM 141GB's 450 GB/s NVLink (warn "
                                "below 50%: 225 GB/s)");
  x->allreduce_busbw_gbs[2] = 200;
  f = judged(&s, "allreduce", -1);
  assert_int_equal(f.state, GS_CHECK_WARN);
  assert_string_equal(f.action, "investigate: all-reduce bus bandwidth 200 GB/s over 4 GPUs, 44% "
                                "of the 450 GB/s NVLink of an H200 SXM 141GB");
  x->allreduce_wrong = 17;
  assert_string_equal(judged(&s, "allreduce", -1).action,
                      "drain: the all-reduce over 4 GPUs returned 17 wrong elements");
  snprintf(x->allreduce_error, sizeof x->allreduce_error, "ncclCommInitAll: unhandled cuda error");
  assert_int_equal(judged(&s, "allreduce", -1).state, GS_CHECK_FAIL);
  x->allreduce_done = 0;
  snprintf(x->allreduce_error, sizeof x->allreduce_error, "one GPU: nothing to reduce");
  assert_int_equal(judged(&s, "allreduce", -1).state, GS_CHECK_NA);
}

/* Level 1: one round of disjoint pairs (0->1, 2->3) and one 64 MiB
 * all-reduce; nothing else measured. A GPU that is only a destination has
 * no p2p finding; the all-reduce is held to the short size's 40%. */
static void test_level1_short(void **state) {
  (void)state;
  gs_node_state s;
  node(&s);
  s.budget_s = 60;
  gs_node_stress *x = &s.stress;
  x->level = 1;
  for (int i = 0; i < G; i++) {
    stress[i].membw_done = stress[i].host_done = 0;
    stress[i].h2d_gbs = stress[i].d2h_gbs = NAN;
  }
  for (int i = 0; i < G * G; i++) pairs[i] = NAN;
  stress[0].p2p_source = stress[2].p2p_source = 1;
  pairs[0 * G + 1] = 390;
  pairs[2 * G + 3] = 200;  // 44% of 450: fail, as at level 2
  x->allreduce_done = 1;
  x->allreduce_n = 1;
  x->allreduce_bytes[0] = 64ull << 20;
  x->allreduce_busbw_gbs[0] = 200;  // 44%: passes level 1's 40%, would warn at level 2
  gs_gpu_models m;
  assert_int_equal(gs_gpu_models_load(GS_SOURCE_DIR "/data/gpu-models.json", &m), GS_OK);
  gs_check_models models = {.shipped = &m};
  gs_health_verdict v;
  assert_int_equal(gs_health_judge(&s, 0, &models, &v), GS_OK);
  size_t p2p = 0;
  for (size_t i = 0; i < v.n; i++) {
    const char *c = v.items[i].check;
    if (strcmp(c, "membw") == 0 || strcmp(c, "host_bw") == 0 || strcmp(c, "workloads") == 0 ||
        strcmp(c, "nvlink_errors") == 0)
      fail_msg("level 1 judged %s", c);
    if (strcmp(c, "p2p") == 0) {
      p2p++;
      assert_true(v.items[i].gpu == 0 || v.items[i].gpu == 2);
    }
  }
  assert_int_equal(p2p, 2);
  gs_health_verdict_free(&v);
  assert_int_equal(judged(&s, "p2p", 0).state, GS_CHECK_PASS);
  gs_health_finding f = judged(&s, "p2p", 2);
  assert_int_equal(f.state, GS_CHECK_FAIL);
  assert_string_equal(f.action, "drain: GPU 2 to GPU 3 copies at 200 GB/s, 44% of the 450 GB/s "
                                "NVLink of an H200 SXM 141GB");
  f = judged(&s, "allreduce", -1);
  assert_int_equal(f.state, GS_CHECK_PASS);
  assert_string_equal(f.detail, "bus bandwidth over 4 GPUs: 64 MiB 200 GB/s; 44% of the H200 SXM "
                                "141GB's 450 GB/s NVLink (warn below 40%: 180 GB/s)");
  x->allreduce_busbw_gbs[0] = 170;
  f = judged(&s, "allreduce", -1);
  assert_int_equal(f.state, GS_CHECK_WARN);
  assert_string_equal(f.action, "investigate: all-reduce bus bandwidth 170 GB/s over 4 GPUs, 38% "
                                "of the 450 GB/s NVLink of an H200 SXM 141GB");
  // A pair that failed is its source's finding, not its destination's.
  pairs[2 * G + 3] = NAN;
  snprintf(x->p2p_error, sizeof x->p2p_error, "cudaMemcpyPeerAsync: an illegal memory access");
  f = judged(&s, "p2p", 2);
  assert_int_equal(f.state, GS_CHECK_FAIL);
  assert_string_equal(f.action, "investigate: GPU 2's copies to other GPUs failed "
                                "(cudaMemcpyPeerAsync: an illegal memory access)");
  assert_int_equal(judged(&s, "p2p", 0).state, GS_CHECK_PASS);
  assert_int_equal(gs_health_judge(&s, 0, &models, &v), GS_OK);
  for (size_t i = 0; i < v.n; i++)
    if (strcmp(v.items[i].check, "p2p") == 0 && (v.items[i].gpu == 1 || v.items[i].gpu == 3))
      fail_msg("p2p finding for destination GPU %d", v.items[i].gpu);
  gs_health_verdict_free(&v);
  gs_gpu_models_free(&m);
  snprintf(x->over_budget, sizeof x->over_budget, "allreduce");
  assert_string_equal(judged(&s, "budget", -1).action,
                      "investigate: level 1 did not finish within 60 s (not run: allreduce)");
}

static void test_workloads(void **state) {
  (void)state;
  gs_node_state s;
  node(&s);
  gs_node_stress *x = &s.stress;
  double rate[2 * G] = {100, 101, 99, 100, 50, 50, 50, 47};  // two workloads x four GPUs
  x->workload_n = 2;
  x->workload_keys[0] = "voxelize";
  x->workload_keys[1] = "resample";
  x->workload_rate = rate;
  // Rates without step times have no interval: shown, never judged
  // (tests/test_check_stress.c judges intervals).
  gs_health_finding f = judged(&s, "workloads", 0);
  assert_int_equal(f.state, GS_CHECK_PASS);
  assert_string_equal(f.detail, "voxelize 100% [-] inconclusive, resample 100% [-] inconclusive "
                                "of the node's median GPU over 0 rounds (warn when the interval "
                                "lies below 95%, fail below 80%)");
  f = judged(&s, "workloads", 3);  // resample 47 of the median 50: 94%, no interval
  assert_int_equal(f.state, GS_CHECK_PASS);
  assert_non_null(strstr(f.detail, "resample 94% [-] inconclusive"));
  snprintf(x->workload_error, sizeof x->workload_error,
           "fuse on CUDA device 1: result differs from the CPU reference");
  f = judged(&s, "workloads", -1);
  assert_int_equal(f.state, GS_CHECK_FAIL);
  assert_string_equal(f.action, "investigate: fuse on CUDA device 1: result differs from the CPU "
                                "reference");
  x->workload_rate = NULL;  // the stack's, not to be freed
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_triad_maths),
      cmocka_unit_test(test_cpu_reference),
      cmocka_unit_test(test_inject_parse),
      cmocka_unit_test(test_pcie_rate),
      cmocka_unit_test(test_healthy_level2_passes),
      cmocka_unit_test(test_slow_memory_fails),
      cmocka_unit_test(test_host_and_pairs),
      cmocka_unit_test(test_no_device_not_applicable),
      cmocka_unit_test(test_allreduce),
      cmocka_unit_test(test_level1_short),
      cmocka_unit_test(test_workloads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
