/* Tests of the mlp CPU reference: parameter counts of the presets, the
 * dataset's determinism and correlated columns, gradients against central
 * finite differences (with dropout on: masks are fixed by the step), a
 * split batch summing to the whole batch's gradient (what data parallelism
 * relies on), Adam against a hand computation, and the loss falling on the
 * synthetic task. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "workload_options_fixture.h"
#include "workloads/mlp/mlp.h"
#include "workloads/mlp/mlp_hash.h"
#include "workloads/workload.h"

static gs_mlp_model model_of(const uint32_t *widths, int n, float dropout) {
  gs_mlp_model m;
  memset(&m, 0, sizeof m);
  m.n_layers = n - 1;
  for (int i = 0; i < n; i++) m.widths[i] = widths[i];
  m.dropout = dropout;
  return m;
}

static void test_parameter_counts(void **state) {
  (void)state;
  const uint32_t medium[] = {50, 256, 128, 64, 3};
  const uint32_t large[] = {50, 1024, 1024, 512, 512, 256, 3};
  gs_mlp_model m = model_of(medium, 5, 0.2f);
  assert_int_equal(gs_mlp_param_count(&m), 54403);
  assert_int_equal(gs_mlp_bias_offset(&m, 0), 50 * 256);
  assert_int_equal(gs_mlp_weight_offset(&m, 1), 50 * 256 + 256);
  m = model_of(large, 7, 0.3f);
  assert_int_equal(gs_mlp_param_count(&m), 2021379);
}

/* The work model of a training step, against the sums done by hand for
 * 8-16-2 (multiply-adds 128 + 32; 178 parameters; 16 hidden and 18 layer
 * output values, 26 activation values per sample) and the large preset. */
static void test_step_work_by_hand(void **state) {
  (void)state;
  const uint32_t small[] = {8, 16, 2};
  gs_mlp_model m = model_of(small, 3, 0.2f);
  // GEMMs 2 x (2 x 128 + 3 x 32) = 704, bias 2 x 18, dropout 2 x 16, MSE 6 x 2 per
  // sample; Adam 14 x 178.
  assert_int_equal(gs_mlp_step_flops(&m, 16), 16 * (704 + 36 + 32 + 12) + 14 * 178);
  assert_int_equal(gs_mlp_step_flops(&m, 16), 15036);
  // Without dropout only the backward scale of a hidden value is left.
  m.dropout = 0.0f;
  assert_int_equal(gs_mlp_step_flops(&m, 16), 16 * (704 + 36 + 16 + 12) + 14 * 178);
  // fp32: 3 x 4 bytes per activation value, 4 + 28 + 8 per parameter; bf16:
  // 3 x 2, and 4 + 28 + 4 + 2 (its weight copy written by Adam).
  assert_int_equal(gs_mlp_step_bytes(&m, 16, 0), 16 * 12 * 26 + 40 * 178);
  assert_int_equal(gs_mlp_step_bytes(&m, 16, 0), 12112);
  assert_int_equal(gs_mlp_step_bytes(&m, 16, 1), 16 * 6 * 26 + 38 * 178);
  // The large preset at batch 8192 (docs/workloads/mlp.md, "Roofline"):
  // 6,002,944 GEMM multiply-adds per sample (no input gradient into the 50
  // inputs), 3331 layer outputs, 3328 hidden values, 3 outputs.
  const uint32_t large[] = {50, 1024, 1024, 512, 512, 256, 3};
  m = model_of(large, 7, 0.3f);
  const uint64_t per_sample = 2 * 6002944ull + 2 * 3331 + 2 * 3328 + 6 * 3;
  assert_int_equal(per_sample, 12019224);
  assert_int_equal(gs_mlp_step_flops(&m, 8192), 8192 * per_sample + 14 * 2021379ull);
  assert_int_equal(gs_mlp_step_flops(&m, 8192), 98489782314ull);
  assert_int_equal(gs_mlp_step_bytes(&m, 8192, 0), 8192ull * 12 * 3381 + 40 * 2021379ull);
}

/* The workload's cost is that model with the options' precision and its bound. */
static void test_cost_per_precision(void **state) {
  (void)state;
  const gs_workload *w = gs_workload_find("mlp");
  assert_non_null(w);
  static const char *const precisions[] = {"fp32", "tf32", "bf16"};
  static const gs_bound bounds[] = {GS_BOUND_FP32, GS_BOUND_TF32, GS_BOUND_BF16};
  for (int p = 0; p < 3; p++) {
    const char *words[] = {"--layers", "8,16,2", "--dropout", "0.2", "--precision",
                           precisions[p], NULL};
    void *opts = workload_options(w, words);
    gs_cost cost;
    w->cost(opts, 16, &cost);
    assert_int_equal(cost.items, 16);
    assert_int_equal(cost.flops, 15036);
    assert_int_equal(cost.bytes, p == 2 ? 16 * 6 * 26 + 38 * 178 : 12112);
    assert_int_equal(cost.bound, bounds[p]);
    w->options_free(opts);
  }
}

