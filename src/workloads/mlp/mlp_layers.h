/* The pieces of mlp's CPU reference step (mlp_cpu.c), one layer or the
 * loss at a time, over `rows` consecutive samples of a batch: what
 * gs_mlp_cpu_gradients chains for the whole network, and what a pipeline
 * stage (mlp_pp.c) runs for its layers and micro-batches. The same
 * arithmetic in the same order, so that a stage's results are bit for bit
 * the reference's. Row r of a call is the sample at batch position
 * b->step * b->global_batch + b->offset + r (b->rows is not read). */
#ifndef GS_MLP_LAYERS_H
#define GS_MLP_LAYERS_H

#include <stdint.h>

#include "workloads/mlp/mlp.h"

/* Copies the inputs of `rows` samples into in ([rows][widths[0]]). */
void gs_mlp_cpu_inputs(const gs_mlp_model *m, const gs_mlp_data *d, const gs_mlp_batch *b,
                       uint64_t rows, float *in);

/* Layer l forward: out ([rows][widths[l+1]]) from in ([rows][widths[l]]),
 * with ReLU and dropout after every layer but the last. */
void gs_mlp_cpu_layer_forward(const gs_mlp_model *m, int l, const float *params,
                              const gs_mlp_batch *b, uint64_t rows, const float *in, float *out);

/* MSE over the global batch: dz ([rows][outputs]) = d loss / d out, and
 * these rows' share of the loss. */
double gs_mlp_cpu_loss_grad(const gs_mlp_model *m, const gs_mlp_data *d, const gs_mlp_batch *b,
                            uint64_t rows, const float *out, float *dz);

/* Layer l's weight and bias gradients from dz ([rows][widths[l+1]]) and
 * its input in, added (in double) to gw ([widths[l+1]][widths[l]]) and gb. */
void gs_mlp_cpu_layer_weight_grads(const gs_mlp_model *m, int l, uint64_t rows, const float *dz,
                                   const float *in, double *gw, double *gb);

/* The gradient of layer l's input (l >= 1) through the ReLU and dropout
 * of layer l-1, whose output is `in`: prev ([rows][widths[l]]) from dz. */
void gs_mlp_cpu_layer_input_grad(const gs_mlp_model *m, int l, const float *params, uint64_t rows,
                                 const float *dz, const float *in, float *prev);

#endif
