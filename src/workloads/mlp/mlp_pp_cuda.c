/* The CUDA passes of a pipeline stage (mlp_pp_internal.h), fp32, tf32 or
 * bf16: the whole-model step's kernels (gs_mlp_cuda_stage_op) and cuBLAS
 * GEMMs on the stage's own buffers, with activations kept per micro-batch
 * at its rows (bfloat16 under bf16, with a bfloat16 copy of the weights as
 * GEMM input, float GEMM outputs, gradients and Adam, as the data-parallel
 * step's bf16 mode). Weight gradients accumulate over micro-batches in the GEMM
 * (beta = 1 after the step zeroed them), bias gradients in the kernels'
 * column sums. A stage's input gradient carries no bias gradient of the
 * stage before (that one sums its own from what it receives). */
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "workloads/mlp/mlp_cuda.h"
#include "workloads/mlp/mlp_pp_internal.h"

static gs_status alloc_dev(float **ptr, uint64_t floats) {
  GS_CHECK_CUDA(cudaMalloc((void **)ptr, (size_t)(floats ? floats : 1) * sizeof(float)));
  return GS_OK;
}

/* `elems` activations (float or bfloat16: p->act_bytes each). */
static gs_status alloc_act(const gs_mlp_pp *p, void **ptr, uint64_t elems) {
  GS_CHECK_CUDA(cudaMalloc(ptr, (size_t)(elems ? elems : 1) * p->act_bytes));
  return GS_OK;
}

/* Element `index` of an activation buffer. */
static void *at(const gs_mlp_pp *p, void *base, uint64_t index) {
  return (char *)base + (size_t)index * p->act_bytes;
}

void gs_mlp_pp_cuda_free(gs_mlp_pp *p) {
  if (p->blas) cublasDestroy(p->blas);
  if (p->transfer_stream) cudaStreamDestroy(p->transfer_stream);
  if (p->computed) cudaEventDestroy(p->computed);
  if (p->transferred) cudaEventDestroy(p->transferred);
  void *ptrs[] = {p->d_params, p->d_mom1, p->d_mom2, p->d_grads, p->d_x, p->d_y,
                  p->d_loss, p->d_discard, p->d_grad_out, p->d_grad_in, p->d_z, p->d_tmp[0],
                  p->d_tmp[1], p->d_low, p->d_link};
  for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++)
    if (ptrs[i]) cudaFree(ptrs[i]);
  for (int l = 0; l <= GS_MLP_MAX_LAYERS; l++)
    if (p->d_act[l]) cudaFree(p->d_act[l]);
  if (p->d_steps) cudaFree(p->d_steps);
}

/* Runs the stage's forward and backward once for each micro-batch size,
 * on zeroed inputs and with no transfer, then clears what they wrote, so
 * that every kernel the steps use is loaded before the first NCCL
 * transfer. CUDA loads a kernel at its first launch (lazy loading, the
 * default since CUDA 12.2), and a load may wait on the device: on 2 of 4
 * H200s a 2-stage run at --micro-batches 1 hung with one stage's thread
 * inside cuBLAS loading a kernel (cuKernelGetFunction) and the other's
 * waiting on cuBLAS' lock, while NCCL's transfers of the step waited for
 * them (docs/workloads/mlp.md, "Pipeline"). */
static gs_status load_kernels(gs_mlp_pp *p) {
  const gs_mlp_model *m = &p->model;
  if (p->stage > 0)
    GS_CHECK_CUDA(cudaMemsetAsync(p->d_act[p->lo], 0, (size_t)(p->rows * m->widths[p->lo]) *
                                                          p->act_bytes, p->stream));
  if (p->stage < p->stages - 1)
    GS_CHECK_CUDA(cudaMemsetAsync(p->d_grad_out, 0, (size_t)(p->rows * m->widths[p->hi]) *
                                                        p->act_bytes, p->stream));
  uint64_t first = 0, rows_first = 0, rows_last = 0;
  gs_mlp_pp_micro_rows(p->rows, p->micro, 0, &first, &rows_first);
  gs_mlp_pp_micro_rows(p->rows, p->micro, p->micro - 1, &first, &rows_last);
  const int sizes = rows_last != rows_first ? 2 : 1;
  GS_TRY(gs_mlp_pp_cuda_begin_step(p));
  for (int k = 0; k < sizes; k++) {
    const int j = k == 0 ? 0 : p->micro - 1;
    GS_TRY(gs_mlp_pp_cuda_forward(p, j));
    GS_TRY(gs_mlp_pp_cuda_backward(p, j));
  }
  GS_TRY(gs_mlp_pp_cuda_begin_step(p));
  GS_CHECK_CUDA(cudaStreamSynchronize(p->stream));
  return GS_OK;
}

