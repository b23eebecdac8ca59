/* GPU tests of mlp: the device-generated dataset equals the host's bit for
 * bit; a GPU step passes the verification against the CPU reference in
 * every precision (with dropout on); and, with 2 GPUs, N data-parallel steps
 * with per-GPU batch b end at the parameters of N steps on 1 GPU with batch
 * 2b, and the two replicas stay identical. Skips (exit 77) without a CUDA
 * device; the 2-GPU test is skipped with a message on a single GPU. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "platform/comm.h"
#include "platform/device.h"
#include "workload_options_fixture.h"
#include "workloads/mlp/mlp.h"
#include "workloads/mlp/mlp_cuda.h"

static int device_count;

typedef struct {
  const void *opts;
  gs_rank_context ctx;
  uint64_t steps;
  float *params;          /* out: after the steps (before verification) */
  gs_verification verification;
  gs_status status;
} rank_run;

static void *rank_main(void *arg) {
  rank_run *r = arg;
  void *state = NULL;
  r->status = GS_ERR_CUDA;
  if (cudaSetDevice(r->ctx.device) != cudaSuccess) return NULL;
  if (cudaStreamCreateWithFlags(&r->ctx.stream, cudaStreamNonBlocking) != cudaSuccess) return NULL;
  gs_status st = gs_workload_mlp.setup(r->opts, &r->ctx, &state);
  for (uint64_t i = 0; st == GS_OK && i < r->steps; i++) st = gs_workload_mlp.step(state);
  if (st == GS_OK && cudaStreamSynchronize(r->ctx.stream) != cudaSuccess) st = GS_ERR_CUDA;
  if (st == GS_OK) st = gs_mlp_state_params(state, r->params);
  if (st == GS_OK) st = gs_workload_mlp.verify(state, &r->verification);
  gs_workload_mlp.teardown(state);
  cudaStreamDestroy(r->ctx.stream);
  r->status = st;
  return NULL;
}

/* Runs `ranks` ranks (one thread each, devices 0..ranks-1) for `steps`
 * steps; rank k takes samples [k * per_rank, +per_rank) of each step. */
static void run_ranks(const void *opts, int ranks, uint64_t per_rank, uint64_t steps,
                      rank_run *runs, uint64_t count) {
  gs_comm_job job;
  gs_comm_job_detect(&job);
  job.launch = GS_COMM_LAUNCH_THREADS;
  int devices[2] = {0, 1};
  gs_comm_world_config wc = {.backend = GS_BACKEND_CUDA, .local_ranks = ranks,
                             .devices = devices, .timeout_seconds = 60};
  gs_comm_world *world = NULL;
  assert_int_equal(gs_comm_world_create(&job, &wc, &world), GS_OK);
  pthread_t threads[2];
  for (int k = 0; k < ranks; k++) {
    runs[k] = (rank_run){.opts = opts, .steps = steps, .params = malloc(count * sizeof(float))};
    runs[k].ctx = (gs_rank_context){.rank = k, .world_size = ranks, .backend = GS_BACKEND_CUDA,
                                    .device = k, .seed = 5, .unit_begin = (uint64_t)k * per_rank,
                                    .unit_count = per_rank,
                                    .unit_total = (uint64_t)ranks * per_rank, .comm = gs_comm_world_rank(world, k)};
    assert_int_equal(pthread_create(&threads[k], NULL, rank_main, &runs[k]), 0);
  }
  for (int k = 0; k < ranks; k++) pthread_join(threads[k], NULL);
  gs_comm_world_destroy(world);
  for (int k = 0; k < ranks; k++) {
    if (runs[k].status != GS_OK) fprintf(stderr, "rank %d: %s\n", k, gs_last_error());
    assert_int_equal(runs[k].status, GS_OK);
    printf("  rank %d: %s\n", k, runs[k].verification.detail);
    assert_int_equal(runs[k].verification.status, GS_VERIFY_PASSED);
  }
}

static void test_device_data_matches_host(void **state) {
  (void)state;
  const uint32_t F = 50, T = 3;
  const uint64_t n = 3000;
  gs_mlp_cuda_config c = {.model = {.n_layers = 1, .widths = {F, T}}, .precision = GS_MLP_FP32,
                          .rows = 4, .data_n = n, .data_seed = 77, .dropout_seed = 1};
  cudaStream_t stream;
  assert_int_equal(cudaSetDevice(0), cudaSuccess);
  assert_int_equal(cudaStreamCreate(&stream), cudaSuccess);
  gs_mlp_cuda *g = NULL;
  assert_int_equal(gs_mlp_cuda_create(&c, stream, &g), GS_OK);
  float *x = malloc(n * F * sizeof(float)), *y = malloc(n * T * sizeof(float));
  float *hx = malloc(n * F * sizeof(float)), *hy = malloc(n * T * sizeof(float));
  assert_int_equal(gs_mlp_cuda_get_data(g, x, y), GS_OK);
  gs_mlp_generate(77, n, F, T, hx, hy);
  assert_memory_equal(x, hx, n * F * sizeof(float));
  assert_memory_equal(y, hy, n * T * sizeof(float));
  gs_mlp_cuda_destroy(g);
  cudaStreamDestroy(stream);
  free(x), free(y), free(hx), free(hy);
}

