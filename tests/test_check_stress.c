/* Unit tests of report/verdict/check_stress.c's noise-aware rules, on
 * records built by hand: each workload's throughput per GPU against the
 * node's median GPU from the ratio's interval (pass, inconclusive, warn,
 * fail, no interval), and the NVLink error counters' change under load by
 * rate and kind (a small CRC rate passes, 100 CRC errors a second of a kind
 * fails, a recovery fails, a replay warns, a counter reset counts nothing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/verdict/check.h"

enum { G = 4, R = GS_HEALTH_WORKLOAD_ROUNDS, STEPS = 50 };
static gs_gpu_health health[G];
static gs_gpu_stress stress[G];
static double rate[G];
static double pairs[G * G];  /* not measured (NaN): judged elsewhere */
static gs_health_steps steps[G * R];
static double seconds[G * R][STEPS];

/* A node of four GPUs whose passive state is clean (NVML knows them, no
 * NVLink port listed) and that measured one workload, "fuse". */
static void node(gs_node_state *s) {
  memset(s, 0, sizeof *s);
  s->nvml_loaded = 1;
  s->nvml_replaced = 1;
  for (int i = 0; i < G; i++) {
    memset(&health[i], 0, sizeof health[i]);
    health[i].index = i;
    snprintf(health[i].pci_bus_id, sizeof health[i].pci_bus_id, "00000000:%02X:00.0", 0x18 + i);
    memset(&stress[i], 0, sizeof stress[i]);
    snprintf(stress[i].pci_bus_id, sizeof stress[i].pci_bus_id, "0000:%02X:00.0", 0x18 + i);
    stress[i].device = i;
    stress[i].h2d_gbs = stress[i].d2h_gbs = NAN;
  }
  s->gpus = health;
  s->gpu_count = G;
  s->stress.level = 2;
  s->stress.n = G;
  s->stress.gpus = stress;
  for (int i = 0; i < G * G; i++) pairs[i] = NAN;
  s->stress.p2p_gbs = pairs;
  s->stress.workload_n = 1;
  s->stress.workload_keys[0] = "fuse";
  s->stress.workload_rate = rate;
}

/* GPU i's round r: STEPS steps around `mean` seconds, alternating
 * +-`spread` of it (the round's mean is `mean` exactly). */
static void round_of(int i, int r, double mean, double spread) {
  gs_health_steps *g = &steps[i * R + r];
  for (int k = 0; k < STEPS; k++) seconds[i * R + r][k] = mean * (1 + (k % 2 ? spread : -spread));
  g->seconds = seconds[i * R + r];
  g->n = STEPS;
}

/* Every GPU's rounds at 10 us (GPU 3's given), 1e6 items a step, rates
 * from the pooled means, as check_stress.c computes them. */
static void workloads(gs_node_state *s, const double gpu3[R]) {
  for (int i = 0; i < G; i++) {
    double sum = 0;
    for (int r = 0; r < R; r++) {
      const double mean = i == 3 ? gpu3[r] : 10e-6 * (1 + 0.002 * ((i + r) % 3));
      round_of(i, r, mean, 0.2);
      sum += mean;
    }
    rate[i] = 1e6 / (sum / R);
  }
  s->stress.workload_steps = steps;
  s->stress.workload_rounds = R;
}

static gs_health_finding judged(const gs_node_state *s, const char *check, int gpu) {
  gs_health_verdict v;
  assert_int_equal(gs_health_judge(s, 0, NULL, &v), GS_OK);
  gs_health_finding out;
  memset(&out, 0, sizeof out);
  for (size_t i = 0; i < v.n; i++)
    if (strcmp(v.items[i].check, check) == 0 && v.items[i].gpu == gpu) out = v.items[i];
  gs_health_verdict_free(&v);
  if (!out.check) fail_msg("no %s finding of GPU %d", check, gpu);
  return out;
}

