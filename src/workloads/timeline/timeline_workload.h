/* What the resample and fuse workloads share: the options common to both
 * (batch, targets, dtype, generated edge cases) and the whole per-rank
 * life cycle (setup, step, verify, teardown, cost). Each workload's options
 * struct starts with a gs_timeline_problem, so these functions take the
 * workload's options pointer as they are. */
#ifndef GS_TIMELINE_WORKLOAD_H
#define GS_TIMELINE_WORKLOAD_H

#include <cjson/cJSON.h>

#include "core/json.h"
#include "core/options.h"
#include "workloads/timeline/timeline.h"
#include "workloads/workload.h"

#define GS_TIMELINE_COMMON_OPTIONS 5

typedef struct {
  uint64_t batch;       /* B: the unit split over ranks */
  uint64_t targets;     /* T */
  int dtype;            /* index into gs_timeline_dtype_choices */
  double duplicates;    /* fraction of source times equal to the one before */
  double outside;       /* fraction of targets outside the source span */
  gs_timeline_shape shape; /* filled by gs_timeline_problem_check */
} gs_timeline_problem;

extern const char *const gs_timeline_dtype_choices[]; /* "float32", "bfloat16" */

/* Sets defaults (B=4, T=50, bfloat16, 1% duplicates, 5% outside) and writes
 * the GS_TIMELINE_COMMON_OPTIONS entries bound to `p` into `table`. */
void gs_timeline_problem_init(gs_timeline_problem *p, gs_option *table);

/* After the workload set p->shape.streams: fills the rest of the shape and
 * checks sizes (limits of timeline.h, 16 GiB per batch element, products
 * checked for overflow). GS_ERR_USAGE naming the option; `stream_options`
 * names the workload's options that set the streams (e.g. "--streams"). */
gs_status gs_timeline_problem_check(gs_timeline_problem *p, const char *stream_options);

/* Adds the common options' values to a workload's options JSON, through
 * build `b` (a failed add marks it). */
void gs_timeline_problem_to_json(gs_json_build *b, const gs_timeline_problem *p, cJSON *json);

/* The vtable entries both workloads use as they are. */
uint64_t gs_timeline_work_units(const void *opts);
void gs_timeline_cost(const void *opts, uint64_t units, gs_cost *out);
gs_status gs_timeline_setup(const void *opts, const gs_rank_context *ctx, void **state);
gs_status gs_timeline_step(void *state);
gs_status gs_timeline_verify(void *state, gs_verification *out);
void gs_timeline_teardown(void *state);

#endif
