/* The straggler scores of one measurement (docs/statistics.md, "Straggler
 * scores"): each run's per-rank, per-iteration times of the document lined
 * up by iteration and handed to core/straggler, then judged for the
 * busiest host (nobody named where its CPU ranks outnumber its cores,
 * docs/stragglers.md). The stages of an mlp pipeline do different work:
 * a rank is held only against the ranks of its own stage (rank % stages,
 * the other replicas), and a stage of one replica has no relative score. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/straggler.h"
#include "core/json.h"
#include "report/analyze/internal.h"

/* Element i of array `arr` as a number, NaN when missing or null. */
static double element(const cJSON *arr, int i) {
  const cJSON *x = cJSON_GetArrayItem(arr, i);
  return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* The iterations of one run: n ranks' times, rank k's at times[k]. */
typedef struct {
  double *block;
  const double **times;
} run_times;

/* Fills `out` with the times of the ranks of `run` (a run object of the
 * document, ranks in any order, numbers 0..n_ranks-1 checked by the read
 * room): iteration i is kept when every rank has a positive time for it.
 * Sets *iters; *clock to what was scored. 0 when memory runs out. */
static int run_read(const cJSON *run, size_t n_ranks, run_times *out, size_t *iters,
                    const char **clock) {
  const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(run, "ranks");
  const cJSON **use = calloc(n_ranks, sizeof *use), **comm = calloc(n_ranks, sizeof *comm);
  int ok = use && comm;
  int n = -1;
  for (const cJSON *rk = ranks ? ranks->child : NULL; ok && rk; rk = rk->next) {
    const double rn = gs_json_number_member(rk, "rank");
    if (!(rn >= 0 && rn < (double)n_ranks)) continue;
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(rk, "device_seconds");
    const cJSON *a = cJSON_IsArray(dev) ? dev : cJSON_GetObjectItemCaseSensitive(rk, "wall_seconds");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(rk, "comm_seconds");
    use[(size_t)rn] = cJSON_IsArray(a) ? a : NULL;
    comm[(size_t)rn] = cJSON_IsArray(c) ? c : NULL;
    const int len = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
    if (n < 0 || len < n) n = len;
    *clock = a == dev ? (comm[(size_t)rn] ? "device - comm" : "device")
                      : (comm[(size_t)rn] ? "wall - comm" : "wall");
  }
  for (size_t k = 0; ok && k < n_ranks; k++)
    if (!use[k]) n = 0;
  *iters = 0;
  if (ok && n > 0) {
    out->block = malloc((size_t)n * n_ranks * sizeof *out->block);
    out->times = malloc(n_ranks * sizeof *out->times);
    ok = out->block && out->times;
  }
  for (int i = 0; ok && i < n; i++) {
    int keep = 1;
    for (size_t k = 0; k < n_ranks && keep; k++) {
      double t = element(use[k], i);
      if (comm[k]) t -= element(comm[k], i);
      out->block[k * (size_t)n + *iters] = t;
      keep = isfinite(t) && t > 0.0;
    }
    if (keep) (*iters)++;
  }
  for (size_t k = 0; ok && out->times && k < n_ranks; k++)
    out->times[k] = out->block + k * (size_t)(n > 0 ? n : 0);
  free(use);
  free(comm);
  return ok;
}

/* See internal.h. */
int gs_report_busiest_host(const cJSON *doc, const gs_report_row *row, const char **host) {
  size_t hosts = 0, most = 0;
  const char *busiest = NULL;
  for (size_t k = 0; k < row->n_ranks; k++) {
    const char *h = row->ranks[k].host;
    if (!h) continue;
    size_t first = 0, same = 0;
    while (first < k && !(row->ranks[first].host && strcmp(row->ranks[first].host, h) == 0))
      first++;
    hosts += first == k;
    for (size_t j = k; first == k && j < row->n_ranks; j++)
      same += row->ranks[j].host && strcmp(row->ranks[j].host, h) == 0;
    if (same > most) {
      most = same;
      busiest = h;
    }
  }
  if (host)
    *host = busiest ? busiest
                    : gs_json_string_member(gs_json_member(doc, "environment"), "host", NULL);
  if (hosts == 0) hosts = 1;
  return (int)(((size_t)row->world_size + hosts - 1) / hosts);
}

/* The busiest host of `row` as its document `doc` records it, the ranks'
 * backend from measurement `m`. */
static gs_straggler_host host_of(const cJSON *doc, const cJSON *m, const gs_report_row *row) {
  gs_straggler_host h = {.load_average = NAN};
  h.ranks = gs_report_busiest_host(doc, row, &h.host);
  h.cpu = strcmp(gs_json_string_member(m, "backend", ""), "cpu") == 0;
  const cJSON *cpu = gs_json_member(gs_json_member(doc, "environment"), "cpu");
  const double cores = gs_json_number_member(cpu, "logical_cores");
  const double load = gs_json_number_member(cpu, "load_average");
  h.cores = isfinite(cores) && cores >= 1.0 && cores < 1e6 ? (int)cores : 0;
  h.load_average = isfinite(load) && load >= 0.0 ? load : NAN;
  return h;
}

/* See internal.h. */
gs_status gs_report_straggler_read(const cJSON *doc, const cJSON *m, gs_report_row *row) {
  row->scores_device = -1;
  row->scores_host = host_of(doc, m, row);
  if (row->n_ranks < 2 || row->requests.present || row->ingested || row->loadgen) return GS_OK;
  const cJSON *runs = cJSON_GetObjectItemCaseSensitive(m, "runs");
  const size_t n_runs = (size_t)cJSON_GetArraySize(runs);
  run_times *held = calloc(n_runs ? n_runs : 1, sizeof *held);
  gs_straggler_run *in = calloc(n_runs ? n_runs : 1, sizeof *in);
  gs_status st = held && in ? GS_OK : gs_error(GS_ERR_NOMEM, "out of memory");
  size_t r = 0, scored = 0;
  const char *clock = NULL;
  for (const cJSON *run = runs ? runs->child : NULL; st == GS_OK && run; run = run->next, r++) {
    if (!run_read(run, row->n_ranks, &held[r], &in[r].n_iters, &clock))
      st = gs_error(GS_ERR_NOMEM, "out of memory");
    in[r].times = held[r].times;
    scored += in[r].n_iters;
  }
  // A rank's first iteration of a run needs its others' too: 2 iterations
  // are the least that has a spread.
  size_t *stage = NULL;
  const gs_report_pipeline *pl = &row->pipeline;
  if (st == GS_OK && pl->stages > 1 && pl->unit && strcmp(pl->unit, "step") == 0) {
    stage = malloc(row->n_ranks * sizeof *stage);
    if (!stage) st = gs_error(GS_ERR_NOMEM, "out of memory");
    for (size_t k = 0; stage && k < row->n_ranks; k++) stage[k] = k % (size_t)pl->stages;
  }
  if (st == GS_OK && scored >= 2) {
    st = gs_straggler_compute_peers(in, n_runs, row->n_ranks, stage, &row->scores);
    if (st == GS_OK) {
      row->scores_clock = clock;
      gs_straggler_judge(&row->scores, &row->scores_host);
    }
    // The named rank's GPU: its first device (a rank spans gpus_per_rank).
    const cJSON *devices = cJSON_GetObjectItemCaseSensitive(m, "devices");
    const double dev =
        row->scores.named >= 0
            ? gs_json_number_or_nan(cJSON_GetArrayItem(devices, row->scores.named * row->gpus_per_rank))
            : NAN;
    row->scores_device = dev >= 0 ? (int)dev : -1;
  }
  for (size_t i = 0; held && i < n_runs; i++) {
    free(held[i].block);
    free(held[i].times);
  }
  free(held);
  free(in);
  free(stage);
  return st;
}
