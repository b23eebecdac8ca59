/* mlp workload: its options (parsed, checked, as JSON), the model they
 * describe, the batch-size variants and the cost of a step, for the
 * workload's descriptor and its ranks (mlp.c). */
#ifndef GS_MLP_OPTIONS_H
#define GS_MLP_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/options.h"
#include "core/status.h"
#include "workloads/mlp/mlp.h"
#include "workloads/mlp/mlp_pp.h"
#include "workloads/workload.h"

typedef struct {
  gs_mlp_pp_options pp;            /* first: gs_mlp_pp_rank_role reads it */
  int preset;
  gs_u64_list layers;
  double dropout;
  uint64_t batch;
  gs_u64_list batch_sizes;
  uint64_t samples;
  int precision;
  double lr;
  uint64_t bucket_kb;
  uint64_t verify_rows;
  double verify_corrupt;           /* test: the largest gradient element times this before the check */
  int no_graph;
  const char *data_path;
  int given_layers, given_dropout, given_batch, given_batch_sizes, given_samples, given_data;
  float *file_x, *file_y;          /* the --data file, loaded by options_check */
  uint64_t file_n;
  gs_option table[15 + GS_MLP_PP_OPTIONS];
} gs_mlp_options;

/* Names of gs_mlp_precision, as --precision takes them. */
extern const char *const gs_mlp_precision_choices[];

void *gs_mlp_options_new(void);
void gs_mlp_options_free(void *opts);
const gs_option *gs_mlp_options_table(void *opts);
/* Cross-option checks, the --data file's loading, the size limits. */
gs_status gs_mlp_options_check(void *opts);
cJSON *gs_mlp_options_to_json(const void *opts);
/* The model of checked options. */
void gs_mlp_model_from_options(const gs_mlp_options *o, gs_mlp_model *m);
/* gs_workload.overlaps_collectives: data parallel only. */
int gs_mlp_overlaps_collectives(const void *opts);
size_t gs_mlp_variant_count(const void *opts);
void gs_mlp_variant_select(void *opts, size_t index, char *name, size_t name_size);
uint64_t gs_mlp_work_units(const void *opts);
void gs_mlp_cost(const void *opts, uint64_t units, gs_cost *out);

#endif
