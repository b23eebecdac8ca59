/* The state of one stage rank of mlp's pipeline, shared by its host
 * logic (mlp_pp.c: schedule, transfers, verification, the CPU passes) and
 * its CUDA passes (mlp_pp_cuda.c). Nothing else includes this header. */
#ifndef GS_MLP_PP_INTERNAL_H
#define GS_MLP_PP_INTERNAL_H

#include <cublas_v2.h>

#include "workloads/mlp/mlp_pp.h"

struct gs_mlp_pp {
  gs_mlp_model model;
  gs_mlp_adam adam;
  gs_comm *comm;
  gs_mlp_data data;
  uint64_t dropout_seed;
  int rank, stages, stage, replicas, replica, micro;
  gs_pp_schedule schedule;
  int lo, hi;                  /* layers of this stage */
  uint64_t begin, count;       /* its parameters */
  uint64_t rows, offset, global_batch; /* the replica's samples */
  int world;
  uint64_t *all_rows;          /* every rank's share (world entries) */
  uint64_t verify_rows;        /* CUDA: per rank in the verified step; 0 the whole share */
  uint64_t total;              /* parameters of the whole model */
  float *params;               /* whole model; only [begin, begin+count) is this stage's */
  float *mom1, *mom2, *grads;  /* count each */
  double *acc;                 /* count: gradients summed over micro-batches */
  gs_comm_group *replicas_group; /* this stage's replicas (replicas > 1), made by the first sum */
  float *act[GS_MLP_MAX_LAYERS + 1]; /* act[l], lo <= l <= hi: [rows][widths[l]] */
  float *grad_out;             /* [rows][widths[hi]]: gradient of this stage's output */
  float *grad_in;              /* [rows][widths[lo]]: gradient of its input (stage > 0) */
  float *tmp[2];               /* [largest micro-batch][widest] */
  gs_pp_action *order;         /* 2 * micro */
  uint64_t steps;
  double loss;                 /* this stage's share of the loss, last step (last stage) */
  float *host_x, *host_y;      /* the dataset generated here (CUDA backend) */
  float link[4];               /* CPU: the floats that open the links (gs_pp_link_transfers) */
  int cuda;                    /* the CUDA backend: the passes run on the device */
  gs_mlp_precision precision;  /* fp32, tf32 or bf16 (the CUDA GEMMs) */
  /* CUDA backend: the stage's range only (index = offset - begin). */
  cudaStream_t stream;
  cudaStream_t transfer_stream; /* the stage's sends and receives, beside the passes */
  cudaEvent_t computed, transferred; /* ordering the two streams (no timing) */
  cublasHandle_t blas;
  int sm_count;
  float *d_params, *d_mom1, *d_mom2, *d_grads, *d_x, *d_y, *d_loss, *d_discard, *d_z;
  float *d_link;               /* 4: the floats that open the links */
  uint64_t *d_steps;
  /* Activations and their gradients, of `act_bytes` each: float, or
   * bfloat16 under bf16 (as the data-parallel step's bf16 mode); d_low the
   * stage's parameters in bfloat16 for the GEMMs (bf16 only), refreshed
   * by Adam. */
  size_t act_bytes;
  void *d_act[GS_MLP_MAX_LAYERS + 1], *d_grad_out, *d_grad_in, *d_tmp[2], *d_low;
};

/* CUDA passes (mlp_pp_cuda.c): buffers, parameters from p->params, the
 * dataset from p->data; forward and backward of micro-batch j on
 * p->stream; zeroed gradients before a step; Adam after it; the stage's parameters (into p->params) and
 * gradients (into p->grads) copied back after the stream is idle. */
gs_status gs_mlp_pp_cuda_create(gs_mlp_pp *p);
void gs_mlp_pp_cuda_free(gs_mlp_pp *p);
gs_status gs_mlp_pp_cuda_forward(gs_mlp_pp *p, int j);
gs_status gs_mlp_pp_cuda_backward(gs_mlp_pp *p, int j);
gs_status gs_mlp_pp_cuda_begin_step(gs_mlp_pp *p);
gs_status gs_mlp_pp_cuda_adam(gs_mlp_pp *p);
/* The transfer stream waits for the passes enqueued so far (before a group
 * of transfers); the compute stream waits for the transfers enqueued so
 * far (before a pass that reads a received buffer, and at the end of the
 * step, so that the next step overwrites nothing a send still reads). */
gs_status gs_mlp_pp_cuda_transfers_wait(gs_mlp_pp *p);
gs_status gs_mlp_pp_cuda_compute_wait(gs_mlp_pp *p);
gs_status gs_mlp_pp_cuda_fetch(gs_mlp_pp *p, int params, int grads);

#endif
