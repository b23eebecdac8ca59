/* Fault injection: faults given on the command line as
 * "KIND:rank=R,NAME=VALUE,..." (option --inject, repeatable), parsed
 * against a table of kinds and their parameters, and applied by the runner
 * to the rank they name:
 *   slow:rank=R,factor=F    every step of R takes F times its own work
 *   fail:rank=R,rate=P      each timed sample of R fails with probability P
 *                           (seeded by --seed and the rank: reproducible)
 *   kill:rank=R,after=N     R dies abruptly after completing N steps
 *   delay:rank=R,seconds=S  R's first step (cold start) starts S s late
 *   hang:rank=R,after=N     (tests) R stops answering after N steps
 *   late:rank=R,us=U        R arrives U microseconds late at every step (its
 *                           collectives): run, scale, suite; and at every
 *                           timed collective of coll (docs/stragglers.md)
 *   slowpair:rank=A,peer=B,factor=F
 *                           the cpu backend's messages between A and B
 *                           take F times as long: the communication layer
 *                           (platform/comm*.c) stretches them, for a
 *                           world created with the faults (docs/stragglers.md)
 * Any of them takes world=N: only in the measurement of N ranks (a slowed
 * 1-rank baseline: slow:rank=0,factor=3,world=1).
 * Steps count every step the runner runs in one call (a measurement, or
 * one run of an interleaved sweep, docs/multinode.md): the cold-start
 * step, warmup and timed steps, from 1. What each launch mode can simulate:
 * docs/multinode.md, "Fault injection". Design: docs/workloads/placement.md. */
#ifndef GS_FAULT_H
#define GS_FAULT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/status.h"

#define GS_FAULT_MAX 16
#define GS_FAULT_MAX_PARAMS 4

typedef enum {
  GS_FAULT_SLOW = 0,
  GS_FAULT_FAIL,
  GS_FAULT_KILL,
  GS_FAULT_DELAY,
  GS_FAULT_HANG,
  GS_FAULT_LATE,
  GS_FAULT_SLOWPAIR
} gs_fault_kind;

/* One injected fault. params[] follow the kind's table order after "rank"
 * (slow: factor; fail: rate; kill, hang: after; delay: seconds; late: us;
 * slowpair: peer, factor). */
typedef struct {
  gs_fault_kind kind;
  int rank;
  int world; /* world=N: only in the measurement of N ranks; 0: in every one */
  double params[GS_FAULT_MAX_PARAMS];
} gs_fault;

typedef struct {
  size_t n;
  gs_fault items[GS_FAULT_MAX];
} gs_fault_list;

/* Parses one --inject value into list (appended). GS_ERR_USAGE naming the
 * kind, parameter or value that is wrong, missing or repeated. */
gs_status gs_fault_parse(const char *text, gs_fault_list *list);

/* The faults of `list` that apply in a measurement of `world_size` ranks:
 * those on a rank below world_size, without world=N or with N world_size. */
gs_fault_list gs_fault_at(const gs_fault_list *list, int world_size);

/* GS_ERR_USAGE when a fault names a rank >= world_size. */
gs_status gs_fault_check_ranks(const gs_fault_list *list, int world_size);

/* The factor by which `rank` is slowed: the product of its slow faults'
 * factors, 1 when none. */
double gs_fault_slow_factor(const gs_fault_list *list, int rank);

/* The factor by which messages between ranks a and b (either order) are
 * slowed: the product of the slowpair faults naming the two, 1 when none
 * (and when a == b). */
double gs_fault_pair_factor(const gs_fault_list *list, int a, int b);

/* The first fault of `kind` on `rank`, or NULL when there is none. */
const gs_fault *gs_fault_find(const gs_fault_list *list, gs_fault_kind kind, int rank);

/* GS_ERR_USAGE when a fault cannot be simulated in this launch mode: hang
 * needs mpi mode (the rank threads of one process meet at a barrier that
 * has no timeout, so a hung thread would hang its process). */
gs_status gs_fault_check_launch(const gs_fault_list *list, int mpi_mode);

/* The seconds by which `rank` arrives late (its late faults' us summed,
 * in seconds), 0 when none. */
double gs_fault_late_seconds(const gs_fault_list *list, int rank);

/* Waits `seconds` (a late fault's lateness) precisely on the monotonic
 * clock: sleeps all but the last 200 us, then polls the clock, so that a
 * 50 us lateness is 50 us and not a sleep's wake-up latency. */
void gs_fault_late_wait(double seconds);

/* Name of a kind ("slow"). */
const char *gs_fault_kind_name(gs_fault_kind kind);

/* The measurement member "faults": the faults on ranks < world_size, as
 * [{"kind": "slow", "rank": R, "factor": F}, ...]; NULL on no memory. */
cJSON *gs_fault_list_to_json(const gs_fault_list *list, int world_size);

#endif
