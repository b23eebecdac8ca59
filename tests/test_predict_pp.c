/* Tests of llm's pipelined replicas in predict's request model
 * (report/predict/model.c, requests.c): the round of a layout (tp x pp x
 * micro-batches) against hand-worked values, stage transfers from a
 * measured send/recv curve within a node and the network's figures across
 * nodes, the fit recovering the round and the share of a call that does
 * not shrink with its rows from measurements of several layouts, the
 * prediction's interval from the runs' intervals, and a pipelined
 * measurement that is not taken for tensor parallelism. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/coll_model.h"
#include "report/predict/predict.h"

#define NEAR(a, b, rel) assert_true(fabs((a) - (b)) <= (rel) * fabs(b) + 1e-15)

/* 64 requests in batches of 8, 2 layers of width 1024, 16 prompt tokens and
 * 10 decode steps; a round of one GPU computes 0.2 s, 3/4 of a stage's call
 * does not shrink with its rows. */
static gs_predict_model truth(void) {
  gs_predict_model md = {.kind = GS_PREDICT_REQUESTS, .samples = 64, .batch = 8,
                         .measured_tp = 1, .measured_pp = 1, .layers = 2, .hidden = 1024,
                         .element_bytes = 2, .decode_steps = 10, .prefill_tokens = 16,
                         .round_seconds = 0.2, .fixed_share = 0.75, .tokens_per_run = 1000};
  md.round_low = md.round_high = md.round_seconds;
  md.share_low = md.share_high = md.fixed_share;
  return md;
}

/* A send/recv within a node of 1 us + 0.1 ns per byte, measured at 1 KB
 * and 10 MB (a straight line: interpolation is exact between them). */
static gs_coll_curve sendrecv_curve(void) {
  const double bytes[2] = {1e3, 1e7};
  const double secs[2] = {1e-6 + 1e3 * 1e-10, 1e-6 + 1e7 * 1e-10};
  gs_coll_curve c;
  assert_int_equal(gs_coll_curve_build(bytes, secs, 2, 2, &c), GS_OK);
  return c;
}

static double line(double bytes) { return 1e-6 + bytes * 1e-10; }

