/* mlp workload: a multilayer perceptron (ReLU, dropout) trained with Adam
 * on MSE loss, data parallel over ranks like DDP. This header holds the
 * model description, the synthetic dataset and the CPU reference of the
 * training step, which the CPU backend, the GPU verification and the tests
 * call directly. Rules and formulas: docs/workloads/mlp.md. */
#ifndef GS_MLP_H
#define GS_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "workloads/workload.h"

extern const gs_workload gs_workload_mlp;

#define GS_MLP_MAX_LAYERS 16       /* linear layers */
#define GS_MLP_MAX_WIDTH 65536u

/* The network: widths[0] inputs, widths[n_layers] outputs; every linear
 * layer but the last is followed by ReLU and dropout. Weights of layer l
 * are [widths[l+1]][widths[l]] (row-major, output-major like PyTorch),
 * followed by its bias; layers are stored one after the other. */
typedef struct {
  int n_layers;
  uint32_t widths[GS_MLP_MAX_LAYERS + 1];
  float dropout;                   /* probability of dropping, [0, 1) */
} gs_mlp_model;

/* Adam's hyperparameters (PyTorch defaults except the learning rate). */
typedef struct {
  float lr, beta1, beta2, eps;
} gs_mlp_adam;

/* Parameters in total, and where layer l's weights and bias start. */
uint64_t gs_mlp_param_count(const gs_mlp_model *m);
uint64_t gs_mlp_weight_offset(const gs_mlp_model *m, int layer);
uint64_t gs_mlp_bias_offset(const gs_mlp_model *m, int layer);

/* Multiply-adds of one sample through the network's GEMMs (forward). */
uint64_t gs_mlp_macs_per_sample(const gs_mlp_model *m);

/* The work of one training step over `rows` samples, the model behind the
 * cost and its roofline (docs/workloads/mlp.md, "Roofline"). Flops: the
 * GEMMs (2 per multiply-add: forward, weight gradient, and the input
 * gradient of every layer but the first), per layer output value the bias
 * add and the bias gradient's add, per hidden value the backward scale and
 * with dropout the forward one, per output value the MSE's 6 (difference,
 * gradient, loss share), per parameter Adam's 14. The same for every
 * precision: only the peak they run against differs. */
uint64_t gs_mlp_step_flops(const gs_mlp_model *m, uint64_t rows);

/* Minimum device-memory bytes of that step: every layer's activations
 * (input and output included) written once and read twice, 4 bytes a
 * value (2 with `bf16`); per parameter its gradient written (4), Adam's
 * reads of gradient, moments and weight and writes of moments and weight
 * (28), the weights read by the forward and input-gradient GEMMs (2 x 4,
 * or 2 x 2 from the bf16 copy, which Adam also writes: 2). */
uint64_t gs_mlp_step_bytes(const gs_mlp_model *m, uint64_t rows, int bf16);

/* Initial parameters from the seed only (same on every rank): weights
 * uniform in +-sqrt(3 / fan_in) (variance 1 / fan_in), biases 0. `params`
 * holds gs_mlp_param_count floats. */
void gs_mlp_init_params(const gs_mlp_model *m, uint64_t seed, float *params);

/* The synthetic dataset on the host: n samples of `features` inputs
 * (x, [n][features]) and `targets` outputs (y, [n][targets]), values from
 * mlp_hash.h, identical to the device's. */
void gs_mlp_generate(uint64_t seed, uint64_t n, uint32_t features, uint32_t targets, float *x,
                     float *y);

/* Reads a CSV dataset (docs/workloads/mlp.md, "Data"): each sample a line
 * of `features` inputs then `targets` outputs, comma-separated. *x, *y
 * (n * features, n * targets floats) are allocated for the caller.
 * GS_ERR_USAGE naming the file and line on a malformed line, GS_ERR_IO when
 * it cannot be read. */
gs_status gs_mlp_data_load_csv(const char *path, uint32_t features, uint32_t targets, float **x,
                               float **y, uint64_t *n);

/* A dataset in host memory. */
typedef struct {
  uint64_t n;
  uint32_t features, targets;
  const float *x, *y;
} gs_mlp_data;

/* One batch of a step: the samples at global positions
 * step * global_batch + offset + i, i < rows, which read dataset row
 * (position mod n). The loss is the mean over the global batch, so a rank's
 * gradients are its share of the global mean and the sum over ranks is the
 * gradient of the global batch. Dropout uses positions, so any split of the
 * global batch over ranks draws the same masks. */
typedef struct {
  uint64_t step;
  uint64_t global_batch;
  uint64_t offset;
  uint64_t rows;
  uint64_t seed;                   /* dropout seed */
} gs_mlp_batch;

/* CPU reference: forward, MSE loss and backward of one batch from `params`.
 * Writes the gradients of every parameter to `grads` (param_count floats,
 * overwritten) and this batch's share of the loss to *loss. Accumulates in
 * double. GS_ERR_NOMEM when its scratch cannot be allocated. */
gs_status gs_mlp_cpu_gradients(const gs_mlp_model *m, const float *params, const gs_mlp_data *d,
                               const gs_mlp_batch *b, float *grads, double *loss);

/* CPU reference of Adam's update number `t` (1-based) over `count`
 * parameters: moments `mom1`, `mom2` and `params` updated in place. */
void gs_mlp_cpu_adam(const gs_mlp_adam *a, uint64_t t, uint64_t count, const float *grads,
                     float *params, float *mom1, float *mom2);

/* Copies one rank's current parameters (gs_mlp_param_count floats) from a
 * state made by gs_workload_mlp.setup to `out` (host), after its stream is
 * idle. For tests and tools that compare replicas or runs. */
gs_status gs_mlp_state_params(void *state, float *out);

/* Every rank's share of the step (ctx->unit_count of each, in rank order)
 * into all_rows[0 .. world_size-1], by an all-gather on the rank's
 * communicator (through a device buffer on CUDA). Called by every rank in
 * its setup. */
gs_status gs_mlp_gather_shares(const gs_rank_context *ctx, uint64_t *all_rows);

#endif
