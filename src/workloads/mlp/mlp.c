/* mlp workload: the setup / step / verify / teardown of one data-parallel
 * rank (its options and cost: mlp_options.c). The CUDA step runs the
 * forward pass, then the backward pass layer by layer, launching the
 * all-reduce of each gradient bucket on a communication stream as soon as
 * its layers are done, and waits for the buckets (exposed communication)
 * only before Adam.
 * The CPU reference is in mlp_cpu.c, the kernels in mlp_cuda.cu; rules in
 * docs/workloads/mlp.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/checked.h"
#include "core/json.h"
#include "platform/comm.h"
#include "platform/trace.h"
#include "workloads/mlp/mlp.h"
#include "workloads/mlp/mlp_cuda.h"
#include "workloads/mlp/mlp_hash.h"
#include "workloads/mlp/mlp_options.h"
#include "workloads/mlp/mlp_tolerance.h"
#include "workloads/mlp/mlp_pp.h"

#define GS_MLP_MAX_RANKS 64
/* Each gradient element |gpu - cpu| <= its bound from the error analysis of
 * the step in its precision (mlp_tolerance.c; docs/workloads/mlp.md,
 * "Verification"). Adam's tolerance applies to the update from identical
 * gradients. */
#define GS_MLP_ADAM_RTOL 1e-3

/* ---- one rank ------------------------------------------------------------------ */

typedef struct {
  int lo, hi;                 /* layers lo..hi */
  uint64_t begin, count;      /* parameter range */
  cudaEvent_t ready, done;
} grad_bucket;

typedef struct {
  gs_mlp_model model;
  gs_mlp_adam adam;
  gs_mlp_precision precision;
  gs_backend backend;
  cudaStream_t stream, comm_stream;
  gs_comm *comm;
  int rank, world;
  uint64_t seed, data_seed, dropout_seed;
  uint64_t samples;
  uint64_t rows, offset, global_batch;     /* this rank's batch */
  uint64_t all_rows[GS_MLP_MAX_RANKS]; /* every rank's rows */
  uint64_t verify_rows;
  double verify_corrupt;
  uint64_t count;                          /* parameters */
  float *params, *mom1, *mom2, *grads;     /* host */
  float *x, *y;                            /* generated host dataset (CPU backend) */
  const float *data_x, *data_y;            /* the host dataset: x/y or the --data file */
  uint64_t steps;                          /* CPU backend */
  double loss;                             /* CPU backend: this rank's share, last step */
  gs_mlp_cuda *dev;
  int n_buckets;
  grad_bucket buckets[GS_MLP_MAX_LAYERS];
  int use_graph;
  cudaGraphExec_t graphs[GS_MLP_MAX_LAYERS + 1]; /* the step, or its parts */
  gs_mlp_pp *pp;                           /* this rank's pipeline stage (--pp), or NULL */
} gs_mlp_state;

static void mlp_teardown(void *state) {
  gs_mlp_state *s = state;
  if (s == NULL) return;
  for (int k = 0; k <= GS_MLP_MAX_LAYERS; k++)
    if (s->graphs[k]) cudaGraphExecDestroy(s->graphs[k]);
  for (int b = 0; b < s->n_buckets; b++) {
    if (s->buckets[b].ready) cudaEventDestroy(s->buckets[b].ready);
    if (s->buckets[b].done) cudaEventDestroy(s->buckets[b].done);
  }
  if (s->comm_stream) cudaStreamDestroy(s->comm_stream);
  gs_mlp_cuda_destroy(s->dev);
  gs_mlp_pp_free(s->pp);
  free(s->params);
  free(s->mom1);
  free(s->mom2);
  free(s->grads);
  free(s->x);
  free(s->y);
  free(s);
}

/* Every rank's rows, the global batch and this rank's offset (shares end to end by rank). */
static gs_status gather_shares(gs_mlp_state *s, const gs_rank_context *ctx) {
  GS_TRY(gs_mlp_gather_shares(ctx, s->all_rows));
  s->global_batch = s->offset = 0;
  for (int r = 0; r < s->world; r++) {
    s->global_batch += s->all_rows[r];
    if (r < s->rank) s->offset += s->all_rows[r];
  }
  return GS_OK;
}

