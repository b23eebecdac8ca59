/* CUDA side of mlp: one rank's device model (parameters, Adam moments,
 * activations, the dataset generated on the device) and launchers for the
 * pieces of a training step, which mlp.c orders and interleaves with the
 * gradient all-reduce. Dense layers are cuBLAS GEMMs; bias + ReLU +
 * dropout, the loss, the activation gradient and Adam are fused kernels.
 * Only mlp_cuda.cu is compiled by nvcc. */
#ifndef GS_MLP_CUDA_H
#define GS_MLP_CUDA_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "workloads/mlp/mlp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Arithmetic of the dense layers: fp32 everywhere; tf32 tensor cores with
 * fp32 storage; bf16 activations and weight copies with fp32 accumulation,
 * fp32 master weights, gradients and Adam moments. */
typedef enum { GS_MLP_FP32 = 0, GS_MLP_TF32 = 1, GS_MLP_BF16 = 2 } gs_mlp_precision;

typedef struct {
  gs_mlp_model model;
  gs_mlp_adam adam;
  gs_mlp_precision precision;
  uint64_t rows;         /* largest local batch a step may use */
  uint64_t data_n;       /* samples of the dataset */
  uint64_t data_seed;    /* dataset */
  uint64_t dropout_seed; /* dropout masks */
  const float *host_x;   /* a host dataset to copy (data_n x inputs), or NULL: generate */
  const float *host_y;   /* its targets (data_n x outputs) */
} gs_mlp_cuda_config;

typedef struct gs_mlp_cuda gs_mlp_cuda;

/* Allocates everything on the current device, generates the dataset there
 * (or copies config->host_x/host_y)
 * and binds a cuBLAS handle to `stream` (every launcher below enqueues on
 * it). Parameters are zero until gs_mlp_cuda_set_state. */
gs_status gs_mlp_cuda_create(const gs_mlp_cuda_config *config, cudaStream_t stream,
                             gs_mlp_cuda **out);
void gs_mlp_cuda_destroy(gs_mlp_cuda *g);

/* Device buffers of param_count floats: gradients (what the all-reduce
 * averages in place) and master parameters. */
float *gs_mlp_cuda_grads(gs_mlp_cuda *g);
float *gs_mlp_cuda_params(gs_mlp_cuda *g);
/* Bytes this rank allocated on the device. */
uint64_t gs_mlp_cuda_device_bytes(const gs_mlp_cuda *g);

/* The synthetic dataset of n samples (gs_mlp_generate's values, by the
 * same device kernel as gs_mlp_cuda_create's) into host arrays x (n x
 * features) and y (n x targets), through temporary buffers on the current
 * device, synchronously. On the host the targets cost n x targets x
 * features hashes: at 8192 samples of 2048 wide they took minutes. */
gs_status gs_mlp_cuda_generate(uint64_t seed, uint64_t n, uint32_t features, uint32_t targets,
                               float *x, float *y);

/* Copies parameters, Adam moments (may be NULL: zeros) and the number of
 * steps already taken to the device, synchronously. */
gs_status gs_mlp_cuda_set_state(gs_mlp_cuda *g, const float *params, const float *mom1,
                                const float *mom2, uint64_t steps);
/* Copies them back after the stream is idle; any pointer may be NULL. */
gs_status gs_mlp_cuda_get_state(gs_mlp_cuda *g, float *params, float *mom1, float *mom2,
                                float *grads, uint64_t *steps, double *loss);
/* Copies the device's dataset to the host (x: n * features, y: n * targets). */
gs_status gs_mlp_cuda_get_data(gs_mlp_cuda *g, float *x, float *y);

/* Forward pass and loss gradient of `rows` samples at positions
 * steps * global_batch + offset + i (see gs_mlp_batch), `steps` read on the
 * device so that the enqueued work can be replayed from a CUDA graph. */
gs_status gs_mlp_cuda_forward(gs_mlp_cuda *g, uint64_t global_batch, uint64_t offset,
                              uint64_t rows);
/* Backward, from the last layer down: for each layer first its weight
 * gradients (its bias gradient is already summed: by the loss kernel for
 * the last layer, by the layer above's input gradient otherwise), then,
 * unless it is layer 0, the gradient of its input through the ReLU and
 * dropout below it, which also sums layer-1's bias gradient. After the
 * weight gradients of layer l, every gradient of layer l is final. */
gs_status gs_mlp_cuda_weight_grads(gs_mlp_cuda *g, int layer, uint64_t rows);
gs_status gs_mlp_cuda_input_grad(gs_mlp_cuda *g, int layer, uint64_t rows);
/* Adam over all parameters with the gradients as they are, then steps += 1. */
gs_status gs_mlp_cuda_adam(gs_mlp_cuda *g);

/* One kernel of a pipeline stage's step (mlp_pp_cuda.c), on device
 * pointers; the kernels are the whole-model step's own, their activations
 * and activation gradients (`act`, `out` but of adam, `in` of column_sums)
 * of type float, or __nv_bfloat16 with `bf16` (as the whole-model step's
 * bf16 mode: GEMM outputs, gradients and optimizer state stay float).
 * Members by kind:
 *  gather:      out[rows][cols] = x rows of the batch (n samples)
 *  bias_act:    out = dropout(relu(in + bias)) for `layer`, [rows][cols]
 *  loss:        out = dz of the MSE from in + bias against targets x; the
 *               column sums of dz added to db, the loss share to *loss
 *  act_grad:    out = in through the ReLU and dropout whose output is act,
 *               scaled by `scale`; its column sums added to db
 *  column_sums: db += column sums of in [rows][cols]
 *  adam:        Adam update number *steps + 1 of out (float parameters)
 *               from in (float gradients), mom1 and mom2, over rows values,
 *               refreshing the bf16 copy `low` (NULL: none); then
 *               *steps += 1
 *  to_bf16:     low[0..rows) = the float values of in, rounded to nearest
 * Batch positions are (*steps) * G + offset + r, as gs_mlp_batch's. */
typedef enum {
  GS_MLP_STAGE_GATHER,
  GS_MLP_STAGE_BIAS_ACT,
  GS_MLP_STAGE_LOSS,
  GS_MLP_STAGE_ACT_GRAD,
  GS_MLP_STAGE_COLUMN_SUMS,
  GS_MLP_STAGE_ADAM,
  GS_MLP_STAGE_TO_BF16
} gs_mlp_stage_kind;

typedef struct {
  gs_mlp_stage_kind kind;
  int bf16;           /* activations (act, out, column_sums' in) are bfloat16 */
  const void *in, *act;
  const float *bias, *x;
  void *out, *low;
  float *db, *loss, *mom1, *mom2;
  uint64_t *steps;
  uint64_t rows, n, G, offset, seed;
  uint32_t cols, layer;
  float dropout, scale;
  gs_mlp_adam adam;
  int sm_count;
} gs_mlp_stage_op;

/* Enqueues `op` on `stream`. */
gs_status gs_mlp_cuda_stage_op(const gs_mlp_stage_op *op, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
