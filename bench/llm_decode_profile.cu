/* Where a llm decode step's time goes, per kernel class, on one GPU.
 * Links the model's kernels (src/workloads/llm/llm_cuda.cu, llm_gemv.cu) and times,
 * llama-8b shapes and a context of --pos cached positions, each class of
 * kernel a decode step launches (RMSNorm, each projection's GEMV,
 * attention, the output head) as a CUDA graph of the launches one step
 * makes of it (one per layer, each layer its own weights, so nothing is
 * served from L2), overlapped launches on. Also: the whole step in the
 * engine's order as one graph (every RMSNorm split over the GEMVs around
 * it), the same step with every norm a kernel of its own (the classes'
 * order), and a graph of as many empty launches as a step has, which is
 * the launch floor. Weights are random (the model's
 * hash), never zeros.
 *
 * build: nvcc -O3 -std=c++17 -arch=sm_90 -Isrc bench/llm_decode_profile.cu \
 *          src/workloads/llm/llm_cuda.cu src/workloads/llm/llm_gemv.cu -o llm_decode_profile
 * usage: llm_decode_profile [--rows N]... [--pos P] [--reps R]
 * First checks the tensor-core GEMV against the SIMT one and a split norm
 * against the norm kernel at each row count (exit 1 if they disagree), then prints one table per row count:
 * microseconds per step, per launch, GB/s. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "workloads/llm/llm_cuda.h"
#include "workloads/llm/model.h"

#define CHECK(call)                                                                 \
  do {                                                                              \
    cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                 \
              cudaGetErrorString(e_));                                              \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

enum { HIDDEN = 4096, LAYERS = 32, HEADS = 32, KV_HEADS = 8, FFN = 14336, VOCAB = 128256 };
enum { HEAD_DIM = HIDDEN / HEADS, QKV = (HEADS + 2 * KV_HEADS) * HEAD_DIM, MAX_SEQ = 512 };
enum { MAX_ROWS = GS_LLM_MMA_MAX_ROWS, NORMS = 2 * LAYERS + 1 };

typedef struct {
  uint16_t *norm1, *qkv, *wo, *norm2, *gate_up, *down;
} layer;

typedef struct {
  layer l[LAYERS];
  uint16_t *embed, *final_norm, *lm_head, *k_cache, *v_cache, *x, *att, *act;
  float *h, *qkv_out, *logits, *rope;
  int32_t *tokens;
  uint32_t *slots, *positions;
  uint32_t *dummy; /* advanced by the empty launches */
  float *squares;  /* split norms: sum of h^2 per norm of a step and row */
  gs_llm_cuda_queue q;
  int rows;
} model;

static uint64_t total_weight_bytes;

static uint16_t *random_bf16(uint64_t rows, uint64_t cols, uint32_t tensor, float scale,
                             float offset, gs_llm_cuda_queue q) {
  uint16_t *p = NULL;
  CHECK(cudaMalloc((void **)&p, rows * cols * 2));
  gs_llm_slice s = {};
  s.rows = rows;
  s.cols = cols;
  s.whole_cols = cols;
  s.segments = 1;
  CHECK(gs_llm_cuda_init_weights(p, &s, 7, tensor, scale, offset, q));
  return p;
}

static uint16_t *weight(uint64_t rows, uint64_t cols, uint32_t tensor, gs_llm_cuda_queue q) {
  total_weight_bytes += rows * cols * 2;
  return random_bf16(rows, cols, tensor, 1.0f / sqrtf((float)cols) * 1.7f, 0.0f, q);
}

