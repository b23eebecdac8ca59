/* The bubble of a pipeline, one definition for every pipelined workload
 * (mlp --pp, llm --pp) and every place that shows it (the llm terminal,
 * the report in each format): the stages' idle time over their busy time,
 * Σ_s idle_s / Σ_s busy_s, the bubble time over the ideal compute time as
 * Megatron-LM's analysis states it, held against that analysis' (p-1)/m
 * for p stages and m micro-batches; the stage imbalance (the slowest
 * stage's busy time over the mean stage's); both with their 95% intervals
 * (the paired two-level bootstrap over runs and samples, core/stats.h),
 * and the verdict on whether the bubble lies within 15% of the formula,
 * decided by its interval. docs/report.md, "Pipeline". */
#ifndef GS_BUBBLE_H
#define GS_BUBBLE_H

#include <stddef.h>

#include "core/json.h"
#include "core/status.h"

/* How far the measured bubble may lie from (p-1)/m, relative to it, and
 * still be "within" (the pipeline issue's target). */
#define GS_BUBBLE_TOLERANCE 0.15

typedef enum {
  GS_BUBBLE_UNKNOWN = 0,      /* no bubble (no samples, no busy time) */
  GS_BUBBLE_WITHIN,           /* the whole interval within ±15% of the formula */
  GS_BUBBLE_ABOVE,            /* the whole interval above formula x 1.15 */
  GS_BUBBLE_BELOW,            /* the whole interval below formula x 0.85 */
  GS_BUBBLE_INCONCLUSIVE      /* the interval straddles a bound, or there is none */
} gs_bubble_verdict;

/* A pipeline's samples: per sample (a step of mlp, a block of calls of
 * llm) and stage, the seconds the stage computed and the seconds it had
 * no work, sample-major ([i * stages + s]); samples in runs (the
 * bootstrap's groups), run after run. Idle may be negative where the
 * transfers taken off it were priced above what it waited. */
typedef struct {
  int stages;                /* p >= 2 */
  int micro;                 /* m >= 1: micro-batches per step (llm: per call at full batch) */
  size_t n_runs;
  const size_t *run_samples; /* samples of each run */
  const double *busy, *idle; /* sum over n_runs of run_samples x stages each */
} gs_bubble_samples;

typedef struct {
  double bubble, low, high;  /* Σ idle / Σ busy over stages and samples; interval NaN when none */
  double formula;            /* (p - 1) / m */
  gs_bubble_verdict verdict;
  /* (p-1)/m with the measured stage imbalance (gs_bubble_expected), and the
   * bubble's verdict against it: where the stages are not balanced, it
   * tells whether the imbalance explains the bubble's distance from
   * (p-1)/m. */
  double expected;
  gs_bubble_verdict expected_verdict;
  double imbalance, imbalance_low, imbalance_high; /* slowest stage's busy / mean busy */
  int slowest;               /* the stage whose busy time is largest; -1 without samples */
  size_t samples;
} gs_bubble;

/* Computes *out from `in`: the point figures from the sums, the intervals
 * by gs_stats_paired_ratio_interval (the bubble: per sample Σ_s idle over
 * Σ_s busy; the imbalance: the slowest stage's busy over the mean of the
 * stages' busy, the slowest chosen from the sums), the verdict by
 * gs_bubble_verdict_of. Without samples or busy time everything is NaN and
 * the verdict unknown. GS_ERR_NOMEM when the scratch cannot be allocated;
 * a pipeline of fewer than 2 stages or m < 1 is a caller's BUG. */
gs_status gs_bubble_compute(const gs_bubble_samples *in, gs_bubble *out);

/* The bubble of `stages` stages and `micro` micro-batches whose slowest
 * stage computes `imbalance` times the mean stage's: the slowest stage
 * paces the m - 1 micro-batches of the steady state, so a step lasts
 * (p + (m - 1) x imbalance) micro-batch times of the mean stage against the
 * m a stage computes: (p - 1 + (m - 1)(imbalance - 1)) / m, (p-1)/m when
 * the stages are balanced. predict's step (report/predict/pipeline.c) is
 * the same model with the transfers added. NaN when imbalance is. */
double gs_bubble_expected(int stages, int micro, double imbalance);

/* The verdict on a bubble of interval [low, high] against `formula`:
 * within when formula x (1 - 0.15) <= low and high <= formula x 1.15,
 * above or below when the whole interval lies beyond one bound,
 * inconclusive when it straddles a bound or is NaN; unknown when `bubble`
 * is NaN. */
gs_bubble_verdict gs_bubble_verdict_of(double bubble, double low, double high, double formula);

/* "within 15%", "above", "below", "inconclusive" or "-" (unknown). */
const char *gs_bubble_verdict_name(gs_bubble_verdict v);

/* The verdict as a sentence's end, e.g. "within 15% of (p-1)/m" or
 * "inconclusive: the interval straddles (p-1)/m x 1.15"; "" when unknown.
 * Writes at most `size` bytes into buf and returns buf. */
char *gs_bubble_verdict_text(const gs_bubble *b, char *buf, size_t size);

/* Puts the figures of `x` into object `o` through build `b` (core/json.h;
 * NaN becomes null), in this order: "bubble", "bubble_low", "bubble_high",
 * "bubble_formula", "bubble_verdict" (gs_bubble_verdict_name, null when
 * unknown), "imbalance", "imbalance_low", "imbalance_high",
 * "bubble_expected", "bubble_expected_verdict". The one
 * spelling of a bubble in JSON: llm's document (llm.pipeline) and the
 * report's rows (pipeline) both write it. */
void gs_bubble_to_json(gs_json_build *b, cJSON *o, const gs_bubble *x);

#endif
