/* Tests of the mlp gradient bound (workloads/mlp/mlp_tolerance.c): the
 * unit roundoffs and the per-operation error; the gradients of the medium
 * preset computed from weights and inputs rounded to bf16 (and to tf32)
 * lie within their bounds at 32 and at 256 rows, for several seeds and
 * biases away from 0, while an element made wrong (the largest negated in
 * bf16, halved in tf32) lies outside: the largest gradient's bound stays
 * below twice its size in bf16 (0.3 of it in tf32), so the check still
 * has teeth; two units at their ReLU's kink in a row, which the GPU both
 * passes, stay within the bound of the weight between them; and the GPU's
 * bf16 step emulated on the CPU stays within its bounds over 70 steps of
 * training. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "workloads/mlp/mlp.h"
#include "workloads/mlp/mlp_layers.h"
#include "workloads/mlp/mlp_tolerance.h"

/* x rounded to nearest (ties to even) with `bits` significand bits. */
static float round_to(float x, int bits) {
  int e = 0;
  const double f = frexp((double)x, &e);  // x = f 2^e, 0.5 <= |f| < 1
  return (float)ldexp(nearbyint(ldexp(f, bits)), e - bits);
}

static void test_roundoff(void **state) {
  (void)state;
  assert_true(gs_mlp_unit_roundoff(GS_MLP_BF16) == 1.0 / 256.0);
  assert_true(gs_mlp_unit_roundoff(GS_MLP_TF32) == 1.0 / 2048.0);
  assert_true(gs_mlp_unit_roundoff(GS_MLP_FP32) == ldexp(1.0, -24));
  const gs_mlp_model m = {.n_layers = 2, .widths = {50, 256, 3}};
  // 2u + (K + world) 2^-24 with K the widest layer or the rows, whichever is more.
  assert_true(gs_mlp_op_error(&m, GS_MLP_BF16, 32, 2) == 3.0 / 256.0 + 258.0 * ldexp(1.0, -24));
  assert_true(gs_mlp_op_error(&m, GS_MLP_BF16, 1000, 1) == 3.0 / 256.0 + 1001.0 * ldexp(1.0, -24));
  assert_true(round_to(1.0f + 1.0f / 512.0f, 8) == 1.0f);      // a tie: to even
  assert_true(round_to(1.0f + 3.0f / 512.0f, 8) == 1.0f + 4.0f / 512.0f);
}

/* The medium preset's gradients over `rows` samples from weights and inputs
 * rounded to `bits` significand bits, against the exact-input reference
 * and its bounds for `precision`; returns the elements outside. */
static uint64_t outside_bounds(gs_mlp_precision precision, int bits, uint64_t rows, uint64_t seed,
                               double corrupt, gs_mlp_gradient_check *check) {
  gs_mlp_model m = {.n_layers = 4, .widths = {50, 256, 128, 64, 3}, .dropout = 0.2f};
  const uint64_t count = gs_mlp_param_count(&m);
  float *params = malloc(count * sizeof *params), *rounded = malloc(count * sizeof *rounded);
  float *ref = malloc(count * sizeof *ref), *dev = malloc(count * sizeof *dev);
  double *bound = malloc(count * sizeof *bound);
  float *x = malloc(rows * 50 * sizeof *x), *xr = malloc(rows * 50 * sizeof *xr);
  float *y = malloc(rows * 3 * sizeof *y);
  assert_true(params && rounded && ref && dev && bound && x && xr && y);
  gs_mlp_init_params(&m, seed, params);
  // Biases away from 0, as after training.
  for (int l = 0; l < m.n_layers; l++)
    for (uint32_t o = 0; o < m.widths[l + 1]; o++)
      params[gs_mlp_bias_offset(&m, l) + o] = 0.05f * (float)((o * 7 + l) % 5) - 0.1f;
  gs_mlp_generate(seed, rows, 50, 3, x, y);
  for (uint64_t i = 0; i < count; i++) rounded[i] = round_to(params[i], bits);
  for (uint64_t i = 0; i < rows * 50; i++) xr[i] = round_to(x[i], bits);
  const gs_mlp_batch b = {.step = 3, .global_batch = rows, .rows = rows, .seed = seed};
  const gs_mlp_data d = {.n = rows, .features = 50, .targets = 3, .x = x, .y = y};
  const gs_mlp_data dr = {.n = rows, .features = 50, .targets = 3, .x = xr, .y = y};
  double loss = 0.0;
  assert_int_equal(gs_mlp_cpu_gradients(&m, params, &d, &b, ref, &loss), GS_OK);
  assert_int_equal(gs_mlp_cpu_gradients(&m, rounded, &dr, &b, dev, &loss), GS_OK);
  assert_int_equal(gs_mlp_gradient_bounds(&m, params, &d, &b, gs_mlp_op_error(&m, precision, rows, 1),
                                          bound), GS_OK);
  gs_mlp_gradient_compare(count, dev, ref, bound, corrupt, check);
  free(params);
  free(rounded);
  free(ref);
  free(dev);
  free(bound);
  free(x);
  free(xr);
  free(y);
  return check->outside;
}

