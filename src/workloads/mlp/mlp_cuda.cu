/* CUDA side of mlp: kernels first (dataset, fused bias + ReLU + dropout,
 * loss, activation gradient, Adam), then the cuBLAS GEMMs and the
 * launchers declared in mlp_cuda.h. Activations are of type T (float, or
 * __nv_bfloat16 in bf16 mode); GEMM outputs, gradients and the optimizer
 * state are float. Layouts: docs/workloads/mlp.md. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

extern "C" {
#include "core/check.h"
#include "workloads/mlp/mlp.h"
}
#include "workloads/mlp/mlp_cuda.h"
#include "workloads/mlp/mlp_hash.h"

#define GS_MLP_THREADS 256
#define GS_MLP_CUBLAS_WORKSPACE (32u << 20)

/* ---- kernels ---------------------------------------------------------------- */

namespace {  // the element conversions are this file's own

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

}  // namespace

/* One thread per dataset value: features then targets of each sample. */
__global__ void gs_mlp_generate_kernel(uint64_t seed, uint64_t n, uint32_t F, uint32_t T, float *x,
                                       float *y) {
  const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const uint64_t per = (uint64_t)F + T;
  if (i >= n * per) return;
  const uint64_t s = i / per;
  const uint32_t c = (uint32_t)(i % per);
  if (c < F)
    x[s * F + c] = gs_mlp_feature(seed, s, c, F);
  else
    y[s * T + (c - F)] = gs_mlp_target(seed, s, c - F, F);
}

/* The batch's input rows, converted to T: row r is dataset sample
 * (steps * G + offset + r) mod n. */
template <typename T>
__global__ void gs_mlp_gather_kernel(const float *x, uint64_t n, uint32_t F, const uint64_t *steps,
                                     uint64_t G, uint64_t offset, uint64_t rows, T *act0) {
  const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * F) return;
  const uint64_t r = i / F, f = i % F;
  const uint64_t sample = (*steps * G + offset + r) % n;
  act0[i] = from_float<T>(x[sample * F + f]);
}

/* Elementwise kernels take four consecutive columns of a row per thread
 * (a quad): 16-byte loads of float and 8-byte loads of bf16 when every
 * row starts aligned (VEC: the width is a multiple of 4 and the pointers
 * are aligned), element by element otherwise. */
#define GS_MLP_QUAD 4u

template <bool VEC>
__device__ __forceinline__ void load_quad(const float *p, uint32_t n, float v[GS_MLP_QUAD]) {
  if (VEC) {
    const float4 q = *reinterpret_cast<const float4 *>(p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
  } else {
    for (uint32_t j = 0; j < GS_MLP_QUAD; j++) v[j] = j < n ? p[j] : 0.0f;
  }
}

template <bool VEC>
__device__ __forceinline__ void load_quad(const __nv_bfloat16 *p, uint32_t n,
                                          float v[GS_MLP_QUAD]) {
  if (VEC) {
    const uint2 q = *reinterpret_cast<const uint2 *>(p);
    const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&q.x));
    const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&q.y));
    v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
  } else {
    for (uint32_t j = 0; j < GS_MLP_QUAD; j++) v[j] = j < n ? __bfloat162float(p[j]) : 0.0f;
  }
}

template <bool VEC>
__device__ __forceinline__ void store_quad(float *p, uint32_t n, const float v[GS_MLP_QUAD]) {
  if (VEC)
    *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
  else
    for (uint32_t j = 0; j < n; j++) p[j] = v[j];
}

template <bool VEC>
__device__ __forceinline__ void store_quad(__nv_bfloat16 *p, uint32_t n,
                                           const float v[GS_MLP_QUAD]) {
  if (VEC) {
    const __nv_bfloat162 a = __floats2bfloat162_rn(v[0], v[1]), b = __floats2bfloat162_rn(v[2], v[3]);
    uint2 q;
    q.x = *reinterpret_cast<const uint32_t *>(&a);
    q.y = *reinterpret_cast<const uint32_t *>(&b);
    *reinterpret_cast<uint2 *>(p) = q;
  } else {
    for (uint32_t j = 0; j < n; j++) p[j] = __float2bfloat16_rn(v[j]);
  }
}

/* Hidden layer output: act = dropout(relu(z + bias)), z [rows][out]. A
 * block is 32 quads x 8 row lanes; each lane walks rows with the grid's
 * stride. The dropout hash of a row is mixed once per row, its columns
 * once per element (gs_mlp_keep_in_row), the same bits as gs_mlp_keep. */
