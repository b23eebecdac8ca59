/* Unit tests of the collectives' table and model: nccl-tests' bus-bandwidth
 * factors, every descriptor complete, the sources of received blocks, sizes
 * per rank, the alpha-beta fit, measured curves and the allreduce as
 * 2-rank pairs, and the expected results that checks
 * compare against (including half and bfloat16 encoding). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "runner/coll_data.h"
#include "core/coll_model.h"

static void test_busbw_factors(void **state) {
  (void)state;
  // nccl-tests: allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n; others 1.
  assert_float_equal(gs_coll_busbw_factor(GS_COLL_ALLREDUCE, 2), 1.0, 1e-15);
  assert_float_equal(gs_coll_busbw_factor(GS_COLL_ALLREDUCE, 8), 1.75, 1e-15);
  assert_float_equal(gs_coll_busbw_factor(GS_COLL_ALLGATHER, 4), 0.75, 1e-15);
  assert_float_equal(gs_coll_busbw_factor(GS_COLL_REDUCESCATTER, 8), 0.875, 1e-15);
  assert_float_equal(gs_coll_busbw_factor(GS_COLL_ALLTOALL, 2), 0.5, 1e-15);
  assert_float_equal(gs_coll_busbw_factor(GS_COLL_BROADCAST, 8), 1.0, 1e-15);
  assert_float_equal(gs_coll_busbw_factor(GS_COLL_REDUCE, 8), 1.0, 1e-15);
  assert_float_equal(gs_coll_busbw_factor(GS_COLL_SENDRECV, 8), 1.0, 1e-15);
  assert_float_equal(gs_coll_busbw_factor(GS_COLL_ALLREDUCE, 1), 0.0, 1e-15);
}

/* Every descriptor is complete and named as the name list names it, so a
 * collective added to the enum without its entry fails here. */
static void test_table_complete(void **state) {
  (void)state;
  for (int k = 0; k < GS_COLL_COUNT; k++) {
    const gs_coll_desc *d = gs_coll_desc_of((gs_coll_op)k);
    assert_non_null(d->name);
    assert_non_null(gs_coll_op_names[k]);
    assert_string_equal(d->name, gs_coll_op_names[k]);
    assert_ptr_equal(gs_coll_desc_named(d->name), d);
    assert_non_null(d->source);
    assert_true(d->busbw_scale > 0.0);
  }
  assert_null(gs_coll_op_names[GS_COLL_COUNT]);
  assert_null(gs_coll_desc_named("gather"));
  assert_null(gs_coll_desc_named(NULL));
  assert_true(isnan(gs_coll_busbw_factor_of("hypercube", 4)));
  assert_float_equal(gs_coll_busbw_factor_of("reducescatter", 4), 0.75, 1e-15);
}

/* The sources of each op's received blocks, at rank 1 of 4 with root 2. */
static void test_sources(void **state) {
  (void)state;
  const gs_coll_who who = {.rank = 1, .ranks = 4, .root = 2, .recv_peer = 0};
  gs_coll_source s;
  gs_coll_desc_of(GS_COLL_ALLREDUCE)->source(&who, 0, &s);
  assert_true(s.reduced && s.block == 0);
  gs_coll_desc_of(GS_COLL_REDUCESCATTER)->source(&who, 0, &s);
  assert_true(s.reduced && s.block == 1); /* this rank's block of every input */
  gs_coll_desc_of(GS_COLL_ALLGATHER)->source(&who, 3, &s);
  assert_true(!s.reduced && s.rank == 3 && s.block == 0);
  gs_coll_desc_of(GS_COLL_ALLTOALL)->source(&who, 3, &s);
  assert_true(!s.reduced && s.rank == 3 && s.block == 1); /* rank 3's block for rank 1 */
  gs_coll_desc_of(GS_COLL_BROADCAST)->source(&who, 0, &s);
  assert_true(!s.reduced && s.rank == 2 && s.block == 0);
  gs_coll_desc_of(GS_COLL_SENDRECV)->source(&who, 0, &s);
  assert_true(!s.reduced && s.rank == 0 && s.block == 0);
  assert_true(gs_coll_desc_of(GS_COLL_REDUCE)->root_only);
  assert_int_equal(gs_coll_desc_of(GS_COLL_ALLGATHER)->in_place, GS_COLL_IN_PLACE_SEND_AT_RANK);
  assert_int_equal(gs_coll_desc_of(GS_COLL_REDUCESCATTER)->in_place,
                   GS_COLL_IN_PLACE_RECV_AT_RANK);
}

