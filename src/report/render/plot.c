/* Plots of a report drawn with gnuplot: speedup and efficiency against the
 * rank count with the ideal line, bus bandwidth against message size, and
 * per measurement the latency CDF and the throughput of each rank. gnuplot
 * runs without a shell (fork + exec) in a private temporary directory, on
 * data files and one script written here with fixed file names; titles are
 * reduced to safe characters, so no text from a document or a path can
 * change the script. See docs/report.md. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/file.h"
#include "report/predict/predict.h"
#include "report/render/plot_internal.h"
#include "report/analyze/timeline.h"

/* Points per rank in a CDF: enough for a smooth curve at any sample count. */
#define CDF_POINTS 400


/* Copies `text` keeping letters, digits and " .,:_-+()/=" (never a quote or
 * a backslash), so it can sit inside a gnuplot string. */
static void safe_title(char *dst, size_t size, const char *text) {
  size_t j = 0;
  for (const char *p = text ? text : ""; *p && j + 1 < size; p++) {
    unsigned char c = (unsigned char)*p;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             strchr(" .,:_-+()/=", c) != NULL;
    dst[j++] = ok ? (char)c : '_';
  }
  dst[j] = '\0';
}

/* `text` as a file-name part: lower-case letters and digits, every other
 * run of characters one '-', at most `limit` characters, no '-' at the ends. */
static void slug(char *dst, size_t size, const char *text, size_t limit) {
  size_t j = 0;
  for (const char *p = text; *p && j + 1 < size && j < limit; p++) {
    unsigned char c = (unsigned char)*p;
    if (isalnum(c))
      dst[j++] = (char)tolower(c);
    else if (j > 0 && dst[j - 1] != '-')
      dst[j++] = '-';
  }
  while (j > 0 && dst[j - 1] == '-') j--;
  dst[j] = '\0';
}

/* 1 when a plot of `ps` already has the name `name`. */
static int name_taken(const gs_report_plots *ps, const char *name) {
  for (size_t i = 0; i < ps->n; i++)
    if (strcmp(ps->p[i].name, name) == 0) return 1;
  return 0;
}

/* See plot_internal.h. */
FILE *gs_plot_begin(gs_plotter *pl, size_t series, int row, const char *caption, const char *fmt,
                        ...) {
  gs_report_plots *ps = pl->plots;
  gs_report_plot *grown = realloc(ps->p, (ps->n + 1) * sizeof *grown);
  if (!grown) return NULL;
  ps->p = grown;
  gs_report_plot *p = &ps->p[ps->n];
  memset(p, 0, sizeof *p);
  p->series = series;
  p->row = row;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->name, sizeof p->name, fmt, ap);
  va_end(ap);
  if (name_taken(ps, p->name)) {
    char base[sizeof p->name - 8];
    snprintf(base, sizeof base, "%s", p->name);
    for (int k = 2; name_taken(ps, p->name); k++) snprintf(p->name, sizeof p->name, "%s-%d", base, k);
  }
  snprintf(p->caption, sizeof p->caption, "%s", caption);
  char path[512];
  snprintf(path, sizeof path, "%s/%s.dat", pl->dir, p->name);
  FILE *f = fopen(path, "w");
  if (f) {
    // Each plot's commands go to one script, the plots dealt out in turn.
    pl->script = pl->scripts[ps->n % (size_t)pl->jobs];
    ps->n++;
  }
  return f;
}

/* See plot_internal.h. */
int gs_plot_end(FILE *f) {
  int failed = ferror(f) != 0;
  return fclose(f) == 0 && !failed;
}

