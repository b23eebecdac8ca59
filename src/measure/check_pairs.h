/* The measuring half of `gpuscale check pairs` (docs/check.md,
 * "Localization by pairs"): every pair of the job's ranks in the rounds of
 * the round-robin tournament, a 2-member all-reduce and a copy each way
 * timed per iteration; when the processes of the job run on several hosts,
 * every pair of nodes in the ceil(log2 N) rounds of the node bisection
 * instead, measured between the nodes' leaders (their lowest ranks). The CPU backend's ranks: threads of this process,
 * or one per process under mpirun/srun. The judgement is
 * report/verdict/check_pairs.h's. */
#ifndef GS_MEASURE_CHECK_PAIRS_H
#define GS_MEASURE_CHECK_PAIRS_H

#include <stddef.h>

#include "core/fault.h"
#include "core/status.h"
#include "platform/comm.h"

typedef struct {
  int ranks;                   /* rank threads (threads mode); under a launcher the job's */
  size_t bytes;                /* of each exchange (floats) */
  int warmup, iters;           /* per pair and kind */
  double timeout;              /* of every wait, seconds */
  const gs_fault_list *faults; /* slow:rank=R and slowpair: rehearsals */
} gs_check_pairs_options;

/* Room for a host's name. */
#define GS_PAIRS_HOST_MAX 64

typedef struct {
  size_t n_units, rounds, n_pairs;
  int nodes;           /* 1: the units are nodes (bisection), 0: ranks (tournament) */
  size_t n_ranks, n_nodes;
  char (*host)[GS_PAIRS_HOST_MAX]; /* n_nodes: each node's host, in order of first rank */
  int iters;
  int *a, *b;          /* n_pairs: the pair's units, a < b, in the order met */
  double *seconds[2];  /* [0] all-reduce, [1] copy: n_pairs x iters, the longer
                          of the pair's two ranks in each iteration */
  int process_rank;    /* this process in the job (0 in threads mode) */
} gs_check_pairs_times;

/* Measures every pair of ranks; called once by the command's main thread
 * in every process of the job (the times are gathered to each). On
 * success *out is owned by the caller (gs_check_pairs_times_free).
 * GS_ERR_USAGE for fewer than 2 ranks or a fault on a rank that does not
 * exist; a rank's failure (timeout, wrong data) is returned with its text. */
gs_status gs_check_pairs_measure(const gs_check_pairs_options *o, gs_check_pairs_times *out);

void gs_check_pairs_times_free(gs_check_pairs_times *t);

#endif
