/* Tests of the prediction (report/predict*.c, core/coll_model's algorithm
 * costs): collective costs against hand-worked values, measured curves in
 * place of the fit where they cover a size, the fits recovering
 * a known model from synthetic result documents, the holdout on the
 * committed 4-GPU results, and inputs that cannot be predicted. */
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
#include "report/analyze/report.h"
#include "source_path.h"
#include "tmpdir_fixture.h"

#define NEAR(a, b, rel) assert_true(fabs((a) - (b)) <= (rel) * fabs(b) + 1e-15)

/* ---- collective costs, worked by hand ------------------------------------------- */

/* An algorithm's cost as its 2-rank pairs on `link`, each 2a + x b. */
static double cost_by_pairs(gs_coll_algorithm alg, const gs_coll_link *link, double bytes, int p) {
  double pairs, pair_bytes;
  gs_coll_allreduce_pairs(alg, bytes, p, &pairs, &pair_bytes);
  return pairs * (2.0 * link->alpha_seconds + pair_bytes * link->beta_seconds_per_byte);
}

static void test_ring_and_tree(void **state) {
  (void)state;
  gs_coll_link link = {.alpha_seconds = 1e-6, .beta_seconds_per_byte = 1e-9};
  gs_coll_algorithm alg = GS_COLL_RING;
  // p = 4, S = 1000 B: ring 2*3*1us + 2*3/4*1000*1ns = 6 + 1.5 us; tree 2*2*1 + 2*1000*1ns = 4 + 2 us.
  NEAR(cost_by_pairs(GS_COLL_RING, &link, 1000, 4), 7.5e-6, 1e-12);
  NEAR(cost_by_pairs(GS_COLL_TREE, &link, 1000, 4), 6.0e-6, 1e-12);
  NEAR(gs_coll_allreduce_best_measured(&link, NULL, 1000, 4, &alg, NULL), 6.0e-6, 1e-12);
  assert_int_equal(alg, GS_COLL_TREE);
  // p = 8: ring 14 + 1.75 us; tree depth 3: 6 + 2 us.
  NEAR(cost_by_pairs(GS_COLL_RING, &link, 1000, 8), 15.75e-6, 1e-12);
  NEAR(cost_by_pairs(GS_COLL_TREE, &link, 1000, 8), 8.0e-6, 1e-12);
  // p = 3 rounds the tree's depth up: 2*2*1 + 2 = 6 us; ring 4 + 2*2/3 = 5.333 us.
  NEAR(gs_coll_allreduce_best_measured(&link, NULL, 1000, 3, &alg, NULL), 4e-6 + 4.0 / 3.0 * 1e-6,
       1e-12);
  assert_int_equal(alg, GS_COLL_RING);
  // Large messages: the ring's 2(p-1)/p beats the tree's 2.
  (void)gs_coll_allreduce_best_measured(&link, NULL, 1e9, 8, &alg, NULL);
  assert_int_equal(alg, GS_COLL_RING);
  (void)gs_coll_allreduce_best_measured(&link, NULL, 1000, 8, &alg, NULL);
  assert_int_equal(alg, GS_COLL_TREE);
  assert_true(gs_coll_allreduce_best_measured(&link, NULL, 1000, 1, NULL, NULL) == 0.0);
}

static void test_hierarchical(void **state) {
  (void)state;
  // 8 nodes x 4 GPUs, 1 MB: each GPU's share 250000 B crosses the network
  // (5 us, 50 GB/s = 2e-11 s/B): ring 2*7*5 + 2*7/8*250000*2e-11 = 70 + 8.75 us;
  // tree 2*3*5 + 2*250000*2e-11 = 30 + 10 us; plus the node's own 10 us.
  gs_coll_link net = {.alpha_seconds = 5e-6, .beta_seconds_per_byte = 2e-11};
  gs_coll_algorithm alg = GS_COLL_RING;
  NEAR(gs_coll_allreduce_hierarchical(10e-6, &net, NULL, 1e6, 4, 8, &alg, NULL), 50e-6, 1e-12);
  assert_int_equal(alg, GS_COLL_TREE);

  // The machine: within a node alpha + beta x 2(p-1)/p x S, across nodes the above.
  gs_predict_machine m = {.have_allreduce = 1, .gpus_per_node = 4, .network = net};
  m.allreduce.alpha_seconds = 10e-6;
  m.allreduce.beta_seconds_per_byte = 1e-11;
  const char *how = NULL;
  unsigned from = 0;
  NEAR(gs_predict_allreduce(&m, 1e6, 4, &how, &from), 10e-6 + 1.5 * 1e6 * 1e-11, 1e-12);
  assert_string_equal(how, "intra-node");
  assert_int_equal(from, GS_PREDICT_FROM_FIT);
  from = 0;
  NEAR(gs_predict_allreduce(&m, 1e6, 32, &how, &from), 10e-6 + 1.5e-5 + 40e-6, 1e-12);
  assert_string_equal(how, "tree");
  assert_int_equal(from, GS_PREDICT_FROM_FIT | GS_PREDICT_FROM_FIGURES);
  assert_true(gs_predict_allreduce(&m, 1e6, 1, &how, NULL) == 0.0);
  assert_string_equal(how, "none");
}