static void test_dataset_is_deterministic_and_correlated(void **state) {
  (void)state;
  enum { N = 2000, F = 50, T = 3 };
  float *x = malloc(sizeof(float) * N * F), *y = malloc(sizeof(float) * N * T);
  float *x2 = malloc(sizeof(float) * N * F), *y2 = malloc(sizeof(float) * N * T);
  gs_mlp_generate(7, N, F, T, x, y);
  gs_mlp_generate(7, N, F, T, x2, y2);
  assert_memory_equal(x, x2, sizeof(float) * N * F);
  assert_memory_equal(y, y2, sizeof(float) * N * T);
  gs_mlp_generate(8, N, F, T, x2, y2);
  assert_true(memcmp(x, x2, sizeof(float) * N * F) != 0);
  // Column 40 copies column 30 (0.9 x + 0.3 noise): correlation ~0.95;
  // independent columns 0 and 1: near 0.
  double s00 = 0, s11 = 0, s01 = 0, a00 = 0, a11 = 0, a01 = 0;
  for (int n = 0; n < N; n++) {
    const double a = x[n * F + 30], b = x[n * F + 40], c = x[n * F + 0], d = x[n * F + 1];
    s00 += a * a, s11 += b * b, s01 += a * b;
    a00 += c * c, a11 += d * d, a01 += c * d;
  }
  assert_true(s01 / sqrt(s00 * s11) > 0.9);
  assert_true(fabs(a01 / sqrt(a00 * a11)) < 0.1);
  free(x), free(y), free(x2), free(y2);
}

typedef struct {
  gs_mlp_model m;
  gs_mlp_data d;
  float *x, *y, *params, *grads;
  uint64_t count;
} fixture;

static void fixture_make(fixture *f, const uint32_t *widths, int n, float dropout, uint64_t samples) {
  f->m = model_of(widths, n, dropout);
  f->count = gs_mlp_param_count(&f->m);
  const uint32_t F = widths[0], T = widths[n - 1];
  f->x = malloc(sizeof(float) * samples * F);
  f->y = malloc(sizeof(float) * samples * T);
  gs_mlp_generate(3, samples, F, T, f->x, f->y);
  f->d = (gs_mlp_data){.n = samples, .features = F, .targets = T, .x = f->x, .y = f->y};
  f->params = malloc(sizeof(float) * f->count);
  f->grads = malloc(sizeof(float) * f->count);
  gs_mlp_init_params(&f->m, 11, f->params);
  // Non-zero biases so that their gradients are exercised away from 0.
  for (int l = 0; l < f->m.n_layers; l++)
    for (uint32_t o = 0; o < widths[l + 1]; o++)
      f->params[gs_mlp_bias_offset(&f->m, l) + o] = 0.05f * (float)((o % 5) - 1);
}

static void fixture_free(fixture *f) {
  free(f->x), free(f->y), free(f->params), free(f->grads);
}

static double loss_at(fixture *f, const gs_mlp_batch *b) {
  double loss = 0.0;
  float *scratch = malloc(sizeof(float) * f->count);
  assert_int_equal(gs_mlp_cpu_gradients(&f->m, f->params, &f->d, b, scratch, &loss), GS_OK);
  free(scratch);
  return loss;
}

static void test_gradients_match_finite_differences(void **state) {
  (void)state;
  const uint32_t widths[] = {7, 9, 6, 2};
  fixture f;
  fixture_make(&f, widths, 4, 0.25f, 64);
  const gs_mlp_batch b = {.step = 3, .global_batch = 8, .offset = 0, .rows = 8, .seed = 99};
  double loss = 0.0;
  assert_int_equal(gs_mlp_cpu_gradients(&f.m, f.params, &f.d, &b, f.grads, &loss), GS_OK);
  assert_true(loss > 0.0);
  double gmax = 0.0;
  for (uint64_t i = 0; i < f.count; i++) gmax = fmax(gmax, fabs(f.grads[i]));
  assert_true(gmax > 0.0);
  int checked = 0, mismatched = 0;
  for (uint64_t i = 0; i < f.count; i++) {
    const float saved = f.params[i];
    const float h = 1e-2f * fmaxf(1.0f, fabsf(saved));
    f.params[i] = saved + h;
    const double up = loss_at(&f, &b);
    f.params[i] = saved - h;
    const double down = loss_at(&f, &b);
    f.params[i] = saved;
    const double numeric = (up - down) / (double)((saved + h) - (saved - h));
    // ReLU kinks inside [w - h, w + h] break the quadratic model; they are
    // rare, so allow a few mismatches but check every parameter.
    checked++;
    if (fabs(numeric - f.grads[i]) > 2e-3 * gmax + 2e-2 * fabs(numeric)) mismatched++;
  }
  assert_int_equal(checked, (int)f.count);
  assert_true(mismatched <= checked / 50);
  fixture_free(&f);
}

