/* One stage rank of mlp's pipeline on the CPU backend (mlp_pp.h). A stage
 * owns layers [lo, hi) and the parameter range [begin, end) they occupy in
 * the whole model's layout; it keeps a full-size parameter array so that
 * offsets match the reference, and updates only its range. Activations of
 * every micro-batch stay until its backward pass. */
#include "workloads/mlp/mlp_pp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "platform/trace.h"
#include "workloads/mlp/mlp_layers.h"
#include "workloads/mlp/mlp_pp_internal.h"
#include "workloads/mlp/mlp_tolerance.h"

void gs_mlp_pp_free(gs_mlp_pp *p) {
  if (!p) return;
  if (p->cuda) gs_mlp_pp_cuda_free(p);
  free(p->host_x);
  free(p->host_y);
  free(p->params);
  free(p->mom1);
  free(p->mom2);
  free(p->grads);
  free(p->acc);
  gs_comm_group_destroy(p->replicas_group);
  for (int l = 0; l <= GS_MLP_MAX_LAYERS; l++) free(p->act[l]);
  free(p->grad_out);
  free(p->grad_in);
  free(p->tmp[0]);
  free(p->tmp[1]);
  free(p->order);
  free(p->all_rows);
  free(p);
}

/* The replica's samples: its ranks' shares laid end to end, replicas in
 * order, so that every share of the runner's split is computed once; with
 * `cap` > 0 at most `cap` of each rank's share (the verified step). */
static void replica_share(gs_mlp_pp *p, const uint64_t *all_rows, uint64_t cap) {
  p->rows = p->offset = p->global_batch = 0;
  for (int r = 0; r < p->world; r++) {
    const int d = gs_mlp_pp_replica_of(r, p->stages);
    const uint64_t n = cap && all_rows[r] > cap ? cap : all_rows[r];
    if (d < p->replica) p->offset += n;
    if (d == p->replica) p->rows += n;
    p->global_batch += n;
  }
}

/* CUDA: at most `verify_rows` of each rank's share in the verified step,
 * as the data-parallel check (mlp.c), so that the CPU reference of a large
 * batch does not take minutes; raised to ceil(micro / stages) when every
 * micro-batch would not get a sample of it (2 ranks at --micro-batches 32
 * with --verify-rows 8: the whole 32768-sample share was checked, and the
 * reference ran past a minute), the whole share only when a replica has
 * fewer samples than micro-batches (every rank decides alike). The cap
 * taken is kept in verify_rows for the verification's note. */
static void check_share(gs_mlp_pp *p) {
  if (!p->cuda || p->verify_rows == 0) return;
  const uint64_t least = ((uint64_t)p->micro + (uint64_t)p->stages - 1) / (uint64_t)p->stages;
  const uint64_t cap = p->verify_rows > least ? p->verify_rows : least;
  for (int d = 0; d < p->world / p->stages; d++) {
    uint64_t n = 0;
    for (int k = 0; k < p->stages; k++) {
      const uint64_t share = p->all_rows[d * p->stages + k];
      n += share > cap ? cap : share;
    }
    if (n < (uint64_t)p->micro) return;
  }
  p->verify_rows = cap;
  replica_share(p, p->all_rows, cap);
}

