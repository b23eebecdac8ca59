/* Tests of the report layer (src/report/): the analysis of the fixture
 * documents in tests/data/report/ against hand-computed values, rejection of
 * malformed, foreign and inconsistent documents, and the renderers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/result.h"
#include "report_fixture.h"
#include "report/render/render.h"
#include "report/analyze/report.h"

#define EPS 1e-12

static const gs_report_thresholds default_th = {GS_REPORT_MODERATE_DEFAULT,
                                                GS_REPORT_CRITICAL_DEFAULT};

static void assert_near(double expected, double actual) {
  if (fabs(expected - actual) > EPS * fmax(1.0, fabs(expected))) {
    print_error("expected %.17g, got %.17g\n", expected, actual);
    fail();
  }
}

static gs_report load1(const char *name, const gs_report_thresholds *th) {
  gs_report r;
  const char *paths[] = {fixture(name)};
  assert_int_equal(gs_report_load(paths, 1, th, &r), GS_OK);
  return r;
}

static int has_advice(const gs_report_series *s, const char *needle) {
  for (size_t i = 0; i < s->n_advice; i++)
    if (strstr(s->advice[i], needle)) return 1;
  return 0;
}

/* strong.json: 1 rank with steps {12, 13, 12.5, 12.5} ms and 1e6 points;
 * 2 ranks (2 runs) with steps {9.5, 10.5, 10, 10} ms, rank 0 {5.6, 8.4, 7, 7}
 * ms and rank 1 {9.5, 10.5, 10, 10} ms, 5e5 points each. */
static void test_strong_scaling(void **state) {
  (void)state;
  gs_report r = load1("strong.json", &default_th);
  assert_int_equal(r.n_series, 1);
  const gs_report_series *s = &r.series[0];
  assert_string_equal(s->workload, "voxelize");
  assert_string_equal(s->backend, "cpu");
  assert_string_equal(s->scaling, "strong");
  assert_non_null(strstr(s->options, "\"points\":50000"));
  assert_int_equal(s->n_rows, 2);

  const gs_report_row *one = &s->rows[0], *two = &s->rows[1];
  assert_int_equal(one->world_size, 1);
  assert_int_equal(one->step.n, 4);
  assert_near(0.0125, one->step.mean);
  assert_near(8e7, one->throughput);  // 1e6 / 0.0125, not the stored aggregate
  assert_near(1.0, one->speedup);
  assert_true(isnan(one->karp_flatt));
  assert_string_equal(one->status, "ok");
  assert_string_equal(one->verification, "passed");

  assert_int_equal(two->world_size, 2);
  assert_int_equal(two->step.n, 8);  // both runs pooled
  assert_near(0.010, two->step.mean);
  assert_near(1e8, two->throughput);
  assert_near(1.25, two->speedup);
  assert_near(0.625, two->efficiency);
  assert_near(0.6, two->karp_flatt);  // (1/1.25 - 1/2) / (1 - 1/2)
  assert_near(1.6e8, two->ideal_throughput);

  const gs_report_rank *r0 = &two->ranks[0], *r1 = &two->ranks[1];
  assert_int_equal(r0->n, 8);
  assert_string_equal(r0->clock, "wall");
  assert_near(0.007, r0->mean);
  assert_near(0.0056, r0->min);
  assert_near(0.0084, r0->max);
  assert_near(sqrt(4 * 0.0014 * 0.0014 / 7), r0->stddev);
  assert_near(0.5, r0->stable_share);  // 5.6 and 8.4 are 20% from 7
  assert_near(5e5 / 0.007, r0->throughput);
  assert_near(5e7, r1->throughput);
  assert_near(1.0, r1->stable_share);
  double median = (5e5 / 0.007 + 5e7) / 2;
  assert_near(median, two->rank_median);
  assert_near(3.0 / 17.0, r0->deviation);  // 30% apart, each 15/85 from the median
  assert_near(3.0 / 17.0, r1->deviation);
  assert_int_equal(r0->mark, GS_MARK_CRITICAL);
  assert_int_equal(r1->mark, GS_MARK_CRITICAL);
  assert_int_equal(two->straggler, 1);
  assert_near(10.0 / 7.0, two->spread_ratio);
  assert_near(sqrt(2.0) * 3.0 / 17.0, two->spread_cv);
  // Cold start uses the first run's first iteration (the second run's is 50 ms).
  assert_near(0.010 / 0.007, r0->cold_ratio);
  assert_false(r0->cold_flag);
  assert_near(2.5, r1->cold_ratio);
  assert_true(r1->cold_flag);

  assert_int_equal(s->verdict, GS_VERDICT_BENEFICIAL);
  assert_int_equal(s->verdict_world_size, 2);
  // Why not 2x (wall clock only): per iteration the slowest rank (rank 1)
  // sets the step: mean 10 ms; compute is the mean of both ranks (7 and 10
  // ms) = 8.5 ms, imbalance 10 - 8.5 = 1.5 ms; ideal 12.5 / 2 = 6.25 ms.
  const gs_report_breakdown *b = &two->breakdown;
  assert_true(b->available);
  assert_false(b->comm_measured);
  assert_false(b->device_clock);
  assert_int_equal(b->samples, 16);
  assert_near(0.010, b->step);
  assert_near(0.0085, b->compute);
  assert_near(0.0, b->comm);
  assert_near(0.0015, b->imbalance);
  assert_near(0.0, b->host);
  assert_near(0.00625, b->ideal_step);
  assert_near(0.0125, one->breakdown.ideal_step);
  // Against the 1-rank split (compute 12.5 ms): a rank's share of it is
  // 6.25 ms where it computes 8.5 ms (efficiency 73.5%, 2.25 ms lost,
  // more than the 1.5 ms of imbalance: the main loss).
  assert_true(b->has_losses);
  assert_near(0.00625, b->losses.compute_ideal);
  assert_near(6.25 / 8.5, b->losses.compute_efficiency);
  assert_near(0.00225, b->losses.lost[GS_PART_COMPUTE]);
  assert_near(0.0015, b->losses.lost[GS_PART_IMBALANCE]);
  assert_int_equal(b->losses.main_loss, GS_PART_COMPUTE);
  // One host ("fixture") holding both ranks.
  assert_int_equal(two->n_hosts, 1);
  assert_string_equal(two->hosts[0].name, "fixture");
  assert_near(5e5 / 0.007 + 5e7, two->hosts[0].throughput);
  assert_near(0.0085, two->hosts[0].mean);

  // Rank 1's first iteration is 2.50x its median but its first timed sample
  // 0.95x: the slow iteration was absorbed by warmup, so no warmup advice.
  assert_int_equal(s->n_advice, 3);
  assert_non_null(strstr(s->advice[0], "beneficial: speedup 1.25x [1.20, 1.29] at 2 ranks "
                                       "(interval >= 1.10; 95% interval over 1 + 2 runs)"));
  assert_non_null(strstr(s->advice[0], "efficiency 62.5% [60.2, 64.7]"));
  assert_non_null(strstr(s->advice[0], "Karp-Flatt serial fraction 0.600 [0.545, 0.660]"));
  assert_true(one->speedup_low == 1.0 && one->speedup_high == 1.0);
  assert_true(two->speedup_low > 1.19 && two->speedup_high < 1.30);
  assert_non_null(strstr(s->advice[1], "why not 2.0x at 2 ranks: the step is 10.0 ms against "
                                       "an ideal 6.25 ms"));
  assert_non_null(strstr(s->advice[1], "load imbalance 1.50 ms"));
  assert_non_null(strstr(s->advice[1], "the main loss is compute: 2.25 ms of the 3.75 ms lost (a "
                                       "rank computes 8.50 ms per step on average where its share "
                                       "of the 1-rank compute is 6.25 ms: compute efficiency "
                                       "73.5%"));
  assert_non_null(strstr(s->advice[2], "consider dynamic load balancing"));
  assert_non_null(strstr(s->advice[2], "rank 1 is the straggler"));
  assert_non_null(strstr(s->advice[2], "17.6%"));
  assert_non_null(strstr(s->advice[2], "at 50.0 Mpoints/s"));  // SI prefix, never 5e+07
  assert_true(two->ranks[1].cold_flag);
  assert_false(gs_report_needs_warmup(&two->ranks[1]));
  assert_false(has_advice(s, "warm up"));
  assert_false(has_advice(s, "investigate"));
  gs_report_free(&r);
}

