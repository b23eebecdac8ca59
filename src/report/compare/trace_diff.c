/* The trace diff (trace_diff.h): each side's kernels summed over its ranks
 * by name, the two lists paired by name, each pair classified and the
 * rows ordered by the size of the change. */
#include "report/compare/trace_diff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/json.h"
#include "core/result.h"
#include "report/render/internal.h"

/* One side's kernels, summed over its ranks. */
typedef struct {
  gs_trace_kernel_row *rows;
  size_t n, cap, ranks;
  double gpu_us;
} side;

static int row_by_name(const void *a, const void *b) {
  return strcmp(((const gs_trace_kernel_row *)a)->name, ((const gs_trace_kernel_row *)b)->name);
}

static gs_status load_side(const char *const *paths, size_t n, side *s) {
  gs_trace_stats st_all;
  GS_TRY(gs_trace_stats_load(paths, n, GS_TRACE_KERNEL_WAIT_US, &st_all));
  gs_status st = GS_OK;
  s->ranks = st_all.n_ranks;
  for (size_t r = 0; st == GS_OK && r < st_all.n_ranks; r++) {
    const gs_trace_rank_stats *rs = &st_all.ranks[r];
    s->gpu_us += rs->gpu_total_us;
    for (size_t k = 0; k < rs->n_kernel_names; k++) {
      if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        gs_trace_kernel_row *grown = realloc(s->rows, cap * sizeof *grown);
        if (!grown) {
          st = gs_error(GS_ERR_NOMEM, "cannot compare the traces");
          break;
        }
        s->rows = grown;
        s->cap = cap;
      }
      s->rows[s->n++] = rs->kernels[k];
    }
  }
  gs_trace_stats_free(&st_all);
  if (st != GS_OK) return st;
  // Sum the ranks' rows of one name into its first.
  if (s->n) qsort(s->rows, s->n, sizeof *s->rows, row_by_name);
  size_t out = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (out && strcmp(s->rows[out - 1].name, s->rows[i].name) == 0) {
      s->rows[out - 1].count += s->rows[i].count;
      s->rows[out - 1].total_us += s->rows[i].total_us;
    } else {
      s->rows[out++] = s->rows[i];
    }
  }
  s->n = out;
  return GS_OK;
}

static int by_change(const void *a, const void *b) {
  const gs_trace_diff_row *x = a, *y = b;
  double dx = fabs(x->new_us - x->base_us), dy = fabs(y->new_us - y->base_us);
  if (dx != dy) return dx > dy ? -1 : 1;
  return strcmp(x->name, y->name);
}

static void add_row(gs_trace_diff *d, const gs_trace_kernel_row *b, const gs_trace_kernel_row *n,
                    const side *sb, const side *sn) {
  gs_trace_diff_row *row = &d->rows[d->n++];
  memset(row, 0, sizeof *row);
  const gs_trace_kernel_row *any = b ? b : n;
  snprintf(row->name, sizeof row->name, "%s", any->name);
  row->cls = any->cls;
  if (b) {
    row->base_count = (double)b->count / (double)sb->ranks;
    row->base_us = b->total_us / (double)sb->ranks;
  }
  if (n) {
    row->new_count = (double)n->count / (double)sn->ranks;
    row->new_us = n->total_us / (double)sn->ranks;
  }
  if (!b) {
    row->kind = GS_DIFF_ADDED;
    d->n_added++;
  } else if (!n) {
    row->kind = GS_DIFF_REMOVED;
    d->n_removed++;
  } else if (row->base_count != row->new_count ||
             fabs(row->new_us - row->base_us) > d->threshold * row->base_us) {
    row->kind = GS_DIFF_CHANGED;
    d->n_changed++;
  }
}

gs_status gs_trace_diff_load(const char *const *base, size_t n_base, const char *const *next,
                             size_t n_next, double threshold, gs_trace_diff *out) {
  memset(out, 0, sizeof *out);
  out->threshold = threshold;
  side sb = {0}, sn = {0};
  gs_status st = load_side(base, n_base, &sb);
  if (st == GS_OK) st = load_side(next, n_next, &sn);
  if (st == GS_OK && (sb.ranks == 0 || sn.ranks == 0))
    st = gs_error(GS_ERR_FORMAT, "compare: a side without a rank to compare");
  if (st == GS_OK) {
    out->rows = calloc(sb.n + sn.n + 1, sizeof *out->rows);
    if (!out->rows) st = gs_error(GS_ERR_NOMEM, "cannot compare the traces");
  }
  if (st == GS_OK) {
    out->base_ranks = sb.ranks;
    out->new_ranks = sn.ranks;
    out->base_gpu_us = sb.gpu_us / (double)sb.ranks;
    out->new_gpu_us = sn.gpu_us / (double)sn.ranks;
    size_t i = 0, j = 0;
    while (i < sb.n || j < sn.n) {
      int c = i == sb.n ? 1 : j == sn.n ? -1 : strcmp(sb.rows[i].name, sn.rows[j].name);
      if (c == 0) add_row(out, &sb.rows[i++], &sn.rows[j++], &sb, &sn);
      else if (c < 0) add_row(out, &sb.rows[i++], NULL, &sb, &sn);
      else add_row(out, NULL, &sn.rows[j++], &sb, &sn);
    }
    if (out->n > 1) qsort(out->rows, out->n, sizeof *out->rows, by_change);
  }
  free(sb.rows);
  free(sn.rows);
  if (st != GS_OK) gs_trace_diff_free(out);
  return st;
}

