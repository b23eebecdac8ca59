/* Pipeline parallelism of mlp (--pp): its options, the split of the
 * layers into stages (balanced by each layer's cost, or the user's
 * boundaries), the placement of ranks (replica-major: rank = replica *
 * stages + stage) and the split of a replica's batch into micro-batches.
 * Pure functions, unit-tested in tests/test_mlp_pipeline.c; the stage's
 * step is in mlp_pp.c. Rules: docs/workloads/mlp.md, "Pipeline
 * parallelism". */
#ifndef GS_MLP_PIPELINE_H
#define GS_MLP_PIPELINE_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/json.h"
#include "core/options.h"
#include "core/parse.h"
#include "core/status.h"
#include "workloads/mlp/mlp.h"
#include "workloads/mlp/schedule.h"

/* The options, bound to a workload's option table by gs_mlp_pp_options_bind. */
typedef struct {
  uint64_t stages;     /* --pp: 1 = no pipeline */
  uint64_t micro;      /* --micro-batches */
  int schedule;        /* --schedule: gs_pp_schedule */
  gs_u64_list bounds;  /* --stages: first layer of stages 1 .. stages-1 */
  int given_micro, given_schedule, given_bounds;
} gs_mlp_pp_options;

#define GS_MLP_PP_OPTIONS 4 /* entries gs_mlp_pp_options_bind writes */

/* Sets the defaults (no pipeline, 4 micro-batches, 1f1b) and writes the
 * GS_MLP_PP_OPTIONS option entries bound to *p into table[0..3]. */
void gs_mlp_pp_options_bind(gs_mlp_pp_options *p, gs_option *table);

/* Cross-option checks against the model `m`: --micro-batches, --schedule
 * and --stages need --pp above 1; --pp at most the model's layers;
 * --stages takes stages-1 strictly increasing layers in 1 .. layers-1.
 * GS_ERR_USAGE naming the option. */
gs_status gs_mlp_pp_options_check(const gs_mlp_pp_options *p, const gs_mlp_model *m);

/* Adds "pipeline": {stages, micro_batches, schedule, stage_layers} to the
 * options' JSON object `j` (nothing when there is no pipeline). */
void gs_mlp_pp_options_json(gs_json_build *b, cJSON *j, const gs_mlp_pp_options *p,
                            const gs_mlp_model *m);

/* A layer's cost, in multiply-adds per sample of a training step: its
 * forward GEMM, its weight-gradient GEMM and its input-gradient GEMM
 * (3 x in x out), except layer 0, whose input gradient is never computed
 * (2 x in x out; gs_mlp_step_flops counts the step the same way). Without
 * that exception a pipeline's first stage was split as if it cost one
 * input-gradient GEMM more than it does. */
uint64_t gs_mlp_pp_layer_cost(const gs_mlp_model *m, int layer);

/* The first layer of each stage into first[0 .. stages] (first[0] = 0,
 * first[stages] = n_layers, every stage at least one layer): the user's
 * `bounds` when bounds->n > 0, else the contiguous split that minimises
 * the most expensive stage (gs_mlp_pp_layer_cost), the earliest such
 * split in layer order on a tie. 1 <= stages <= n_layers (checked by
 * gs_mlp_pp_options_check). */
void gs_mlp_pp_split(const gs_mlp_model *m, int stages, const gs_u64_list *bounds, int *first);

/* Stage and replica of `rank` with `stages` stages per replica. */
static inline int gs_mlp_pp_stage_of(int rank, int stages) { return rank % stages; }
static inline int gs_mlp_pp_replica_of(int rank, int stages) { return rank / stages; }

/* "pipeline stage S of P, replica D of R" for `rank` of `world`; "" without
 * a pipeline. The workload's rank_role: `options` points at a
 * gs_mlp_pp_options (the first member of mlp's options). */
void gs_mlp_pp_rank_role(const void *options, int rank, int world, char *buf, size_t size);

/* The workload's collective_group: `rank`'s stage when the pipeline has
 * 2 or more replicas (the stage's replicas sum their gradients in a group
 * of their own), else -1 (`options` as gs_mlp_pp_rank_role's). */
int gs_mlp_pp_collective_group(const void *options, int rank, int world);

/* Micro-batch `j` of `micro` over `rows` samples: its first row and its
 * rows (the first rows % micro micro-batches take one more). */
void gs_mlp_pp_micro_rows(uint64_t rows, int micro, int j, uint64_t *first, uint64_t *count);

#endif