/* A measured curve takes the place of the fit at the sizes and rank counts
 * it covers, within a node and between nodes. */
static void test_measured_curves(void **state) {
  (void)state;
  // Within a node, measured at 4 ranks: 20 us at 1 MB, 40 us at 3 MB.
  double node_bytes[] = {1e6, 3e6}, node_seconds[] = {20e-6, 40e-6};
  gs_coll_curve node;
  assert_int_equal(gs_coll_curve_build(node_bytes, node_seconds, 2, 4, &node), GS_OK);
  // Between nodes, a 2-rank allreduce: 100 us at 100 kB, 300 us at 500 kB.
  double net_bytes[] = {5e5, 1e5}, net_seconds[] = {300e-6, 100e-6};
  gs_coll_curve net;
  assert_int_equal(gs_coll_curve_build(net_bytes, net_seconds, 2, 2, &net), GS_OK);
  gs_predict_machine m = {.have_allreduce = 1, .gpus_per_node = 4, .curves = &node,
                          .n_curves = 1, .network = {1e-6, 1e-9}, .network_curve = &net};
  m.allreduce.alpha_seconds = 10e-6;
  m.allreduce.beta_seconds_per_byte = 1e-11;
  char name[32];
  unsigned from = 0;
  // 2 MB at 4 ranks: halfway between the measured sizes.
  NEAR(gs_predict_allreduce(&m, 2e6, 4, NULL, &from), 30e-6, 1e-12);
  assert_int_equal(from, GS_PREDICT_FROM_MEASURED);
  // Outside the measured sizes, or at a count not measured: the fit.
  from = 0;
  NEAR(gs_predict_allreduce(&m, 4e6, 4, NULL, &from), 10e-6 + 1.5 * 4e6 * 1e-11, 1e-12);
  NEAR(gs_predict_allreduce(&m, 2e6, 2, NULL, &from), 10e-6 + 1.0 * 2e6 * 1e-11, 1e-12);
  assert_int_equal(from, GS_PREDICT_FROM_FIT);
  // 2 nodes of 4, 1.2 MB: the node's measured 1.2 MB (22 us), then each GPU's
  // 300 kB across 2 nodes: one 2-rank allreduce of 300 kB, 200 us measured.
  from = 0;
  const char *how = NULL;
  NEAR(gs_predict_allreduce(&m, 1.2e6, 8, &how, &from), 22e-6 + 200e-6, 1e-12);
  assert_string_equal(how, "ring");
  assert_int_equal(from, GS_PREDICT_FROM_MEASURED);
  gs_predict_from_name(from, name, sizeof name);
  assert_string_equal(name, "measured");
  // 4 nodes of 1 GPU, 400 kB: a ring is 3 pairs of 2 x 400 / 4 = 200 kB
  // (150 us each), a tree 2 pairs of 400 kB (250 us each): the ring.
  gs_predict_machine one = {.gpus_per_node = 1, .network = {1e-6, 1e-9}, .network_curve = &net};
  from = 0;
  NEAR(gs_predict_allreduce(&one, 4e5, 4, &how, &from), 3 * 150e-6, 1e-12);
  assert_string_equal(how, "ring");
  // 1 MB over 2 nodes: past the measured 500 kB, the network's link 2a + x b.
  NEAR(gs_predict_allreduce(&one, 1e6, 2, &how, &from), 2e-6 + 1e6 * 1e-9, 1e-12);
  assert_int_equal(from, GS_PREDICT_FROM_MEASURED | GS_PREDICT_FROM_FIT);
  gs_predict_from_name(from, name, sizeof name);
  assert_string_equal(name, "measured+fit");
  gs_predict_from_name(0, name, sizeof name);
  assert_string_equal(name, "none");
  gs_coll_curve_free(&node);
  gs_coll_curve_free(&net);
}

static void test_expected_max(void **state) {
  (void)state;
  assert_true(gs_predict_expected_max(1) == 0.0);
  NEAR(gs_predict_expected_max(2), 0.5641895835, 1e-6);  // 1 / sqrt(pi)
  NEAR(gs_predict_expected_max(3), 0.8462843753, 1e-6);  // 1.5 / sqrt(pi)
  NEAR(gs_predict_expected_max(4), 1.0293754, 1e-6);
  assert_true(gs_predict_expected_max(1024) > 3.0 && gs_predict_expected_max(1024) < 3.3);
}

/* ---- fits on numbers --------------------------------------------------------------- */

