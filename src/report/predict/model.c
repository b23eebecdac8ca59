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

/* The layout `l` with its zero members as `md` measured them. */
static gs_predict_layout layout_of(const gs_predict_model *md, gs_predict_layout l) {
  if (l.tp <= 0) l.tp = md->measured_tp > 0 ? md->measured_tp : 1;
  if (l.pp <= 0) l.pp = md->measured_pp > 0 ? md->measured_pp : 1;
  if (l.micro <= 0)
    l.micro = l.pp == md->measured_pp && md->measured_micro > 0 ? md->measured_micro : l.pp;
  if (l.pp == 1) l.micro = 1;
  if (!(l.imbalance >= 1.0))
    l.imbalance = l.pp == md->measured_pp && md->stage_imbalance >= 1.0 ? md->stage_imbalance
                                                                         : 1.0;
  return l;
}

/* One round's compute at layout `l` is round x (a + share x b): a stage
 * computes 1/(p t) of the replica's work per call, the call passes
 * p stages for its first group and the slowest stage (imbalance) for each
 * further one, and a group of 1/m of the rows costs (share + (1 - share) / m)
 * of the whole call's. */
static void compute_factors(const gs_predict_layout *l, double *a, double *b) {
  const double p = l->pp, m = l->micro;
  const double k = (p + (m - 1.0) * l->imbalance) / (p * l->tp);
  *a = k / m;
  *b = k * (1.0 - 1.0 / m);
}

/* Tensor-parallel communication of one batch round of `size` sequences at
 * layout `l`: two allreduces of the hidden state per layer, for the
 * prefill (every prompt token) and for each decode step (one token per
 * sequence), of one group's rows; the first group passes every layer, each
 * further group the slowest stage's layers. */
static double round_comm(const gs_predict_model *md, const gs_predict_machine *m, int size,
                         const gs_predict_layout *l, const char **how, unsigned *from) {
  if (l->tp <= 1) {
    if (how) *how = "none";
    return 0.0;
  }
  const double token_bytes = md->hidden * md->element_bytes;
  const double rows = (double)size / l->micro;
  const double per_layer = 2.0 * (double)md->layers * (1.0 + (l->micro - 1.0) / l->pp);
  double prefill = gs_predict_allreduce(m, rows * md->prefill_tokens * token_bytes, l->tp, NULL,
                                        from);
  double decode = gs_predict_allreduce(m, rows * token_bytes, l->tp, how, from);
  return per_layer * (prefill + md->decode_steps * decode);
}

/* Seconds of one stage boundary crossing of `bytes`: across nodes the
 * network's latency + bytes x seconds per byte; within a node the measured
 * send/recv curve (outside its sizes the nearest size's time per byte), 0
 * without one. */
static double crossing(const gs_predict_machine *m, double bytes, int inter, unsigned *from) {
  if (inter) {
    *from |= GS_PREDICT_FROM_FIGURES;
    return m->network.alpha_seconds + bytes * m->network.beta_seconds_per_byte;
  }
  const gs_coll_curve *c = m->sendrecv;
  if (!c || c->n == 0) return 0.0;
  *from |= GS_PREDICT_FROM_MEASURED;
  double t;
  if (gs_coll_curve_seconds(c, bytes, &t)) return t;
  const size_t k = bytes < c->bytes[0] ? 0 : c->n - 1;
  return c->seconds[k] * bytes / c->bytes[k];
}

/* The stage transfers of one round of `size` sequences at layout `l` on
 * the critical path: each call's first group crosses the p - 1 boundaries
 * (its residual rows: every prompt token at the prefill, one row per
 * sequence at a decode step) and its tokens come back to the first stage;
 * later groups' transfers hide behind the stages' compute. Stages are
 * placed in order, a node holding gpus_per_node / tp of them. */