static void test_shapes(void **state) {
  (void)state;
  gs_coll_shape s;
  gs_coll_shape_for(GS_COLL_ALLREDUCE, 1000, 4, 3, &s);
  assert_int_equal(s.bytes, 1000);
  assert_int_equal(s.count, 250);
  assert_int_equal(s.param_count, 250);
  // Allgather: the size is the gathered buffer; 3 ranks share 250 elements
  // as 3 blocks of 83, so 996 bytes are moved.
  gs_coll_shape_for(GS_COLL_ALLGATHER, 1000, 4, 3, &s);
  assert_int_equal(s.param_count, 83);
  assert_int_equal(s.count, 249);
  assert_int_equal(s.bytes, 996);
  assert_int_equal(s.send_elements, 83);
  assert_int_equal(s.recv_elements, 249);
  gs_coll_shape_for(GS_COLL_REDUCESCATTER, 1000, 4, 3, &s);
  assert_int_equal(s.send_elements, 249);
  assert_int_equal(s.recv_elements, 83);
  gs_coll_shape_for(GS_COLL_ALLTOALL, 64, 8, 2, &s);
  assert_int_equal(s.param_count, 4);
  assert_int_equal(s.send_elements, 8);
  assert_int_equal(s.recv_elements, 8);
  // Too small to give every rank an element: nothing to measure.
  gs_coll_shape_for(GS_COLL_ALLGATHER, 8, 4, 4, &s);
  assert_int_equal(s.bytes, 0);
  gs_coll_shape_for(GS_COLL_SENDRECV, 7, 4, 2, &s);
  assert_int_equal(s.bytes, 4);
  assert_true(gs_coll_has_in_place(GS_COLL_ALLGATHER));
  assert_false(gs_coll_has_in_place(GS_COLL_ALLTOALL));
  assert_true(gs_coll_has_root(GS_COLL_REDUCE));
  assert_false(gs_coll_has_redop(GS_COLL_BROADCAST));
}

static void test_fit_exact_line(void **state) {
  (void)state;
  // t = 10 us + x / (300 GB/s), from 8 B to 1 GiB: recovered exactly.
  double x[9], t[9];
  for (int i = 0; i < 9; i++) {
    x[i] = pow(2.0, 3 + 3.4 * i);
    t[i] = 10e-6 + x[i] / 300e9;
  }
  gs_coll_fit fit;
  assert_int_equal(gs_coll_fit_alpha_beta(x, t, 9, &fit), GS_OK);
  assert_float_equal(fit.alpha_seconds, 10e-6, 1e-12);
  assert_float_equal(1.0 / fit.beta_seconds_per_byte, 300e9, 1e3);
  assert_float_equal(fit.r_squared, 1.0, 1e-9);
  assert_int_equal(fit.points, 9);
  // Predicting at another size and rank count uses that count's factor.
  double predicted = gs_coll_predict_seconds(&fit, GS_COLL_ALLREDUCE, 1u << 30, 4);
  assert_float_equal(predicted, 10e-6 + (double)(1u << 30) * 1.5 / 300e9, 1e-9);
}