/* cold_ranks.json: strong.json with the first timed sample of the first run
 * at 2 ranks slow on both ranks: rank 0 21 ms (median 7 ms: 3.00x), rank 1
 * 25 ms (median 10 ms: 2.50x). One sentence names both ranks and the range. */
static void test_cold_start_grouped(void **state) {
  (void)state;
  gs_report r = load1("cold_ranks.json", &default_th);
  const gs_report_series *s = &r.series[0];
  const gs_report_row *two = &s->rows[1];
  assert_near(3.0, two->ranks[0].first_sample_ratio);
  assert_near(2.5, two->ranks[1].first_sample_ratio);
  assert_true(gs_report_needs_warmup(&two->ranks[0]));
  assert_true(gs_report_needs_warmup(&two->ranks[1]));
  assert_false(gs_report_needs_warmup(&s->rows[0].ranks[0]));
  size_t lines = 0;
  for (size_t i = 0; i < s->n_advice; i++) lines += strstr(s->advice[i], "warm up") != NULL;
  assert_int_equal(lines, 1);
  assert_true(has_advice(s, "warm up longer before timing: the first timed sample is "
                            "2.50x-3.00x the median (slow above 2x) on ranks 0, 1 at 2 ranks "
                            "(2 of 3 rank measurements)"));
  gs_report_free(&r);
}

static void test_thresholds_configurable(void **state) {
  (void)state;
  gs_report_thresholds th = {0.05, 0.20};
  gs_report r = load1("strong.json", &th);
  const gs_report_row *two = &r.series[0].rows[1];
  assert_int_equal(two->ranks[0].mark, GS_MARK_MODERATE);
  assert_int_equal(two->ranks[1].mark, GS_MARK_MODERATE);
  assert_int_equal(two->straggler, -1);
  assert_int_equal(r.series[0].n_advice, 2);  // verdict, why not 2x
  assert_false(has_advice(&r.series[0], "load balancing"));
  gs_report_free(&r);

  th = (gs_report_thresholds){0.18, 0.20};
  r = load1("strong.json", &th);
  assert_int_equal(r.series[0].rows[1].ranks[1].mark, GS_MARK_GOOD);
  gs_report_free(&r);

  const char *paths[] = {fixture("strong.json")};
  th = (gs_report_thresholds){0.20, 0.20};
  assert_int_equal(gs_report_load(paths, 1, &th, &r), GS_ERR_USAGE);
  th = (gs_report_thresholds){0.0, 0.20};
  assert_int_equal(gs_report_load(paths, 1, &th, &r), GS_ERR_USAGE);
}