static gs_status allocate(gs_mlp_pp *p, const float *params) {
  const gs_mlp_model *m = &p->model;
  uint64_t widest = 0, micro_rows = 0, first = 0;
  for (int l = p->lo; l <= p->hi; l++) widest = m->widths[l] > widest ? m->widths[l] : widest;
  gs_mlp_pp_micro_rows(p->rows, p->micro, 0, &first, &micro_rows);
  p->params = malloc((size_t)p->total * sizeof(float));
  p->mom1 = calloc((size_t)p->count, sizeof(float));
  p->mom2 = calloc((size_t)p->count, sizeof(float));
  p->grads = malloc((size_t)p->count * sizeof(float));
  p->acc = malloc((size_t)p->count * sizeof(double));
  p->order = malloc(2 * (size_t)p->micro * sizeof *p->order);
  int ok = p->params && p->mom1 && p->mom2 && p->grads && p->acc && p->order;
  // The passes' buffers live where the passes run (the device's: mlp_pp_cuda.c).
  for (int l = p->lo; !p->cuda && l <= p->hi; l++) {
    p->act[l] = malloc((size_t)(p->rows * m->widths[l]) * sizeof(float));
    ok = ok && p->act[l];
  }
  if (!p->cuda) {
    p->grad_out = malloc((size_t)(p->rows * m->widths[p->hi]) * sizeof(float));
    p->grad_in = malloc((size_t)(p->rows * m->widths[p->lo]) * sizeof(float));
    p->tmp[0] = malloc((size_t)(micro_rows * widest) * sizeof(float));
    p->tmp[1] = malloc((size_t)(micro_rows * widest) * sizeof(float));
    ok = ok && p->grad_out && p->grad_in && p->tmp[0] && p->tmp[1];
  }
  if (!ok)
    return gs_error(GS_ERR_NOMEM, "mlp: cannot allocate pipeline stage %d's buffers for %llu rows",
                    p->stage, (unsigned long long)p->rows);
  memcpy(p->params, params, (size_t)p->total * sizeof(float));
  return GS_OK;
}

/* The synthetic dataset on the host (the CUDA backend has none): the
 * verification's reference reads it, and the device gets a copy. On CUDA
 * the device generates it (the data-parallel path's kernel) and it is
 * copied back: the host's O(samples x targets x features) generator took
 * minutes for 8 layers 2048 wide (bench/pipeline.sh). */
static gs_status generate_data(gs_mlp_pp *p, uint64_t seed) {
  const uint64_t n = p->data.n;
  p->host_x = malloc((size_t)(n * p->data.features) * sizeof(float));
  p->host_y = malloc((size_t)(n * p->data.targets) * sizeof(float));
  if (!p->host_x || !p->host_y)
    return gs_error(GS_ERR_NOMEM, "mlp: cannot allocate the host dataset of %llu samples",
                    (unsigned long long)n);
  if (p->cuda)
    GS_TRY(gs_mlp_cuda_generate(seed, n, p->data.features, p->data.targets, p->host_x, p->host_y));
  else
    gs_mlp_generate(seed, n, p->data.features, p->data.targets, p->host_x, p->host_y);
  p->data.x = p->host_x;
  p->data.y = p->host_y;
  return GS_OK;
}

/* Opens the links to the neighbour stages before the first step: a float
 * each way in one group that each neighbour runs at the same point
 * (gs_pp_link_transfers says why); on CUDA on the transfer stream, waited
 * for within the world's timeout. Every rank of the world calls it. */
static gs_status open_links(gs_mlp_pp *p) {
  gs_pp_transfer t[4];
  const int n = gs_pp_link_transfers(p->stage, p->stages, t);
  if (n == 0) return GS_OK;
  float *slots = p->cuda ? p->d_link : p->link;
  gs_comm_p2p_op ops[4];
  for (int i = 0; i < n; i++)
    ops[i] = (gs_comm_p2p_op){.send = t[i].send, .buf = slots + i, .count = 1,
                              .dtype = GS_DTYPE_FLOAT,
                              .peer = p->rank + (t[i].peer_stage - p->stage)};
  cudaStream_t on = p->cuda ? p->transfer_stream : p->stream;
  gs_status st = gs_comm_p2p(p->comm, ops, n, on);
  if (st == GS_OK && p->cuda) st = gs_comm_wait(p->comm, on);
  if (st == GS_OK) st = gs_comm_p2p_drain(p->comm);
  if (st != GS_OK)
    return gs_error(st, "mlp pipeline stage %d of %d (rank %d, replica %d), opening the links to "
                    "its neighbour stages: %s",
                    p->stage, p->stages, p->rank, p->replica, gs_last_error());
  return GS_OK;
}

