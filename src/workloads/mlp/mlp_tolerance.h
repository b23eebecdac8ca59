/* How far the GPU's gradients of one mlp step may lie from the CPU
 * reference in a given precision: a bound per parameter from the error
 * analysis of the dense layers' GEMMs (docs/workloads/mlp.md,
 * "Verification"), so that a correct GPU never fails its check and a wrong
 * element still does. Host code; the verification of mlp.c calls it. */
#ifndef GS_MLP_TOLERANCE_H
#define GS_MLP_TOLERANCE_H

#include <stdint.h>

#include "core/status.h"
#include "workloads/mlp/mlp.h"
#include "workloads/mlp/mlp_cuda.h"

/* The unit roundoff of a precision's GEMM inputs: 2^-24 (fp32, round to
 * nearest with 24 significand bits), 2^-11 (tf32: 11), 2^-8 (bf16: 8). */
double gs_mlp_unit_roundoff(gs_mlp_precision precision);

/* The relative error one rounded operation of the step may add, e =
 * 3u + (K + world) 2^-24: both GEMM inputs and its output rounded to the
 * precision (u each) and sums of at most K = max(widest layer, rows)
 * terms, then of `world` ranks' parts, accumulated in fp32. */
double gs_mlp_op_error(const gs_mlp_model *m, gs_mlp_precision precision, uint64_t rows,
                       int world);

/* For each parameter of `m` (gs_mlp_param_count entries of `bound`), the
 * first-order worst-case error of its gradient over batch `b` of `d` from
 * `params` when every GEMM of the step adds a relative error of `e`
 * (gs_mlp_op_error) to the magnitudes it combines: (2L + 1) e (1 + (2L + 1)
 * e) times the gradient's magnitude sum over the batch (sum of |dz| |a|,
 * with |dz| and |a| carried through |W| from the output's error, ReLU and
 * dropout as the reference applies them). GS_ERR_NOMEM when its scratch
 * cannot be allocated. Any thread. */
gs_status gs_mlp_gradient_bounds(const gs_mlp_model *m, const float *params, const gs_mlp_data *d,
                                 const gs_mlp_batch *b, double e, double *bound);

/* The device's gradients `grads` against the reference `ref` and the
 * bounds `bound` (count entries each): the largest error, reference and
 * bound, the elements outside their bound (a NaN is outside), and the norm
 * of the error and of the bounds relative to the reference's norm. With
 * `corrupt` other than 1 (--verify-corrupt, for tests) the device's
 * element at the reference's largest is first multiplied by it. */
typedef struct {
  double max_error, max_ref, max_bound, norm_error, norm_bound;
  double bound_at_max_ref;  /* the bound of the largest reference element */
  uint64_t outside;
} gs_mlp_gradient_check;

void gs_mlp_gradient_compare(uint64_t count, float *grads, const float *ref, const double *bound,
                             double corrupt, gs_mlp_gradient_check *out);

#endif