gs_status gs_mlp_pp_cuda_create(gs_mlp_pp *p) {
  const gs_mlp_model *m = &p->model;
  const int L = m->n_layers;
  uint64_t widest = 0, first = 0, micro_rows = 0;
  for (int l = p->lo; l <= p->hi; l++) widest = m->widths[l] > widest ? m->widths[l] : widest;
  gs_mlp_pp_micro_rows(p->rows, p->micro, 0, &first, &micro_rows);
  int device = 0;
  GS_CHECK_CUDA(cudaGetDevice(&device));
  GS_CHECK_CUDA(cudaDeviceGetAttribute(&p->sm_count, cudaDevAttrMultiProcessorCount, device));
  p->act_bytes = p->precision == GS_MLP_BF16 ? 2 : sizeof(float);
  GS_CHECK_CUBLAS(cublasCreate(&p->blas));
  GS_CHECK_CUBLAS(cublasSetStream(p->blas, p->stream));
  GS_TRY(alloc_dev(&p->d_params, p->count));
  GS_TRY(alloc_dev(&p->d_mom1, p->count));
  GS_TRY(alloc_dev(&p->d_mom2, p->count));
  GS_TRY(alloc_dev(&p->d_grads, p->count));
  GS_TRY(alloc_dev(&p->d_loss, 1));
  GS_TRY(alloc_dev(&p->d_discard, m->widths[p->lo]));
  GS_TRY(alloc_dev(&p->d_link, 4));
  GS_CHECK_CUDA(cudaMemset(p->d_link, 0, 4 * sizeof(float)));
  for (int l = p->lo; l <= p->hi; l++)
    if (l < L) GS_TRY(alloc_act(p, &p->d_act[l], p->rows * m->widths[l]));
  GS_TRY(alloc_act(p, &p->d_grad_out, p->rows * m->widths[p->hi]));
  GS_TRY(alloc_act(p, &p->d_grad_in, p->rows * m->widths[p->lo]));
  GS_TRY(alloc_dev(&p->d_z, micro_rows * widest));
  GS_TRY(alloc_act(p, &p->d_tmp[0], micro_rows * widest));
  GS_TRY(alloc_act(p, &p->d_tmp[1], micro_rows * widest));
  if (p->precision == GS_MLP_BF16) GS_CHECK_CUDA(cudaMalloc(&p->d_low, (size_t)p->count * 2 + 2));
  GS_CHECK_CUDA(cudaMalloc((void **)&p->d_steps, sizeof(uint64_t)));
  GS_CHECK_CUDA(cudaStreamCreateWithFlags(&p->transfer_stream, cudaStreamNonBlocking));
  GS_CHECK_CUDA(cudaEventCreateWithFlags(&p->computed, cudaEventDisableTiming));
  GS_CHECK_CUDA(cudaEventCreateWithFlags(&p->transferred, cudaEventDisableTiming));
  const size_t bytes = (size_t)p->count * sizeof(float);
  GS_CHECK_CUDA(cudaMemcpy(p->d_params, p->params + p->begin, bytes, cudaMemcpyHostToDevice));
  GS_CHECK_CUDA(cudaMemset(p->d_mom1, 0, bytes));
  GS_CHECK_CUDA(cudaMemset(p->d_mom2, 0, bytes));
  GS_CHECK_CUDA(cudaMemset(p->d_steps, 0, sizeof(uint64_t)));
  if (p->d_low) {
    const gs_mlp_stage_op op = {.kind = GS_MLP_STAGE_TO_BF16, .in = p->d_params, .low = p->d_low,
                                .rows = p->count};
    GS_TRY(gs_mlp_cuda_stage_op(&op, p->stream));
  }
  // The first stage reads the inputs, the last the targets.
  const uint64_t n = p->data.n;
  if (p->stage == 0) {
    GS_TRY(alloc_dev(&p->d_x, n * p->data.features));
    GS_CHECK_CUDA(cudaMemcpy(p->d_x, p->data.x, (size_t)(n * p->data.features) * sizeof(float),
                             cudaMemcpyHostToDevice));
  }
  if (p->stage == p->stages - 1) {
    GS_TRY(alloc_dev(&p->d_y, n * p->data.targets));
    GS_CHECK_CUDA(cudaMemcpy(p->d_y, p->data.y, (size_t)(n * p->data.targets) * sizeof(float),
                             cudaMemcpyHostToDevice));
  }
  return load_kernels(p);
}

