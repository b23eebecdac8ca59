/* Collective operations' sizes, bus-bandwidth factors and the alpha-beta
 * fit (docs/collectives.md). */
#include "core/coll_model.h"

#include <math.h>
#include <string.h>

const char *const gs_coll_op_names[] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                        "reduce",    "alltoall",  "sendrecv",      NULL};

int gs_coll_has_redop(gs_coll_op op) {
  return op == GS_COLL_ALLREDUCE || op == GS_COLL_REDUCESCATTER || op == GS_COLL_REDUCE;
}

int gs_coll_has_root(gs_coll_op op) {
  return op == GS_COLL_BROADCAST || op == GS_COLL_REDUCE;
}

int gs_coll_has_in_place(gs_coll_op op) {
  // Grouped sends and receives cannot share one buffer.
  return op != GS_COLL_ALLTOALL && op != GS_COLL_SENDRECV;
}

void gs_coll_shape_for(gs_coll_op op, uint64_t bytes, size_t element_size, int ranks,
                       gs_coll_shape *out) {
  memset(out, 0, sizeof *out);
  uint64_t n = (uint64_t)ranks;
  uint64_t total = bytes / element_size;
  switch (op) {
    case GS_COLL_ALLGATHER:
    case GS_COLL_REDUCESCATTER:
    case GS_COLL_ALLTOALL: {
      // The size is the whole buffer of the larger side: n blocks of `per`.
      uint64_t per = total / n;
      out->param_count = (size_t)per;
      out->count = per * n;
      size_t whole = (size_t)(per * n);
      out->send_elements = op == GS_COLL_ALLGATHER ? (size_t)per : whole;
      out->recv_elements = op == GS_COLL_REDUCESCATTER ? (size_t)per : whole;
      break;
    }
    case GS_COLL_ALLREDUCE:
    case GS_COLL_BROADCAST:
    case GS_COLL_REDUCE:
    case GS_COLL_SENDRECV:
    case GS_COLL_COUNT:
      out->param_count = (size_t)total;
      out->count = total;
      out->send_elements = (size_t)total;
      out->recv_elements = (size_t)total;
      break;
  }
  out->bytes = out->count * element_size;
}

double gs_coll_busbw_factor(gs_coll_op op, int ranks) {
  double n = (double)ranks;
  switch (op) {
    case GS_COLL_ALLREDUCE: return 2.0 * (n - 1.0) / n;
    case GS_COLL_ALLGATHER:
    case GS_COLL_REDUCESCATTER:
    case GS_COLL_ALLTOALL: return (n - 1.0) / n;
    case GS_COLL_BROADCAST:
    case GS_COLL_REDUCE:
    case GS_COLL_SENDRECV:
    case GS_COLL_COUNT: break;
  }
  return 1.0;
}

double gs_coll_busbw_factor_of(const char *op, int ranks) {
  for (int k = 0; op && gs_coll_op_names[k]; k++)
    if (strcmp(op, gs_coll_op_names[k]) == 0) return gs_coll_busbw_factor((gs_coll_op)k, ranks);
  return NAN;
}

gs_status gs_coll_fit_alpha_beta(const double *x, const double *t, size_t n, gs_coll_fit *out) {
  memset(out, 0, sizeof *out);
  out->r_squared = NAN;
  if (n < 2) return gs_error(GS_ERR_USAGE, "an alpha-beta fit needs at least 2 sizes, got %zu", n);
  // Weighted least squares with w_i = 1 / t_i^2: the normal equations of
  // sum w (t - a - b x)^2.
  double sw = 0, swx = 0, swxx = 0, swt = 0, swxt = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(t[i] > 0.0) || !isfinite(t[i]) || !isfinite(x[i]) || x[i] < 0.0)
      return gs_error(GS_ERR_USAGE, "an alpha-beta fit needs positive times (point %zu)", i);
    double w = 1.0 / (t[i] * t[i]);
    sw += w;
    swx += w * x[i];
    swxx += w * x[i] * x[i];
    swt += w * t[i];
    swxt += w * x[i] * t[i];
  }
  double det = sw * swxx - swx * swx;
  if (!(fabs(det) > 1e-12 * sw * swxx))
    return gs_error(GS_ERR_USAGE, "an alpha-beta fit needs at least 2 different sizes");
  double beta = (sw * swxt - swx * swt) / det;
  double alpha = (swt - beta * swx) / sw;
  double mean = swt / sw, ss_res = 0, ss_tot = 0;
  for (size_t i = 0; i < n; i++) {
    double w = 1.0 / (t[i] * t[i]);
    double r = t[i] - alpha - beta * x[i];
    ss_res += w * r * r;
    ss_tot += w * (t[i] - mean) * (t[i] - mean);
  }
  out->alpha_seconds = alpha;
  out->beta_seconds_per_byte = beta;
  out->r_squared = ss_tot > 0.0 ? 1.0 - ss_res / ss_tot : NAN;
  out->points = n;
  return GS_OK;
}

double gs_coll_predict_seconds(const gs_coll_fit *fit, gs_coll_op op, uint64_t bytes, int ranks) {
  return fit->alpha_seconds +
         fit->beta_seconds_per_byte * (double)bytes * gs_coll_busbw_factor(op, ranks);
}

double gs_coll_allreduce_cost(gs_coll_algorithm alg, const gs_coll_link *link, double bytes,
                              int ranks) {
  if (ranks <= 1) return 0.0;
  double p = (double)ranks;
  if (alg == GS_COLL_TREE) {
    double depth = ceil(log2(p));
    return 2.0 * depth * link->alpha_seconds + 2.0 * bytes * link->beta_seconds_per_byte;
  }
  return 2.0 * (p - 1.0) * link->alpha_seconds +
         2.0 * (p - 1.0) / p * bytes * link->beta_seconds_per_byte;
}

double gs_coll_allreduce_best(const gs_coll_link *link, double bytes, int ranks,
                              gs_coll_algorithm *alg) {
  double ring = gs_coll_allreduce_cost(GS_COLL_RING, link, bytes, ranks);
  double tree = gs_coll_allreduce_cost(GS_COLL_TREE, link, bytes, ranks);
  if (alg) *alg = tree < ring ? GS_COLL_TREE : GS_COLL_RING;
  return tree < ring ? tree : ring;
}

double gs_coll_allreduce_hierarchical(double intra_seconds, const gs_coll_link *network,
                                      double bytes, int per_node, int nodes,
                                      gs_coll_algorithm *alg) {
  double share = per_node > 1 ? bytes / (double)per_node : bytes;
  return (per_node > 1 ? intra_seconds : 0.0) + gs_coll_allreduce_best(network, share, nodes, alg);
}
