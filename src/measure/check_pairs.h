/* The measuring half of `gpuscale check pairs` (docs/check.md,
 * "Localization by pairs"): every pair of the job's ranks in the rounds of
 * the round-robin tournament, a 2-member all-reduce and a copy each way
 * timed per iteration; when the processes of the job run on several hosts,
 * every pair of nodes in the ceil(log2 N) rounds of the node bisection
 * instead, measured between the nodes' leaders (their lowest ranks). The
 * ranks: the CPU backend's (threads of this process, or one per process
 * under mpirun/srun), or GPUs (one rank per GPU: threads of this process,
 * or one process per GPU under a launcher; NCCL through the comm layer,
 * device buffers, CUDA events). A round's pairs of CPU ranks run at once
 * unless a host would then run more of their ranks than it has cores:
 * they are then measured in slots, one after another, while the ranks left
 * idle sleep; a round's GPU pairs always run at once. After the rounds,
 * the pairs the caller asks for (the suspects and their references) are
 * measured again, each pair alone: the confirming round. The judgement is
 * report/verdict/check_pairs.h's. */
#ifndef GS_MEASURE_CHECK_PAIRS_H
#define GS_MEASURE_CHECK_PAIRS_H

#include <stddef.h>

#include "core/fault.h"
#include "core/status.h"
#include "core/types.h"
#include "platform/comm.h"

/* Room for a host's name. */
#define GS_PAIRS_HOST_MAX 64
/* Room for a GPU's PCI bus id ("0000:18:00.0"). */
#define GS_PAIRS_PCI_MAX 32

/* The default size of a GPU pair's exchanges (the CPU ranks' is 1 MiB):
 * 64 MiB, whose time over NVLink (about 0.2 ms at 300-400 GB/s) is the
 * link's bandwidth rather than NCCL's launch and handshake latency (10-20
 * us, about the whole time of a 1 MiB exchange there, which a link at half
 * its bandwidth would hardly move), and long against the jitter of the host
 * threads that enqueue it; over PCIe (about 25 GB/s) 2.7 ms. */
#define GS_CHECK_PAIRS_GPU_BYTES (64ull << 20)

/* Pairs of units (ranks, or nodes by the bisection), a < b. */
typedef struct {
  size_t n;
  int *a, *b; /* n each; owned by whoever filled them (free both) */
} gs_check_pairs_list;

/* Pairs of units with their times. */
typedef struct {
  size_t n_pairs;
  int *a, *b;         /* n_pairs: the pair's units, a < b, in the order measured */
  int iters;
  double *seconds[2]; /* [0] all-reduce, [1] copy: n_pairs x iters, seconds from the later
                         of the two ranks' starts to the later end (the longer of the two
                         ranks' own times when they run on different hosts, and on GPUs,
                         each timed by its own GPU's events) */
} gs_check_pairs_set;

typedef struct gs_check_pairs_times gs_check_pairs_times;

/* Chooses the pairs of the confirming round from the rounds' times
 * (t->pairs); called by every process of the job with the same times, so
 * it must choose the same pairs in each (a pure function of the times).
 * Fills *again (units of t; owned by the caller after; n 0: none). */
typedef gs_status (*gs_check_pairs_confirm_fn)(void *ctx, const gs_check_pairs_times *t,
                                               gs_check_pairs_list *again);

typedef struct {
  gs_backend backend;          /* cpu: host buffers; cuda: one GPU per rank */
  int ranks;                   /* rank threads (threads mode: CPU ranks, or GPUs, one each);
                                  under a launcher the job's processes */
  const int *devices;          /* cuda: n_devices CUDA ordinals; threads mode: rank k drives
                                  devices[k] (ranks == n_devices); under a launcher a
                                  process drives devices[local rank % n_devices] */
  int n_devices;
  size_t bytes;                /* of each exchange (floats) */
  int warmup, iters;           /* per pair and kind, in the rounds and in the confirming round */
  double timeout;              /* of every wait, seconds */
  const gs_fault_list *faults; /* rehearsals: slow:rank=R on either backend, slowpair (cpu),
                                  late (cuda); the caller refuses the others */
  gs_check_pairs_confirm_fn confirm; /* NULL: no confirming round */
  void *confirm_ctx;
} gs_check_pairs_options;

struct gs_check_pairs_times {
  size_t n_units, rounds;
  size_t slots;        /* the steps the rounds took: rounds, or more where a round's
                          pairs were measured apart (gs_pairs_slots) */
  int nodes;           /* 1: the units are nodes (bisection), 0: ranks (tournament) */
  int cuda;            /* 1: the ranks are GPUs */
  size_t n_ranks, n_nodes;
  char (*host)[GS_PAIRS_HOST_MAX]; /* n_nodes: each node's host, in order of first rank */
  int *node_of;                    /* n_ranks: the node (index into host) of each rank */
  int *device;                     /* cuda, n_ranks: each rank's CUDA ordinal on its host */
  char (*pci)[GS_PAIRS_PCI_MAX];   /* cuda, n_ranks: each rank's GPU's PCI bus id */
  gs_check_pairs_set pairs;        /* the rounds' pairs */
  gs_check_pairs_set confirm;      /* the confirming round's, each measured alone */
  /* The host that runs the most ranks for its cores (the machine's real
   * host, also under GPUSCALE_TEST_SEPARATE_HOSTS): its name, its ranks
   * (threads, or processes) and the CPUs they may run on (its logical
   * cores, unless an affinity mask narrows them). */
  char busiest_host[GS_PAIRS_HOST_MAX];
  int busiest_ranks, busiest_cores;
  double load_average; /* 1-minute load average of this process's host before measuring;
                          NaN unknown */
  int pin_refused;     /* 1: a rank of this process could not be pinned to its CPU */
  int process_rank;    /* this process in the job (0 in threads mode) */
};

/* Measures every pair of ranks, then the pairs o->confirm chooses; called
 * once by the command's main thread in every process of the job (the
 * times are gathered to each). On success *out is owned by the caller
 * (gs_check_pairs_times_free). GS_ERR_USAGE for fewer than 2 ranks or a
 * fault on a rank that does not exist; a rank's failure (timeout, wrong
 * data, a CUDA or NCCL error) is returned with its text; the confirm
 * function's failure as it returned it. */
gs_status gs_check_pairs_measure(const gs_check_pairs_options *o, gs_check_pairs_times *out);

/* Frees what `t` owns and zeroes it; safe on a zeroed struct. */
void gs_check_pairs_times_free(gs_check_pairs_times *t);

#endif