template <typename T, bool VEC>
__global__ void gs_mlp_bias_relu_dropout_kernel(const float *__restrict__ z,
                                                const float *__restrict__ bias, uint64_t rows,
                                                uint32_t out, const uint64_t *steps, uint64_t G,
                                                uint64_t offset, uint64_t seed, uint32_t layer,
                                                float dropout, T *__restrict__ act) {
  const uint32_t c0 = GS_MLP_QUAD * (blockIdx.x * blockDim.x + threadIdx.x);
  if (c0 >= out) return;
  const uint32_t n = min(GS_MLP_QUAD, out - c0);
  float b[GS_MLP_QUAD];
  for (uint32_t j = 0; j < GS_MLP_QUAD; j++) b[j] = j < n ? bias[c0 + j] : 0.0f;
  const uint64_t step = *steps;
  const float scale = dropout > 0.0f ? 1.0f / (1.0f - dropout) : 1.0f;
  for (uint64_t r = (uint64_t)blockIdx.y * blockDim.y + threadIdx.y; r < rows;
       r += (uint64_t)gridDim.y * blockDim.y) {
    const uint64_t i = r * out + c0;
    float v[GS_MLP_QUAD];
    load_quad<VEC>(z + i, n, v);
    const uint64_t row = dropout > 0.0f ? gs_mlp_keep_row(seed, step, layer, step * G + offset + r) : 0;
#pragma unroll
    for (uint32_t j = 0; j < GS_MLP_QUAD; j++) {
      float x = v[j] + b[j];
      x = x > 0.0f ? x : 0.0f;
      if (dropout > 0.0f) x = gs_mlp_keep_in_row(row, c0 + j, dropout) ? x * scale : 0.0f;
      v[j] = x;
    }
    store_quad<VEC>(act + i, n, v);
  }
}

/* Column tiles for the kernels that also sum a gradient over the batch
 * rows (the bias gradient): a block is 32 columns x 8 row lanes, each lane
 * walks rows with the grid's stride, partial sums meet in shared memory and
 * one atomicAdd per column and block lands in db (zeroed before). */
#define GS_MLP_TILE_COLS 32
#define GS_MLP_TILE_ROWS 8

__device__ __forceinline__ void add_column_sums(float sum, uint32_t c, uint32_t cols, float *db) {
  __shared__ float part[GS_MLP_TILE_ROWS][GS_MLP_TILE_COLS + 1];
  part[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float total = 0.0f;
    for (int k = 0; k < GS_MLP_TILE_ROWS; k++) total += part[k][threadIdx.x];
    if (total != 0.0f) atomicAdd(&db[c], total);
  }
}

/* Output layer and MSE: y = z + bias, dz = 2 (y - t) / (G * T), the bias
 * gradient (column sums of dz) into db, and this batch's share of the loss
 * added to *loss. */
template <typename T>
__global__ void gs_mlp_loss_kernel(const float *z, const float *bias, const float *targets,
                                   uint64_t n, uint32_t Tn, const uint64_t *steps, uint64_t G,
                                   uint64_t offset, uint64_t rows, T *dz, float *db, float *loss) {
  const uint32_t c = blockIdx.x * GS_MLP_TILE_COLS + threadIdx.x;
  const float norm = 1.0f / ((float)G * (float)Tn);
  const uint64_t base = *steps * G + offset;
  float sum = 0.0f, part = 0.0f;
  if (c < Tn) {
    for (uint64_t r = (uint64_t)blockIdx.y * GS_MLP_TILE_ROWS + threadIdx.y; r < rows;
         r += (uint64_t)gridDim.y * GS_MLP_TILE_ROWS) {
      const uint64_t i = r * Tn + c, sample = (base + r) % n;
      const float diff = z[i] + bias[c] - targets[sample * Tn + c];
      const T g = from_float<T>(2.0f * diff * norm);
      dz[i] = g;
      sum += to_float(g);
      part += diff * diff * norm;
    }
  }
  add_column_sums(sum, c, Tn, db);
  for (int d = 16; d > 0; d >>= 1) part += __shfl_down_sync(0xffffffffu, part, d);
  if (threadIdx.x == 0 && part != 0.0f) atomicAdd(loss, part);
}

/* Column sums of a block's quads (32 x 4 columns, 8 row lanes) meet in
 * shared memory; one atomicAdd per column and block lands in db. */
__device__ __forceinline__ void add_quad_sums(const float sum[GS_MLP_QUAD], uint32_t cols,
                                              float *db) {
  __shared__ float part[GS_MLP_TILE_ROWS][GS_MLP_TILE_COLS * GS_MLP_QUAD + 1];
  for (uint32_t j = 0; j < GS_MLP_QUAD; j++) part[threadIdx.y][GS_MLP_QUAD * threadIdx.x + j] = sum[j];
  __syncthreads();
  const uint32_t t = threadIdx.y * GS_MLP_TILE_COLS + threadIdx.x;
  const uint32_t c = blockIdx.x * GS_MLP_TILE_COLS * GS_MLP_QUAD + t;
  if (t < GS_MLP_TILE_COLS * GS_MLP_QUAD && c < cols) {
    float total = 0.0f;
    for (int k = 0; k < GS_MLP_TILE_ROWS; k++) total += part[k][t];
    if (total != 0.0f) atomicAdd(&db[c], total);
  }
}

/* Gradient through the previous hidden layer's ReLU and dropout, da
 * [rows][cols] -> dz: that layer's output act is > 0 exactly where both let
 * the value through (scaled by 1 / (1 - p)). Its bias gradient (column sums
 * of dz, as rounded to T) goes to db. Blocks of quads as the forward's. */