static void test_workloads_alike_pass(void **unused) {
  (void)unused;
  gs_node_state s;
  node(&s);
  const double same[R] = {10e-6, 10e-6, 10e-6, 10e-6};
  workloads(&s, same);
  for (int i = 0; i < G; i++) {
    gs_health_finding f = judged(&s, "workloads", i);
    assert_int_equal(f.state, GS_CHECK_PASS);
    assert_null(strstr(f.detail, "inconclusive"));
    assert_non_null(strstr(f.detail, "of the node's median GPU over 4 rounds (warn when the "
                                     "interval lies below 95%, fail below 80%)"));
  }
}

/* GPU 3 at 92% on the mean, but one round slow and the others as fast as
 * its peers: the interval straddles 95%, so the verdict is inconclusive,
 * never a warning (the healthy H200 node's fuse of docs/results). */
static void test_workloads_noisy_round_inconclusive(void **unused) {
  (void)unused;
  gs_node_state s;
  node(&s);
  const double noisy[R] = {10e-6, 10e-6, 13.5e-6, 10e-6};
  workloads(&s, noisy);
  double ratio, low, high;
  assert_int_equal(gs_check_workload_ratio(&s.stress, 0, 3, &ratio, &low, &high), 1);
  assert_true(ratio < 0.95);
  assert_true(low < 0.95 && high > 0.95);
  gs_health_finding f = judged(&s, "workloads", 3);
  assert_int_equal(f.state, GS_CHECK_PASS);
  assert_non_null(strstr(f.detail, "inconclusive"));
  assert_string_equal(f.action, "");
}

/* GPU 3 10% slower in every round: the interval lies wholly below 95%. */
static void test_workloads_slow_gpu_warns(void **unused) {
  (void)unused;
  gs_node_state s;
  node(&s);
  const double slow[R] = {11.1e-6, 11.1e-6, 11.12e-6, 11.1e-6};
  workloads(&s, slow);
  double ratio, low, high;
  assert_int_equal(gs_check_workload_ratio(&s.stress, 0, 3, &ratio, &low, &high), 1);
  assert_true(high < 0.95 && low > 0.85);
  assert_true(low <= ratio && ratio <= high);
  gs_health_finding f = judged(&s, "workloads", 3);
  assert_int_equal(f.state, GS_CHECK_WARN);
  char want[200];
  snprintf(want, sizeof want, "investigate: GPU 3 runs fuse at %.0f%% [%.0f, %.0f] of the node's "
           "median GPU", 100 * ratio, 100 * low, 100 * high);
  assert_string_equal(f.action, want);
  // The peers pass against the median GPU, which is one of them.
  assert_int_equal(judged(&s, "workloads", 0).state, GS_CHECK_PASS);
}

static void test_workloads_much_slower_fails(void **unused) {
  (void)unused;
  gs_node_state s;
  node(&s);
  const double slower[R] = {14e-6, 14e-6, 14.1e-6, 14e-6};
  workloads(&s, slower);
  gs_health_finding f = judged(&s, "workloads", 3);
  assert_int_equal(f.state, GS_CHECK_FAIL);
  assert_non_null(strstr(f.action, "investigate: GPU 3 runs fuse at 71% ["));
}

/* Rates without step times (a document's figures only): no interval, so
 * not judged, whatever the point says. */
static void test_workloads_without_steps_inconclusive(void **unused) {
  (void)unused;
  gs_node_state s;
  node(&s);
  rate[0] = rate[1] = rate[2] = 100;
  rate[3] = 80;
  gs_health_finding f = judged(&s, "workloads", 3);
  assert_int_equal(f.state, GS_CHECK_PASS);
  assert_non_null(strstr(f.detail, "fuse 80% [-] inconclusive"));
}

/* GPU g with `ports` ports whose counters go from `before` to `after` on
 * port `port` over `window` seconds. */
static void links(gs_gpu_health *h, size_t ports, size_t port, gs_health_link_errors before,
                  gs_health_link_errors after, double window) {
  h->port_count = ports;
  for (size_t l = 0; l < ports; l++) {
    h->port_present[l] = h->link_up[l] = 1;
    h->link_errors[l] = (gs_health_link_errors){.has_counters = 1};
    h->link_errors_after[l] = (gs_health_link_errors){.has_counters = 1};
  }
  h->link_errors[port] = before;
  h->link_errors_after[port] = after;
  h->has_link_errors_after = 1;
  h->link_errors_seconds = window;
}

