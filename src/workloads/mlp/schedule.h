/* Pipeline schedules of mlp --pp: the order in which one stage runs the
 * forward and backward passes of its micro-batches, and the point-to-point
 * exchanges around them. Pure functions of (stages, stage, micro-batches),
 * shared by the CPU pipeline and its unit tests. Rules:
 * docs/workloads/mlp.md, "Pipeline parallelism". */
#ifndef GS_MLP_SCHEDULE_H
#define GS_MLP_SCHEDULE_H

#include <stddef.h>

#include "core/status.h"

typedef enum { GS_PP_GPIPE = 0, GS_PP_1F1B = 1 } gs_pp_schedule;

/* Names in enum order, NULL-terminated (a GS_OPT_CHOICE list). */
extern const char *const gs_pp_schedule_names[];

/* Most micro-batches: a step brackets each of its 2M + 1 transfers as
 * exposed communication (GS_COMM_EXPOSED_MAX). */
#define GS_PP_MAX_MICRO 256

typedef enum { GS_PP_FORWARD = 0, GS_PP_BACKWARD = 1 } gs_pp_pass;

/* One action of a stage: a pass over micro-batch `micro`. */
typedef struct {
  gs_pp_pass pass;
  int micro;
} gs_pp_action;

/* The 2 * micro actions of stage `stage` (0-based) of `stages` under
 * `schedule` into out[0 .. 2*micro-1]:
 *  - GPipe: every forward in micro-batch order, then every backward in
 *    micro-batch order.
 *  - 1F1B: w = min(stages - stage - 1, micro) warmup forwards, then
 *    alternately one forward and one backward while forwards remain (the
 *    steady state), then the remaining backwards (the cooldown).
 * Backwards run in micro-batch order in both, so a stage's gradient sums
 * add the micro-batches in the order of the whole batch's rows. */
void gs_pp_schedule_order(gs_pp_schedule schedule, int stages, int stage, int micro,
                          gs_pp_action *out);

/* Warmup forwards of 1F1B at `stage`: min(stages - stage - 1, micro). */
int gs_pp_warmup(int stages, int stage, int micro);

/* One point-to-point transfer of a stage: the output of a pass (sent) or
 * its input (received). Forward passes send activations to stage + 1 and
 * receive them from stage - 1; backward passes send gradients to
 * stage - 1 and receive them from stage + 1. */
typedef struct {
  int send;        /* 1: send, 0: receive */
  int peer_stage;  /* stage + 1 or stage - 1 */
  gs_pp_pass pass; /* whose tensor: activations (forward) or gradients */
  int micro;
} gs_pp_transfer;

/* The transfers grouped before action k of `order` (n actions, k = 0..n;
 * k = n: after the last): the output of action k-1 sent and the input of
 * action k received, together, as one group (so that two stages that send
 * to each other at once, as 1F1B's steady state does, never wait on each
 * other's send). Writes at most 2 transfers into out; returns how many. */
int gs_pp_transfers_before(const gs_pp_action *order, int n, int k, int stage, int stages,
                           gs_pp_transfer *out);

/* The group that opens a stage's links before its first step: one element
 * sent to and one received from each neighbour (stage - 1, stage + 1), the
 * upward message as a forward transfer and the downward one as a backward
 * transfer, both of micro-batch -1. Every stage runs it at the same point,
 * so that each pair of neighbours opens both directions between them in
 * one group on each side. Why: NCCL opens the link of a direction between
 * two ranks at the first group that uses it, and that group must meet a
 * group of the peer that opens the same links (comm.h, gs_comm_p2p). The
 * steps' own groups do not always: with M = 1 on 2 stages (either
 * schedule) stage 0 sends F0 and receives B0 in one group while stage 1
 * receives F0, and sends B0 only after its passes, so the two never meet
 * (test_mlp_pipeline simulates the opening as transport.cc does it; on
 * GPUs the hangs seen at M = 1 were lazy kernel loads, which the set-up
 * group did not prevent: mlp_pp_cuda.c). Writes at most 4 transfers into
 * out; returns how many. */
int gs_pp_link_transfers(int stage, int stages, gs_pp_transfer *out);

#endif