/* weak.json has other workload options and weak scaling: its own series. */
static void test_series_never_mixed(void **state) {
  (void)state;
  gs_report r;
  const char *paths[] = {fixture("strong.json"), fixture("weak.json")};
  assert_int_equal(gs_report_load(paths, 2, &default_th, &r), GS_OK);
  assert_int_equal(r.n_series, 2);
  const gs_report_series *w = &r.series[1];
  assert_string_equal(w->scaling, "weak");
  assert_non_null(strstr(w->options, "\"points\":1000000"));
  assert_int_equal(w->n_rows, 2);
  assert_near(1e8, w->rows[1].throughput);  // 2e6 points / 0.02 s
  assert_near(1.0, w->rows[1].speedup);
  assert_near(0.5, w->rows[1].efficiency);
  assert_near(1.0, w->rows[1].karp_flatt);
  assert_near(2e8, w->rows[1].ideal_throughput);
  assert_int_equal(w->rows[1].ranks[0].mark, GS_MARK_GOOD);
  assert_int_equal(w->rows[1].straggler, -1);
  assert_int_equal(w->verdict, GS_VERDICT_MARGINAL);
  // The strong series is untouched by the weak file.
  assert_int_equal(r.series[0].n_rows, 2);
  assert_near(1.25, r.series[0].rows[1].speedup);
  gs_report_free(&r);
}

static void test_failed_rank(void **state) {
  (void)state;
  gs_report r = load1("failed.json", &default_th);
  const gs_report_series *s = &r.series[0];
  const gs_report_row *two = &s->rows[1];
  assert_string_equal(two->status, "cuda");
  assert_int_equal(two->step.n, 1);
  assert_int_equal(two->step_nulls, 1);
  assert_true(isnan(two->speedup));  // failed rows are not compared
  assert_string_equal(two->ranks[1].status, "cuda");
  assert_int_equal(two->ranks[1].n, 1);
  assert_int_equal(s->verdict, GS_VERDICT_NONE);
  assert_true(has_advice(s, "no scaling verdict"));
  assert_true(has_advice(s, "investigate rank 1: status cuda at 2 ranks"));
  assert_true(has_advice(s, "illegal memory access"));
  gs_report_free(&r);
}

