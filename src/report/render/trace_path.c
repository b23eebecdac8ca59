/* The critical path section of the trace report (trace_path.h): a
 * sentence naming what bound the steps, a table per step (its time, the
 * rank and phase that bound it, the phases' shares, the ranks on the
 * path) and one per rank and phase over every step. */
#include "report/render/trace_path.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/format.h"

static const gs_trace_rank_stats *rank_of(const gs_trace_stats *s, const gs_trace_cpath *p,
                                          int i) {
  return &s->ranks[p->first_rank + (size_t)i];
}

/* The two ranks with the most time on a step's path, with their shares. */
static void ranks_cell(char *cell, const gs_trace_stats *s, const gs_trace_cpath *p,
                       const double *us, double len) {
  int best[2] = {-1, -1};
  double t[2] = {0, 0};
  for (size_t r = 0; r < p->n_ranks; r++) {
    double sum = 0;
    for (int ph = 0; ph < GS_CP_PHASES; ph++) sum += us[r * GS_CP_PHASES + (size_t)ph];
    if (sum > t[0]) {
      best[1] = best[0];
      t[1] = t[0];
      best[0] = (int)r;
      t[0] = sum;
    } else if (sum > t[1]) {
      best[1] = (int)r;
      t[1] = sum;
    }
  }
  if (best[0] < 0 || !(len > 0)) {
    gs_render_cellf(cell, "-");
  } else if (best[1] < 0) {
    gs_render_cellf(cell, "%s %.0f%%", rank_of(s, p, best[0])->label, 100 * t[0] / len);
  } else {
    gs_render_cellf(cell, "%s %.0f%%, %s %.0f%%", rank_of(s, p, best[0])->label,
                    100 * t[0] / len, rank_of(s, p, best[1])->label, 100 * t[1] / len);
  }
}

/* The row of one step (or of the sum: `step` NULL). */
static void step_row(char (*c)[GS_RENDER_CELL], const gs_trace_stats *s, const gs_trace_cpath *p,
                     const gs_trace_cpath_step *st) {
  const double *us = st ? st->us : p->us;
  double len = st ? st->end_us - st->start_us : p->total_us;
  if (!st) gs_render_cellf(c[0], "all %zu", p->n_steps);
  else if (st->step >= 0 && !rank_of(s, p, 0)->gpuscale)
    gs_render_cellf(c[0], "%lld", (long long)st->step);
  else if (st->step >= 0)
    gs_render_cellf(c[0], "run %lld step %lld", (long long)(st->step >> 16),
                    (long long)(st->step & 0xffff));
  else gs_render_cellf(c[0], "whole trace");
  gs_render_time(c[1], len * 1e-6);
  int br = st ? st->bound_rank : p->bound_rank, bp = st ? st->bound_phase : p->bound_phase;
  gs_render_cellf(c[2], "%s %s", rank_of(s, p, br)->label, gs_trace_phase_name(bp));
  gs_render_pct(c[3], st ? st->bound_share : p->bound_share);
  for (int ph = 0; ph < GS_CP_PHASES; ph++) {
    double sum = 0;
    for (size_t r = 0; r < p->n_ranks; r++) sum += us[r * GS_CP_PHASES + (size_t)ph];
    gs_render_pct(c[4 + ph], len > 0 ? sum / len : NAN);
  }
  ranks_cell(c[4 + GS_CP_PHASES], s, p, us, len);
}

static gs_status path_tables(gs_render_writer *w, const gs_trace_stats *s,
                             const gs_trace_cpath *p) {
  size_t bound_steps = 0;
  for (size_t i = 0; i < p->n_steps; i++)
    bound_steps += p->steps[i].bound_rank == p->bound_rank &&
                   p->steps[i].bound_phase == p->bound_phase;
  char total[32];
  gs_format_seconds(p->total_us * 1e-6, total, sizeof total);
  gs_render_block(w, 0, "  ", "Over %zu step%s (%s), the path spent %.1f%% in %s's %s, which "
                  "bound %zu of the %zu steps.", p->n_steps, p->n_steps == 1 ? "" : "s", total,
                  100 * p->bound_share, rank_of(s, p, p->bound_rank)->label,
                  gs_trace_phase_name(p->bound_phase), bound_steps, p->n_steps);
  static const char *const head[] = {"step", "time", "bound by", "share", "compute",
                                     "communication", "memcpy", "host/launch", "other wait",
                                     "ranks on the path", "crossings"};
  static const int left[] = {1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0};
  gs_render_table t;
  gs_render_table_init(&t, 11, head, left);
  size_t shown = p->n_steps < GS_TRACE_PATH_TABLE_STEPS ? p->n_steps : GS_TRACE_PATH_TABLE_STEPS;
  for (size_t i = 0; i < shown; i++) {
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    step_row(c, s, p, &p->steps[i]);
    gs_render_cellf(c[10], "%d", p->steps[i].crossings);
  }
  if (p->n_steps > 1) {
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    step_row(c, s, p, NULL);
    int crossings = 0;
    for (size_t i = 0; i < p->n_steps; i++) crossings += p->steps[i].crossings;
    gs_render_cellf(c[10], "%d", crossings);
  }
  gs_status st = gs_render_table_done(w, &t, "  ");
  if (st != GS_OK) return st;
  if (shown < p->n_steps)
    gs_render_block(w, 0, "  ", "The first %zu of %zu steps; every step is in the JSON and CSV "
                    "reports.", shown, p->n_steps);
  static const char *const rhead[] = {"rank", "on the path", "compute", "communication",
                                      "memcpy", "host/launch", "other wait"};
  static const int rleft[] = {1, 0, 0, 0, 0, 0, 0};
  gs_render_block(w, -1, "  ", "Shares of the path's time over every step, by rank and phase");
  gs_render_table_init(&t, 7, rhead, rleft);
  for (size_t r = 0; r < p->n_ranks; r++) {
    const double *us = &p->us[r * GS_CP_PHASES];
    double sum = 0;
    for (int ph = 0; ph < GS_CP_PHASES; ph++) sum += us[ph];
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%s", rank_of(s, p, (int)r)->label);
    gs_render_pct(c[1], p->total_us > 0 ? sum / p->total_us : NAN);
    for (int ph = 0; ph < GS_CP_PHASES; ph++)
      gs_render_pct(c[2 + ph], p->total_us > 0 ? us[ph] / p->total_us : NAN);
  }
  return gs_render_table_done(w, &t, "  ");
}

