/* llm's pipeline (llm_pp.h): the stage split (equal stages, --stages
 * boundaries, the layouts refused), the micro-batches of a call, and a
 * pipelined CPU replica whose tokens and logits equal the whole model's
 * bit for bit for 2 and 3 stages, prefill and decode, as the batch
 * shrinks below the micro-batch count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "workloads/llm/engine.h"
#include "workloads/llm/llm_pp.h"
#include "workloads/llm/llm_tp.h"
#include "workloads/llm/requests.h"

static void test_split(void **state) {
  (void)state;
  uint32_t f[GS_LLM_MAX_STAGES + 1];
  assert_int_equal(gs_llm_pp_split(6, 3, NULL, 0, f), GS_OK);
  assert_int_equal(f[0], 0);
  assert_int_equal(f[1], 2);
  assert_int_equal(f[2], 4);
  assert_int_equal(f[3], 6);
  const uint64_t b[] = {1, 5};
  assert_int_equal(gs_llm_pp_split(6, 3, b, 2, f), GS_OK);
  assert_int_equal(f[1], 1);
  assert_int_equal(f[2], 5);
  assert_int_equal(f[3], 6);
  assert_int_equal(gs_llm_pp_split(6, 4, NULL, 0, f), GS_ERR_USAGE);  // not divisible
  assert_int_equal(gs_llm_pp_split(2, 3, NULL, 0, f), GS_ERR_USAGE);  // fewer layers
  assert_int_equal(gs_llm_pp_split(6, 3, b, 1, f), GS_ERR_USAGE);     // one bound short
  const uint64_t flat[] = {2, 2}, out[] = {2, 6};
  assert_int_equal(gs_llm_pp_split(6, 3, flat, 2, f), GS_ERR_USAGE);
  assert_int_equal(gs_llm_pp_split(6, 3, out, 2, f), GS_ERR_USAGE);
}

static void test_micro(void **state) {
  (void)state;
  size_t first = 0, count = 0, at = 0;
  for (size_t j = 0; j < 3; j++) {  // 8 over 3: 3, 3, 2
    gs_llm_pp_micro(8, 3, j, &first, &count);
    assert_int_equal(first, at);
    assert_int_equal(count, j < 2 ? 3 : 2);
    at += count;
  }
  gs_llm_engine_config c = {.pp = 3};
  assert_int_equal(gs_llm_pp_groups(&c, 8), 3);  // one per stage
  assert_int_equal(gs_llm_pp_groups(&c, 2), 2);  // at most the sequences
  c.micro_batches = 5;
  assert_int_equal(gs_llm_pp_groups(&c, 8), 5);
}

/* Prefill of 3 prompts, then decode steps of 3, 3, 2, 1 sequences on
 * `e`, tokens and logits (vocab each) of every call into the outputs. */
/* The NCCL links between stage processes: link s (stage s to s + 1) in
 * world s mod 2, the last of an odd pp in world 2, so that no stage sends
 * and receives on one communicator. */
static void test_link_worlds(void **state) {
  (void)state;
  const int want2[] = {0, 1}, want3[] = {0, 1, 2}, want4[] = {0, 1, 0, 1},
            want5[] = {0, 1, 0, 1, 2};
  for (uint32_t s = 0; s < 2; s++) assert_int_equal(gs_llm_link_world(s, 2), want2[s]);
  for (uint32_t s = 0; s < 3; s++) assert_int_equal(gs_llm_link_world(s, 3), want3[s]);
  for (uint32_t s = 0; s < 4; s++) assert_int_equal(gs_llm_link_world(s, 4), want4[s]);
  for (uint32_t s = 0; s < 5; s++) assert_int_equal(gs_llm_link_world(s, 5), want5[s]);
  for (uint32_t pp = 2; pp <= 64; pp++)
    for (uint32_t s = 0; s < pp; s++) {
      const int out = gs_llm_link_world(s, pp), in = gs_llm_link_world((s + pp - 1) % pp, pp);
      assert_true(out >= 0 && out < GS_LLM_LINK_WORLDS);
      assert_int_not_equal(out, in);
    }
}