static void test_round_of_a_pipeline(void **state) {
  (void)state;
  gs_coll_curve c = sendrecv_curve();
  gs_predict_machine m = {.gpus_per_node = 8, .sendrecv = &c};
  gs_predict_model md = truth();
  gs_predict_point pt;
  // 3 GPUs as one replica of 3 stages (3 micro-batches, one per stage):
  // 8 rounds, each computing 0.2 x (3 + 2) / 3 x (0.75 + 0.25 / 3).
  assert_int_equal(gs_predict_point_at_layout(&md, &m, 0, 3, 1, 3, &pt), GS_OK);
  assert_int_equal(pt.replicas, 1);
  assert_int_equal(pt.rounds, 8);
  assert_int_equal(pt.pipeline_stages, 3);
  assert_int_equal(pt.micro_batches, 3);
  NEAR(pt.work, 8 * 0.2 * 5.0 / 3.0 * (0.75 + 0.25 / 3.0), 1e-12);
  // A call's first group crosses 2 boundaries (8/3 sequences: 16 prompt
  // rows each at the prefill, one at a decode step, 4096 B a row) and its
  // tokens (4 B each, below the curve: its first size's time per byte)
  // come back once.
  const double rows = 8.0 / 3.0;
  const double back = line(1e3) / 1e3 * rows * 4.0;
  const double prefill = 2 * line(rows * 16 * 4096) + back;
  const double decode = 2 * line(rows * 4096) + back;
  NEAR(pt.transfer, 8 * (prefill + 10 * decode), 1e-9);
  NEAR(pt.comm, pt.transfer, 1e-12);  // no tensor parallelism: no all-reduce
  NEAR(pt.step_seconds, pt.work + pt.comm, 1e-12);
  NEAR(pt.throughput, 1000 / pt.step_seconds, 1e-12);
  // Without a send/recv measurement the transfers within a node cost 0.
  gs_predict_machine bare = {.gpus_per_node = 8};
  assert_int_equal(gs_predict_point_at_layout(&md, &bare, 0, 3, 1, 3, &pt), GS_OK);
  assert_true(pt.transfer == 0.0);
  // Across nodes of 2 GPUs, the boundary after stage 1 and the tokens'
  // way back cross the network (5 us + bytes / 50 GB/s).
  gs_predict_machine two = {.gpus_per_node = 2, .sendrecv = &c};
  two.network.alpha_seconds = 5e-6;
  two.network.beta_seconds_per_byte = 1.0 / 50e9;
  assert_int_equal(gs_predict_point_at_layout(&md, &two, 0, 4, 1, 4, &pt), GS_OK);
  const double r4 = 8.0 / 4.0;
  const double net = 5e-6 + r4 * 4.0 / 50e9;
  const double pre4 = 2 * line(r4 * 16 * 4096) + (5e-6 + r4 * 16 * 4096 / 50e9) + net;
  const double dec4 = 2 * line(r4 * 4096) + (5e-6 + r4 * 4096 / 50e9) + net;
  NEAR(pt.transfer, 8 * (pre4 + 10 * dec4), 1e-9);
  // One stage and one micro-batch is the round as measured on one GPU.
  assert_int_equal(gs_predict_point_at_layout(&md, &m, 0, 1, 1, 1, &pt), GS_OK);
  NEAR(pt.step_seconds, 8 * 0.2, 1e-12);
  // A count that holds no whole replica of tp x pp GPUs is refused.
  assert_int_equal(gs_predict_point_at_layout(&md, &m, 0, 5, 1, 2, &pt), GS_ERR_USAGE);
  gs_coll_curve_free(&c);
}

static void test_fit_across_layouts(void **state) {
  (void)state;
  gs_coll_curve c = sendrecv_curve();
  gs_predict_machine m = {.gpus_per_node = 8, .sendrecv = &c};
  const gs_predict_model md = truth();
  // Measured: 1 GPU, 2 replicas, one replica of 2 stages (2 micro-batches)
  // and 2 stages at 4 micro-batches, each the truth's run.
  const int gpus[4] = {1, 2, 2, 2}, stages[4] = {1, 1, 2, 2}, micro[4] = {1, 1, 2, 4};
  gs_predict_request_obs obs[4];
  for (int i = 0; i < 4; i++) {
    gs_predict_model at = md;
    at.measured_pp = stages[i];
    at.measured_micro = micro[i];
    gs_predict_point pt;
    assert_int_equal(gs_predict_point_at_layout(&at, &m, 0, gpus[i], 1, stages[i], &pt), GS_OK);
    obs[i] = (gs_predict_request_obs){gpus[i], pt.step_seconds, 1000,
                                      {1, stages[i], micro[i], 1.0}, 0.02};
  }
  gs_predict_model fit = truth();
  fit.round_seconds = fit.fixed_share = 0.0;
  assert_int_equal(gs_predict_fit_requests(obs, 4, &m, &fit), GS_OK);
  NEAR(fit.round_seconds, 0.2, 1e-9);
  NEAR(fit.fixed_share, 0.75, 1e-9);
  assert_true(fit.share_fitted);
  // The runs' 2% intervals widen the round's bounds by as much.
  NEAR(fit.round_low, 0.2 * 0.98, 0.02);
  NEAR(fit.round_high, 0.2 * 1.02, 0.02);
  assert_true(fit.share_low <= 0.75 && fit.share_high >= 0.75 && fit.share_high <= 1.0);
  // Held out: 3 stages; the fit predicts the truth's run, inside its bounds.
  gs_predict_point want, got;
  assert_int_equal(gs_predict_point_at_layout(&md, &m, 0, 3, 1, 3, &want), GS_OK);
  assert_int_equal(gs_predict_point_at_layout(&fit, &m, 0, 3, 1, 3, &got), GS_OK);
  NEAR(got.throughput, want.throughput, 1e-9);
  assert_true(got.throughput_low < got.throughput && got.throughput < got.throughput_high);

  // Without a pipelined measurement of several micro-batches the share
  // cannot be fitted: a call is taken as bound by the weights (share 1).
  gs_predict_model dp = truth();
  assert_int_equal(gs_predict_fit_requests(obs, 2, &m, &dp), GS_OK);
  assert_false(dp.share_fitted);
  NEAR(dp.fixed_share, 1.0, 1e-12);
  NEAR(dp.round_seconds, 0.2, 1e-9);
  gs_coll_curve_free(&c);
}

