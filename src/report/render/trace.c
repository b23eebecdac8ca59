/* The report's timeline table (docs/timeline.md): for a
 * measurement whose document names a trace, where each rank's time went
 * over the traced steps, so that idle GPUs and stragglers show in text. */
#include <stdio.h>

#include "core/check.h"
#include "core/format.h"
#include "report/render/internal.h"
#include "report/analyze/timeline.h"

gs_status gs_render_timeline(gs_render_writer *w, const gs_report *r, const gs_report_row *row) {
  gs_report_timeline t;
  GS_TRY(gs_report_timeline_load(r, row, &t));
  if (!t.present) return GS_OK;
  if (t.problem[0]) {
    gs_render_block(w, 0, "    ", "Timeline: none (%s)", t.problem);
    gs_report_timeline_free(&t);
    return GS_OK;
  }
  char window[GS_RENDER_CELL];
  gs_format_seconds(t.end - t.begin, window, sizeof window);
  gs_render_block(w, -1, "    ",
                  "Timeline of steps %d-%d of run %d (%s, trace %s, device lanes: %s): share "
                  "of the window per rank; idle = neither computing, communicating nor copying",
                  t.first_step, t.last_step, t.run, window, t.file, t.view.source);
  static const char *const head[] = {"rank", "lanes", "compute", "communication", "copy",
                                     "waiting", "idle"};
  static const int left[] = {0, 1, 0, 0, 0, 0, 0};
  gs_render_table table;
  gs_render_table_init(&table, 7, head, left);
  for (int k = 0; k < t.n_ranks; k++) {
    const gs_report_timeline_rank *x = &t.ranks[k];
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&table);
    gs_render_cellf(c[0], "%d", x->rank);
    gs_render_cellf(c[1], "%s", x->busy_lane_first ? "device" : "host");
    gs_render_pct(c[2], x->compute);
    gs_render_pct(c[3], x->comm);
    gs_render_pct(c[4], x->copy);
    gs_render_pct(c[5], x->wait);
    gs_render_pct(c[6], x->idle);
  }
  gs_status st = gs_render_table_done(w, &table, "      ");
  gs_report_timeline_free(&t);
  return st;
}