template <typename T, bool VEC>
__global__ void gs_mlp_relu_dropout_grad_kernel(const float *__restrict__ da,
                                                const T *__restrict__ act, uint64_t rows,
                                                uint32_t cols, float scale, T *__restrict__ dz,
                                                float *db) {
  const uint32_t c0 = GS_MLP_QUAD * (blockIdx.x * GS_MLP_TILE_COLS + threadIdx.x);
  const uint32_t n = c0 < cols ? min(GS_MLP_QUAD, cols - c0) : 0;
  float sum[GS_MLP_QUAD] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (n > 0) {
    for (uint64_t r = (uint64_t)blockIdx.y * GS_MLP_TILE_ROWS + threadIdx.y; r < rows;
         r += (uint64_t)gridDim.y * GS_MLP_TILE_ROWS) {
      const uint64_t i = r * cols + c0;
      float d[GS_MLP_QUAD], a[GS_MLP_QUAD];
      load_quad<VEC>(da + i, n, d);
      load_quad<VEC>(act + i, n, a);
#pragma unroll
      for (uint32_t j = 0; j < GS_MLP_QUAD; j++) {
        d[j] = to_float(from_float<T>(a[j] > 0.0f ? d[j] * scale : 0.0f));
        sum[j] += d[j];
      }
      store_quad<VEC>(dz + i, n, d);
    }
  }
  add_quad_sums(sum, cols, db);
}

/* Adam update t = steps + 1 over all parameters; also refreshes the bf16
 * copy of the weights when there is one. */
__global__ void gs_mlp_adam_kernel(float *params, float *mom1, float *mom2, const float *grads,
                                   uint64_t count, const uint64_t *steps, float lr, float beta1,
                                   float beta2, float eps, __nv_bfloat16 *low) {
  const float t = (float)(*steps + 1);
  const float c1 = 1.0f - powf(beta1, t), c2 = 1.0f - powf(beta2, t);
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += (uint64_t)gridDim.x * blockDim.x) {
    const float g = grads[i];
    const float m = beta1 * mom1[i] + (1.0f - beta1) * g;
    const float v = beta2 * mom2[i] + (1.0f - beta2) * g * g;
    mom1[i] = m;
    mom2[i] = v;
    const float w = params[i] - lr * (m / c1) / (sqrtf(v / c2) + eps);
    params[i] = w;
    if (low) low[i] = __float2bfloat16_rn(w);
  }
}

__global__ void gs_mlp_advance_step_kernel(uint64_t *steps) { *steps += 1; }

__global__ void gs_mlp_to_bf16_kernel(const float *in, uint64_t count, __nv_bfloat16 *out) {
  const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = __float2bfloat16_rn(in[i]);
}

/* ---- the rank's model ------------------------------------------------------------ */

struct gs_mlp_cuda {
  gs_mlp_cuda_config c;
  cudaStream_t stream;
  cublasHandle_t blas;
  void *blas_workspace;
  int bf16;
  size_t elem;                          /* bytes of T */
  uint64_t count;                       /* parameters */
  float *params, *mom1, *mom2, *grads;  /* count each */
  __nv_bfloat16 *low;                   /* bf16 copy of params (bf16 mode) */
  float *x, *y;                         /* dataset */
  void *act[GS_MLP_MAX_LAYERS + 1];     /* T [rows][widths[l]]; act[L] unused */
  float *z;                             /* [rows][widest] GEMM output */
  void *dz, *dz_prev;                   /* T [rows][widest] */
  int sm_count;
  float *loss;
  uint64_t *steps;
  uint64_t bytes;
  /* The batch of the last forward, for the backward kernels. */
  uint64_t G, offset;
};

static gs_status device_alloc(gs_mlp_cuda *g, void **ptr, uint64_t bytes) {
  GS_CHECK_CUDA(cudaMalloc(ptr, (size_t)(bytes ? bytes : 1)));
  g->bytes += bytes;
  return GS_OK;
}

static unsigned blocks_for(uint64_t n) {
  return (unsigned)((n + GS_MLP_THREADS - 1) / GS_MLP_THREADS);
}

/* Grid of the tiled kernels for rows x cols with `tile_cols` columns a
 * block: every column tile, and enough row lanes for about `per_sm` blocks
 * per multiprocessor. */
static dim3 tile_grid(int sm_count, uint64_t rows, uint32_t cols, uint32_t tile_cols,
                      unsigned per_sm) {
  const uint64_t x = (cols + tile_cols - 1) / tile_cols;
  uint64_t y = (rows + GS_MLP_TILE_ROWS - 1) / GS_MLP_TILE_ROWS;
  const uint64_t want = (uint64_t)per_sm * (uint64_t)sm_count / x + 1;
  if (y > want) y = want;
  if (y > 65535) y = 65535;
  return dim3((unsigned)x, (unsigned)y);
}

