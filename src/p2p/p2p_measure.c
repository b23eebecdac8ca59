/* p2p measurement: the test registry, per-GPU buffers and streams, one timed
 * sample (spin kernel, copies queued behind it, events, release), and the
 * loops that fill each test's cells. Host code calling the CUDA runtime and
 * the launchers of p2p_kernels.cu. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/check.h"
#include "core/interrupt.h"
#include "platform/trace.h"
#include "p2p/p2p.h"
#include "p2p/p2p_kernels.h"

#define SPIN_TIMEOUT_NS 2000000000ull /* a queued sample never waits longer */
#define MAX_STREAMS 16
#define LATENCY_COPIES 100            /* small copies per CE latency sample */
#define LATENCY_BYTES 16

typedef enum { OP_CE = 0, OP_SM } copy_op;

/* The registry: every test, what it measures and how. */
typedef struct {
  const char *key;
  const char *title;
  gs_p2p_unit unit;
  int per_gpu;        /* host tests */
  gs_p2p_mode mode;
  copy_op op;
  int bidirectional;
  int multi_stream;
  int peer;           /* 1: P2P enabled, 0: disabled (staged by the driver through host memory) */
  int to_device;      /* host tests: 1 H2D, 0 D2H */
  int latency;        /* 1: SM ping-pong, 2: small CE copies */
  int pull;           /* SM copy run by the destination GPU, reading the peer */
} test_def;

static const test_def registry[] = {
    {"ce_unidir_p2p", "Copy engine (cudaMemcpyPeerAsync), unidirectional, P2P enabled (GB/s)",
     GS_P2P_UNIT_BANDWIDTH, 0, GS_P2P_MODE_CE, OP_CE, 0, 0, 1, 0, 0, 0},
    {"ce_bidir_p2p", "Copy engine, bidirectional total, P2P enabled (GB/s)",
     GS_P2P_UNIT_BANDWIDTH, 0, GS_P2P_MODE_CE, OP_CE, 1, 0, 1, 0, 0, 0},
    {"ce_unidir_p2p_streams", "Copy engine, unidirectional, P2P enabled, split over --streams streams (GB/s)",
     GS_P2P_UNIT_BANDWIDTH, 0, GS_P2P_MODE_CE, OP_CE, 0, 1, 1, 0, 0, 0},
    {"ce_unidir_nop2p", "Copy engine, unidirectional, P2P disabled: staged through host (GB/s)",
     GS_P2P_UNIT_BANDWIDTH, 0, GS_P2P_MODE_CE, OP_CE, 0, 0, 0, 0, 0, 0},
    {"ce_bidir_nop2p", "Copy engine, bidirectional total, P2P disabled (GB/s)",
     GS_P2P_UNIT_BANDWIDTH, 0, GS_P2P_MODE_CE, OP_CE, 1, 0, 0, 0, 0, 0},
    {"sm_unidir_p2p", "SM copy kernel (source GPU writes into the peer), unidirectional (GB/s)",
     GS_P2P_UNIT_BANDWIDTH, 0, GS_P2P_MODE_SM, OP_SM, 0, 0, 1, 0, 0, 0},
    {"sm_unidir_p2p_pull", "SM copy kernel (destination GPU reads the peer), unidirectional (GB/s)",
     GS_P2P_UNIT_BANDWIDTH, 0, GS_P2P_MODE_SM, OP_SM, 0, 0, 1, 0, 0, 1},
    {"sm_bidir_p2p", "SM copy kernel, bidirectional total (GB/s)",
     GS_P2P_UNIT_BANDWIDTH, 0, GS_P2P_MODE_SM, OP_SM, 1, 0, 1, 0, 0, 0},
    {"host_to_device", "Host to device, pinned memory (GB/s)",
     GS_P2P_UNIT_BANDWIDTH, 1, GS_P2P_MODE_HOST, OP_CE, 0, 0, 0, 1, 0, 0},
    {"device_to_host", "Device to host, pinned memory (GB/s)",
     GS_P2P_UNIT_BANDWIDTH, 1, GS_P2P_MODE_HOST, OP_CE, 0, 0, 0, 0, 0, 0},
    {"latency_sm_p2p", "Latency, SM path: one-way, GPU ping-pong through peer memory (us)",
     GS_P2P_UNIT_LATENCY, 0, GS_P2P_MODE_LATENCY, OP_SM, 0, 0, 1, 0, 1, 0},
    {"latency_ce_p2p", "Latency, copy engine: 16-byte cudaMemcpyPeerAsync, P2P enabled (us)",
     GS_P2P_UNIT_LATENCY, 0, GS_P2P_MODE_LATENCY, OP_CE, 0, 0, 1, 0, 2, 0},
    {"latency_ce_nop2p", "Latency, copy engine: 16-byte copies, P2P disabled (us)",
     GS_P2P_UNIT_LATENCY, 0, GS_P2P_MODE_LATENCY, OP_CE, 0, 0, 0, 0, 2, 0},
};
#define TEST_COUNT (sizeof registry / sizeof registry[0])