/* A measurement of one replica of 2 stages is a pipeline, not tensor
 * parallelism: it needs no all-reduce document, its communication is the
 * stages' transfers only, and the round it gives at one GPU is the
 * truth's. Read as tp 2 (as predict did), the same run needs a coll
 * document to take out all-reduces it never made, and its round at one
 * GPU would be 0.6 s (twice the 0.3 s round it measured), not 0.2. */
static void test_pipeline_is_not_tensor_parallel(void **state) {
  (void)state;
  gs_predict_machine m = {.gpus_per_node = 8};
  gs_predict_model md = truth();
  md.fixed_share = md.share_low = md.share_high = 1.0;  // bound by the weights
  md.measured_pp = 2;
  md.measured_micro = 2;
  gs_predict_point pt;
  assert_int_equal(gs_predict_point_at(&md, &m, 0, 2, 0, &pt), GS_OK);
  // (2 + 1) / 2 of the round: each stage reads its half of the weights
  // once per group, and the pipeline fills and drains every call.
  NEAR(pt.step_seconds, 8 * 0.2 * 1.5, 1e-12);
  assert_int_equal(pt.tensor_parallel, 1);
  gs_predict_request_obs obs = {2, pt.step_seconds, 1000, {1, 2, 2, 1.0}, 0.0};
  gs_predict_model fit = truth();
  fit.measured_pp = 2;
  fit.measured_micro = 2;
  assert_int_equal(gs_predict_fit_requests(&obs, 1, &m, &fit), GS_OK);
  NEAR(fit.round_seconds, 0.2, 1e-9);
  assert_int_equal(gs_predict_point_at_layout(&fit, &m, 0, 1, 1, 1, &pt), GS_OK);
  NEAR(pt.step_seconds, 8 * 0.2, 1e-9);
  // As tp 2 the run needs a coll document and its compute halves per GPU:
  // the old reading of the same run.
  gs_predict_request_obs as_tp = {2, 8 * 0.2 * 1.5, 1000, {2, 1, 1, 1.0}, 0.0};
  gs_predict_model tp = truth();
  assert_int_equal(gs_predict_fit_requests(&as_tp, 1, &m, &tp), GS_ERR_USAGE);
}

/* mlp's pipeline (pipeline.c): the step's, throughput's and bubble's 95%
 * bounds from the busy time's interval, the transfers held fixed. */
