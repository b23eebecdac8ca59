/* The prediction models as arithmetic: collectives on one node and across
 * nodes, the fits of the step-based and request-based models, and their
 * evaluation at one GPU count with the terms that make up the prediction.
 * Formulas and assumptions in docs/predict.md. */
#include "report/predict/predict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gs_predict_kind_name(gs_predict_kind kind) {
  switch (kind) {
    case GS_PREDICT_DATA_PARALLEL: return "data parallel";
    case GS_PREDICT_REQUESTS: return "requests";
    case GS_PREDICT_FIXED_STEP: break;
  }
  return "fixed step";
}

/* See predict.h. */
void gs_predict_from_name(unsigned from, char *out, size_t size) {
  static const char *const names[] = {"measured", "fit", "figures"};
  size_t used = 0;
  if (size) out[0] = '\0';
  for (unsigned k = 0; k < 3; k++)
    if (from & (1u << k) && used < size)
      used += (size_t)snprintf(out + used, size - used, "%s%s", used ? "+" : "", names[k]);
  if (used == 0) snprintf(out, size, "none");
}

/* Seconds of an allreduce of `bytes` at `ranks` GPUs of one node: the
 * measured curve at that count where it covers the size, else the fit. */
static double node_allreduce(const gs_predict_machine *m, double bytes, int ranks,
                             unsigned *from) {
  double t;
  for (size_t i = 0; i < m->n_curves; i++)
    if (m->curves[i].ranks == ranks && gs_coll_curve_seconds(&m->curves[i], bytes, &t)) {
      *from |= GS_PREDICT_FROM_MEASURED;
      return t;
    }
  *from |= GS_PREDICT_FROM_FIT;
  return gs_coll_predict_seconds(&m->allreduce, GS_COLL_ALLREDUCE, (uint64_t)bytes, ranks);
}

/* See predict.h. */
double gs_predict_allreduce(const gs_predict_machine *m, double bytes, int gpus,
                            const char **how, unsigned *from) {
  unsigned ignored = 0;
  if (!from) from = &ignored;
  if (how) *how = "none";
  if (gpus <= 1 || !(bytes > 0.0)) return 0.0;
  int per_node = m->gpus_per_node > 0 ? m->gpus_per_node : gpus;
  if (gpus <= per_node) {
    if (how) *how = "intra-node";
    return node_allreduce(m, bytes, gpus, from);
  }
  double intra = per_node > 1 ? node_allreduce(m, bytes, per_node, from) : 0.0;
  gs_coll_algorithm alg;
  int measured = 0;
  double t = gs_coll_allreduce_hierarchical(intra, &m->network, m->network_curve, bytes, per_node,
                                            gpus / per_node, &alg, &measured);
  *from |= measured             ? GS_PREDICT_FROM_MEASURED
           : m->network_curve ? GS_PREDICT_FROM_FIT
                              : GS_PREDICT_FROM_FIGURES;
  if (how) *how = alg == GS_COLL_TREE ? "tree" : "ring";
  return t;
}

/* See predict.h. Simpson's rule on E = int x n phi(x) Phi(x)^(n-1) dx over
 * [m - 6, m + 5], m = sqrt(2 ln n) (where the maximum lies): the density of
 * the maximum is negligible outside; 160 intervals keep the relative error
 * below 1e-6 from n = 2 to 10^6. */
double gs_predict_expected_max(int n) {
  if (n <= 1) return 0.0;
  const int intervals = 160;
  double middle = sqrt(2.0 * log((double)n));
  double lo = middle - 6.0, hi = middle + 5.0;
  double h = (hi - lo) / intervals, sum = 0.0;
  for (int i = 0; i <= intervals; i++) {
    double x = lo + h * i;
    double cdf = 0.5 * erfc(-x * 0.7071067811865476);  // Phi(x) = erfc(-x / sqrt 2) / 2
    // n phi(x) Phi(x)^(n-1) in one exponential: phi(x) = exp(-x^2/2) / sqrt(2 pi).
    double f = cdf > 0.0 ? x * (double)n * 0.3989422804014327 *
                               exp(-0.5 * x * x + (double)(n - 1) * log(cdf))
                         : 0.0;
    double w = i == 0 || i == intervals ? 1.0 : (i % 2 ? 4.0 : 2.0);
    sum += w * f;
  }
  return sum * h / 3.0;
}

/* The share of the work one of `gpus` ranks does. */
static double work_share(gs_scaling scaling, int gpus) {
  return scaling == GS_SCALING_WEAK ? 1.0 : 1.0 / (double)gpus;
}

/* Least squares of y = a + b x over n points; 0 (a, b untouched) when the
 * x are all the same. */
static int fit_line(const double *x, const double *y, size_t n, double *a, double *b) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; i++) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  double dn = (double)n, det = dn * sxx - sx * sx;
  if (!(det > 1e-12 * (dn * sxx > 0.0 ? dn * sxx : 1.0))) return 0;
  *b = (dn * sxy - sx * sy) / det;
  *a = (sy - *b * sx) / dn;
  return 1;
}

