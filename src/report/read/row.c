/* What a row says of itself: the rank marks in words and the point of a
 * row within its series (its world size and, for a collective, the op,
 * message size, data type, reduction, root and in-place form). */
#include "report/read/row.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/format.h"

const char *gs_rank_mark_name(gs_rank_mark mark) {
  switch (mark) {
    case GS_MARK_GOOD: return "good";
    case GS_MARK_MODERATE: return "moderate";
    case GS_MARK_CRITICAL: return "critical";
    default: return "n/a";
  }
}

static int same_text(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

/* See report.h. */
int gs_report_point_same(const gs_report_row *x, const gs_report_row *y) {
  if (x->world_size != y->world_size || x->is_coll != y->is_coll) return 0;
  if (!x->is_coll) return 1;
  // NaN == NaN is false: an unrecorded size or root matches only itself.
  int same_bytes = x->coll_bytes == y->coll_bytes || (isnan(x->coll_bytes) && isnan(y->coll_bytes));
  int same_root = x->coll_root == y->coll_root || (isnan(x->coll_root) && isnan(y->coll_root));
  return same_bytes && same_root && x->coll_in_place == y->coll_in_place &&
         same_text(x->coll_op, y->coll_op) && same_text(x->coll_dtype, y->coll_dtype) &&
         same_text(x->coll_redop, y->coll_redop);
}

/* See report.h. */
const char *gs_report_coll_form(int in_place) {
  return in_place == 1 ? "in-place" : in_place == 0 ? "out-of-place" : "-";
}

/* See report.h. */
void gs_report_point_name(const gs_report_row *row, char *out, size_t size) {
  out[0] = '\0';
  if (!row->is_coll || size == 0) return;
  char root[32] = "";
  if (isfinite(row->coll_root)) snprintf(root, sizeof root, " root %.0f", row->coll_root);
  char bytes[32];
  gs_format_value(GS_UNIT_BYTES, row->coll_bytes, bytes, sizeof bytes);
  snprintf(out, size, "%s %s %s%s%s%s %s", row->coll_op ? row->coll_op : "coll",
           bytes, row->coll_dtype ? row->coll_dtype : "-", row->coll_redop ? " " : "",
           row->coll_redop ? row->coll_redop : "", root, gs_report_coll_form(row->coll_in_place));
}