/* What one GPU holds for the whole command. */
typedef struct {
  int device;
  int sm_count;
  void *send;                     /* pattern seeded with seed_of(index) */
  void *recv;                     /* destination of copies into this GPU */
  int *flag;                      /* ping-pong flag, read by this GPU */
  unsigned long long *scratch;    /* [0] mismatches, [1] elapsed ns */
  int *timed_out;
  cudaStream_t streams[MAX_STREAMS];
  cudaEvent_t start[MAX_STREAMS], stop[MAX_STREAMS];
  size_t n_streams;
} gpu_res;

typedef struct {
  const gs_p2p_options *o;
  size_t n;
  gpu_res *gpu;
  int *can_peer;                  /* n x n, cudaDeviceCanAccessPeer */
  volatile int *release;          /* pinned, mapped: releases spin kernels */
  void *host_send, *host_recv;    /* pinned, mapped */
} p2p_ctx;

/* One stream's share of a sample. */
typedef struct {
  size_t gpu;                     /* whose stream runs it */
  int src_gpu;                    /* index of the source GPU; -1 host */
  size_t stream;
  size_t group;                   /* direction: lanes of one group share a device */
  copy_op op;
  const void *src;
  void *dst;
  int src_device, dst_device;     /* CUDA ordinals (-1 host) */
  uint64_t bytes;
} lane;

static uint32_t seed_of(size_t gpu) { return 0x9e3779b9u * (uint32_t)(gpu + 1); }
#define HOST_SEED 0x51ed270bu

/* ---- setup ------------------------------------------------------------------ */

static gs_status gpu_setup(p2p_ctx *c, size_t i, int device) {
  gpu_res *g = &c->gpu[i];
  g->device = device;
  GS_CHECK_CUDA(cudaSetDevice(device));
  GS_CHECK_CUDA(cudaDeviceGetAttribute(&g->sm_count, cudaDevAttrMultiProcessorCount, device));
  uint64_t size = c->o->size_bytes;
  if (cudaMalloc(&g->send, size) != cudaSuccess || cudaMalloc(&g->recv, size) != cudaSuccess) {
    (void)cudaGetLastError();
    return gs_error(GS_ERR_NOMEM, "GPU %d: cannot allocate 2 buffers of %llu bytes (--size)",
                    device, (unsigned long long)size);
  }
  GS_CHECK_CUDA(cudaMalloc((void **)&g->flag, sizeof *g->flag));
  GS_CHECK_CUDA(cudaMalloc((void **)&g->scratch, 2 * sizeof *g->scratch));
  GS_CHECK_CUDA(cudaMalloc((void **)&g->timed_out, sizeof *g->timed_out));
  g->n_streams = c->o->streams < MAX_STREAMS ? (size_t)c->o->streams : MAX_STREAMS;
  if (g->n_streams < 1) g->n_streams = 1;
  for (size_t s = 0; s < g->n_streams; s++) {
    GS_CHECK_CUDA(cudaStreamCreateWithFlags(&g->streams[s], cudaStreamNonBlocking));
    GS_CHECK_CUDA(cudaEventCreate(&g->start[s]));
    GS_CHECK_CUDA(cudaEventCreate(&g->stop[s]));
  }
  GS_CHECK_CUDA(gs_p2p_fill(g->send, size, seed_of(i), g->streams[0]));
  GS_CHECK_CUDA(cudaStreamSynchronize(g->streams[0]));
  return GS_OK;
}

static void ctx_free(p2p_ctx *c) {
  for (size_t i = 0; c->gpu && i < c->n; i++) {
    gpu_res *g = &c->gpu[i];
    if (cudaSetDevice(g->device) != cudaSuccess) continue;
    cudaDeviceSynchronize();
    for (size_t s = 0; s < g->n_streams; s++) {
      cudaEventDestroy(g->start[s]);
      cudaEventDestroy(g->stop[s]);
      cudaStreamDestroy(g->streams[s]);
    }
    cudaFree(g->send);
    cudaFree(g->recv);
    cudaFree(g->flag);
    cudaFree(g->scratch);
    cudaFree(g->timed_out);
  }
  if (c->release) cudaFreeHost((void *)c->release);
  if (c->host_send) cudaFreeHost(c->host_send);
  if (c->host_recv) cudaFreeHost(c->host_recv);
  (void)cudaGetLastError();
  free(c->gpu);
  free(c->can_peer);
}