static void test_rounded_gradients_within_bounds(void **state) {
  (void)state;
  gs_mlp_gradient_check c;
  for (uint64_t seed = 1; seed <= 3; seed++) {
    assert_int_equal(outside_bounds(GS_MLP_BF16, 8, 32, seed, 1.0, &c), 0);
    // The rounding moved the gradients (the test is not empty) by less
    // than the bounds; the largest gradient's bound stays below twice its
    // size, so that element negated is caught.
    assert_true(c.norm_error > 1e-3 && c.norm_error < c.norm_bound);
    assert_true(c.bound_at_max_ref < 2.0 * c.max_ref);
    assert_int_equal(outside_bounds(GS_MLP_BF16, 8, 256, seed, 1.0, &c), 0);
    assert_true(c.bound_at_max_ref < 2.0 * c.max_ref);
    assert_int_equal(outside_bounds(GS_MLP_TF32, 11, 256, seed, 1.0, &c), 0);
    assert_true(c.bound_at_max_ref < 0.3 * c.max_ref);
  }
}

static void test_wrong_element_outside(void **state) {
  (void)state;
  gs_mlp_gradient_check c;
  assert_true(outside_bounds(GS_MLP_BF16, 8, 32, 7, -1.0, &c) >= 1);
  assert_true(outside_bounds(GS_MLP_BF16, 8, 256, 7, -1.0, &c) >= 1);
  assert_true(outside_bounds(GS_MLP_TF32, 11, 256, 7, 0.5, &c) >= 1);
  // A NaN is never within a bound.
  float g[2] = {NAN, 1.0f};
  const float r[2] = {1.0f, 1.0f};
  const double bound[2] = {1e9, 0.0};
  gs_mlp_gradient_compare(2, g, r, bound, 1.0, &c);
  assert_int_equal(c.outside, 1);
  assert_true(isinf(c.max_error));
}

/* Two units in a row at their ReLU's kink (the 1-2-1-1 network below): in
 * the reference the first's input is -1.4e-4 and the second's -1e-4, both
 * cut, so the gradient of the weight between them is 0; with the first
 * layer's weight rounded to bf16 (1 + 3 2^-9 becomes 1 + 2^-7) both pass,
 * and that gradient is -2 x 0.0018. Each first-order term of its bound is
 * 0 (a factor of each product is 0 in the reference): the product of the
 * two errors is what bounds it. Biases stay fp32, as on the GPU. */
