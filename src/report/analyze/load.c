/* Loading result documents for a report: reads and analyses them on all
 * cores (each measurement through the read room), keys the rows into
 * series (series.c: workload, backend, scaling, canonical options, label,
 * split policy) in file order, then has each series analysed (advice.c).
 * The formulas are those of docs/report.md. */
#include "report/analyze/report.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "core/json.h"
#include "core/result.h"
#include "core/scaling.h"
#include "report/analyze/internal.h"
#include "report/read/read.h"

static void copy_text(char *dst, size_t size, const char *src) {
  snprintf(dst, size, "%s", src ? src : "");
}

/* ---- canonical JSON of the workload options ------------------------------ */

static int compare_items(const void *a, const void *b) {
  const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
  return strcmp(x->string ? x->string : "", y->string ? y->string : "");
}

/* Sorts the members of every object under `item` by name, in place. */
static int sort_members(cJSON *item) {
  if (!item) return 1;
  size_t n = 0;
  for (cJSON *c = item->child; c; c = c->next) {
    if (!sort_members(c)) return 0;
    n++;
  }
  if (!cJSON_IsObject(item) || n < 2) return 1;
  cJSON **all = malloc(n * sizeof *all);
  if (!all) return 0;
  size_t i = 0;
  for (cJSON *c = item->child; c; c = c->next) all[i++] = c;
  qsort(all, n, sizeof *all, compare_items);
  for (i = 0; i < n; i++) {
    all[i]->next = i + 1 < n ? all[i + 1] : NULL;
    // cJSON keeps the last element in the first element's prev.
    all[i]->prev = i > 0 ? all[i - 1] : all[n - 1];
  }
  item->child = all[0];
  free(all);
  return 1;
}

/* Canonical text (members sorted by name, no whitespace) of `options`;
 * "null" when absent. Caller frees. Recording arrival times measures the
 * same work: llm's documents before --arrival-times became a common option
 * (config.arrival_times) kept it among the workload's options when given
 * ("arrival_times"), which is left out so that one series spans both. */
static char *canonical_json(const cJSON *options) {
  if (!options) return strdup("null");
  cJSON *copy = cJSON_Duplicate(options, 1);
  if (!copy) return NULL;
  if (cJSON_IsObject(copy)) cJSON_DeleteItemFromObjectCaseSensitive(copy, "arrival_times");
  char *text = sort_members(copy) ? cJSON_PrintUnformatted(copy) : NULL;
  cJSON_Delete(copy);
  if (!text) return NULL;
  // cJSON's allocator is malloc unless changed; copy to be sure free() is right.
  char *out = strdup(text);
  cJSON_free(text);
  return out;
}

/* ---- loading --------------------------------------------------------------- */

static gs_report_series *find_series(gs_report *r, const gs_report_series *key) {
  for (size_t i = 0; i < r->n_series; i++)
    if (gs_report_series_same(&r->series[i], key, 0)) return &r->series[i];
  return NULL;
}

/* One measurement read and analysed on its own, waiting for its series. */
typedef struct {
  gs_report_series key;       /* only the identity members and item_unit; options
                                 owned until placed */
  gs_report_row row;          /* its ranks and hosts owned until placed */
} prepared_row;

/* The measurements of one document, prepared by a worker thread. */
typedef struct {
  size_t n;
  prepared_row *rows;
  gs_status status;
  char error[1024];           /* the worker's error message when status != GS_OK */
} prepared_doc;

static void prepared_free(prepared_doc *d) {
  for (size_t i = 0; i < d->n; i++) {
    free(d->rows[i].key.options);
    gs_report_row_free(&d->rows[i].row);
  }
  free(d->rows);
  d->rows = NULL;
  d->n = 0;
}

/* Frees the sample arrays of every run and rank of `doc`; nothing else (the
 * rows keep pointers to strings elsewhere in the document). Freed memory is
 * reused by the next document this thread parses. */
static void drop_samples(cJSON *doc) {
  static const char *const rank_arrays[] = {"device_seconds", "wall_seconds", "comm_seconds"};
  const cJSON *ms = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
  for (const cJSON *m = ms ? ms->child : NULL; m; m = m->next) {
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(m, "runs");
    for (cJSON *run = runs ? runs->child : NULL; run; run = run->next) {
      cJSON_DeleteItemFromObjectCaseSensitive(run, "step_seconds");
      const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(run, "ranks");
      for (cJSON *rk = ranks ? ranks->child : NULL; rk; rk = rk->next)
        for (size_t i = 0; i < 3; i++) cJSON_DeleteItemFromObjectCaseSensitive(rk, rank_arrays[i]);
    }
  }
}

/* The part of the series key beyond workload, backend, scaling, options and
 * split: variant, scenario and plan task, e.g. "variant batch=8" or
 * "task 0 (0:resample)"; "" when the measurement has none of them. */
static void series_label(const cJSON *m, const gs_report_row *row, char *out, size_t size) {
  gs_scaling_series_label(gs_json_string_member(m, "variant", NULL),
                          gs_json_string_member(m, "scenario", NULL), row->placement.task,
                          row->placement.task_spec, out, size);
}