gs_status gs_mlp_pp_create(const gs_mlp_pp_config *c, gs_mlp_pp **out) {
  *out = NULL;
  const gs_mlp_pp_options *o = c->options;
  const int stages = (int)o->stages;
  if (c->world % stages != 0)
    return gs_error(GS_ERR_USAGE,
                    "mlp: --pp %d needs a multiple of %d ranks (replicas x stages), got %d",
                    stages, stages, c->world);
  gs_mlp_pp *p = calloc(1, sizeof *p);
  if (!p) return gs_error(GS_ERR_NOMEM, "mlp: cannot allocate a pipeline stage");
  p->model = c->model;
  p->adam = c->adam;
  p->comm = c->comm;
  p->data = c->data;
  p->dropout_seed = c->dropout_seed;
  p->cuda = c->backend == GS_BACKEND_CUDA;
  p->precision = c->precision;
  p->stream = c->stream;
  p->rank = c->rank;
  p->stages = stages;
  p->stage = gs_mlp_pp_stage_of(c->rank, stages);
  p->replicas = c->world / stages;
  p->replica = gs_mlp_pp_replica_of(c->rank, stages);
  p->micro = (int)o->micro;
  p->schedule = (gs_pp_schedule)o->schedule;
  int first[GS_MLP_MAX_LAYERS + 1];
  gs_mlp_pp_split(&p->model, stages, &o->bounds, first);
  p->lo = first[p->stage];
  p->hi = first[p->stage + 1];
  p->begin = gs_mlp_weight_offset(&p->model, p->lo);
  p->count = gs_mlp_weight_offset(&p->model, p->hi) - p->begin;
  p->total = gs_mlp_param_count(&p->model);
  p->world = c->world;
  p->verify_rows = c->verify_rows;
  p->all_rows = malloc((size_t)c->world * sizeof *p->all_rows);
  if (!p->all_rows) {
    gs_mlp_pp_free(p);
    return gs_error(GS_ERR_NOMEM, "mlp: cannot allocate a pipeline stage");
  }
  memcpy(p->all_rows, c->all_rows, (size_t)c->world * sizeof *p->all_rows);
  replica_share(p, c->all_rows, 0);
  gs_status st = GS_OK;
  if (p->rows < (uint64_t)p->micro)
    st = gs_error(GS_ERR_USAGE,
                  "mlp: --micro-batches %d over %llu samples of replica %d: every micro-batch "
                  "needs a sample (raise --batch or lower --micro-batches)",
                  p->micro, (unsigned long long)p->rows, p->replica);
  if (st == GS_OK && !p->data.x) st = generate_data(p, c->data_seed);
  if (st == GS_OK) st = allocate(p, c->params);
  if (st == GS_OK && p->cuda) st = gs_mlp_pp_cuda_create(p);
  if (st == GS_OK) st = open_links(p);
  if (st != GS_OK) {
    gs_mlp_pp_free(p);
    return st;
  }
  gs_pp_schedule_order(p->schedule, stages, p->stage, p->micro, p->order);
  *out = p;
  return GS_OK;
}

/* ---- passes ------------------------------------------------------------------ */

/* The batch of micro-batch j (its first row in the replica: *first). */
static gs_mlp_batch micro_batch(const gs_mlp_pp *p, int j, uint64_t *first, uint64_t *rows) {
  gs_mlp_pp_micro_rows(p->rows, p->micro, j, first, rows);
  return (gs_mlp_batch){.step = p->steps, .global_batch = p->global_batch,
                        .offset = p->offset + *first, .rows = *rows, .seed = p->dropout_seed};
}

static void forward(gs_mlp_pp *p, int j) {
  const gs_mlp_model *m = &p->model;
  uint64_t f = 0, n = 0;
  const gs_mlp_batch b = micro_batch(p, j, &f, &n);
  if (p->stage == 0) gs_mlp_cpu_inputs(m, &p->data, &b, n, p->act[0] + f * m->widths[0]);
  for (int l = p->lo; l < p->hi; l++)
    gs_mlp_cpu_layer_forward(m, l, p->params, &b, n, p->act[l] + f * m->widths[l],
                             p->act[l + 1] + f * m->widths[l + 1]);
  if (p->stage == p->stages - 1)
    p->loss += gs_mlp_cpu_loss_grad(m, &p->data, &b, n, p->act[p->hi] + f * m->widths[p->hi],
                                    p->grad_out + f * m->widths[p->hi]);
}

