/* fuse workload: several streams recorded at different rates (e.g. camera,
 * joint states, force/IMU), each [B,Si,Di] with times [B,Si], resampled
 * onto one target timeline [B,T] and concatenated into [B,T,sum Di] by one
 * kernel launch. The shared life cycle is in timeline_workload.c; rules in
 * docs/workloads/fuse.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "workloads/timeline/resample.h"
#include "workloads/timeline/timeline_workload.h"

typedef struct {
  gs_timeline_problem problem; /* first: the shared functions read it through opts */
  const char *streams;         /* "SxD,SxD,..." */
  gs_option table[GS_TIMELINE_COMMON_OPTIONS + 2];
} gs_fuse_options;

static gs_status fuse_options_check(void *opts);

static void *fuse_options_new(void) {
  gs_fuse_options *o = calloc(1, sizeof *o);
  if (o == NULL) return NULL;
  gs_timeline_problem_init(&o->problem, o->table);
  // The standard configuration: B=4, T=50, bfloat16 (problem defaults) and
  // a 30 Hz camera embedding, 100 Hz joint states and 200 Hz force/IMU.
  o->streams = "30x512,100x64,200x12";
  o->table[GS_TIMELINE_COMMON_OPTIONS] = (gs_option){
      .name = "streams", .kind = GS_OPT_STRING, .target = &o->streams, .metavar = "SxD,...",
      .help = "streams as samples x dims per batch element, comma-separated (at most 16)"};
  o->table[GS_TIMELINE_COMMON_OPTIONS + 1] = (gs_option){.kind = GS_OPT_END};
  // The shape follows from the options; fill it for the defaults too, since
  // suite measures them without parsing anything.
  if (fuse_options_check(o) != GS_OK) {
    free(o);
    return NULL;
  }
  return o;
}

static void fuse_options_free(void *opts) { free(opts); }

static const gs_option *fuse_options_table(void *opts) { return ((gs_fuse_options *)opts)->table; }

/* Parses "SxD,SxD,..." into shape->streams. */
static gs_status parse_streams(const char *text, gs_timeline_shape *shape) {
  char buf[1024];
  if (strlen(text) >= sizeof buf) return gs_error(GS_ERR_USAGE, "option --streams: list too long");
  snprintf(buf, sizeof buf, "%s", text);
  shape->n_streams = 0;
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *x = strchr(item, 'x');
    if (x == NULL)
      return gs_error(GS_ERR_USAGE, "option --streams: '%s' is not SAMPLESxDIMS (e.g. 30x512)",
                      item);
    *x = '\0';
    if (shape->n_streams == GS_TIMELINE_MAX_STREAMS)
      return gs_error(GS_ERR_USAGE, "option --streams: more than %d streams",
                      GS_TIMELINE_MAX_STREAMS);
    uint64_t samples = 0, dims = 0;
    GS_TRY(gs_parse_count(item, "--streams (samples)", 1, GS_TIMELINE_MAX_SAMPLES, &samples));
    GS_TRY(gs_parse_count(x + 1, "--streams (dims)", 1, GS_TIMELINE_MAX_DIMS, &dims));
    shape->streams[shape->n_streams++] = (gs_timeline_stream){(uint32_t)samples, (uint32_t)dims};
  }
  if (shape->n_streams == 0) return gs_error(GS_ERR_USAGE, "option --streams: no stream given");
  return GS_OK;
}

static gs_status fuse_options_check(void *opts) {
  gs_fuse_options *o = opts;
  GS_TRY(parse_streams(o->streams, &o->problem.shape));
  return gs_timeline_problem_check(&o->problem, "--streams");
}

static cJSON *fuse_options_to_json(const void *opts) {
  const gs_fuse_options *o = opts;
  gs_json_build b = {0};
  cJSON *j = gs_json_check(&b, cJSON_CreateObject());
  gs_timeline_problem_to_json(&b, &o->problem, j);
  cJSON *streams = gs_json_put_array(&b, j, "streams");
  for (size_t s = 0; !b.failed && s < o->problem.shape.n_streams; s++) {
    cJSON *one = gs_json_check(&b, cJSON_CreateObject());
    gs_json_put_number(&b, one, "samples", o->problem.shape.streams[s].samples);
    gs_json_put_number(&b, one, "dims", o->problem.shape.streams[s].dims);
    gs_json_append(&b, streams, one);
  }
  gs_json_put_number(&b, j, "width", (double)gs_timeline_out_dims(&o->problem.shape));
  return gs_json_build_finish(&b, j);
}

const gs_workload gs_workload_fuse = {
    .key = "fuse",
    .summary = "several streams at different rates onto one timeline, concatenated (one kernel)",
    .unit_name = "batch elements",
    .unit_option = "--batch",
    .item_unit = "values",
    .options_new = fuse_options_new,
    .options_free = fuse_options_free,
    .options_table = fuse_options_table,
    .options_check = fuse_options_check,
    .options_to_json = fuse_options_to_json,
    .work_units = gs_timeline_work_units,
    .cost = gs_timeline_cost,
    .setup = gs_timeline_setup,
    .step = gs_timeline_step,
    .verify = gs_timeline_verify,
    .teardown = gs_timeline_teardown,
};