/* See predict.h. */
gs_status gs_predict_fit_step(const gs_predict_step_obs *obs, size_t n, gs_predict_model *model) {
  if (n == 0) return gs_error(GS_ERR_USAGE, "a step model needs at least one measured GPU count");
  double *x = malloc(2 * n * sizeof *x);
  if (!x) return gs_error(GS_ERR_NOMEM, "out of memory");
  double *y = x + n, mean = 0.0, mean_ratio = 0.0;
  int weak = model->scaling == GS_SCALING_WEAK;
  for (size_t i = 0; i < n; i++) {
    if (obs[i].gpus < 1 || !isfinite(obs[i].step) || !isfinite(obs[i].compute) ||
        !isfinite(obs[i].comm)) {
      free(x);
      return gs_error(GS_ERR_USAGE, "a step model needs finite step, compute and communication "
                      "times (at %d GPUs)", obs[i].gpus);
    }
    // Strong: compute = overhead + work / N. Weak: compute = work + growth (N - 1).
    x[i] = weak ? (double)(obs[i].gpus - 1) : work_share(model->scaling, obs[i].gpus);
    y[i] = obs[i].compute;
    mean += y[i] / (double)n;
    mean_ratio += y[i] / (weak ? 1.0 : x[i]) / (double)n;
  }
  double a = NAN, b = NAN;
  int fitted = fit_line(x, y, n, &a, &b);
  free(x);
  double work, overhead = 0.0, growth = 0.0;
  if (weak) {
    // One count, or a compute that falls with N (noise): the 1-rank work alone.
    work = fitted && b > 0.0 ? a : mean;
    growth = fitted && b > 0.0 ? b : 0.0;
  } else if (!fitted || a < 0.0) {
    // One count: nothing tells the fixed part from the divided one, so all
    // of it is work. A negative part is noise.
    work = mean_ratio;
  } else if (b < 0.0) {
    work = 0.0;
    overhead = mean;
  } else {
    work = b;
    overhead = a;
  }
  double noise = 0.0;
  size_t noisy = 0;
  for (size_t i = 0; i < n; i++) {
    if (obs[i].gpus < 2) continue;
    double rest = obs[i].step - obs[i].compute - obs[i].comm;
    noise += (rest > 0.0 ? rest : 0.0) / gs_predict_expected_max(obs[i].gpus);
    noisy++;
  }
  model->work_seconds = work;
  model->overhead_seconds = overhead;
  model->growth_seconds = growth;
  model->noise_seconds = noisy ? noise / (double)noisy : 0.0;
  return GS_OK;
}

/* ---- requests -------------------------------------------------------------------- */

/* Batch rounds of the busiest replica when `samples` requests are dealt to
 * `replicas` replicas taking up to `batch` at a time; its batch in `*size`. */
static int rounds_of(int samples, int batch, int replicas, int *size) {
  int mine = (samples + replicas - 1) / replicas;
  if (size) *size = mine < batch ? mine : batch;
  return mine > 0 ? (mine + batch - 1) / batch : 0;
}

/* Tensor-parallel communication of one batch round of `size` sequences at
 * `tp` GPUs: two allreduces of the hidden state per layer, for the prefill
 * (every prompt token) and for each decode step (one token per sequence). */
static double round_comm(const gs_predict_model *md, const gs_predict_machine *m, int size,
                         int tp, const char **how, unsigned *from) {
  if (tp <= 1) {
    if (how) *how = "none";
    return 0.0;
  }
  double token_bytes = md->hidden * md->element_bytes;
  double per_layer = 2.0 * (double)md->layers;
  double prefill =
      gs_predict_allreduce(m, size * md->prefill_tokens * token_bytes, tp, NULL, from);
  double decode = gs_predict_allreduce(m, size * token_bytes, tp, how, from);
  return per_layer * (prefill + md->decode_steps * decode);
}

/* See predict.h. */
gs_status gs_predict_fit_requests(const gs_predict_request_obs *obs, size_t n,
                                  const gs_predict_machine *m, gs_predict_model *model) {
  if (n == 0) return gs_error(GS_ERR_USAGE, "a request model needs at least one measured GPU count");
  if (model->samples < 1 || model->batch < 1 || model->measured_tp < 1)
    return gs_error(GS_ERR_USAGE, "a request model needs samples, batch and tensor parallelism >= 1");
  if (model->measured_tp > 1 && !m->have_allreduce)
    return gs_error(GS_ERR_USAGE, "a tensor-parallel measurement needs a coll document with "
                    "allreduce to separate its communication");
  double round = 0.0, tokens = 0.0;
  for (size_t i = 0; i < n; i++) {
    if (obs[i].gpus % model->measured_tp != 0)
      return gs_error(GS_ERR_USAGE, "%d GPUs is not a multiple of the measured tensor-parallel "
                      "degree %d", obs[i].gpus, model->measured_tp);
    if (!(obs[i].run_seconds > 0.0) || !(obs[i].tokens_per_run > 0.0))
      return gs_error(GS_ERR_USAGE, "a request model needs a positive run time and token count "
                      "(at %d GPUs)", obs[i].gpus);
    int size = 0;
    int rounds = rounds_of(model->samples, model->batch, obs[i].gpus / model->measured_tp, &size);
    round += obs[i].run_seconds / rounds - round_comm(model, m, size, model->measured_tp, NULL, NULL);
    tokens += obs[i].tokens_per_run;
  }
  model->round_seconds = round / (double)n;
  model->tokens_per_run = tokens / (double)n;
  return GS_OK;
}

