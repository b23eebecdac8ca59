/* The llm CPU reference: hand-checked primitives (bfloat16 rounding,
 * RMSNorm, rotary embedding, attention, SwiGLU, argmax), parameter counts
 * of the presets, and the KV cache: a prompt run at once and token by token
 * gives the same logits, and sequences batched together do not see each
 * other. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bug_fixture.h"
#include "workloads/llm/llm_cpu.h"

static void test_bf16_rounding(void **state) {
  (void)state;
  assert_int_equal(gs_llm_bf16_from_float(1.0f), 0x3f80);
  assert_int_equal(gs_llm_bf16_from_float(-2.0f), 0xc000);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to even (1).
  assert_int_equal(gs_llm_bf16_from_float(1.0f + 1.0f / 256.0f), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6.
  assert_int_equal(gs_llm_bf16_from_float(1.0f + 3.0f / 256.0f), 0x3f82);
  assert_true(gs_llm_float_from_bf16(0x3fc0) == 1.5f);
}

static void test_weights_deterministic(void **state) {
  (void)state;
  uint16_t a = gs_llm_weight_value(1, 5, 123, 0.5f, 0.0f);
  assert_int_equal(a, gs_llm_weight_value(1, 5, 123, 0.5f, 0.0f));
  assert_int_not_equal(a, gs_llm_weight_value(2, 5, 123, 0.5f, 0.0f));
  double sum = 0.0, sq = 0.0;
  for (uint64_t i = 0; i < 100000; i++) {
    float v = gs_llm_float_from_bf16(gs_llm_weight_value(3, 17, i, 1.0f, 0.0f));
    assert_true(v >= -1.0f && v <= 1.0f);
    sum += v;
    sq += (double)v * v;
  }
  assert_true(fabs(sum / 100000) < 0.01);
  assert_true(fabs(sq / 100000 - 1.0 / 3.0) < 0.01); /* uniform on [-1, 1) */
}

static void test_parameter_counts(void **state) {
  (void)state;
  // Llama 3 8B: 8,030,261,248 parameters (untied embedding and output).
  assert_int_equal(gs_llm_parameter_count(&gs_llm_presets[0].shape), UINT64_C(8030261248));
  assert_int_equal(gs_llm_parameter_count(&gs_llm_presets[1].shape), UINT64_C(1498482688));
  const gs_llm_shape *s = &gs_llm_presets[0].shape;
  assert_int_equal(gs_llm_decode_weight_bytes(s),
                   2 * (UINT64_C(8030261248) - s->vocab * s->hidden));
}

static void test_rmsnorm(void **state) {
  (void)state;
  float x[2] = {3.0f, 4.0f}, w[2] = {1.0f, 2.0f}, out[2];
  gs_llm_cpu_rmsnorm(x, w, 2, 0.0, out); /* rms = sqrt(12.5) */
  assert_float_equal(out[0], 3.0 / sqrt(12.5), 1e-6);
  assert_float_equal(out[1], 2.0 * 4.0 / sqrt(12.5), 1e-6);
}