/* See plot_internal.h. */
void gs_plot_outputs(FILE *gp, int png, const char *name, const char *plot_command) {
  fprintf(gp, "set terminal svg size 640,400 fixed font 'sans,11'\nset output '%s.svg'\n%s\n",
          name, plot_command);
  if (png)
    fprintf(gp, "set terminal pngcairo size 640,400 font 'sans,10'\nset output '%s.png'\nreplot\n",
            name);
  fprintf(gp, "unset output\n");
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Speedup and efficiency against ranks, with the ideal lines; with a
 * prediction `pw` (may be NULL) its speedup continues the measured curve,
 * dashed, from the largest measured count (a second data block). */
static int series_plots(gs_plotter *pl, const gs_report_series *s, size_t si, const char *title,
                        const char *stem, const gs_predict_workload *pw) {
  size_t usable = 0;
  for (size_t i = 0; i < s->n_rows; i++) usable += isfinite(s->rows[i].speedup);
  if (usable < 2) return 1;
  FILE *f = gs_plot_begin(pl, si, -1, "speedup and efficiency against the rank count; dashed: ideal",
                       "%s-speedup", stem);
  if (!f) return 0;
  int max_n = 1;
  for (size_t i = 0; i < s->n_rows; i++)
    if (isfinite(s->rows[i].speedup)) {
      fprintf(f, "%d %.17g %.17g\n", s->rows[i].world_size, s->rows[i].speedup,
              s->rows[i].efficiency);
      if (s->rows[i].world_size > max_n) max_n = s->rows[i].world_size;
    }
  int measured_max = max_n;
  double top = 1.0;  // the largest speedup drawn: the ideal line must not hide the curves
  for (size_t i = 0; i < s->n_rows; i++)
    if (isfinite(s->rows[i].speedup) && s->rows[i].speedup > top) top = s->rows[i].speedup;
  if (pw) {
    fprintf(f, "\n\n");
    for (size_t i = s->n_rows; i-- > 0;)
      if (isfinite(s->rows[i].speedup) && s->rows[i].world_size == measured_max) {
        fprintf(f, "%d %.17g\n", measured_max, s->rows[i].speedup);
        break;
      }
    for (size_t i = 0; i < pw->n_points; i++)
      if (pw->points[i].gpus > measured_max && isfinite(pw->points[i].speedup)) {
        fprintf(f, "%d %.17g\n", pw->points[i].gpus, pw->points[i].speedup);
        if (pw->points[i].gpus > max_n) max_n = pw->points[i].gpus;
        if (pw->points[i].speedup > top) top = pw->points[i].speedup;
      }
  }
  if (!gs_plot_end(f)) return 0;
  const char *name = pl->plots->p[pl->plots->n - 1].name;
  FILE *gp = pl->script;
  fprintf(gp, "reset\nset title '%s: speedup'\nset xlabel 'ranks (GPUs)'\nset ylabel 'speedup'\n"
              "set key top left\nset grid\nset yrange [0:*]\n", title);
  if (max_n > measured_max)
    fprintf(gp, "set logscale x 2\nset xrange [0.8:%d]\nset yrange [0:%.6g]\n", 2 * max_n,
            1.3 * top);
  else fprintf(gp, "set xrange [0.5:%d.5]\n", max_n);
  char cmd[640];
  snprintf(cmd, sizeof cmd, "plot '%s.dat' index 0 using 1:2 with linespoints lw 2 pt 7 title "
                            "'measured', x with lines dt 2 lc rgb 'gray40' title 'ideal'%s", name,
           max_n > measured_max ? ", '' index 1 using 1:2 with linespoints dt 2 lw 2 pt 6 "
                                  "lc rgb 'dark-orange' title 'predicted'" : "");
  gs_plot_outputs(gp, pl->png, name, cmd);

  f = gs_plot_begin(pl, si, -1, "parallel efficiency against the rank count; dashed: ideal (100%)",
                 "%s-efficiency", stem);
  if (!f) return 0;
  for (size_t i = 0; i < s->n_rows; i++)
    if (isfinite(s->rows[i].speedup))
      fprintf(f, "%d %.17g\n", s->rows[i].world_size, 100.0 * s->rows[i].efficiency);
  if (!gs_plot_end(f)) return 0;
  name = pl->plots->p[pl->plots->n - 1].name;
  fprintf(gp, "reset\nset title '%s: efficiency'\nset xlabel 'ranks (GPUs)'\n"
              "set ylabel 'efficiency (%%)'\nset grid\nset xrange [0.5:%d.5]\nset yrange [0:*]\n",
          title, measured_max);
  snprintf(cmd, sizeof cmd, "plot '%s.dat' using 1:2 with linespoints lw 2 pt 7 title 'measured', "
                            "100 with lines dt 2 lc rgb 'gray40' title 'ideal'", name);
  gs_plot_outputs(gp, pl->png, name, cmd);
  return 1;
}

/* 1 when collective rows x and y belong on one busbw line: the same point
 * (gs_report_point_same) but for the message size. */
static int same_line(const gs_report_row *x, const gs_report_row *y) {
  gs_report_row sized = *y;
  sized.collective.bytes = x->collective.bytes;
  return gs_report_point_same(x, &sized);
}

static int plottable(const gs_report_row *row) {
  return isfinite(row->collective.busbw) && row->collective.bytes > 0;
}

/* Bus bandwidth against message size for a collective series: one line
 * per op and in-place form (and data type, reduction, root and rank count
 * where they differ), one data block per line in the .dat file. */
static int busbw_plot(gs_plotter *pl, const gs_report_series *s, size_t si, const char *title,
                      const char *stem) {
  size_t n = 0;
  double link = NAN, lo = INFINITY, hi = 0;
  int multi_ws = 0;
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    if (plottable(row)) {
      n++;
      lo = fmin(lo, row->collective.bytes);
      hi = fmax(hi, row->collective.bytes);
    }
    if (isfinite(row->collective.link_bandwidth)) link = row->collective.link_bandwidth;
    multi_ws |= row->world_size != s->rows[0].world_size;
  }
  if (n == 0) return 1;
  // first[k]: the first row of line k; pts: a line's (bytes, GB/s), sorted.
  size_t *first = malloc(n * sizeof *first);
  double (*pts)[2] = malloc(n * sizeof *pts);
  size_t cmd_size = 512 + 256 * n;
  char *cmd = malloc(cmd_size);
  FILE *f = first && pts && cmd
                ? gs_plot_begin(pl, si, -1, "bus bandwidth against message size, one line per "
                                         "operation and in-place form; dashed: the link's "
                                         "theoretical bandwidth", "%s-busbw", stem)
                : NULL;
  int ok = f != NULL;
  size_t lines = 0;
  for (size_t i = 0; ok && i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    int seen = 0;
    for (size_t k = 0; k < lines && !seen; k++) seen = same_line(&s->rows[first[k]], row);
    if (!plottable(row) || seen) continue;
    size_t np = 0;
    for (size_t j = i; j < s->n_rows; j++)
      if (plottable(&s->rows[j]) && same_line(row, &s->rows[j])) {
        pts[np][0] = s->rows[j].collective.bytes;
        pts[np++][1] = s->rows[j].collective.busbw / 1e9;
      }
    qsort(pts, np, sizeof *pts, compare_doubles);  // the first member is the key
    // gnuplot data blocks are separated by two blank lines ("index k").
    fprintf(f, "%s# %s %s\n", lines ? "\n\n" : "", row->collective.op ? row->collective.op : "coll",
            gs_report_coll_form(row->collective.in_place));
    for (size_t j = 0; j < np; j++) fprintf(f, "%.17g %.17g\n", pts[j][0], pts[j][1]);
    first[lines++] = i;
  }
  if (f) ok = gs_plot_end(f) && ok;
  if (ok) {
    const char *name = pl->plots->p[pl->plots->n - 1].name;
    fprintf(pl->script, "reset\nset title '%s: bus bandwidth'\nset xlabel 'message size (bytes)'\n"
                        "set ylabel 'busbw (GB/s)'\nset logscale x 2\nset xtics 1, 16\n"
                        "set format x '%%.0b %%BB'\nset grid\nset key top left reverse Left\n"
                        "set yrange [0:*]\nset offsets 0, 0, graph 0.1, 0\n"
                        "set xrange [%.17g:%.17g]\n", title, lo / 1.5, hi * 1.5);
    size_t at = (size_t)snprintf(cmd, cmd_size, "plot");
    for (size_t k = 0; k < lines && at < cmd_size; k++) {
      const gs_report_row *row = &s->rows[first[k]];
      char ranks[32] = "";
      if (multi_ws) snprintf(ranks, sizeof ranks, ", %d ranks", row->world_size);
      at += (size_t)snprintf(cmd + at, cmd_size - at,
                             "%s '%s.dat' index %zu using 1:2 with linespoints lw 2 pt 7 "
                             "title '%s %s%s'", k ? "," : "", name, k,
                             row->collective.op ? row->collective.op : "coll",
                             gs_report_coll_form(row->collective.in_place), ranks);
    }
    if (isfinite(link) && at < cmd_size)
      snprintf(cmd + at, cmd_size - at, ", %.17g with lines dt 2 lc rgb 'gray40' title 'link'",
               link / 1e9);
    gs_plot_outputs(pl->script, pl->png, name, cmd);
  }
  free(first);
  free(pts);
  free(cmd);
  return ok;
}

