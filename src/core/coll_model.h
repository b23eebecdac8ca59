/* What a collective's measurements say: the latency-bandwidth (alpha-beta)
 * model fitted to a sweep, measured curves, and the costs of allreduce
 * algorithms. The collectives themselves (names, sizes per rank, busbw
 * factors) are core/coll_table.h's descriptors. Pure arithmetic; formulas in
 * docs/collectives.md and docs/predict.md. */
#ifndef GS_COLL_MODEL_H
#define GS_COLL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/coll_table.h"
#include "core/status.h"

/* t(x) = alpha + beta * x, x = bus bytes = bytes * busbw factor. */
typedef struct {
  double alpha_seconds;
  double beta_seconds_per_byte;
  double r_squared; /* of the weighted fit; NaN when undefined */
  size_t points;
} gs_coll_fit;

/* Least-squares fit of t = alpha + beta * x minimising the squared
 * *relative* error sum(((t_i - alpha - beta x_i) / t_i)^2), so that the
 * latency-bound small sizes count as much as the bandwidth-bound large
 * ones. Needs n >= 2 distinct x and positive times; GS_ERR_USAGE otherwise. */
gs_status gs_coll_fit_alpha_beta(const double *bus_bytes, const double *seconds, size_t n,
                                 gs_coll_fit *out);

/* Predicted seconds of `op` for `bytes` at `ranks` ranks from a fit made
 * at any rank count: alpha + beta * bytes * factor(op, ranks). */
double gs_coll_predict_seconds(const gs_coll_fit *fit, gs_coll_op op, uint64_t bytes, int ranks);

/* ---- collective algorithms' costs (docs/predict.md) ---------------------- */

typedef enum {
  GS_COLL_RING = 0, /* 2(p-1) steps, each moving S/p bytes per rank */
  GS_COLL_TREE      /* reduce up and broadcast down a binary tree, pipelined */
} gs_coll_algorithm;

/* One level of links as the cost formulas see it: the latency of one step
 * (seconds) and the time of one byte over one rank's link (seconds/byte). */
typedef struct {
  double alpha_seconds;
  double beta_seconds_per_byte;
} gs_coll_link;

/* A collective measured at one rank count: its mean seconds at each
 * measured size, sizes ascending and distinct (gs_coll_curve_build). */
typedef struct {
  int ranks;
  size_t n;
  double *bytes;   /* owned */
  double *seconds; /* owned; the mean of every measurement at that size */
} gs_coll_curve;

/* Builds the curve of `n` measurements (`bytes[i]`, `seconds[i]`, in any
 * order, repeated sizes averaged) taken at `ranks` ranks. GS_ERR_USAGE when
 * a size or time is not positive and finite, GS_ERR_NOMEM. Free with
 * gs_coll_curve_free. */
gs_status gs_coll_curve_build(const double *bytes, const double *seconds, size_t n, int ranks,
                              gs_coll_curve *out);
void gs_coll_curve_free(gs_coll_curve *c);

/* The measured seconds at `bytes`: piecewise linear in the size between
 * the two measured sizes around it (a measured size gives its own time).
 * Returns 1 with `*seconds` set when the curve has at least two sizes and
 * bytes lies within them; 0 otherwise (outside the measured range: the
 * caller falls back to a model). `c` may be NULL (0). */
int gs_coll_curve_seconds(const gs_coll_curve *c, double bytes, double *seconds);

/* An allreduce of `bytes` over `ranks` ranks by `alg` as `*pairs` 2-rank
 * allreduces of `*pair_bytes` each, the messages of its steps: a ring's
 * 2(p-1) steps of S/p are p-1 pairs of 2S/p; a tree's 2 ceil(log2 p)
 * pipelined steps moving 2S in all are ceil(log2 p) pairs of
 * 2S / ceil(log2 p). 0 pairs for p <= 1. */
void gs_coll_allreduce_pairs(gs_coll_algorithm alg, double bytes, int ranks, double *pairs,
                             double *pair_bytes);

/* Seconds of an allreduce of `bytes` over `ranks` ranks by ring or tree,
 * whichever is cheaper (`*alg`, may be NULL; ring on a tie): its pairs of
 * 2-rank allreduces (gs_coll_allreduce_pairs), each costing `pair_curve`'s
 * time (a 2-rank curve, may be NULL) where it covers the pair's size, else
 * 2a + x b on `link`: ring 2(p-1) a + 2(p-1)/p S b, tree 2 ceil(log2 p) a +
 * 2 S b; 0 for p <= 1. `*measured` (may be NULL) receives 1 when the chosen
 * algorithm's cost came from the curve. */
double gs_coll_allreduce_best_measured(const gs_coll_link *link, const gs_coll_curve *pair_curve,
                                       double bytes, int ranks, gs_coll_algorithm *alg,
                                       int *measured);

/* Hierarchical allreduce of `bytes` over `nodes` x `per_node` ranks: the
 * node's reduce-scatter and all-gather, which together cost the node's own
 * allreduce `intra_seconds` (measured or fitted at `per_node` ranks), plus
 * the allreduce of each rank's 1/per_node share across the nodes on
 * `network` (with its measured 2-rank curve `pair_curve`, may be NULL), ring
 * or tree, whichever is cheaper (`*alg`, `*measured` as
 * gs_coll_allreduce_best_measured gives them; may be NULL). */
double gs_coll_allreduce_hierarchical(double intra_seconds, const gs_coll_link *network,
                                      const gs_coll_curve *pair_curve, double bytes, int per_node,
                                      int nodes, gs_coll_algorithm *alg, int *measured);

#endif