static void test_fit_step_recovers(void **state) {
  (void)state;
  gs_predict_model truth = {.kind = GS_PREDICT_FIXED_STEP, .scaling = GS_SCALING_STRONG,
                            .work_seconds = 100e-6, .overhead_seconds = 10e-6,
                            .noise_seconds = 1e-6};
  gs_predict_machine m = {.gpus_per_node = 8};
  gs_predict_step_obs obs[3];
  int counts[3] = {1, 2, 4};
  for (int i = 0; i < 3; i++) {
    gs_predict_point pt;
    assert_int_equal(gs_predict_point_at(&truth, &m, 1000, counts[i], 0, &pt), GS_OK);
    obs[i] = (gs_predict_step_obs){counts[i], pt.step_seconds, pt.work + pt.overhead, 0.0};
  }
  gs_predict_model fit = {.kind = GS_PREDICT_FIXED_STEP, .scaling = GS_SCALING_STRONG};
  assert_int_equal(gs_predict_fit_step(obs, 3, &fit), GS_OK);
  NEAR(fit.work_seconds, 100e-6, 1e-9);
  NEAR(fit.overhead_seconds, 10e-6, 1e-9);
  NEAR(fit.noise_seconds, 1e-6, 1e-9);
  gs_predict_point at8;
  assert_int_equal(gs_predict_point_at(&fit, &m, 1000, 8, 0, &at8), GS_OK);
  NEAR(at8.step_seconds, 12.5e-6 + 10e-6 + 1e-6 * gs_predict_expected_max(8), 1e-9);
  NEAR(at8.throughput, 1000 / at8.step_seconds, 1e-12);

  // Weak scaling: one share; everything is work, throughput grows with N.
  gs_predict_step_obs weak[2] = {{1, 50e-6, 50e-6, 0.0}, {2, 50e-6, 50e-6, 0.0}};
  gs_predict_model wf = {.kind = GS_PREDICT_FIXED_STEP, .scaling = GS_SCALING_WEAK};
  assert_int_equal(gs_predict_fit_step(weak, 2, &wf), GS_OK);
  NEAR(wf.work_seconds, 50e-6, 1e-9);
  assert_true(wf.overhead_seconds == 0.0);
  assert_true(wf.growth_seconds == 0.0);
  assert_int_equal(gs_predict_point_at(&wf, &m, 1000, 4, 0, &at8), GS_OK);
  NEAR(at8.throughput, 4 * 1000 / 50e-6, 1e-9);
  // A weak-scaling compute that grows with the ranks (contention): 10 ms + 10 ms per added rank.
  gs_predict_step_obs grows[3] = {{1, 10e-3, 10e-3, 0.0}, {2, 20e-3, 20e-3, 0.0},
                                  {3, 30e-3, 30e-3, 0.0}};
  assert_int_equal(gs_predict_fit_step(grows, 3, &wf), GS_OK);
  NEAR(wf.work_seconds, 10e-3, 1e-9);
  NEAR(wf.growth_seconds, 10e-3, 1e-9);
  assert_int_equal(gs_predict_point_at(&wf, &m, 1000, 4, 0, &at8), GS_OK);
  NEAR(at8.overhead, 30e-3, 1e-9);
  NEAR(at8.throughput, 4 * 1000 / 40e-3, 1e-9);

  assert_int_equal(gs_predict_fit_step(obs, 0, &fit), GS_ERR_USAGE);
}

static void test_data_parallel_buckets(void **state) {
  (void)state;
  gs_predict_machine m = {.have_allreduce = 1, .gpus_per_node = 8};
  m.allreduce.alpha_seconds = 10e-6;
  m.allreduce.beta_seconds_per_byte = 1e-11;
  gs_predict_model md = {.kind = GS_PREDICT_DATA_PARALLEL, .scaling = GS_SCALING_STRONG,
                         .work_seconds = 600e-6, .gradient_bytes = 1e6, .bucket_bytes = 4e6};
  gs_predict_point pt;
  // One bucket: the whole all-reduce is exposed: 10 us + 1.5 x 1e6 x 1e-11.
  assert_int_equal(gs_predict_point_at(&md, &m, 64, 4, 0, &pt), GS_OK);
  NEAR(pt.comm, 25e-6, 1e-9);
  // Four buckets of 250000 B: the last exposed (10 + 3.75 us); three others
  // (41.25 us) hide behind 2/3 x 150 us x 3/4 = 75 us of backward pass.
  md.bucket_bytes = 250000;
  assert_int_equal(gs_predict_point_at(&md, &m, 64, 4, 0, &pt), GS_OK);
  NEAR(pt.comm, 13.75e-6, 1e-9);
  // With little compute to hide behind, the rest shows: window 2/3 x 15 x 3/4 = 7.5 us.
  md.work_seconds = 60e-6;
  assert_int_equal(gs_predict_point_at(&md, &m, 64, 4, 0, &pt), GS_OK);
  NEAR(pt.comm, 13.75e-6 + 41.25e-6 - 7.5e-6, 1e-9);
  // Beyond one node the count must fill nodes.
  assert_int_equal(gs_predict_point_at(&md, &m, 64, 12, 0, &pt), GS_ERR_USAGE);
  assert_error_mentions("whole nodes");
}

