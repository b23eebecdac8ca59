/* Pipeline schedules of mlp --pp (schedule.h): GPipe and 1F1B orders of
 * one stage's passes, and the grouped point-to-point transfers between
 * them, and the group that opens the links between neighbour stages. */
#include "workloads/mlp/schedule.h"

const char *const gs_pp_schedule_names[] = {"gpipe", "1f1b", NULL};

int gs_pp_warmup(int stages, int stage, int micro) {
  const int w = stages - stage - 1;
  return w < micro ? w : micro;
}

void gs_pp_schedule_order(gs_pp_schedule schedule, int stages, int stage, int micro,
                          gs_pp_action *out) {
  int n = 0, forward = 0, backward = 0;
  if (schedule == GS_PP_GPIPE) {
    for (int j = 0; j < micro; j++) out[n++] = (gs_pp_action){GS_PP_FORWARD, j};
    for (int j = 0; j < micro; j++) out[n++] = (gs_pp_action){GS_PP_BACKWARD, j};
    return;
  }
  const int warmup = gs_pp_warmup(stages, stage, micro);
  while (forward < warmup) out[n++] = (gs_pp_action){GS_PP_FORWARD, forward++};
  while (forward < micro) {
    out[n++] = (gs_pp_action){GS_PP_FORWARD, forward++};
    out[n++] = (gs_pp_action){GS_PP_BACKWARD, backward++};
  }
  while (backward < micro) out[n++] = (gs_pp_action){GS_PP_BACKWARD, backward++};
}

/* The transfer carrying the output of `a` at `stage`, if any. */
static int output_of(gs_pp_action a, int stage, int stages, gs_pp_transfer *t) {
  const int peer = a.pass == GS_PP_FORWARD ? stage + 1 : stage - 1;
  if (peer < 0 || peer >= stages) return 0;
  *t = (gs_pp_transfer){.send = 1, .peer_stage = peer, .pass = a.pass, .micro = a.micro};
  return 1;
}

/* The transfer carrying the input of `a` at `stage`, if any. */
static int input_of(gs_pp_action a, int stage, int stages, gs_pp_transfer *t) {
  const int peer = a.pass == GS_PP_FORWARD ? stage - 1 : stage + 1;
  if (peer < 0 || peer >= stages) return 0;
  *t = (gs_pp_transfer){.send = 0, .peer_stage = peer, .pass = a.pass, .micro = a.micro};
  return 1;
}

int gs_pp_transfers_before(const gs_pp_action *order, int n, int k, int stage, int stages,
                           gs_pp_transfer *out) {
  int count = 0;
  if (k > 0) count += output_of(order[k - 1], stage, stages, out + count);
  if (k < n) count += input_of(order[k], stage, stages, out + count);
  return count;
}

int gs_pp_link_transfers(int stage, int stages, gs_pp_transfer *out) {
  int count = 0;
  if (stage > 0) {
    out[count++] = (gs_pp_transfer){.send = 1, .peer_stage = stage - 1, .pass = GS_PP_BACKWARD,
                                    .micro = -1};
    out[count++] = (gs_pp_transfer){.send = 0, .peer_stage = stage - 1, .pass = GS_PP_FORWARD,
                                    .micro = -1};
  }
  if (stage + 1 < stages) {
    out[count++] = (gs_pp_transfer){.send = 1, .peer_stage = stage + 1, .pass = GS_PP_FORWARD,
                                    .micro = -1};
    out[count++] = (gs_pp_transfer){.send = 0, .peer_stage = stage + 1, .pass = GS_PP_BACKWARD,
                                    .micro = -1};
  }
  return count;
}