static void make_model(model *m, cudaStream_t stream) {
  memset(m, 0, sizeof *m);
  m->q.stream = stream;
  m->q.overlap = 1;
  for (int l = 0; l < LAYERS; l++) {
    uint32_t t = 16 + 8 * l;
    m->l[l].norm1 = random_bf16(1, HIDDEN, t, 0.1f, 1.0f, m->q);
    m->l[l].qkv = weight(QKV, HIDDEN, t + 1, m->q);
    m->l[l].wo = weight(HIDDEN, HIDDEN, t + 2, m->q);
    m->l[l].norm2 = random_bf16(1, HIDDEN, t + 3, 0.1f, 1.0f, m->q);
    m->l[l].gate_up = weight(2 * FFN, HIDDEN, t + 4, m->q);
    m->l[l].down = weight(HIDDEN, FFN, t + 5, m->q);
  }
  m->embed = random_bf16(VOCAB, HIDDEN, 0, 1.0f, 0.0f, m->q);
  m->final_norm = random_bf16(1, HIDDEN, 1, 0.1f, 1.0f, m->q);
  m->lm_head = weight(VOCAB, HIDDEN, 2, m->q);
  uint64_t cache = (uint64_t)LAYERS * MAX_ROWS * MAX_SEQ * KV_HEADS * HEAD_DIM;
  m->k_cache = random_bf16(cache / HIDDEN, HIDDEN, 3, 1.0f, 0.0f, m->q);
  m->v_cache = random_bf16(cache / HIDDEN, HIDDEN, 4, 1.0f, 0.0f, m->q);
  m->x = random_bf16(MAX_ROWS, FFN, 5, 1.0f, 0.0f, m->q);
  m->att = random_bf16(MAX_ROWS, HIDDEN, 6, 1.0f, 0.0f, m->q);
  m->act = random_bf16(MAX_ROWS, FFN, 8, 1.0f, 0.0f, m->q);
  CHECK(cudaMalloc((void **)&m->h, MAX_ROWS * HIDDEN * 4));
  CHECK(cudaMalloc((void **)&m->qkv_out, MAX_ROWS * QKV * 4));
  CHECK(cudaMalloc((void **)&m->logits, (size_t)MAX_ROWS * VOCAB * 4));
  CHECK(cudaMalloc((void **)&m->tokens, MAX_ROWS * 4));
  CHECK(cudaMalloc((void **)&m->slots, MAX_ROWS * 4));
  CHECK(cudaMalloc((void **)&m->positions, MAX_ROWS * 4));
  CHECK(cudaMalloc((void **)&m->dummy, 4));
  CHECK(cudaMalloc((void **)&m->squares, NORMS * MAX_ROWS * sizeof(float)));
  float *rope = (float *)malloc((size_t)MAX_SEQ * HEAD_DIM * sizeof(float));
  for (int p = 0; p < MAX_SEQ; p++)
    for (int i = 0; i < HEAD_DIM / 2; i++) {
      double a = p * pow(500000.0, -2.0 * i / HEAD_DIM);
      rope[(p * HEAD_DIM / 2 + i) * 2] = (float)cos(a);
      rope[(p * HEAD_DIM / 2 + i) * 2 + 1] = (float)sin(a);
    }
  CHECK(cudaMalloc((void **)&m->rope, (size_t)MAX_SEQ * HEAD_DIM * sizeof(float)));
  CHECK(cudaMemcpy(m->rope, rope, (size_t)MAX_SEQ * HEAD_DIM * sizeof(float),
                   cudaMemcpyHostToDevice));
  free(rope);
  int32_t tokens[MAX_ROWS];
  uint32_t slots[MAX_ROWS];
  for (int i = 0; i < MAX_ROWS; i++) tokens[i] = 37 * i + 5, slots[i] = (uint32_t)i;
  CHECK(cudaMemcpy(m->tokens, tokens, sizeof tokens, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(m->slots, slots, sizeof slots, cudaMemcpyHostToDevice));
  CHECK(cudaStreamSynchronize(stream));
}

static void set_positions(model *m, uint32_t pos) {
  uint32_t p[MAX_ROWS];
  for (int i = 0; i < MAX_ROWS; i++) p[i] = pos;
  CHECK(cudaMemcpy(m->positions, p, sizeof p, cudaMemcpyHostToDevice));
}

static gs_llm_cuda_attn_shape attn_shape(void) {
  gs_llm_cuda_attn_shape s = {HEADS, KV_HEADS, HEAD_DIM, MAX_SEQ};
  return s;
}

static uint16_t *kc(model *m, int l) {
  return m->k_cache + (uint64_t)l * MAX_ROWS * MAX_SEQ * KV_HEADS * HEAD_DIM;
}
static uint16_t *vc(model *m, int l) {
  return m->v_cache + (uint64_t)l * MAX_ROWS * MAX_SEQ * KV_HEADS * HEAD_DIM;
}

/* The kernel classes of a decode step; each enqueues every launch of its
 * class that one step makes. */
typedef enum {
  C_EMBED,
  C_NORM,
  C_QKV,
  C_ATTN,
  C_WO,
  C_GATE_UP,
  C_DOWN,
  C_HEAD_NORM,
  C_LM_HEAD,
  C_ARGMAX,
  C_STEP,
  C_STEP_NORMS_APART,
  C_EMPTY,
  C_COUNT
} kernel_class;

static const char *class_names[C_COUNT] = {
    "embed", "rmsnorm x64", "qkv gemv x32", "attention x32", "wo gemv x32", "gate/up+swiglu x32",
    "down gemv x32", "final rmsnorm", "lm_head gemv", "argmax+advance", "whole step",
    "step, norms apart", "empty x165"};

/* Norm k of a step split over the GEMVs around it (llm_cuda.h): 0 is
 * layer 0's first, 2l + 1 layer l's second, 2l + 2 the next first or the
 * final one. */
static gs_llm_cuda_norm_in norm_in(model *m, int k) {
  gs_llm_cuda_norm_in n = {m->squares + k * MAX_ROWS, 1e-5f};
  return n;
}

static gs_llm_cuda_norm_out norm_out(model *m, int k, const uint16_t *w) {
  gs_llm_cuda_norm_out n = {w, m->x, m->squares + k * MAX_ROWS};
  return n;
}

static void enqueue(model *m, kernel_class c) {
  gs_llm_cuda_queue q = m->q;
  int r = m->rows;
  switch (c) {
    case C_EMBED:
      CHECK(gs_llm_cuda_embed(m->tokens, m->embed, r, HIDDEN, m->h, q));
      break;
    case C_NORM:
      for (int l = 0; l < LAYERS; l++) {
        CHECK(gs_llm_cuda_rmsnorm(m->h, NULL, m->l[l].norm1, r, HIDDEN, 1e-5f, m->x, q));
        CHECK(gs_llm_cuda_rmsnorm(m->h, NULL, m->l[l].norm2, r, HIDDEN, 1e-5f, m->x, q));
      }
      break;
    case C_QKV:
      for (int l = 0; l < LAYERS; l++)
        CHECK(gs_llm_cuda_gemv_mma(m->l[l].qkv, m->x, m->qkv_out, r, QKV, HIDDEN, 0, q));
      break;
    case C_ATTN:
      for (int l = 0; l < LAYERS; l++)
        CHECK(gs_llm_cuda_attention(m->qkv_out, m->slots, m->positions, m->rope, r, attn_shape(),
                                    kc(m, l), vc(m, l), m->att, q));
      break;
    case C_WO:
      for (int l = 0; l < LAYERS; l++)
        CHECK(gs_llm_cuda_gemv_mma(m->l[l].wo, m->att, m->h, r, HIDDEN, HIDDEN, 1, q));
      break;
    case C_GATE_UP:
      for (int l = 0; l < LAYERS; l++)
        CHECK(gs_llm_cuda_gemv_mma_swiglu(m->l[l].gate_up, m->x, m->act, r, FFN, HIDDEN, q));
      break;
    case C_DOWN:
      for (int l = 0; l < LAYERS; l++)
        CHECK(gs_llm_cuda_gemv_mma(m->l[l].down, m->act, m->h, r, HIDDEN, FFN, 1, q));
      break;
    case C_HEAD_NORM:
      CHECK(gs_llm_cuda_rmsnorm(m->h, NULL, m->final_norm, r, HIDDEN, 1e-5f, m->x, q));
      break;
    case C_LM_HEAD:
      CHECK(gs_llm_cuda_gemv_mma(m->lm_head, m->x, m->logits, r, VOCAB, HIDDEN, 0, q));
      break;
    case C_ARGMAX:
      CHECK(gs_llm_cuda_argmax(m->logits, r, VOCAB, m->tokens, q));
      CHECK(gs_llm_cuda_advance(m->dummy, 1, q));
      break;
    case C_STEP: {
      /* The engine's order (llm_gpu.c enqueue_forward, decode): every
       * RMSNorm split over the GEMVs around it. */
      gs_llm_cuda_norm_out first = norm_out(m, 0, m->l[0].norm1);
      CHECK(gs_llm_cuda_embed_norm(m->tokens, m->embed, r, HIDDEN, m->h, &first, NORMS, MAX_ROWS,
                                   q));
      for (int l = 0; l < LAYERS; l++) {
        gs_llm_cuda_norm_in in1 = norm_in(m, 2 * l), in2 = norm_in(m, 2 * l + 1);
        gs_llm_cuda_norm_out mid = norm_out(m, 2 * l + 1, m->l[l].norm2);
        gs_llm_cuda_norm_out after =
            norm_out(m, 2 * l + 2, l + 1 < LAYERS ? m->l[l + 1].norm1 : m->final_norm);
        CHECK(gs_llm_cuda_gemv_mma_norm(m->l[l].qkv, m->x, m->qkv_out, r, QKV, HIDDEN, 0, &in1,
                                        NULL, q));
        CHECK(gs_llm_cuda_attention(m->qkv_out, m->slots, m->positions, m->rope, r, attn_shape(),
                                    kc(m, l), vc(m, l), m->att, q));
        CHECK(gs_llm_cuda_gemv_mma_norm(m->l[l].wo, m->att, m->h, r, HIDDEN, HIDDEN, 1, NULL, &mid,
                                        q));
        CHECK(gs_llm_cuda_gemv_mma_swiglu_norm(m->l[l].gate_up, m->x, m->act, r, FFN, HIDDEN, &in2,
                                               q));
        CHECK(gs_llm_cuda_gemv_mma_norm(m->l[l].down, m->act, m->h, r, HIDDEN, FFN, 1, NULL,
                                        &after, q));
      }
      gs_llm_cuda_norm_in last = norm_in(m, NORMS - 1);
      CHECK(gs_llm_cuda_gemv_mma_norm(m->lm_head, m->x, m->logits, r, VOCAB, HIDDEN, 0, &last,
                                      NULL, q));
      enqueue(m, C_ARGMAX);
      break;
    }
    case C_STEP_NORMS_APART:
      /* The same with every norm a kernel of its own. */
      enqueue(m, C_EMBED);
      for (int l = 0; l < LAYERS; l++) {
        CHECK(gs_llm_cuda_rmsnorm(m->h, NULL, m->l[l].norm1, r, HIDDEN, 1e-5f, m->x, q));
        CHECK(gs_llm_cuda_gemv_mma(m->l[l].qkv, m->x, m->qkv_out, r, QKV, HIDDEN, 0, q));
        CHECK(gs_llm_cuda_attention(m->qkv_out, m->slots, m->positions, m->rope, r, attn_shape(),
                                    kc(m, l), vc(m, l), m->att, q));
        CHECK(gs_llm_cuda_gemv_mma(m->l[l].wo, m->att, m->h, r, HIDDEN, HIDDEN, 1, q));
        CHECK(gs_llm_cuda_rmsnorm(m->h, NULL, m->l[l].norm2, r, HIDDEN, 1e-5f, m->x, q));
        CHECK(gs_llm_cuda_gemv_mma_swiglu(m->l[l].gate_up, m->x, m->act, r, FFN, HIDDEN, q));
        CHECK(gs_llm_cuda_gemv_mma(m->l[l].down, m->act, m->h, r, HIDDEN, FFN, 1, q));
      }
      enqueue(m, C_HEAD_NORM);
      enqueue(m, C_LM_HEAD);
      enqueue(m, C_ARGMAX);
      break;
    case C_EMPTY:
      /* A one-thread kernel, as many times as a step launches kernels. */
      for (int i = 0; i < 165; i++) CHECK(gs_llm_cuda_advance(m->dummy, 1, q));
      break;
    default:
      break;
  }
}

static uint64_t class_bytes(kernel_class c) {
  switch (c) {
    case C_QKV: return (uint64_t)LAYERS * QKV * HIDDEN * 2;
    case C_WO: return (uint64_t)LAYERS * HIDDEN * HIDDEN * 2;
    case C_GATE_UP: return (uint64_t)LAYERS * 2 * FFN * HIDDEN * 2;
    case C_DOWN: return (uint64_t)LAYERS * HIDDEN * FFN * 2;
    case C_LM_HEAD: return (uint64_t)VOCAB * HIDDEN * 2;
    case C_STEP: case C_STEP_NORMS_APART: return total_weight_bytes;
    default: return 0;
  }
}

static int class_launches(kernel_class c) {
  switch (c) {
    case C_NORM: return 64;
    case C_QKV: case C_ATTN: case C_WO: case C_GATE_UP: case C_DOWN: return 32;
    case C_ARGMAX: return 2;
    case C_STEP: return 1 + 5 * LAYERS + 3;
    case C_STEP_NORMS_APART: return 1 + 7 * LAYERS + 4;
    case C_EMPTY: return 165;
    default: return 1;
  }
}

/* Median microseconds of one replay of the class's graph. */
static double time_class(model *m, kernel_class c, int reps) {
  cudaStream_t s = m->q.stream;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  enqueue(m, c);
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; i++) CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  double *t = (double *)malloc(reps * sizeof *t);
  for (int i = 0; i < reps; i++) {
    CHECK(cudaEventRecord(a, s));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t[i] = ms * 1000.0;
  }
  for (int i = 1; i < reps; i++)
    for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
      double x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  double median = t[reps / 2];
  free(t);
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return median;
}

