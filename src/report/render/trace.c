/* The report's timeline table (docs/timeline.md): for a
 * measurement whose document names a trace, where each rank's time went
 * over the traced steps, so that idle GPUs and stragglers show in text. */
#include <stdio.h>

#include "core/check.h"
#include "core/format.h"
#include "report/render/internal.h"
#include "report/analyze/timeline.h"

/* The timeline's communication beside the why-not split's: the first is
 * the time communication ran, hidden under compute or not; only its
 * exposed part is what the split counts (docs/timeline.md). */
static void reconcile(gs_render_writer *w, const gs_report_row *row, double comm,
                      double exposed) {
  const gs_report_breakdown *b = &row->breakdown;
  char split[160] = "";
  if (b->available && b->comm_measured && b->step > 0)
    snprintf(split, sizeof split, "; the why-not split's exposed communication (the runner's "
             "communication timing over every timed step) is %.1f%% of the step", 100.0 * b->comm / b->step);
  gs_render_block(w, 0, "      ", "Communication ran %.1f%% of the window (mean over ranks), "
                  "%.1f%% of it under compute; exposed (no compute beside it) %.1f%% of the "
                  "window%s. The first counts overlapped transfers, which cost no step time; "
                  "only the exposed part lengthens the step.", 100.0 * comm,
                  100.0 * (comm - exposed) / comm, 100.0 * exposed, split);
}

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
  static const char *const head[] = {"rank", "lanes", "compute", "communication", "exposed",
                                     "copy", "waiting", "idle"};
  static const int left[] = {0, 1, 0, 0, 0, 0, 0, 0};
  gs_render_table table;
  gs_render_table_init(&table, 8, head, left);
  double comm = 0, exposed = 0;
  for (int k = 0; k < t.n_ranks; k++) {
    const gs_report_timeline_rank *x = &t.ranks[k];
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&table);
    gs_render_cellf(c[0], "%d", x->rank);
    gs_render_cellf(c[1], "%s", x->busy_lane_first ? "device" : "host");
    gs_render_pct(c[2], x->compute);
    gs_render_pct(c[3], x->comm);
    gs_render_pct(c[4], x->comm - x->comm_overlapped);
    gs_render_pct(c[5], x->copy);
    gs_render_pct(c[6], x->wait);
    gs_render_pct(c[7], x->idle);
    comm += x->comm / t.n_ranks;
    exposed += (x->comm - x->comm_overlapped) / t.n_ranks;
  }
  gs_status st = gs_render_table_done(w, &table, "      ");
  if (st == GS_OK && comm > 0) reconcile(w, row, comm, exposed);
  gs_report_timeline_free(&t);
  return st;
}
