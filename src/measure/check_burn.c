/* Level 3 of `gpuscale check` (see check_burn.h): one thread per GPU runs
 * GEMMs and triads until the duration ends, checking results every few
 * seconds; the telemetry sampler records NVML meanwhile. */
#include "measure/check_burn.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "core/check.h"
#include "core/timer.h"
#include "measure/common.h"
#include "p2p/burn_kernels.h"
#include "p2p/membw.h"
#include "p2p/membw_kernels.h"
#include "platform/telemetry.h"

void gs_check_burn_options_default(gs_check_burn_options *o) {
  o->duration_s = 600;
  o->gemm_n = 8192;
  o->triad_bytes = 512ull << 20;
  o->check_interval_s = 2;
}

void gs_check_burn_free(gs_node_burn *b) {
  cJSON_Delete(b->telemetry);
  b->telemetry = NULL;
  free(b->gpus);
  b->gpus = NULL;
  b->n = 0;
}

/* One GPU's buffers and handles; freed whatever was reached. */
typedef struct {
  void *a16, *b16;
  float *c32;
  double *ta, *tb, *tc;
  unsigned long long *bad;
  cudaStream_t stream;
  cublasHandle_t blas;
} burn_gpu;

static void burn_gpu_free(burn_gpu *g) {
  if (g->blas) cublasDestroy(g->blas);
  if (g->stream) cudaStreamDestroy(g->stream);
  cudaFree(g->a16);
  cudaFree(g->b16);
  cudaFree(g->c32);
  cudaFree(g->ta);
  cudaFree(g->tb);
  cudaFree(g->tc);
  cudaFree(g->bad);
}

typedef struct {
  const gs_check_burn_options *o;
  double deadline;
  gs_gpu_burn *out;
  burn_gpu g;
} burn_job;