static void run(gs_llm_engine *e, const gs_llm_engine_config *c, int32_t *tokens, float *logits) {
  int32_t storage[3][8];
  const int32_t *prompts[3];
  const uint32_t lengths[3] = {7, 3, 5};
  for (uint32_t i = 0; i < 3; i++) {
    gs_llm_prompt_tokens(9, i, lengths[i], c->shape.vocab, storage[i]);
    prompts[i] = storage[i];
  }
  const size_t vocab = c->shape.vocab, steps[] = {3, 3, 2, 1};
  assert_int_equal(gs_llm_engine_prefill(e, 3, prompts, lengths, tokens), GS_OK);
  assert_int_equal(gs_llm_engine_logits(e, 3, logits), GS_OK);
  for (size_t s = 0; s < 4; s++) {
    tokens += 3;
    logits += 3 * vocab;
    assert_int_equal(gs_llm_engine_decode(e, steps[s], 0, tokens), GS_OK);
    assert_int_equal(gs_llm_engine_logits(e, steps[s], logits), GS_OK);
  }
}

static void test_pipeline_equals_whole_model(void **state) {
  (void)state;
  gs_llm_engine_config whole = {.seed = 3, .max_batch = 3, .max_seq = 14, .max_input = 8};
  whole.shape = gs_llm_presets[2].shape;  // tiny, 6 layers
  whole.shape.layers = 6;
  const size_t vocab = whole.shape.vocab, calls = 5;
  int32_t *t0 = calloc(3 * calls, sizeof *t0), *t1 = calloc(3 * calls, sizeof *t1);
  float *l0 = calloc(3 * calls * vocab, sizeof *l0), *l1 = calloc(3 * calls * vocab, sizeof *l1);
  assert_non_null(t0);
  assert_non_null(t1);
  assert_non_null(l0);
  assert_non_null(l1);
  gs_llm_engine *e = NULL;
  assert_int_equal(gs_llm_engine_create(&whole, GS_BACKEND_CPU, NULL, &e), GS_OK);
  run(e, &whole, t0, l0);
  gs_llm_engine_destroy(e);
  const struct {
    uint32_t pp, micro;
  } layouts[] = {{2, 0}, {3, 0}, {2, 3}, {3, 2}};
  for (size_t k = 0; k < sizeof layouts / sizeof layouts[0]; k++) {
    gs_llm_engine_config c = whole;
    c.pp = layouts[k].pp;
    c.micro_batches = layouts[k].micro;
    assert_int_equal(gs_llm_pp_split(6, c.pp, NULL, 0, c.stage_first), GS_OK);
    memset(t1, 0, 3 * calls * sizeof *t1);
    assert_int_equal(gs_llm_engine_create(&c, GS_BACKEND_CPU, NULL, &e), GS_OK);
    run(e, &c, t1, l1);
    double busy[GS_LLM_MAX_STAGES], seconds = 0.0;
    uint32_t stages = 0;
    gs_llm_engine_stage_seconds(e, busy, &stages, &seconds);
    assert_int_equal(stages, c.pp);
    for (uint32_t s = 0; s < stages; s++) assert_true(busy[s] > 0.0 && busy[s] <= seconds);
    gs_llm_engine_destroy(e);
    assert_memory_equal(t0, t1, 3 * calls * sizeof *t0);
    assert_memory_equal(l0, l1, 3 * calls * vocab * sizeof *l0);
  }
  free(t0);
  free(t1);
  free(l0);
  free(l1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split),
      cmocka_unit_test(test_micro),
      cmocka_unit_test(test_link_worlds),
      cmocka_unit_test(test_pipeline_equals_whole_model),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