static void backward(gs_mlp_pp *p, int j) {
  const gs_mlp_model *m = &p->model;
  uint64_t f = 0, n = 0;
  micro_batch(p, j, &f, &n);
  const float *g = p->grad_out + f * m->widths[p->hi];
  for (int l = p->hi - 1; l >= p->lo; l--) {
    const uint64_t w = gs_mlp_weight_offset(m, l) - p->begin, b = gs_mlp_bias_offset(m, l) - p->begin;
    gs_mlp_cpu_layer_weight_grads(m, l, n, g, p->act[l] + f * m->widths[l], p->acc + w, p->acc + b);
    if (l == 0) break;
    // The last input gradient of a stage is what it sends to the one before.
    float *prev = l == p->lo ? p->grad_in + f * m->widths[l] : p->tmp[l & 1];
    gs_mlp_cpu_layer_input_grad(m, l, p->params, n, g, p->act[l] + f * m->widths[l], prev);
    g = prev;
  }
}

/* ---- transfers ---------------------------------------------------------------- */

/* The buffer and element count of transfer t (this stage's side). */
static gs_comm_p2p_op transfer_op(const gs_mlp_pp *p, const gs_pp_transfer *t) {
  const gs_mlp_model *m = &p->model;
  uint64_t f = 0, n = 0;
  gs_mlp_pp_micro_rows(p->rows, p->micro, t->micro, &f, &n);
  // Forward: activations at the boundary layer; backward: their gradient.
  const int boundary = t->peer_stage > p->stage ? p->hi : p->lo;
  const uint64_t width = m->widths[boundary];
  void *base;
  if (t->pass == GS_PP_FORWARD)
    base = p->cuda ? p->d_act[boundary] : (void *)p->act[boundary];
  else if (t->send)
    base = p->cuda ? p->d_grad_in : (void *)p->grad_in;
  else
    base = p->cuda ? p->d_grad_out : (void *)p->grad_out;
  // bf16 activations travel as bfloat16 (half the bytes), as they are kept.
  const int bf16 = p->cuda && p->precision == GS_MLP_BF16;
  const size_t elem = bf16 ? 2 : sizeof(float);
  return (gs_comm_p2p_op){.send = t->send, .buf = (char *)base + (size_t)(f * width) * elem,
                          .count = (size_t)(n * width),
                          .dtype = bf16 ? GS_DTYPE_BFLOAT16 : GS_DTYPE_FLOAT,
                          .peer = p->rank + (t->peer_stage - p->stage)};
}

/* Runs the transfers before action k (k = 2M: after the last pass); a
 * failure is told with the stage's place in the pipeline. CPU: the group
 * is exposed communication. CUDA: the group goes on the transfer stream
 * once the passes before it are done, and the compute stream waits for it
 * (exposed) only when it receives the next pass's input, or at the end of
 * the step: a group that only sends overlaps the next pass. */
