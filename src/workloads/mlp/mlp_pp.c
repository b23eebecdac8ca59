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
#include "core/timer.h"
#include "platform/trace.h"
#include "workloads/mlp/mlp_layers.h"

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
  uint64_t total;              /* parameters of the whole model */
  float *params;               /* whole model; only [begin, begin+count) is this stage's */
  float *mom1, *mom2, *grads;  /* count each */
  double *acc;                 /* count: gradients summed over micro-batches */
  float *sum_buf;              /* count: a replica's gradients (replica 0 of a stage) */
  float *act[GS_MLP_MAX_LAYERS + 1]; /* act[l], lo <= l <= hi: [rows][widths[l]] */
  float *grad_out;             /* [rows][widths[hi]]: gradient of this stage's output */
  float *grad_in;              /* [rows][widths[lo]]: gradient of its input (stage > 0) */
  float *tmp[2];               /* [largest micro-batch][widest] */
  gs_pp_action *order;         /* 2 * micro */
  uint64_t steps;
  double loss;                 /* this stage's share of the loss, last step (last stage) */
  double busy, step_seconds;
};

void gs_mlp_pp_free(gs_mlp_pp *p) {
  if (!p) return;
  free(p->params);
  free(p->mom1);
  free(p->mom2);
  free(p->grads);
  free(p->acc);
  free(p->sum_buf);
  for (int l = 0; l <= GS_MLP_MAX_LAYERS; l++) free(p->act[l]);
  free(p->grad_out);
  free(p->grad_in);
  free(p->tmp[0]);
  free(p->tmp[1]);
  free(p->order);
  free(p);
}

/* The replica's samples: its ranks' shares laid end to end, replicas in
 * order, so that every share of the runner's split is computed once. */
static void replica_share(gs_mlp_pp *p, int world, const uint64_t *all_rows) {
  p->rows = p->offset = p->global_batch = 0;
  for (int r = 0; r < world; r++) {
    const int d = gs_mlp_pp_replica_of(r, p->stages);
    if (d < p->replica) p->offset += all_rows[r];
    if (d == p->replica) p->rows += all_rows[r];
    p->global_batch += all_rows[r];
  }
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
  p->sum_buf = malloc((size_t)p->count * sizeof(float));
  int ok = p->params && p->mom1 && p->mom2 && p->grads && p->acc && p->sum_buf;
  for (int l = p->lo; l <= p->hi; l++) {
    p->act[l] = malloc((size_t)(p->rows * m->widths[l]) * sizeof(float));
    ok = ok && p->act[l];
  }
  p->grad_out = malloc((size_t)(p->rows * m->widths[p->hi]) * sizeof(float));
  p->grad_in = malloc((size_t)(p->rows * m->widths[p->lo]) * sizeof(float));
  p->tmp[0] = malloc((size_t)(micro_rows * widest) * sizeof(float));
  p->tmp[1] = malloc((size_t)(micro_rows * widest) * sizeof(float));
  p->order = malloc(2 * (size_t)p->micro * sizeof *p->order);
  if (!ok || !p->grad_out || !p->grad_in || !p->tmp[0] || !p->tmp[1] || !p->order)
    return gs_error(GS_ERR_NOMEM, "mlp: cannot allocate pipeline stage %d's buffers for %llu rows",
                    p->stage, (unsigned long long)p->rows);
  memcpy(p->params, params, (size_t)p->total * sizeof(float));
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
  replica_share(p, c->world, c->all_rows);
  gs_status st = GS_OK;
  if (p->rows < (uint64_t)p->micro)
    st = gs_error(GS_ERR_USAGE,
                  "mlp: --micro-batches %d over %llu samples of replica %d: every micro-batch "
                  "needs a sample (raise --batch or lower --micro-batches)",
                  p->micro, (unsigned long long)p->rows, p->replica);
  if (st == GS_OK) st = allocate(p, c->params);
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
  float *base;
  if (t->pass == GS_PP_FORWARD)
    base = p->act[boundary];
  else
    base = t->send ? p->grad_in : p->grad_out;
  return (gs_comm_p2p_op){.send = t->send, .buf = base + f * width, .count = (size_t)(n * width),
                          .dtype = GS_DTYPE_FLOAT, .peer = p->rank + (t->peer_stage - p->stage)};
}

/* Runs the transfers before action k as exposed communication; a failure
 * is told with the stage's place in the pipeline. */