static gs_status ctx_setup(p2p_ctx *c, const gs_p2p_options *o, const gs_environment *env) {
  memset(c, 0, sizeof *c);
  c->o = o;
  c->n = env->gpu_count < GS_P2P_MAX_GPUS ? env->gpu_count : GS_P2P_MAX_GPUS;
  c->gpu = calloc(c->n, sizeof *c->gpu);
  c->can_peer = calloc(c->n * c->n, sizeof *c->can_peer);
  if (!c->gpu || !c->can_peer) return gs_error(GS_ERR_NOMEM, "cannot allocate the p2p state");
  for (size_t i = 0; i < c->n; i++)
    for (size_t j = 0; j < c->n; j++)
      if (i != j)
        GS_CHECK_CUDA(cudaDeviceCanAccessPeer(&c->can_peer[i * c->n + j], env->gpus[i].index,
                                              env->gpus[j].index));
  for (size_t i = 0; i < c->n; i++) GS_TRY(gpu_setup(c, i, env->gpus[i].index));
  const unsigned flags = cudaHostAllocMapped | cudaHostAllocPortable;
  GS_CHECK_CUDA(cudaHostAlloc((void **)&c->release, sizeof *c->release, flags));
  *c->release = 0;
  int need_host = o->mode == GS_P2P_MODE_ALL || o->mode == GS_P2P_MODE_HOST;
  if (need_host) {
    if (cudaHostAlloc(&c->host_send, o->size_bytes, flags) != cudaSuccess ||
        cudaHostAlloc(&c->host_recv, o->size_bytes, flags) != cudaSuccess) {
      (void)cudaGetLastError();
      return gs_error(GS_ERR_NOMEM, "cannot allocate 2 pinned host buffers of %llu bytes (--size)",
                      (unsigned long long)o->size_bytes);
    }
    // Filled by GPU 0 through the mapping: far faster than the CPU hash loop.
    GS_CHECK_CUDA(cudaSetDevice(c->gpu[0].device));
    GS_CHECK_CUDA(gs_p2p_fill(c->host_send, o->size_bytes, HOST_SEED, c->gpu[0].streams[0]));
    GS_CHECK_CUDA(cudaStreamSynchronize(c->gpu[0].streams[0]));
  }
  return GS_OK;
}

/* Enables or disables peer access both ways between GPUs a and b. */
static gs_status set_peer(p2p_ctx *c, size_t a, size_t b, int on) {
  size_t ends[2][2] = {{a, b}, {b, a}};
  for (size_t k = 0; k < 2; k++) {
    GS_CHECK_CUDA(cudaSetDevice(c->gpu[ends[k][0]].device));
    int peer = c->gpu[ends[k][1]].device;
    cudaError_t rc = on ? cudaDeviceEnablePeerAccess(peer, 0) : cudaDeviceDisablePeerAccess(peer);
    if (rc == cudaErrorPeerAccessAlreadyEnabled || rc == cudaErrorPeerAccessNotEnabled) {
      (void)cudaGetLastError();  // already in the wanted state
      continue;
    }
    GS_CHECK_CUDA(rc);
  }
  return GS_OK;
}

/* ---- one timed sample ---------------------------------------------------------- */

static gs_status enqueue_copy(const p2p_ctx *c, const lane *l, cudaStream_t stream) {
  if (l->op == OP_SM) {
    unsigned blocks = (unsigned)c->gpu[l->gpu].sm_count * (unsigned)c->o->sm_ctas;
    GS_CHECK_CUDA(gs_p2p_sm_copy(l->src, l->dst, l->bytes, blocks, stream));
  } else if (l->src_device >= 0 && l->dst_device >= 0) {
    GS_CHECK_CUDA(cudaMemcpyPeerAsync(l->dst, l->dst_device, l->src, l->src_device, l->bytes,
                                      stream));
  } else {
    GS_CHECK_CUDA(cudaMemcpyAsync(l->dst, l->src, l->bytes, cudaMemcpyDefault, stream));
  }
  return GS_OK;
}

/* Queues one lane's sample on its stream: the spin kernel (when `spin`),
 * the start event, `copies` copies, the stop event. */
static gs_status enqueue_lane(p2p_ctx *c, const lane *l, uint64_t copies, int spin) {
  gpu_res *g = &c->gpu[l->gpu];
  cudaStream_t s = g->streams[l->stream];
  GS_CHECK_CUDA(cudaSetDevice(g->device));
  if (spin) GS_CHECK_CUDA(gs_p2p_spin(c->release, SPIN_TIMEOUT_NS, g->timed_out, s));
  GS_CHECK_CUDA(cudaEventRecord(g->start[l->stream], s));
  for (uint64_t it = 0; it < copies; it++) GS_TRY(enqueue_copy(c, l, s));
  GS_CHECK_CUDA(cudaEventRecord(g->stop[l->stream], s));
  return GS_OK;
}

typedef struct {
  p2p_ctx *c;
  const lane *l;
  uint64_t copies;
  gs_status status;
  char error[GS_TEXT_ERROR];
} lane_thread;