/* Each bad input is refused with its status and an error naming the file. */
static void test_rejects_bad_input(void **state) {
  (void)state;
  static const struct {
    const char *name;
    gs_status status;
    const char *message;
  } cases[] = {
      {"malformed.json", GS_ERR_FORMAT, "invalid JSON"},
      {"foreign.json", GS_ERR_FORMAT, "unsupported schema \"gpuscale/result/v2\""},
      {"not_result.json", GS_ERR_FORMAT, "not a gpuscale result document"},
      {"mismatched.json", GS_ERR_FORMAT, "has 1 ranks but world_size is 2"},
      {"bad_sample.json", GS_ERR_FORMAT, "step_seconds[1] must be a number or null"},
      {"no-such-file.json", GS_ERR_IO, "cannot read"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gs_report r;
    const char *paths[] = {fixture("strong.json"), fixture(cases[i].name)};
    assert_int_equal(gs_report_load(paths, 2, &default_th, &r), cases[i].status);
    assert_non_null(strstr(gs_last_error(), cases[i].name));
    assert_non_null(strstr(gs_last_error(), cases[i].message));
    assert_int_equal(r.n_series, 0);  // nothing left behind
  }
  gs_report r;
  assert_int_equal(gs_report_load(NULL, 0, &default_th, &r), GS_ERR_USAGE);
}

/* idle_telemetry.json: two_host.json with 100 telemetry samples per rank
 * (10 s): the timed steps fill 3.2% of it, so its low utilization is the
 * GPU idling around them, not a small batch. */
static void test_idle_telemetry(void **state) {
  (void)state;
  gs_report r = load1("idle_telemetry.json", &default_th);
  const gs_report_series *s = &r.series[0];
  assert_near(10.0, s->rows[1].ranks[0].telemetry_seconds);
  assert_true(has_advice(s, "GPU utilization at 2 ranks is 32.5% over the whole measurement "
                            "(10.0 s of telemetry per GPU), of which the timed steps fill only "
                            "3.2%"));
  assert_false(has_advice(s, "consider a larger batch size"));
  gs_report_free(&r);
}

/* two_host.json: llm on 1 and 2 GPUs; at 2 ranks rank 0 runs on node-a
 * (device 60 ms, wall 65 ms, comm 10 ms, 4 ok requests of 100 tokens) and
 * rank 1 on node-b (device 200, 70, 70, 70 ms: a slow first sample; wall
 * +5 ms; 2 of 4 requests ok, 1 failed, 1 timed out, the cold one 200 ms).
 * Telemetry: 35% and 30% utilization, 20 and 18 GiB of 80 GiB, over 4
 * samples of 0.1 s per rank (the timed steps, 0.24 and 0.41 s, fill 81%). */
static void test_two_hosts(void **state) {
  (void)state;
  gs_report r = load1("two_host.json", &default_th);
  const gs_report_series *s = &r.series[0];
  const gs_report_row *two = &s->rows[1];
  // Step mean (200 + 3 x 70) / 4 = 102.5 ms; 8 requests per step.
  assert_near(8.0 / 0.1025, two->throughput);
  assert_near((8.0 / 0.1025) / 80.0, two->speedup);
  // 0.976 in [0.95, 1.1), but one run of 4 steps a side bounds it only to
  // [0.60, 1.43]: inconclusive.
  assert_int_equal(s->verdict, GS_VERDICT_INCONCLUSIVE);
  // Why not 2x, per (rank, iteration): the wall step is 205 ms in the first
  // iteration and 75 ms after; mean over the 8 pairs (2 x 205 + 6 x 75) / 8.
  const gs_report_breakdown *b = &two->breakdown;
  assert_true(b->comm_measured);
  assert_true(b->device_clock);
  assert_near(0.1075, b->step);
  assert_near((4 * 0.05 + 0.19 + 3 * 0.06) / 8, b->compute);  // device - comm
  assert_near(0.01, b->comm);
  assert_near(0.005, b->host);                                 // wall - device
  assert_near((0.14 + 3 * 0.01) / 8, b->imbalance);            // rank 0 waits for rank 1
  assert_near(b->step, b->compute + b->comm + b->host + b->imbalance);
  assert_near(0.11 / 2, b->ideal_step);                        // 1-rank wall step / 2
  // Ranks: requests, tokens, telemetry, cold start.
  const gs_report_rank *r0 = &two->ranks[0], *r1 = &two->ranks[1];
  assert_string_equal(r0->host, "node-a");
  assert_string_equal(r1->host, "node-b");
  assert_int_equal(r1->requests, 4);
  assert_int_equal(r1->requests_ok, 2);
  assert_int_equal(r1->requests_failed, 1);
  assert_int_equal(r1->requests_timed_out, 1);
  assert_near(0.5, r1->success_rate);
  assert_near(1.0, r0->success_rate);
  assert_near(400.0 / 0.24, r0->tokens_per_second);
  assert_near(200.0 / 0.41, r1->tokens_per_second);
  assert_near(0.20 / 0.07, r1->first_sample_ratio);
  assert_true(r1->first_sample_flag);
  assert_false(r0->first_sample_flag);
  assert_int_equal(r1->cold_outliers, 1);  // 200 ms > 2 x 70 ms
  assert_int_equal(r0->cold_outliers, 0);
  assert_near(0.35, r0->utilization);
  assert_near(20.0 * 1073741824.0, r0->memory_used_bytes);
  assert_near(80.0 * 1073741824.0, r0->memory_total_bytes);
  assert_int_equal(r1->mark, GS_MARK_CRITICAL);
  assert_int_equal(two->straggler, 1);
  // Hosts: one rank each, 66.7 and 39.0 requests/s, 26.2% from their median.
  assert_int_equal(two->n_hosts, 2);
  const gs_report_host *a = &two->hosts[0], *hb = &two->hosts[1];
  assert_string_equal(a->name, "node-a");
  assert_string_equal(hb->name, "node-b");
  assert_near(4.0 / 0.06, a->throughput);
  assert_near(4.0 / 0.1025, hb->throughput);
  double median = (4.0 / 0.06 + 4.0 / 0.1025) / 2;
  assert_near((4.0 / 0.06 - median) / median, a->deviation);
  assert_near(0.5, hb->success_rate);
  assert_near(0.1025, hb->mean);
  assert_near(0.065, hb->stddev);  // samples 200, 70, 70, 70 ms
  assert_near(0.07, hb->min);
  assert_near(0.2, hb->max);
  assert_int_equal(hb->cold_ranks, 1);
  assert_int_equal(hb->mark, GS_MARK_CRITICAL);
  assert_true(has_advice(s, "inconclusive: speedup 0.98x [0.60, 1.43] at 2 ranks (interval across "
                            "0.95; 95% interval over 1 + 1 runs)"));
  assert_true(has_advice(s, "why not 2.0x at 2 ranks: the step is 107 ms against an ideal "
                            "55.0 ms"));
  assert_true(has_advice(s, "consider a larger batch size: at 2 ranks mean GPU utilization is "
                            "32.5% and memory use 23.8% of 80 GiB"));
  assert_true(has_advice(s, "rank 1 is the straggler"));
  assert_true(has_advice(s, "investigate rank 1 (host node-b): 2 of 4 requests did not succeed "
                            "at 2 GPUs (1 failed, 1 timed out; success rate 50.0%)"));
  // The first timed sample (200 ms) is 2.86x the median (70 ms): warm up longer.
  assert_true(gs_report_needs_warmup(r1));
  assert_false(gs_report_needs_warmup(r0));
  assert_true(has_advice(s, "warm up longer before timing: the first timed sample is 2.86x the "
                            "median (slow above 2x) on rank 1 at 2 GPUs (1 of 3 rank "
                            "measurements)"));
  assert_true(has_advice(s, "cold requests: 1 of 1 above 2x the median latency on rank 1 at 2 GPUs"));
  gs_report_free(&r);

  const char *bad[] = {fixture("bad_comm.json")};
  assert_int_equal(gs_report_load(bad, 1, &default_th, &r), GS_ERR_FORMAT);
  assert_non_null(strstr(gs_last_error(), "comm_seconds must be an array or null"));
}

/* coll.json: allreduce at 1 MiB, 16 MiB and 256 MiB with 50, 120 and 180
 * GB/s bus bandwidth; the topology's NVLink figure is 450 GB/s. */
static void test_collective(void **state) {
  (void)state;
  gs_report r = load1("coll.json", &default_th);
  const gs_report_series *s = &r.series[0];
  assert_int_equal(s->n_rows, 3);
  assert_true(s->rows[2].collective.present);
  assert_string_equal(s->rows[2].collective.op, "allreduce");
  assert_near(268435456.0, s->rows[2].collective.bytes);
  assert_near(180e9, s->rows[2].collective.busbw);
  assert_near(450e9, s->rows[2].collective.link_bandwidth);
  assert_int_equal(s->verdict, GS_VERDICT_NONE);
  assert_int_equal(s->n_advice, 1);
  assert_non_null(strstr(s->advice[0], "investigate the transport: collective allreduce reaches "
                                       "at best 180 GB/s"));
  assert_non_null(strstr(s->advice[0], "40.0% of the link's theoretical 450 GB/s"));
  gs_report_free(&r);
}

/* --price: parsing, the whole-word rule, and the cost columns. */
static void test_prices(void **state) {
  (void)state;
  gs_report_prices p;
  assert_int_equal(gs_report_parse_prices("H100=7,A100=5,H100 NVL=9", &p), GS_OK);
  assert_int_equal(p.n, 3);
  assert_near(7.0, gs_report_price_of(&p, "NVIDIA H100 80GB HBM3"));
  assert_near(9.0, gs_report_price_of(&p, "NVIDIA H100 NVL"));  // the longest key wins
  assert_near(5.0, gs_report_price_of(&p, "nvidia a100-sxm4-80gb"));
  assert_true(isnan(gs_report_price_of(&p, "NVIDIA H1000")));  // not a whole word
  assert_true(isnan(gs_report_price_of(&p, "NVIDIA H200")));
  static const char *const bad[] = {"H100", "=7", "H100=", "H100=-1", "H100=x", "H100=7,",
                                    "H100=7,h100=8", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(gs_report_parse_prices(bad[i], &p), GS_ERR_USAGE);
    assert_non_null(strstr(gs_last_error(), "--price"));
  }

  assert_int_equal(gs_report_parse_prices("H100=7", &p), GS_OK);
  gs_report r;
  const char *paths[] = {fixture("two_host.json")};
  assert_int_equal(gs_report_load_with(paths, 1, &default_th, &p, 0, &r), GS_OK);
  const gs_report_row *two = &r.series[0].rows[1];
  assert_near(14.0, two->cost.price_per_hour);
  assert_near(two->throughput * 3600.0 / 14.0, two->cost.items_per_dollar);
  assert_near(1e6 * 14.0 / (two->throughput * 3600.0), two->cost.dollars_per_million);
  assert_near(80.0 * 3600.0 / 7.0, r.series[0].rows[0].cost.items_per_dollar);
  gs_report_free(&r);
  assert_int_equal(gs_report_parse_prices("A100=5", &p), GS_OK);
  assert_int_equal(gs_report_load_with(paths, 1, &default_th, &p, 0, &r), GS_OK);
  assert_true(isnan(r.series[0].rows[1].cost.price_per_hour));  // no H100 price: n/a
  assert_string_equal(r.series[0].rows[1].cost.gpu_model, "NVIDIA H100 80GB HBM3");
  gs_report_free(&r);
}

/* Renders to a temp file and returns its contents (caller frees). */
static char *render(const gs_report *r, gs_report_format f) {
  FILE *tmp = tmpfile();
  assert_non_null(tmp);
  assert_int_equal(gs_report_render(tmp, r, f), GS_OK);
  long size = ftell(tmp);
  assert_true(size > 0);
  rewind(tmp);
  char *text = calloc((size_t)size + 1, 1);
  assert_non_null(text);
  assert_int_equal(fread(text, 1, (size_t)size, tmp), (size_t)size);
  fclose(tmp);
  return text;
}

static void test_renderers(void **state) {
  (void)state;
  gs_report r = load1("strong.json", &default_th);
  char *text = render(&r, GS_REPORT_TEXT);
  assert_non_null(strstr(text, "strong scaling"));
  assert_non_null(strstr(text, "1.25x"));
  assert_non_null(strstr(text, "62.5%"));
  assert_non_null(strstr(text, "0.600"));
  assert_non_null(strstr(text, "critical (straggler)"));
  free(text);

  text = render(&r, GS_REPORT_MARKDOWN);
  assert_non_null(strstr(text, "| ranks | file |"));
  assert_non_null(strstr(text, "|---:|"));
  free(text);

  // CSV: one row per measurement (1 and 2 ranks), the identity first.
  text = render(&r, GS_REPORT_CSV);
  size_t lines = 0;
  for (const char *p = text; *p; p++) lines += *p == '\n';
  assert_int_equal(lines, 1 + 2);
  assert_non_null(strstr(text, "file,measurement,workload,backend,scaling,variant,scenario,task,"
                               "split_policy,tensor_parallel,world_size,op,size_bytes,dtype,redop,"
                               "root,form,workload_options,status,"));
  assert_non_null(strstr(text, ",ok,passed,8,0.01,0.01,"));
  assert_non_null(strstr(text, ",1000000,points,100000000,160000000,1.25,"));
  free(text);

  // With GS_REPORT_CSV_SAMPLES: 1 rank x 4 iterations x (step + 1 rank) +
  // 2 runs x 4 x (step + 2).
  FILE *tmp = tmpfile();
  assert_non_null(tmp);
  assert_int_equal(gs_report_render_with(tmp, &r, GS_REPORT_CSV, NULL, GS_REPORT_CSV_SAMPLES),
                   GS_OK);
  long size = ftell(tmp);
  rewind(tmp);
  text = calloc((size_t)size + 1, 1);
  assert_non_null(text);
  assert_int_equal(fread(text, 1, (size_t)size, tmp), (size_t)size);
  fclose(tmp);
  lines = 0;
  for (const char *p = text; *p; p++) lines += *p == '\n';
  assert_int_equal(lines, 1 + 8 + 24);
  assert_non_null(strstr(text, ",workload_options,run,iteration,rank,clock,time_s\n"));
  assert_non_null(strstr(text, ",1,3,step,,0.01\n"));
  assert_non_null(strstr(text, ",0,0,0,wall,0.0056\n"));
  free(text);

  text = render(&r, GS_REPORT_JSON);
  cJSON *doc = cJSON_Parse(text);
  assert_non_null(doc);
  const cJSON *row = cJSON_GetArrayItem(
      cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "series"), 0), "rows"), 1);
  assert_near(1.25, cJSON_GetObjectItem(row, "speedup")->valuedouble);
  assert_near(0.6, cJSON_GetObjectItem(row, "karp_flatt")->valuedouble);
  assert_int_equal(
      cJSON_GetObjectItem(cJSON_GetObjectItem(row, "symmetry"), "straggler")->valueint, 1);
  const cJSON *rec = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "series"), 0),
                                         "recommendation");
  assert_string_equal(cJSON_GetObjectItem(rec, "verdict")->valuestring, "beneficial");
  // The 1-rank row has no Karp-Flatt value: null, never a made-up number.
  const cJSON *first = cJSON_GetArrayItem(
      cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "series"), 0), "rows"), 0);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(first, "karp_flatt")));
  cJSON_Delete(doc);
  free(text);
  gs_report_free(&r);
}