static double max_rel_diff(const float *a, const float *b, size_t n) {
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < n; i++) {
    diff = fmax(diff, fabs((double)a[i] - b[i]));
    scale = fmax(scale, fabs((double)b[i]));
    if (a[i] != a[i]) return INFINITY;
  }
  return diff / (scale > 0.0 ? scale : 1.0);
}

/* A split norm (down projection as producer, qkv as consumer) at `rows`
 * rows against the down projection, the norm kernel and qkv, from the
 * same residual h0 (rows x HIDDEN floats; m->h is overwritten): max
 * relative difference of the qkv outputs. */
static double check_split_norm(model *m, int rows, const float *h0) {
  gs_llm_cuda_queue q = m->q;
  size_t nh = (size_t)rows * HIDDEN, ny = (size_t)rows * QKV;
  float *ya, *yb;
  CHECK(cudaMalloc((void **)&ya, ny * 4));
  CHECK(cudaMalloc((void **)&yb, ny * 4));
  // On the kernels' stream: a plain cudaMemcpy would not wait for them.
  CHECK(cudaMemcpyAsync(m->h, h0, nh * 4, cudaMemcpyDeviceToDevice, q.stream));
  CHECK(gs_llm_cuda_gemv_mma(m->l[0].down, m->act, m->h, rows, HIDDEN, FFN, 1, q));
  CHECK(gs_llm_cuda_rmsnorm(m->h, NULL, m->l[1].norm1, rows, HIDDEN, 1e-5f, m->x, q));
  CHECK(gs_llm_cuda_gemv_mma(m->l[1].qkv, m->x, yb, rows, QKV, HIDDEN, 0, q));
  CHECK(cudaMemcpyAsync(m->h, h0, nh * 4, cudaMemcpyDeviceToDevice, q.stream));
  CHECK(cudaMemsetAsync(m->squares, 0, NORMS * MAX_ROWS * sizeof(float), q.stream));
  gs_llm_cuda_norm_out out = norm_out(m, 1, m->l[1].norm1);
  gs_llm_cuda_norm_in in = norm_in(m, 1);
  CHECK(gs_llm_cuda_gemv_mma_norm(m->l[0].down, m->act, m->h, rows, HIDDEN, FFN, 1, NULL, &out, q));
  CHECK(gs_llm_cuda_gemv_mma_norm(m->l[1].qkv, m->x, ya, rows, QKV, HIDDEN, 0, &in, NULL, q));
  CHECK(cudaStreamSynchronize(q.stream));
  float *ha = (float *)malloc(ny * 4), *hb = (float *)malloc(ny * 4);
  CHECK(cudaMemcpy(ha, ya, ny * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hb, yb, ny * 4, cudaMemcpyDeviceToHost));
  double d = max_rel_diff(ha, hb, ny);
  free(ha), free(hb);
  CHECK(cudaFree(ya));
  CHECK(cudaFree(yb));
  return d;
}