static void test_fit_relative_weights(void **state) {
  (void)state;
  // 10% noise on one large point must not swamp the latency term: with
  // relative weights alpha stays near 5 us.
  double x[] = {8, 1e3, 1e5, 1e7, 1e9};
  double t[5];
  for (int i = 0; i < 5; i++) t[i] = 5e-6 + x[i] / 100e9;
  t[4] *= 1.10;
  gs_coll_fit fit;
  assert_int_equal(gs_coll_fit_alpha_beta(x, t, 5, &fit), GS_OK);
  assert_true(fabs(fit.alpha_seconds - 5e-6) < 0.5e-6);
  assert_true(fit.r_squared < 1.0 && fit.r_squared > 0.9);
}

static void test_fit_rejects(void **state) {
  (void)state;
  gs_coll_fit fit;
  double x1[] = {8}, t1[] = {1e-5};
  assert_int_equal(gs_coll_fit_alpha_beta(x1, t1, 1, &fit), GS_ERR_USAGE);
  double x2[] = {8, 8, 8}, t2[] = {1e-5, 2e-5, 3e-5};
  assert_int_equal(gs_coll_fit_alpha_beta(x2, t2, 3, &fit), GS_ERR_USAGE);
  double x3[] = {8, 16}, t3[] = {1e-5, 0.0};
  assert_int_equal(gs_coll_fit_alpha_beta(x3, t3, 2, &fit), GS_ERR_USAGE);
}

static void test_curve_interpolates(void **state) {
  (void)state;
  // Unsorted, with a size measured twice (in place and out of place): averaged.
  double b[] = {4096, 1024, 4096, 16384}, t[] = {30e-6, 10e-6, 34e-6, 80e-6};
  gs_coll_curve c;
  assert_int_equal(gs_coll_curve_build(b, t, 4, 2, &c), GS_OK);
  assert_int_equal(c.n, 3);
  assert_int_equal(c.ranks, 2);
  assert_float_equal(c.bytes[1], 4096, 0);
  assert_float_equal(c.seconds[1], 32e-6, 1e-15);
  double s = 0;
  // A measured size gives its own time; between two, the straight line.
  assert_int_equal(gs_coll_curve_seconds(&c, 1024, &s), 1);
  assert_float_equal(s, 10e-6, 1e-15);
  assert_int_equal(gs_coll_curve_seconds(&c, 16384, &s), 1);
  assert_float_equal(s, 80e-6, 1e-15);
  assert_int_equal(gs_coll_curve_seconds(&c, 2560, &s), 1);
  assert_float_equal(s, 21e-6, 1e-15);
  assert_int_equal(gs_coll_curve_seconds(&c, 10240, &s), 1);
  assert_float_equal(s, 56e-6, 1e-15);
  // Outside the measured sizes, or without a curve: no figure.
  assert_int_equal(gs_coll_curve_seconds(&c, 1023, &s), 0);
  assert_int_equal(gs_coll_curve_seconds(&c, 16385, &s), 0);
  assert_int_equal(gs_coll_curve_seconds(NULL, 2048, &s), 0);
  gs_coll_curve_free(&c);
  // One size is no curve; a time that is not positive is refused.
  double one_b[] = {64, 64}, one_t[] = {5e-6, 7e-6};
  assert_int_equal(gs_coll_curve_build(one_b, one_t, 2, 2, &c), GS_OK);
  assert_int_equal(gs_coll_curve_seconds(&c, 64, &s), 0);
  gs_coll_curve_free(&c);
  double bad_t[] = {5e-6, 0.0};
  assert_int_equal(gs_coll_curve_build(b, bad_t, 2, 2, &c), GS_ERR_USAGE);
  assert_null(c.bytes);
}