/* Relative closeness for numbers a writer rounded differently (1e-9). */
static void assert_close(double expected, double actual) {
  if (!(fabs(expected - actual) <= 1e-9 * fmax(1.0, fabs(expected)))) {
    print_error("expected %.17g, got %.17g\n", expected, actual);
    fail();
  }
}

static const cJSON *measurement_of(const gs_report *r, const gs_report_row *row) {
  return cJSON_GetArrayItem(cJSON_GetObjectItem(r->docs[row->file], "measurements"),
                            (int)row->measurement);
}

/* llm_cpu.json (gpuscale scale llm --backend cpu --ranks 2 --model tiny
 * --samples 6 --batch 2): request-based rows. Throughput is the run's
 * tokens over its run time (what the run printed: llm.tokens_per_second),
 * never tokens over one mean latency; per rank likewise over its busy time. */
static void test_llm_requests(void **state) {
  (void)state;
  gs_report r = load1("llm_cpu.json", &default_th);
  assert_int_equal(r.n_series, 1);
  const gs_report_series *s = &r.series[0];
  assert_string_equal(s->label, "scenario offline");
  assert_int_equal(s->n_rows, 2);
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    const cJSON *llm = cJSON_GetObjectItem(measurement_of(&r, row), "llm");
    assert_true(row->requests.present);
    assert_string_equal(row->requests.scenario, "offline");
    assert_close(cJSON_GetObjectItem(llm, "generated_tokens")->valuedouble,
                 row->requests.generated_tokens);
    assert_close(cJSON_GetObjectItem(llm, "tokens_per_second")->valuedouble, row->throughput);
    // The old formula (tokens of the stream / mean latency) is far off.
    assert_true(fabs((double)row->items_per_step / row->step.mean - row->throughput) >
                0.05 * row->throughput);
    assert_false(row->breakdown.available);
    const cJSON *ranks = cJSON_GetObjectItem(llm, "ranks");
    for (size_t k = 0; k < row->n_ranks; k++) {
      double recorded = cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, (int)k),
                                            "tokens_per_second")->valuedouble;
      assert_close(recorded, row->ranks[k].throughput);
      assert_close(recorded, row->ranks[k].tokens_per_second);
    }
    // TTFT and TPOT from the requests match the run's own statistics.
    const cJSON *ttft = cJSON_GetObjectItem(llm, "ttft_seconds");
    const cJSON *tpot = cJSON_GetObjectItem(llm, "tpot_seconds");
    assert_int_equal(row->requests.ttft.n, cJSON_GetObjectItem(ttft, "n")->valueint);
    assert_close(cJSON_GetObjectItem(ttft, "p50")->valuedouble, row->requests.ttft.p50);
    assert_close(cJSON_GetObjectItem(ttft, "p99")->valuedouble, row->requests.ttft.p99);
    assert_close(cJSON_GetObjectItem(tpot, "p50")->valuedouble, row->requests.tpot.p50);
    assert_close(cJSON_GetObjectItem(tpot, "p99")->valuedouble, row->requests.tpot.p99);
  }
  assert_close(s->rows[1].throughput / s->rows[0].throughput, s->rows[1].speedup);
  assert_true(has_advice(s, "does not apply to request-based measurements"));
  assert_false(has_advice(s, "exposed communication"));
  char *text = render(&r, GS_REPORT_TEXT);
  assert_non_null(strstr(text, "TTFT p50"));
  assert_non_null(strstr(text, "scenario offline"));
  free(text);
  gs_report_free(&r);
}