static void test_fit_requests(void **state) {
  (void)state;
  gs_predict_machine m = {.have_allreduce = 1, .gpus_per_node = 8};
  m.allreduce.alpha_seconds = 10e-6;
  m.allreduce.beta_seconds_per_byte = 1e-11;
  gs_predict_model md = {.kind = GS_PREDICT_REQUESTS, .samples = 64, .batch = 8,
                         .measured_tp = 1, .layers = 2, .hidden = 1024, .element_bytes = 2,
                         .decode_steps = 10, .prefill_tokens = 16};
  // A round takes 0.2 s: 8 rounds at 1 GPU, 4 at 2.
  gs_predict_request_obs obs[2] = {{1, 1.6, 1000, {0, 0, 0, 0.0}, 0.0},
                                   {2, 0.8, 1000, {0, 0, 0, 0.0}, 0.0}};
  assert_int_equal(gs_predict_fit_requests(obs, 2, &m, &md), GS_OK);
  NEAR(md.round_seconds, 0.2, 1e-12);
  gs_predict_point pt;
  assert_int_equal(gs_predict_point_at(&md, &m, 0, 8, 0, &pt), GS_OK);
  assert_int_equal(pt.rounds, 1);
  NEAR(pt.throughput, 1000 / 0.2, 1e-12);
  // More replicas than requests: still one round.
  assert_int_equal(gs_predict_point_at(&md, &m, 0, 128, 0, &pt), GS_OK);
  NEAR(pt.throughput, 1000 / 0.2, 1e-12);
  // Tensor parallel 2 at 2 GPUs: one replica, 8 rounds of 0.1 s compute plus
  // 2 x 2 layers x (prefill allreduce of 8 x 16 x 2048 B + 10 decode ones of 8 x 2048 B).
  assert_int_equal(gs_predict_point_at(&md, &m, 0, 2, 2, &pt), GS_OK);
  double prefill = 10e-6 + 1e-11 * 8 * 16 * 2048;
  double decode = 10e-6 + 1e-11 * 8 * 2048;
  NEAR(pt.comm, 8 * 4 * (prefill + 10 * decode), 1e-9);
  NEAR(pt.work, 8 * 0.1, 1e-12);
  assert_int_equal(gs_predict_point_at(&md, &m, 0, 3, 2, &pt), GS_ERR_USAGE);
  assert_error_mentions("tensor-parallel");

  // Measured at tp 2: the fit takes the measured runs' communication out of
  // the round (a round of one GPU, 0.2 s: 0.1 s at tp 2).
  gs_predict_model tp2 = md;
  tp2.measured_tp = 2;
  gs_predict_request_obs runs[2];
  for (int i = 0; i < 2; i++) {
    assert_int_equal(gs_predict_point_at(&tp2, &m, 0, 2 << i, 0, &pt), GS_OK);
    runs[i] = (gs_predict_request_obs){2 << i, pt.step_seconds, 1000, {0, 0, 0, 0.0}, 0.0};
  }
  gs_predict_model fit = md;
  fit.measured_tp = 2;
  assert_int_equal(gs_predict_fit_requests(runs, 2, &m, &fit), GS_OK);
  NEAR(fit.round_seconds, 0.2, 1e-9);
  // Back to tp 1 at 2 GPUs: two replicas, 4 rounds of twice the compute, no all-reduce.
  assert_int_equal(gs_predict_point_at(&fit, &m, 0, 2, 1, &pt), GS_OK);
  assert_int_equal(pt.rounds, 4);
  NEAR(pt.step_seconds, 4 * 0.2, 1e-9);
  assert_true(pt.comm == 0.0);
}

static void test_parse_counts(void **state) {
  (void)state;
  int *c = NULL;
  size_t n = 0;
  assert_int_equal(gs_predict_parse_counts("8,16,1-3", "--ngpus", &c, &n), GS_OK);
  assert_int_equal(n, 5);
  assert_int_equal(c[0], 8);
  assert_int_equal(c[4], 3);
  free(c);
  assert_int_equal(gs_predict_parse_counts("1-1000", "--ngpus", &c, &n), GS_OK);
  assert_int_equal(n, 1000);
  free(c);
  assert_int_equal(gs_predict_parse_counts("8-8000:8,3", "--ngpus", &c, &n), GS_OK);
  assert_int_equal(n, 1001);
  assert_int_equal(c[1], 16);
  assert_int_equal(c[999], 8000);
  assert_int_equal(c[1000], 3);
  free(c);
  assert_int_equal(gs_predict_parse_counts("8:2", "--ngpus", &c, &n), GS_ERR_USAGE);
  assert_error_mentions("follows a range");
  assert_int_equal(gs_predict_parse_counts("8,,16", "--ngpus", &c, &n), GS_ERR_USAGE);
  assert_error_mentions("--ngpus");
  assert_int_equal(gs_predict_parse_counts("0", "--ngpus", &c, &n), GS_ERR_USAGE);
  assert_int_equal(gs_predict_parse_counts("9-3", "--ngpus", &c, &n), GS_ERR_USAGE);
  assert_null(c);
}