static void test_two_flips_in_a_row(void **state) {
  (void)state;
  const gs_mlp_model m = {.n_layers = 3, .widths = {1, 2, 1, 1}};
  const uint64_t count = gs_mlp_param_count(&m);
  assert_int_equal(count, 9);
  float params[9], rounded[9], ref[9], dev[9];
  float *w0 = params + gs_mlp_weight_offset(&m, 0), *b0 = params + gs_mlp_bias_offset(&m, 0);
  float *w1 = params + gs_mlp_weight_offset(&m, 1), *b1 = params + gs_mlp_bias_offset(&m, 1);
  w0[0] = 1.0f + 3.0f / 512.0f, b0[0] = -1.006f;  // unit a: cut, passed once rounded
  w0[1] = 1.0f, b0[1] = 0.0f;                     // unit b: 1
  w1[0] = 1.0f, w1[1] = 0.5f, b1[0] = -0.5001f;   // cut, passed with a passed
  params[gs_mlp_weight_offset(&m, 2)] = 1.0f;
  params[gs_mlp_bias_offset(&m, 2)] = 0.0f;
  memcpy(rounded, params, sizeof params);
  for (int l = 0; l < m.n_layers; l++)
    for (uint64_t i = gs_mlp_weight_offset(&m, l); i < gs_mlp_bias_offset(&m, l); i++)
      rounded[i] = round_to(params[i], 8);
  assert_true(rounded[gs_mlp_weight_offset(&m, 0)] == 1.0f + 1.0f / 128.0f);
  const float x = 1.0f, y = 1.0f;
  const gs_mlp_data d = {.n = 1, .features = 1, .targets = 1, .x = &x, .y = &y};
  const gs_mlp_batch b = {.step = 0, .global_batch = 1, .rows = 1, .seed = 1};
  double loss = 0.0, bound[9];
  assert_int_equal(gs_mlp_cpu_gradients(&m, params, &d, &b, ref, &loss), GS_OK);
  assert_int_equal(gs_mlp_cpu_gradients(&m, rounded, &d, &b, dev, &loss), GS_OK);
  const uint64_t between = gs_mlp_weight_offset(&m, 1);  // unit a to the second
  assert_true(ref[between] == 0.0f);
  assert_true(dev[between] < -0.003f && dev[between] > -0.004f);
  assert_int_equal(gs_mlp_gradient_bounds(&m, params, &d, &b, gs_mlp_op_error(&m, GS_MLP_BF16, 1, 1),
                                          bound), GS_OK);
  assert_true(bound[between] >= fabs((double)dev[between]));
  gs_mlp_gradient_check c;
  gs_mlp_gradient_compare(count, dev, ref, bound, 1.0, &c);
  assert_int_equal(c.outside, 0);
}

/* x rounded to bf16 in place, n values. */
static void round_all(float *v, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) v[i] = round_to(v[i], 8);
}

/* The GPU's bf16 step emulated on the CPU, trained by Adam on its own
 * gradients for 70 steps of the medium preset at 32 rows: weights, inputs,
 * every stored activation and every stored output gradient rounded to
 * bf16, biases and sums not (as mlp_cuda.cu keeps them). Every step, from
 * the same parameters, each gradient lies within its bound of the
 * reference, and the largest one's bound stays below 4 times its size (so
 * --verify-corrupt -3 is caught). Without the bound's second-order term
 * a weight between two units at their kink fell outside at step 68. */
