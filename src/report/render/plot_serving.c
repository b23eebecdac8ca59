/* The serving plots of a report (docs/report.md, "Plots"): the layouts
 * of a node (llm --layouts: tokens/s per GPU against tokens/s per user
 * with the Pareto frontier) and the rates of a server sweep or search
 * (llm --rates, --find-max-rate: the targeted percentiles against the
 * rate with the targets and the highest rate meeting them). Written into
 * the drawing of plot.c; titles come sanitized from there. */
#include <math.h>
#include <stdio.h>

#include "report/analyze/layouts.h"
#include "report/render/plot_internal.h"

/* Per layout group (llm --layouts): tokens/s per GPU against tokens/s per
 * user, each layout labelled with its tp and pp, the Pareto frontier joined;
 * drawn with the series of the group's first layout. */
/* See plot_internal.h. */
int gs_plot_layouts(gs_plotter *pl, const gs_report *r) {
  gs_report_layouts ls;
  if (gs_report_layouts_find(r, &ls) != GS_OK) return 0;
  int ok = 1;
  for (size_t i = 0; ok && i < ls.n; i++) {
    const gs_report_layout_group *g = &ls.g[i];
    FILE *f = gs_plot_begin(pl, g->l[0].series, -1, "layouts: tokens/s per GPU against tokens/s per "
                         "user (1 / median TPOT), labelled tp/pp; line: the Pareto frontier",
                         "layouts-%d-gpus", g->world_size);
    if (!f) { ok = 0; break; }
    for (size_t k = 0; k < g->n; k++)
      if (isfinite(g->l[k].per_user) && isfinite(g->l[k].per_gpu))
        fprintf(f, "%.17g %.17g %d %d\n", g->l[k].per_user, g->l[k].per_gpu, g->l[k].tp,
                g->l[k].pp);
    fprintf(f, "\n\n");
    // The frontier by tokens/s per user, so that the line joins it in order.
    for (double last = -INFINITY;;) {
      int next = -1;
      for (size_t k = 0; k < g->n; k++)
        if (g->l[k].on_front && g->l[k].per_user > last &&
            (next < 0 || g->l[k].per_user < g->l[next].per_user))
          next = (int)k;
      if (next < 0) break;
      fprintf(f, "%.17g %.17g\n", g->l[next].per_user, g->l[next].per_gpu);
      last = g->l[next].per_user;
    }
    if (!gs_plot_end(f)) { ok = 0; break; }
    const char *name = pl->plots->p[pl->plots->n - 1].name;
    fprintf(pl->script, "reset\nset title 'layouts of %d GPUs'\nset xlabel 'tokens/s per user'\n"
                        "set ylabel 'tokens/s per GPU'\nset grid\nset key top right\n"
                        "set offsets graph 0.1, graph 0.1, graph 0.1, graph 0.1\n", g->world_size);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "plot '%s.dat' index 0 using 1:2 with points pt 7 ps 1.5 title "
                              "'layouts', '' index 0 using 1:2:(sprintf('tp %%d pp %%d', $3, $4)) with labels "
                              "offset 1,1 notitle, '' index 1 using 1:2 with lines lw 2 title "
                              "'frontier'", name);
    gs_plot_outputs(pl->script, pl->png, name, cmd);
  }
  gs_report_layouts_free(&ls);
  return ok;
}

/* A value for gnuplot's data file: "?" (missing) when not finite. */
static void datum(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, " %.17g", v);
  else
    fputs(" ?", f);
}

/* See plot_internal.h. */
int gs_plot_rates(gs_plotter *pl, const gs_report_series *s, size_t si, size_t ri,
                  const char *where, const char *title) {
  const gs_report_row *row = &s->rows[ri];
  const gs_report_rates *q = &row->rates;
  if (!q->present || q->n == 0) return 1;
  char caption[256];
  snprintf(caption, sizeof caption,
           "%d rank%s: p%g of each targeted metric against the rate (log scale; a rate whose "
           "requests never finished is left out); dashed: its target; vertical: the highest "
           "rate meeting the targets and the rate above it that missed",
           row->world_size, row->world_size == 1 ? "" : "s", q->slo.percentile);
  FILE *f = gs_plot_begin(pl, si, (int)ri, caption, "%s-rates", where);
  if (!f) return 0;
  for (size_t k = 0; k < q->n; k++) {
    const gs_report_rate_point *p = &q->points[k];
    fprintf(f, "%.17g", p->rate);
    for (int m = 0; m < GS_SLO_METRICS; m++) {
      const double v = p->goodput.percentile_value[m];
      datum(f, isfinite(q->slo.bound[m]) && v > 0.0 ? v : NAN);
    }
    fputc('\n', f);
  }
  if (!gs_plot_end(f)) return 0;
  const char *name = pl->plots->p[pl->plots->n - 1].name;
  FILE *gp = pl->script;
  fprintf(gp, "reset\nset title '%s: p%g latency against rate' noenhanced\nset xlabel 'requests/s'\n"
              "set ylabel 'seconds'\nset logscale y\nset grid\nset key top left\n"
              "set datafile missing '?'\nset offsets graph 0.05, graph 0.05, 0, 0\n",
          title, q->slo.percentile);
  if (isfinite(q->max_rate))
    fprintf(gp, "set arrow from %.17g, graph 0 to %.17g, graph 1 nohead lw 2 lc rgb '#2a9d2a'\n",
            q->max_rate, q->max_rate);
  if (isfinite(q->high))
    fprintf(gp, "set arrow from %.17g, graph 0 to %.17g, graph 1 nohead dt 3 lc rgb '#c03030'\n",
            q->high, q->high);
  static const char *const colour[GS_SLO_METRICS] = {"#1f77b4", "#ff7f0e", "#9467bd"};
  static const char *const label[GS_SLO_METRICS] = {"TTFT", "TPOT", "latency"};
  char cmd[1024] = "plot";
  size_t used = 4;
  for (int m = 0; m < GS_SLO_METRICS; m++) {
    if (!isfinite(q->slo.bound[m])) continue;
    int w = snprintf(cmd + used, sizeof cmd - used,
                     "%s '%s.dat' using 1:%d with linespoints pt 7 lc rgb '%s' title 'p%g %s', "
                     "%.17g with lines dt 2 lc rgb '%s' title '%s target'",
                     used > 4 ? "," : "", name, 2 + m, colour[m], q->slo.percentile, label[m],
                     q->slo.bound[m], colour[m], label[m]);
    if (w > 0 && (size_t)w < sizeof cmd - used) used += (size_t)w;
  }
  gs_plot_outputs(gp, pl->png, name, cmd);
  return 1;
}