/* ---- synthetic documents ---------------------------------------------------------- */

static cJSON *new_doc(const char *host, const char *gpu, const char *workload, const char *scaling,
                      const char *options) {
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "schema", "gpuscale/result/v1");
  cJSON_AddItemToObject(d, "tool", cJSON_CreateObject());
  cJSON_AddStringToObject(d, "created", "2026-01-01T00:00:00Z");
  cJSON_AddStringToObject(d, "command", "scale");
  cJSON *cfg = cJSON_AddObjectToObject(d, "config");
  cJSON_AddStringToObject(cfg, "backend", "cuda");
  cJSON_AddStringToObject(cfg, "scaling", scaling);
  cJSON_AddStringToObject(cfg, "workload", workload);
  cJSON_AddItemToObject(cfg, "workload_options", cJSON_Parse(options));
  cJSON *env = cJSON_AddObjectToObject(d, "environment");
  cJSON_AddStringToObject(env, "host", host);
  cJSON *gpus = cJSON_AddArrayToObject(env, "gpus");
  for (int i = 0; i < 4; i++) {
    cJSON *g = cJSON_CreateObject();
    cJSON_AddNumberToObject(g, "index", i);
    cJSON_AddStringToObject(g, "name", gpu);
    cJSON_AddItemToArray(gpus, g);
  }
  cJSON_AddArrayToObject(d, "measurements");
  return d;
}

static cJSON *repeat(double v, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v));
  return a;
}

/* A measurement at `ranks` whose every rank computes `compute`, waits
 * `comm` and whose step is `step` (the slowest rank's lateness included). */
static void add_step(cJSON *doc, const char *workload, const char *scaling, int ranks,
                     double step, double compute, double comm) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "workload", workload);
  cJSON_AddStringToObject(m, "backend", "cuda");
  cJSON_AddStringToObject(m, "scaling", scaling);
  cJSON_AddNumberToObject(m, "world_size", ranks);
  cJSON_AddStringToObject(m, "status", "ok");
  cJSON *cost = cJSON_AddObjectToObject(m, "cost");
  cJSON_AddNumberToObject(cost, "items_per_step", 1000);
  cJSON_AddStringToObject(cost, "item_unit", "points");
  cJSON *runs = cJSON_AddArrayToObject(m, "runs");
  cJSON *run = cJSON_CreateObject();
  cJSON_AddItemToArray(runs, run);
  cJSON_AddItemToObject(run, "step_seconds", repeat(step, 5));
  cJSON *rs = cJSON_AddArrayToObject(run, "ranks");
  for (int k = 0; k < ranks; k++) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "rank", k);
    cJSON_AddStringToObject(r, "status", "ok");
    cJSON_AddNumberToObject(r, "items_per_step", 1000 / ranks);
    cJSON_AddItemToObject(r, "device_seconds", repeat(compute + comm, 5));
    cJSON_AddItemToObject(r, "wall_seconds", repeat(compute + comm, 5));
    if (comm > 0 || strcmp(workload, "mlp") == 0)
      cJSON_AddItemToObject(r, "comm_seconds", repeat(comm, 5));
    cJSON_AddItemToArray(rs, r);
  }
  cJSON_AddItemToArray(cJSON_GetObjectItem(doc, "measurements"), m);
}

/* A coll measurement of allreduce at 4 ranks: `bytes` in `seconds`. */
static void add_coll(cJSON *doc, double bytes, double seconds) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "workload", "coll");
  cJSON_AddStringToObject(m, "backend", "cuda");
  cJSON_AddStringToObject(m, "scaling", "none");
  cJSON_AddNumberToObject(m, "world_size", 4);
  cJSON_AddStringToObject(m, "status", "ok");
  cJSON *c = cJSON_AddObjectToObject(m, "collective");
  cJSON_AddStringToObject(c, "op", "allreduce");
  cJSON_AddNumberToObject(c, "bytes", bytes);
  cJSON_AddNumberToObject(c, "time_seconds", seconds);
  cJSON *runs = cJSON_AddArrayToObject(m, "runs");
  cJSON *run = cJSON_CreateObject();
  cJSON_AddItemToArray(runs, run);
  cJSON_AddItemToObject(run, "step_seconds", repeat(seconds, 3));
  cJSON *rs = cJSON_AddArrayToObject(run, "ranks");
  for (int k = 0; k < 4; k++) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "rank", k);
    cJSON_AddStringToObject(r, "status", "ok");
    cJSON_AddItemToArray(rs, r);
  }
  cJSON_AddItemToArray(cJSON_GetObjectItem(doc, "measurements"), m);
}

static void save(cJSON *doc, const char *path) {
  char *text = cJSON_Print(doc);
  write_text(path, text);
  cJSON_free(text);
  cJSON_Delete(doc);
}