static void test_emulated_bf16_training(void **state) {
  (void)state;
  gs_mlp_model m = {.n_layers = 4, .widths = {50, 256, 128, 64, 3}, .dropout = 0.2f};
  const int L = m.n_layers;
  const uint64_t rows = 32, n = 4096, count = gs_mlp_param_count(&m);
  float *p = malloc(count * sizeof *p), *pr = malloc(count * sizeof *pr);
  float *m1 = calloc(count, sizeof *m1), *m2 = calloc(count, sizeof *m2);
  float *ref = malloc(count * sizeof *ref), *dev = malloc(count * sizeof *dev);
  double *bound = malloc(count * sizeof *bound), *acc = malloc(count * sizeof *acc);
  float *x = malloc(n * 50 * sizeof *x), *y = malloc(n * 3 * sizeof *y);
  float *dz = malloc(rows * 256 * sizeof *dz), *dzp = malloc(rows * 256 * sizeof *dzp);
  float *act[GS_MLP_MAX_LAYERS + 1] = {NULL};
  for (int l = 0; l <= L; l++) act[l] = malloc(rows * m.widths[l] * sizeof(float));
  assert_true(p && pr && m1 && m2 && ref && dev && bound && acc && x && y && dz && dzp && act[L]);
  gs_mlp_init_params(&m, 1, p);
  gs_mlp_generate(1, n, 50, 3, x, y);
  const gs_mlp_adam adam = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
  const gs_mlp_data d = {.n = n, .features = 50, .targets = 3, .x = x, .y = y};
  const double e = gs_mlp_op_error(&m, GS_MLP_BF16, rows, 1);
  double worst = 0.0;
  for (uint64_t step = 0; step < 70; step++) {
    const gs_mlp_batch b = {.step = step, .global_batch = rows, .rows = rows, .seed = 5};
    memcpy(pr, p, count * sizeof *p);
    for (int l = 0; l < L; l++)
      round_all(pr + gs_mlp_weight_offset(&m, l), (uint64_t)m.widths[l] * m.widths[l + 1]);
    gs_mlp_cpu_inputs(&m, &d, &b, rows, act[0]);
    round_all(act[0], rows * m.widths[0]);
    for (int l = 0; l < L; l++) {
      gs_mlp_cpu_layer_forward(&m, l, pr, &b, rows, act[l], act[l + 1]);
      if (l < L - 1) round_all(act[l + 1], rows * m.widths[l + 1]);
    }
    gs_mlp_cpu_loss_grad(&m, &d, &b, rows, act[L], dz);
    round_all(dz, rows * m.widths[L]);
    memset(acc, 0, count * sizeof *acc);
    for (int l = L - 1; l >= 0; l--) {
      gs_mlp_cpu_layer_weight_grads(&m, l, rows, dz, act[l], acc + gs_mlp_weight_offset(&m, l),
                                    acc + gs_mlp_bias_offset(&m, l));
      if (l == 0) break;
      gs_mlp_cpu_layer_input_grad(&m, l, pr, rows, dz, act[l], dzp);
      round_all(dzp, rows * m.widths[l]);
      float *t = dz;
      dz = dzp;
      dzp = t;
    }
    for (uint64_t i = 0; i < count; i++) dev[i] = (float)acc[i];
    double loss = 0.0;
    assert_int_equal(gs_mlp_cpu_gradients(&m, p, &d, &b, ref, &loss), GS_OK);
    assert_int_equal(gs_mlp_gradient_bounds(&m, p, &d, &b, e, bound), GS_OK);
    gs_mlp_gradient_check c;
    gs_mlp_gradient_compare(count, dev, ref, bound, 1.0, &c);
    if (c.outside) fail_msg("step %llu: %llu gradients outside their bounds",
                            (unsigned long long)step, (unsigned long long)c.outside);
    assert_true(c.norm_error > 1e-3);  // the emulation rounds: not empty
    assert_true(c.bound_at_max_ref < 4.0 * c.max_ref);
    for (uint64_t i = 0; i < count; i++)
      if (bound[i] > 0.0) worst = fmax(worst, fabs((double)dev[i] - ref[i]) / bound[i]);
    gs_mlp_cpu_adam(&adam, step + 1, count, dev, p, m1, m2);
  }
  assert_true(worst > 0.01 && worst < 1.0);
  for (int l = 0; l <= L; l++) free(act[l]);
  free(p), free(pr), free(m1), free(m2), free(ref), free(dev), free(bound), free(acc);
  free(x), free(y), free(dz), free(dzp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundoff),
      cmocka_unit_test(test_rounded_gradients_within_bounds),
      cmocka_unit_test(test_wrong_element_outside),
      cmocka_unit_test(test_two_flips_in_a_row),
      cmocka_unit_test(test_emulated_bf16_training),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
