/* The llm scenario driver on the CPU backend with the tiny model: every
 * sample recorded once with consistent times, the cold batch marked, static
 * and dynamic dispatch over replicas, single-stream one at a time, and
 * samples past their timeout counted as timed out, not as successes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "workloads/llm/scenario.h"

static gs_llm_scenario_config tiny(gs_llm_scenario_kind kind, uint64_t samples, uint32_t batch) {
  gs_llm_scenario_config c;
  memset(&c, 0, sizeof c);
  c.engine = (gs_llm_engine_config){.shape = gs_llm_presets[2].shape,
                                    .seed = 3,
                                    .max_batch = batch,
                                    .max_input = 12,
                                    .max_seq = 12 + 6};
  c.scenario = kind;
  c.stream = (gs_llm_stream_spec){.count = samples,
                                  .input_min = 4,
                                  .input_max = 12,
                                  .output_min = 2,
                                  .output_max = 6,
                                  .rate = 200.0,
                                  .seed = 3};
  c.warmup = 1;
  return c;
}

static gs_run_config cpu_ranks(int n) {
  gs_run_config r;
  memset(&r, 0, sizeof r);
  r.backend = GS_BACKEND_CPU;
  r.world_size = n;
  r.runs = 1;
  r.seed = 3;
  return r;
}

/* Checks each sample appears once over all replicas; returns ok samples. */
static size_t check_records(const gs_llm_run_result *res, uint64_t samples) {
  char *seen = calloc(samples, 1);
  size_t ok = 0;
  for (int k = 0; k < res->world_size; k++) {
    const gs_llm_replica_result *rep = &res->replicas[k];
    for (size_t i = 0; i < rep->n_requests; i++) {
      const gs_llm_request_record *q = &rep->requests[i];
      assert_true(q->id < samples);
      assert_false(seen[q->id]);
      seen[q->id] = 1;
      assert_int_equal(q->rank, k);
      if (q->status != GS_LLM_REQ_OK) continue;
      ok++;
      assert_true(q->output_tokens >= 2 && q->output_tokens <= 6);
      assert_true(q->ttft >= 0.0 && q->ttft <= q->latency);
      assert_true(q->tpot > 0.0);
      assert_float_equal(q->latency, q->ttft + q->tpot * (q->output_tokens - 1), 1e-9);
    }
  }
  for (uint64_t i = 0; i < samples; i++) assert_true(seen[i]);
  free(seen);
  return ok;
}

static void test_offline_all_ok(void **state) {
  (void)state;
  gs_llm_scenario_config c = tiny(GS_LLM_OFFLINE, 10, 4);
  gs_run_config r = cpu_ranks(1);
  gs_llm_run_result res;
  assert_int_equal(gs_llm_scenario_run(&c, &r, &res), GS_OK);
  assert_int_equal(check_records(&res, 10), 10);
  const gs_llm_replica_result *rep = &res.replicas[0];
  assert_true(rep->cold_seconds > 0.0);
  for (size_t i = 0; i < rep->n_requests; i++) assert_false(rep->requests[i].cold);
  // Three batches (4 + 4 + 2): three prefills and one decode step per
  // token after the first of each batch's longest sample.
  assert_true(rep->forward_passes >= 3 + 3 && rep->forward_passes <= 3 + 3 * 5);
  assert_true(res.seconds > 0.0);
  gs_llm_run_result_free(&res);
}

static void test_cold_batch_without_warmup(void **state) {
  (void)state;
  gs_llm_scenario_config c = tiny(GS_LLM_OFFLINE, 6, 4);
  c.warmup = 0;
  gs_run_config r = cpu_ranks(1);
  gs_llm_run_result res;
  assert_int_equal(gs_llm_scenario_run(&c, &r, &res), GS_OK);
  size_t cold = 0;
  for (size_t i = 0; i < res.replicas[0].n_requests; i++)
    cold += (size_t)res.replicas[0].requests[i].cold;
  assert_int_equal(cold, 4); /* the first batch */
  assert_true(res.replicas[0].cold_seconds < 0.0);
  gs_llm_run_result_free(&res);
}