/* The tensor-core GEMV (plain and SwiGLU) at `rows` rows against the SIMT
 * GEMV run on 8 rows at a time, and a split norm against the norm kernel
 * (check_split_norm); returns whether all agree within 1e-2. */
static int check_gemv(model *m, int rows) {
  gs_llm_cuda_queue q = m->q;
  size_t ny = (size_t)rows * QKV, na = (size_t)rows * FFN;
  float *ya, *yb, *gu;
  uint16_t *act;
  CHECK(cudaMalloc((void **)&ya, ny * 4));
  CHECK(cudaMalloc((void **)&yb, ny * 4));
  CHECK(cudaMalloc((void **)&gu, (size_t)rows * 2 * FFN * 4));
  CHECK(cudaMalloc((void **)&act, na * 2));
  CHECK(gs_llm_cuda_gemv_mma(m->l[0].qkv, m->x, ya, rows, QKV, HIDDEN, 0, q));
  CHECK(gs_llm_cuda_gemv_mma_swiglu(m->l[0].gate_up, m->x, m->act, rows, FFN, HIDDEN, q));
  for (int r0 = 0; r0 < rows; r0 += 8) {
    int n = rows - r0 < 8 ? rows - r0 : 8;
    const uint16_t *x = m->x + (size_t)r0 * HIDDEN;
    CHECK(gs_llm_cuda_gemv(m->l[0].qkv, x, yb + (size_t)r0 * QKV, n, QKV, HIDDEN, 0, q));
    CHECK(gs_llm_cuda_gemv(m->l[0].gate_up, x, gu + (size_t)r0 * 2 * FFN, n, 2 * FFN, HIDDEN, 0,
                           q));
  }
  CHECK(gs_llm_cuda_swiglu(gu, rows, FFN, act, q));
  CHECK(cudaStreamSynchronize(q.stream));
  float *ha = (float *)malloc(ny * 4), *hb = (float *)malloc(ny * 4);
  CHECK(cudaMemcpy(ha, ya, ny * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hb, yb, ny * 4, cudaMemcpyDeviceToHost));
  double gemv = max_rel_diff(ha, hb, ny);
  uint16_t *aa = (uint16_t *)malloc(na * 2), *ab = (uint16_t *)malloc(na * 2);
  float *fa = (float *)malloc(na * 4), *fb = (float *)malloc(na * 4);
  CHECK(cudaMemcpy(aa, m->act, na * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(ab, act, na * 2, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < na; i++) fa[i] = gs_llm_float_from_bf16(aa[i]), fb[i] = gs_llm_float_from_bf16(ab[i]);
  double swiglu = max_rel_diff(fa, fb, na);
  double split = check_split_norm(m, rows, ya);
  printf("check rows %2d: tensor-core vs SIMT GEMV max |diff| / max |ref| %.2e (qkv), %.2e "
         "(gate/up + SwiGLU); split norm vs norm kernel %.2e (qkv after down)\n", rows, gemv,
         swiglu, split);
  free(ha), free(hb), free(aa), free(ab), free(fa), free(fb);
  CHECK(cudaFree(ya));
  CHECK(cudaFree(yb));
  CHECK(cudaFree(gu));
  CHECK(cudaFree(act));
  return gemv <= 1e-2 && swiglu <= 1e-2 && split <= 1e-2;
}

int main(int argc, char **argv) {
  int rows[8], n_rows = 0, pos = 83, reps = 50;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rows") && i + 1 < argc && n_rows < 8) rows[n_rows++] = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--pos") && i + 1 < argc) pos = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--rows N]... [--pos P] [--reps R]\n", argv[0]);
      return 2;
    }
  }
  if (!n_rows) rows[n_rows++] = 1, rows[n_rows++] = 8;
  if (pos < 1 || pos >= MAX_SEQ) {
    fprintf(stderr, "--pos must be in 1..%d\n", MAX_SEQ - 1);
    return 2;
  }
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  static model m;
  make_model(&m, stream);
  printf("%s, %d SMs; llama-8b shapes, context %d positions, median of %d graph replays\n",
         prop.name, prop.multiProcessorCount, pos, reps);
  int agree = 1;
  for (int ri = 0; ri < n_rows; ri++)
    if (rows[ri] >= 1 && rows[ri] <= GS_LLM_MMA_MAX_ROWS) agree &= check_gemv(&m, rows[ri]);
  for (int ri = 0; ri < n_rows; ri++) {
    m.rows = rows[ri];
    if (m.rows < 1 || m.rows > GS_LLM_MMA_MAX_ROWS) {
      fprintf(stderr, "--rows must be in 1..%d\n", GS_LLM_MMA_MAX_ROWS);
      return 2;
    }
    printf("\nrows %d\n%-20s %10s %8s %12s %8s\n", m.rows, "class", "us/step", "launches",
           "us/launch", "GB/s");
    double sum = 0.0;
    for (int c = 0; c < C_COUNT; c++) {
      set_positions(&m, (uint32_t)pos);
      double us = time_class(&m, (kernel_class)c, reps);
      if (c < C_STEP) sum += us;
      uint64_t bytes = class_bytes((kernel_class)c);
      printf("%-20s %10.1f %8d %12.2f", class_names[c], us, class_launches((kernel_class)c),
             us / class_launches((kernel_class)c));
      if (bytes) printf(" %8.0f", bytes / us / 1e3);
      printf("\n");
      if (c == C_ARGMAX) printf("%-20s %10.1f\n", "sum (norms apart)", sum);
    }
  }
  CHECK(cudaDeviceSynchronize());
  if (!agree) fprintf(stderr, "the tensor-core GEMV disagrees with the SIMT one\n");
  return agree ? 0 : 1;
}