/* ---- one count ------------------------------------------------------------------ */

/* Exposed all-reduce of the gradients at `gpus`: all buckets but the last
 * are reduced while the backward pass (two thirds of `compute`) makes the
 * remaining ones; the last bucket's all-reduce is exposed whole. */
static double exposed_gradient_comm(const gs_predict_model *md, const gs_predict_machine *m,
                                    double compute, int gpus, const char **how, unsigned *from) {
  double total = md->gradient_bytes, bucket = md->bucket_bytes;
  if (!(bucket > 0.0) || bucket >= total) return gs_predict_allreduce(m, total, gpus, how, from);
  double full = floor(total / bucket);
  double last = total - full * bucket;
  if (!(last > 0.0)) {
    full -= 1.0;
    last = bucket;
  }
  double exposed = gs_predict_allreduce(m, last, gpus, how, from);
  double hidden = full * gs_predict_allreduce(m, bucket, gpus, NULL, from);
  double window = 2.0 / 3.0 * compute * (total - bucket) / total;
  return exposed + (hidden > window ? hidden - window : 0.0);
}

/* See predict.h. */
gs_status gs_predict_point_at(const gs_predict_model *model, const gs_predict_machine *m,
                              double items_per_step, int gpus, int tp, gs_predict_point *out) {
  memset(out, 0, sizeof *out);
  out->gpus = gpus;
  out->speedup = out->efficiency = NAN;
  out->dollars_per_million = out->seconds_to_target = out->dollars_to_target = NAN;
  out->measured = out->error = NAN;
  out->comm_how = "none";
  int per_node = m->gpus_per_node > 0 ? m->gpus_per_node : gpus;
  if (gpus < 1) return gs_error(GS_ERR_USAGE, "a GPU count must be at least 1, got %d", gpus);
  if (gpus > per_node && gpus % per_node != 0)
    return gs_error(GS_ERR_USAGE, "%d GPUs do not fill whole nodes of %d GPUs (--gpus-per-node)",
                    gpus, per_node);
  out->nodes = gpus > per_node ? gpus / per_node : 1;

  if (model->kind == GS_PREDICT_REQUESTS) {
    if (tp <= 0) tp = model->measured_tp;
    if (gpus % tp != 0)
      return gs_error(GS_ERR_USAGE, "%d GPUs do not hold whole tensor-parallel replicas of %d "
                      "GPUs", gpus, tp);
    if (tp > 1 && per_node > 1 && !m->have_allreduce)
      return gs_error(GS_ERR_USAGE, "tensor parallelism %d needs a coll document with allreduce",
                      tp);
    int size = 0;
    out->tensor_parallel = tp;
    out->replicas = gpus / tp;
    out->rounds = rounds_of(model->samples, model->batch, out->replicas, &size);
    double compute = model->round_seconds * (double)model->measured_tp / (double)tp;
    double comm = round_comm(model, m, size, tp, &out->comm_how, &out->comm_from);
    out->work = out->rounds * compute;
    out->comm = out->rounds * comm;
    out->step_seconds = out->work + out->comm;
    out->throughput = out->step_seconds > 0.0 ? model->tokens_per_run / out->step_seconds : NAN;
    return GS_OK;
  }

  out->work = model->work_seconds * work_share(model->scaling, gpus);
  out->overhead = model->overhead_seconds + model->growth_seconds * (gpus - 1);
  if (model->kind == GS_PREDICT_DATA_PARALLEL) {
    if (gpus > 1 && per_node > 1 && !m->have_allreduce)
      return gs_error(GS_ERR_USAGE, "a data-parallel prediction within a node needs a coll "
                      "document with allreduce");
    out->comm = exposed_gradient_comm(model, m, out->work + out->overhead, gpus, &out->comm_how,
                                      &out->comm_from);
  }
  out->imbalance = model->noise_seconds * gs_predict_expected_max(gpus);
  out->step_seconds = out->work + out->overhead + out->comm + out->imbalance;
  double items = items_per_step * (model->scaling == GS_SCALING_WEAK ? (double)gpus : 1.0);
  out->throughput = out->step_seconds > 0.0 ? items / out->step_seconds : NAN;
  return GS_OK;
}
