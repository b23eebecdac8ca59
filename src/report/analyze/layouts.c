/* Layouts of one node in a report (see layouts.h). */
#include "report/analyze/layouts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/slo.h"

void gs_report_layouts_free(gs_report_layouts *l) {
  for (size_t i = 0; l->g && i < l->n; i++) free(l->g[i].l);
  free(l->g);
  memset(l, 0, sizeof *l);
}

/* The group of (file, world_size) in *out, added when new; NULL on no memory. */
static gs_report_layout_group *group_of(gs_report_layouts *out, size_t file, int world) {
  for (size_t i = 0; i < out->n; i++)
    if (out->g[i].file == file && out->g[i].world_size == world) return &out->g[i];
  gs_report_layout_group *grown = realloc(out->g, (out->n + 1) * sizeof *grown);
  if (!grown) return NULL;
  out->g = grown;
  gs_report_layout_group *g = &out->g[out->n++];
  memset(g, 0, sizeof *g);
  g->file = file;
  g->world_size = world;
  g->best = -1;
  return g;
}

static void layout_of(const gs_report_row *row, size_t si, size_t ri, gs_report_layout *l) {
  memset(l, 0, sizeof *l);
  l->series = si;
  l->row = ri;
  const int gpr = row->gpus_per_rank > 0 ? row->gpus_per_rank : 1;
  l->pp = row->pipeline_stages > 0 && gpr % row->pipeline_stages == 0 ? row->pipeline_stages : 1;
  l->tp = gpr / l->pp;
  l->replicas = row->world_size / gpr;
  l->per_gpu = row->throughput / (double)row->world_size;
  const gs_stats *tpot = &row->requests.tpot;
  l->per_user = tpot->n && tpot->median > 0 ? 1.0 / tpot->median : NAN;
  const int targets = gs_slo_any(&row->requests.slo);
  l->met = targets ? gs_slo_goodput_met(&row->requests.goodput) && strcmp(row->status, "ok") == 0 : -1;
  l->goodput_per_gpu =
      targets ? row->requests.goodput.tokens_per_second.value / (double)row->world_size : NAN;
}

/* 1 when layout a sorts after b: by tp, then pp. */
static int after(const gs_report_layout *a, const gs_report_layout *b) {
  return a->tp != b->tp ? a->tp > b->tp : a->pp > b->pp;
}

/* Keeps the groups with two or more layouts (tp x pp), sorts each by tp
 * then pp, marks the frontier and the best layout. */
static gs_status finish_groups(gs_report_layouts *out) {
  size_t kept = 0;
  for (size_t i = 0; i < out->n; i++) {
    gs_report_layout_group *g = &out->g[i];
    int distinct = 0;
    for (size_t a = 0; a < g->n; a++) {
      int seen = 0;
      for (size_t b = 0; b < a; b++) seen |= g->l[b].tp == g->l[a].tp && g->l[b].pp == g->l[a].pp;
      distinct += !seen;
    }
    if (distinct < 2) {
      free(g->l);
      continue;
    }
    for (size_t a = 1; a < g->n; a++) // insertion sort by tp then pp, stable
      for (size_t b = a; b > 0 && after(&g->l[b - 1], &g->l[b]); b--) {
        gs_report_layout t = g->l[b];
        g->l[b] = g->l[b - 1];
        g->l[b - 1] = t;
      }
    double *x = malloc(g->n * sizeof *x), *y = malloc(g->n * sizeof *y);
    int *on = malloc(g->n * sizeof *on);
    if (!x || !y || !on) {
      free(x), free(y), free(on);
      for (size_t j = i; j < out->n; j++) free(out->g[j].l);
      out->n = kept;
      return gs_error(GS_ERR_NOMEM, "out of memory for the layouts");
    }
    for (size_t a = 0; a < g->n; a++) x[a] = g->l[a].per_user, y[a] = g->l[a].per_gpu;
    gs_slo_frontier(x, y, g->n, on);
    g->best = -1;
    for (size_t a = 0; a < g->n; a++) {
      g->l[a].on_front = on[a];
      if (g->l[a].met == 1 &&
          (g->best < 0 || g->l[a].goodput_per_gpu > g->l[g->best].goodput_per_gpu))
        g->best = (int)a;
    }
    free(x), free(y), free(on);
    out->g[kept++] = *g;
  }
  out->n = kept;
  return GS_OK;
}

gs_status gs_report_layouts_find(const gs_report *r, gs_report_layouts *out) {
  memset(out, 0, sizeof *out);
  for (size_t si = 0; si < r->n_series; si++)
    for (size_t ri = 0; ri < r->series[si].n_rows; ri++) {
      const gs_report_row *row = &r->series[si].rows[ri];
      if (!row->requests.present || row->world_size < 1) continue;
      gs_report_layout_group *g = group_of(out, row->file, row->world_size);
      gs_report_layout *grown = g ? realloc(g->l, (g->n + 1) * sizeof *grown) : NULL;
      if (!grown) {
        gs_report_layouts_free(out);
        return gs_error(GS_ERR_NOMEM, "out of memory for the layouts");
      }
      g->l = grown;
      layout_of(row, si, ri, &g->l[g->n++]);
    }
  gs_status st = finish_groups(out);
  if (st != GS_OK) gs_report_layouts_free(out);
  return st;
}