static gs_status burn_setup(burn_job *j) {
  burn_gpu *g = &j->g;
  const uint64_t n = j->o->gemm_n, elems = n * n, tn = j->o->triad_bytes / sizeof(double);
  GS_CHECK_CUDA(cudaSetDevice(j->out->device));
  GS_CHECK_CUDA(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
  GS_CHECK_CUDA(cudaMalloc(&g->a16, elems * 2));
  GS_CHECK_CUDA(cudaMalloc(&g->b16, elems * 2));
  GS_CHECK_CUDA(cudaMalloc((void **)&g->c32, elems * sizeof(float)));
  GS_CHECK_CUDA(cudaMalloc((void **)&g->ta, tn * sizeof(double)));
  GS_CHECK_CUDA(cudaMalloc((void **)&g->tb, tn * sizeof(double)));
  GS_CHECK_CUDA(cudaMalloc((void **)&g->tc, tn * sizeof(double)));
  GS_CHECK_CUDA(cudaMalloc((void **)&g->bad, sizeof *g->bad));
  GS_CHECK_CUDA(cudaMemsetAsync(g->bad, 0, sizeof *g->bad, g->stream));
  GS_CHECK_CUDA(gs_burn_fill_half(g->a16, elems, 1.0f, g->stream));
  GS_CHECK_CUDA(gs_burn_fill_half(g->b16, elems, 1.0f, g->stream));
  GS_CHECK_CUDA(gs_membw_fill(g->tb, g->tc, tn, g->stream));
  GS_CHECK_CUBLAS(cublasCreate(&g->blas));
  GS_CHECK_CUBLAS(cublasSetStream(g->blas, g->stream));
  return GS_OK;
}

/* GEMMs and triads until the deadline; results checked on the GPU every
 * check interval (the check is queued behind the work it checks). */
static gs_status burn_loop(burn_job *j) {
  burn_gpu *g = &j->g;
  gs_gpu_burn *out = j->out;
  const int n = (int)j->o->gemm_n;
  const uint64_t tn = j->o->triad_bytes / sizeof(double);
  const float one = 1.0f, zero = 0.0f;
  const double t0 = gs_time_seconds();
  double next_check = t0 + j->o->check_interval_s, gemm_seconds = 0;
  cudaEvent_t start = NULL, stop = NULL;
  GS_CHECK_CUDA(cudaEventCreate(&start));
  GS_CHECK_CUDA(cudaEventCreate(&stop));
  gs_status st = GS_OK;
  while (st == GS_OK && gs_time_seconds() < j->deadline) {
    // Ten GEMMs (about 11 TFLOP at 8192) then two triads, timed apart.
    cudaError_t rc = cudaEventRecord(start, g->stream);
    for (int k = 0; rc == cudaSuccess && k < 10; k++) {
      cublasStatus_t bs = cublasGemmEx(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, g->a16,
                                       CUDA_R_16F, n, g->b16, CUDA_R_16F, n, &zero, g->c32,
                                       CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      if (bs != CUBLAS_STATUS_SUCCESS)
        return gs_error(GS_ERR_CUDA, "cublasGemmEx: %s", cublasGetStatusString(bs));
      out->gemms++;
    }
    if (rc == cudaSuccess) rc = cudaEventRecord(stop, g->stream);
    for (int k = 0; rc == cudaSuccess && k < 2; k++, out->triads++)
      rc = gs_membw_triad(g->ta, g->tb, g->tc, GS_MEMBW_SCALAR, tn, 1024, g->stream);
    if (rc == cudaSuccess && gs_time_seconds() >= next_check) {
      rc = gs_burn_check_float(g->c32, (uint64_t)n * (uint64_t)n, (float)n, g->bad, g->stream);
      if (rc == cudaSuccess) rc = gs_membw_check(g->ta, tn, GS_MEMBW_SCALAR, g->bad, g->stream);
      out->checks++;
      next_check = gs_time_seconds() + j->o->check_interval_s;
    }
    if (rc == cudaSuccess) rc = cudaStreamSynchronize(g->stream);
    float ms = 0;
    if (rc == cudaSuccess) rc = cudaEventElapsedTime(&ms, start, stop);
    gemm_seconds += ms / 1e3;
    if (rc != cudaSuccess)
      st = gs_error(GS_ERR_CUDA, "GPU %d: %s", out->device, cudaGetErrorString(rc));
  }
  // The last results, checked after the loop whatever the interval.
  if (st == GS_OK && out->gemms) {
    GS_CHECK_CUDA(gs_burn_check_float(g->c32, (uint64_t)n * (uint64_t)n, (float)n, g->bad,
                                      g->stream));
    GS_CHECK_CUDA(gs_membw_check(g->ta, tn, GS_MEMBW_SCALAR, g->bad, g->stream));
    out->checks++;
  }
  if (st == GS_OK) {
    GS_CHECK_CUDA(cudaMemcpyAsync(&out->mismatches, g->bad, sizeof out->mismatches,
                                  cudaMemcpyDeviceToHost, g->stream));
    GS_CHECK_CUDA(cudaStreamSynchronize(g->stream));
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  out->seconds = gs_time_seconds() - t0;
  if (gemm_seconds > 0)
    out->gemm_tflops = 2.0 * n * (double)n * n * (double)out->gemms / gemm_seconds / 1e12;
  return st;
}

static void *burn_thread(void *arg) {
  burn_job *j = arg;
  j->out->ran = 1;
  gs_status st = burn_setup(j);
  if (st == GS_OK) st = burn_loop(j);
  if (st != GS_OK) snprintf(j->out->error, sizeof j->out->error, "%s", gs_last_error());
  burn_gpu_free(&j->g);
  return NULL;
}

/* NVML's readings of GPU k into its entry. */
static void take_telemetry(const gs_telemetry *t, size_t k, gs_gpu_burn *out) {
  if (!t->available || k >= t->n_ranks) return;
  const gs_telemetry_rank *r = &t->ranks[k];
  const gs_telemetry_range *p = &r->range[GS_TELEMETRY_POWER];
  const gs_telemetry_range *c = &r->range[GS_TELEMETRY_SM_CLOCK];
  const gs_telemetry_range *temp = &r->range[GS_TELEMETRY_TEMPERATURE];
  out->readings = r->samples;
  out->power_known = p->n > 0;
  out->power_mean_w = gs_telemetry_range_mean(p);
  out->power_max_w = p->max;
  out->clock_known = c->n > 0;
  out->sm_clock_min_mhz = c->min;
  out->sm_clock_mean_mhz = gs_telemetry_range_mean(c);
  out->temperature_known = temp->n > 0;
  out->temperature_max_c = temp->max;
  out->throttle_known = r->throttle_known;
  out->throttle_seen = r->throttle_seen;
}

gs_status gs_check_burn_run(const gs_check_burn_options *o, gs_node_burn *b) {
  memset(b, 0, sizeof *b);
  b->level = 3;
  b->duration_s = o->duration_s;
  if (o->gemm_n == 0 || o->gemm_n % 64 || o->gemm_n > 8192)
    GS_BUG("gs_check_burn_run: GEMM size %llu outside its contract",
           (unsigned long long)o->gemm_n);
  gs_environment env;
  memset(&env, 0, sizeof env);
  GS_TRY(gs_common_environment(&env));
  if (env.gpu_count == 0) {
    snprintf(b->why, sizeof b->why, "no CUDA device: %s",
             env.cuda_status[0] ? env.cuda_status : "none found");
    gs_environment_free(&env);
    return GS_OK;
  }
  b->n = env.gpu_count;
  b->gpus = calloc(b->n, sizeof *b->gpus);
  burn_job *jobs = calloc(b->n, sizeof *jobs);
  pthread_t *threads = calloc(b->n, sizeof *threads);
  int *devices = calloc(b->n, sizeof *devices);
  const char **buses = calloc(b->n, sizeof *buses);
  gs_telemetry t;
  memset(&t, 0, sizeof t);
  gs_status st = b->gpus && jobs && threads && devices && buses
                     ? gs_telemetry_init(&t, b->n, 1.0, 1)
                     : gs_error(GS_ERR_NOMEM, "cannot allocate the burn-in");
  for (size_t i = 0; st == GS_OK && i < b->n; i++) {
    snprintf(b->gpus[i].pci_bus_id, sizeof b->gpus[i].pci_bus_id, "%s", env.gpus[i].pci_bus_id);
    b->gpus[i].device = devices[i] = env.gpus[i].index;
    buses[i] = b->gpus[i].pci_bus_id;
  }
  if (st == GS_OK) st = gs_telemetry_start(&t, devices, buses);
  if (st == GS_OK && !t.available) snprintf(b->telemetry_why, sizeof b->telemetry_why, "%s",
                                            t.reason);
  const double t0 = gs_time_seconds();
  size_t started = 0;
  for (; st == GS_OK && started < b->n; started++) {
    jobs[started] = (burn_job){.o = o, .deadline = t0 + o->duration_s, .out = &b->gpus[started]};
    int rc = pthread_create(&threads[started], NULL, burn_thread, &jobs[started]);
    if (rc != 0) st = gs_error_system(rc, "cannot start the burn-in thread of GPU %zu", started);
  }
  // A thread that could not start leaves the others to finish their time.
  for (size_t i = 0; i < started; i++) pthread_join(threads[i], NULL);
  b->seconds = gs_time_seconds() - t0;
  gs_telemetry_stop(&t);
  for (size_t i = 0; i < b->n && b->gpus; i++) take_telemetry(&t, i, &b->gpus[i]);
  if (t.available) b->telemetry = gs_telemetry_to_json(&t);  // NULL on no memory: not kept
  gs_telemetry_free(&t);
  free(jobs);
  free(threads);
  free(devices);
  free(buses);
  gs_environment_free(&env);
  return st;
}