static void test_rope(void **state) {
  (void)state;
  float v[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  gs_llm_cpu_rope(v, 4, 0, 10000.0); /* position 0: unchanged */
  assert_float_equal(v[0], 1.0, 0);
  assert_float_equal(v[2], 3.0, 0);
  // Head size 4: pair (0, 2) turns by pos * 1, pair (1, 3) by pos * theta^-1/2.
  float u[4] = {1.0f, 1.0f, 0.0f, 0.0f};
  gs_llm_cpu_rope(u, 4, 2, 100.0);
  assert_float_equal(u[0], cos(2.0), 1e-6);
  assert_float_equal(u[2], sin(2.0), 1e-6);
  assert_float_equal(u[1], cos(0.2), 1e-6);
  assert_float_equal(u[3], sin(0.2), 1e-6);
}

static void test_attention(void **state) {
  (void)state;
  float score[2], out[2];
  // One position: the output is its value.
  float q[2] = {1.0f, 0.0f}, k1[2] = {5.0f, 5.0f}, v1[2] = {0.25f, -3.0f};
  gs_llm_cpu_attention(q, k1, v1, 2, 1, 2, score, out);
  assert_float_equal(out[0], 0.25, 1e-7);
  assert_float_equal(out[1], -3.0, 1e-7);
  // Keys at stride 3; scores 0 and 2/sqrt(2): weights 1/(1+e^sqrt2), e^sqrt2/(1+e^sqrt2).
  float keys[6] = {0.0f, 0.0f, 99.0f, 2.0f, 0.0f, 99.0f};
  float values[6] = {1.0f, 0.0f, 99.0f, 0.0f, 1.0f, 99.0f};
  gs_llm_cpu_attention(q, keys, values, 3, 2, 2, score, out);
  double e = exp(sqrt(2.0));
  assert_float_equal(out[0], 1.0 / (1.0 + e), 1e-6);
  assert_float_equal(out[1], e / (1.0 + e), 1e-6);
}

static void test_swiglu_argmax(void **state) {
  (void)state;
  assert_float_equal(gs_llm_cpu_swiglu(0.0f, 5.0f), 0.0, 0);
  assert_float_equal(gs_llm_cpu_swiglu(1.0f, 2.0f), 2.0 / (1.0 + exp(-1.0)), 1e-6);
  float x[5] = {0.5f, 3.0f, -1.0f, 3.0f, 2.0f};
  assert_int_equal(gs_llm_cpu_argmax(x, 5), 1); /* first of the tied maxima */
}

static gs_llm_engine_config tiny_config(void) {
  gs_llm_engine_config c = {
      .shape = gs_llm_presets[2].shape, .seed = 11, .max_batch = 2, .max_seq = 16, .max_input = 8};
  return c;
}

/* A prompt at once, and its last token fed alone after the others, give
 * the same logits: the KV cache holds what attention needs. */
static void test_cache_matches_full_prompt(void **state) {
  (void)state;
  gs_llm_engine_config c = tiny_config();
  gs_llm_cpu_model *a = NULL, *b = NULL;
  assert_int_equal(gs_llm_cpu_create(&c, &a), GS_OK);
  assert_int_equal(gs_llm_cpu_create(&c, &b), GS_OK);
  size_t vocab = c.shape.vocab;
  int32_t tokens[6] = {3, 141, 59, 26, 5, 358};
  uint32_t slots[6] = {0}, pos[6] = {0, 1, 2, 3, 4, 5}, last = 5, zero = 0;
  float *full = malloc(vocab * sizeof *full), *step = malloc(vocab * sizeof *step);
  assert_int_equal(gs_llm_cpu_forward(a, 6, tokens, slots, pos, 1, &last, full), GS_OK);
  uint32_t four = 4;
  assert_int_equal(gs_llm_cpu_forward(b, 5, tokens, slots, pos, 1, &four, step), GS_OK);
  assert_int_equal(gs_llm_cpu_forward(b, 1, tokens + 5, slots, pos + 5, 1, &zero, step), GS_OK);
  for (size_t i = 0; i < vocab; i++) assert_float_equal(full[i], step[i], 1e-5);
  free(full);
  free(step);
  gs_llm_cpu_destroy(a);
  gs_llm_cpu_destroy(b);
}

/* Two sequences prefilled together give each the logits it gets alone. */
static void test_batch_rows_independent(void **state) {
  (void)state;
  gs_llm_engine_config c = tiny_config();
  gs_llm_cpu_model *m = NULL;
  assert_int_equal(gs_llm_cpu_create(&c, &m), GS_OK);
  size_t vocab = c.shape.vocab;
  int32_t tokens[7] = {1, 2, 3, 4, 9, 8, 7};
  uint32_t slots[7] = {0, 0, 0, 0, 1, 1, 1}, pos[7] = {0, 1, 2, 3, 0, 1, 2}, outs[2] = {3, 6};
  float *both = malloc(2 * vocab * sizeof *both), *alone = malloc(vocab * sizeof *alone);
  assert_int_equal(gs_llm_cpu_forward(m, 7, tokens, slots, pos, 2, outs, both), GS_OK);
  uint32_t last = 2;
  assert_int_equal(gs_llm_cpu_forward(m, 3, tokens + 4, slots, pos, 1, &last, alone), GS_OK);
  for (size_t i = 0; i < vocab; i++) assert_float_equal(both[vocab + i], alone[i], 1e-5);
  // A bad row is a bug of the engine, stopped before it is read out of bounds.
  int32_t bad = (int32_t)vocab;
  assert_bug(gs_llm_cpu_forward(m, 1, &bad, slots, pos, 1, &last, alone), "row 0 has token");
  free(both);
  free(alone);
  gs_llm_cpu_destroy(m);
}

/* The engine: prefill then decode produce tokens in the vocabulary, and the
 * same seed gives the same tokens. */
static void test_engine_deterministic(void **state) {
  (void)state;
  gs_llm_engine_config c = tiny_config();
  int32_t p0[5] = {10, 20, 30, 40, 50}, p1[3] = {7, 7, 7};
  const int32_t *prompts[2] = {p0, p1};
  uint32_t lengths[2] = {5, 3};
  int32_t run[2][2][4];
  memset(run, 0, sizeof run);
  for (int r = 0; r < 2; r++) {
    gs_llm_engine *e = NULL;
    assert_int_equal(gs_llm_engine_create(&c, GS_BACKEND_CPU, NULL, &e), GS_OK);
    assert_int_equal(gs_llm_engine_prefill(e, 2, prompts, lengths, run[r][0]), GS_OK);
    assert_int_equal(gs_llm_engine_decode(e, 2, 0, run[r][1]), GS_OK);
    assert_int_equal(gs_llm_engine_decode(e, 1, 0, run[r][1] + 2), GS_OK);
    // More than prefilled, or a next step larger than this one: the
    // scenario's bug, not a request the engine refuses.
    assert_bug(gs_llm_engine_decode(e, 3, 0, run[r][1]), "after a prefill of 2");
    assert_bug(gs_llm_engine_decode(e, 1, 2, run[r][1]), "llm decode of 1 sequences (next 2)");
    // A prompt over max_input is a request refused, as a server would.
    int32_t long_prompt[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, ignored[1];
    const int32_t *long_prompts[1] = {long_prompt};
    const uint32_t too_long = 9; /* max_input 8 */
    assert_int_equal(gs_llm_engine_prefill(e, 1, long_prompts, &too_long, ignored),
                     GS_ERR_UNSUPPORTED);
    assert_non_null(strstr(gs_last_error(), "prompt 0 has 9 tokens"));
    gs_llm_engine_destroy(e);
  }
  assert_memory_equal(run[0], run[1], sizeof run[0]);
  for (int i = 0; i < 2; i++)
    assert_true(run[0][0][i] >= 0 && (uint64_t)run[0][0][i] < c.shape.vocab);
}

/* Shards hold disjoint parts of each split tensor that together cover it,
 * and a whole copy of the others. */
static void test_shard_slices_cover(void **state) {
  (void)state;
  const gs_llm_shape *s = &gs_llm_presets[2].shape; /* tiny */
  char why[160];
  assert_true(gs_llm_shard_fits(s, 2, why, sizeof why));
  assert_false(gs_llm_shard_fits(s, 3, why, sizeof why));
  assert_non_null(strstr(why, "4 query heads do not split evenly over 3 shards"));
  const uint32_t tensors[] = {GS_LLM_T_EMBED,         GS_LLM_T_LM_HEAD,       GS_LLM_T_FINAL_NORM,
                              GS_LLM_T_LAYER0 + 8 + 0, GS_LLM_T_LAYER0 + 8 + 1, GS_LLM_T_LAYER0 + 8 + 2,
                              GS_LLM_T_LAYER0 + 8 + 4, GS_LLM_T_LAYER0 + 8 + 5};
  for (size_t t = 0; t < sizeof tensors / sizeof tensors[0]; t++) {
    gs_llm_slice whole;
    gs_llm_shard_slice(s, tensors[t], (gs_llm_shard){0, 1}, &whole);
    const uint64_t n = whole.rows * whole.cols;
    unsigned char *seen = calloc(n, 1);
    uint64_t held = 0;
    for (uint32_t k = 0; k < 2; k++) {
      gs_llm_slice sl;
      gs_llm_shard_slice(s, tensors[t], (gs_llm_shard){k, 2}, &sl);
      held += sl.rows * sl.cols;
      for (uint64_t i = 0; i < sl.rows * sl.cols; i++) {
        uint64_t g = gs_llm_slice_index(&sl, i);
        assert_true(g < n);
        seen[g]++;
      }
    }
    const int split = tensors[t] != GS_LLM_T_EMBED && tensors[t] != GS_LLM_T_FINAL_NORM &&
                      tensors[t] != GS_LLM_T_LAYER0 + 8 + 0;
    assert_int_equal(held, split ? n : 2 * n);
    for (uint64_t i = 0; i < n; i++) assert_int_equal(seen[i], split ? 1 : 2);
    free(seen);
  }
}

/* A replica split over 2 shards (threads, host all-reduce) gives the tokens
 * of the whole model and its logits up to the order of the sums. */
static void test_tensor_parallel_matches_whole(void **state) {
  (void)state;
  gs_llm_engine_config c = tiny_config();
  int32_t p0[5] = {10, 20, 30, 40, 50}, p1[3] = {7, 7, 7};
  const int32_t *prompts[2] = {p0, p1};
  uint32_t lengths[2] = {5, 3};
  const size_t vocab = c.shape.vocab;
  int32_t tokens[2][6][2];
  float *logits[2];
  for (int r = 0; r < 2; r++) {
    c.tp = r == 0 ? 1 : 2;
    gs_llm_engine *e = NULL;
    assert_int_equal(gs_llm_engine_create(&c, GS_BACKEND_CPU, NULL, &e), GS_OK);
    assert_int_equal(gs_llm_engine_prefill(e, 2, prompts, lengths, tokens[r][0]), GS_OK);
    for (int step = 1; step < 6; step++)
      assert_int_equal(gs_llm_engine_decode(e, 2, 0, tokens[r][step]), GS_OK);
    logits[r] = malloc(2 * vocab * sizeof *logits[r]);
    assert_int_equal(gs_llm_engine_logits(e, 2, logits[r]), GS_OK);
    gs_llm_engine_destroy(e);
  }
  assert_memory_equal(tokens[0], tokens[1], sizeof tokens[0]);
  float top = 0.0f;
  for (size_t i = 0; i < 2 * vocab; i++) top = fmaxf(top, fabsf(logits[0][i]));
  for (size_t i = 0; i < 2 * vocab; i++) assert_float_equal(logits[0][i], logits[1][i], 1e-4 * top);
  free(logits[0]);
  free(logits[1]);
  // A split the shape does not allow is refused by name.
  c.tp = 3;
  gs_llm_engine *e = NULL;
  assert_int_equal(gs_llm_engine_create(&c, GS_BACKEND_CPU, NULL, &e), GS_ERR_USAGE);
  assert_null(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bf16_rounding),
      cmocka_unit_test(test_weights_deterministic),
      cmocka_unit_test(test_parameter_counts),
      cmocka_unit_test(test_rmsnorm),
      cmocka_unit_test(test_rope),
      cmocka_unit_test(test_attention),
      cmocka_unit_test(test_swiglu_argmax),
      cmocka_unit_test(test_cache_matches_full_prompt),
      cmocka_unit_test(test_batch_rows_independent),
      cmocka_unit_test(test_engine_deterministic),
      cmocka_unit_test(test_shard_slices_cover),
      cmocka_unit_test(test_tensor_parallel_matches_whole),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