/* Reads document `fi` and analyses each of its measurements as a row
 * (everything that does not need other rows). Thread-safe: it writes only
 * r->docs[fi] and `out`. */
static gs_status prepare_document(gs_report *r, size_t fi, prepared_doc *out) {
  const char *file = r->files[fi];
  gs_status st = gs_result_read(file, &r->docs[fi]);
  if (st != GS_OK) return st;
  const cJSON *doc = r->docs[fi];
  const cJSON *config = cJSON_GetObjectItemCaseSensitive(doc, "config");
  const cJSON *doc_options = cJSON_GetObjectItemCaseSensitive(config, "workload_options");
  const cJSON *ms = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
  size_t count = (size_t)cJSON_GetArraySize(ms);
  out->rows = calloc(count ? count : 1, sizeof *out->rows);
  if (!out->rows) return gs_error(GS_ERR_NOMEM, "%s: out of memory", file);
  size_t mi = 0;
  for (const cJSON *m = ms->child; m; m = m->next, mi++) {
    prepared_row *p = &out->rows[out->n++];
    gs_report_series *key = &p->key;
    copy_text(key->workload, sizeof key->workload, gs_json_string_member(m, "workload", ""));
    copy_text(key->backend, sizeof key->backend, gs_json_string_member(m, "backend", ""));
    copy_text(key->scaling, sizeof key->scaling, gs_json_string_member(m, "scaling", ""));
    gs_report_row *row = &p->row;
    row->file = fi;
    row->measurement = mi;
    st = gs_report_measurement_read(m, mi, file, (r->flags & GS_REPORT_ROW_SAMPLES) != 0, row);
    if (st != GS_OK) return st;
    gs_report_placement_read(doc, m, row);
    // A measurement's own options (should a writer add them) win over the
    // document's; a plan task's are those of its entry in config.tasks.
    const cJSON *own = cJSON_GetObjectItemCaseSensitive(m, "workload_options");
    if (!own && row->placement.task >= 0)
      own = cJSON_GetObjectItemCaseSensitive(
          cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(config, "tasks"),
                             row->placement.task),
          "workload_options");
    key->options = canonical_json(own ? own : doc_options);
    if (!key->options) return gs_error(GS_ERR_NOMEM, "%s: out of memory", file);
    series_label(m, row, key->label, sizeof key->label);
    copy_text(key->split, sizeof key->split,
              gs_json_string_member(cJSON_GetObjectItemCaseSensitive(m, "split"), "policy", ""));
    key->item_unit = gs_json_string_member(gs_json_member(m, "cost"), "item_unit", NULL);
    if ((st = gs_report_breakdown_read(m, file, row)) != GS_OK) return st;
    if ((st = gs_report_rank_extras(doc, m, file, &r->thresholds, row)) != GS_OK) return st;
    // Requests overlap and are not steps in lockstep: no split of a step.
    if (row->requests.present) row->breakdown.available = 0;
    gs_report_ingest_read(doc, m, row);
    if ((st = gs_report_rank_symmetry(row, &r->thresholds)) != GS_OK) return st;
    // The pipeline first: its stages decide which ranks are peers in the scores.
    if ((st = gs_report_pipeline_read(doc, m, row)) != GS_OK) return st;
    if ((st = gs_report_straggler_read(doc, m, row)) != GS_OK) return st;
    if ((st = gs_report_arrival_read(doc, m, file, row)) != GS_OK) return st;
    gs_report_collective_read(doc, m, row);
    if ((st = gs_report_rates_read(m, file, row)) != GS_OK) return st;
    gs_report_cost_read(doc, m, &r->prices, row);
    if ((st = gs_report_roofline_read(m, row)) != GS_OK) return st;
  }
  if (r->flags & GS_REPORT_DROP_SAMPLES) drop_samples(r->docs[fi]);
  return GS_OK;
}

/* Moves the prepared rows of a document into their series (in order). */
static gs_status place_document(gs_report *r, prepared_doc *d) {
  for (size_t i = 0; i < d->n; i++) {
    prepared_row *p = &d->rows[i];
    gs_report_series *s = find_series(r, &p->key);
    if (!s) {
      gs_report_series *grown = realloc(r->series, (r->n_series + 1) * sizeof *grown);
      if (!grown) return gs_error(GS_ERR_NOMEM, "out of memory");
      r->series = grown;
      s = &r->series[r->n_series++];
      *s = p->key;  // the identity members; rows, verdict and advice start empty
    } else {
      free(p->key.options);
      if (!s->item_unit) s->item_unit = p->key.item_unit;
    }
    p->key.options = NULL;
    gs_report_row *rows = realloc(s->rows, (s->n_rows + 1) * sizeof *rows);
    if (!rows) return gs_error(GS_ERR_NOMEM, "out of memory");
    s->rows = rows;
    s->rows[s->n_rows++] = p->row;
    memset(&p->row, 0, sizeof p->row);  // now owned by the series
  }
  return GS_OK;
}