/* The column-sum kernels: 32 columns a block, about 4 blocks per SM. */
static dim3 column_grid(int sm_count, uint64_t rows, uint32_t cols) {
  return tile_grid(sm_count, rows, cols, GS_MLP_TILE_COLS, 4);
}

static bool aligned(const void *p, size_t bytes) { return (uintptr_t)p % bytes == 0; }

/* The quad kernels: 32 quads a block, about 8 blocks per SM (a full
 * multiprocessor of 256-thread blocks, for loads in flight); vector loads
 * where every quad is aligned. */
template <typename T>
static void launch_bias_act(int sm_count, cudaStream_t stream, const float *z, const float *bias,
                            uint64_t rows, uint32_t out, const uint64_t *steps, uint64_t G,
                            uint64_t offset, uint64_t seed, uint32_t layer, float dropout, T *act) {
  const dim3 grid = tile_grid(sm_count, rows, out, GS_MLP_TILE_COLS * GS_MLP_QUAD, 8);
  const dim3 block(GS_MLP_TILE_COLS, GS_MLP_TILE_ROWS);
  if (out % GS_MLP_QUAD == 0 && aligned(z, 16) && aligned(act, GS_MLP_QUAD * sizeof(T)))
    gs_mlp_bias_relu_dropout_kernel<T, true><<<grid, block, 0, stream>>>(
        z, bias, rows, out, steps, G, offset, seed, layer, dropout, act);
  else
    gs_mlp_bias_relu_dropout_kernel<T, false><<<grid, block, 0, stream>>>(
        z, bias, rows, out, steps, G, offset, seed, layer, dropout, act);
}

template <typename T>
static void launch_act_grad(int sm_count, cudaStream_t stream, const float *da, const T *act,
                            uint64_t rows, uint32_t cols, float scale, T *dz, float *db) {
  const dim3 grid = tile_grid(sm_count, rows, cols, GS_MLP_TILE_COLS * GS_MLP_QUAD, 8);
  const dim3 block(GS_MLP_TILE_COLS, GS_MLP_TILE_ROWS);
  if (cols % GS_MLP_QUAD == 0 && aligned(da, 16) && aligned(act, GS_MLP_QUAD * sizeof(T)) &&
      aligned(dz, GS_MLP_QUAD * sizeof(T)))
    gs_mlp_relu_dropout_grad_kernel<T, true><<<grid, block, 0, stream>>>(da, act, rows, cols,
                                                                         scale, dz, db);
  else
    gs_mlp_relu_dropout_grad_kernel<T, false><<<grid, block, 0, stream>>>(da, act, rows, cols,
                                                                          scale, dz, db);
}

extern "C" void gs_mlp_cuda_destroy(gs_mlp_cuda *g) {
  if (!g) return;
  if (g->blas) cublasDestroy(g->blas);
  void *ptrs[] = {g->blas_workspace, g->params, g->mom1, g->mom2, g->grads, g->low, g->x, g->y,
                  g->z, g->dz, g->dz_prev, g->loss, g->steps};
  for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
    if (ptrs[i]) cudaFree(ptrs[i]);
  for (int l = 0; l <= GS_MLP_MAX_LAYERS; l++)
    if (g->act[l]) cudaFree(g->act[l]);
  free(g);
}

static gs_status create_buffers(gs_mlp_cuda *g) {
  const gs_mlp_model *m = &g->c.model;
  const uint64_t rows = g->c.rows, L = (uint64_t)m->n_layers;
  uint64_t widest = 0;
  for (uint64_t l = 0; l <= L; l++)
    if (m->widths[l] > widest) widest = m->widths[l];
  const uint64_t pbytes = g->count * sizeof(float);
  GS_TRY(device_alloc(g, (void **)&g->params, pbytes));
  GS_TRY(device_alloc(g, (void **)&g->mom1, pbytes));
  GS_TRY(device_alloc(g, (void **)&g->mom2, pbytes));
  GS_TRY(device_alloc(g, (void **)&g->grads, pbytes));
  if (g->bf16) GS_TRY(device_alloc(g, (void **)&g->low, g->count * sizeof(__nv_bfloat16)));
  GS_TRY(device_alloc(g, (void **)&g->x, g->c.data_n * m->widths[0] * sizeof(float)));
  GS_TRY(device_alloc(g, (void **)&g->y, g->c.data_n * m->widths[L] * sizeof(float)));
  for (uint64_t l = 0; l < L; l++) GS_TRY(device_alloc(g, &g->act[l], rows * m->widths[l] * g->elem));
  GS_TRY(device_alloc(g, (void **)&g->z, rows * widest * sizeof(float)));
  GS_TRY(device_alloc(g, &g->dz, rows * widest * g->elem));
  GS_TRY(device_alloc(g, &g->dz_prev, rows * widest * g->elem));
  GS_TRY(device_alloc(g, (void **)&g->loss, sizeof(float)));
  GS_TRY(device_alloc(g, (void **)&g->steps, sizeof(uint64_t)));
  GS_TRY(device_alloc(g, &g->blas_workspace, GS_MLP_CUBLAS_WORKSPACE));
  GS_CHECK_CUDA(cudaMemset(g->params, 0, (size_t)pbytes));
  GS_CHECK_CUDA(cudaMemset(g->mom1, 0, (size_t)pbytes));
  GS_CHECK_CUDA(cudaMemset(g->mom2, 0, (size_t)pbytes));
  GS_CHECK_CUDA(cudaMemset(g->grads, 0, (size_t)pbytes));
  GS_CHECK_CUDA(cudaMemset(g->steps, 0, sizeof(uint64_t)));
  GS_CHECK_CUDA(cudaMemset(g->loss, 0, sizeof(float)));
  if (g->c.host_x) {
    GS_CHECK_CUDA(cudaMemcpy(g->x, g->c.host_x, (size_t)(g->c.data_n * m->widths[0] * sizeof(float)),
                             cudaMemcpyHostToDevice));
    GS_CHECK_CUDA(cudaMemcpy(g->y, g->c.host_y, (size_t)(g->c.data_n * m->widths[L] * sizeof(float)),
                             cudaMemcpyHostToDevice));
  } else {
    const uint64_t values = g->c.data_n * ((uint64_t)m->widths[0] + m->widths[L]);
    gs_mlp_generate_kernel<<<blocks_for(values), GS_MLP_THREADS, 0, g->stream>>>(
        g->c.data_seed, g->c.data_n, m->widths[0], m->widths[L], g->x, g->y);
    GS_CHECK_CUDA(cudaGetLastError());
  }
  GS_CHECK_CUDA(cudaStreamSynchronize(g->stream));
  return GS_OK;
}