static double round_transfers(const gs_predict_model *md, const gs_predict_machine *m, int size,
                              const gs_predict_layout *l, unsigned *from) {
  if (l->pp <= 1) return 0.0;
  const int per_node = m->gpus_per_node > 0 ? m->gpus_per_node : l->tp * l->pp;
  const int spans = l->tp * l->pp > per_node;
  const double rows = (double)size / l->micro;
  const double row_bytes = md->hidden * GS_PREDICT_ACTIVATION_BYTES;
  double prefill = 0.0, decode = 0.0;
  for (int b = 0; b + 1 < l->pp; b++) {
    const int inter = spans && ((b + 1) * l->tp) % per_node == 0;
    prefill += crossing(m, rows * md->prefill_tokens * row_bytes, inter, from);
    decode += crossing(m, rows * row_bytes, inter, from);
  }
  const double back = crossing(m, rows * GS_PREDICT_TOKEN_BYTES, spans, from);
  return prefill + back + md->decode_steps * (decode + back);
}

/* One fit of round (and share, when `free_share` and the measurements
 * tell it apart: 1 returned) to y_i = round (a_i + share b_i): least
 * squares of the relative misfit; share kept in [0, 1], else `fixed`. */
static int fit_round(const double *a, const double *b, const double *y, size_t n,
                      int free_share, double fixed, double *round, double *share) {
  double saa = 0, sab = 0, sbb = 0, say = 0, sby = 0;
  for (size_t i = 0; i < n; i++) {
    const double ai = a[i] / y[i], bi = b[i] / y[i];
    saa += ai * ai, sab += ai * bi, sbb += bi * bi, say += ai, sby += bi;
  }
  double w = fixed;
  const double det = saa * sbb - sab * sab;
  const int freed = free_share && det > 1e-9 * saa * sbb;
  if (freed) {
    const double r = (say * sbb - sby * sab) / det, v = (sby * saa - say * sab) / det;
    w = r > 0.0 ? v / r : fixed;
    w = w < 0.0 ? 0.0 : w > 1.0 ? 1.0 : w;
  }
  // round at the chosen share: least squares of sum ((round c_i - y_i) / y_i)^2.
  double scc = 0, scy = 0;
  for (size_t i = 0; i < n; i++) {
    const double c = (a[i] + w * b[i]) / y[i];
    scc += c * c, scy += c;
  }
  *round = scc > 0.0 ? scy / scc : NAN;
  *share = w;
  return freed;
}