/* llm_server_cpu.json (gpuscale run llm --backend cpu --ranks 2 --model
 * tiny --samples 8 --scenario server): arrivals pace the ranks, so their
 * busy tokens/s (shown) are not compared: no speed marks, no straggler. */
static void test_llm_server(void **state) {
  (void)state;
  gs_report r = load1("llm_server_cpu.json", &default_th);
  assert_int_equal(r.n_series, 1);
  assert_string_equal(r.series[0].label, "scenario server");
  const gs_report_row *row = &r.series[0].rows[0];
  const cJSON *llm = cJSON_GetObjectItem(measurement_of(&r, row), "llm");
  assert_close(cJSON_GetObjectItem(llm, "tokens_per_second")->valuedouble, row->throughput);
  assert_int_equal(row->straggler, -1);
  for (size_t k = 0; k < row->n_ranks; k++) {
    assert_true(isnan(row->ranks[k].throughput));
    assert_true(row->ranks[k].tokens_per_second > 0);
    assert_int_equal(row->ranks[k].mark, GS_MARK_GOOD);  // from the success rate alone
  }
  gs_report_free(&r);
}

/* split_cpu.json (gpuscale run resample --backend cpu --ranks 2 --split
 * proportional --inject slow:rank=1,factor=3): the even and the
 * proportional measurement at 2 ranks are two series, never one; the gain
 * is named; rank 1's slowdown is named as injected. */