static void *lane_thread_main(void *arg) {
  lane_thread *t = arg;
  t->status = enqueue_lane(t->c, t->l, t->copies, 0);
  if (t->status != GS_OK) snprintf(t->error, sizeof t->error, "%s", gs_last_error());
  return NULL;
}

/* Without peer access the driver stages large copies through host memory
 * and the enqueueing call itself waits for them, so a spin kernel could not
 * hold them back: each lane is queued by its own host thread instead, which
 * still starts the directions together. */
static gs_status enqueue_threaded(p2p_ctx *c, const lane *lanes, size_t n_lanes,
                                  uint64_t copies) {
  lane_thread threads[2 * MAX_STREAMS];
  pthread_t ids[2 * MAX_STREAMS];
  size_t started = 0;
  gs_status st = GS_OK;
  for (size_t k = 0; k < n_lanes; k++) {
    threads[k] = (lane_thread){.c = c, .l = &lanes[k], .copies = copies};
    const int rc = pthread_create(&ids[k], NULL, lane_thread_main, &threads[k]);
    if (rc != 0) {
      st = gs_error_system(rc, "cannot start a thread to queue copies");
      break;
    }
    started++;
  }
  for (size_t k = 0; k < started; k++) {
    pthread_join(ids[k], NULL);
    if (threads[k].status != GS_OK && st == GS_OK)
      st = gs_error(threads[k].status, "%s", threads[k].error);
  }
  return st;
}

/* Queues `copies` copies on every lane (behind a spin kernel when `spin`),
 * releases them together and returns each group's bandwidth (bytes/s) in
 * group_bw and its time span in group_seconds: from the first lane's start
 * event to the latest stop event of the group. */
static gs_status run_sample(p2p_ctx *c, const lane *lanes, size_t n_lanes, size_t n_groups,
                            uint64_t copies, int spin, double *group_bw,
                            double *group_seconds) {
  gs_status st = GS_OK;
  for (size_t k = 0; k < n_lanes; k++) {
    gpu_res *g = &c->gpu[lanes[k].gpu];
    GS_CHECK_CUDA(cudaSetDevice(g->device));
    GS_CHECK_CUDA(cudaMemset(g->timed_out, 0, sizeof *g->timed_out));
  }
  size_t queued = n_lanes;
  if (spin) {
    for (size_t k = 0; k < n_lanes && st == GS_OK; k++) {
      queued = k + 1;
      st = enqueue_lane(c, &lanes[k], copies, 1);
    }
  } else {
    st = enqueue_threaded(c, lanes, n_lanes, copies);
  }
  // Release even after an error, so no spin kernel is left waiting.
  __atomic_store_n(c->release, 1, __ATOMIC_SEQ_CST);
  for (size_t k = 0; k < queued; k++) {
    gpu_res *g = &c->gpu[lanes[k].gpu];
    cudaSetDevice(g->device);
    cudaError_t rc = cudaStreamSynchronize(g->streams[lanes[k].stream]);
    if (rc != cudaSuccess && st == GS_OK)
      st = gs_error(GS_ERR_CUDA, "GPU %d: a timed copy failed: %s", g->device,
                    cudaGetErrorString(rc));
  }
  __atomic_store_n(c->release, 0, __ATOMIC_SEQ_CST);
  if (st != GS_OK) return st;
  for (size_t k = 0; k < n_lanes; k++) {
    gpu_res *g = &c->gpu[lanes[k].gpu];
    int timed_out = 0;
    GS_CHECK_CUDA(cudaSetDevice(g->device));
    GS_CHECK_CUDA(cudaMemcpy(&timed_out, g->timed_out, sizeof timed_out, cudaMemcpyDeviceToHost));
    if (timed_out)
      return gs_error(GS_ERR_TIMEOUT,
                      "GPU %d: the spin kernel was not released within %.0f s (copies took too "
                      "long to queue; lower --iters)",
                      g->device, SPIN_TIMEOUT_NS / 1e9);
  }
  for (size_t grp = 0; grp < n_groups; grp++) {
    const lane *first = NULL;
    uint64_t bytes = 0;
    float span_ms = 0.0f;
    for (size_t k = 0; k < n_lanes; k++) {
      if (lanes[k].group != grp) continue;
      if (!first) first = &lanes[k];
      gpu_res *g = &c->gpu[lanes[k].gpu];
      float ms = 0.0f;
      GS_CHECK_CUDA(cudaEventElapsedTime(&ms, g->start[first->stream], g->stop[lanes[k].stream]));
      if (ms > span_ms) span_ms = ms;
      bytes += lanes[k].bytes;
    }
    group_seconds[grp] = span_ms * 1e-3;
    group_bw[grp] = gs_p2p_bandwidth(bytes, copies, group_seconds[grp]);
  }
  return GS_OK;
}