/* The allreduce of the synthetic machine: 10 us + 1e-11 s per bus byte. */
static double synthetic_allreduce(double bytes, int ranks) {
  return 10e-6 + 1e-11 * bytes * 2.0 * (ranks - 1) / ranks;
}

static void write_coll(const char *path, const char *host, const char *gpu, int sizes) {
  cJSON *c = new_doc(host, gpu, "coll", "none", "null");
  for (int i = 0; i < sizes; i++) {
    double bytes = 1024.0 * pow(16.0, i);
    add_coll(c, bytes, synthetic_allreduce(bytes, 4));
  }
  save(c, path);
}

static gs_status predict_files(const char *const *paths, size_t n, const gs_predict_options *opt,
                               gs_report *rep, gs_predict *pred) {
  gs_report_thresholds th = {.moderate = 0.05, .critical = 0.15};
  gs_status st = gs_report_load(paths, n, &th, rep);
  if (st != GS_OK) return st;
  st = gs_predict_build(rep, opt, pred);
  return st;
}

static void test_documents_recover_model(void **state) {
  fixture *fx = *state;
  char vox[512], mlp[512], coll[512];
  path_in(fx, "vox.json", vox, sizeof vox);
  path_in(fx, "mlp.json", mlp, sizeof mlp);
  path_in(fx, "coll.json", coll, sizeof coll);
  // voxelize: work 80 us / N, overhead 12 us, noise 0.5 us x e(N).
  cJSON *v = new_doc("node", "GPU X", "voxelize", "strong", "{\"points\":1}");
  int counts[3] = {1, 2, 4};
  for (int i = 0; i < 3; i++) {
    double compute = 12e-6 + 80e-6 / counts[i];
    add_step(v, "voxelize", "strong", counts[i], compute + 0.5e-6 * gs_predict_expected_max(counts[i]),
             compute, 0.0);
  }
  save(v, vox);
  // mlp: overhead 50 us, work 40 us / N, the whole gradient all-reduce exposed.
  cJSON *d = new_doc("node", "GPU X", "mlp", "strong",
                     "{\"parameters\":250000,\"bucket_kb\":4096,\"batch\":128}");
  for (int i = 0; i < 3; i++) {
    double compute = 50e-6 + 40e-6 / counts[i];
    double comm = counts[i] > 1 ? synthetic_allreduce(1e6, counts[i]) : 0.0;
    add_step(d, "mlp", "strong", counts[i], compute + comm, compute, comm);
  }
  save(d, mlp);
  write_coll(coll, "node", "GPU X", 6);

  const char *paths[] = {vox, mlp, coll};
  int want[] = {16};
  gs_predict_options opt = {.counts = want, .n_counts = 1, .gpus_per_node = 8,
                            .inter_node_bytes_per_second = 50e9,
                            .inter_node_latency_seconds = 5e-6};
  gs_report rep;
  gs_predict pred;
  assert_int_equal(predict_files(paths, 3, &opt, &rep, &pred), GS_OK);
  assert_int_equal(pred.n_workloads, 2);
  NEAR(pred.machine.allreduce.alpha_seconds, 10e-6, 1e-6);
  NEAR(pred.machine.allreduce.beta_seconds_per_byte, 1e-11, 1e-6);
  const gs_predict_workload *w = &pred.workloads[0];
  NEAR(w->model.work_seconds, 80e-6, 1e-6);
  NEAR(w->model.overhead_seconds, 12e-6, 1e-6);
  NEAR(w->model.noise_seconds, 0.5e-6, 1e-6);
  assert_int_equal(w->n_points, 1);
  assert_int_equal(w->points[0].nodes, 2);
  NEAR(w->points[0].step_seconds, 12e-6 + 5e-6 + 0.5e-6 * gs_predict_expected_max(16), 1e-6);
  const gs_predict_workload *dp = &pred.workloads[1];
  assert_int_equal(dp->model.kind, GS_PREDICT_DATA_PARALLEL);
  NEAR(dp->model.work_seconds, 40e-6, 1e-6);
  NEAR(dp->model.overhead_seconds, 50e-6, 1e-6);
  NEAR(dp->model.gradient_bytes, 1e6, 1e-12);
  // 16 GPUs = 2 nodes of 8: the node's allreduce + the network's on 1e6 / 8 B.
  gs_coll_link net = {5e-6, 1.0 / 50e9};
  double comm16 = synthetic_allreduce(1e6, 8) +
                  gs_coll_allreduce_best_measured(&net, NULL, 1e6 / 8, 2, NULL, NULL);
  NEAR(dp->points[0].comm, comm16, 1e-6);
  assert_string_equal(dp->points[0].comm_how, "ring");
  gs_predict_free(&pred);
  gs_report_free(&rep);

  // Held out at 4: the fit on 1 and 2 predicts the 4-GPU step exactly.
  gs_predict_options hold = opt;
  hold.n_counts = 0;
  hold.holdout = 4;
  assert_int_equal(predict_files(paths, 3, &hold, &rep, &pred), GS_OK);
  assert_int_equal(pred.workloads[0].n_points, 1);
  assert_true(fabs(pred.workloads[0].points[0].error) < 1e-6);
  assert_true(fabs(pred.workloads[1].points[0].error) < 1e-6);
  gs_predict_free(&pred);
  gs_report_free(&rep);
}

