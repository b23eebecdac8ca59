/* The arrival skew of one measurement (docs/stragglers.md, "Arrival
 * skew"): the summary its document keeps in "arrival", read into the row
 * with the floor of a host whose ranks outnumber its cores, and the late
 * rank named by core/arrival's rule, so that a report and the rule can
 * never disagree. */
#include <math.h>
#include <string.h>

#include "core/arrival.h"
#include "core/check.h"
#include "core/json.h"
#include "report/analyze/internal.h"

/* See internal.h. */
gs_status gs_report_arrival_read(const cJSON *doc, const cJSON *m, const char *file,
                                 gs_report_row *row) {
  gs_report_arrival *a = &row->arrival;
  a->present = 0;
  a->named = -1;
  const cJSON *member = gs_json_member(m, "arrival");
  if (!member || cJSON_IsNull(member)) return GS_OK;
  if (!cJSON_IsObject(member))
    return gs_error(GS_ERR_FORMAT, "%s: a measurement's arrival is %s, not an object", file,
                    gs_json_type_name(member));
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
