/* A prediction from result documents: the machine's collective fits from
 * its coll documents (or its links from a p2p document), checked to be of
 * the machine the workloads ran on,
 * one model per workload series fitted to its measurements (all of them,
 * or those below --holdout), evaluated at the requested GPU counts with
 * speedup, efficiency, cost and, for held-out counts, the error against
 * what was measured. Models in model.c, the GPU counts in counts.c;
 * docs/predict.md. */
#include "report/predict/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/json.h"
#include "core/scaling.h"

static double number_of(const cJSON *obj, const char *name) {
  const cJSON *x = gs_json_member(obj, name);
  return cJSON_IsNumber(x) && isfinite(x->valuedouble) ? x->valuedouble : NAN;
}

/* ---- the machine ----------------------------------------------------------------- */

/* "HOST, N x GPU MODEL" (or "HOST, CPU MODEL" without GPUs) of a document:
 * what must agree between a coll document and the workloads it serves. */
static void machine_of(const cJSON *doc, char *out, size_t size) {
  const cJSON *env = gs_json_member(doc, "environment");
  const cJSON *host = gs_json_member(env, "host");
  const cJSON *gpus = gs_json_member(env, "gpus");
  const cJSON *first = cJSON_IsArray(gpus) ? gpus->child : NULL;
  const cJSON *name = gs_json_member(first, "name");
  const char *h = cJSON_IsString(host) ? host->valuestring : "unknown host";
  if (cJSON_IsString(name)) {
    snprintf(out, size, "%s, %d x %s", h, cJSON_GetArraySize(gpus), name->valuestring);
  } else {
    const cJSON *cpu = gs_json_member(gs_json_member(env, "cpu"), "model");
    snprintf(out, size, "%s, %s", h, cJSON_IsString(cpu) ? cpu->valuestring : "no GPU");
  }
}

static int is_ok(const gs_report_row *row) { return strcmp(row->status, "ok") == 0; }

/* The ok measurements of one collective op in the coll rows of a report. */
typedef struct {
  double *bytes, *seconds;
  int *ranks;
  size_t n, cap;
  const char *file; /* the last one's document */
} coll_points;

static void coll_points_free(coll_points *c) {
  free(c->bytes);
  free(c->seconds);
  free(c->ranks);
  memset(c, 0, sizeof *c);
}

/* Collects the ok measurements of `op` in the coll rows of `r` into `out`
 * (freed by the caller also on failure). With `machine`, every one must
 * come from that machine (machine_of). */
static gs_status coll_points_of(const gs_report *r, gs_coll_op op, const char *machine,
                                coll_points *out) {
  for (size_t i = 0; i < r->n_series; i++) {
    const gs_report_series *s = &r->series[i];
    for (size_t j = 0; j < s->n_rows; j++) {
      const gs_report_row *row = &s->rows[j];
      const gs_report_collective *c = &row->collective;
      if (!c->present || !c->op || strcmp(c->op, gs_coll_op_names[op]) != 0 || !is_ok(row))
        continue;
      char here[256];
      machine_of(r->docs[row->file], here, sizeof here);
      if (machine && strcmp(here, machine) != 0)
        return gs_error(GS_ERR_USAGE, "%s: the coll document was measured on another machine "
                        "(%s) than the workloads (%s): predict needs the collectives of the "
                        "machine the workloads ran on", gs_report_file_name(r, row->file),
                        here, machine);
      double secs = isfinite(row->collective.time) ? row->collective.time : row->step.mean;
      if (!(secs > 0.0) || !(row->collective.bytes > 0.0)) continue;
      if (out->n == out->cap) {
        out->cap = out->cap ? 2 * out->cap : 32;
        double *gb = realloc(out->bytes, out->cap * sizeof *gb);
        if (gb) out->bytes = gb;
        double *gs = gb ? realloc(out->seconds, out->cap * sizeof *gs) : NULL;
        if (gs) out->seconds = gs;
        int *gr = gs ? realloc(out->ranks, out->cap * sizeof *gr) : NULL;
        if (!gr) return gs_error(GS_ERR_NOMEM, "out of memory reading the collectives");
        out->ranks = gr;
      }
      out->bytes[out->n] = row->collective.bytes;
      out->seconds[out->n] = secs;
      out->ranks[out->n] = row->world_size;
      out->file = gs_report_file_name(r, row->file);
      out->n++;
    }
  }
  return GS_OK;
}

/* Fits `op` to `pts` (pooled over sizes and world sizes by bus bytes) into
 * `fit`: GS_ERR_USAGE naming the file when it was measured at one size. */