/* This rank's stage of the pipeline (--pp); fp32, tf32 or bf16 on CUDA. */
static gs_status setup_pipeline(gs_mlp_state *s, const gs_mlp_options *o) {
  const gs_mlp_data d = {s->samples, s->model.widths[0], s->model.widths[s->model.n_layers],
                         s->data_x, s->data_y};
  const gs_mlp_pp_config c = {.model = s->model, .adam = s->adam, .options = &o->pp, .comm = s->comm,
      .rank = s->rank, .world = s->world, .params = s->params, .data = d, .backend = s->backend,
      .stream = s->stream, .data_seed = s->data_seed, .dropout_seed = s->dropout_seed,
      .all_rows = s->all_rows, .precision = s->precision, .verify_rows = o->verify_rows};
  return gs_mlp_pp_create(&c, &s->pp);
}

/* Buckets from the last layer down, each closed at the first layer
 * boundary where it holds at least `bucket_bytes` of gradients. */
static void plan_buckets(gs_mlp_state *s, uint64_t bucket_bytes) {
  const gs_mlp_model *m = &s->model;
  s->n_buckets = 0;
  int hi = m->n_layers - 1;
  for (int l = m->n_layers - 1; l >= 0; l--) {
    const uint64_t begin = gs_mlp_weight_offset(m, l), end = gs_mlp_weight_offset(m, hi + 1);
    if ((end - begin) * sizeof(float) >= bucket_bytes || l == 0) {
      grad_bucket *b = &s->buckets[s->n_buckets++];
      b->lo = l;
      b->hi = hi;
      b->begin = begin;
      b->count = end - begin;
      hi = l - 1;
    }
  }
}

static gs_status setup_device(gs_mlp_state *s, const gs_mlp_options *o) {
  gs_mlp_cuda_config c = {.model = s->model, .adam = s->adam, .precision = s->precision,
                          .rows = s->rows > o->verify_rows ? s->rows : o->verify_rows,
                          .data_n = s->samples, .data_seed = s->data_seed,
                          .host_x = o->file_x, .host_y = o->file_y,
                          .dropout_seed = s->dropout_seed};
  GS_TRY(gs_mlp_cuda_create(&c, s->stream, &s->dev));
  GS_TRY(gs_mlp_cuda_set_state(s->dev, s->params, NULL, NULL, 0));
  if (s->world > 1) {
    GS_CHECK_CUDA(cudaStreamCreateWithFlags(&s->comm_stream, cudaStreamNonBlocking));
    for (int b = 0; b < s->n_buckets; b++) {
      GS_CHECK_CUDA(cudaEventCreateWithFlags(&s->buckets[b].ready, cudaEventDisableTiming));
      GS_CHECK_CUDA(cudaEventCreateWithFlags(&s->buckets[b].done, cudaEventDisableTiming));
    }
  }
  return GS_OK;
}