static void test_nvlink_small_crc_rate_passes(void **unused) {
  (void)unused;
  gs_node_state s;
  node(&s);
  // The healthy H200's level 2: 219 CRC flit errors in 16.3 s, 13.4/s.
  links(&health[0], 18, 2, (gs_health_link_errors){.has_counters = 1, .crc_flit = 4000},
        (gs_health_link_errors){.has_counters = 1, .crc_flit = 4219}, 16.3);
  gs_health_finding f = judged(&s, "nvlink_errors", 0);
  assert_int_equal(f.state, GS_CHECK_PASS);
  assert_string_equal(f.detail, "during the check (16.3 s): 0 replays, 0 recoveries, 219 CRC flit "
                                "errors (13.4/s), 0 CRC data errors (0.0/s); fail at 100 CRC "
                                "errors/s of a kind");
}

static void test_nvlink_high_crc_rate_fails(void **unused) {
  (void)unused;
  gs_node_state s;
  node(&s);
  links(&health[1], 18, 4, (gs_health_link_errors){.has_counters = 1, .crc_data = 10},
        (gs_health_link_errors){.has_counters = 1, .crc_data = 2010, .crc_flit = 5}, 10);
  gs_health_finding f = judged(&s, "nvlink_errors", 1);
  assert_int_equal(f.state, GS_CHECK_FAIL);
  assert_string_equal(f.action, "drain: GPU 1's NVLinks counted 200 CRC data errors per second "
                                "under load (limit 100/s; NVLink 4 the most)");
  // Exactly the limit fails (DCGM: a rate at or above it).
  links(&health[1], 18, 4, (gs_health_link_errors){.has_counters = 1},
        (gs_health_link_errors){.has_counters = 1, .crc_flit = 1000}, 10);
  assert_int_equal(judged(&s, "nvlink_errors", 1).state, GS_CHECK_FAIL);
  // Kinds are judged apart: 99/s of each passes.
  links(&health[1], 18, 4, (gs_health_link_errors){.has_counters = 1},
        (gs_health_link_errors){.has_counters = 1, .crc_flit = 990, .crc_data = 990}, 10);
  assert_int_equal(judged(&s, "nvlink_errors", 1).state, GS_CHECK_PASS);
}

static void test_nvlink_recovery_fails_replay_warns(void **unused) {
  (void)unused;
  gs_node_state s;
  node(&s);
  links(&health[2], 18, 7, (gs_health_link_errors){.has_counters = 1, .recovery = 2},
        (gs_health_link_errors){.has_counters = 1, .recovery = 3, .replay = 4}, 16);
  gs_health_finding f = judged(&s, "nvlink_errors", 2);
  assert_int_equal(f.state, GS_CHECK_FAIL);
  assert_string_equal(f.action, "drain: NVLink 7 of GPU 2 recovered 1 times under load");
  links(&health[2], 18, 7, (gs_health_link_errors){.has_counters = 1, .replay = 1},
        (gs_health_link_errors){.has_counters = 1, .replay = 4}, 16);
  f = judged(&s, "nvlink_errors", 2);
  assert_int_equal(f.state, GS_CHECK_WARN);
  assert_string_equal(f.action, "investigate: NVLink 7 of GPU 2 replayed 3 times under load (its "
                                "peer received corrupted flits)");
  // A counter that went down (a driver reload) counts nothing.
  links(&health[2], 18, 7, (gs_health_link_errors){.has_counters = 1, .recovery = 9},
        (gs_health_link_errors){.has_counters = 1, .recovery = 0}, 16);
  assert_int_equal(judged(&s, "nvlink_errors", 2).state, GS_CHECK_PASS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_workloads_alike_pass),
      cmocka_unit_test(test_workloads_noisy_round_inconclusive),
      cmocka_unit_test(test_workloads_slow_gpu_warns),
      cmocka_unit_test(test_workloads_much_slower_fails),
      cmocka_unit_test(test_workloads_without_steps_inconclusive),
      cmocka_unit_test(test_nvlink_small_crc_rate_passes),
      cmocka_unit_test(test_nvlink_high_crc_rate_fails),
      cmocka_unit_test(test_nvlink_recovery_fails_replay_warns),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
