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
#include "core/stats.h"

/* "memory", "fp32", "tf32", "bf16"; "none" for GS_BOUND_NONE. */
const char *gs_bound_name(gs_bound bound);

/* The figure of a GPU model that states `bound`'s peak, and its scale to
 * units per second (10^9 for GB/s, 10^12 for TFLOP/s). Returns 0 for
 * GS_BOUND_NONE (no figure). */
int gs_bound_figure(gs_bound bound, gs_figure *figure, double *scale);

/* One GPU of `model`'s peak for `bound`, in bytes/s or flop/s; NaN when
 * the model (may be NULL) states no such figure. */
double gs_roofline_model_peak(const gs_gpu_model *model, gs_bound bound);

/* The median step a rate was measured over, and the median's 95%
 * interval (docs/statistics.md, "Roofline"). */
typedef struct {
  double median;                  /* seconds; NaN when no step was timed */
  double low, high;               /* its 95% interval; NaN when there is none */
  int too_few;                    /* 1: steps were timed, too few for a 95% interval */
} gs_roofline_step;

/* The median of the steps of `n_groups` groups (runs; not modified, any
 * order) and its distribution-free 95% interval (gs_stats_median_interval:
 * order statistics); where the steps are fewer than
 * GS_STATS_MEDIAN_INTERVAL_MIN_N the interval is NaN and too_few 1.
 * GS_ERR_NOMEM when the scratch copy cannot be allocated. Any thread. */
gs_status gs_roofline_step_of(const gs_stats_group *groups, size_t n_groups,
                              gs_roofline_step *out);

/* `rate`, measured over step->median, at the ends of the median's
 * interval: *low = rate x median / high, *high = rate x median / low (a
 * longer step is a lower rate; for rate = work / (peak x median) that is
 * work / (peak x high) and work / (peak x low)). Both NaN where `rate` or
 * the interval is not finite and positive. */
void gs_roofline_rate_interval(double rate, const gs_roofline_step *step, double *low,
                               double *high);

/* A fraction for people: "58.1% [57.9, 58.3]" with its interval,
 * "58.1% (too few steps for an interval)" when `too_few` (`samples` names
 * what was too few: "steps", "requests"), "58.1%" when neither (an
 * interval nobody recorded); "-" when `fraction` is not finite. */
void gs_roofline_fraction_text(double fraction, double low, double high, int too_few,
                               const char *samples, char *buf, size_t size);

/* Fills *out for a step of `cost` whose median and its interval are
 * `step`, on devices whose peaks sum to `peak` (bytes/s or flop/s; NaN:
 * not known, and then `why`, which must be non-empty, says why). `model`
 * names the model the peak came from ("" when none). The achieved rate's
 * and the fraction's intervals come from the median's
 * (gs_roofline_rate_interval). A cost without a bound leaves *out zeroed
 * (bound GS_BOUND_NONE). Any thread. */
void gs_roofline_compute(const gs_cost *cost, const gs_roofline_step *step, double peak,
                         const char *model, const char *why, gs_roofline_record *out);

/* The printed line of a record, without indentation or newline, e.g.
 * "memory: 1.29 TB/s = 26.9% [26.8, 27.0] of 4.80 TB/s (H200 SXM 141GB)",
 * "... = 26.9% (too few steps for an interval) of ..." or
 * "fp32: 12.3 GFLOP/s; no bound known: the cpu backend". */
void gs_roofline_describe(const gs_roofline_record *r, char *buf, size_t size);

#endif
