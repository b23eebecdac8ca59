/* The table of workloads, by stable key. Add a workload here once. */
#include <string.h>

#include "workloads/llm/llm_options.h"
#include "workloads/mlp/mlp.h"
#include "workloads/timeline/resample.h"
#include "workloads/voxelize/voxelize.h"
#include "workloads/workload.h"

static const gs_workload *const registry[] = {
    &gs_workload_voxelize,
    &gs_workload_resample,
    &gs_workload_fuse,
    &gs_workload_mlp,
    &gs_workload_llm,
};

const gs_workload *gs_workload_find(const char *key) {
  for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
    if (strcmp(registry[i]->key, key) == 0) return registry[i];
  return NULL;
}

const gs_workload *const *gs_workload_list(size_t *count) {
  *count = sizeof registry / sizeof registry[0];
  return registry;
}
