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

/* See internal.h. */
/* The most ranks of `row` on one host: its world over the hosts its ranks
 * name (all on one host when none is named). */
static int ranks_per_host(const gs_report_row *row) {
  size_t hosts = 0;
  for (size_t k = 0; k < row->n_ranks; k++) {
    const char *h = row->ranks[k].host;
    size_t j = 0;
    while (h && j < k && !(row->ranks[j].host && strcmp(row->ranks[j].host, h) == 0)) j++;
    hosts += h && j == k;
  }
  if (hosts == 0) hosts = 1;
  return (int)(((size_t)row->world_size + hosts - 1) / hosts);
}

/* Member `name` of group `g` of `file`'s "arrival_groups": an integer
 * from 0 to GS_MAX_RANKS - 1, else GS_ERR_FORMAT. */
static gs_status group_index(const cJSON *g, const char *name, const char *file, int *out) {
  const double v = gs_json_number_member(g, name);
  if (!(v >= 0.0 && v < GS_MAX_RANKS) || v != floor(v))
    return gs_error(GS_ERR_FORMAT, "%s: an arrival group's %s is missing or not a rank's index",
                    file, name);
  *out = (int)v;
  return GS_OK;
}

/* Member k of a group's "global_ranks": an integer from 0 to
 * GS_MAX_RANKS - 1, else GS_ERR_FORMAT. */
static gs_status rank_at(const cJSON *x, const char *file, int *out) {
  const double v = cJSON_IsNumber(x) ? x->valuedouble : NAN;
  if (!(v >= 0.0 && v < GS_MAX_RANKS) || v != floor(v))
    return gs_error(GS_ERR_FORMAT, "%s: an arrival group's global_ranks holds a non-rank", file);
  *out = (int)v;
  return GS_OK;
}

/* The groups of "arrival_groups" (`member`, an array) into a->groups,
 * their floor a->summary.floor's. */
static gs_status read_groups(const cJSON *member, const char *file, gs_report_arrival *a) {
  const int n = cJSON_GetArraySize(member);
  if (n < 1 || n > GS_MAX_RANKS)
    return gs_error(GS_ERR_FORMAT, "%s: a measurement's arrival_groups holds %d groups", file, n);
  a->groups = calloc((size_t)n, sizeof *a->groups);
  if (!a->groups) return gs_error(GS_ERR_NOMEM, "cannot read %d arrival groups", n);
  const cJSON *g;
  cJSON_ArrayForEach(g, member) {
    gs_report_arrival_group *to = &a->groups[a->n_groups];
    if (!cJSON_IsObject(g))
      return gs_error(GS_ERR_FORMAT, "%s: an arrival group is %s, not an object", file,
                      gs_json_type_name(g));
    GS_TRY(group_index(g, "replica", file, &to->replica));
    GS_TRY(group_index(g, "stage", file, &to->stage));
    GS_TRY(gs_arrival_summary_from_json(g, file, &to->summary));
    const cJSON *global = gs_json_member(g, "global_ranks");
    if (!cJSON_IsArray(global) || (size_t)cJSON_GetArraySize(global) != to->summary.n_ranks)
      return gs_error(GS_ERR_FORMAT, "%s: an arrival group's global_ranks is not one rank per "
                      "member", file);
    for (size_t k = 0; k < to->summary.n_ranks; k++)
      GS_TRY(rank_at(cJSON_GetArrayItem(global, (int)k), file, &to->members[k]));
    to->summary.floor = a->summary.floor;
    to->named = gs_arrival_named(&to->summary);
    a->n_groups++;
  }
  return GS_OK;
}

/* See internal.h. */
gs_status gs_report_arrival_read(const cJSON *doc, const cJSON *m, const char *file,
                                 gs_report_row *row) {
  gs_report_arrival *a = &row->arrival;
  a->present = 0;
  a->named = -1;
  a->n_groups = 0;
  a->groups = NULL;
  const cJSON *member = gs_json_member(m, "arrival");
  const cJSON *groups = gs_json_member(m, "arrival_groups");
  if (groups && !cJSON_IsNull(groups)) {
    if (!cJSON_IsArray(groups))
      return gs_error(GS_ERR_FORMAT, "%s: a measurement's arrival_groups is %s, not an array",
                      file, gs_json_type_name(groups));
    member = cJSON_GetArrayItem(groups, 0); /* clock and alignment: the groups share them */
  } else {
    groups = NULL;
  }
  if (!member || cJSON_IsNull(member)) return GS_OK;
  if (!cJSON_IsObject(member))
    return gs_error(GS_ERR_FORMAT, "%s: a measurement's arrival is %s, not an object", file,
                    gs_json_type_name(member));
  GS_TRY(gs_arrival_summary_from_json(member, file, &a->summary));
  a->clock = gs_json_string_member(member, "clock", NULL);
  a->alignment = gs_json_string_member(member, "alignment", NULL);
  const double cores = gs_json_number_member(
      gs_json_member(gs_json_member(doc, "environment"), "cpu"), "logical_cores");
  a->ranks_per_host = ranks_per_host(row);
  a->cores = isfinite(cores) && cores >= 1.0 && cores < 1e6 ? (int)cores : 0;
  a->summary.floor = gs_arrival_floor(a->clock, a->ranks_per_host, a->cores);
  a->named = gs_arrival_named(&a->summary);
  if (groups) {
    a->named = -1; /* each group names its own */
    GS_TRY(read_groups(groups, file, a));
  }
  a->present = 1;
  return GS_OK;
}