static void test_allreduce_as_pairs(void **state) {
  (void)state;
  // Ring of 8: 7 pairs of 2S/8; tree of 8: depth 3, 3 pairs of 2S/3. Two
  // ranks: the ring is one pair of the message; the tree sends all of it up
  // and down, one pair of twice the message. One rank: none.
  static const struct {
    gs_coll_algorithm alg;
    double bytes;
    int ranks;
    double pairs, pair_bytes;
  } cases[] = {{GS_COLL_RING, 8000, 8, 7, 2000}, {GS_COLL_TREE, 9000, 8, 3, 6000},
               {GS_COLL_RING, 1000, 2, 1, 1000}, {GS_COLL_TREE, 1000, 2, 1, 2000},
               {GS_COLL_RING, 1000, 1, 0, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double pairs = -1, bytes = -1;
    gs_coll_allreduce_pairs(cases[i].alg, cases[i].bytes, cases[i].ranks, &pairs, &bytes);
    assert_float_equal(pairs, cases[i].pairs, 0);
    assert_float_equal(bytes, cases[i].pair_bytes, 1e-9);
  }
  // A measured 2-rank curve prices each pair where it covers the pair's size.
  double b[] = {1000, 3000}, t[] = {10e-6, 20e-6};
  gs_coll_curve c;
  assert_int_equal(gs_coll_curve_build(b, t, 2, 2, &c), GS_OK);
  // The link of its fit: 2a = 5 us, b = 5 ns/B.
  gs_coll_link link = {.alpha_seconds = 2.5e-6, .beta_seconds_per_byte = 5e-9};
  gs_coll_algorithm alg;
  int measured = 0;
  // 4 ranks, 4000 B: ring 3 pairs of 2000 B, measured 15 us each = 45 us;
  // tree 2 pairs of 4000 B, past the curve: 2 x (5 + 20 us) = 50 us.
  double best = gs_coll_allreduce_best_measured(&link, &c, 4000, 4, &alg, &measured);
  assert_int_equal(alg, GS_COLL_RING);
  assert_int_equal(measured, 1);
  assert_float_equal(best, 45e-6, 1e-15);
  // 16 ranks, 1000 B: ring 15 pairs of 125 B (5.625 us) = 84.4 us; tree 4
  // pairs of 500 B (7.5 us) = 30 us, both below the curve: the link.
  best = gs_coll_allreduce_best_measured(&link, &c, 1000, 16, &alg, &measured);
  assert_int_equal(alg, GS_COLL_TREE);
  assert_int_equal(measured, 0);
  assert_float_equal(best, 30e-6, 1e-15);
  gs_coll_curve_free(&c);
}

static void test_half_and_bfloat16(void **state) {
  (void)state;
  uint16_t h[4];
  gs_coll_store(h, 0, GS_DTYPE_HALF, 1.0);
  gs_coll_store(h, 1, GS_DTYPE_HALF, -2.5);
  gs_coll_store(h, 2, GS_DTYPE_HALF, 65504.0);
  gs_coll_store(h, 3, GS_DTYPE_HALF, 1e6);
  assert_int_equal(h[0], 0x3c00);
  assert_int_equal(h[1], 0xc100);
  assert_int_equal(h[2], 0x7bff);
  assert_int_equal(h[3], 0x7c00); /* beyond the range: infinity */
  assert_float_equal(gs_coll_element(h, 1, GS_DTYPE_HALF), -2.5, 1e-300);
  uint16_t b[2];
  gs_coll_store(b, 0, GS_DTYPE_BFLOAT16, 1.0);
  gs_coll_store(b, 1, GS_DTYPE_BFLOAT16, 257.0); /* rounds to even: 256 */
  assert_int_equal(b[0], 0x3f80);
  assert_float_equal(gs_coll_element(b, 1, GS_DTYPE_BFLOAT16), 256.0, 1e-300);
}

/* Simulates an allreduce of `ranks` on the host and checks the counter. */
static void test_expected_allreduce(void **state) {
  (void)state;
  enum { N = 37, RANKS = 3 };
  gs_coll_shape shape;
  gs_coll_shape_for(GS_COLL_ALLREDUCE, N * 4, 4, RANKS, &shape);
  int32_t out[N];
  for (size_t i = 0; i < N; i++) {
    int32_t sum = 0;
    for (int r = 0; r < RANKS; r++) sum += (int32_t)gs_coll_input_value(GS_REDOP_SUM, r, i);
    out[i] = sum;
  }
  gs_coll_case c = {.op = GS_COLL_ALLREDUCE,
                    .dtype = GS_DTYPE_INT32,
                    .redop = GS_REDOP_SUM,
                    .rank = 1,
                    .ranks = RANKS,
                    .shape = &shape};
  assert_int_equal(gs_coll_count_wrong(&c, out), 0);
  out[5] += 1;
  out[30] = -1;
  assert_int_equal(gs_coll_count_wrong(&c, out), 2);
}

static void test_expected_int8_wraps(void **state) {
  (void)state;
  // 64 ranks of sums overflow int8: expected values wrap like the device's.
  enum { N = 16, RANKS = 64 };
  gs_coll_shape shape;
  gs_coll_shape_for(GS_COLL_ALLREDUCE, N, 1, RANKS, &shape);
  int8_t out[N];
  for (size_t i = 0; i < N; i++) {
    uint8_t acc = 0;
    for (int r = 0; r < RANKS; r++)
      acc = (uint8_t)(acc + (uint8_t)gs_coll_input_value(GS_REDOP_SUM, r, i));
    out[i] = (int8_t)acc;
  }
  gs_coll_case c = {.op = GS_COLL_ALLREDUCE,
                    .dtype = GS_DTYPE_INT8,
                    .redop = GS_REDOP_SUM,
                    .rank = 0,
                    .ranks = RANKS,
                    .shape = &shape};
  assert_int_equal(gs_coll_count_wrong(&c, out), 0);
}

static void test_expected_allgather_and_alltoall(void **state) {
  (void)state;
  enum { RANKS = 2 };
  gs_coll_shape shape;
  gs_coll_shape_for(GS_COLL_ALLGATHER, 64, 4, RANKS, &shape);
  float out[16];
  for (size_t i = 0; i < shape.recv_elements; i++)
    out[i] = (float)gs_coll_input_value(GS_REDOP_SUM, (int)(i / shape.param_count),
                                        i % shape.param_count);
  gs_coll_case c = {
      .op = GS_COLL_ALLGATHER, .dtype = GS_DTYPE_FLOAT, .rank = 1, .ranks = RANKS, .shape = &shape};
  assert_int_equal(gs_coll_count_wrong(&c, out), 0);
  gs_coll_shape_for(GS_COLL_ALLTOALL, 64, 4, RANKS, &shape);
  for (size_t i = 0; i < shape.recv_elements; i++)
    out[i] = (float)gs_coll_input_value(GS_REDOP_SUM, (int)(i / shape.param_count),
                                        shape.param_count + i % shape.param_count);
  c.op = GS_COLL_ALLTOALL;
  assert_int_equal(gs_coll_count_wrong(&c, out), 0);
  c.rank = 0; /* rank 0 expects the other blocks */
  assert_true(gs_coll_count_wrong(&c, out) > 0);
  // Reduce: only the root is checked.
  gs_coll_case r = {.op = GS_COLL_REDUCE,
                    .dtype = GS_DTYPE_FLOAT,
                    .rank = 1,
                    .root = 0,
                    .ranks = RANKS,
                    .shape = &shape};
  assert_int_equal(gs_coll_count_wrong(&r, out), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_busbw_factors),
      cmocka_unit_test(test_table_complete),
      cmocka_unit_test(test_sources),
      cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_fit_exact_line),
      cmocka_unit_test(test_fit_relative_weights),
      cmocka_unit_test(test_fit_rejects),
      cmocka_unit_test(test_curve_interpolates),
      cmocka_unit_test(test_allreduce_as_pairs),
      cmocka_unit_test(test_half_and_bfloat16),
      cmocka_unit_test(test_expected_allreduce),
      cmocka_unit_test(test_expected_int8_wraps),
      cmocka_unit_test(test_expected_allgather_and_alltoall),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