static gs_status exchange(gs_mlp_pp *p, int k) {
  gs_pp_transfer t[2];
  const int n = gs_pp_transfers_before(p->order, 2 * p->micro, k, p->stage, p->stages, t);
  if (n == 0) return GS_OK;
  gs_comm_p2p_op ops[2];
  for (int i = 0; i < n; i++) ops[i] = transfer_op(p, &t[i]);
  GS_TRY(gs_comm_exposed_begin(p->comm, NULL));
  gs_trace_begin(GS_TRACE_COMM, "send/recv", k, NULL);
  gs_status st = gs_comm_p2p(p->comm, ops, n, NULL);
  gs_trace_end();
  if (st != GS_OK) {
    const gs_pp_transfer *last = &t[n - 1];
    return gs_error(st, "mlp pipeline stage %d of %d (rank %d, replica %d), %s %s of micro-batch "
                        "%d %s stage %d (rank %d): %s",
                    p->stage, p->stages, p->rank, p->replica, last->send ? "sending" : "receiving",
                    last->pass == GS_PP_FORWARD ? "activations" : "gradients", last->micro,
                    last->send ? "to" : "from", last->peer_stage,
                    p->rank + (last->peer_stage - p->stage), gs_last_error());
  }
  return gs_comm_exposed_end(p->comm, NULL);
}

/* Sums `grads` (count floats) over the replicas of this stage, in replica
 * order, into every replica's `grads`: replica 0's stage rank receives the
 * others' in turn, adds them, and sends the sum back. */
static gs_status sum_over_replicas(gs_mlp_pp *p, float *grads) {
  if (p->replicas == 1) return GS_OK;
  gs_comm_p2p_op op = {.buf = grads, .count = (size_t)p->count, .dtype = GS_DTYPE_FLOAT};
  if (p->replica != 0) {
    op.send = 1;
    op.peer = p->stage;
    GS_TRY(gs_comm_p2p(p->comm, &op, 1, NULL));
    op.send = 0;
    return gs_comm_p2p(p->comm, &op, 1, NULL);
  }
  op.buf = p->sum_buf;
  for (int d = 1; d < p->replicas; d++) {
    op.peer = d * p->stages + p->stage;
    GS_TRY(gs_comm_p2p(p->comm, &op, 1, NULL));
    for (uint64_t i = 0; i < p->count; i++) grads[i] += p->sum_buf[i];
  }
  op.buf = grads;
  op.send = 1;
  for (int d = 1; d < p->replicas; d++) {
    op.peer = d * p->stages + p->stage;
    GS_TRY(gs_comm_p2p(p->comm, &op, 1, NULL));
  }
  return GS_OK;
}

/* ---- the step ------------------------------------------------------------------ */

/* Forward and backward of every micro-batch with the transfers between
 * them; the stage's gradients (before the sum over replicas) in p->grads. */
static gs_status run_schedule(gs_mlp_pp *p) {
  const int n = 2 * p->micro;
  memset(p->acc, 0, (size_t)p->count * sizeof(double));
  p->loss = 0.0;
  for (int k = 0; k <= n; k++) {
    GS_TRY(exchange(p, k));
    if (k == n) break;
    const double start = gs_time_seconds();
    const gs_pp_action a = p->order[k];
    gs_trace_begin(GS_TRACE_COMPUTE, a.pass == GS_PP_FORWARD ? "forward" : "backward", a.micro,
                   NULL);
    if (a.pass == GS_PP_FORWARD)
      forward(p, a.micro);
    else
      backward(p, a.micro);
    gs_trace_end();
    p->busy += gs_time_seconds() - start;
  }
  GS_TRY(gs_comm_p2p_drain(p->comm));
  for (uint64_t i = 0; i < p->count; i++) p->grads[i] = (float)p->acc[i];
  return GS_OK;
}

/* The replicas' sum as exposed communication, then Adam on the stage. */
static gs_status reduce_and_update(gs_mlp_pp *p) {
  if (p->replicas > 1) {
    GS_TRY(gs_comm_exposed_begin(p->comm, NULL));
    gs_trace_begin(GS_TRACE_COMM, "sum gradients over replicas", -1, NULL);
    gs_status st = sum_over_replicas(p, p->grads);
    gs_trace_end();
    GS_TRY(st);
    GS_TRY(gs_comm_exposed_end(p->comm, NULL));
  }
  const double start = gs_time_seconds();
  p->steps++;
  gs_trace_begin(GS_TRACE_COMPUTE, "optimizer", -1, NULL);
  gs_mlp_cpu_adam(&p->adam, p->steps, p->count, p->grads, p->params + p->begin, p->mom1, p->mom2);
  gs_trace_end();
  p->busy += gs_time_seconds() - start;
  return GS_OK;
}

gs_status gs_mlp_pp_step(gs_mlp_pp *p) {
  const double start = gs_time_seconds();
  p->busy = 0.0;
  GS_TRY(run_schedule(p));
  GS_TRY(reduce_and_update(p));
  p->step_seconds = gs_time_seconds() - start;
  return GS_OK;
}