/* Counts the 32-bit words of `buf` (`bytes`, on or mapped into GPU `gpu`)
 * that differ from the pattern of `seed`. */
static gs_status count_mismatches(p2p_ctx *c, size_t gpu, const void *buf, uint64_t bytes,
                                  uint32_t seed, uint64_t *mismatches) {
  gpu_res *g = &c->gpu[gpu];
  unsigned long long bad = 0;
  GS_CHECK_CUDA(cudaSetDevice(g->device));
  GS_CHECK_CUDA(cudaMemset(g->scratch, 0, sizeof *g->scratch));
  GS_CHECK_CUDA(gs_p2p_check(buf, bytes, seed, g->scratch, g->streams[0]));
  GS_CHECK_CUDA(cudaMemcpyAsync(&bad, g->scratch, sizeof bad, cudaMemcpyDeviceToHost,
                                g->streams[0]));
  GS_CHECK_CUDA(cudaStreamSynchronize(g->streams[0]));
  *mismatches = bad;
  return GS_OK;
}

/* ---- the cells of each kind of test --------------------------------------------- */

/* Lanes of a GPU-to-GPU bandwidth cell (a -> b, and b -> a when bidirectional). */
static size_t pair_lanes(const p2p_ctx *c, const test_def *t, size_t a, size_t b, uint64_t bytes,
                         lane *lanes) {
  size_t streams = t->multi_stream ? c->gpu[a].n_streams : 1;
  size_t n = 0;
  size_t ends[2][2] = {{a, b}, {b, a}};
  for (size_t dir = 0; dir < (t->bidirectional ? 2u : 1u); dir++) {
    size_t from = ends[dir][0], to = ends[dir][1];
    // Chunks of a multiple of 16 bytes; the last takes the rest.
    uint64_t chunk = bytes / streams / 16 * 16;
    for (size_t s = 0; s < streams; s++) {
      uint64_t off = chunk * s;
      // Pull: the destination GPU's kernel reads the peer; else the source pushes.
      lanes[n] = (lane){.gpu = t->pull ? to : from, .src_gpu = (int)from, .stream = s,
                        .group = dir, .op = t->op,
                        .src = (const char *)c->gpu[from].send + off,
                        .dst = (char *)c->gpu[to].recv + off,
                        .src_device = c->gpu[from].device, .dst_device = c->gpu[to].device,
                        .bytes = s + 1 == streams ? bytes - off : chunk};
      n++;
    }
  }
  return n;
}

/* Warmup, samples and verification of one bandwidth or CE-latency cell. */
static gs_status measure_copies(p2p_ctx *c, const test_def *t, const lane *lanes, size_t n_lanes,
                                size_t n_groups, uint64_t copies, gs_p2p_cell *cell) {
  double dir_samples[2][GS_P2P_MAX_SAMPLES];
  // Destinations start zeroed, so verification proves the copies happened.
  for (size_t k = 0; k < n_lanes; k++) {
    if (lanes[k].dst_device < 0) {
      memset(lanes[k].dst, 0, lanes[k].bytes);
      continue;
    }
    GS_CHECK_CUDA(cudaSetDevice(lanes[k].dst_device));
    GS_CHECK_CUDA(cudaMemset(lanes[k].dst, 0, lanes[k].bytes));
  }
  for (size_t k = 0; k < c->n; k++) {
    GS_CHECK_CUDA(cudaSetDevice(c->gpu[k].device));
    GS_CHECK_CUDA(cudaDeviceSynchronize());
  }
  double bw[2], seconds[2];
  // Small copies queue without waiting even when staged (latency tests).
  int spin = t->peer || t->per_gpu || t->latency;
  GS_TRY(run_sample(c, lanes, n_lanes, n_groups, copies, spin, bw, seconds));  // warmup
  for (uint64_t s = 0; s < c->o->samples; s++) {
    GS_TRY(run_sample(c, lanes, n_lanes, n_groups, copies, spin, bw, seconds));
    double value = 0.0;
    if (t->unit == GS_P2P_UNIT_LATENCY) {
      value = seconds[0] / (double)copies;
    } else {
      for (size_t g = 0; g < n_groups; g++) value += bw[g];
    }
    cell->samples[cell->n++] = value;
    for (size_t g = 0; g < n_groups && g < 2; g++) dir_samples[g][s] = bw[g];
  }
  GS_TRY(gs_p2p_cell_summarize(cell));
  cell->bidirectional = n_groups == 2;
  for (size_t g = 0; cell->bidirectional && g < 2; g++) {
    gs_stats st;
    GS_TRY(gs_stats_compute(dir_samples[g], cell->n, &st));
    cell->direction_median[g] = st.median;
  }
  // Verification after timing: every destination against its source pattern.
  cell->mismatches = 0;
  for (size_t k = 0; k < n_lanes; k++) {
    const lane *l = &lanes[k];
    uint64_t bad = 0;
    // A lane's source is its GPU's send buffer (or the host's), chunk at an
    // offset. The check kernel numbers words from the pointer it is given,
    // so each destination is checked whole, once, by its first lane.
    uint32_t seed = l->src_gpu < 0 ? HOST_SEED : seed_of((size_t)l->src_gpu);
    const char *base = l->src_gpu < 0 ? (const char *)c->host_send
                                      : (const char *)c->gpu[l->src_gpu].send;
    if ((const char *)l->src != base) continue;
    uint64_t total = 0;
    for (size_t m = 0; m < n_lanes; m++)
      if (lanes[m].group == l->group) total += lanes[m].bytes;
    size_t check_gpu = l->dst_device >= 0 ? 0 : l->gpu;
    for (size_t i = 0; l->dst_device >= 0 && i < c->n; i++)
      if (c->gpu[i].device == l->dst_device) check_gpu = i;
    GS_TRY(count_mismatches(c, check_gpu, l->dst, total, seed, &bad));
    cell->mismatches += bad;
  }
  cell->verify = cell->mismatches == 0 ? GS_VERIFY_PASSED : GS_VERIFY_FAILED;
  if (cell->verify == GS_VERIFY_FAILED)
    return gs_error(GS_ERR_VERIFY, "%llu words differ from the source after the copies",
                    (unsigned long long)cell->mismatches);
  return GS_OK;
}