static void test_split_and_faults(void **state) {
  (void)state;
  gs_report r = load1("split_cpu.json", &default_th);
  assert_int_equal(r.n_series, 2);
  const gs_report_series *even = &r.series[0], *prop = &r.series[1];
  assert_string_equal(even->split, "even");
  assert_string_equal(prop->split, "proportional");
  assert_int_equal(even->n_rows, 1);
  assert_int_equal(prop->n_rows, 1);
  const gs_report_row *e = &even->rows[0], *p = &prop->rows[0];
  assert_string_equal(e->placement.split_units, "16,16");
  assert_string_not_equal(p->placement.split_units, "16,16");
  char gain[128];
  snprintf(gain, sizeof gain, "gain %.2fx", p->throughput / e->throughput);
  assert_true(has_advice(prop, gain));
  assert_true(has_advice(prop, "split at 2 ranks: even"));
  for (const gs_report_row *row = e; row; row = row == e ? p : NULL) {
    assert_string_equal(row->placement.faults, "slow rank 1 factor=3");
    assert_false(row->ranks[0].injected);
    assert_true(row->ranks[1].injected);
    assert_int_equal(row->straggler, 1);
  }
  assert_true(has_advice(even, "injected straggler: at 2 ranks rank 1"));
  assert_false(has_advice(even, "consider dynamic load balancing"));
  char *text = render(&r, GS_REPORT_TEXT);
  assert_non_null(strstr(text, "straggler rank 1 (injected)"));
  assert_non_null(strstr(text, "critical (straggler, injected)"));
  assert_non_null(strstr(text, "injected: slow rank 1 factor=3"));
  free(text);
  gs_report_free(&r);
}

/* mlp_variants.json (gpuscale scale mlp --backend cpu --ranks 2
 * --batch-sizes 8,32): one series per batch size, each scaled against its
 * own 1-rank row. */
static void test_variants(void **state) {
  (void)state;
  gs_report r = load1("mlp_variants.json", &default_th);
  assert_int_equal(r.n_series, 2);
  assert_string_equal(r.series[0].label, "variant batch=8");
  assert_string_equal(r.series[1].label, "variant batch=32");
  for (size_t i = 0; i < 2; i++) {
    const gs_report_series *s = &r.series[i];
    assert_int_equal(s->n_rows, 2);
    assert_int_equal(s->rows[0].world_size, 1);
    assert_int_equal(s->rows[1].world_size, 2);
    assert_close(s->rows[1].throughput / s->rows[0].throughput, s->rows[1].speedup);
  }
  gs_report_free(&r);
}

/* plan_cpu.json (gpuscale plan --backend cpu --task '0:resample --samples
 * 100' --task 1:fuse): one series per task with the task's own options,
 * and the system total of the tasks. */
static void test_plan(void **state) {
  (void)state;
  gs_report r = load1("plan_cpu.json", &default_th);
  assert_int_equal(r.n_series, 2);
  assert_string_equal(r.series[0].label, "task 0 (0:resample --samples 100)");
  assert_string_equal(r.series[1].label, "task 1 (1:fuse)");
  assert_non_null(strstr(r.series[0].options, "\"samples\":100"));
  assert_int_equal(r.series[0].rows[0].placement.task, 0);
  assert_int_equal(r.series[1].rows[0].placement.task, 1);
  char *text = render(&r, GS_REPORT_TEXT);
  assert_non_null(strstr(text, "Plan plan_cpu.json"));
  char total[96], rate[32];
  double sum = r.series[0].rows[0].throughput + r.series[1].rows[0].throughput;
  gs_format_rate(sum, rate, sizeof rate);
  snprintf(total, sizeof total, "System total: %svalues/s", rate);
  assert_non_null(strstr(text, total));
  free(text);
  gs_report_free(&r);
}

/* HTML: one self-contained document, escaped text, no external resource. */
static void test_html(void **state) {
  (void)state;
  gs_report r = load1("two_host.json", &default_th);
  char *text = render(&r, GS_REPORT_HTML);
  assert_non_null(strstr(text, "<!DOCTYPE html>"));
  assert_non_null(strstr(text, "</html>"));
  assert_non_null(strstr(text, "<td>node-b</td>"));
  assert_non_null(strstr(text, "{&quot;batch&quot;:8,&quot;model&quot;:&quot;fixture&quot;}"));
  assert_null(strstr(text, "<script"));
  assert_null(strstr(text, "src="));
  assert_null(strstr(text, "href="));
  free(text);
  gs_report_free(&r);
}