static gs_status mlp_setup(const void *opts, const gs_rank_context *ctx, void **state) {
  const gs_mlp_options *o = opts;
  *state = NULL;
  if (ctx->world_size > GS_MLP_MAX_RANKS)
    return gs_error(GS_ERR_USAGE, "mlp: at most %d ranks, %d asked for", GS_MLP_MAX_RANKS,
                    ctx->world_size);
  if (ctx->backend == GS_BACKEND_CPU && o->precision != GS_MLP_FP32)
    return gs_error(GS_ERR_USAGE, "mlp: --precision %s needs the CUDA backend (the CPU runs fp32)",
                    gs_mlp_precision_choices[o->precision]);
  if (ctx->backend == GS_BACKEND_CPU && o->verify_corrupt != 1.0)
    return gs_error(GS_ERR_USAGE, "mlp: --verify-corrupt needs the CUDA backend");
  GS_TRY(gs_workload_check_share(ctx, gs_workload_mlp.key, gs_workload_mlp.unit_name));
  gs_mlp_state *s = calloc(1, sizeof *s);
  if (s == NULL) return gs_error(GS_ERR_NOMEM, "mlp: cannot allocate state");
  gs_mlp_model_from_options(o, &s->model);
  s->adam = (gs_mlp_adam){.lr = (float)o->lr, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
  s->precision = (gs_mlp_precision)o->precision;
  s->backend = ctx->backend;
  s->stream = ctx->stream;
  s->comm = ctx->comm;
  s->rank = ctx->rank;
  s->world = ctx->world_size;
  s->seed = ctx->seed;
  s->data_seed = gs_mlp_mix(ctx->seed, 0x64617461u);
  s->dropout_seed = gs_mlp_mix(ctx->seed, 0x64726f70u);
  s->samples = o->samples;
  s->rows = ctx->unit_count;
  s->verify_rows = o->verify_rows;
  s->verify_corrupt = o->verify_corrupt;
  s->count = gs_mlp_param_count(&s->model);
  s->use_graph = ctx->backend == GS_BACKEND_CUDA && !o->no_graph;
  plan_buckets(s, o->bucket_kb * 1024);
  const size_t pbytes = (size_t)s->count * sizeof(float);
  s->params = malloc(pbytes);
  s->grads = malloc(pbytes);
  s->mom1 = calloc((size_t)s->count, sizeof(float));
  s->mom2 = calloc((size_t)s->count, sizeof(float));
  const int cpu = ctx->backend == GS_BACKEND_CPU;
  const uint32_t F = s->model.widths[0], T = s->model.widths[s->model.n_layers];
  const int generate = cpu && !o->file_x;
  if (generate) {
    s->x = malloc((size_t)(s->samples * F) * sizeof(float));
    s->y = malloc((size_t)(s->samples * T) * sizeof(float));
  }
  s->data_x = o->file_x ? o->file_x : s->x;
  s->data_y = o->file_y ? o->file_y : s->y;
  gs_status st = GS_OK;
  if (!s->params || !s->grads || !s->mom1 || !s->mom2 || (generate && (!s->x || !s->y)))
    st = gs_error(GS_ERR_NOMEM, "mlp: cannot allocate host buffers for %llu parameters",
                  (unsigned long long)s->count);
  if (st == GS_OK) {
    // Same seed on every rank: identical initial replicas without a broadcast.
    gs_mlp_init_params(&s->model, s->seed, s->params);
    if (generate) gs_mlp_generate(s->data_seed, s->samples, F, T, s->x, s->y);
    st = gather_shares(s, ctx);
  }
  if (st == GS_OK && o->pp.stages > 1) st = setup_pipeline(s, o);
  else if (st == GS_OK && !cpu) st = setup_device(s, o);
  if (st != GS_OK) {
    mlp_teardown(s);
    return st;
  }
  *state = s;
  return GS_OK;
}

/* ---- the step --------------------------------------------------------------------- */

/* A CUDA step is cut at the bucket boundaries: compute part k (k <
 * n_buckets) runs up to and including the weight gradients of layer
 * buckets[k].lo, after which bucket k's all-reduce is launched on the
 * communication stream; the last part (k == n_buckets) is Adam, after the
 * compute stream has waited for every bucket. Part 0 starts with the
 * forward pass, part k > 0 with the input gradient of the previous
 * bucket's lowest layer. */
static gs_status enqueue_part(gs_mlp_state *s, int k, uint64_t global_batch, uint64_t offset,
                              uint64_t rows) {
  if (k == s->n_buckets) return gs_mlp_cuda_adam(s->dev);
  const grad_bucket *bk = &s->buckets[k];
  if (k == 0)
    GS_TRY(gs_mlp_cuda_forward(s->dev, global_batch, offset, rows));
  else
    GS_TRY(gs_mlp_cuda_input_grad(s->dev, s->buckets[k - 1].lo, rows));
  for (int l = bk->hi; l >= bk->lo; l--) {
    GS_TRY(gs_mlp_cuda_weight_grads(s->dev, l, rows));
    if (l > bk->lo) GS_TRY(gs_mlp_cuda_input_grad(s->dev, l, rows));
  }
  return GS_OK;
}

/* Bucket k's gradients are final on the compute stream: average them over
 * the ranks on the communication stream while the compute goes on. */
static gs_status enqueue_reduce(gs_mlp_state *s, int k) {
  grad_bucket *bk = &s->buckets[k];
  float *grads = gs_mlp_cuda_grads(s->dev);
  GS_CHECK_CUDA(cudaEventRecord(bk->ready, s->stream));
  GS_CHECK_CUDA(cudaStreamWaitEvent(s->comm_stream, bk->ready, 0));
  gs_trace_begin(GS_TRACE_COMM, "allreduce bucket", k, s->comm_stream);
  gs_status st = gs_comm_allreduce(s->comm, grads + bk->begin, grads + bk->begin,
                                   (size_t)bk->count, GS_DTYPE_FLOAT, GS_REDOP_SUM, s->comm_stream);
  gs_trace_end();
  GS_TRY(st);
  GS_CHECK_CUDA(cudaEventRecord(bk->done, s->comm_stream));
  return GS_OK;
}

/* The compute stream waits for every bucket: the exposed communication. */
static gs_status enqueue_wait_for_buckets(gs_mlp_state *s) {
  GS_TRY(gs_comm_exposed_begin(s->comm, s->stream));
  gs_trace_begin(GS_TRACE_WAIT, "wait for gradients", -1, s->stream);
  for (int k = 0; k < s->n_buckets; k++)
    GS_CHECK_CUDA(cudaStreamWaitEvent(s->stream, s->buckets[k].done, 0));
  gs_trace_end();
  return gs_comm_exposed_end(s->comm, s->stream);
}

/* Opens the trace range of compute part k (platform/trace.h). */
static void trace_part(const gs_mlp_state *s, int k) {
  if (k == s->n_buckets)
    gs_trace_begin(GS_TRACE_COMPUTE, "optimizer", -1, s->stream);
  else
    gs_trace_begin(GS_TRACE_COMPUTE, k == 0 ? "forward + backward" : "backward", k, s->stream);
}

/* Every part enqueued directly (no graph): the verification step, --no-graph. */
static gs_status enqueue_step(gs_mlp_state *s, uint64_t global_batch, uint64_t offset,
                              uint64_t rows) {
  const int reduce = s->world > 1;
  for (int k = 0; k <= s->n_buckets; k++) {
    if (reduce && k == s->n_buckets) GS_TRY(enqueue_wait_for_buckets(s));
    trace_part(s, k);
    gs_status st = enqueue_part(s, k, global_batch, offset, rows);
    gs_trace_end();
    GS_TRY(st);
    if (reduce && k < s->n_buckets) GS_TRY(enqueue_reduce(s, k));
  }
  return GS_OK;
}

/* Captures what `part` enqueues (part < 0: the whole one-rank step) on the
 * compute stream into *exec. */
static gs_status capture(gs_mlp_state *s, int part, cudaGraphExec_t *exec) {
  cudaGraph_t graph = NULL;
  GS_CHECK_CUDA(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
  gs_status st = part < 0 ? enqueue_step(s, s->global_batch, s->offset, s->rows)
                          : enqueue_part(s, part, s->global_batch, s->offset, s->rows);
  cudaError_t end = cudaStreamEndCapture(s->stream, &graph);
  GS_TRY(st);
  GS_CHECK_CUDA(end);
  cudaError_t made = cudaGraphInstantiate(exec, graph, 0);
  cudaGraphDestroy(graph);
  GS_CHECK_CUDA(made);
  return GS_OK;
}

/* Steps from CUDA graphs captured on the first step: one graph for a
 * single rank; with communication, one graph per compute part, and the
 * all-reduces and the wait for them launched between the graphs (a
 * captured wait could not be timed as exposed communication). */
static gs_status step_graphs(gs_mlp_state *s) {
  if (s->world == 1) {
    if (!s->graphs[0]) GS_TRY(capture(s, -1, &s->graphs[0]));
    GS_CHECK_CUDA(cudaGraphLaunch(s->graphs[0], s->stream));
    return GS_OK;
  }
  for (int k = 0; k <= s->n_buckets; k++) {
    if (!s->graphs[k]) GS_TRY(capture(s, k, &s->graphs[k]));
    if (k == s->n_buckets) GS_TRY(enqueue_wait_for_buckets(s));
    trace_part(s, k);
    GS_CHECK_CUDA(cudaGraphLaunch(s->graphs[k], s->stream));
    gs_trace_end();
    if (k < s->n_buckets) GS_TRY(enqueue_reduce(s, k));
  }
  return GS_OK;
}

static gs_status step_cpu(gs_mlp_state *s) {
  const gs_mlp_data d = {.n = s->samples, .features = s->model.widths[0],
                         .targets = s->model.widths[s->model.n_layers], .x = s->data_x,
                         .y = s->data_y};
  const gs_mlp_batch b = {.step = s->steps, .global_batch = s->global_batch, .offset = s->offset,
                          .rows = s->rows, .seed = s->dropout_seed};
  GS_TRY(gs_mlp_cpu_gradients(&s->model, s->params, &d, &b, s->grads, &s->loss));
  if (s->world > 1) {
    GS_TRY(gs_comm_exposed_begin(s->comm, NULL));
    gs_trace_begin(GS_TRACE_COMM, "allreduce gradients", -1, NULL);
    gs_status st = gs_comm_allreduce(s->comm, s->grads, s->grads, (size_t)s->count,
                                     GS_DTYPE_FLOAT, GS_REDOP_SUM, NULL);
    gs_trace_end();
    GS_TRY(st);
    GS_TRY(gs_comm_exposed_end(s->comm, NULL));
  }
  s->steps++;
  gs_trace_begin(GS_TRACE_COMPUTE, "optimizer", -1, NULL);
  gs_mlp_cpu_adam(&s->adam, s->steps, s->count, s->grads, s->params, s->mom1, s->mom2);
  gs_trace_end();
  return GS_OK;
}

static gs_status mlp_step(void *state) {
  gs_mlp_state *s = state;
  if (s->pp) return gs_mlp_pp_step(s->pp);
  if (s->backend == GS_BACKEND_CPU) return step_cpu(s);
  if (s->use_graph) return step_graphs(s);
  return enqueue_step(s, s->global_batch, s->offset, s->rows);
}

/* ---- verification ---------------------------------------------------------------- */

/* Parameters of this replica that differ (bitwise) from rank 0's, which
 * every rank receives by broadcast. `mine` is the host copy; on CUDA the
 * broadcast goes through device buffers. */
static gs_status count_replica_differences(gs_mlp_state *s, const float *mine, uint64_t *differ) {
  *differ = 0;
  if (s->world == 1) return GS_OK;
  float *theirs = malloc((size_t)s->count * sizeof(float));
  if (!theirs) return gs_error(GS_ERR_NOMEM, "mlp: cannot allocate the replica check's buffer");
  gs_status st = GS_OK;
  if (s->backend == GS_BACKEND_CPU) {
    st = gs_comm_broadcast(s->comm, mine, theirs, (size_t)s->count, GS_DTYPE_FLOAT, 0, NULL);
  } else {
    float *buf = NULL;
    if (cudaMalloc((void **)&buf, (size_t)s->count * sizeof(float)) != cudaSuccess)
      st = gs_error(GS_ERR_NOMEM, "mlp: cannot allocate the replica check's device buffer");
    if (st == GS_OK)
      st = gs_comm_broadcast(s->comm, gs_mlp_cuda_params(s->dev), buf, (size_t)s->count,
                             GS_DTYPE_FLOAT, 0, s->stream);
    if (st == GS_OK) st = gs_comm_wait(s->comm, s->stream);
    if (st == GS_OK && cudaMemcpy(theirs, buf, (size_t)s->count * sizeof(float),
                                  cudaMemcpyDeviceToHost) != cudaSuccess)
      st = gs_error(GS_ERR_CUDA, "mlp: cannot copy rank 0's parameters back");
    if (buf) cudaFree(buf);
  }
  for (uint64_t i = 0; st == GS_OK && i < s->count; i++)
    if (memcmp(&mine[i], &theirs[i], sizeof(float)) != 0) (*differ)++;
  free(theirs);
  return st;
}

static gs_status verify_cpu(gs_mlp_state *s, gs_verification *v) {
  uint64_t differ = 0;
  GS_TRY(count_replica_differences(s, s->params, &differ));
  uint64_t nonfinite = 0;
  for (uint64_t i = 0; i < s->count; i++) nonfinite += !isfinite(s->params[i]);
  v->tolerance = 0.0;
  v->mismatches = differ + nonfinite;
  v->status = v->mismatches == 0 && isfinite(s->loss) ? GS_VERIFY_PASSED : GS_VERIFY_FAILED;
  snprintf(v->detail, sizeof v->detail,
           "CPU backend (the step is the reference): after %llu steps, %llu of %llu parameters "
           "differ from rank 0's replica, %llu not finite, last loss share %.6g",
           (unsigned long long)s->steps, (unsigned long long)differ, (unsigned long long)s->count,
           (unsigned long long)nonfinite, s->loss);
  return GS_OK;
}

/* Host copies used by one CUDA verification. */
typedef struct {
  float *before, *mom1, *mom2, *after, *grads, *ref_grads, *x, *y;
  double *bound;  /* each gradient's error bound (mlp_tolerance.h) */
} verify_buffers;

static void verify_buffers_free(verify_buffers *b) {
  free(b->before);
  free(b->mom1);
  free(b->mom2);
  free(b->after);
  free(b->grads);
  free(b->ref_grads);
  free(b->x);
  free(b->y);
  free(b->bound);
}

/* The rows of the verification step's global batch, gathered into a
 * compact dataset whose row i is the sample at position steps * G + i. */
static void gather_verify_data(const gs_mlp_state *s, uint64_t steps, uint64_t G, float *x,
                               float *y) {
  const uint32_t F = s->model.widths[0], T = s->model.widths[s->model.n_layers];
  for (uint64_t i = 0; i < G; i++) {
    const uint64_t sample = (steps * G + i) % s->samples;
    if (s->data_x) {
      memcpy(x + i * F, s->data_x + sample * F, (size_t)F * sizeof(float));
      memcpy(y + i * T, s->data_y + sample * T, (size_t)T * sizeof(float));
      continue;
    }
    for (uint32_t f = 0; f < F; f++) x[i * F + f] = gs_mlp_feature(s->data_seed, sample, f, F);
    for (uint32_t t = 0; t < T; t++) y[i * T + t] = gs_mlp_target(s->data_seed, sample, t, F);
  }
}

/* One extra step with at most verify_rows samples per rank, checked on
 * every rank against the CPU reference of the whole (reduced) global batch:
 * the all-reduced gradients (each within its error bound) and Adam's update
 * from them; then the replicas are compared bitwise. */
static gs_status verify_cuda(gs_mlp_state *s, gs_verification *v) {
  GS_CHECK_CUDA(cudaStreamSynchronize(s->stream));
  uint64_t G = 0, offset = 0, rows = 0;
  for (int r = 0; r < s->world; r++) {
    const uint64_t n = s->all_rows[r] < s->verify_rows ? s->all_rows[r] : s->verify_rows;
    if (r < s->rank) offset += n;
    if (r == s->rank) rows = n;
    G += n;
  }
  const uint32_t F = s->model.widths[0], T = s->model.widths[s->model.n_layers];
  const size_t pbytes = (size_t)s->count * sizeof(float);
  verify_buffers b = {malloc(pbytes), malloc(pbytes), malloc(pbytes), malloc(pbytes),
                      malloc(pbytes), malloc(pbytes), malloc((size_t)(G * F) * sizeof(float)),
                      malloc((size_t)(G * T) * sizeof(float)), malloc(2 * pbytes)};
  gs_status st = GS_OK;
  if (!b.before || !b.mom1 || !b.mom2 || !b.after || !b.grads || !b.ref_grads || !b.x || !b.y ||
      !b.bound)
    st = gs_error(GS_ERR_NOMEM, "mlp: cannot allocate the verification buffers");
  uint64_t steps = 0;
  double loss = 0.0;
  if (st == GS_OK) st = gs_mlp_cuda_get_state(s->dev, b.before, b.mom1, b.mom2, NULL, &steps, NULL);
  if (st == GS_OK) st = enqueue_step(s, G, offset, rows);
  if (st == GS_OK && s->world > 1) st = gs_comm_wait(s->comm, s->stream);
  if (st == GS_OK) st = gs_mlp_cuda_get_state(s->dev, b.after, NULL, NULL, b.grads, NULL, &loss);
  double discard = 0.0;
  if (st == GS_OK && s->world > 1) st = gs_comm_exposed_take(s->comm, &discard);
  double ref_loss = 0.0;
  if (st == GS_OK) {
    gather_verify_data(s, steps, G, b.x, b.y);
    const gs_mlp_data d = {.n = G, .features = F, .targets = T, .x = b.x, .y = b.y};
    const gs_mlp_batch batch = {.step = steps, .global_batch = G, .offset = 0, .rows = G,
                                .seed = s->dropout_seed};
    st = gs_mlp_cpu_gradients(&s->model, b.before, &d, &batch, b.ref_grads, &ref_loss);
    if (st == GS_OK)
      st = gs_mlp_gradient_bounds(&s->model, b.before, &d, &batch,
                                  gs_mlp_op_error(&s->model, s->precision, G, s->world), b.bound);
  }
  uint64_t differ = 0;
  if (st == GS_OK) st = count_replica_differences(s, b.after, &differ);
  if (st != GS_OK) {
    verify_buffers_free(&b);
    return st;
  }
  // Each gradient against its own error bound in this precision.
  gs_mlp_gradient_check g;
  gs_mlp_gradient_compare(s->count, b.grads, b.ref_grads, b.bound, s->verify_corrupt, &g);
  // Adam from the device's own gradients: only float rounding may differ.
  gs_mlp_cpu_adam(&s->adam, steps + 1, s->count, b.grads, b.before, b.mom1, b.mom2);
  uint64_t wbad = 0;
  double werr = 0.0;
  for (uint64_t i = 0; i < s->count; i++) {
    const double e = fabs((double)b.after[i] - b.before[i]);
    if (!(e <= GS_MLP_ADAM_RTOL * s->adam.lr + 1e-6 * fabs((double)b.before[i]))) wbad++;
    werr = isnan(e) ? INFINITY : fmax(werr, e);
  }
  verify_buffers_free(&b);
  v->max_abs_error = g.max_error;
  v->tolerance = g.max_bound;
  v->mismatches = g.outside + wbad + differ;
  v->status = v->mismatches == 0 ? GS_VERIFY_PASSED : GS_VERIFY_FAILED;
  snprintf(v->detail, sizeof v->detail,
           "%s step %llu over %llu samples (%llu here) against the CPU reference: gradient max "
           "error %.3g of max %.3g (%llu outside their error bounds, largest bound %.3g%s), norm "
           "error %.3g (the bounds' %.3g), Adam update max error "
           "%.3g (%llu outside), loss share here %.6g, whole batch %.6g; %llu of %llu parameters differ from rank 0's "
           "replica; %.1f MiB on the device",
           gs_mlp_precision_choices[s->precision], (unsigned long long)steps + 1, (unsigned long long)G,
           (unsigned long long)rows, g.max_error, g.max_ref, (unsigned long long)g.outside,
           g.max_bound, s->verify_corrupt != 1.0 ? "; the largest corrupted by --verify-corrupt" : "",
           g.norm_error, g.norm_bound, werr, (unsigned long long)wbad, loss, ref_loss,
           (unsigned long long)differ, (unsigned long long)s->count,
           (double)gs_mlp_cuda_device_bytes(s->dev) / (1024.0 * 1024.0));
  return GS_OK;
}

static gs_status mlp_verify(void *state, gs_verification *out) {
  gs_mlp_state *s = state;
  memset(out, 0, sizeof *out);
  if (s->pp) return gs_mlp_pp_verify(s->pp, out);
  return s->backend == GS_BACKEND_CPU ? verify_cpu(s, out) : verify_cuda(s, out);
}

gs_status gs_mlp_state_params(void *state, float *out) {
  gs_mlp_state *s = state;
  if (s->backend == GS_BACKEND_CPU) {
    memcpy(out, s->params, (size_t)s->count * sizeof(float));
    return GS_OK;
  }
  return gs_mlp_cuda_get_state(s->dev, out, NULL, NULL, NULL, NULL, NULL);
}

const gs_workload gs_workload_mlp = {
    .key = "mlp",
    .summary = "MLP training step (Adam, MSE), data parallel with bucketed gradient all-reduce",
    .unit_name = "samples",
    .unit_option = "--batch",
    .item_unit = "samples",
    .communicates = 1,
    .overlaps_collectives = gs_mlp_overlaps_collectives,
    .options_new = gs_mlp_options_new,
    .options_free = gs_mlp_options_free,
    .options_table = gs_mlp_options_table,
    .options_check = gs_mlp_options_check,
    .options_to_json = gs_mlp_options_to_json,
    .work_units = gs_mlp_work_units,
    .cost = gs_mlp_cost,
    .setup = mlp_setup,
    .step = mlp_step,
    .verify = mlp_verify,
    .teardown = mlp_teardown,
    .rank_role = gs_mlp_pp_rank_role, /* pp opens the options */
    .collective_group = gs_mlp_pp_collective_group,
    .variant_count = gs_mlp_variant_count,
    .variant_select = gs_mlp_variant_select,
};