/* One GPU, a few steps, then the verification step against the CPU.
 * `model` is "--preset NAME" or "--layers W,W,...". */
static void check_precision(const char *precision, const char *model_option, const char *model) {
  const char *args[] = {model_option, model, "--precision", precision, "--batch", "96",
                        "--samples", "4096", "--verify-rows", "48", NULL};
  void *opts = workload_options(&gs_workload_mlp, args);
  printf("  %s %s\n", model, precision);
  rank_run runs[1];
  run_ranks(opts, 1, 96, 4, runs, 2100000);
  free(runs[0].params);
  gs_workload_mlp.options_free(opts);
}

static void test_gpu_matches_cpu_fp32(void **state) {
  (void)state;
  check_precision("fp32", "--preset", "medium");
  check_precision("fp32", "--preset", "large");
}

static void test_gpu_matches_cpu_tf32(void **state) {
  (void)state;
  check_precision("tf32", "--preset", "medium");
}

static void test_gpu_matches_cpu_bf16(void **state) {
  (void)state;
  check_precision("bf16", "--preset", "medium");
  check_precision("bf16", "--preset", "large");
}

/* Widths that are not multiples of 4 take the elementwise kernels' path
 * element by element (the presets' hidden widths take 4 at a time). */
static void test_gpu_matches_cpu_odd_widths(void **state) {
  (void)state;
  check_precision("fp32", "--layers", "50,37,18,3");
  check_precision("bf16", "--layers", "50,37,18,3");
}

static void test_two_gpus_equal_one_gpu_with_double_batch(void **state) {
  (void)state;
  if (device_count < 2) {
    printf("SKIP: the data-parallel check needs 2 GPUs, %d present\n", device_count);
    skip();
  }
  enum { B = 64, STEPS = 6 };
  const char *two[] = {"--preset", "medium", "--batch", "64", "--samples", "4096",
                       "--bucket-kb", "16", NULL};
  const char *one[] = {"--preset", "medium", "--batch", "128", "--samples", "4096", NULL};
  void *opts2 = workload_options(&gs_workload_mlp, two);
  void *opts1 = workload_options(&gs_workload_mlp, one);
  const uint64_t count = 54403;
  rank_run dp[2], single[1];
  run_ranks(opts2, 2, B, STEPS, dp, count);
  run_ranks(opts1, 1, 2 * B, STEPS, single, count);
  // Replicas identical bit for bit; the big batch equal up to the order of
  // float sums, which Adam can amplify only where a gradient is ~0.
  assert_memory_equal(dp[0].params, dp[1].params, count * sizeof(float));
  double worst = 0.0;
  uint64_t loose = 0;
  for (uint64_t i = 0; i < count; i++) {
    const double e = fabs((double)dp[0].params[i] - single[0].params[i]);
    worst = fmax(worst, e);
    if (e > 1e-5) loose++;
  }
  printf("  2 GPUs x %d vs 1 GPU x %d after %d steps: max |dw| %.3g, %llu of %llu over 1e-5\n", B,
         2 * B, STEPS, worst, (unsigned long long)loose, (unsigned long long)count);
  assert_true(worst <= 2.0 * STEPS * 1e-3);
  assert_true(loose <= count / 1000);
  free(dp[0].params), free(dp[1].params), free(single[0].params);
  gs_workload_mlp.options_free(opts2);
  gs_workload_mlp.options_free(opts1);
}

int main(void) {
  char why[256] = "";
  device_count = gs_device_count(why, sizeof why);
  if (device_count == 0) {
    printf("skipped: %s\n", why);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_device_data_matches_host),
      cmocka_unit_test(test_gpu_matches_cpu_fp32),
      cmocka_unit_test(test_gpu_matches_cpu_tf32),
      cmocka_unit_test(test_gpu_matches_cpu_bf16),
      cmocka_unit_test(test_gpu_matches_cpu_odd_widths),
      cmocka_unit_test(test_two_gpus_equal_one_gpu_with_double_batch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
