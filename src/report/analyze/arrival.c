/* The arrival skew of one measurement (docs/stragglers.md, "Arrival
 * skew"): the summary its document keeps in "arrival", read into the row
 * with the floor of a host whose ranks outnumber its cores, and the late
 * rank named by core/arrival's rule, so that a report and the rule can
 * never disagree. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/arrival.h"
#include "core/check.h"
#include "core/json.h"
#include "report/analyze/internal.h"

/* One summary of `member` (an "arrival" object, or one of
 * "arrival_groups") into *a, with the floor of `row`'s busiest host. */
static gs_status read_summary(const cJSON *doc, const cJSON *member, const char *file,
                              const gs_report_row *row, gs_report_arrival *a) {
  GS_TRY(gs_arrival_summary_from_json(member, file, &a->summary));
  a->clock = gs_json_string_member(member, "clock", NULL);
  a->alignment = gs_json_string_member(member, "alignment", NULL);
  const double cores = gs_json_number_member(
      gs_json_member(gs_json_member(doc, "environment"), "cpu"), "logical_cores");
  a->ranks_per_host = gs_report_busiest_host(doc, row, NULL);
  a->cores = isfinite(cores) && cores >= 1.0 && cores < 1e6 ? (int)cores : 0;
  a->summary.floor = gs_arrival_floor(a->clock, a->ranks_per_host, a->cores);
  a->named = gs_arrival_named(&a->summary);
  a->present = 1;
  return GS_OK;
}

/* A group of "arrival_groups": its summary, stage and members' ranks. */
static gs_status read_group(const cJSON *doc, const cJSON *g, const char *file,
                            const gs_report_row *row, gs_report_arrival *a) {
  a->stage = -1;
  a->replica = -1;
  a->named = -1;
  if (!cJSON_IsObject(g))
    return gs_error(GS_ERR_FORMAT, "%s: an arrival group is %s, not an object", file,
                    gs_json_type_name(g));
  GS_TRY(read_summary(doc, g, file, row, a));
  const double stage = gs_json_number_member(g, "stage");
  const cJSON *global = gs_json_member(g, "global_ranks");
  const int n = cJSON_IsArray(global) ? cJSON_GetArraySize(global) : -1;
  if (!(stage >= 0.0 && stage < (double)GS_MAX_RANKS) || n != (int)a->summary.n_ranks)
    return gs_error(GS_ERR_FORMAT, "%s: an arrival group's stage is %g and its global_ranks "
                    "has %d of %zu members", file, stage, n, a->summary.n_ranks);
  a->stage = (int)stage;
  // llm's groups are one replica's shards of a stage: "replica" says which.
  const cJSON *replica = gs_json_member(g, "replica");
  if (replica) {
    const double v = cJSON_IsNumber(replica) ? replica->valuedouble : -1.0;
    if (!(v >= 0.0 && v < (double)GS_MAX_RANKS) || v != floor(v))
      return gs_error(GS_ERR_FORMAT, "%s: arrival group of stage %d: its replica is not a "
                      "replica's index", file, a->stage);
    a->replica = (int)v;
  }
  int k = 0;
  for (const cJSON *r = global->child; r; r = r->next, k++) {
    if (!cJSON_IsNumber(r) || !(r->valuedouble >= 0.0 && r->valuedouble < row->world_size))
      return gs_error(GS_ERR_FORMAT, "%s: arrival group of stage %d: global_ranks[%d] is not "
                      "a rank of the %d", file, a->stage, k, row->world_size);
    a->members[k] = (int)r->valuedouble;
  }
  return GS_OK;
}

/* See internal.h. */
gs_status gs_report_arrival_read(const cJSON *doc, const cJSON *m, const char *file,
                                 gs_report_row *row) {
  gs_report_arrival *a = &row->arrival;
  a->present = 0;
  a->named = -1;
  a->stage = -1;
  a->replica = -1;
  a->n_groups = 0;
  a->groups = NULL;
  const cJSON *groups = gs_json_member(m, "arrival_groups");
  if (groups && !cJSON_IsNull(groups)) {
    if (!cJSON_IsArray(groups))
      return gs_error(GS_ERR_FORMAT, "%s: a measurement's arrival_groups is %s, not an array",
                      file, gs_json_type_name(groups));
    const size_t n = (size_t)cJSON_GetArraySize(groups);
    a->groups = calloc(n ? n : 1, sizeof *a->groups);
    if (!a->groups) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu arrival groups", n);
    for (const cJSON *g = groups->child; g; g = g->next)
      GS_TRY(read_group(doc, g, file, row, &a->groups[a->n_groups++]));
  }
  const cJSON *member = gs_json_member(m, "arrival");
  if (!member || cJSON_IsNull(member)) return GS_OK;
  if (!cJSON_IsObject(member))
    return gs_error(GS_ERR_FORMAT, "%s: a measurement's arrival is %s, not an object", file,
                    gs_json_type_name(member));
  return read_summary(doc, member, file, row, a);
}