static gs_status exchange(gs_mlp_pp *p, int k) {
  gs_pp_transfer t[2];
  const int n = gs_pp_transfers_before(p->order, 2 * p->micro, k, p->stage, p->stages, t);
  const int end = k == 2 * p->micro;
  gs_comm_p2p_op ops[2];
  int receives = 0;
  for (int i = 0; i < n; i++) {
    ops[i] = transfer_op(p, &t[i]);
    receives += !t[i].send;
  }
  if (n > 0) {
    cudaStream_t on = p->cuda ? p->transfer_stream : p->stream;
    if (p->cuda)
      GS_TRY(gs_mlp_pp_cuda_transfers_wait(p));
    else
      GS_TRY(gs_comm_exposed_begin(p->comm, p->stream));
    gs_trace_begin(GS_TRACE_COMM, "send/recv", k, on);
    gs_status st = gs_comm_p2p(p->comm, ops, n, on);
    gs_trace_end();
    if (st != GS_OK) {
      const gs_pp_transfer *last = &t[n - 1];
      return gs_error(st,
                      "mlp pipeline stage %d of %d (rank %d, replica %d), %s %s of micro-batch "
                      "%d %s stage %d (rank %d): %s",
                      p->stage, p->stages, p->rank, p->replica, last->send ? "sending" : "receiving",
                      last->pass == GS_PP_FORWARD ? "activations" : "gradients", last->micro,
                      last->send ? "to" : "from", last->peer_stage,
                      p->rank + (last->peer_stage - p->stage), gs_last_error());
    }
    if (!p->cuda) return gs_comm_exposed_end(p->comm, p->stream);
  }
  if (!p->cuda || (receives == 0 && !end)) return GS_OK;
  GS_TRY(gs_comm_exposed_begin(p->comm, p->stream));
  GS_TRY(gs_mlp_pp_cuda_compute_wait(p));
  return gs_comm_exposed_end(p->comm, p->stream);
}

/* Sums `grads` (count floats) over the replicas of this stage, in place:
 * an allreduce over the group of the stage's ranks (one per replica, in
 * replica order), split from the world by the first sum. Every replica's
 * stage rank gets the same bits. On the CPU backend the group is marked,
 * so that the runner records each replica's arrival at it (summarized per
 * stage: gs_mlp_pp_collective_group). */
static gs_status sum_over_replicas(gs_mlp_pp *p, float *grads) {
  if (p->replicas == 1) return GS_OK;
  if (!p->replicas_group) {
    GS_TRY(gs_comm_group_create(p->comm, p->stage, &p->replicas_group));
    gs_comm_group_mark_arrivals(p->replicas_group);
  }
  return gs_comm_group_allreduce(p->replicas_group, grads, grads, (size_t)p->count,
                                 GS_DTYPE_FLOAT, GS_REDOP_SUM, p->stream);
}

/* ---- the step ------------------------------------------------------------------ */

/* Forward and backward of every micro-batch with the transfers between
 * them; the stage's gradients (before the sum over replicas) in p->grads. */
static gs_status run_schedule(gs_mlp_pp *p) {
  const int n = 2 * p->micro;
  if (p->cuda)
    GS_TRY(gs_mlp_pp_cuda_begin_step(p));
  else
    memset(p->acc, 0, (size_t)p->count * sizeof(double));
  p->loss = 0.0;
  for (int k = 0; k <= n; k++) {
    GS_TRY(exchange(p, k));
    if (k == n) break;
    const gs_pp_action a = p->order[k];
    gs_trace_begin(GS_TRACE_COMPUTE, a.pass == GS_PP_FORWARD ? "forward" : "backward", a.micro,
                   p->stream);
    gs_status st = GS_OK;
    if (p->cuda)
      st = a.pass == GS_PP_FORWARD ? gs_mlp_pp_cuda_forward(p, a.micro)
                                   : gs_mlp_pp_cuda_backward(p, a.micro);
    else if (a.pass == GS_PP_FORWARD)
      forward(p, a.micro);
    else
      backward(p, a.micro);
    gs_trace_end();
    GS_TRY(st);
  }
  GS_TRY(gs_comm_p2p_drain(p->comm));
  for (uint64_t i = 0; !p->cuda && i < p->count; i++) p->grads[i] = (float)p->acc[i];
  return GS_OK;
}