static gs_status fit_points(const coll_points *pts, gs_coll_op op, gs_coll_fit *fit) {
  double *x = malloc((pts->n ? pts->n : 1) * sizeof *x);
  if (!x) return gs_error(GS_ERR_NOMEM, "out of memory fitting the collectives");
  size_t distinct = 0;
  for (size_t i = 0; i < pts->n; i++) {
    x[i] = pts->bytes[i] * gs_coll_busbw_factor(op, pts->ranks[i]);
    if (i == 0 || x[i] != x[i - 1]) distinct++;
  }
  gs_status st;
  if (distinct < 2)
    st = gs_error(GS_ERR_USAGE, "%s: %s was measured at one size only; an alpha-beta fit "
                  "needs at least two sizes (e.g. gpuscale coll %s -b 8 -e 1G)", pts->file,
                  gs_coll_op_names[op], gs_coll_op_names[op]);
  else if ((st = gs_coll_fit_alpha_beta(x, pts->seconds, pts->n, fit)) != GS_OK)
    st = gs_error(st, "%s: %s: %s", pts->file, gs_coll_op_names[op], gs_last_error());
  free(x);
  return st;
}

/* The allreduce measured within a node as one curve per rank count into
 * p->curves (counts measured at one size give none). */
static gs_status measured_curves(const coll_points *pts, gs_predict *p) {
  p->curves = calloc(pts->n ? pts->n : 1, sizeof *p->curves);
  double *b = malloc((pts->n ? pts->n : 1) * 2 * sizeof *b);
  if (!p->curves || !b) {
    free(b);
    return gs_error(GS_ERR_NOMEM, "out of memory for the measured collectives");
  }
  double *t = b + pts->n;
  gs_status st = GS_OK;
  for (size_t i = 0; i < pts->n && st == GS_OK; i++) {
    int seen = 0;
    for (size_t k = 0; k < p->n_curves; k++) seen |= p->curves[k].ranks == pts->ranks[i];
    if (seen) continue;
    size_t n = 0;
    for (size_t j = i; j < pts->n; j++)
      if (pts->ranks[j] == pts->ranks[i]) {
        b[n] = pts->bytes[j];
        t[n++] = pts->seconds[j];
      }
    gs_coll_curve *c = &p->curves[p->n_curves];
    st = gs_coll_curve_build(b, t, n, pts->ranks[i], c);
    if (st == GS_OK && c->n >= 2) p->n_curves++;
    else if (st == GS_OK) gs_coll_curve_free(c);
  }
  free(b);
  p->machine.curves = p->curves;
  p->machine.n_curves = p->n_curves;
  return st;
}

/* Fits every collective op of the coll rows of `r` into p->coll, the
 * allreduce into p->machine with its measured curves. */
static gs_status fit_collectives(const gs_report *r, gs_predict *p, const char *machine) {
  for (int op = 0; op < GS_COLL_COUNT; op++) {
    coll_points pts = {0};
    gs_status st = coll_points_of(r, (gs_coll_op)op, machine, &pts);
    if (st == GS_OK && pts.n > 0) {
      gs_predict_coll *c = &p->coll[p->n_coll];
      c->op = gs_coll_op_names[op];
      st = fit_points(&pts, (gs_coll_op)op, &c->fit);
      if (st == GS_OK) {
        p->n_coll++;
        p->coll_file = pts.file;
        if (op == GS_COLL_ALLREDUCE) {
          p->machine.have_allreduce = 1;
          p->machine.allreduce = c->fit;
          st = measured_curves(&pts, p);
        }
      }
    }
    coll_points_free(&pts);
    if (st != GS_OK) return st;
  }
  return GS_OK;
}

/* The network between nodes from the --inter-node-coll document `net`: its
 * 2-rank allreduce as measured (p->network_curve) and its fit, whose alpha
 * is two ring steps (a = alpha / 2) and whose beta is one GPU's link. */
static gs_status network_from_coll(const gs_report *net, gs_predict *p) {
  const char *file = net->n_files ? gs_report_file_name(net, 0) : "--inter-node-coll";
  coll_points pts = {0}, other = {0};
  gs_status st = coll_points_of(net, GS_COLL_ALLREDUCE, NULL, &pts);
  int other_op = GS_COLL_ALLREDUCE;
  while (st == GS_OK && pts.n == 0 && other.n == 0 && ++other_op < GS_COLL_COUNT)
    st = coll_points_of(net, (gs_coll_op)other_op, NULL, &other);
  if (st == GS_OK && pts.n == 0) {
    st = other.n > 0 ? gs_error(GS_ERR_USAGE, "option --inter-node-coll: %s measured %s; the "
                                "network is described by an allreduce (gpuscale coll allreduce)",
                                other.file, gs_coll_op_names[other_op])
                     : gs_error(GS_ERR_USAGE, "option --inter-node-coll: %s is not a coll "
                                "document with ok allreduce measurements", file);
  }
  // Only the 2-rank measurements: one GPU on each of two nodes.
  size_t k = 0;
  for (size_t i = 0; st == GS_OK && i < pts.n; i++)
    if (pts.ranks[i] == 2) {
      pts.bytes[k] = pts.bytes[i];
      pts.seconds[k] = pts.seconds[i];
      pts.ranks[k++] = 2;
    }
  if (st == GS_OK && k == 0)
    st = gs_error(GS_ERR_USAGE, "option --inter-node-coll: %s measured allreduce at %d ranks; "
                  "the network is described by 2 ranks, one GPU on each of 2 nodes", pts.file,
                  pts.ranks[0]);
  pts.n = k;
  if (st == GS_OK) st = fit_points(&pts, GS_COLL_ALLREDUCE, &p->network_fit);
  if (st == GS_OK && !(p->network_fit.beta_seconds_per_byte > 0.0))
    st = gs_error(GS_ERR_USAGE, "option --inter-node-coll: %s: the allreduce's time does not grow "
                  "with its size (fitted bandwidth %g s/B)", pts.file,
                  p->network_fit.beta_seconds_per_byte);
  if (st == GS_OK) st = gs_coll_curve_build(pts.bytes, pts.seconds, pts.n, 2, &p->network_curve);
  if (st == GS_OK) {
    p->network_file = pts.file;
    p->machine.network_curve = &p->network_curve;
    double alpha = p->network_fit.alpha_seconds;
    p->machine.network.alpha_seconds = alpha > 0.0 ? alpha / 2.0 : 0.0;
    p->machine.network.beta_seconds_per_byte = p->network_fit.beta_seconds_per_byte;
  }
  coll_points_free(&pts);
  coll_points_free(&other);
  return st;
}