/* One-way latency by ping-pong between GPUs a and b (a initiates). */
static gs_status measure_pingpong(p2p_ctx *c, size_t a, size_t b, gs_p2p_cell *cell) {
  gpu_res *ga = &c->gpu[a], *gb = &c->gpu[b];
  int rounds = (int)c->o->latency_rounds;
  for (uint64_t s = 0; s <= c->o->samples; s++) {
    GS_CHECK_CUDA(cudaSetDevice(gb->device));
    GS_CHECK_CUDA(cudaMemset(gb->flag, 0, sizeof *gb->flag));
    GS_CHECK_CUDA(cudaMemset(gb->timed_out, 0, sizeof *gb->timed_out));
    GS_CHECK_CUDA(cudaSetDevice(ga->device));
    GS_CHECK_CUDA(cudaMemset(ga->flag, 0, sizeof *ga->flag));
    GS_CHECK_CUDA(cudaMemset(ga->timed_out, 0, sizeof *ga->timed_out));
    // The responder first, so it is spinning when the first write lands.
    GS_CHECK_CUDA(cudaSetDevice(gb->device));
    GS_CHECK_CUDA(gs_p2p_pingpong(gb->flag, ga->flag, rounds, 0, SPIN_TIMEOUT_NS,
                                  gb->scratch + 1, gb->timed_out, gb->streams[0]));
    GS_CHECK_CUDA(cudaSetDevice(ga->device));
    GS_CHECK_CUDA(gs_p2p_pingpong(ga->flag, gb->flag, rounds, 1, SPIN_TIMEOUT_NS,
                                  ga->scratch + 1, ga->timed_out, ga->streams[0]));
    GS_CHECK_CUDA(cudaStreamSynchronize(ga->streams[0]));
    GS_CHECK_CUDA(cudaSetDevice(gb->device));
    GS_CHECK_CUDA(cudaStreamSynchronize(gb->streams[0]));
    int out_a = 0, out_b = 0, flag_a = 0, flag_b = 0;
    unsigned long long elapsed = 0;
    GS_CHECK_CUDA(cudaMemcpy(&out_b, gb->timed_out, sizeof out_b, cudaMemcpyDeviceToHost));
    GS_CHECK_CUDA(cudaMemcpy(&flag_b, gb->flag, sizeof flag_b, cudaMemcpyDeviceToHost));
    GS_CHECK_CUDA(cudaSetDevice(ga->device));
    GS_CHECK_CUDA(cudaMemcpy(&out_a, ga->timed_out, sizeof out_a, cudaMemcpyDeviceToHost));
    GS_CHECK_CUDA(cudaMemcpy(&flag_a, ga->flag, sizeof flag_a, cudaMemcpyDeviceToHost));
    GS_CHECK_CUDA(cudaMemcpy(&elapsed, ga->scratch + 1, sizeof elapsed, cudaMemcpyDeviceToHost));
    if (out_a || out_b)
      return gs_error(GS_ERR_TIMEOUT, "ping-pong GPU %d <-> GPU %d: no answer within %.0f s",
                      ga->device, gb->device, SPIN_TIMEOUT_NS / 1e9);
    // Both flags end at the last round: every write crossed the link.
    if (flag_a != rounds || flag_b != rounds) {
      cell->verify = GS_VERIFY_FAILED;
      return gs_error(GS_ERR_VERIFY, "ping-pong GPU %d <-> GPU %d: flags ended at %d and %d, not %d",
                      ga->device, gb->device, flag_a, flag_b, rounds);
    }
    if (s == 0) continue;  // warmup
    cell->samples[cell->n++] = (double)elapsed * 1e-9 / (2.0 * rounds);
  }
  cell->verify = GS_VERIFY_PASSED;
  return gs_p2p_cell_summarize(cell);
}