void gs_trace_diff_free(gs_trace_diff *d) {
  free(d->rows);
  memset(d, 0, sizeof *d);
}

static const char *kind_name(gs_diff_kind k) {
  static const char *const names[] = {"same", "changed", "added", "removed"};
  return names[k];
}

static gs_status render_json(FILE *out, const gs_trace_diff *d) {
  gs_json_build b = {0};
  cJSON *root = gs_json_check(&b, cJSON_CreateObject());
  gs_json_put_string(&b, root, "schema", "gpuscale/trace-diff/v1");
  gs_json_put_number(&b, root, "base_ranks", (double)d->base_ranks);
  gs_json_put_number(&b, root, "new_ranks", (double)d->new_ranks);
  gs_json_put_number(&b, root, "base_gpu_us_per_rank", d->base_gpu_us);
  gs_json_put_number(&b, root, "new_gpu_us_per_rank", d->new_gpu_us);
  gs_json_put_number(&b, root, "threshold", d->threshold);
  gs_json_put_number(&b, root, "added", (double)d->n_added);
  gs_json_put_number(&b, root, "removed", (double)d->n_removed);
  gs_json_put_number(&b, root, "changed", (double)d->n_changed);
  cJSON *rows = gs_json_put_array(&b, root, "kernels");
  for (size_t i = 0; i < d->n; i++) {
    const gs_trace_diff_row *r = &d->rows[i];
    cJSON *o = gs_json_check(&b, cJSON_CreateObject());
    gs_json_put_string(&b, o, "name", r->name);
    gs_json_put_string(&b, o, "change", kind_name(r->kind));
    gs_json_put_number(&b, o, "base_count", r->base_count);
    gs_json_put_number(&b, o, "new_count", r->new_count);
    gs_json_put_number(&b, o, "base_us", r->base_us);
    gs_json_put_number(&b, o, "new_us", r->new_us);
    gs_json_append(&b, rows, o);
  }
  gs_status st = gs_json_build_status(&b, "the trace diff");
  if (st == GS_OK) st = gs_json_print(out, root);
  cJSON_Delete(root);
  return st;
}

/* A count per rank: whole when it is. */
static void count_cell(char *cell, double v) {
  if (v == floor(v)) gs_render_cellf(cell, "%.0f", v);
  else gs_render_cellf(cell, "%.2f", v);
}

gs_status gs_trace_diff_render(FILE *out, const gs_trace_diff *d, gs_compare_format format) {
  if (format == GS_COMPARE_JSON) return render_json(out, d);
  gs_render_writer w = {.f = out, .md = format == GS_COMPARE_MARKDOWN};
  gs_render_block(&w, 1, "", "Trace diff: %zu kernel%s added, %zu removed, %zu changed", d->n_added,
                  d->n_added == 1 ? "" : "s", d->n_removed, d->n_changed);
  gs_render_block(&w, 0, "  ", "Per rank (BASE %zu rank%s, NEW %zu): GPU time %.1f us -> %.1f us. "
                  "Changed: another count, or a time more than %g%% away from BASE's.",
                  d->base_ranks, d->base_ranks == 1 ? "" : "s", d->new_ranks, d->base_gpu_us,
                  d->new_gpu_us, 100.0 * d->threshold);
  static const char *const head[] = {"change", "kernel", "count", "count new", "time",
                                     "time new", "delta"};
  static const int left[] = {1, 1, 0, 0, 0, 0, 0};
  gs_render_table t;
  gs_render_table_init(&t, 7, head, left);
  for (size_t i = 0; i < d->n; i++) {
    const gs_trace_diff_row *r = &d->rows[i];
    if (r->kind == GS_DIFF_SAME) continue;
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%s", kind_name(r->kind));
    if (strlen(r->name) <= 72) gs_render_cellf(c[1], "%s", r->name);
    else gs_render_cellf(c[1], "%.69s...", r->name);
    count_cell(c[2], r->base_count);
    count_cell(c[3], r->new_count);
    gs_render_time(c[4], r->base_us * 1e-6);
    gs_render_time(c[5], r->new_us * 1e-6);
    if (r->kind == GS_DIFF_CHANGED && r->base_us > 0)
      gs_render_cellf(c[6], "%+.1f%%", 100.0 * (r->new_us - r->base_us) / r->base_us);
    else
      gs_render_cellf(c[6], "-");
  }
  return gs_render_table_done(&w, &t, "  ");
}