/* The cuBLAS handle on the rank's stream, with its workspace and math mode. */
static gs_status configure_blas(gs_mlp_cuda *g, cudaStream_t stream) {
  GS_CHECK_CUBLAS(cublasSetStream(g->blas, stream));
  // A fixed workspace lets the GEMMs be captured into a CUDA graph.
  GS_CHECK_CUBLAS(cublasSetWorkspace(g->blas, g->blas_workspace, GS_MLP_CUBLAS_WORKSPACE));
  GS_CHECK_CUBLAS(cublasSetMathMode(
      g->blas, g->c.precision == GS_MLP_TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  return GS_OK;
}

extern "C" gs_status gs_mlp_cuda_create(const gs_mlp_cuda_config *config, cudaStream_t stream,
                                        gs_mlp_cuda **out) {
  *out = NULL;
  gs_mlp_cuda *g = (gs_mlp_cuda *)calloc(1, sizeof *g);
  if (!g) return gs_error(GS_ERR_NOMEM, "mlp: cannot allocate the CUDA state");
  g->c = *config;
  g->stream = stream;
  g->bf16 = config->precision == GS_MLP_BF16;
  g->elem = g->bf16 ? sizeof(__nv_bfloat16) : sizeof(float);
  g->count = gs_mlp_param_count(&config->model);
  gs_status st = GS_OK;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&g->sm_count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    st = gs_error(GS_ERR_CUDA, "mlp: cannot read the multiprocessor count of the current device");
  cublasStatus_t rc = st == GS_OK ? cublasCreate(&g->blas) : CUBLAS_STATUS_NOT_INITIALIZED;
  if (st == GS_OK && rc != CUBLAS_STATUS_SUCCESS) {
    g->blas = NULL;
    st = gs_error(GS_ERR_CUDA, "mlp: cublasCreate failed: %s", cublasGetStatusString(rc));
  }
  if (st == GS_OK) st = create_buffers(g);
  if (st == GS_OK) st = configure_blas(g, stream);
  if (st != GS_OK) {
    gs_mlp_cuda_destroy(g);
    return st;
  }
  *out = g;
  return GS_OK;
}

extern "C" float *gs_mlp_cuda_grads(gs_mlp_cuda *g) { return g->grads; }
extern "C" float *gs_mlp_cuda_params(gs_mlp_cuda *g) { return g->params; }
extern "C" uint64_t gs_mlp_cuda_device_bytes(const gs_mlp_cuda *g) { return g->bytes; }

extern "C" gs_status gs_mlp_cuda_set_state(gs_mlp_cuda *g, const float *params, const float *mom1,
                                           const float *mom2, uint64_t steps) {
  const size_t bytes = (size_t)(g->count * sizeof(float));
  GS_CHECK_CUDA(cudaStreamSynchronize(g->stream));
  GS_CHECK_CUDA(cudaMemcpy(g->params, params, bytes, cudaMemcpyHostToDevice));
  if (mom1)
    GS_CHECK_CUDA(cudaMemcpy(g->mom1, mom1, bytes, cudaMemcpyHostToDevice));
  else
    GS_CHECK_CUDA(cudaMemset(g->mom1, 0, bytes));
  if (mom2)
    GS_CHECK_CUDA(cudaMemcpy(g->mom2, mom2, bytes, cudaMemcpyHostToDevice));
  else
    GS_CHECK_CUDA(cudaMemset(g->mom2, 0, bytes));
  GS_CHECK_CUDA(cudaMemcpy(g->steps, &steps, sizeof steps, cudaMemcpyHostToDevice));
  if (g->low) {
    gs_mlp_to_bf16_kernel<<<blocks_for(g->count), GS_MLP_THREADS, 0, g->stream>>>(g->params,
                                                                                  g->count, g->low);
    GS_CHECK_CUDA(cudaGetLastError());
    GS_CHECK_CUDA(cudaStreamSynchronize(g->stream));
  }
  return GS_OK;
}

extern "C" gs_status gs_mlp_cuda_get_state(gs_mlp_cuda *g, float *params, float *mom1, float *mom2,
                                           float *grads, uint64_t *steps, double *loss) {
  const size_t bytes = (size_t)(g->count * sizeof(float));
  GS_CHECK_CUDA(cudaStreamSynchronize(g->stream));
  if (params) GS_CHECK_CUDA(cudaMemcpy(params, g->params, bytes, cudaMemcpyDeviceToHost));
  if (mom1) GS_CHECK_CUDA(cudaMemcpy(mom1, g->mom1, bytes, cudaMemcpyDeviceToHost));
  if (mom2) GS_CHECK_CUDA(cudaMemcpy(mom2, g->mom2, bytes, cudaMemcpyDeviceToHost));
  if (grads) GS_CHECK_CUDA(cudaMemcpy(grads, g->grads, bytes, cudaMemcpyDeviceToHost));
  if (steps) GS_CHECK_CUDA(cudaMemcpy(steps, g->steps, sizeof *steps, cudaMemcpyDeviceToHost));
  if (loss) {
    float v = 0.0f;
    GS_CHECK_CUDA(cudaMemcpy(&v, g->loss, sizeof v, cudaMemcpyDeviceToHost));
    *loss = v;
  }
  return GS_OK;
}

extern "C" gs_status gs_mlp_cuda_get_data(gs_mlp_cuda *g, float *x, float *y) {
  const gs_mlp_model *m = &g->c.model;
  GS_CHECK_CUDA(cudaStreamSynchronize(g->stream));
  GS_CHECK_CUDA(cudaMemcpy(x, g->x, (size_t)(g->c.data_n * m->widths[0] * sizeof(float)),
                           cudaMemcpyDeviceToHost));
  GS_CHECK_CUDA(cudaMemcpy(y, g->y, (size_t)(g->c.data_n * m->widths[m->n_layers] * sizeof(float)),
                           cudaMemcpyDeviceToHost));
  return GS_OK;
}

extern "C" gs_status gs_mlp_cuda_generate(uint64_t seed, uint64_t n, uint32_t features,
                                          uint32_t targets, float *x, float *y) {
  const size_t xb = (size_t)(n * features) * sizeof(float), yb = (size_t)(n * targets) * sizeof(float);
  float *dx = NULL, *dy = NULL;
  cudaError_t rc = cudaMalloc((void **)&dx, xb ? xb : 1);
  if (rc == cudaSuccess) rc = cudaMalloc((void **)&dy, yb ? yb : 1);
  if (rc == cudaSuccess && n > 0) {
    gs_mlp_generate_kernel<<<blocks_for(n * ((uint64_t)features + targets)), GS_MLP_THREADS>>>(
        seed, n, features, targets, dx, dy);
    rc = cudaGetLastError();
  }
  if (rc == cudaSuccess) rc = cudaMemcpy(x, dx, xb, cudaMemcpyDeviceToHost);
  if (rc == cudaSuccess) rc = cudaMemcpy(y, dy, yb, cudaMemcpyDeviceToHost);
  if (dx) cudaFree(dx);
  if (dy) cudaFree(dy);
  if (rc != cudaSuccess)
    return gs_error(GS_ERR_CUDA, "mlp: generating the dataset of %llu samples on the device: %s",
                    (unsigned long long)n, cudaGetErrorString(rc));
  return GS_OK;
}

/* ---- GEMMs (column-major cuBLAS on row-major arrays) ------------------------------ */

static cudaDataType_t act_type(const gs_mlp_cuda *g) { return g->bf16 ? CUDA_R_16BF : CUDA_R_32F; }

static cublasComputeType_t compute_type(const gs_mlp_cuda *g) {
  return g->c.precision == GS_MLP_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

/* Layer l's weights as GEMM input: the fp32 master or the bf16 copy. */
static const void *weights(const gs_mlp_cuda *g, int l) {
  const uint64_t off = gs_mlp_weight_offset(&g->c.model, l);
  return g->bf16 ? (const void *)(g->low + off) : (const void *)(g->params + off);
}

/* C (m x n, fp32, ldc) = op(A) op(B) with A, B of the activation type. */
static gs_status gemm(gs_mlp_cuda *g, cublasOperation_t ta, cublasOperation_t tb, uint64_t m,
                      uint64_t n, uint64_t k, const void *A, uint64_t lda, const void *B,
                      uint64_t ldb, float *C, uint64_t ldc) {
  const float one = 1.0f, zero = 0.0f;
  GS_CHECK_CUBLAS(cublasGemmEx(g->blas, ta, tb, (int)m, (int)n, (int)k, &one, A, act_type(g),
                               (int)lda, B, act_type(g), (int)ldb, &zero, C, CUDA_R_32F, (int)ldc,
                               compute_type(g), CUBLAS_GEMM_DEFAULT));
  return GS_OK;
}

template <typename T> static gs_status forward_t(gs_mlp_cuda *g, uint64_t rows) {
  const gs_mlp_model *m = &g->c.model;
  const int L = m->n_layers;
  const uint32_t F = m->widths[0];
  gs_mlp_gather_kernel<T><<<blocks_for(rows * F), GS_MLP_THREADS, 0, g->stream>>>(
      g->x, g->c.data_n, F, g->steps, g->G, g->offset, rows, (T *)g->act[0]);
  GS_CHECK_CUDA(cudaGetLastError());
  for (int l = 0; l < L; l++) {
    const uint32_t in = m->widths[l], out = m->widths[l + 1];
    // Z^T (out x rows) = W (out x in) * X^T: W is stored as its transpose.
    GS_TRY(gemm(g, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, weights(g, l), in, g->act[l], in, g->z,
                out));
    const float *bias = g->params + gs_mlp_bias_offset(m, l);
    if (l < L - 1) {
      launch_bias_act<T>(g->sm_count, g->stream, g->z, bias, rows, out, g->steps, g->G, g->offset,
                         g->c.dropout_seed, (uint32_t)l, m->dropout, (T *)g->act[l + 1]);
    } else {
      gs_mlp_loss_kernel<T>
          <<<column_grid(g->sm_count, rows, out), dim3(GS_MLP_TILE_COLS, GS_MLP_TILE_ROWS), 0,
             g->stream>>>(
              g->z, bias, g->y, g->c.data_n, out, g->steps, g->G, g->offset, rows, (T *)g->dz,
              g->grads + gs_mlp_bias_offset(m, l), g->loss);
    }
    GS_CHECK_CUDA(cudaGetLastError());
  }
  return GS_OK;
}

extern "C" gs_status gs_mlp_cuda_forward(gs_mlp_cuda *g, uint64_t global_batch, uint64_t offset,
                                         uint64_t rows) {
  if (rows < 1 || rows > g->c.rows)
    GS_BUG("mlp: %llu rows asked of a model sized for %llu", (unsigned long long)rows,
           (unsigned long long)g->c.rows);
  g->G = global_batch;
  g->offset = offset;
  GS_CHECK_CUDA(cudaMemsetAsync(g->loss, 0, sizeof(float), g->stream));
  // Bias gradients are sums over the batch, accumulated by the backward kernels.
  const gs_mlp_model *m = &g->c.model;
  for (int l = 0; l < m->n_layers; l++)
    GS_CHECK_CUDA(cudaMemsetAsync(g->grads + gs_mlp_bias_offset(m, l), 0,
                                  (size_t)m->widths[l + 1] * sizeof(float), g->stream));
  return g->bf16 ? forward_t<__nv_bfloat16>(g, rows) : forward_t<float>(g, rows);
}

extern "C" gs_status gs_mlp_cuda_weight_grads(gs_mlp_cuda *g, int layer, uint64_t rows) {
  const gs_mlp_model *m = &g->c.model;
  const uint32_t in = m->widths[layer], out = m->widths[layer + 1];
  // dW^T (in x out) = X^T (in x rows) * dZ (rows x out); the bias gradient
  // was summed by the kernel that made dZ.
  return gemm(g, CUBLAS_OP_N, CUBLAS_OP_T, in, out, rows, g->act[layer], in, g->dz, out,
              g->grads + gs_mlp_weight_offset(m, layer), in);
}

template <typename T> static gs_status input_grad_t(gs_mlp_cuda *g, int l, uint64_t rows) {
  const gs_mlp_model *m = &g->c.model;
  const uint32_t in = m->widths[l], out = m->widths[l + 1];
  // dA^T (in x rows) = W^T (in x out) * dZ^T (out x rows), into z as scratch.
  GS_TRY(gemm(g, CUBLAS_OP_N, CUBLAS_OP_N, in, rows, out, weights(g, l), in, g->dz, out, g->z, in));
  const float scale = m->dropout > 0.0f ? 1.0f / (1.0f - m->dropout) : 1.0f;
  launch_act_grad<T>(g->sm_count, g->stream, g->z, (const T *)g->act[l], rows, in, scale,
                     (T *)g->dz_prev, g->grads + gs_mlp_bias_offset(m, l - 1));
  GS_CHECK_CUDA(cudaGetLastError());
  void *t = g->dz;
  g->dz = g->dz_prev;
  g->dz_prev = t;
  return GS_OK;
}

extern "C" gs_status gs_mlp_cuda_input_grad(gs_mlp_cuda *g, int layer, uint64_t rows) {
  if (layer < 1) GS_BUG("mlp: no input gradient below layer 1");
  return g->bf16 ? input_grad_t<__nv_bfloat16>(g, layer, rows) : input_grad_t<float>(g, layer, rows);
}

extern "C" gs_status gs_mlp_cuda_adam(gs_mlp_cuda *g) {
  const gs_mlp_adam *a = &g->c.adam;
  unsigned blocks = blocks_for(g->count);
  if (blocks > 4096) blocks = 4096;
  gs_mlp_adam_kernel<<<blocks, GS_MLP_THREADS, 0, g->stream>>>(g->params, g->mom1, g->mom2,
                                                               g->grads, g->count, g->steps, a->lr,
                                                               a->beta1, a->beta2, a->eps, g->low);
  GS_CHECK_CUDA(cudaGetLastError());
  gs_mlp_advance_step_kernel<<<1, 1, 0, g->stream>>>(g->steps);
  GS_CHECK_CUDA(cudaGetLastError());
  return GS_OK;
}

/* ---- pieces for a pipeline stage (mlp_pp_cuda.c orders them) ---------------------- */

template <typename T>
__global__ void gs_mlp_column_sums_kernel(const T *dz, uint64_t rows, uint32_t cols, float *db) {
  const uint32_t c = blockIdx.x * GS_MLP_TILE_COLS + threadIdx.x;
  float sum = 0.0f;
  if (c < cols)
    for (uint64_t r = (uint64_t)blockIdx.y * GS_MLP_TILE_ROWS + threadIdx.y; r < rows;
         r += (uint64_t)gridDim.y * GS_MLP_TILE_ROWS)
      sum += to_float(dz[r * cols + c]);
  add_column_sums(sum, c, cols, db);
}

static unsigned capped_blocks(uint64_t n) {
  const unsigned blocks = blocks_for(n);
  return blocks > 4096 ? 4096 : (blocks ? blocks : 1);
}

/* The kernels of `op` whose activations are of type T. */
template <typename T> static void stage_op_t(const gs_mlp_stage_op *op, cudaStream_t stream) {
  const dim3 tile(GS_MLP_TILE_COLS, GS_MLP_TILE_ROWS);
  switch (op->kind) {
    case GS_MLP_STAGE_GATHER:
      gs_mlp_gather_kernel<T><<<blocks_for(op->rows * op->cols), GS_MLP_THREADS, 0, stream>>>(
          op->x, op->n, op->cols, op->steps, op->G, op->offset, op->rows, (T *)op->out);
      break;
    case GS_MLP_STAGE_BIAS_ACT:
      launch_bias_act<T>(op->sm_count, stream, (const float *)op->in, op->bias, op->rows, op->cols,
                         op->steps, op->G, op->offset, op->seed, op->layer, op->dropout,
                         (T *)op->out);
      break;
    case GS_MLP_STAGE_LOSS:
      gs_mlp_loss_kernel<T><<<column_grid(op->sm_count, op->rows, op->cols), tile, 0, stream>>>(
          (const float *)op->in, op->bias, op->x, op->n, op->cols, op->steps, op->G, op->offset,
          op->rows, (T *)op->out, op->db, op->loss);
      break;
    case GS_MLP_STAGE_ACT_GRAD:
      launch_act_grad<T>(op->sm_count, stream, (const float *)op->in, (const T *)op->act, op->rows,
                         op->cols, op->scale, (T *)op->out, op->db);
      break;
    case GS_MLP_STAGE_COLUMN_SUMS:
      gs_mlp_column_sums_kernel<T><<<column_grid(op->sm_count, op->rows, op->cols), tile, 0, stream>>>(
          (const T *)op->in, op->rows, op->cols, op->db);
      break;
    case GS_MLP_STAGE_ADAM:
    case GS_MLP_STAGE_TO_BF16: break;  // not of the activations' type: below
  }
}

extern "C" gs_status gs_mlp_cuda_stage_op(const gs_mlp_stage_op *op, cudaStream_t stream) {
  switch (op->kind) {
    case GS_MLP_STAGE_ADAM:
      gs_mlp_adam_kernel<<<capped_blocks(op->rows), GS_MLP_THREADS, 0, stream>>>(
          (float *)op->out, op->mom1, op->mom2, (const float *)op->in, op->rows, op->steps,
          op->adam.lr, op->adam.beta1, op->adam.beta2, op->adam.eps, (__nv_bfloat16 *)op->low);
      GS_CHECK_CUDA(cudaGetLastError());
      gs_mlp_advance_step_kernel<<<1, 1, 0, stream>>>(op->steps);
      break;
    case GS_MLP_STAGE_TO_BF16:
      gs_mlp_to_bf16_kernel<<<blocks_for(op->rows), GS_MLP_THREADS, 0, stream>>>(
          (const float *)op->in, op->rows, (__nv_bfloat16 *)op->low);
      break;
    default:
      if (op->bf16)
        stage_op_t<__nv_bfloat16>(op, stream);
      else
        stage_op_t<float>(op, stream);
  }
  GS_CHECK_CUDA(cudaGetLastError());
  return GS_OK;
}
