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

/* See row.h. */
int gs_report_point_same(const gs_report_row *x, const gs_report_row *y) {
  const gs_report_collective *a = &x->collective, *b = &y->collective;
  if (x->world_size != y->world_size || a->present != b->present) return 0;
  if (!a->present) return 1;
  // NaN == NaN is false: an unrecorded size or root matches only itself.
  int same_bytes = a->bytes == b->bytes || (isnan(a->bytes) && isnan(b->bytes));
  int same_root = a->root == b->root || (isnan(a->root) && isnan(b->root));
  return same_bytes && same_root && a->in_place == b->in_place && same_text(a->op, b->op) &&
         same_text(a->dtype, b->dtype) && same_text(a->redop, b->redop);
}

/* See row.h. */
const char *gs_report_coll_form(int in_place) {
  return in_place == 1 ? "in-place" : in_place == 0 ? "out-of-place" : "-";
}

/* See row.h. */
void gs_report_point_name(const gs_report_row *row, char *out, size_t size) {
  const gs_report_collective *c = &row->collective;
  out[0] = '\0';
  if (!c->present || size == 0) return;
  char root[32] = "";
  if (isfinite(c->root)) snprintf(root, sizeof root, " root %.0f", c->root);
  char bytes[32];
  gs_format_value(GS_UNIT_BYTES, c->bytes, bytes, sizeof bytes);
  snprintf(out, size, "%s %s %s%s%s%s %s", c->op ? c->op : "coll", bytes, c->dtype ? c->dtype : "-",
           c->redop ? " " : "", c->redop ? c->redop : "", root, gs_report_coll_form(c->in_place));
}