/* Row-major C[rows][out] (+)= ... through column-major cuBLAS, as
 * mlp_cuda.cu's GEMMs: A and B are activations or weights (float, or
 * bfloat16 under bf16), C float. */
static gs_status gemm(gs_mlp_pp *p, cublasOperation_t ta, cublasOperation_t tb, uint64_t m,
                      uint64_t n, uint64_t k, const void *A, uint64_t lda, const void *B,
                      uint64_t ldb, float beta, float *C, uint64_t ldc) {
  const float one = 1.0f;
  const cudaDataType_t in = p->precision == GS_MLP_BF16 ? CUDA_R_16BF : CUDA_R_32F;
  GS_CHECK_CUBLAS(cublasGemmEx(p->blas, ta, tb, (int)m, (int)n, (int)k, &one, A, in, (int)lda, B,
                               in, (int)ldb, &beta, C, CUDA_R_32F, (int)ldc,
                               p->precision == GS_MLP_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                           : CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT));
  return GS_OK;
}

/* Layer l's weights as GEMM input: the float master or the bfloat16 copy. */
static const void *weights_of(gs_mlp_pp *p, int l) {
  const uint64_t off = gs_mlp_weight_offset(&p->model, l) - p->begin;
  return p->d_low ? (const void *)((const char *)p->d_low + off * 2)
                  : (const void *)(p->d_params + off);
}

static float *bias_of(gs_mlp_pp *p, float *base, int l) {
  return base + (gs_mlp_bias_offset(&p->model, l) - p->begin);
}

gs_status gs_mlp_pp_cuda_begin_step(gs_mlp_pp *p) {
  GS_CHECK_CUDA(cudaMemsetAsync(p->d_grads, 0, (size_t)p->count * sizeof(float), p->stream));
  GS_CHECK_CUDA(cudaMemsetAsync(p->d_loss, 0, sizeof(float), p->stream));
  return GS_OK;
}

gs_status gs_mlp_pp_cuda_forward(gs_mlp_pp *p, int j) {
  const gs_mlp_model *m = &p->model;
  const int L = m->n_layers;
  uint64_t f = 0, n = 0;
  gs_mlp_pp_micro_rows(p->rows, p->micro, j, &f, &n);
  gs_mlp_stage_op op = {.steps = p->d_steps, .G = p->global_batch, .offset = p->offset + f,
                        .rows = n, .n = p->data.n, .sm_count = p->sm_count,
                        .bf16 = p->precision == GS_MLP_BF16};
  if (p->stage == 0) {
    op.kind = GS_MLP_STAGE_GATHER;
    op.x = p->d_x;
    op.cols = m->widths[0];
    op.out = at(p, p->d_act[0], f * m->widths[0]);
    GS_TRY(gs_mlp_cuda_stage_op(&op, p->stream));
  }
  for (int l = p->lo; l < p->hi; l++) {
    const uint32_t in = m->widths[l], out = m->widths[l + 1];
    GS_TRY(gemm(p, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, weights_of(p, l), in,
                at(p, p->d_act[l], f * in), in, 0.0f, p->d_z, out));
    op.in = p->d_z;
    op.bias = bias_of(p, p->d_params, l);
    op.cols = out;
    if (l < L - 1) {
      op.kind = GS_MLP_STAGE_BIAS_ACT;
      op.seed = p->dropout_seed;
      op.layer = (uint32_t)l;
      op.dropout = m->dropout;
      op.out = at(p, p->d_act[l + 1], f * out);
    } else {
      op.kind = GS_MLP_STAGE_LOSS;
      op.x = p->d_y;
      op.out = at(p, p->d_grad_out, f * out);
      op.db = bias_of(p, p->d_grads, l);
      op.loss = p->d_loss;
    }
    GS_TRY(gs_mlp_cuda_stage_op(&op, p->stream));
  }
  return GS_OK;
}