/* The median of test `name` of a p2p document over its GPU pairs: the
 * smallest (`want_max` 0) or the largest; NaN when it did not run. */
static double p2p_extreme(const cJSON *p2p, const char *name, int want_max) {
  double best = NAN;
  const cJSON *tests = gs_json_member(p2p, "tests");
  for (const cJSON *t = tests ? tests->child : NULL; t; t = t->next) {
    const cJSON *tn = gs_json_member(t, "name");
    if (!cJSON_IsString(tn) || strcmp(tn->valuestring, name) != 0) continue;
    const cJSON *rows = gs_json_member(t, "cells");
    for (const cJSON *row = rows ? rows->child : NULL; row; row = row->next)
      for (const cJSON *c = row->child; c; c = c->next) {
        double v = number_of(c, "median");
        if (isfinite(v) && (isnan(best) || (want_max ? v > best : v < best))) best = v;
      }
  }
  return best;
}

/* Without a coll document: the node's allreduce from a p2p document of the
 * machine, as a ring over its links: alpha = 2(g-1) link latencies (the
 * slowest pair's SM-path latency), beta = 1 / the slowest pair's one-way
 * copy-engine bandwidth. An optimistic bound: it leaves out NCCL's launch
 * and synchronisation (docs/predict.md). */
static gs_status links_from_p2p(const gs_report *r, gs_predict *p, const char *machine) {
  for (size_t i = 0; i < r->n_files && !p->machine.have_allreduce; i++) {
    const cJSON *p2p = gs_json_member(r->docs[i], "p2p");
    if (!cJSON_IsObject(p2p)) continue;
    char here[256];
    machine_of(r->docs[i], here, sizeof here);
    if (strcmp(here, machine) != 0)
      return gs_error(GS_ERR_USAGE, "%s: the p2p document was measured on another machine (%s) "
                      "than the workloads (%s)", gs_report_file_name(r, i), here, machine);
    double bw = p2p_extreme(p2p, "ce_unidir_p2p", 0);
    double latency = p2p_extreme(p2p, "latency_sm_p2p", 1);
    if (!(bw > 0.0) || !(latency > 0.0)) continue;
    int g = p->machine.gpus_per_node > 1 ? p->machine.gpus_per_node : 2;
    p->machine.have_allreduce = 1;
    p->machine.allreduce.alpha_seconds = 2.0 * (g - 1) * latency;
    p->machine.allreduce.beta_seconds_per_byte = 1.0 / bw;
    p->machine.allreduce.r_squared = NAN;
    p->links_file = gs_report_file_name(r, i);
  }
  return GS_OK;
}

/* ---- one series ------------------------------------------------------------------ */

static const cJSON *options_of(const gs_report *r, const gs_report_row *row) {
  return gs_json_member(gs_json_member(r->docs[row->file], "config"), "workload_options");
}

/* Which model fits series `s` (from what its documents hold), or -1 with
 * the reason in `why`. */
static int kind_of(const gs_report *r, const gs_report_row *row, const char **why) {
  if (row->collective.present) {
    *why = "collectives describe the machine; they are not a workload to predict";
    return -1;
  }
  if (row->requests.present) {
    if (!row->requests.scenario || strcmp(row->requests.scenario, "offline") != 0) {
      *why = "only the offline scenario has a model (server and single-stream are bound by "
             "their arrivals, not by the GPUs)";
      return -1;
    }
    return GS_PREDICT_REQUESTS;
  }
  if (row->loadgen || !row->breakdown.available) {
    *why = "its measurements have no per-rank step samples to split into compute and "
           "communication";
    return -1;
  }
  if (row->breakdown.comm_measured) {
    const cJSON *o = options_of(r, row);
    if (cJSON_IsNumber(gs_json_member(o, "parameters")) &&
        cJSON_IsNumber(gs_json_member(o, "bucket_kb")))
      return GS_PREDICT_DATA_PARALLEL;
    *why = "it communicates, but its document gives no gradient size (parameters, bucket_kb)";
    return -1;
  }
  return GS_PREDICT_FIXED_STEP;
}