#define COMMITTED "../docs/results/2026-11-21-h200x4/threads/"

/* ---- inputs that cannot be predicted ---------------------------------------------- */

static void test_rejects(void **state) {
  fixture *fx = *state;
  char mlp[512], other[512], one[512], fine[512];
  path_in(fx, "mlp.json", mlp, sizeof mlp);
  path_in(fx, "other.json", other, sizeof other);
  path_in(fx, "one.json", one, sizeof one);
  path_in(fx, "fine.json", fine, sizeof fine);
  cJSON *d = new_doc("node", "GPU X", "mlp", "strong", "{\"parameters\":1000,\"bucket_kb\":1024}");
  add_step(d, "mlp", "strong", 1, 100e-6, 100e-6, 0.0);
  // 10 us: the all-reduce of its 4000 B of gradients that fine.json gives
  // at 2 GPUs, so that the model reproduces this measurement.
  add_step(d, "mlp", "strong", 2, 70e-6, 60e-6, 10e-6);
  save(d, mlp);
  write_coll(other, "node", "GPU Y", 4);
  write_coll(one, "node", "GPU X", 1);
  write_coll(fine, "node", "GPU X", 4);
  int want[] = {8};
  gs_predict_options opt = {.counts = want, .n_counts = 1, .inter_node_latency_seconds = 5e-6,
                            .inter_node_bytes_per_second = 50e9};
  gs_report rep;
  gs_predict pred;

  const char *another[] = {mlp, other};
  assert_int_equal(predict_files(another, 2, &opt, &rep, &pred), GS_ERR_USAGE);
  assert_error_mentions("another machine");
  gs_report_free(&rep);

  const char *single[] = {mlp, one};
  assert_int_equal(predict_files(single, 2, &opt, &rep, &pred), GS_ERR_USAGE);
  assert_error_mentions("one size");
  gs_report_free(&rep);

  const char *no_coll[] = {mlp};
  assert_int_equal(predict_files(no_coll, 1, &opt, &rep, &pred), GS_ERR_USAGE);
  assert_error_mentions("coll document");
  gs_report_free(&rep);

  // A collective alone is no workload; an llm server run has no model.
  const char *only_coll[] = {fine};
  assert_int_equal(predict_files(only_coll, 1, &opt, &rep, &pred), GS_ERR_USAGE);
  assert_error_mentions("no workload");
  gs_report_free(&rep);
  const char *server[] = {source_path("data/report/llm_server_cpu.json")};
  assert_int_equal(predict_files(server, 1, &opt, &rep, &pred), GS_ERR_USAGE);
  assert_error_mentions("no prediction model");
  gs_report_free(&rep);

  // Holdout with nothing at or above it.
  const char *ok[] = {mlp, fine};
  gs_predict_options hold = opt;
  hold.holdout = 8;
  assert_int_equal(predict_files(ok, 2, &hold, &rep, &pred), GS_ERR_USAGE);
  assert_error_mentions("nothing measured at 8");
  gs_report_free(&rep);
  // And it predicts when all is well; reading the documents wrote nothing.
  assert_int_equal(predict_files(ok, 2, &opt, &rep, &pred), GS_OK);
  gs_predict_free(&pred);
  gs_report_free(&rep);
  assert_int_equal(count_entries(fx->dir, ""), 4);

  // A super-linear series (2.18x on 2 GPUs: the 4.62 ms and 2.12
  // ms) fits no model of work / N plus costs: refused, naming the
  // measurement; with skip_unmodelled left out and named.
  char fast[512];
  path_in(fx, "fast.json", fast, sizeof fast);
  cJSON *v = new_doc("node", "GPU X", "voxelize", "strong", "{\"points\":1}");
  add_step(v, "voxelize", "strong", 1, 4.62e-3, 4.62e-3, 0.0);
  add_step(v, "voxelize", "strong", 2, 2.12e-3, 2.12e-3, 0.0);
  save(v, fast);
  const char *superlinear[] = {fast};
  assert_int_equal(predict_files(superlinear, 1, &opt, &rep, &pred), GS_ERR_USAGE);
  assert_error_mentions("refusing to extrapolate: the model does not fit the measurement at 2 "
                        "GPUs: it gives 2.21 ms against 2.12 ms measured");
  assert_error_mentions("super-linear (2.18x the throughput from 1 to 2 GPUs, 109% per GPU)");
  gs_report_free(&rep);
  gs_predict_options skip = opt;
  skip.skip_unmodelled = 1;
  assert_int_equal(predict_files(superlinear, 1, &skip, &rep, &pred), GS_OK);
  assert_int_equal(pred.n_workloads, 0);
  assert_non_null(strstr(pred.skipped, "voxelize: refusing to extrapolate"));
  gs_predict_free(&pred);
  gs_report_free(&rep);
}