/* See plot_internal.h. */
void gs_plot_row_place(const gs_report *r, const gs_report_series *s, size_t ri,
                       const char *series_title, const char *stem, char *where,
                       size_t where_size, char *title, size_t title_size) {
  const gs_report_row *row = &s->rows[ri];
  int repeated = 0;
  for (size_t i = 0; i < s->n_rows; i++)
    repeated |= i != ri && s->rows[i].world_size == row->world_size;
  if (!repeated) {
    snprintf(where, where_size, "%s-n%d", stem, row->world_size);
    snprintf(title, title_size, "%s", series_title);
    return;
  }
  char file[40], safe_file[64];
  slug(file, sizeof file, gs_report_file_name(r, row->file), 24);
  snprintf(where, where_size, "%s-n%d-%s-m%zu", stem, row->world_size, file, row->measurement);
  safe_title(safe_file, sizeof safe_file, gs_report_file_name(r, row->file));
  snprintf(title, title_size, "%s (%s, measurement %zu)", series_title, safe_file,
           row->measurement);
}

/* Latency CDF and throughput of each rank of row `ri` (2+ ranks). */
static int rank_plots(gs_plotter *pl, const gs_report *r, const gs_report_series *s, size_t si,
                      size_t ri, const char *series_title, const char *stem) {
  const gs_report_row *row = &s->rows[ri];
  char where[128], title[320];
  gs_plot_row_place(r, s, ri, series_title, stem, where, sizeof where, title, sizeof title);
  char caption[256];
  snprintf(caption, sizeof caption, "%d ranks: latency CDF per rank (at most %d points per rank)",
           row->world_size, CDF_POINTS);
  FILE *f = gs_plot_begin(pl, si, (int)ri, caption, "%s-latency-cdf", where);
  if (!f) return 0;
  int blocks = 0;
  for (size_t k = 0; k < row->n_ranks; k++) {
    // The analysis' copy of the rank's samples (GS_REPORT_ROW_SAMPLES).
    size_t n = row->ranks[k].samples ? row->ranks[k].n : 0;
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
      gs_plot_end(f);
      return 0;
    }
    if (n) memcpy(v, row->ranks[k].samples, n * sizeof *v);
    if (n > 0) {
      qsort(v, n, sizeof *v, compare_doubles);
      size_t points = n < CDF_POINTS ? n : CDF_POINTS;
      fprintf(f, "# rank %zu\n", k);
      for (size_t j = 0; j < points; j++) {
        size_t idx = points == 1 ? 0 : j * (n - 1) / (points - 1);
        fprintf(f, "%.17g %.17g\n", 1e3 * v[idx], (double)(idx + 1) / (double)n);
      }
      fputs("\n\n", f);
      blocks++;
    }
    free(v);
  }
  if (!gs_plot_end(f)) return 0;
  const char *name = pl->plots->p[pl->plots->n - 1].name;
  char cmd[512];
  if (blocks > 0) {
    fprintf(pl->script, "reset\nset title '%s: latency CDF at %d ranks'\nset xlabel 'time per "
                        "iteration (ms)'\nset ylabel 'share of samples'\nset yrange [0:1]\n"
                        "set grid\nset key bottom right\nset offsets graph 0.05, graph 0.05, 0, 0\n",
            title, row->world_size);
    snprintf(cmd, sizeof cmd, "plot for [i=0:%d] '%s.dat' index i using 1:2 with steps lw 2 "
                              "title sprintf('rank %%d', i)", blocks - 1, name);
    gs_plot_outputs(pl->script, pl->png, name, cmd);
  } else {
    pl->plots->n--;
  }

  snprintf(caption, sizeof caption, "%d ranks: throughput per rank; dashed: median rank",
           row->world_size);
  f = gs_plot_begin(pl, si, (int)ri, caption, "%s-throughput", where);
  if (!f) return 0;
  size_t n = 0;
  for (size_t k = 0; k < row->n_ranks; k++)
    if (isfinite(row->ranks[k].throughput)) {
      fprintf(f, "%zu %.17g\n", k, row->ranks[k].throughput);
      n++;
    }
  if (!gs_plot_end(f)) return 0;
  name = pl->plots->p[pl->plots->n - 1].name;
  if (n == 0) {
    pl->plots->n--;
    return 1;
  }
  char unit[64];
  safe_title(unit, sizeof unit, s->item_unit ? s->item_unit : "items");
  fprintf(pl->script, "reset\nset title '%s: throughput per rank at %d ranks'\nset xlabel 'rank'\n"
                      "set ylabel '%s/s'\nset style fill solid 0.6\nset boxwidth 0.6\n"
                      "set yrange [0:*]\nset xrange [-0.5:%zu.5]\nset xtics 1\nset grid y\n",
          title, row->world_size, unit, row->n_ranks - 1);
  if (isfinite(row->rank_median))
    snprintf(cmd, sizeof cmd, "plot '%s.dat' using 1:2 with boxes title 'rank', %.17g with lines "
                              "dt 2 lc rgb 'gray40' title 'median'", name, row->rank_median);
  else
    snprintf(cmd, sizeof cmd, "plot '%s.dat' using 1:2 with boxes title 'rank'", name);
  gs_plot_outputs(pl->script, pl->png, name, cmd);
  return 1;
}