typedef struct {
  gs_report *r;
  prepared_doc *docs;
  size_t n;
  size_t next;             /* next document to take; guarded by lock */
  pthread_mutex_t lock;
} prepare_pool;

static void *prepare_worker(void *arg) {
  prepare_pool *pool = arg;
  for (;;) {
    pthread_mutex_lock(&pool->lock);
    size_t i = pool->next++;
    pthread_mutex_unlock(&pool->lock);
    if (i >= pool->n) return NULL;
    prepared_doc *d = &pool->docs[i];
    d->status = prepare_document(pool->r, i, d);
    if (d->status != GS_OK) copy_text(d->error, sizeof d->error, gs_last_error());
  }
}

/* Reads and prepares all documents, several at once on a multi-core host
 * (parsing dominates the time of a large report). */
static void prepare_all(gs_report *r, prepared_doc *docs, size_t n) {
  prepare_pool pool = {.r = r, .docs = docs, .n = n};
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t threads = cores > 1 ? (size_t)cores : 1;
  if (threads > 8) threads = 8;
  if (threads > n) threads = n;
  pthread_t tid[8];
  size_t started = 0;
  if (threads > 1 && pthread_mutex_init(&pool.lock, NULL) == 0) {
    for (; started < threads; started++)
      if (pthread_create(&tid[started], NULL, prepare_worker, &pool) != 0) break;
    for (size_t t = 0; t < started; t++) pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&pool.lock);
  }
  // Without threads (one core, or none could start) this thread does it all.
  for (size_t i = started ? n : 0; i < n; i++) {
    docs[i].status = prepare_document(r, i, &docs[i]);
    if (docs[i].status != GS_OK) copy_text(docs[i].error, sizeof docs[i].error, gs_last_error());
  }
}

/* See report.h. */
gs_status gs_report_load(const char *const *paths, size_t n, const gs_report_thresholds *th,
                         gs_report *out) {
  return gs_report_load_with(paths, n, th, NULL, 0, out);
}

/* See report.h. */
gs_status gs_report_load_with(const char *const *paths, size_t n, const gs_report_thresholds *th,
                              const gs_report_prices *prices, unsigned flags, gs_report *out) {
  memset(out, 0, sizeof *out);
  out->flags = flags;
  if (prices) out->prices = *prices;
  if (n == 0) return gs_error(GS_ERR_USAGE, "gpuscale report: no result files given");
  if (!(th->moderate > 0) || !(th->critical > th->moderate))
    return gs_error(GS_ERR_USAGE,
                    "gpuscale report: thresholds must satisfy 0 < moderate (%g%%) < critical "
                    "(%g%%)", 100.0 * th->moderate, 100.0 * th->critical);
  out->thresholds = *th;
  out->files = calloc(n, sizeof *out->files);
  out->docs = calloc(n, sizeof *out->docs);
  if (!out->files || !out->docs) {
    gs_report_free(out);
    return gs_error(GS_ERR_NOMEM, "out of memory");
  }
  gs_status st = GS_OK;
  for (size_t i = 0; i < n && st == GS_OK; i++) {
    out->files[i] = strdup(paths[i]);
    out->n_files = i + 1;
    if (!out->files[i]) st = gs_error(GS_ERR_NOMEM, "out of memory");
  }
  prepared_doc *docs = st == GS_OK ? calloc(n, sizeof *docs) : NULL;
  if (st == GS_OK && !docs) st = gs_error(GS_ERR_NOMEM, "out of memory");
  if (st == GS_OK) {
    // Workers record their errors in docs[i].error; the first in file order
    // is the one recorded for the caller.
    prepare_all(out, docs, n);
    for (size_t i = 0; i < n && st == GS_OK; i++) {
      if (docs[i].status != GS_OK)
        st = gs_error(docs[i].status, "%s", docs[i].error);
      else
        st = place_document(out, &docs[i]);
    }
  }
  for (size_t i = 0; docs && i < n; i++) prepared_free(&docs[i]);
  free(docs);
  for (size_t i = 0; i < out->n_series && st == GS_OK; i++) st = gs_report_series_analyse(&out->series[i], out);
  if (st == GS_OK) st = gs_report_pipelines(out);
  if (st == GS_OK) gs_report_set_titles(out);
  if (st != GS_OK) gs_report_free(out);
  return st;
}

/* See report.h. */
void gs_report_free(gs_report *r) {
  for (size_t i = 0; i < r->n_series; i++) {
    gs_report_series *s = &r->series[i];
    for (size_t j = 0; j < s->n_rows; j++) {
      gs_report_row_free(&s->rows[j]);
    }
    free(s->rows);
    free(s->options);
    for (size_t j = 0; j < s->n_advice; j++) free(s->advice[j]);
  }
  free(r->series);
  for (size_t i = 0; i < r->n_files; i++) {
    free(r->files ? r->files[i] : NULL);
    if (r->docs) cJSON_Delete(r->docs[i]);
  }
  free(r->files);
  free(r->docs);
  memset(r, 0, sizeof *r);
}