/* ---- the committed 4-GPU results ----------------------------------------------------- */

static void test_holdout_committed(void **state) {
  (void)state;
  const char *paths[] = {source_path(COMMITTED "voxelize.json"), source_path(COMMITTED "mlp.json"),
                         source_path(COMMITTED "llm.json"), source_path(COMMITTED "coll.json")};
  gs_predict_options opt = {.holdout = 4, .inter_node_latency_seconds = 5e-6,
                            .inter_node_bytes_per_second = 50e9};
  gs_report rep;
  gs_predict pred;
  assert_int_equal(predict_files(paths, 4, &opt, &rep, &pred), GS_OK);
  assert_int_equal(pred.n_workloads, 3);
  for (size_t i = 0; i < pred.n_workloads; i++) {
    const gs_predict_workload *w = &pred.workloads[i];
    assert_int_equal(w->n_points, 1);
    assert_int_equal(w->points[0].gpus, 4);
    if (!(fabs(w->points[0].error) < 0.15))
      fail_msg("%s: predicted 4-GPU error %.1f%% is not within 15%%", w->name,
               100.0 * w->points[0].error);
  }
  gs_predict_free(&pred);
  gs_report_free(&rep);
}

/* A pipeline's step at other stage and micro-batch counts, computed by
 * hand: 0.8 s of stage work a step over 64 samples of 100 bytes of
 * activations each. */
static void test_pipeline_step(void **state) {
  (void)state;
  gs_predict_pipeline q = {.stages = 2, .micro = 4, .busy_seconds = 0.8, .imbalance = 1.0,
                           .samples = 64, .bytes_per_sample = 100};
  gs_predict_options o = {.inter_node_bytes_per_second = 1e6, .inter_node_latency_seconds = 1e-3};
  gs_predict_pipeline_point x;
  // One node, no curve: c = 0.8 / 8, step = 2c + 3c = 0.5 s; bubble (p-1)/m.
  gs_predict_pipeline_at(&q, &o, 8, 2, 4, &x);
  assert_float_equal(x.step_seconds, 0.5, 1e-12);
  assert_float_equal(x.bubble, 0.25, 1e-12);
  assert_float_equal(x.bubble_formula, 0.25, 1e-12);
  assert_float_equal(x.transfer_seconds, 0.0, 0.0);
  assert_float_equal(x.throughput, 128.0, 1e-9);
  assert_int_equal(x.inter_node_boundaries, 0);
  // One GPU a node: the boundary crosses the network both ways,
  // 2 x (1 ms + 1600 B / 1 MB/s).
  gs_predict_pipeline_at(&q, &o, 1, 2, 4, &x);
  assert_int_equal(x.inter_node_boundaries, 1);
  assert_float_equal(x.transfer_seconds, 2 * 2.6e-3, 1e-12);
  assert_float_equal(x.step_seconds, 0.5 + 5.2e-3, 1e-12);
  // A measured curve within the node, 4 stages at 8 micro-batches, the
  // slowest stage 1.2x: 800-byte boundaries below its smallest size take
  // its time per byte; step = 4c + 7 x 1.2c + 3 x 2 x 0.8 ms, c = 0.025 s.
  const double bytes[] = {1000, 3000}, secs[] = {1e-3, 3e-3};
  assert_int_equal(gs_coll_curve_build(bytes, secs, 2, 2, &q.curve), GS_OK);
  q.imbalance = 1.2;
  gs_predict_pipeline_at(&q, &o, 8, 4, 8, &x);
  assert_float_equal(x.transfer_seconds, 6 * 0.8e-3, 1e-12);
  assert_float_equal(x.step_seconds, 0.1 + 0.21 + 4.8e-3, 1e-12);
  // Inside the curve: 1600-byte boundaries at 4 micro-batches, 1.6 ms each;
  // above it (3200 bytes at 2) the largest size's time per byte.
  gs_predict_pipeline_at(&q, &o, 8, 2, 4, &x);
  assert_float_equal(x.transfer_seconds, 2 * 1.6e-3, 1e-12);
  gs_predict_pipeline_at(&q, &o, 8, 2, 2, &x);
  assert_float_equal(x.transfer_seconds, 2 * 3.2e-3, 1e-12);
  gs_coll_curve_free(&q.curve);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ring_and_tree),
      cmocka_unit_test(test_hierarchical),
      cmocka_unit_test(test_measured_curves),
      cmocka_unit_test(test_expected_max),
      cmocka_unit_test(test_fit_step_recovers),
      cmocka_unit_test(test_data_parallel_buckets),
      cmocka_unit_test(test_fit_requests),
      cmocka_unit_test(test_parse_counts),
      cmocka_unit_test_setup_teardown(test_documents_recover_model, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rejects, setup, teardown),
      cmocka_unit_test(test_holdout_committed),
      cmocka_unit_test(test_pipeline_step),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