/* The timeline of a measurement whose document names a trace:
 * one row per rank and lane, the leaf spans of the traced steps coloured
 * by kind as in docs/timeline.md. Nothing when there is no readable trace. */
static int timeline_plot(gs_plotter *pl, const gs_report *r, const gs_report_series *s, size_t si,
                         size_t ri, const char *series_title, const char *stem) {
  const gs_report_row *row = &s->rows[ri];
  char where[128], title[320];
  gs_plot_row_place(r, s, ri, series_title, stem, where, sizeof where, title, sizeof title);
  gs_report_timeline t;
  if (gs_report_timeline_load(r, row, &t) != GS_OK) return 0;
  if (!t.present || t.problem[0]) {
    gs_report_timeline_free(&t);
    return 1;
  }
  char caption[256];
  snprintf(caption, sizeof caption, "%d ranks: timeline of steps %d-%d of run %d per rank and "
           "lane (docs/timeline.md)", row->world_size, t.first_step, t.last_step, t.run);
  FILE *f = gs_plot_begin(pl, si, (int)ri, caption, "%s-timeline", where);
  if (!f) {
    gs_report_timeline_free(&t);
    return 0;
  }
  char tics[4096] = "";
  size_t at = 0;
  int rows = 0;
  const double window_ms = 1e3 * (t.end - t.begin);
  for (int k = 0; k < t.n_ranks; k++) {
    const gs_trace_view_rank *vr = &t.view.ranks[k];
    for (int l = 0; l < vr->n_lanes; l++) {
      const gs_trace_lane *lane = &vr->lanes[l];
      size_t drawn = 0;
      for (size_t i = 0; i < lane->n; i++) {
        const gs_trace_span *sp = &lane->spans[i];
        if (!gs_report_timeline_in_window(&t, sp) || !gs_report_timeline_leaf(lane, i)) continue;
        // A frame (run, step) with nothing inside is computing, as in the
        // timeline table.
        const gs_trace_kind kind = sp->kind == GS_TRACE_RUN || sp->kind == GS_TRACE_STEP
                                       ? GS_TRACE_COMPUTE
                                       : (gs_trace_kind)sp->kind;
        fprintf(f, "%.9g %.9g %d %u\n", 1e3 * (sp->begin - t.begin), 1e3 * (sp->end - t.begin),
                rows, (unsigned)gs_trace_kind_rgb(kind));
        drawn++;
      }
      if (drawn == 0) continue;
      char label[96];
      char name[GS_TRACE_NAME + 16];
      snprintf(name, sizeof name, "rank %d %s", vr->rank, lane->name);
      safe_title(label, sizeof label, name);
      if (at < sizeof tics)
        at += (size_t)snprintf(tics + at, sizeof tics - at, "%s'%s' %d", rows ? ", " : "", label,
                               rows);
      rows++;
    }
  }
  gs_report_timeline_free(&t);
  if (!gs_plot_end(f)) return 0;
  const char *name = pl->plots->p[pl->plots->n - 1].name;
  if (rows == 0 || at >= sizeof tics) {
    pl->plots->n--;
    return 1;
  }
  const int height = 190 + 26 * rows;
  fprintf(pl->script, "reset\nset title '%s: timeline at %d rank%s'\nset xlabel 'ms since the "
                      "first traced step'\nset xrange [0:%.9g]\nset yrange [%d.5:-0.5]\nset ytics (%s)\n"
                      "set grid x\n"
                      "set key outside right top vertical samplen 1.5\n"
                      "set bmargin 4\nset style fill solid 1.0 border rgb 'white'\n",
          title, row->world_size, row->world_size == 1 ? "" : "s", window_ms, rows - 1, tics);
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "plot '%s.dat' using (($1+$2)/2):3:(($2-$1)/2):(0.38):4 with boxxyerror lc rgb "
           "variable notitle, NaN with boxes lc rgb '#%06x' title 'compute', NaN with boxes lc "
           "rgb '#%06x' title 'communication', NaN with boxes lc rgb '#%06x' title 'waiting', "
           "NaN with boxes lc rgb '#%06x' title 'copy', NaN with boxes lc rgb '#%06x' title "
           "'host'",
           name, (unsigned)gs_trace_kind_rgb(GS_TRACE_COMPUTE),
           (unsigned)gs_trace_kind_rgb(GS_TRACE_COMM), (unsigned)gs_trace_kind_rgb(GS_TRACE_WAIT),
           (unsigned)gs_trace_kind_rgb(GS_TRACE_COPY), (unsigned)gs_trace_kind_rgb(GS_TRACE_HOST));
  fprintf(pl->script, "set terminal svg size 760,%d fixed font 'sans,11'\nset output '%s.svg'\n"
                      "%s\n", height, name, cmd);
  if (pl->png)
    fprintf(pl->script, "set terminal pngcairo size 760,%d font 'sans,10'\nset output "
                        "'%s.png'\nreplot\n", height, name);
  fprintf(pl->script, "unset output\n");
  return 1;
}

