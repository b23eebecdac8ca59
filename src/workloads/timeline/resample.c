/* resample workload: one time series per batch element, [B,S,D] with its
 * sample times [B,S], resampled onto target times [B,T] -> [B,T,D] by
 * search and linear interpolation in float32. The shared life cycle is in
 * timeline_workload.c; rules in docs/workloads/resample.md. */
#include <stdlib.h>
#include <string.h>

#include "workloads/timeline/resample.h"
#include "workloads/timeline/timeline_workload.h"

typedef struct {
  gs_timeline_problem problem; /* first: the shared functions read it through opts */
  uint64_t samples;
  uint64_t dims;
  gs_option table[GS_TIMELINE_COMMON_OPTIONS + 3];
} gs_resample_options;

static gs_status resample_options_check(void *opts);

static void *resample_options_new(void) {
  gs_resample_options *o = calloc(1, sizeof *o);
  if (o == NULL) return NULL;
  gs_timeline_problem_init(&o->problem, o->table);
  // The benchmark configuration of docs/workloads/resample.md.
  o->problem.batch = 32;
  o->problem.targets = 256;
  o->samples = 500;
  o->dims = 256;
  o->table[GS_TIMELINE_COMMON_OPTIONS] = (gs_option){
      .name = "samples", .kind = GS_OPT_COUNT, .target = &o->samples, .min = 1,
      .max = GS_TIMELINE_MAX_SAMPLES, .metavar = "S",
      .help = "source samples per batch element (1: every target holds that sample)"};
  o->table[GS_TIMELINE_COMMON_OPTIONS + 1] = (gs_option){
      .name = "dims", .kind = GS_OPT_COUNT, .target = &o->dims, .min = 1,
      .max = GS_TIMELINE_MAX_DIMS, .metavar = "D", .help = "values per sample"};
  o->table[GS_TIMELINE_COMMON_OPTIONS + 2] = (gs_option){.kind = GS_OPT_END};
  // The shape follows from the options; fill it for the defaults too, since
  // suite measures them without parsing anything.
  if (resample_options_check(o) != GS_OK) {
    free(o);
    return NULL;
  }
  return o;
}

static void resample_options_free(void *opts) { free(opts); }

static const gs_option *resample_options_table(void *opts) {
  return ((gs_resample_options *)opts)->table;
}

static gs_status resample_options_check(void *opts) {
  gs_resample_options *o = opts;
  o->problem.shape.n_streams = 1;
  o->problem.shape.streams[0] = (gs_timeline_stream){(uint32_t)o->samples, (uint32_t)o->dims};
  return gs_timeline_problem_check(&o->problem, "--samples/--dims");
}

static cJSON *resample_options_to_json(const void *opts) {
  const gs_resample_options *o = opts;
  gs_json_build b = {0};
  cJSON *j = gs_json_check(&b, cJSON_CreateObject());
  gs_timeline_problem_to_json(&b, &o->problem, j);
  gs_json_put_number(&b, j, "samples", (double)o->samples);
  gs_json_put_number(&b, j, "dims", (double)o->dims);
  return gs_json_build_finish(&b, j);
}

const gs_workload gs_workload_resample = {
    .key = "resample",
    .summary = "time series [B,S,D] onto target times [B,T]: search + linear interpolation",
    .unit_name = "batch elements",
    .unit_option = "--batch",
    .item_unit = "values",
    .options_new = resample_options_new,
    .options_free = resample_options_free,
    .options_table = resample_options_table,
    .options_check = resample_options_check,
    .options_to_json = resample_options_to_json,
    .work_units = gs_timeline_work_units,
    .cost = gs_timeline_cost,
    .setup = gs_timeline_setup,
    .step = gs_timeline_step,
    .verify = gs_timeline_verify,
    .teardown = gs_timeline_teardown,
};