static void test_split_batch_sums_to_whole_batch(void **state) {
  (void)state;
  const uint32_t widths[] = {12, 16, 8, 3};
  fixture f;
  fixture_make(&f, widths, 4, 0.3f, 100);
  const gs_mlp_batch whole = {.step = 5, .global_batch = 24, .offset = 0, .rows = 24, .seed = 4};
  gs_mlp_batch first = whole, second = whole;
  first.rows = 10;
  second.offset = 10;
  second.rows = 14;
  float *g1 = malloc(sizeof(float) * f.count), *g2 = malloc(sizeof(float) * f.count);
  double l0 = 0, l1 = 0, l2 = 0;
  assert_int_equal(gs_mlp_cpu_gradients(&f.m, f.params, &f.d, &whole, f.grads, &l0), GS_OK);
  assert_int_equal(gs_mlp_cpu_gradients(&f.m, f.params, &f.d, &first, g1, &l1), GS_OK);
  assert_int_equal(gs_mlp_cpu_gradients(&f.m, f.params, &f.d, &second, g2, &l2), GS_OK);
  assert_true(fabs(l0 - (l1 + l2)) <= 1e-6 * l0);
  // Each part is rounded to float once: compare relative to the largest.
  double gmax = 0.0;
  for (uint64_t i = 0; i < f.count; i++) gmax = fmax(gmax, fabs(f.grads[i]));
  for (uint64_t i = 0; i < f.count; i++)
    assert_true(fabs((double)f.grads[i] - ((double)g1[i] + g2[i])) <= 1e-6 * gmax);
  free(g1), free(g2);
  fixture_free(&f);
}

static void test_adam_first_step_moves_by_lr(void **state) {
  (void)state;
  const gs_mlp_adam a = {.lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
  float g[2] = {0.5f, -2.0f}, w[2] = {1.0f, 1.0f}, m1[2] = {0, 0}, m2[2] = {0, 0};
  gs_mlp_cpu_adam(&a, 1, 2, g, w, m1, m2);
  // Bias-corrected first step: m_hat / sqrt(v_hat) = sign(g).
  assert_float_equal(w[0], 0.99f, 1e-6);
  assert_float_equal(w[1], 1.01f, 1e-6);
  assert_float_equal(m1[0], 0.05f, 1e-7);
  assert_float_equal(m2[1], 0.004f, 1e-7);
}

static void test_loss_decreases_on_synthetic_task(void **state) {
  (void)state;
  const uint32_t widths[] = {50, 32, 16, 3};
  fixture f;
  fixture_make(&f, widths, 4, 0.1f, 2048);
  const gs_mlp_adam a = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
  float *m1 = calloc(f.count, sizeof(float)), *m2 = calloc(f.count, sizeof(float));
  double first = 0.0, last = 0.0;
  enum { STEPS = 300, WINDOW = 20 };
  for (uint64_t t = 0; t < STEPS; t++) {
    const gs_mlp_batch b = {.step = t, .global_batch = 64, .offset = 0, .rows = 64, .seed = 1};
    double loss = 0.0;
    assert_int_equal(gs_mlp_cpu_gradients(&f.m, f.params, &f.d, &b, f.grads, &loss), GS_OK);
    gs_mlp_cpu_adam(&a, t + 1, f.count, f.grads, f.params, m1, m2);
    if (t < WINDOW) first += loss / WINDOW;
    if (t >= STEPS - WINDOW) last += loss / WINDOW;
  }
  assert_true(isfinite(last));
  assert_true(last < 0.5 * first);
  free(m1), free(m2);
  fixture_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parameter_counts),
      cmocka_unit_test(test_step_work_by_hand),
      cmocka_unit_test(test_cost_per_precision),
      cmocka_unit_test(test_dataset_is_deterministic_and_correlated),
      cmocka_unit_test(test_gradients_match_finite_differences),
      cmocka_unit_test(test_split_batch_sums_to_whole_batch),
      cmocka_unit_test(test_adam_first_step_moves_by_lr),
      cmocka_unit_test(test_loss_decreases_on_synthetic_task),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