gs_status gs_mlp_pp_cuda_backward(gs_mlp_pp *p, int j) {
  const gs_mlp_model *m = &p->model;
  uint64_t f = 0, n = 0;
  gs_mlp_pp_micro_rows(p->rows, p->micro, j, &f, &n);
  const void *g = at(p, p->d_grad_out, f * m->widths[p->hi]);
  gs_mlp_stage_op op = {.rows = n, .sm_count = p->sm_count, .bf16 = p->precision == GS_MLP_BF16};
  if (p->stage < p->stages - 1) {
    // The received gradient's column sums: the bias gradient of our last layer.
    op.kind = GS_MLP_STAGE_COLUMN_SUMS;
    op.in = g;
    op.cols = m->widths[p->hi];
    op.db = bias_of(p, p->d_grads, p->hi - 1);
    GS_TRY(gs_mlp_cuda_stage_op(&op, p->stream));
  }
  const float scale = m->dropout > 0.0f ? 1.0f / (1.0f - m->dropout) : 1.0f;
  for (int l = p->hi - 1; l >= p->lo; l--) {
    const uint32_t in = m->widths[l], out = m->widths[l + 1];
    const void *act = at(p, p->d_act[l], f * in);
    GS_TRY(gemm(p, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, act, in, g, out, 1.0f,
                p->d_grads + (gs_mlp_weight_offset(m, l) - p->begin), in));
    if (l == 0) break;
    GS_TRY(gemm(p, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, weights_of(p, l), in, g, out, 0.0f,
                p->d_z, in));
    void *prev = l == p->lo ? at(p, p->d_grad_in, f * in) : p->d_tmp[l & 1];
    op.kind = GS_MLP_STAGE_ACT_GRAD;
    op.in = p->d_z;
    op.act = act;
    op.cols = in;
    op.scale = scale;
    op.out = prev;
    op.db = l == p->lo ? p->d_discard : bias_of(p, p->d_grads, l - 1);
    GS_TRY(gs_mlp_cuda_stage_op(&op, p->stream));
    g = prev;
  }
  return GS_OK;
}

gs_status gs_mlp_pp_cuda_transfers_wait(gs_mlp_pp *p) {
  GS_CHECK_CUDA(cudaEventRecord(p->computed, p->stream));
  GS_CHECK_CUDA(cudaStreamWaitEvent(p->transfer_stream, p->computed, 0));
  return GS_OK;
}

gs_status gs_mlp_pp_cuda_compute_wait(gs_mlp_pp *p) {
  GS_CHECK_CUDA(cudaEventRecord(p->transferred, p->transfer_stream));
  GS_CHECK_CUDA(cudaStreamWaitEvent(p->stream, p->transferred, 0));
  return GS_OK;
}

gs_status gs_mlp_pp_cuda_adam(gs_mlp_pp *p) {
  const gs_mlp_stage_op op = {.kind = GS_MLP_STAGE_ADAM, .out = p->d_params, .in = p->d_grads,
                              .mom1 = p->d_mom1, .mom2 = p->d_mom2, .rows = p->count,
                              .steps = p->d_steps, .adam = p->adam, .low = p->d_low};
  return gs_mlp_cuda_stage_op(&op, p->stream);
}

gs_status gs_mlp_pp_cuda_fetch(gs_mlp_pp *p, int params, int grads) {
  const size_t bytes = (size_t)p->count * sizeof(float);
  GS_TRY(gs_comm_wait(p->comm, p->stream));
  if (params)
    GS_CHECK_CUDA(cudaMemcpy(p->params + p->begin, p->d_params, bytes, cudaMemcpyDeviceToHost));
  if (grads) GS_CHECK_CUDA(cudaMemcpy(p->grads, p->d_grads, bytes, cudaMemcpyDeviceToHost));
  return GS_OK;
}