/* Writes `doc` to a new temporary file; its path into `path`. */
static void write_temp(const cJSON *doc, char *path, size_t size) {
  snprintf(path, size, "/tmp/gs_test_report_XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  char *text = cJSON_Print(doc);
  assert_non_null(f);
  assert_non_null(text);
  assert_true(fputs(text, f) >= 0);
  assert_int_equal(fclose(f), 0);
  cJSON_free(text);
}

/* The GPUs one rank record spans (docs/result-schema.md, "parallelism"):
 * tp2-b1.json, an llm document of 2 x H200 written before the record
 * (llm.tensor_parallel 2, world size 2, one replica), reads as 2 GPUs per
 * rank through the fallback; the same document with the record instead
 * reads the same; where both are present the record wins; llm.pipeline's
 * stages divide the record's GPUs (tp x pp). */
static void test_parallelism_record(void **state) {
  (void)state;
  const char *old_path =
      source_path("../docs/results/2026-11-24-h200x2-session3/llm/tp2-b1.json");
  gs_report a;
  assert_int_equal(gs_report_load(&old_path, 1, &default_th, &a), GS_OK);
  const gs_report_row *ra = &a.series[0].rows[0];
  assert_int_equal(ra->world_size, 2);
  assert_int_equal(ra->gpus_per_rank, 2);
  assert_int_equal(ra->n_ranks, 1);
  assert_string_equal(ra->parallel_option, "tp");

  cJSON *doc = NULL;
  assert_int_equal(gs_result_read(old_path, &doc), GS_OK);
  cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "measurements"), 0);
  cJSON_DeleteItemFromObject(cJSON_GetObjectItem(m, "llm"), "tensor_parallel");
  cJSON *par = cJSON_AddObjectToObject(m, "parallelism");
  cJSON *gpr = cJSON_AddNumberToObject(par, "gpus_per_rank", 2);
  cJSON_AddStringToObject(par, "option", "tp");
  char path[64];
  write_temp(doc, path, sizeof path);
  const char *new_path = path;
  gs_report b;
  assert_int_equal(gs_report_load(&new_path, 1, &default_th, &b), GS_OK);
  const gs_report_row *rb = &b.series[0].rows[0];
  assert_int_equal(rb->gpus_per_rank, 2);
  assert_int_equal(rb->n_ranks, 1);
  assert_string_equal(rb->parallel_option, "tp");
  assert_near(ra->throughput, rb->throughput);
  assert_near(ra->ranks[0].throughput, rb->ranks[0].throughput);
  gs_report_free(&b);

  // The record says 1 GPU per rank while llm.tensor_parallel says 2: the
  // record is read, so the one replica's record is one rank short.
  cJSON_AddNumberToObject(cJSON_GetObjectItem(m, "llm"), "tensor_parallel", 2);
  cJSON_SetNumberValue(gpr, 1);
  assert_int_equal(remove(path), 0);
  write_temp(doc, path, sizeof path);
  assert_int_equal(gs_report_load(&new_path, 1, &default_th, &b), GS_ERR_FORMAT);
  assert_non_null(strstr(gs_last_error(), "has 1 ranks but world_size is 2"));
  // llm --pp 2: the replica's 2 GPUs are 2 stages (tp 1); more stages than GPUs is refused.
  cJSON_SetNumberValue(gpr, 2);
  cJSON *stages = cJSON_AddNumberToObject(
      cJSON_AddObjectToObject(cJSON_GetObjectItem(m, "llm"), "pipeline"), "stages", 2);
  assert_int_equal(remove(path), 0);
  write_temp(doc, path, sizeof path);
  assert_int_equal(gs_report_load(&new_path, 1, &default_th, &b), GS_OK);
  assert_int_equal(b.series[0].rows[0].gpus_per_rank, 2);
  assert_int_equal(b.series[0].rows[0].pipeline_stages, 2);
  gs_report_free(&b);
  cJSON_SetNumberValue(stages, 4);
  assert_int_equal(remove(path), 0);
  write_temp(doc, path, sizeof path);
  assert_int_equal(gs_report_load(&new_path, 1, &default_th, &b), GS_ERR_FORMAT);
  assert_non_null(strstr(gs_last_error(), "llm.pipeline"));
  assert_int_equal(remove(path), 0);
  cJSON_Delete(doc);
  gs_report_free(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_strong_scaling),     cmocka_unit_test(test_cold_start_grouped),
      cmocka_unit_test(test_thresholds_configurable),
      cmocka_unit_test(test_series_never_mixed), cmocka_unit_test(test_failed_rank),
      cmocka_unit_test(test_rejects_bad_input),  cmocka_unit_test(test_renderers),
      cmocka_unit_test(test_two_hosts),          cmocka_unit_test(test_idle_telemetry),          cmocka_unit_test(test_collective),
      cmocka_unit_test(test_prices),             cmocka_unit_test(test_html),
      cmocka_unit_test(test_llm_requests),       cmocka_unit_test(test_split_and_faults),
      cmocka_unit_test(test_variants),           cmocka_unit_test(test_plan),
      cmocka_unit_test(test_llm_server),         cmocka_unit_test(test_parallelism_record),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