/* Reads file `path` whole; caller frees; NULL on failure. */
static char *read_whole(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n + 4096 + 1 > cap) {
      cap = cap ? 2 * cap : 65536;
      char *grown = realloc(buf, cap);
      if (!grown) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = grown;
    }
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* Whether gnuplot's output `data` is whole: an SVG ends with "</svg>", a
 * PNG with its IEND chunk. gnuplot does not always fail when a write of
 * its own fails (a full disk), and a cut plot must not replace a good one. */
static int plot_complete(const char *data, size_t len, int png) {
  static const unsigned char iend[] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
  if (png) return len >= sizeof iend && memcmp(data + len - sizeof iend, iend, sizeof iend) == 0;
  const char *end = strstr(data, "</svg>");
  return end != NULL;
}

/* gnuplot's file NAME.EXT ("svg" or "png") from the temp dir `tmp`, read
 * whole (caller frees), or NULL after recording that it is missing or cut. */
static char *read_plot(const char *tmp, const char *name, const char *ext, size_t *len) {
  char file[512];
  snprintf(file, sizeof file, "%s/%s.%s", tmp, name, ext);
  char *data = read_whole(file, len);
  if (data && plot_complete(data, *len, strcmp(ext, "png") == 0)) return data;
  gs_error(GS_ERR_IO, "gnuplot wrote %s %s%s", data ? "an incomplete" : "no", file,
           data ? " (is the disk full?); the plots are left as they were" : "");
  free(data);
  return NULL;
}