static void test_pipeline_interval(void **state) {
  (void)state;
  gs_predict_pipeline q = {.stages = 2, .micro = 4, .busy_seconds = 0.8, .busy_half = 0.1,
                           .imbalance = 1.0, .samples = 64, .bytes_per_sample = 100};
  gs_predict_options o = {.inter_node_bytes_per_second = 1e6, .inter_node_latency_seconds = 1e-3};
  gs_predict_pipeline_point x;
  // Within a node, no transfers: step = 5 busy / 8 at busy 0.72 and 0.88.
  gs_predict_pipeline_at(&q, &o, 8, 2, 4, &x);
  NEAR(x.step_low, 0.45, 1e-12);
  NEAR(x.step_high, 0.55, 1e-12);
  NEAR(x.throughput_low, 64 / 0.55, 1e-12);
  NEAR(x.throughput_high, 64 / 0.45, 1e-12);
  NEAR(x.bubble_low, 0.25, 1e-12);  // the formula's whatever the busy time
  NEAR(x.bubble_high, 0.25, 1e-12);
  // One GPU a node: 5.2 ms of crossings weigh more against less busy time.
  gs_predict_pipeline_at(&q, &o, 1, 2, 4, &x);
  NEAR(x.step_low, 0.45 + 5.2e-3, 1e-12);
  NEAR(x.bubble_high, (0.45 + 5.2e-3) / 0.36 - 1.0, 1e-12);
  NEAR(x.bubble_low, (0.55 + 5.2e-3) / 0.44 - 1.0, 1e-12);
  assert_true(x.bubble_low < x.bubble && x.bubble < x.bubble_high);
  // Without an interval (fewer than two steps) the bounds are NaN.
  q.busy_half = NAN;
  gs_predict_pipeline_at(&q, &o, 8, 2, 4, &x);
  assert_true(isnan(x.step_low) && isnan(x.bubble_high));
}

/* A fit whose round reaches down to 0 (a run's interval reaching 0)
 * leaves the throughput unbounded above where nothing else takes time, yet
 * more replicas of one GPU are faster at every corner: 8 GPUs beat 2 and
 * the order is decided; across nodes the stage transfers bound it. */
static void test_unbounded_round_orders(void **state) {
  (void)state;
  gs_coll_curve c = sendrecv_curve();
  gs_predict_machine m = {.gpus_per_node = 8, .sendrecv = &c};
  gs_predict_model md = truth();
  md.round_low = 0.0;
  md.round_high = 0.3;
  gs_predict_point two, eight;
  assert_int_equal(gs_predict_point_at_layout(&md, &m, 0, 2, 1, 1, &two), GS_OK);
  assert_int_equal(gs_predict_point_at_layout(&md, &m, 0, 8, 1, 1, &eight), GS_OK);
  assert_true(isinf(two.throughput_high) && isinf(eight.throughput_high));
  assert_true(eight.throughput_low > two.throughput_low);
  assert_true(gs_predict_point_beats(&eight, &two));
  assert_false(gs_predict_point_beats(&two, &eight));
  // One replica of 2 stages on GPUs a node apart: the round's compute may
  // be 0, its transfers across the network are not.
  m.gpus_per_node = 1;
  m.network = (gs_coll_link){.alpha_seconds = 1e-3, .beta_seconds_per_byte = 1e-9};
  gs_predict_point staged;
  assert_int_equal(gs_predict_point_at_layout(&md, &m, 0, 2, 1, 2, &staged), GS_OK);
  assert_true(isfinite(staged.throughput_high) && staged.throughput_high > staged.throughput);
  gs_coll_curve_free(&c);
}

static void test_parse_layout(void **state) {
  (void)state;
  gs_predict_layout l;
  assert_int_equal(gs_predict_parse_layout("tp=2,pp=3", "--holdout-layout", &l), GS_OK);
  assert_int_equal(l.tp, 2);
  assert_int_equal(l.pp, 3);
  assert_int_equal(gs_predict_parse_layout("pp=2", "--holdout-layout", &l), GS_OK);
  assert_int_equal(l.tp, 1);
  assert_int_equal(l.pp, 2);
  const char *bad[] = {"", "tp=0", "pp=2,pp=3", "tp=2x", "dp=2", "tp=2,", "pp=-1"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_int_equal(gs_predict_parse_layout(bad[i], "--holdout-layout", &l), GS_ERR_USAGE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_of_a_pipeline),
      cmocka_unit_test(test_fit_across_layouts),
      cmocka_unit_test(test_pipeline_is_not_tensor_parallel),
      cmocka_unit_test(test_pipeline_interval),
      cmocka_unit_test(test_unbounded_round_orders),
      cmocka_unit_test(test_parse_layout),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