/* Fills one GPU-pair cell of test t. */
static gs_status measure_pair(p2p_ctx *c, const test_def *t, size_t a, size_t b,
                              gs_p2p_cell *cell) {
  if (t->peer) GS_TRY(set_peer(c, a, b, 1));
  else GS_TRY(set_peer(c, a, b, 0));
  if (t->latency == 1) return measure_pingpong(c, a, b, cell);
  lane lanes[2 * MAX_STREAMS];
  if (t->latency == 2) {
    lanes[0] = (lane){.gpu = a, .src_gpu = (int)a, .stream = 0, .group = 0, .op = OP_CE,
                      .src = c->gpu[a].send,
                      .dst = c->gpu[b].recv, .src_device = c->gpu[a].device,
                      .dst_device = c->gpu[b].device, .bytes = LATENCY_BYTES};
    return measure_copies(c, t, lanes, 1, 1, LATENCY_COPIES, cell);
  }
  size_t n = pair_lanes(c, t, a, b, c->o->size_bytes, lanes);
  return measure_copies(c, t, lanes, n, t->bidirectional ? 2 : 1, c->o->iters, cell);
}

/* Fills one host cell (GPU a, H2D or D2H). */
static gs_status measure_host(p2p_ctx *c, const test_def *t, size_t a, gs_p2p_cell *cell) {
  lane l = {.gpu = a, .src_gpu = t->to_device ? -1 : (int)a, .stream = 0, .group = 0,
            .op = OP_CE, .bytes = c->o->size_bytes};
  if (t->to_device) {
    l.src = c->host_send;
    l.dst = c->gpu[a].recv;
    l.src_device = -1;
    l.dst_device = c->gpu[a].device;
  } else {
    l.src = c->gpu[a].send;
    l.dst = c->host_recv;
    l.src_device = c->gpu[a].device;
    l.dst_device = -1;
  }
  return measure_copies(c, t, &l, 1, 1, c->o->iters, cell);
}

/* ---- the whole command ------------------------------------------------------------ */

/* One cell inside its trace range (a step of the test's run in the
 * trace): test `t` between GPUs a and b, or of GPU a and the host when b
 * is negative; `seq` counts the test's cells. */
static gs_status measure_cell(p2p_ctx *c, size_t ti, const test_def *t, size_t a, long b,
                              uint64_t seq, gs_p2p_cell *cell) {
  char name[GS_TRACE_NAME];
  if (b < 0)
    snprintf(name, sizeof name, "%s GPU %d", t->key, c->gpu[a].device);
  else
    snprintf(name, sizeof name, "%s GPU %d -> GPU %d", t->key, c->gpu[a].device,
             c->gpu[b].device);
  gs_trace_step_open((int64_t)ti, (int64_t)seq);
  gs_trace_begin_text(GS_TRACE_COPY, NULL, name);
  gs_status st = b < 0 ? measure_host(c, t, a, cell) : measure_pair(c, t, a, (size_t)b, cell);
  gs_trace_end();
  gs_trace_step_close();
  return st;
}

static int mode_runs(int mode, const test_def *t) {
  return mode == GS_P2P_MODE_ALL || mode == (int)t->mode;
}

/* Runs one cell and records its outcome; a failure stays in the cell. */
static void record(gs_status st, gs_p2p_cell *cell) {
  cell->measured = 1;
  cell->status = st;
  if (st != GS_OK) snprintf(cell->error, sizeof cell->error, "%s", gs_last_error());
  gs_clear_error();
}

static void skip_cell_no_peer(gs_p2p_cell *cell, int a, int b) {
  cell->measured = 0;
  cell->status = GS_ERR_UNSUPPORTED;
  snprintf(cell->error, sizeof cell->error,
           "no peer access between GPU %d and GPU %d (cudaDeviceCanAccessPeer)", a, b);
}

