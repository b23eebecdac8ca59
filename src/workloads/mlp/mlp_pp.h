/* One rank of mlp's pipeline (--pp): a stage of a
 * replica holding the layers of its stage, running its micro-batches in
 * the schedule's order (schedule.h), passing activations forward and
 * gradients backward to the neighbouring stages with point-to-point
 * transfers (gs_comm_p2p), averaging its gradients over the replicas of
 * its stage, and updating its parameters with Adam. Rules:
 * docs/workloads/mlp.md, "Pipeline parallelism". */
#ifndef GS_MLP_PP_H
#define GS_MLP_PP_H

#include <stdint.h>

#include "core/result.h"
#include "core/status.h"
#include "platform/comm.h"
#include "workloads/mlp/mlp.h"
#include "workloads/mlp/mlp_cuda.h"
#include "workloads/mlp/pipeline.h"

typedef struct gs_mlp_pp gs_mlp_pp;

typedef struct {
  gs_mlp_model model;
  gs_mlp_adam adam;
  const gs_mlp_pp_options *options;
  gs_comm *comm;
  int rank, world;
  const float *params;      /* initial parameters of the whole model (copied) */
  gs_mlp_data data;         /* the host dataset (read while the rank lives); x and y
                               NULL: the synthetic one, generated from data_seed */
  uint64_t data_seed, dropout_seed;
  gs_backend backend;
  cudaStream_t stream;      /* the rank's stream (CUDA), with its device current */
  const uint64_t *all_rows; /* every rank's share of the global batch */
  gs_mlp_precision precision; /* fp32, tf32 or bf16 (CUDA: the GEMMs' types) */
  uint64_t verify_rows;     /* CUDA: the verified step takes at most this many samples of
                               each rank's share (--verify-rows), as the data-parallel
                               step's check does; 0: the whole batch */
} gs_mlp_pp_config;

/* Sets up one stage rank. GS_ERR_USAGE when the ranks are not whole
 * replicas (a multiple of --pp) or a replica has fewer samples than
 * micro-batches. Called from the rank's thread; *out freed by
 * gs_mlp_pp_free. */
gs_status gs_mlp_pp_create(const gs_mlp_pp_config *config, gs_mlp_pp **out);
void gs_mlp_pp_free(gs_mlp_pp *p);

/* One training step of the stage (the fixed-step runner's step). The time
 * spent waiting for transfers and for the replicas' gradient sum is
 * bracketed as exposed communication. A failed transfer names the stage,
 * the replica and the peer stage. */
gs_status gs_mlp_pp_step(gs_mlp_pp *p);

/* One more step, checked against the CPU reference: this stage's
 * gradients before the sum over replicas must equal bit for bit those of
 * the reference step over the replica's samples (gs_mlp_cpu_gradients with
 * every stage's parameters), and its parameters after Adam those of the
 * reference update from the reference gradients summed the same way. */
gs_status gs_mlp_pp_verify(gs_mlp_pp *p, gs_verification *out);

#endif