/* The replicas' sum as exposed communication, then Adam on the stage. */
static gs_status reduce_and_update(gs_mlp_pp *p) {
  if (p->replicas > 1) {
    GS_TRY(gs_comm_exposed_begin(p->comm, p->stream));
    gs_trace_begin(GS_TRACE_COMM, "sum gradients over replicas", -1, p->stream);
    gs_status st = sum_over_replicas(p, p->cuda ? p->d_grads : p->grads);
    gs_trace_end();
    GS_TRY(st);
    GS_TRY(gs_comm_exposed_end(p->comm, p->stream));
  }
  p->steps++;
  gs_trace_begin(GS_TRACE_COMPUTE, "optimizer", -1, p->stream);
  if (p->cuda) {
    gs_status st = gs_mlp_pp_cuda_adam(p);
    gs_trace_end();
    return st;
  }
  gs_mlp_cpu_adam(&p->adam, p->steps, p->count, p->grads, p->params + p->begin, p->mom1, p->mom2);
  gs_trace_end();
  return GS_OK;
}

gs_status gs_mlp_pp_step(gs_mlp_pp *p) {
  GS_TRY(run_schedule(p));
  return reduce_and_update(p);
}


/* ---- verification ---------------------------------------------------------------- */

/* Host copies used by one verification. */
typedef struct {
  float *full, *ref_grads, *before, *mom1, *mom2;
  double *bound; /* CUDA: each parameter's gradient error bound (NULL on the CPU) */
} verify_buffers;

static void verify_buffers_free(verify_buffers *b) {
  free(b->full);
  free(b->ref_grads);
  free(b->before);
  free(b->mom1);
  free(b->mom2);
  free(b->bound);
}

/* The sum over the world of `floats` host values at `buf`, in place
 * (through a device buffer on CUDA, whose collectives take only those). */