static gs_status run_tests(p2p_ctx *c, gs_p2p_result *r) {
  size_t n = c->n;
  for (size_t ti = 0; ti < TEST_COUNT; ti++) {
    const test_def *t = &registry[ti];
    gs_p2p_test *out = &r->tests[ti];
    if (gs_interrupt_signal() != 0) {
      // A stop request: the tests not begun say why they have no cells.
      out->skipped = 1;
      snprintf(out->reason, sizeof out->reason, "not measured: interrupted by signal %d",
               gs_interrupt_signal());
      continue;
    }
    if (!mode_runs(c->o->mode, t)) {
      out->skipped = 1;
      snprintf(out->reason, sizeof out->reason, "not selected by --mode %s",
               gs_p2p_mode_names[c->o->mode]);
      continue;
    }
    if (c->o->only_test && strcmp(c->o->only_test, t->key) != 0) {
      out->skipped = 1;
      snprintf(out->reason, sizeof out->reason, "not selected: only %s measured",
               c->o->only_test);
      continue;
    }
    uint64_t seq = 0;
    if (t->per_gpu) {
      for (size_t a = 0; a < n && gs_interrupt_signal() == 0; a++)
        record(measure_cell(c, ti, t, a, -1, seq++, &out->cells[a]), &out->cells[a]);
      continue;
    }
    if (n < 2) {
      out->skipped = 1;
      snprintf(out->reason, sizeof out->reason, "needs at least 2 GPUs; %zu present", n);
      continue;
    }
    for (size_t a = 0; a < n && gs_interrupt_signal() == 0; a++) {
      for (size_t b = 0; b < n && gs_interrupt_signal() == 0; b++) {
        gs_p2p_cell *cell = &out->cells[a * n + b];
        int da = c->gpu[a].device, db = c->gpu[b].device;
        if (!gs_p2p_pair_wanted(c->o, da, db)) continue;
        if (t->peer && (!c->can_peer[a * n + b] || !c->can_peer[b * n + a])) {
          skip_cell_no_peer(cell, da, db);
          continue;
        }
        if (t->bidirectional && db < da && gs_p2p_pair_wanted(c->o, db, da)) {
          // The same two directions as (b, a): measured once, shown twice.
          *cell = out->cells[b * n + a];
          double first = cell->direction_median[0];
          cell->direction_median[0] = cell->direction_median[1];
          cell->direction_median[1] = first;
          continue;
        }
        record(measure_cell(c, ti, t, a, (long)b, seq++, cell), cell);
      }
    }
  }
  if (gs_interrupt_signal() != 0)
    return gs_error(GS_ERR_INTERRUPTED, "p2p interrupted by signal %d; the cells measured "
                          "before are kept", gs_interrupt_signal());
  return GS_OK;
}

gs_status gs_p2p_measure(const gs_p2p_options *o, const gs_environment *env,
                         gs_p2p_result *r) {
  memset(r, 0, sizeof *r);
  if (env->gpu_count == 0)
    return gs_error(GS_ERR_UNSUPPORTED,
                    "gpuscale p2p: nothing to measure: %s (the CPU backend has no GPU links)",
                    env->cuda_status[0] ? env->cuda_status : "none found");
  r->n_gpus = env->gpu_count < GS_P2P_MAX_GPUS ? env->gpu_count : GS_P2P_MAX_GPUS;
  for (size_t i = 0; i < r->n_gpus; i++) r->devices[i] = env->gpus[i].index;
  r->n_tests = TEST_COUNT;
  r->tests = calloc(TEST_COUNT, sizeof *r->tests);
  if (!r->tests) return gs_error(GS_ERR_NOMEM, "cannot allocate the p2p tests");
  for (size_t ti = 0; ti < TEST_COUNT; ti++) {
    gs_p2p_test *t = &r->tests[ti];
    t->key = registry[ti].key;
    t->title = registry[ti].title;
    t->unit = registry[ti].unit;
    t->per_gpu = registry[ti].per_gpu;
    size_t cells = t->per_gpu ? r->n_gpus : r->n_gpus * r->n_gpus;
    t->cells = calloc(cells, sizeof *t->cells);
    if (!t->cells) return gs_error(GS_ERR_NOMEM, "cannot allocate the p2p cells");
  }
  p2p_ctx c;
  gs_status st = ctx_setup(&c, o, env);
  // The trace's one measurement: this thread, on the host lane, one span per cell.
  if (st == GS_OK) st = gs_trace_measurement_start(
                           o->trace, 0, "p2p", GS_BACKEND_CUDA,
                           "p2p times its copies itself; one span per cell on the host lane");
  if (st == GS_OK) st = gs_trace_attach(o->trace, 0, 0, -1, NULL);
  if (st == GS_OK) st = run_tests(&c, r);
  gs_trace_abandon(0);
  gs_trace_detach();
  ctx_free(&c);
  return st;
}

void gs_p2p_result_free(gs_p2p_result *r) {
  for (size_t ti = 0; r->tests && ti < r->n_tests; ti++) free(r->tests[ti].cells);
  free(r->tests);
  memset(r, 0, sizeof *r);
}

int gs_p2p_any_failed(const gs_p2p_result *r) {
  for (size_t ti = 0; ti < r->n_tests; ti++) {
    const gs_p2p_test *t = &r->tests[ti];
    size_t cells = t->per_gpu ? r->n_gpus : r->n_gpus * r->n_gpus;
    for (size_t k = 0; k < cells; k++)
      if (t->cells[k].measured && t->cells[k].status != GS_OK) return 1;
  }
  return 0;
}