static void test_static_and_dynamic_dispatch(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    gs_llm_scenario_config c = tiny(GS_LLM_OFFLINE, 11, 2);
    c.dispatch = d ? GS_LLM_DISPATCH_DYNAMIC : GS_LLM_DISPATCH_STATIC;
    gs_run_config r = cpu_ranks(3);
    gs_llm_run_result res;
    assert_int_equal(gs_llm_scenario_run(&c, &r, &res), GS_OK);
    assert_int_equal(check_records(&res, 11), 11);
    if (!d) {
      // Static: the even split, 4 + 4 + 3 samples.
      assert_int_equal(res.replicas[0].n_requests, 4);
      assert_int_equal(res.replicas[1].n_requests, 4);
      assert_int_equal(res.replicas[2].n_requests, 3);
      for (size_t i = 0; i < res.replicas[1].n_requests; i++)
        assert_true(res.replicas[1].requests[i].id >= 4 && res.replicas[1].requests[i].id < 8);
    }
    gs_llm_run_result_free(&res);
  }
}

static void test_server_and_single_stream(void **state) {
  (void)state;
  gs_llm_scenario_config c = tiny(GS_LLM_SERVER, 8, 4);
  gs_run_config r = cpu_ranks(1);
  gs_llm_run_result res;
  assert_int_equal(gs_llm_scenario_run(&c, &r, &res), GS_OK);
  assert_int_equal(check_records(&res, 8), 8);
  // Nothing starts before it arrives.
  for (size_t i = 0; i < res.replicas[0].n_requests; i++)
    assert_true(res.replicas[0].requests[i].arrival > 0.0);
  gs_llm_run_result_free(&res);

  c = tiny(GS_LLM_SINGLE_STREAM, 5, 1);
  assert_int_equal(gs_llm_scenario_run(&c, &r, &res), GS_OK);
  assert_int_equal(check_records(&res, 5), 5);
  // One at a time: each is issued after the previous finished.
  const gs_llm_replica_result *rep = &res.replicas[0];
  for (size_t i = 1; i < rep->n_requests; i++)
    assert_true(rep->requests[i].arrival >=
                rep->requests[i - 1].arrival + rep->requests[i - 1].latency);
  gs_llm_run_result_free(&res);
}

static void test_timeouts_are_not_successes(void **state) {
  (void)state;
  gs_llm_scenario_config c = tiny(GS_LLM_OFFLINE, 6, 2);
  c.timeout = 1e-9;
  gs_run_config r = cpu_ranks(1);
  gs_llm_run_result res;
  assert_int_equal(gs_llm_scenario_run(&c, &r, &res), GS_OK);
  assert_int_equal(check_records(&res, 6), 0);
  const gs_llm_replica_result *rep = &res.replicas[0];
  assert_int_equal(rep->n_requests, 6);
  assert_int_equal(rep->generated_tokens, 0);
  for (size_t i = 0; i < rep->n_requests; i++) {
    assert_int_equal(rep->requests[i].status, GS_LLM_REQ_TIMED_OUT);
    assert_true(isnan(rep->requests[i].latency));
  }
  gs_llm_run_result_free(&res);
}

/* A replica that fails (here: a cache shorter than every prompt, which the
 * options never allow) fails its batch and, with static dispatch, the rest
 * of its share; with dynamic dispatch the last failing replica fails what
 * is left in the queue. Every sample is still recorded exactly once. */
static void test_failed_replicas_fail_their_samples(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    gs_llm_scenario_config c = tiny(GS_LLM_OFFLINE, 9, 2);
    c.engine.max_seq = 4; /* prompts have 4 to 12 tokens: every prefill fails */
    c.dispatch = d ? GS_LLM_DISPATCH_DYNAMIC : GS_LLM_DISPATCH_STATIC;
    c.warmup = 0;
    gs_run_config r = cpu_ranks(2);
    gs_llm_run_result res;
    gs_clear_error();
    assert_int_equal(gs_llm_scenario_run(&c, &r, &res), GS_ERR_UNSUPPORTED);
    // The caller's thread holds the failing replica's error.
    assert_non_null(strstr(gs_last_error(), "replica 0: llm prefill: prompt"));
    assert_int_equal(check_records(&res, 9), 0);
    size_t failed = 0;
    for (int k = 0; k < 2; k++) {
      assert_int_equal(res.replicas[k].status, GS_ERR_UNSUPPORTED);
      assert_non_null(strstr(res.replicas[k].error, "prompt"));
      for (size_t i = 0; i < res.replicas[k].n_requests; i++)
        failed += res.replicas[k].requests[i].status == GS_LLM_REQ_FAILED;
    }
    assert_int_equal(failed, 9);
    gs_llm_run_result_free(&res);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_offline_all_ok),
      cmocka_unit_test(test_cold_batch_without_warmup),
      cmocka_unit_test(test_static_and_dynamic_dispatch),
      cmocka_unit_test(test_server_and_single_stream),
      cmocka_unit_test(test_timeouts_are_not_successes),
      cmocka_unit_test(test_failed_replicas_fail_their_samples),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