static int fitted_row(const gs_predict_options *opt, const gs_report_row *row) {
  return gs_predict_row_fitted(opt, NULL, row);
}

static int compare_ints(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* The counts to predict for `s`: the options' counts and, with a holdout,
 * the measured counts at or above it; sorted, without repeats. */
static gs_status counts_of(const gs_predict_options *opt, const gs_report *r,
                           const gs_report_series *s, int **out, size_t *n) {
  *out = malloc((opt->n_counts + s->n_rows + 1) * sizeof **out);
  if (!*out) return gs_error(GS_ERR_NOMEM, "out of memory");
  size_t k = 0;
  for (size_t i = 0; i < opt->n_counts; i++) (*out)[k++] = opt->counts[i];
  for (size_t j = 0; j < s->n_rows; j++)
    if (gs_predict_row_checked(opt, r, &s->rows[j])) (*out)[k++] = s->rows[j].world_size;
  qsort(*out, k, sizeof **out, compare_ints);
  size_t u = 0;
  for (size_t i = 0; i < k; i++)
    if (u == 0 || (*out)[u - 1] != (*out)[i]) (*out)[u++] = (*out)[i];
  *n = u;
  return GS_OK;
}

/* The measured figure at `gpus` (mean over repeats): step seconds, or
 * tokens/s for requests, with its 95% bounds in *lo, *hi (the mean step's
 * interval; for requests tokens over the runs' mean interval); NaN when
 * not measured among the checked rows. */
static double measured_at(const gs_predict_options *opt, const gs_report *r,
                          const gs_report_series *s, gs_predict_kind kind, int gpus, double *lo,
                          double *hi) {
  double sum = 0.0, sum_lo = 0.0, sum_hi = 0.0;
  int n = 0;
  for (size_t j = 0; j < s->n_rows; j++) {
    const gs_report_row *row = &s->rows[j];
    if (!gs_predict_row_checked(opt, r, row) || row->world_size != gpus) continue;
    double v = kind == GS_PREDICT_REQUESTS ? row->throughput : row->step.mean;
    double l = row->step.ci95_low, h = row->step.ci95_high;
    if (kind == GS_PREDICT_REQUESTS) {
      gs_predict_request_obs o;
      const double half = gs_predict_request_run(r, row, &o) ? o.run_half : 0.0;
      l = v / (1.0 + half);
      h = half < 1.0 ? v / (1.0 - half) : INFINITY;
    }
    if (isfinite(v)) {
      sum += v;
      sum_lo += isfinite(l) ? l : v;
      sum_hi += !isnan(h) ? h : v;
      n++;
    }
  }
  *lo = n ? sum_lo / n : NAN;
  *hi = n ? sum_hi / n : NAN;
  return n ? sum / n : NAN;
}

/* Fits the model of series `s` (its name, kind, parameters, fitted counts,
 * items per step and price) into `w`. */
static gs_status fit_series(const gs_report *r, const gs_report_series *s, gs_predict_kind kind,
                            const gs_predict *p, gs_predict_workload *w) {
  const gs_predict_options *opt = &p->opt;
  gs_report_series_name(s, w->name, sizeof w->name);
  w->item_unit = s->item_unit;
  w->model.kind = kind;
  w->model.scaling = gs_scaling_of(s->scaling);
  w->price_per_gpu_hour = NAN;
  w->worst_error = NAN;
  w->cheapest = w->fastest = -1;
  w->items_per_step = NAN;
  const gs_report_row *first = NULL;
  size_t n_fit = 0;
  for (size_t j = 0; j < s->n_rows; j++)
    if (fitted_row(opt, &s->rows[j])) {
      if (!first) first = &s->rows[j];
      n_fit++;
    }
  // A request series is fitted from its stream's other layouts too.
  if (!first && kind == GS_PREDICT_REQUESTS) first = &s->rows[0];
  if (!first)
    return gs_error(GS_ERR_USAGE, "%s: no ok measurement%s to fit", w->name,
                    opt->holdout > 1 ? " below the --holdout count" : "");
  int checkable = 0;
  double lo, hi;
  for (size_t j = 0; j < s->n_rows; j++)
    checkable |= !isnan(measured_at(opt, r, s, kind, s->rows[j].world_size, &lo, &hi));
  if (opt->holdout > 1 && !checkable && kind != GS_PREDICT_REQUESTS)
    return gs_error(GS_ERR_USAGE, "%s: nothing measured at %d GPUs or more to check the "
                    "prediction against (--holdout)", w->name, opt->holdout);
  const char *file = gs_report_file_name(r, first->file);
  // One GPU per node: every all-reduce crosses the network, which the options describe.
  if (kind == GS_PREDICT_DATA_PARALLEL && !p->machine.have_allreduce &&
      p->machine.gpus_per_node > 1)
    return gs_error(GS_ERR_USAGE, "%s (%s) communicates: give a coll document of the same "
                    "machine with allreduce (gpuscale coll allreduce -b 8 -e 1G --out coll.json), "
                    "or its p2p document for an optimistic bound", w->name, file);
  if (first->cost.gpu_model)
    w->price_per_gpu_hour = gs_report_price_of(&r->prices, first->cost.gpu_model);

  gs_status st = GS_OK;
  if (kind == GS_PREDICT_REQUESTS) {
    st = gs_predict_requests_fit(r, s, p, w);
  } else {
    gs_predict_step_obs *obs = calloc(n_fit, sizeof *obs);
    if (!obs) return gs_error(GS_ERR_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t j = 0; j < s->n_rows; j++) {
      const gs_report_row *row = &s->rows[j];
      if (!fitted_row(opt, row) || !row->breakdown.available || !row->has_step) continue;
      obs[k].gpus = row->world_size;
      obs[k].step = row->step.mean;
      obs[k].compute = row->breakdown.compute;
      obs[k].comm = row->breakdown.comm;
      if (k < 8) w->fitted[w->n_fitted++] = row->world_size;
      k++;
    }
    st = gs_predict_fit_step(obs, k, &w->model);
    free(obs);
    if (st != GS_OK) st = gs_error(st, "%s (%s): %s", w->name, file, gs_last_error());
    w->items_per_step = (double)first->items_per_step;
    if (w->model.scaling == GS_SCALING_WEAK) w->items_per_step /= first->world_size;
    if (kind == GS_PREDICT_DATA_PARALLEL) {
      const cJSON *o = options_of(r, first);
      w->model.gradient_bytes = 4.0 * number_of(o, "parameters");
      w->model.bucket_bytes = 1024.0 * number_of(o, "bucket_kb");
    }
  }
  if (st != GS_OK) return st;

  // X(1): the model's own 1-GPU throughput, so that a predicted speedup is
  // a ratio of two predictions: 1.00x and 100% at one GPU whatever the
  // model's error there (a measured X(1) over a predicted X(1) gave 1.12x
  // "at one GPU"); the measured 1-GPU throughput only when the model has
  // none.
  w->base_throughput = NAN;
  gs_predict_point one;
  if (gs_predict_point_at_layout(&w->model, &p->machine, w->items_per_step, 1, 1, 1, &one) ==
          GS_OK &&
      one.throughput > 0.0) {
    w->base_throughput = one.throughput;
    memcpy(w->base_bounds, one.bound_throughput, sizeof w->base_bounds);
  } else {
    for (int i = 0; i < 4; i++) w->base_bounds[i] = NAN;
  }
  for (size_t j = 0; j < s->n_rows && isnan(w->base_throughput); j++)
    if (fitted_row(opt, &s->rows[j]) && s->rows[j].world_size == 1 &&
        isfinite(s->rows[j].throughput))
      w->base_throughput = s->rows[j].throughput;
  return GS_OK;
}

/* Speedup, efficiency, the holdout error and the cost of point `i` of `w`,
 * and whether it is the fastest or cheapest so far. */
static void finish_point(const gs_predict_options *opt, const gs_report *r,
                         const gs_report_series *s, gs_predict_workload *w, size_t i) {
  gs_predict_point *pt = &w->points[i];
  gs_predict_kind kind = w->model.kind;
  pt->speedup = gs_scaling_speedup(w->base_throughput, pt->throughput);
  pt->efficiency = gs_scaling_efficiency(pt->speedup, pt->gpus);
  // The speedup of one fit over its own X(1) moves with it: its bounds are
  // the extremes of the ratio over the fit's corners.
  pt->speedup_low = pt->speedup_high = NAN;
  for (int c = 0; c < 4 && kind == GS_PREDICT_REQUESTS; c++) {
    const double x = pt->bound_throughput[c] / w->base_bounds[c];
    if (isnan(x)) {
      pt->speedup_low = pt->speedup_high = NAN;
      break;
    }
    if (c == 0 || x < pt->speedup_low) pt->speedup_low = x;
    if (c == 0 || x > pt->speedup_high) pt->speedup_high = x;
  }
  pt->measured = measured_at(opt, r, s, kind, pt->gpus, &pt->measured_low, &pt->measured_high);
  const int req = kind == GS_PREDICT_REQUESTS;
  double predicted = req ? pt->throughput : pt->step_seconds;
  if (isfinite(pt->measured) && pt->measured > 0.0) {
    pt->error = (predicted - pt->measured) / pt->measured;
    // Its bounds: the prediction's (requests) against the measurement's.
    const double p_lo = req && isfinite(pt->throughput_low) ? pt->throughput_low : predicted;
    const double p_hi = req && isfinite(pt->throughput_high) ? pt->throughput_high : predicted;
    if (pt->measured_high > 0.0 && pt->measured_low > 0.0) {
      pt->error_low = p_lo / pt->measured_high - 1.0;
      pt->error_high = p_hi / pt->measured_low - 1.0;
    }
    if (isnan(w->worst_error) || fabs(pt->error) > fabs(w->worst_error)) w->worst_error = pt->error;
  }
  if (!(pt->throughput > 0.0)) return;
  if (opt->target_items > 0.0) pt->seconds_to_target = opt->target_items / pt->throughput;
  if (isfinite(w->price_per_gpu_hour)) {
    double per_second = w->price_per_gpu_hour * pt->gpus / 3600.0;
    pt->dollars_per_million = per_second / pt->throughput * 1e6;
    if (opt->target_items > 0.0) pt->dollars_to_target = per_second * pt->seconds_to_target;
    if (w->cheapest < 0 || pt->dollars_per_million < w->points[w->cheapest].dollars_per_million)
      w->cheapest = (int)i;
  }
  // Ties (within rounding) go to the fewer GPUs.
  if (w->fastest < 0 || pt->throughput > w->points[w->fastest].throughput * (1.0 + 1e-9))
    w->fastest = (int)i;
}

/* Relative half-width of the 95% interval of a row's mean step. */
static double step_half(const gs_report_row *row) {
  return row->step.mean > 0.0 ? (row->step.ci95_high - row->step.ci95_low) / 2.0 / row->step.mean
                              : 0.0;
}

/* The largest gain per GPU between two fitted counts of `s` (measured
 * throughput ratio over GPU ratio), with the two counts in *from, *to and
 * the gain's lower bound in *low (the gain less the two steps' relative
 * 95% half-widths); 0 when fewer than two counts were fitted. */
static double steepest_gain(const gs_predict_options *opt, const gs_report *r,
                            const gs_report_series *s, int *from, int *to, double *low) {
  double best = 0.0;
  for (size_t a = 0; a < s->n_rows; a++)
    for (size_t b = 0; b < s->n_rows; b++) {
      const gs_report_row *x = &s->rows[a], *y = &s->rows[b];
      if (!gs_predict_row_fitted(opt, r, x) || !gs_predict_row_fitted(opt, r, y) ||
          y->world_size <= x->world_size ||
          !(x->throughput > 0.0) || !(y->throughput > 0.0))
        continue;
      double gain = y->throughput / x->throughput * x->world_size / y->world_size;
      if (gain > best) {
        best = gain;
        *from = x->world_size;
        *to = y->world_size;
        *low = gain * (1.0 - step_half(x) - step_half(y));
      }
    }
  return best;
}

/* Whether the model of `w` reproduces the measurements it was fitted to,
 * evaluated as measured; w->misfit names the first it does not reproduce,
 * and the caller refuses to predict:
 * - one it misses by more than GS_PREDICT_MISFIT and beyond that
 *   measurement's 95% interval (of the mean step; for requests, of the
 *   mean run over its runs, else the step interval's relative width);
 * - else a super-linear gain between two counts (beyond both intervals),
 *   which no model of work / N plus costs reproduces, however close. */
static void check_fit(const gs_predict_options *opt, const gs_report *r, const gs_report_series *s,
                      gs_predict_kind kind, const gs_predict *p, gs_predict_workload *w) {
  // The measured configuration: the measured machine's nodes and the
  // measured tensor-parallel degree, whatever the options predict.
  gs_predict_machine as_measured = p->machine;
  as_measured.gpus_per_node = p->measured_gpus_per_node;
  int from = 0, to = 0;
  double low = 0.0, gain = steepest_gain(opt, r, s, &from, &to, &low);
  char super[160] = "";
  if (gain > 1.005)  // above 100% per GPU as printed
    snprintf(super, sizeof super, "the series is super-linear (%.2fx the throughput from %d to "
             "%d GPU%s, %.0f%% per GPU), which no model of work divided over the GPUs gives",
             gain * to / from, from, to, to == 1 ? "" : "s", 100.0 * gain);
  const int req = kind == GS_PREDICT_REQUESTS;
  w->misfit[0] = '\0';
  for (size_t j = 0; j < s->n_rows && !w->misfit[0]; j++) {
    const gs_report_row *row = &s->rows[j];
    if (!gs_predict_row_fitted(opt, r, row) || !row->has_step) continue;
    gs_predict_point pt;
    if (gs_predict_point_at(&w->model, &as_measured, w->items_per_step, row->world_size, 0,
                            &pt) != GS_OK)
      continue;
    const double measured = req ? row->throughput : row->step.mean;
    const double predicted = req ? pt.throughput : pt.step_seconds;
    if (!(measured > 0.0) || !isfinite(predicted)) continue;
    // llm: the interval of its mean run over the runs (one run: the step's).
    gs_predict_request_obs run;
    const double half = req && gs_predict_request_run(r, row, &run) && run.run_half > 0.0
                            ? run.run_half
                            : step_half(row);
    const double off = predicted / measured - 1.0;
    const int missed = fabs(off) > GS_PREDICT_MISFIT && fabs(off) > half;
    // The super-linear count is named even when the model comes close to it.
    if (!missed && !(low > 1.0 && row->world_size == to)) continue;
    char a[32], b[32];
    if (req) {
      gs_format_rate(predicted, a, sizeof a);
      gs_format_rate(measured, b, sizeof b);
    } else {
      gs_format_seconds(predicted, a, sizeof a);
      gs_format_seconds(measured, b, sizeof b);
    }
    snprintf(w->misfit, sizeof w->misfit,
             "refusing to extrapolate: the model does not fit the measurement at %d GPU%s: it "
             "gives %s against %s measured (%+.0f%%, %s the measurement's 95%% interval of "
             "+-%.1f%%)%s%s",
             row->world_size, row->world_size == 1 ? "" : "s", a, b, 100.0 * off,
             fabs(off) > half ? "beyond" : "within", 100.0 * half, super[0] ? "; " : "", super);
  }
}

/* Fits series `s` and predicts it at the options' counts into `w`;
 * GS_ERR_USAGE naming the measurement when the model misses one it was
 * fitted to (w->misfit). */
static gs_status predict_series(const gs_report *r, const gs_report_series *s, gs_predict_kind kind,
                                const gs_predict *p, gs_predict_workload *w) {
  const gs_predict_options *opt = &p->opt;
  gs_status st = fit_series(r, s, kind, p, w);
  if (st != GS_OK) return st;
  int tp = kind == GS_PREDICT_REQUESTS ? opt->tensor_parallel : 0;
  int pp = kind == GS_PREDICT_REQUESTS ? opt->pipeline_stages : 0;
  check_fit(opt, r, s, kind, p, w);
  if (w->misfit[0])
    return gs_error(GS_ERR_USAGE, "%s (%s): %s", w->name,
                    gs_report_file_name(r, s->rows[0].file), w->misfit);
  int *counts = NULL;
  size_t n_counts = 0;
  if ((st = counts_of(opt, r, s, &counts, &n_counts)) != GS_OK) return st;
  w->points = calloc(n_counts ? n_counts : 1, sizeof *w->points);
  if (!w->points) {
    free(counts);
    return gs_error(GS_ERR_NOMEM, "out of memory");
  }
  for (size_t i = 0; i < n_counts; i++) {
    st = gs_predict_point_at_layout(&w->model, &p->machine, w->items_per_step, counts[i], tp,
                                    pp, &w->points[i]);
    if (st != GS_OK) {
      st = gs_error(st, "%s: %s", w->name, gs_last_error());
      break;
    }
    w->n_points++;
    finish_point(opt, r, s, w, i);
  }
  free(counts);
  return st;
}

/* ---- the whole prediction ---------------------------------------------------------- */

/* See predict.h. */
gs_status gs_predict_build(const gs_report *r, const gs_predict_options *opt, gs_predict *out) {
  memset(out, 0, sizeof *out);
  out->opt = *opt;
  out->machine.network.alpha_seconds = opt->inter_node_latency_seconds;
  out->machine.network.beta_seconds_per_byte =
      opt->inter_node_bytes_per_second > 0.0 ? 1.0 / opt->inter_node_bytes_per_second : 0.0;

  // The machine of the workloads: the first workload row's document.
  char machine[256] = "";
  int machine_gpus = 0, have_machine = 0;
  for (size_t i = 0; i < r->n_series && !have_machine; i++)
    for (size_t j = 0; j < r->series[i].n_rows; j++) {
      const gs_report_row *row = &r->series[i].rows[j];
      if (row->collective.present) continue;
      machine_of(r->docs[row->file], machine, sizeof machine);
      const cJSON *gpus = gs_json_member(gs_json_member(r->docs[row->file], "environment"), "gpus");
      machine_gpus = cJSON_IsArray(gpus) ? cJSON_GetArraySize(gpus) : 0;
      have_machine = 1;
      break;
    }
  if (!have_machine)
    return gs_error(GS_ERR_USAGE, "no workload measurements to predict: give a workload's "
                    "result document (run or scale) beside the coll document");
  gs_status st = fit_collectives(r, out, machine);
  if (st == GS_OK && opt->inter_node_coll) st = network_from_coll(opt->inter_node_coll, out);
  if (st != GS_OK) {
    gs_predict_free(out);
    return st;
  }

  int largest = 1;
  for (size_t i = 0; i < r->n_series; i++)
    for (size_t j = 0; j < r->series[i].n_rows; j++)
      if (r->series[i].rows[j].world_size > largest) largest = r->series[i].rows[j].world_size;
  out->measured_gpus_per_node = machine_gpus > 0 ? machine_gpus : largest;
  out->machine.gpus_per_node =
      opt->gpus_per_node > 0 ? opt->gpus_per_node : out->measured_gpus_per_node;
  if (!out->machine.have_allreduce && (st = links_from_p2p(r, out, machine)) != GS_OK) {
    gs_predict_free(out);
    return st;
  }

  // llm's stage transfers within a node: a coll sendrecv document of the
  // workloads' host and backend (the first workload series').
  for (size_t i = 0; i < r->n_series && !out->sendrecv_file; i++) {
    const gs_report_series *s = &r->series[i];
    if (s->n_rows == 0 || s->rows[0].collective.present) continue;
    if (gs_report_sendrecv_curve(r, s->rows[0].file, s->backend, &out->sendrecv,
                                 &out->sendrecv_file))
      out->machine.sendrecv = &out->sendrecv;
    break;
  }
  if (opt->holdout_layout.tp > 0) {
    int found = 0;
    for (size_t i = 0; i < r->n_series && !found; i++)
      for (size_t j = 0; j < r->series[i].n_rows && !found; j++) {
        const gs_report_row *row = &r->series[i].rows[j];
        if (!row->requests.present || !is_ok(row)) continue;
        const gs_predict_layout l = gs_predict_row_layout(r, row);
        found = gs_predict_layout_held(opt, &l);
      }
    if (!found) {
      gs_predict_free(out);
      return gs_error(GS_ERR_USAGE, "option --holdout-layout: no ok llm measurement of tp %d x "
                      "pp %d to check the prediction against", opt->holdout_layout.tp,
                      opt->holdout_layout.pp);
    }
  }
  out->workloads = calloc(r->n_series ? r->n_series : 1, sizeof *out->workloads);
  if (!out->workloads) return gs_error(GS_ERR_NOMEM, "out of memory");
  st = gs_predict_serving_build(r, out);
  if (st == GS_OK) st = gs_predict_pipeline_build(r, out);
  for (size_t i = 0; i < r->n_series && st == GS_OK; i++) {
    const gs_report_series *s = &r->series[i];
    if (s->n_rows == 0 || s->rows[0].collective.present) continue;
    const char *why = NULL;
    int kind = kind_of(r, &s->rows[0], &why);
    char name[256];
    gs_report_series_name(s, name, sizeof name);
    char here[256];
    machine_of(r->docs[s->rows[0].file], here, sizeof here);
    if (strcmp(here, machine) != 0) {
      if (opt->skip_unmodelled) {
        size_t used = strlen(out->skipped);
        snprintf(out->skipped + used, sizeof out->skipped - used, "%s%s: measured on another "
                 "machine (%s) than the first series (%s)", used ? "; " : "", name, here,
                 machine);
        continue;
      }
      st = gs_error(GS_ERR_USAGE, "%s: %s was measured on another machine (%s) than %s: predict "
                    "one machine at a time", gs_report_file_name(r, s->rows[0].file), name, here,
                    machine);
      break;
    }
    if (kind < 0 && gs_predict_serving_has(out, i)) continue; // predicted by its highest rate
    if (gs_predict_pipeline_has(out, i)) continue; // predicted by its stages (pipeline.c)
    if (kind < 0) {
      if (opt->skip_unmodelled) {
        size_t used = strlen(out->skipped);
        snprintf(out->skipped + used, sizeof out->skipped - used, "%s%s: %s", used ? "; " : "",
                 name, why);
        continue;
      }
      st = gs_error(GS_ERR_USAGE, "%s: no prediction model for %s: %s",
                    gs_report_file_name(r, s->rows[0].file), name, why);
      break;
    }
    gs_predict_workload *w = &out->workloads[out->n_workloads];
    w->series = i;
    st = predict_series(r, s, (gs_predict_kind)kind, out, w);
    if (st != GS_OK && w->misfit[0] && opt->skip_unmodelled) {
      // A model that misses its own measurements predicts nothing: named, left out.
      size_t used = strlen(out->skipped);
      snprintf(out->skipped + used, sizeof out->skipped - used, "%s%s: %s", used ? "; " : "",
               name, w->misfit);
      free(w->points);
      memset(w, 0, sizeof *w);
      st = GS_OK;
      continue;
    }
    out->n_workloads++;
  }
  if (st == GS_OK && out->n_workloads == 0 && out->n_serving == 0 && out->n_pipelines == 0 &&
      !opt->skip_unmodelled)
    st = gs_error(GS_ERR_USAGE, "no workload series to predict");
  if (st != GS_OK) gs_predict_free(out);
  return st;
}

/* See predict.h. */
void gs_predict_free(gs_predict *p) {
  for (size_t i = 0; i < p->n_workloads; i++) free(p->workloads[i].points);
  free(p->workloads);
  for (size_t i = 0; i < p->n_serving; i++) free(p->serving[i].points);
  free(p->serving);
  gs_predict_pipeline_free(p);
  for (size_t i = 0; i < p->n_curves; i++) gs_coll_curve_free(&p->curves[i]);
  free(p->curves);
  gs_coll_curve_free(&p->network_curve);
  gs_coll_curve_free(&p->sendrecv);
  memset(p, 0, sizeof *p);
}