/* See predict.h. */
gs_status gs_predict_fit_requests(const gs_predict_request_obs *obs, size_t n,
                                  const gs_predict_machine *m, gs_predict_model *model) {
  if (n == 0) return gs_error(GS_ERR_USAGE, "a request model needs at least one measured GPU count");
  if (model->samples < 1 || model->batch < 1 || model->measured_tp < 1)
    return gs_error(GS_ERR_USAGE, "a request model needs samples, batch and tensor parallelism >= 1");
  double *v = malloc(6 * n * sizeof *v);
  if (!v) return gs_error(GS_ERR_NOMEM, "out of memory");
  double *a = v, *b = v + n, *y = v + 2 * n, *h = v + 3 * n, *lo = v + 4 * n, *hi = v + 5 * n;
  double tokens = 0.0;
  int pipelined = 0, one_run = 0;
  gs_status st = GS_OK;
  for (size_t i = 0; i < n && st == GS_OK; i++) {
    const gs_predict_layout l = layout_of(model, obs[i].layout);
    const int gpus = l.tp * l.pp;
    if (obs[i].gpus % gpus != 0)
      st = gs_error(GS_ERR_USAGE, "%d GPUs do not hold whole replicas of tp %d x pp %d",
                    obs[i].gpus, l.tp, l.pp);
    else if (l.tp > 1 && !m->have_allreduce)
      st = gs_error(GS_ERR_USAGE, "a tensor-parallel measurement needs a coll document with "
                    "allreduce to separate its communication");
    else if (!(obs[i].run_seconds > 0.0) || !(obs[i].tokens_per_run > 0.0))
      st = gs_error(GS_ERR_USAGE, "a request model needs a positive run time and token count "
                    "(at %d GPUs)", obs[i].gpus);
    if (st != GS_OK) break;
    int size = 0;
    const int rounds = rounds_of(model->samples, model->batch, obs[i].gpus / gpus, &size);
    const double round = obs[i].run_seconds / rounds;
    const double costs =
        round_comm(model, m, size, &l, NULL, NULL) + round_transfers(model, m, size, &l, &(unsigned){0});
    compute_factors(&l, &a[i], &b[i]);
    pipelined |= b[i] > 0.0;
    // The bounds move the compute by the run's half-width of the whole round.
    h[i] = obs[i].run_half > 0.0 ? obs[i].run_half * round : 0.0;
    one_run |= !(obs[i].run_half > 0.0);
    y[i] = round - costs;
    lo[i] = y[i] - h[i];
    hi[i] = y[i] + h[i];
    // A run's interval reaching 0 bounds nothing below: the fit's low bound
    // of the round is 0 (an unbounded throughput).
    if (!(lo[i] > 0.0)) lo[i] = 0.0;
    if (!(y[i] > 0.0))
      st = gs_error(GS_ERR_USAGE, "at %d GPUs (tp %d x pp %d) the modelled communication "
                    "(%.3g s a round) leaves no compute of the measured %.3g s", obs[i].gpus,
                    l.tp, l.pp, costs, round);
    tokens += obs[i].tokens_per_run;
  }
  if (st == GS_OK) {
    model->share_fitted =
        fit_round(a, b, y, n, pipelined, 1.0, &model->round_seconds, &model->fixed_share);
    double r, w;
    int unbounded = 0;
    for (size_t i = 0; i < n; i++) unbounded |= !(lo[i] > 0.0);
    if (unbounded) model->round_low = 0.0;
    else fit_round(a, b, lo, n, 0, model->fixed_share, &model->round_low, &w);
    fit_round(a, b, hi, n, 0, model->fixed_share, &model->round_high, &w);
    model->share_low = model->share_high = model->fixed_share;
    if (model->share_fitted) {
      // The share's bounds: the pipelined measurements at one end of their
      // intervals and the others at the other end.
      // A bound at 0 or below leaves the share anywhere in [0, 1].
      model->share_low = 0.0;
      model->share_high = 1.0;
      for (size_t i = 0; i < n; i++) lo[i] = y[i] + (b[i] > 0.0 ? -h[i] : h[i]);
      if (!unbounded) fit_round(a, b, lo, n, 1, 1.0, &r, &model->share_low);
      for (size_t i = 0; i < n; i++) lo[i] = y[i] + (b[i] > 0.0 ? h[i] : -h[i]);
      if (!unbounded) fit_round(a, b, lo, n, 1, 1.0, &r, &model->share_high);
      if (model->share_low > model->share_high) {
        w = model->share_low;
        model->share_low = model->share_high;
        model->share_high = w;
      }
      if (model->share_low > model->fixed_share) model->share_low = model->fixed_share;
      if (model->share_high < model->fixed_share) model->share_high = model->fixed_share;
    }
    model->tokens_per_run = tokens / (double)n;
    // A measurement of one run has no interval, nor has a fit that takes it.
    if (one_run) model->round_low = model->round_high = NAN;
  }
  free(v);
  return st;
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

/* The run of a request model at layout `l` with `replicas` replicas into
 * `out`'s work, comm, transfer and step; `round` and `share` the fit's
 * (or its bounds'). */
static void request_run_at(const gs_predict_model *md, const gs_predict_machine *m,
                           const gs_predict_layout *l, double round, double share,
                           gs_predict_point *out) {
  int size = 0;
  out->rounds = rounds_of(md->samples, md->batch, out->replicas, &size);
  double a, b;
  compute_factors(l, &a, &b);
  const double transfer = round_transfers(md, m, size, l, &out->comm_from);
  out->work = out->rounds * round * (a + share * b);
  out->transfer = out->rounds * transfer;
  out->comm = out->rounds * (round_comm(md, m, size, l, &out->comm_how, &out->comm_from) + transfer);
  out->step_seconds = out->work + out->comm;
  out->throughput = out->step_seconds > 0.0 ? md->tokens_per_run / out->step_seconds : NAN;
}

/* See predict.h. */
gs_status gs_predict_point_at(const gs_predict_model *model, const gs_predict_machine *m,
                              double items_per_step, int gpus, int tp, gs_predict_point *out) {
  return gs_predict_point_at_layout(model, m, items_per_step, gpus, tp, 0, out);
}

/* See predict.h. */
gs_status gs_predict_point_at_layout(const gs_predict_model *model, const gs_predict_machine *m,
                                     double items_per_step, int gpus, int tp, int pp,
                                     gs_predict_point *out) {
  memset(out, 0, sizeof *out);
  out->gpus = gpus;
  out->speedup = out->efficiency = NAN;
  out->dollars_per_million = out->seconds_to_target = out->dollars_to_target = NAN;
  out->measured = out->error = NAN;
  out->throughput_low = out->throughput_high = NAN;
  for (int i = 0; i < 4; i++) out->bound_throughput[i] = NAN;
  out->measured_low = out->measured_high = out->error_low = out->error_high = NAN;
  out->comm_how = "none";
  int per_node = m->gpus_per_node > 0 ? m->gpus_per_node : gpus;
  if (gpus < 1) return gs_error(GS_ERR_USAGE, "a GPU count must be at least 1, got %d", gpus);
  if (gpus > per_node && gpus % per_node != 0)
    return gs_error(GS_ERR_USAGE, "%d GPUs do not fill whole nodes of %d GPUs (--gpus-per-node)",
                    gpus, per_node);
  out->nodes = gpus > per_node ? gpus / per_node : 1;

  if (model->kind == GS_PREDICT_REQUESTS) {
    const gs_predict_layout l = layout_of(model, (gs_predict_layout){tp, pp, 0, 0.0});
    if (gpus % (l.tp * l.pp) != 0)
      return gs_error(GS_ERR_USAGE, "%d GPUs do not hold whole replicas of %d GPUs "
                      "(tensor-parallel %d x pipeline stages %d)", gpus, l.tp * l.pp, l.tp, l.pp);
    if (l.tp > 1 && per_node > 1 && !m->have_allreduce)
      return gs_error(GS_ERR_USAGE, "tensor parallelism %d needs a coll document with allreduce",
                      l.tp);
    out->tensor_parallel = l.tp;
    out->pipeline_stages = l.pp;
    out->micro_batches = l.micro;
    out->replicas = gpus / (l.tp * l.pp);
    // The bounds: the fit's extremes of round and share. A round of no
    // time (the fit's low end at 0) leaves the throughput unbounded where
    // nothing else takes time; two predictions are still ordered there as
    // the round shrinks towards it, so the corner's order is taken at a
    // round a millionth of the fitted one.
    const double rounds[2] = {model->round_low, model->round_high};
    const double shares[2] = {model->share_low, model->share_high};
    for (int i = 0; i < 4; i++) {
      const double round = rounds[i / 2];
      gs_predict_point x = *out;
      request_run_at(model, m, &l, round > 0.0 ? round : 1e-6 * model->round_seconds,
                     shares[i % 2], &x);
      out->bound_throughput[i] = x.throughput > 0.0 ? x.throughput : NAN;
      if (round == 0.0) request_run_at(model, m, &l, 0.0, shares[i % 2], &x);
      if (round == 0.0 && !(x.step_seconds > 0.0)) x.throughput = INFINITY;
      if (!(x.throughput > 0.0)) continue;
      if (!(x.throughput >= out->throughput_low)) out->throughput_low = x.throughput;
      if (!(x.throughput <= out->throughput_high)) out->throughput_high = x.throughput;
    }
    request_run_at(model, m, &l, model->round_seconds, model->fixed_share, out);
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

/* See predict.h. */
int gs_predict_point_beats(const gs_predict_point *a, const gs_predict_point *b) {
  if (!(a->throughput > b->throughput)) return 0;
  for (int i = 0; i < 4; i++)
    if (!(a->bound_throughput[i] > b->bound_throughput[i])) return 0;
  return 1;
}
