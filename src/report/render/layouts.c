/* The layouts section of a report (text, Markdown, HTML and JSON): per
 * document and world size with several layouts (tp x pp), each
 * layout's tokens/s per GPU and per user, the Pareto frontier, whether it
 * met the latency targets and the best layout that did
 * (report/analyze/layouts.c; docs/workloads/llm.md, "Layouts of a node").
 * The frontier's plot is drawn with the plots (plot.c). */
#include <math.h>
#include <stdio.h>

#include "core/check.h"
#include "report/analyze/layouts.h"
#include "report/render/goodput.h"

gs_status gs_render_layouts(gs_render_writer *w, const gs_report *r) {
  gs_report_layouts ls;
  GS_TRY(gs_report_layouts_find(r, &ls));
  gs_status st = GS_OK;
  for (size_t i = 0; i < ls.n && st == GS_OK; i++) {
    const gs_report_layout_group *g = &ls.g[i];
    gs_render_block(w, w->md ? 2 : -1, "",
                    "Layouts of %d GPUs (%s): tokens/s per GPU = tokens of ok requests / run "
                    "time / GPUs; per user = 1 / median TPOT; frontier: no other layout is as "
                    "high on both and higher on one",
                    g->world_size, gs_report_file_name(r, g->file));
    static const char *const head[] = {"tp", "pp", "replicas", "series", "tokens/s per GPU",
                                       "tokens/s per user", "targets", "goodput tokens/s per GPU",
                                       "frontier"};
    static const int left[] = {0, 0, 0, 1, 0, 0, 1, 0, 1};
    gs_render_table t;
    gs_render_table_init(&t, 9, head, left);
    for (size_t k = 0; k < g->n; k++) {
      const gs_report_layout *l = &g->l[k];
      char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
      gs_render_cellf(c[0], "%d", l->tp);
      gs_render_cellf(c[1], "%d", l->pp);
      gs_render_cellf(c[2], "%d", l->replicas);
      gs_render_cellf(c[3], "%s", r->series[l->series].title);
      gs_render_rate(c[4], l->per_gpu);
      gs_render_rate(c[5], l->per_user);
      gs_render_cellf(c[6], "%s", l->met < 0 ? "-" : l->met ? "met" : "MISSED");
      gs_render_rate(c[7], l->goodput_per_gpu);
      gs_render_cellf(c[8], "%s", l->on_front ? "yes" : "");
    }
    st = gs_render_table_done(w, &t, "    ");
    if (g->best >= 0)
      gs_render_block(w, 0, "  ", "Best layout meeting the targets: tp %d pp %d (%d replicas), "
                      "%.4g goodput tokens/s per GPU.", g->l[g->best].tp, g->l[g->best].pp,
                      g->l[g->best].replicas, g->l[g->best].goodput_per_gpu);
    else
      gs_render_block(w, 0, "  ", "Best layout meeting the targets: %s.",
                      g->n && g->l[0].met < 0 ? "no latency targets in the document (--slo)"
                                              : "none met them");
  }
  gs_report_layouts_free(&ls);
  return st;
}

void gs_render_layouts_json(gs_json_build *b, cJSON *doc, const gs_report *r) {
  gs_report_layouts ls;
  if (gs_report_layouts_find(r, &ls) != GS_OK) {
    b->failed = 1;
    return;
  }
  cJSON *arr = ls.n ? gs_json_put_array(b, doc, "layouts") : NULL;
  for (size_t i = 0; i < ls.n; i++) {
    const gs_report_layout_group *g = &ls.g[i];
    cJSON *o = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_string(b, o, "file", r->files[g->file]);
    gs_json_put_number(b, o, "world_size", g->world_size);
    if (g->best >= 0) {
      gs_json_put_number(b, o, "best_tp", g->l[g->best].tp);
      gs_json_put_number(b, o, "best_pp", g->l[g->best].pp);
    } else {
      gs_json_put_null(b, o, "best_tp");
      gs_json_put_null(b, o, "best_pp");
    }
    cJSON *list = gs_json_put_array(b, o, "layouts");
    for (size_t k = 0; k < g->n; k++) {
      const gs_report_layout *l = &g->l[k];
      cJSON *x = gs_json_check(b, cJSON_CreateObject());
      gs_json_put_number(b, x, "tp", l->tp);
      gs_json_put_number(b, x, "pp", l->pp);
      gs_json_put_number(b, x, "replicas", l->replicas);
      gs_json_put_string(b, x, "series", r->series[l->series].title);
      gs_json_put_number(b, x, "tokens_per_second_per_gpu", l->per_gpu);
      gs_json_put_number(b, x, "tokens_per_second_per_user", l->per_user);
      gs_json_put_bool_or_null(b, x, "targets_met", l->met);
      gs_json_put_number(b, x, "goodput_tokens_per_second_per_gpu", l->goodput_per_gpu);
      gs_json_put_bool(b, x, "frontier", l->on_front);
      gs_json_append(b, list, x);
    }
    gs_json_append(b, arr, o);
  }
  gs_report_layouts_free(&ls);
}
