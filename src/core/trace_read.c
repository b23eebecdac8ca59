/* Reads a trace file written by core/trace_model.c back into the spans of one
 * measurement, for the report's timeline (docs/timeline.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/check.h"
#include "core/file.h"
#include "core/trace_model.h"

/* Larger trace files are refused: --trace-steps keeps real ones far below. */
#define GS_TRACE_MAX_BYTES (512ull << 20)

static double number_of(const cJSON *obj, const char *name, double fallback) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);
  return cJSON_IsNumber(item) ? item->valuedouble : fallback;
}

/* The view's rank `rank`, created (with room up to it) when new. */
static gs_trace_view_rank *view_rank(gs_trace_view *v, int rank) {
  if (rank < 0 || rank >= GS_MAX_RANKS) return NULL;
  if (rank >= v->n_ranks) {
    gs_trace_view_rank *grown = realloc(v->ranks, (size_t)(rank + 1) * sizeof *grown);
    if (!grown) return NULL;
    memset(grown + v->n_ranks, 0, (size_t)(rank + 1 - v->n_ranks) * sizeof *grown);
    for (int k = v->n_ranks; k <= rank; k++) {
      grown[k].rank = k;
      grown[k].device = -1;
    }
    v->ranks = grown;
    v->n_ranks = rank + 1;
  }
  return &v->ranks[rank];
}

static int span_by_begin(const void *a, const void *b) {
  const gs_trace_span *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return (x->end < y->end) - (x->end > y->end);
}

/* Lane names of measurement `m`: "thread_name" metadata by pid and tid. */
static void name_lanes(gs_trace_view *v, const cJSON *events, int m) {
  const cJSON *e = NULL;
  cJSON_ArrayForEach(e, events) {
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "M") != 0 || !cJSON_IsString(name) ||
        strcmp(name->valuestring, "thread_name") != 0)
      continue;
    int pid = (int)number_of(e, "pid", -1), tid = (int)number_of(e, "tid", -1);
    if (pid < 1 || (pid - 1) / 1000 != m || tid < 0 || tid >= GS_TRACE_LANES) continue;
    gs_trace_view_rank *r = view_rank(v, (pid - 1) % 1000);
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
    const cJSON *lane = cJSON_GetObjectItemCaseSensitive(args, "name");
    if (!r || !cJSON_IsString(lane)) continue;
    snprintf(r->lanes[tid].name, sizeof r->lanes[tid].name, "%s", lane->valuestring);
    if (tid >= r->n_lanes) r->n_lanes = tid + 1;
  }
}

static gs_status add_event(gs_trace_view *v, const cJSON *e, int m, const char *path) {
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
  if ((int)number_of(args, "measurement", -1) != m) return GS_OK;
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
  const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
  double ts = number_of(e, "ts", NAN), dur = number_of(e, "dur", NAN);
  int tid = (int)number_of(e, "tid", -1), rank = (int)number_of(args, "rank", -1);
  int kind = cJSON_IsString(cat) ? gs_trace_kind_parse(cat->valuestring) : -1;
  if (!cJSON_IsString(name) || kind < 0 || !isfinite(ts) || !isfinite(dur) || dur < 0 ||
      tid < 0 || tid >= GS_TRACE_LANES || rank < 0 || rank >= GS_MAX_RANKS)
    return gs_error(GS_ERR_FORMAT, "%s: a malformed span (name, cat, ts, dur, tid or rank)", path);
  gs_trace_view_rank *r = view_rank(v, rank);
  if (!r) return gs_error(GS_ERR_NOMEM, "cannot allocate the timeline of %s", path);
  r->device = (int)number_of(args, "device", -1);
  if (tid >= r->n_lanes) r->n_lanes = tid + 1;
  gs_trace_span s = {.begin = ts * 1e-6, .end = (ts + dur) * 1e-6, .kind = (uint8_t)kind,
                     .run = (int32_t)number_of(args, "run", -1),
                     .step = (int32_t)number_of(args, "step", -1),
                     .index = (int64_t)number_of(args, "index", -1)};
  snprintf(s.name, sizeof s.name, "%s", name->valuestring);
  return gs_trace_lane_push(&r->lanes[tid], &s);
}

gs_status gs_trace_read(const char *path, int measurement, gs_trace_view *out) {
  memset(out, 0, sizeof *out);
  char *data = NULL;
  size_t size = 0;
  GS_TRY(gs_file_read(path, GS_TRACE_MAX_BYTES, "trace files", &data, &size));
  cJSON *doc = cJSON_ParseWithLength(data, size);
  free(data);
  if (!doc) return gs_error(GS_ERR_FORMAT, "%s: not valid JSON", path);
  const cJSON *other = cJSON_GetObjectItemCaseSensitive(doc, "otherData");
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(other, "schema");
  const cJSON *events = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
  gs_status st = GS_OK;
  if (!cJSON_IsString(schema) || strcmp(schema->valuestring, "gpuscale/trace/v1") != 0 ||
      !cJSON_IsArray(events))
    st = gs_error(GS_ERR_FORMAT, "%s: not a gpuscale trace (otherData.schema "
                  "gpuscale/trace/v1 and traceEvents expected)", path);
  if (st == GS_OK) {
    const cJSON *source = cJSON_GetObjectItemCaseSensitive(other, "device_source");
    snprintf(out->source, sizeof out->source, "%s",
             cJSON_IsString(source) ? source->valuestring : "?");
    out->steps = (uint64_t)number_of(other, "steps_per_run", 0);
    const cJSON *e = NULL;
    cJSON_ArrayForEach(e, events) {
      const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
      if (cJSON_IsString(ph) && strcmp(ph->valuestring, "X") == 0)
        st = add_event(out, e, measurement, path);
      if (st != GS_OK) break;
    }
  }
  if (st == GS_OK) name_lanes(out, events, measurement);
  cJSON_Delete(doc);
  if (st != GS_OK) {
    gs_trace_view_free(out);
    return st;
  }
  for (int k = 0; k < out->n_ranks; k++)
    for (int l = 0; l < out->ranks[k].n_lanes; l++)
      if (out->ranks[k].lanes[l].n)
        qsort(out->ranks[k].lanes[l].spans, out->ranks[k].lanes[l].n, sizeof(gs_trace_span),
              span_by_begin);
  return GS_OK;
}

void gs_trace_view_free(gs_trace_view *v) {
  for (int k = 0; k < v->n_ranks; k++)
    for (int l = 0; l < GS_TRACE_LANES; l++) free(v->ranks[k].lanes[l].spans);
  free(v->ranks);
  memset(v, 0, sizeof *v);
}