/* Copies gnuplot's NAME.EXT from `tmp` to DIR/NAME.EXT atomically. */
static gs_status copy_out(const char *tmp, const char *dir, const char *name, const char *ext) {
  char to[4096];
  if ((size_t)snprintf(to, sizeof to, "%s/%s.%s", dir, name, ext) >= sizeof to)
    return gs_error(GS_ERR_USAGE, "option --plots: the directory name is too long (%zu bytes)",
                    strlen(dir));
  size_t len = 0;
  char *data = read_plot(tmp, name, ext, &len);
  if (!data) return GS_ERR_IO;
  gs_status st = gs_file_write_atomic(to, data, len, "the plot");
  free(data);
  return st;
}

/* Removes the private temporary directory and what is in it. */
static void remove_temp(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char path[512];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* $GPUSCALE_GNUPLOT when set (a path, run without a shell), else the
 * gnuplot found at configure time, else NULL. */
static const char *gnuplot_program(void) {
  const char *env = getenv("GPUSCALE_GNUPLOT");
  if (env && env[0]) return env;
#ifdef GS_GNUPLOT
  return GS_GNUPLOT;
#else
  return NULL;
#endif
}

/* Runs `program` (gnuplot) on plots-K.gp for K < jobs at once, inside
 * `dir`, each with its output in gnuplot-K.log there; the first failure
 * names its log's first line. */
static gs_status run_gnuplot(const char *program, const char *dir, int jobs) {
  pid_t pids[PLOT_JOBS_MAX];
  int started = 0;
  gs_status st = GS_OK;
  for (int k = 0; k < jobs && st == GS_OK; k++) {
    char script[32], log_name[32];
    snprintf(script, sizeof script, "plots-%d.gp", k);
    snprintf(log_name, sizeof log_name, "gnuplot-%d.log", k);
    pid_t pid = fork();
    if (pid < 0) {
      st = gs_error_system(errno, "cannot start gnuplot");
      break;
    }
    if (pid == 0) {
      int log = -1;
      if (chdir(dir) == 0) log = open(log_name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (log >= 0) {
        dup2(log, STDOUT_FILENO);
        dup2(log, STDERR_FILENO);
        close(log);
      }
      execl(program, "gnuplot", script, (char *)NULL);
      _exit(127);
    }
    pids[started++] = pid;
  }
  for (int k = 0; k < started; k++) {
    int status = 0;
    while (waitpid(pids[k], &status, 0) < 0)
      if (errno != EINTR) {
        status = -1;
        break;
      }
    if (st != GS_OK || (WIFEXITED(status) && WEXITSTATUS(status) == 0)) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/gnuplot-%d.log", dir, k);
    size_t len = 0;
    char *log = read_whole(path, &len);
    char first[300] = "";
    if (log) snprintf(first, sizeof first, "%.*s", (int)strcspn(log, "\n"), log);
    free(log);
    st = gs_error(GS_ERR_IO, "gnuplot (%s) failed (exit %d)%s%s", program,
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1, first[0] ? ": " : "", first);
  }
  return st;
}


/* The rates' plot of row `ri` (plot_serving.c), placed as its other plots. */
static int rates_plot(gs_plotter *pl, const gs_report *r, const gs_report_series *s, size_t si,
                      size_t ri, const char *series_title, const char *stem) {
  if (!s->rows[ri].rates.present) return 1;
  char where[128], title[320];
  gs_plot_row_place(r, s, ri, series_title, stem, where, sizeof where, title, sizeof title);
  return gs_plot_rates(pl, s, si, ri, where, title);
}

/* The prediction of series `si`, or NULL. */
static const gs_predict_workload *prediction_of(const gs_predict *prediction, size_t si) {
  for (size_t i = 0; prediction && i < prediction->n_workloads; i++)
    if (prediction->workloads[i].series == si) return &prediction->workloads[i];
  return NULL;
}

/* See render.h. */
gs_status gs_report_plots_make(const gs_report *r, const char *dir,
                               const gs_predict *prediction, gs_report_plots *out) {
  memset(out, 0, sizeof *out);
  const char *program = gnuplot_program();
  if (!program) {
    snprintf(out->note, sizeof out->note, "none: gnuplot was not found when gpuscale was built "
                                           "(install gnuplot and rebuild for plots)");
    return GS_OK;
  }
  if (access(program, X_OK) != 0) {
    snprintf(out->note, sizeof out->note, "none: gnuplot (%s) is not installed", program);
    return GS_OK;
  }
  gs_status st = dir ? gs_file_make_dirs(dir, "option --plots") : GS_OK;
  if (st != GS_OK) return st;
  gs_plotter pl = {.plots = out, .png = dir != NULL};
  const char *tmp = getenv("TMPDIR");
  snprintf(pl.dir, sizeof pl.dir, "%s/gpuscale-plots-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(pl.dir))
    return gs_error(GS_ERR_IO, "cannot create a temporary directory for the plots (%s): %s",
                    pl.dir, strerror(errno));
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  pl.jobs = cores < 1 ? 1 : cores > PLOT_JOBS_MAX ? PLOT_JOBS_MAX : (int)cores;
  char path[512];
  for (int k = 0; k < pl.jobs && st == GS_OK; k++) {
    snprintf(path, sizeof path, "%s/plots-%d.gp", pl.dir, k);
    pl.scripts[k] = fopen(path, "w");
    if (!pl.scripts[k]) st = gs_error(GS_ERR_IO, "cannot write %s: %s", path, strerror(errno));
  }
  for (size_t si = 0; si < r->n_series && st == GS_OK; si++) {
    const gs_report_series *s = &r->series[si];
    // The series' title names what tells it from the others (backend,
    // scaling, options, variant, scenario, task, split), and so do the files.
    char title[sizeof s->title], stem[72];
    safe_title(title, sizeof title, s->title);
    slug(stem, sizeof stem, s->title, 64);
    int ok = s->n_rows && s->rows[0].collective.present ? busbw_plot(&pl, s, si, title, stem)
                                             : series_plots(&pl, s, si, title, stem,
                                                                            prediction_of(prediction, si));
    for (size_t ri = 0; ok && ri < s->n_rows; ri++)
      if (!s->rows[ri].collective.present)
        ok = (s->rows[ri].world_size < 2 || rank_plots(&pl, r, s, si, ri, title, stem)) &&
             timeline_plot(&pl, r, s, si, ri, title, stem) && rates_plot(&pl, r, s, si, ri, title,
                                                                         stem);
    if (!ok) st = gs_error(GS_ERR_IO, "cannot write the plot data in %s: %s", pl.dir, strerror(errno));
  }
  if (st == GS_OK && !gs_plot_layouts(&pl, r))
    st = gs_error(GS_ERR_IO, "cannot write the layouts' plot data in %s: %s", pl.dir, strerror(errno));
  for (int k = 0; k < pl.jobs; k++) {
    errno = 0;
    if (pl.scripts[k] && !gs_plot_end(pl.scripts[k]) && st == GS_OK)
      st = gs_error(GS_ERR_IO, "cannot write the plot script %s/plots-%d.gp: %s", pl.dir, k,
                    errno ? strerror(errno) : "write error");
  }
  if (st == GS_OK && out->n > 0)
    st = run_gnuplot(program, pl.dir, out->n < (size_t)pl.jobs ? (int)out->n : pl.jobs);
  // Every plot is checked whole before the first one replaces a file in dir.
  for (size_t i = 0; i < out->n && st == GS_OK; i++) {
    gs_report_plot *p = &out->p[i];
    size_t len = 0;
    char *svg = read_plot(pl.dir, p->name, "svg", &len);
    char *png = svg && dir ? read_plot(pl.dir, p->name, "png", &len) : NULL;
    if (!svg || (dir && !png)) st = GS_ERR_IO;
    // Embedded inline: the XML prolog and doctype before "<svg" are dropped.
    char *start = svg ? strstr(svg, "<svg") : NULL;
    p->svg = start ? strdup(start) : NULL;
    free(svg);
    free(png);
  }
  for (size_t i = 0; dir && i < out->n && st == GS_OK; i++) {
    st = copy_out(pl.dir, dir, out->p[i].name, "svg");
    if (st == GS_OK) st = copy_out(pl.dir, dir, out->p[i].name, "png");
  }
  remove_temp(pl.dir);
  if (st != GS_OK) {
    gs_report_plots_free(out);
    return st;
  }
  if (out->n == 0)
    snprintf(out->note, sizeof out->note, "none: nothing to plot (no speedup, collective, "
                                          "multi-rank or traced measurement)");
  else if (dir)
    snprintf(out->note, sizeof out->note, "%zu plot%s drawn with gnuplot, as PNG and SVG in %s",
             out->n, out->n == 1 ? "" : "s", dir);
  else
    snprintf(out->note, sizeof out->note, "%zu plot%s drawn with gnuplot", out->n,
             out->n == 1 ? "" : "s");
  return GS_OK;
}

/* See render.h. */
void gs_report_plots_free(gs_report_plots *plots) {
  for (size_t i = 0; i < plots->n; i++) free(plots->p[i].svg);
  free(plots->p);
  memset(plots, 0, sizeof *plots);
}
