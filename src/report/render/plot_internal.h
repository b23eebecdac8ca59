/* What the plot files share (plot.c: the machinery, series, ranks,
 * timelines; plot_serving.c: the serving plots): the state of one
 * drawing and the calls that add a plot to it. Not part of the report
 * layer's public interface. */
#ifndef GS_REPORT_RENDER_PLOT_INTERNAL_H
#define GS_REPORT_RENDER_PLOT_INTERNAL_H

#include <stdio.h>

#include "report/render/render.h"

/* gnuplot processes drawing at once: the plots are dealt out over this many
 * scripts (at most the cores there are). */
#define PLOT_JOBS_MAX 4

typedef struct {
  char dir[256];
  FILE *scripts[PLOT_JOBS_MAX]; /* plots-K.gp, one gnuplot each */
  int jobs;
  FILE *script;                 /* the script of the plot begun last */
  int png;                      /* 1: PNGs too (the plots go to a folder), else SVG only */
  gs_report_plots *plots;
} gs_plotter;

/* Adds a plot of series `series` (row `row`, -1: the series') with
 * `caption`, named by `fmt`, and opens its data file "NAME.dat" in the
 * temp dir; a name already taken gets "-2", "-3", ... so that no two plots
 * share a file. Sets pl->script to the script its commands go to. NULL
 * when memory or the file fails. */
FILE *gs_plot_begin(gs_plotter *pl, size_t series, int row, const char *caption, const char *fmt,
                    ...) __attribute__((format(printf, 5, 6)));

/* Closes a data file; 0 when any write to it failed (e.g. a full disk). */
int gs_plot_end(FILE *f);

/* Script lines that draw the plot `name` into NAME.svg and, when the plots
 * go to a folder (`png`), NAME.png. */
void gs_plot_outputs(FILE *gp, int png, const char *name, const char *plot_command);

/* The file stem ("STEM-nN", or "STEM-nN-FILE-mM" where the series measured
 * this rank count more than once) and the title of row `ri`'s plots. */
void gs_plot_row_place(const gs_report *r, const gs_report_series *s, size_t ri,
                       const char *series_title, const char *stem, char *where,
                       size_t where_size, char *title, size_t title_size);

/* Per layout group (llm --layouts): tokens/s per GPU against tokens/s per
 * user, labelled by tp, the Pareto frontier joined. 0 when a write fails. */
int gs_plot_layouts(gs_plotter *pl, const gs_report *r);

/* Of row `ri` of series `si` when it has rates (llm --rates,
 * --find-max-rate): the targeted percentiles against the rate, log scale,
 * each target dashed, the highest rate meeting them and its bracket as
 * vertical lines; `where` and `title` from gs_plot_row_place. 1 without
 * rates; 0 when a write fails. */
int gs_plot_rates(gs_plotter *pl, const gs_report_series *s, size_t si, size_t ri,
                  const char *where, const char *title);

#endif
