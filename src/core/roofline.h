/* A step against the hardware's limit: the bound a workload declares in
 * its cost (gs_bound), the peak of one GPU model for it (data/gpu-models.json
 * through core/gpu_model.h), and the fraction of the summed peak of a
 * measurement's devices that its median step achieved. Pure arithmetic;
 * the measuring layer resolves the devices' models, the command prints.
 * The member it fills is described in docs/result-schema.md ("roofline"),
 * each workload's bound in its page under docs/workloads/. */
#ifndef GS_ROOFLINE_H
#define GS_ROOFLINE_H

#include "core/gpu_model.h"
#include "core/result.h"

/* "memory", "fp32", "tf32", "bf16"; "none" for GS_BOUND_NONE. */
const char *gs_bound_name(gs_bound bound);

/* The figure of a GPU model that states `bound`'s peak, and its scale to
 * units per second (10^9 for GB/s, 10^12 for TFLOP/s). Returns 0 for
 * GS_BOUND_NONE (no figure). */
int gs_bound_figure(gs_bound bound, gs_figure *figure, double *scale);

/* One GPU of `model`'s peak for `bound`, in bytes/s or flop/s; NaN when
 * the model (may be NULL) states no such figure. */
double gs_roofline_model_peak(const gs_gpu_model *model, gs_bound bound);

/* Fills *out for a step of `cost` whose median took `step_seconds`, on
 * devices whose peaks sum to `peak` (bytes/s or flop/s; NaN: not known,
 * and then `why`, which must be non-empty, says why). `model` names the
 * model the peak came from ("" when none). A cost without a bound leaves
 * *out zeroed (bound GS_BOUND_NONE). Any thread. */
void gs_roofline_compute(const gs_cost *cost, double step_seconds, double peak, const char *model,
                         const char *why, gs_roofline_record *out);

/* The printed line of a record, without indentation or newline, e.g.
 * "memory: 1.29 TB/s = 26.9% of 4.80 TB/s (H200 SXM 141GB)" or
 * "fp32: 12.3 GFLOP/s; no bound known: the cpu backend". */
void gs_roofline_describe(const gs_roofline_record *r, char *buf, size_t size);

#endif