gs_status gs_trace_path_render_tables(gs_render_writer *w, const gs_trace_stats *s) {
  gs_status st = GS_OK;
  for (size_t i = 0; st == GS_OK && i < s->n_paths; i++) {
    const gs_trace_cpath *p = &s->paths[i];
    if (p->n_steps == 0) continue;
    if (s->n_paths > 1) gs_render_block(w, 2, "", "Critical path: measurement %d", p->group);
    else gs_render_block(w, 2, "", "Critical path");
    if (i == 0)
      gs_render_block(w, 0, "  ", "Walked back from each step's last GPU event: an event's "
                      "time goes to its rank and phase; at a collective another rank entered "
                      "later, the path moves to that rank (the collective could end only after "
                      "it entered); before an event, the gap since the rank's last finished GPU "
                      "work is host/launch when the launch came after that work (or the gap is "
                      "under %g us), else other wait. A step ends when its last GPU event ends "
                      "on any rank; crossings count the moves between ranks.", s->kernel_wait_us);
    st = path_tables(w, s, p);
  }
  return st;
}

/* The cells of one step (or the sum) as a JSON array of ranks. */
static void json_cells(gs_json_build *b, cJSON *o, const gs_trace_stats *s,
                       const gs_trace_cpath *p, const double *us) {
  cJSON *ranks = gs_json_put_array(b, o, "ranks_us");
  for (size_t r = 0; r < p->n_ranks; r++) {
    cJSON *x = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_number(b, x, "rank", rank_of(s, p, (int)r)->rank);
    for (int ph = 0; ph < GS_CP_PHASES; ph++)
      gs_json_put_number(b, x, gs_trace_phase_key(ph), us[r * GS_CP_PHASES + (size_t)ph]);
    gs_json_append(b, ranks, x);
  }
}

void gs_trace_path_render_json(gs_json_build *b, cJSON *root, const gs_trace_stats *s) {
  cJSON *paths = gs_json_put_array(b, root, "critical_path");
  for (size_t i = 0; i < s->n_paths; i++) {
    const gs_trace_cpath *p = &s->paths[i];
    cJSON *o = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_number(b, o, "group", p->group);
    gs_json_put_number(b, o, "time_us", p->total_us);
    if (p->n_steps) {
      gs_json_put_number(b, o, "bound_rank", rank_of(s, p, p->bound_rank)->rank);
      gs_json_put_string(b, o, "bound_phase", gs_trace_phase_key(p->bound_phase));
      gs_json_put_number(b, o, "bound_share", p->bound_share);
    }
    json_cells(b, o, s, p, p->us);
    cJSON *steps = gs_json_put_array(b, o, "steps");
    for (size_t k = 0; k < p->n_steps; k++) {
      const gs_trace_cpath_step *st = &p->steps[k];
      cJSON *x = gs_json_check(b, cJSON_CreateObject());
      if (st->step >= 0 && rank_of(s, p, 0)->gpuscale) {
        gs_json_put_number(b, x, "run", (double)(st->step >> 16));
        gs_json_put_number(b, x, "step", (double)(st->step & 0xffff));
      } else {
        gs_json_put_number(b, x, "step", (double)st->step);
      }
      gs_json_put_number(b, x, "start_us", st->start_us);
      gs_json_put_number(b, x, "time_us", st->end_us - st->start_us);
      gs_json_put_number(b, x, "bound_rank", rank_of(s, p, st->bound_rank)->rank);
      gs_json_put_string(b, x, "bound_phase", gs_trace_phase_key(st->bound_phase));
      gs_json_put_number(b, x, "bound_share", st->bound_share);
      gs_json_put_number(b, x, "crossings", st->crossings);
      json_cells(b, x, s, p, st->us);
      gs_json_append(b, steps, x);
    }
    gs_json_append(b, paths, o);
  }
}

void gs_trace_path_render_csv(FILE *out, const gs_trace_stats *s, int lead) {
  for (size_t i = 0; i < s->n_paths; i++) {
    const gs_trace_cpath *p = &s->paths[i];
    for (size_t k = 0; k < p->n_steps; k++) {
      const gs_trace_cpath_step *st = &p->steps[k];
      for (size_t r = 0; r < p->n_ranks; r++) {
        const double *us = &st->us[r * GS_CP_PHASES];
        double sum = 0;
        for (int ph = 0; ph < GS_CP_PHASES; ph++) sum += us[ph];
        if (sum <= 0) continue;  // a rank the path did not pass through in this step
        const gs_trace_rank_stats *rs = rank_of(s, p, (int)r);
        fprintf(out, "path,%d,", rs->rank);
        gs_render_csv_field(out, rs->label);
        fputc(',', out);
        gs_render_csv_field(out, rs->path);
        for (int c = 0; c < lead; c++) fputc(',', out);
        fprintf(out, ",%lld", (long long)st->step);
        gs_render_csv_number(out, st->end_us - st->start_us);
        for (int ph = 0; ph < GS_CP_PHASES; ph++) gs_render_csv_number(out, us[ph]);
        fputc('\n', out);
      }
    }
  }
}