static gs_status world_sum(gs_mlp_pp *p, float *buf, uint64_t floats) {
  if (!p->cuda)
    return gs_comm_allreduce(p->comm, buf, buf, (size_t)floats, GS_DTYPE_FLOAT, GS_REDOP_SUM, NULL);
  const size_t bytes = (size_t)floats * sizeof(float);
  float *dev = NULL;
  GS_CHECK_CUDA(cudaMalloc((void **)&dev, bytes));
  gs_status st = GS_OK;
  if (cudaMemcpy(dev, buf, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
    st = gs_error(GS_ERR_CUDA, "mlp: cannot copy the model to the device for its gathering");
  if (st == GS_OK)
    st = gs_comm_allreduce(p->comm, dev, dev, (size_t)floats, GS_DTYPE_FLOAT, GS_REDOP_SUM,
                           p->stream);
  if (st == GS_OK) st = gs_comm_wait(p->comm, p->stream);
  if (st == GS_OK && cudaMemcpy(buf, dev, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
    st = gs_error(GS_ERR_CUDA, "mlp: cannot copy the gathered model back");
  cudaFree(dev);
  return st;
}

/* Every stage's parameters into b->full (replica 0's, through a sum over
 * the world in which only replica 0 contributes, each its own range), and
 * how many of this stage's differ from them (replicas must agree). */
static gs_status gather_model(gs_mlp_pp *p, verify_buffers *b, uint64_t *differ) {
  if (p->cuda) GS_TRY(gs_mlp_pp_cuda_fetch(p, 1, 0));
  memset(b->full, 0, (size_t)p->total * sizeof(float));
  if (p->replica == 0)
    memcpy(b->full + p->begin, p->params + p->begin, (size_t)p->count * sizeof(float));
  GS_TRY(world_sum(p, b->full, p->total));
  *differ = 0;
  for (uint64_t i = 0; i < p->count; i++)
    *differ += b->full[p->begin + i] != p->params[p->begin + i];
  return GS_OK;
}

/* Elements of a and b (n floats) that differ bit for bit. */
static uint64_t count_unequal(const float *a, const float *b, uint64_t n) {
  uint64_t bad = 0;
  for (uint64_t i = 0; i < n; i++) bad += memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return bad;
}

/* Adam's tolerance of the data-parallel step's CUDA verification (mlp.c):
 * the update from the device's own gradients within GS_PP_ADAM_RTOL x lr
 * (+ 1e-6 relative). The gradients are held to the error bounds of the
 * stage's precision (mlp_tolerance.c), as the data-parallel step's are; the
 * CPU pipeline to bit equality instead. */
#define GS_PP_ADAM_RTOL 1e-3

/* CUDA: the stage's gradients (p->grads) against the reference `ref` and
 * its bounds `bound` (the stage's parameters); returns the elements
 * outside their bound, with the largest error and the largest bound. */
static uint64_t gradients_outside(const gs_mlp_pp *p, const float *ref, const double *bound,
                                  double *max_err, double *max_bound) {
  gs_mlp_gradient_check g;
  gs_mlp_gradient_compare(p->count, p->grads, ref, bound, 1.0, &g);
  *max_err = g.max_error;
  *max_bound = g.max_bound;
  return g.outside;
}

/* The stage's moments before the step, on the host. */
static gs_status moments_before(gs_mlp_pp *p, verify_buffers *b) {
  const size_t mine = (size_t)p->count * sizeof(float);
  memcpy(b->before, p->params + p->begin, mine);
  if (!p->cuda) {
    memcpy(b->mom1, p->mom1, mine);
    memcpy(b->mom2, p->mom2, mine);
    return GS_OK;
  }
  GS_CHECK_CUDA(cudaMemcpy(b->mom1, p->d_mom1, mine, cudaMemcpyDeviceToHost));
  GS_CHECK_CUDA(cudaMemcpy(b->mom2, p->d_mom2, mine, cudaMemcpyDeviceToHost));
  return GS_OK;
}

/* After the reference gradients b->ref_grads: the step, its gradients
 * compared (*gbad), the update, and the reference update into b->before
 * (CPU: from the reference gradients summed over replicas as the step
 * sums its own; CUDA: from the device's own summed gradients). */
static gs_status step_and_compare(gs_mlp_pp *p, verify_buffers *b, uint64_t *gbad, double *err,
                                  double *tol) {
  GS_TRY(run_schedule(p));
  if (p->cuda) {
    GS_TRY(gs_mlp_pp_cuda_fetch(p, 0, 1));
    *gbad = gradients_outside(p, b->ref_grads + p->begin, b->bound + p->begin, err, tol);
  } else {
    *gbad = count_unequal(p->grads, b->ref_grads + p->begin, p->count);
  }
  GS_TRY(reduce_and_update(p));
  if (p->cuda) {
    GS_TRY(gs_mlp_pp_cuda_fetch(p, 1, 1));
  } else {
    GS_TRY(sum_over_replicas(p, b->ref_grads + p->begin));
    GS_TRY(gs_comm_p2p_drain(p->comm));
    memcpy(p->grads, b->ref_grads + p->begin, (size_t)p->count * sizeof(float));
  }
  double discard = 0.0;
  GS_TRY(gs_comm_exposed_take(p->comm, &discard));
  gs_mlp_cpu_adam(&p->adam, p->steps, p->count, p->grads, b->before, b->mom1, b->mom2);
  return GS_OK;
}

/* Parameters after the update outside the reference update: bitwise on
 * the CPU, within Adam's tolerance on CUDA. */
static uint64_t updates_outside(const gs_mlp_pp *p, const float *ref) {
  if (!p->cuda) return count_unequal(p->params + p->begin, ref, p->count);
  uint64_t bad = 0;
  for (uint64_t i = 0; i < p->count; i++) {
    const double e = fabs((double)p->params[p->begin + i] - ref[i]);
    bad += !(e <= GS_PP_ADAM_RTOL * p->adam.lr + 1e-6 * fabs((double)ref[i]));
  }
  return bad;
}

static gs_status verify_step(gs_mlp_pp *p, gs_verification *v);

gs_status gs_mlp_pp_verify(gs_mlp_pp *p, gs_verification *v) {
  const uint64_t rows = p->rows, offset = p->offset, global = p->global_batch;
  check_share(p);
  const uint64_t checked = p->rows;
  gs_status st = verify_step(p, v);
  p->rows = rows;
  p->offset = offset;
  p->global_batch = global;
  if (st == GS_OK && checked < rows) {
    const size_t len = strlen(v->detail);
    snprintf(v->detail + len, sizeof v->detail - len,
             " (the checked step takes at most %llu samples of each rank, --verify-rows; the "
             "timed steps %llu of the replica)",
             (unsigned long long)p->verify_rows, (unsigned long long)rows);
  }
  return st;
}

static gs_status verify_step(gs_mlp_pp *p, gs_verification *v) {
  memset(v, 0, sizeof *v);
  const size_t total = (size_t)p->total * sizeof(float), mine = (size_t)p->count * sizeof(float);
  verify_buffers b = {malloc(total), malloc(total), malloc(mine), malloc(mine), malloc(mine),
                      p->cuda ? malloc((size_t)p->total * sizeof(double)) : NULL};
  gs_status st = GS_OK;
  if (!b.full || !b.ref_grads || !b.before || !b.mom1 || !b.mom2 || (p->cuda && !b.bound))
    st = gs_error(GS_ERR_NOMEM, "mlp: cannot allocate the pipeline's verification buffers");
  uint64_t differ = 0, gbad = 0, wbad = 0, nonfinite = 0;
  double ref_loss = 0.0, gerr = 0.0, gtol = 0.0;
  if (st == GS_OK) st = gather_model(p, &b, &differ);
  if (st == GS_OK) st = moments_before(p, &b);
  if (st == GS_OK) {
    const gs_mlp_batch batch = {.step = p->steps, .global_batch = p->global_batch,
                                .offset = p->offset, .rows = p->rows, .seed = p->dropout_seed};
    st = gs_mlp_cpu_gradients(&p->model, b.full, &p->data, &batch, b.ref_grads, &ref_loss);
    // The replica's own gradients, before the sum over replicas.
    if (st == GS_OK && p->cuda)
      st = gs_mlp_gradient_bounds(&p->model, b.full, &p->data, &batch,
                                  gs_mlp_op_error(&p->model, p->precision, p->rows, 1), b.bound);
  }
  if (st == GS_OK) st = step_and_compare(p, &b, &gbad, &gerr, &gtol);
  if (st != GS_OK) {
    verify_buffers_free(&b);
    return st;
  }
  wbad = updates_outside(p, b.before);
  for (uint64_t i = 0; i < p->count; i++) nonfinite += !isfinite(p->params[p->begin + i]);
  verify_buffers_free(&b);
  v->tolerance = gtol;
  v->max_abs_error = gerr;
  v->mismatches = gbad + wbad + differ + nonfinite;
  v->status = v->mismatches == 0 && isfinite(ref_loss) ? GS_VERIFY_PASSED : GS_VERIFY_FAILED;
  char how[160] = "bitwise";
  if (p->cuda)
    snprintf(how, sizeof how,
             "beyond their %s error bounds (largest bound %.3g; Adam %g lr)",
             p->precision == GS_MLP_TF32   ? "tf32"
             : p->precision == GS_MLP_BF16 ? "bf16"
                                           : "fp32",
             gtol, GS_PP_ADAM_RTOL);
  snprintf(v->detail, sizeof v->detail,
           "%s pipeline stage %d of %d (layers %d..%d, replica %d of %d, %s, %d micro-batches), "
           "step %llu over the replica's %llu samples against the CPU reference: %llu of %llu "
           "gradients and %llu parameters after Adam differ %s, %llu differ from replica "
           "0's stage, %llu not finite; reference loss share %.6g",
           !p->cuda                      ? "CPU"
           : p->precision == GS_MLP_TF32 ? "CUDA tf32"
           : p->precision == GS_MLP_BF16 ? "CUDA bf16"
                                         : "CUDA fp32",
           p->stage,
           p->stages, p->lo, p->hi - 1, p->replica, p->replicas,
           gs_pp_schedule_names[p->schedule], p->micro, (unsigned long long)p->steps,
           (unsigned long long)p->rows, (unsigned long long)gbad, (unsigned long long)p->count,
           (unsigned long long)wbad, how, (unsigned long long)differ,
           (unsigned long long)nonfinite, ref_loss);
  return GS_OK;
}