void gs_mlp_pp_last_times(const gs_mlp_pp *p, double *busy, double *step) {
  *busy = p->busy;
  *step = p->step_seconds;
}

/* ---- verification ---------------------------------------------------------------- */

/* Host copies used by one verification. */
typedef struct {
  float *full, *ref_grads, *before, *mom1, *mom2;
} verify_buffers;

static void verify_buffers_free(verify_buffers *b) {
  free(b->full);
  free(b->ref_grads);
  free(b->before);
  free(b->mom1);
  free(b->mom2);
}

/* Every stage's parameters into b->full (replica 0's, through a sum over
 * the world in which only replica 0 contributes, each its own range), and
 * how many of this stage's differ from them (replicas must agree). */
static gs_status gather_model(gs_mlp_pp *p, verify_buffers *b, uint64_t *differ) {
  memset(b->full, 0, (size_t)p->total * sizeof(float));
  if (p->replica == 0)
    memcpy(b->full + p->begin, p->params + p->begin, (size_t)p->count * sizeof(float));
  GS_TRY(gs_comm_allreduce(p->comm, b->full, b->full, (size_t)p->total, GS_DTYPE_FLOAT,
                           GS_REDOP_SUM, NULL));
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

gs_status gs_mlp_pp_verify(gs_mlp_pp *p, gs_verification *v) {
  memset(v, 0, sizeof *v);
  const size_t total = (size_t)p->total * sizeof(float), mine = (size_t)p->count * sizeof(float);
  verify_buffers b = {malloc(total), malloc(total), malloc(mine), malloc(mine), malloc(mine)};
  gs_status st = GS_OK;
  if (!b.full || !b.ref_grads || !b.before || !b.mom1 || !b.mom2)
    st = gs_error(GS_ERR_NOMEM, "mlp: cannot allocate the pipeline's verification buffers");
  uint64_t differ = 0, gbad = 0, wbad = 0, nonfinite = 0;
  double ref_loss = 0.0;
  if (st == GS_OK) st = gather_model(p, &b, &differ);
  if (st == GS_OK) {
    memcpy(b.before, p->params + p->begin, mine);
    memcpy(b.mom1, p->mom1, mine);
    memcpy(b.mom2, p->mom2, mine);
    const gs_mlp_batch batch = {.step = p->steps, .global_batch = p->global_batch,
                                .offset = p->offset, .rows = p->rows, .seed = p->dropout_seed};
    st = gs_mlp_cpu_gradients(&p->model, b.full, &p->data, &batch, b.ref_grads, &ref_loss);
  }
  if (st == GS_OK) {
    p->busy = 0.0;
    st = run_schedule(p);
  }
  if (st == GS_OK) {
    gbad = count_unequal(p->grads, b.ref_grads + p->begin, p->count);
    st = reduce_and_update(p);
  }
  // The reference update: the reference gradients summed over the
  // replicas as the step sums its own, then Adam from the same state.
  if (st == GS_OK) st = sum_over_replicas(p, b.ref_grads + p->begin);
  if (st == GS_OK) st = gs_comm_p2p_drain(p->comm);
  double discard = 0.0;
  if (st == GS_OK) st = gs_comm_exposed_take(p->comm, &discard);
  if (st != GS_OK) {
    verify_buffers_free(&b);
    return st;
  }
  gs_mlp_cpu_adam(&p->adam, p->steps, p->count, b.ref_grads + p->begin, b.before, b.mom1, b.mom2);
  wbad = count_unequal(p->params + p->begin, b.before, p->count);
  for (uint64_t i = 0; i < p->count; i++) nonfinite += !isfinite(p->params[p->begin + i]);
  verify_buffers_free(&b);
  v->tolerance = 0.0;
  v->mismatches = gbad + wbad + differ + nonfinite;
  v->status = v->mismatches == 0 && isfinite(ref_loss) ? GS_VERIFY_PASSED : GS_VERIFY_FAILED;
  snprintf(v->detail, sizeof v->detail,
           "CPU pipeline stage %d of %d (layers %d..%d, replica %d of %d, %s, %d micro-batches), "
           "step %llu over the replica's %llu samples against the CPU reference: %llu of %llu "
           "gradients and %llu parameters after Adam differ bitwise, %llu differ from replica "
           "0's stage, %llu not finite; reference loss share %.6g",
           p->stage, p->stages, p->lo, p->hi - 1, p->replica, p->replicas,
           gs_pp_schedule_names[p->schedule], p->micro, (unsigned long long)p->steps,
           (unsigned long long)p->rows, (unsigned long long)gbad, (unsigned long long)p->count,
           (unsigned long long)wbad, (unsigned long long)differ, (unsigned long long)nonfinite,
           ref_loss);
  return GS_OK;
}
