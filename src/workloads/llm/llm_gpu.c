/* The GPU implementation of the llm model (see llm_gpu.h). */
#include "workloads/llm/llm_gpu.h"

#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/check.h"
#include "platform/trace.h"
#include "workloads/llm/llm_cpu.h"
#include "workloads/llm/llm_cuda.h"
#include "workloads/llm/llm_gemm.h"
#include "platform/fault_cuda.h"
#include "workloads/llm/llm_gpu_stamps.h"

#define GS_LLM_GEMM_WORKSPACE (32u << 20)

typedef struct {
  uint16_t *w[GS_LLM_LAYER_KINDS];
} gpu_layer;

struct gs_llm_gpu_model {
  gs_llm_engine_config config;
  gs_llm_shard shard;
  gs_llm_shard_dims dims; /* what this shard holds */
  const gs_llm_tp_comm *comm; /* the stage's other shards; NULL for the whole model */
  uint64_t lo, hi;        /* decoder layers [lo, hi): a pipeline stage's, else all */
  int device;
  cudaStream_t stream;
  gs_llm_cuda_queue queue; /* the stream, and whether kernels overlap (config.overlap_launches) */
  gs_llm_gemm *gemm; /* cuBLASLt, for linear layers the GEMV kernels do not take */
  void *gemm_workspace;
  uint16_t *weights; /* one allocation for every tensor */
  uint16_t *embed, *final_norm, *lm_head; /* NULL on a stage without them */
  gpu_layer *layers;           /* per layer of the model; [lo, hi) filled */
  uint16_t *k_cache, *v_cache; /* [layer - lo][slot][position][kv_heads * head_dim] */
  float *rope;                 /* (cos, sin) per position and pair: gs_llm_rope_table */
  size_t max_rows;             /* prefill rows the buffers hold */
  /* Per-row buffers. */
  float *h, *qkv, *gu, *logits;
  float *part;   /* tp: this shard's share of a projection, then their sum */
  float *offers; /* tp: (value, index) token offers of every shard */
  uint16_t *x, *att;
  uint16_t *act; /* SwiGLU output of the one-kernel MLP input (<= GS_LLM_MMA_MAX_ROWS rows) */
  float *squares; /* split norms: sum of h^2 per norm of a step and row (norm_slot) */
  uint32_t *group_last; /* pipeline prefill: each sequence's last row in its micro-batch */
  /* Prefill row description. */
  int32_t *row_tokens;
  uint32_t *row_slots, *row_positions, *last_rows;
  /* Decode state: tokens in/out, slots 0..max_batch-1, positions. */
  int32_t *tokens;
  uint32_t *decode_slots, *decode_positions;
  uint32_t *host_rows;     /* pinned staging for row descriptions */
  /* Decode steps in flight: each copies its tokens to host_tokens[b] and
   * records tokens_ready[b]; a decode that is told the next one launches
   * it before waiting for its own (`ahead` rows in buffer `ahead_buffer`). */
  int32_t *host_tokens[2];      /* pinned, max_batch each */
  cudaEvent_t tokens_ready[2];
  size_t ahead;                 /* rows of the step launched ahead; 0: none */
  int ahead_buffer;
  uint32_t *next_position; /* host copy of decode_positions, to refuse a full cache */
  size_t last_rows_logits; /* rows of `logits` valid */
  cudaGraphExec_t *graphs; /* per decode size 1..max_batch, NULL until first use */
  /* Arrival stamps (gs_llm_gpu_record_arrivals), NULL when not recorded:
   * each forward pass stamps its entry at its first collective and its
   * exit after its last, into slot `stamped` - 1 (counted at launch). */
  gs_llm_stamper *stamper;
  uint64_t stamped;
  int entry_due;     /* the forward being enqueued has not stamped its entry */
  int ahead_stamped; /* the step launched ahead was counted in `stamped` */
  double late;   /* --inject late: seconds spun before each call's forward passes */
};

/* Norms of a step: two per layer and the final one. */
static size_t norm_slots(const gs_llm_gpu_model *m) { return 2 * m->config.shape.layers + 1; }

static size_t cache_elems(const gs_llm_gpu_model *m) {
  const gs_llm_engine_config *c = &m->config;
  return (size_t)(m->hi - m->lo) * c->max_batch * c->max_seq * m->dims.kv_heads *
         gs_llm_head_dim(&c->shape);
}

/* The model's first and last stage: it embeds tokens, it has the head. */
static int first_stage(const gs_llm_gpu_model *m) { return m->lo == 0; }
static int last_stage(const gs_llm_gpu_model *m) { return m->hi == m->config.shape.layers; }

/* Elements of the shard's slice of a tensor. */
static uint64_t slice_elems(const gs_llm_gpu_model *m, uint32_t tensor) {
  gs_llm_slice slice;
  gs_llm_shard_slice(&m->config.shape, tensor, m->shard, &slice);
  return slice.rows * slice.cols;
}

static gs_status alloc_device(void **p, size_t bytes, const char *what) {
  cudaError_t rc = cudaMalloc(p, bytes ? bytes : 1);
  if (rc != cudaSuccess) {
    *p = NULL;
    return gs_error(GS_ERR_NOMEM, "cannot allocate %zu bytes of GPU memory for the llm %s: %s",
                    bytes, what, cudaGetErrorString(rc));
  }
  return GS_OK;
}

/* Makes the shard's slice of tensor `tensor` at *at and moves *at past it. */
static gs_status init_tensor(gs_llm_gpu_model *m, uint16_t **at, uint32_t tensor) {
  gs_llm_slice slice;
  gs_llm_shard_slice(&m->config.shape, tensor, m->shard, &slice);
  float scale, offset;
  gs_llm_tensor_init(&m->config.shape, tensor, &scale, &offset);
  GS_CHECK_CUDA(
      gs_llm_cuda_init_weights(*at, &slice, m->config.seed, tensor, scale, offset, m->queue));
  *at += slice.rows * slice.cols;
  return GS_OK;
}

static gs_status make_weights(gs_llm_gpu_model *m) {
  const gs_llm_shape *s = &m->config.shape;
  const int first = first_stage(m), last = last_stage(m);
  uint64_t total = (first ? slice_elems(m, GS_LLM_T_EMBED) : 0) +
                   (last ? slice_elems(m, GS_LLM_T_LM_HEAD) + slice_elems(m, GS_LLM_T_FINAL_NORM)
                         : 0);
  for (uint64_t l = m->lo; l < m->hi; l++)
    for (int k = 0; k < GS_LLM_LAYER_KINDS; k++)
      total += slice_elems(m, gs_llm_layer_tensor(l, k));
  GS_TRY(alloc_device((void **)&m->weights, total * sizeof(uint16_t), "weights"));
  uint16_t *at = m->weights;
  // Every tensor starts 16-byte aligned: all dimensions (and their shards)
  // are multiples of 8 except the final norm, which is placed last.
  if (first) {
    m->embed = at;
    GS_TRY(init_tensor(m, &at, GS_LLM_T_EMBED));
  }
  if (last) {
    m->lm_head = at;
    GS_TRY(init_tensor(m, &at, GS_LLM_T_LM_HEAD));
  }
  m->layers = calloc(s->layers, sizeof *m->layers);
  if (!m->layers)
    return gs_error(GS_ERR_NOMEM, "cannot allocate %llu layer records",
                    (unsigned long long)s->layers);
  for (uint64_t l = m->lo; l < m->hi; l++) {
    for (int k = 0; k < GS_LLM_LAYER_KINDS; k++) {
      m->layers[l].w[k] = at;
      GS_TRY(init_tensor(m, &at, gs_llm_layer_tensor(l, k)));
    }
  }
  if (last) {
    m->final_norm = at;
    GS_TRY(init_tensor(m, &at, GS_LLM_T_FINAL_NORM));
  }
  return GS_OK;
}

static gs_status make_buffers(gs_llm_gpu_model *m) {
  const gs_llm_engine_config *c = &m->config;
  const gs_llm_shape *s = &c->shape;
  const gs_llm_shard_dims *d = &m->dims;
  size_t rows = (size_t)c->max_batch * c->max_input;
  if (rows < c->max_batch) rows = c->max_batch;
  m->max_rows = rows;
  size_t hd = gs_llm_head_dim(s);
  GS_TRY(alloc_device((void **)&m->k_cache, cache_elems(m) * 2, "key cache"));
  GS_TRY(alloc_device((void **)&m->v_cache, cache_elems(m) * 2, "value cache"));
  GS_TRY(alloc_device((void **)&m->h, rows * s->hidden * 4, "residual stream"));
  GS_TRY(alloc_device((void **)&m->qkv, rows * (d->heads + 2 * d->kv_heads) * hd * 4, "qkv buffer"));
  GS_TRY(alloc_device((void **)&m->gu, rows * 2 * d->ffn * 4, "MLP buffer"));
  GS_TRY(alloc_device((void **)&m->logits, (size_t)c->max_batch * d->vocab * 4, "logits"));
  size_t xw = s->hidden > d->ffn ? s->hidden : d->ffn;
  GS_TRY(alloc_device((void **)&m->x, rows * xw * 2, "activation buffer"));
  GS_TRY(alloc_device((void **)&m->att, rows * d->heads * hd * 2, "attention output"));
  size_t act_rows = rows < GS_LLM_MMA_MAX_ROWS ? rows : GS_LLM_MMA_MAX_ROWS;
  GS_TRY(alloc_device((void **)&m->act, act_rows * d->ffn * 2, "MLP activations"));
  if (m->comm) {
    GS_TRY(alloc_device((void **)&m->part, rows * s->hidden * 4, "projection sums"));
    GS_TRY(alloc_device((void **)&m->offers, (size_t)c->max_batch * 2 * m->shard.count * 4,
                        "token offers"));
  }
  GS_TRY(alloc_device((void **)&m->squares, norm_slots(m) * GS_LLM_MMA_MAX_ROWS * sizeof(float),
                      "norm sums"));
  GS_TRY(alloc_device((void **)&m->row_tokens, rows * 4, "row tokens"));
  GS_TRY(alloc_device((void **)&m->row_slots, rows * 4, "row slots"));
  GS_TRY(alloc_device((void **)&m->row_positions, rows * 4, "row positions"));
  GS_TRY(alloc_device((void **)&m->last_rows, (size_t)c->max_batch * 4, "last rows"));
  GS_TRY(alloc_device((void **)&m->group_last, (size_t)c->max_batch * 4, "micro-batch last rows"));
  GS_TRY(alloc_device((void **)&m->tokens, (size_t)c->max_batch * 4, "tokens"));
  GS_TRY(alloc_device((void **)&m->decode_slots, (size_t)c->max_batch * 4, "decode slots"));
  GS_TRY(alloc_device((void **)&m->decode_positions, (size_t)c->max_batch * 4, "decode positions"));
  size_t rope_floats = (size_t)c->max_seq * hd;
  GS_TRY(alloc_device((void **)&m->rope, rope_floats * sizeof(float), "rotary table"));
  float *table = malloc(rope_floats * sizeof *table);
  if (!table) return gs_error(GS_ERR_NOMEM, "cannot allocate the rotary table");
  gs_llm_rope_table(s, c->max_seq, table);
  cudaError_t rc = cudaMemcpy(m->rope, table, rope_floats * sizeof *table, cudaMemcpyHostToDevice);
  free(table);
  GS_CHECK_CUDA(rc);
  GS_CHECK_CUDA(cudaMallocHost((void **)&m->host_rows, (3 * rows + c->max_batch) * 4));
  for (int b = 0; b < 2; b++) {
    GS_CHECK_CUDA(cudaMallocHost((void **)&m->host_tokens[b], (size_t)c->max_batch * 4));
    GS_CHECK_CUDA(cudaEventCreateWithFlags(&m->tokens_ready[b], cudaEventDisableTiming));
  }
  for (uint32_t i = 0; i < c->max_batch; i++) m->host_rows[i] = i;
  GS_CHECK_CUDA(
      cudaMemcpy(m->decode_slots, m->host_rows, (size_t)c->max_batch * 4, cudaMemcpyHostToDevice));
  m->graphs = calloc(c->max_batch + 1, sizeof *m->graphs);
  m->next_position = calloc(c->max_batch, sizeof *m->next_position);
  if (!m->graphs || !m->next_position)
    return gs_error(GS_ERR_NOMEM, "cannot allocate the graph table");
  return GS_OK;
}

/* Kernels overlap their predecessors where asked and the GPU can
 * (programmatic dependent launch needs compute capability 9.0). */
static gs_status choose_overlap(gs_llm_gpu_model *m) {
  int major = 0;
  GS_CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, m->device));
  m->queue = (gs_llm_cuda_queue){m->stream, m->config.overlap_launches && major >= 9};
  return GS_OK;
}

gs_status gs_llm_gpu_create_shard(const gs_llm_engine_config *config, gs_llm_shard shard,
                                  const gs_llm_tp_comm *comm, int device,
                                  gs_llm_gpu_model **out) {
  *out = NULL;
  gs_llm_gpu_model *m = calloc(1, sizeof *m);
  if (!m) return gs_error(GS_ERR_NOMEM, "cannot allocate the GPU model");
  m->config = *config;
  m->shard = shard;
  m->comm = comm;
  gs_llm_shard_sizes(&config->shape, shard, &m->dims);
  gs_llm_engine_layers(config, &m->lo, &m->hi);
  m->device = device;
  gs_status status = GS_OK;
  cudaError_t rc = cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking);
  if (rc != cudaSuccess)
    status =
        gs_error(GS_ERR_CUDA, "GPU %d: cannot create a stream: %s", device, cudaGetErrorString(rc));
  if (status == GS_OK) status = choose_overlap(m);
  if (status == GS_OK) status = gs_llm_stamps_load(); /* before any NCCL transfer */
  if (status == GS_OK)
    status = alloc_device(&m->gemm_workspace, GS_LLM_GEMM_WORKSPACE, "cuBLASLt workspace");
  if (status == GS_OK)
    status = gs_llm_gemm_create(m->gemm_workspace, GS_LLM_GEMM_WORKSPACE, &m->gemm);
  if (status == GS_OK) status = make_weights(m);
  if (status == GS_OK) status = make_buffers(m);
  if (status == GS_OK) {
    rc = cudaStreamSynchronize(m->stream);
    if (rc != cudaSuccess)
      status = gs_error(GS_ERR_CUDA, "GPU %d: weight initialization failed: %s", device,
                        cudaGetErrorString(rc));
  }
  if (status != GS_OK) {
    gs_llm_gpu_destroy(m);
    return status;
  }
  *out = m;
  return GS_OK;
}

/* Drops the captured decode graphs: the next steps capture what the
 * model enqueues now (stamps, a late spin). */
static void drop_graphs(gs_llm_gpu_model *m) {
  for (uint32_t i = 0; m->graphs && i <= m->config.max_batch; i++) {
    if (m->graphs[i]) cudaGraphExecDestroy(m->graphs[i]);
    m->graphs[i] = NULL;
  }
}

void gs_llm_gpu_destroy(gs_llm_gpu_model *m) {
  if (!m) return;
  // A step launched ahead may still run on the buffers freed below.
  if (m->stream) cudaStreamSynchronize(m->stream);
  for (int b = 0; b < 2; b++) {
    if (m->tokens_ready[b]) cudaEventDestroy(m->tokens_ready[b]);
    if (m->host_tokens[b]) cudaFreeHost(m->host_tokens[b]);
  }
  drop_graphs(m);
  free(m->graphs);
  gs_llm_stamper_destroy(m->stamper);
  free(m->next_position);
  gs_llm_gemm_destroy(m->gemm);
  void *device_buffers[] = {m->weights,
                            m->k_cache,
                            m->v_cache,
                            m->rope,
                            m->h,
                            m->qkv,
                            m->gu,
                            m->logits,
                            m->x,
                            m->att,
                            m->act,
                            m->part,
                            m->offers,
                            m->squares,
                            m->row_tokens,
                            m->row_slots,
                            m->row_positions,
                            m->last_rows,
                            m->group_last,
                            m->tokens,
                            m->decode_slots,
                            m->decode_positions,
                            m->gemm_workspace};
  for (size_t i = 0; i < sizeof device_buffers / sizeof device_buffers[0]; i++)
    if (device_buffers[i]) cudaFree(device_buffers[i]);
  if (m->host_rows) cudaFreeHost(m->host_rows);
  if (m->stream) cudaStreamDestroy(m->stream);
  free(m->layers);
  free(m);
}

/* Which kernel runs a linear layer of `rows` rows and `ins` inputs: a GEMV
 * as config.decode_gemm says (the tensor-core one for up to
 * GS_LLM_MMA_MAX_ROWS rows, the SIMT one for up to 8), cuBLAS otherwise. */
static gs_llm_decode_gemm linear_kernel(const gs_llm_gpu_model *m, size_t rows, uint64_t ins) {
  int mode = m->config.decode_gemm;
  if (mode == GS_LLM_GEMM_CUBLAS) return GS_LLM_GEMM_CUBLAS;
  int mma = mode == GS_LLM_GEMM_MMA || mode == GS_LLM_GEMM_AUTO;
  if (mma && ins % 64 == 0 && rows <= GS_LLM_MMA_MAX_ROWS) return GS_LLM_GEMM_MMA;
  return rows <= 8 ? GS_LLM_GEMM_SIMT : GS_LLM_GEMM_CUBLAS;
}

/* y (rows x outs, float) (+)= x (rows x ins, bf16) w^T. */
static gs_status linear(gs_llm_gpu_model *m, const uint16_t *w, const uint16_t *x, float *y,
                        size_t rows, uint64_t outs, uint64_t ins, int accumulate) {
  switch (linear_kernel(m, rows, ins)) {
    case GS_LLM_GEMM_MMA:
      GS_CHECK_CUDA(
          gs_llm_cuda_gemv_mma(w, x, y, (int)rows, (int)outs, (int)ins, accumulate, m->queue));
      return GS_OK;
    case GS_LLM_GEMM_SIMT:
      GS_CHECK_CUDA(
          gs_llm_cuda_gemv(w, x, y, (int)rows, (int)outs, (int)ins, accumulate, m->queue));
      return GS_OK;
    default:
      break;
  }
  return gs_llm_gemm_run(m->gemm, w, x, y, rows, outs, ins, accumulate, m->stream);
}

/* *out (rows x ffn, bf16) = SwiGLU of the gate/up projection of m->x
 * (rows x hidden): one kernel into m->act where the tensor-core GEMV runs,
 * else the projection into m->gu and the SwiGLU kernel into m->x. */
static gs_status mlp_input(gs_llm_gpu_model *m, const uint16_t *w, size_t rows,
                           const uint16_t **out) {
  const uint64_t ffn = m->dims.ffn, hidden = m->config.shape.hidden;
  if (linear_kernel(m, rows, hidden) == GS_LLM_GEMM_MMA) {
    GS_CHECK_CUDA(gs_llm_cuda_gemv_mma_swiglu(w, m->x, m->act, (int)rows, (int)ffn, (int)hidden,
                                              m->queue));
    *out = m->act;
    return GS_OK;
  }
  GS_TRY(linear(m, w, m->x, m->gu, rows, 2 * ffn, hidden, 0));
  GS_CHECK_CUDA(gs_llm_cuda_swiglu(m->gu, (int)rows, (int)ffn, m->x, m->queue));
  *out = m->x;
  return GS_OK;
}

/* The forward pass's entry stamp, before its first collective. */
static gs_status stamp_entry(gs_llm_gpu_model *m) {
  if (m->entry_due) GS_TRY(gs_llm_stamper_mark(m->stamper, 0, m->stream));
  m->entry_due = 0;
  return GS_OK;
}

/* h += the sum over the shards of w x (rows x hidden): accumulated in
 * place for the whole model; a shard's own product all-reduced first. */
static gs_status add_projection(gs_llm_gpu_model *m, const uint16_t *w, const uint16_t *x,
                                size_t rows, uint64_t ins) {
  const uint64_t hidden = m->config.shape.hidden;
  if (!m->comm) return linear(m, w, x, m->h, rows, hidden, ins, 1);
  GS_TRY(linear(m, w, x, m->part, rows, hidden, ins, 0));
  GS_TRY(stamp_entry(m));
  // Inside a captured decode graph the range marks the capture only; the
  // replayed all-reduce shows as NCCL kernels (docs/timeline.md).
  gs_trace_begin(GS_TRACE_COMM, "tp allreduce", -1, m->stream);
  gs_status st = gs_llm_tp_allreduce(m->comm, m->part, rows * hidden, m->stream);
  gs_trace_end();
  GS_TRY(st);
  GS_CHECK_CUDA(gs_llm_cuda_add(m->h, m->part, rows * hidden, m->queue));
  return GS_OK;
}

/* Whether a forward pass of `rows` rows splits its norms over the GEMVs
 * around them (llm_cuda.h, gs_llm_cuda_norm_out): where every projection
 * runs the tensor-core GEMV on the whole model. Each norm then costs no
 * kernel of its own and no pass over the rows between two GEMVs. */
static int norms_split(const gs_llm_gpu_model *m, size_t rows) {
  const uint64_t attn = m->dims.heads * gs_llm_head_dim(&m->config.shape);
  return !m->comm && first_stage(m) && last_stage(m) && linear_kernel(m, rows, m->config.shape.hidden) == GS_LLM_GEMM_MMA &&
         linear_kernel(m, rows, attn) == GS_LLM_GEMM_MMA &&
         linear_kernel(m, rows, m->dims.ffn) == GS_LLM_GEMM_MMA;
}

/* The halves of norm k of a split step (0: layer 0's first, 2l + 1:
 * layer l's second, 2l + 2: layer l + 1's first or the final one). */
static gs_llm_cuda_norm_in split_norm_in(const gs_llm_gpu_model *m, uint64_t k) {
  return (gs_llm_cuda_norm_in){m->squares + k * GS_LLM_MMA_MAX_ROWS,
                               (float)m->config.shape.norm_eps};
}

static gs_llm_cuda_norm_out split_norm_out(const gs_llm_gpu_model *m, uint64_t k,
                                           const uint16_t *w) {
  return (gs_llm_cuda_norm_out){w, m->x, m->squares + k * GS_LLM_MMA_MAX_ROWS};
}

/* One layer with split norms: the layer's first norm was produced by the
 * kernel before; `next` (the next norm's weights, or NULL) is produced by
 * the down projection. */
static gs_status enqueue_layer_split(gs_llm_gpu_model *m, uint64_t l, int rows,
                                     const uint32_t *slots, const uint32_t *positions,
                                     const uint16_t *next) {
  const gs_llm_shape *s = &m->config.shape;
  const gs_llm_shard_dims *d = &m->dims;
  gs_llm_cuda_queue q = m->queue;
  const int hidden = (int)s->hidden, hd = (int)gs_llm_head_dim(s), ffn = (int)d->ffn;
  const int attn = (int)d->heads * hd, qkv = (int)(d->heads + 2 * d->kv_heads) * hd;
  gs_llm_cuda_attn_shape as = {(int)d->heads, (int)d->kv_heads, hd, (int)m->config.max_seq};
  size_t layer_cache = (size_t)m->config.max_batch * m->config.max_seq * d->kv_heads * hd;
  uint16_t *const *w = m->layers[l].w; /* the whole model: lo = 0 */
  const gs_llm_cuda_norm_in first = split_norm_in(m, 2 * l), second = split_norm_in(m, 2 * l + 1);
  const gs_llm_cuda_norm_out mid = split_norm_out(m, 2 * l + 1, w[GS_LLM_K_MLP_NORM]);
  const gs_llm_cuda_norm_out after = split_norm_out(m, 2 * l + 2, next);
  GS_CHECK_CUDA(gs_llm_cuda_gemv_mma_norm(w[GS_LLM_K_QKV], m->x, m->qkv, rows, qkv, hidden, 0,
                                          &first, NULL, q));
  GS_CHECK_CUDA(gs_llm_cuda_attention(m->qkv, slots, positions, m->rope, rows, as,
                                      m->k_cache + l * layer_cache, m->v_cache + l * layer_cache,
                                      m->att, q));
  GS_CHECK_CUDA(
      gs_llm_cuda_gemv_mma_norm(w[GS_LLM_K_WO], m->att, m->h, rows, hidden, attn, 1, NULL, &mid, q));
  GS_CHECK_CUDA(gs_llm_cuda_gemv_mma_swiglu_norm(w[GS_LLM_K_GATE_UP], m->x, m->act, rows, ffn,
                                                 hidden, &second, q));
  GS_CHECK_CUDA(gs_llm_cuda_gemv_mma_norm(w[GS_LLM_K_DOWN], m->act, m->h, rows, hidden, ffn, 1,
                                          NULL, next ? &after : NULL, q));
  return GS_OK;
}

/* Enqueues the model over `rows` rows described by tokens/slots/positions
 * (device arrays), then the final norm and output projection of rows
 * out_rows[0..n_out) (NULL: rows 0..n_out-1) and the greedy token of each
 * into m->tokens (over every shard's vocabulary rows). `decode`: one row
 * per sequence, so attention rotates and caches each row's key itself
 * (gs_llm_cuda_attention with the rotary table); prefill rows of one
 * sequence attend to each other, so all keys are cached first. */
static gs_status enqueue_forward(gs_llm_gpu_model *m, size_t rows, const int32_t *tokens,
                                 const uint32_t *slots, const uint32_t *positions, size_t n_out,
                                 const uint32_t *out_rows, int decode) {
  const gs_llm_engine_config *c = &m->config;
  const gs_llm_shape *s = &c->shape;
  const gs_llm_shard_dims *d = &m->dims;
  gs_llm_cuda_queue q = m->queue;
  m->entry_due = m->stamper && m->comm;
  int r = (int)rows, hidden = (int)s->hidden;
  float eps = (float)s->norm_eps;
  const uint64_t hd = gs_llm_head_dim(s);
  gs_llm_cuda_attn_shape as = {(int)d->heads, (int)d->kv_heads, (int)hd, (int)c->max_seq};
  size_t layer_cache = (size_t)c->max_batch * c->max_seq * d->kv_heads * hd;
  // Decode of up to GS_LLM_MMA_MAX_ROWS rows: norms split over the GEMVs
  // around them, the final one too where it covers every row.
  const int split = decode && s->layers > 0 && norms_split(m, rows);
  const int final_split = split && out_rows == NULL && n_out == rows;
  if (split) {
    const gs_llm_cuda_norm_out first = split_norm_out(m, 0, m->layers[0].w[GS_LLM_K_ATTN_NORM]);
    GS_CHECK_CUDA(gs_llm_cuda_embed_norm(tokens, m->embed, r, hidden, m->h, &first,
                                         (int)norm_slots(m), GS_LLM_MMA_MAX_ROWS, q));
  } else if (first_stage(m)) {
    GS_CHECK_CUDA(gs_llm_cuda_embed(tokens, m->embed, r, hidden, m->h, q));
  } // A later pipeline stage starts from the stream the stage before sent to m->h.

  for (uint64_t l = 0; split && l < s->layers; l++) {
    const uint16_t *next = l + 1 < s->layers ? m->layers[l + 1].w[GS_LLM_K_ATTN_NORM]
                           : final_split     ? m->final_norm
                                             : NULL;
    GS_TRY(enqueue_layer_split(m, l, r, slots, positions, next));
  }
  for (uint64_t l = m->lo; !split && l < m->hi; l++) {
    uint16_t *const *w = m->layers[l].w;
    uint16_t *kc = m->k_cache + (l - m->lo) * layer_cache,
             *vc = m->v_cache + (l - m->lo) * layer_cache;
    GS_CHECK_CUDA(gs_llm_cuda_rmsnorm(m->h, NULL, w[GS_LLM_K_ATTN_NORM], r, hidden, eps, m->x, q));
    GS_TRY(linear(m, w[GS_LLM_K_QKV], m->x, m->qkv, rows, (d->heads + 2 * d->kv_heads) * hd,
                  s->hidden, 0));
    if (!decode)
      GS_CHECK_CUDA(gs_llm_cuda_rope_cache(m->qkv, slots, positions, m->rope, r, as, kc, vc, q));
    GS_CHECK_CUDA(gs_llm_cuda_attention(m->qkv, slots, positions, decode ? m->rope : NULL, r, as,
                                        kc, vc, m->att, q));
    GS_TRY(add_projection(m, w[GS_LLM_K_WO], m->att, rows, d->heads * hd));
    GS_CHECK_CUDA(gs_llm_cuda_rmsnorm(m->h, NULL, w[GS_LLM_K_MLP_NORM], r, hidden, eps, m->x, q));
    const uint16_t *act = NULL;
    GS_TRY(mlp_input(m, w[GS_LLM_K_GATE_UP], rows, &act));
    GS_TRY(add_projection(m, w[GS_LLM_K_DOWN], act, rows, d->ffn));
  }
  if (!last_stage(m)) return GS_OK; // the stream goes on to the next stage
  if (final_split) {
    const gs_llm_cuda_norm_in last = split_norm_in(m, 2 * s->layers);
    GS_CHECK_CUDA(gs_llm_cuda_gemv_mma_norm(m->lm_head, m->x, m->logits, (int)n_out, (int)d->vocab,
                                            hidden, 0, &last, NULL, q));
  } else {
    GS_CHECK_CUDA(
        gs_llm_cuda_rmsnorm(m->h, out_rows, m->final_norm, (int)n_out, hidden, eps, m->x, q));
    GS_TRY(linear(m, m->lm_head, m->x, m->logits, n_out, d->vocab, s->hidden, 0));
  }
  if (!m->comm) {
    GS_CHECK_CUDA(gs_llm_cuda_argmax(m->logits, (int)n_out, (int)d->vocab, m->tokens, q));
    return GS_OK;
  }
  // Each shard offers its best token; all agree on the best offer.
  float *mine = m->offers + 2 * n_out * m->shard.index;
  GS_CHECK_CUDA(gs_llm_cuda_argmax_offer(m->logits, (int)n_out, (int)d->vocab,
                                         (uint32_t)d->vocab_offset, mine, q));
  GS_TRY(stamp_entry(m)); /* a model of no layers: the all-gather is the first */
  GS_TRY(gs_llm_tp_allgather(m->comm, mine, m->offers, 2 * n_out, GS_DTYPE_FLOAT, m->stream));
  if (m->stamper) GS_TRY(gs_llm_stamper_mark(m->stamper, 1, m->stream));
  GS_CHECK_CUDA(gs_llm_cuda_pick_offer(m->offers, (int)m->shard.count, (int)n_out, m->tokens, q));
  return GS_OK;
}

/* Waits for the stream. A shard waits with a bound (gs_comm_wait): a failed
 * peer must not leave it in an NCCL collective forever. */
static gs_status wait_stream(gs_llm_gpu_model *m) {
  if (m->comm) return gs_comm_wait(m->comm->comm, m->stream);
  GS_CHECK_CUDA(cudaStreamSynchronize(m->stream));
  return GS_OK;
}

static gs_status fetch_tokens(gs_llm_gpu_model *m, size_t n, int32_t *tokens) {
  GS_CHECK_CUDA(cudaMemcpyAsync(m->host_rows, m->tokens, n * 4, cudaMemcpyDeviceToHost, m->stream));
  GS_TRY(wait_stream(m));
  memcpy(tokens, m->host_rows, n * 4);
  m->last_rows_logits = n;
  return GS_OK;
}

gs_status gs_llm_gpu_prefill(gs_llm_gpu_model *m, size_t n, const int32_t *const *prompts,
                             const uint32_t *lengths, int32_t *first_tokens) {
  const gs_llm_engine_config *c = &m->config;
  size_t rows = 0;
  for (size_t i = 0; i < n; i++) rows += lengths[i];
  if (n == 0 || n > c->max_batch || rows > m->max_rows)
    GS_BUG("llm prefill of %zu sequences, %zu tokens (limits %u, %zu)", n, rows, c->max_batch,
           m->max_rows);
  // Staging: tokens | slots | positions | last rows, copied in one go.
  uint32_t *tok = m->host_rows, *slot = tok + rows, *pos = slot + rows, *last = pos + rows;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    if (lengths[i] == 0 || lengths[i] >= c->max_seq)
      GS_BUG("llm prefill: prompt %zu has %u tokens (max %u)", i, lengths[i], c->max_seq - 1);
    for (uint32_t p = 0; p < lengths[i]; p++, at++) {
      tok[at] = (uint32_t)prompts[i][p];
      slot[at] = (uint32_t)i;
      pos[at] = p;
    }
    last[i] = (uint32_t)(at - 1);
  }
  GS_CHECK_CUDA(cudaMemcpyAsync(m->row_tokens, tok, rows * 4, cudaMemcpyHostToDevice, m->stream));
  GS_CHECK_CUDA(cudaMemcpyAsync(m->row_slots, slot, rows * 4, cudaMemcpyHostToDevice, m->stream));
  GS_CHECK_CUDA(
      cudaMemcpyAsync(m->row_positions, pos, rows * 4, cudaMemcpyHostToDevice, m->stream));
  GS_CHECK_CUDA(cudaMemcpyAsync(m->last_rows, last, n * 4, cudaMemcpyHostToDevice, m->stream));
  if (m->late > 0.0) GS_CHECK_CUDA(gs_fault_cuda_spin(m->late, m->stream));
  GS_TRY(enqueue_forward(m, rows, m->row_tokens, m->row_slots, m->row_positions, n, m->last_rows,
                         0));
  m->stamped += m->stamper != NULL;
  // A decode step launched ahead that no decode asked for ran before this
  // prefill on the stream: its cache rows lie past what the new sequences
  // will read before writing, and its tokens are not wanted.
  m->ahead = 0;
  // The first generated token of sequence i sits at position lengths[i].
  GS_TRY(wait_stream(m));
  for (size_t i = 0; i < n; i++) pos[i] = m->next_position[i] = lengths[i];
  GS_CHECK_CUDA(
      cudaMemcpyAsync(m->decode_positions, pos, n * 4, cudaMemcpyHostToDevice, m->stream));
  return fetch_tokens(m, n, first_tokens);
}

static gs_status enqueue_decode(gs_llm_gpu_model *m, size_t n) {
  if (m->late > 0.0) GS_CHECK_CUDA(gs_fault_cuda_spin(m->late, m->stream));
  GS_TRY(enqueue_forward(m, n, m->tokens, m->decode_slots, m->decode_positions, n, NULL, 1));
  GS_CHECK_CUDA(gs_llm_cuda_advance(m->decode_positions, (int)n, m->queue));
  return GS_OK;
}

/* Captures the decode step for n sequences into a graph (once per n). */
static gs_status decode_graph(gs_llm_gpu_model *m, size_t n, cudaGraphExec_t *out) {
  if (m->graphs[n]) {
    *out = m->graphs[n];
    return GS_OK;
  }
  cudaGraph_t graph = NULL;
  GS_CHECK_CUDA(cudaStreamBeginCapture(m->stream, cudaStreamCaptureModeThreadLocal));
  gs_status status = enqueue_decode(m, n);
  cudaError_t rc = cudaStreamEndCapture(m->stream, &graph);
  if (status != GS_OK) {
    if (graph) cudaGraphDestroy(graph);
    return status;
  }
  if (rc != cudaSuccess)
    return gs_error(GS_ERR_CUDA, "capturing the decode step failed: %s", cudaGetErrorString(rc));
  rc = cudaGraphInstantiate(&m->graphs[n], graph, 0);
  cudaGraphDestroy(graph);
  if (rc != cudaSuccess) {
    m->graphs[n] = NULL;
    return gs_error(GS_ERR_CUDA, "instantiating the decode graph failed: %s",
                    cudaGetErrorString(rc));
  }
  *out = m->graphs[n];
  return GS_OK;
}

/* Enqueues a decode step of sequences 0..n-1 and the copy of its tokens
 * to host_tokens[buffer], then records tokens_ready[buffer]. */
static gs_status launch_step(gs_llm_gpu_model *m, size_t n, int buffer) {
  for (size_t i = 0; i < n; i++)
    if (m->next_position[i] >= m->config.max_seq)
      GS_BUG("llm decode: sequence %zu is full (%u positions)", i, m->config.max_seq);
  for (size_t i = 0; i < n; i++) m->next_position[i]++;
  if (m->config.decode_graphs) {
    cudaGraphExec_t exec = NULL;
    GS_TRY(decode_graph(m, n, &exec));
    GS_CHECK_CUDA(cudaGraphLaunch(exec, m->stream));
  } else {
    GS_TRY(enqueue_decode(m, n));
  }
  m->stamped += m->stamper != NULL;
  GS_CHECK_CUDA(cudaMemcpyAsync(m->host_tokens[buffer], m->tokens, n * 4, cudaMemcpyDeviceToHost,
                                m->stream));
  GS_CHECK_CUDA(cudaEventRecord(m->tokens_ready[buffer], m->stream));
  return GS_OK;
}

/* Waits for the step whose tokens go to host_tokens[buffer] (not for a
 * step launched after it). */
static gs_status wait_step(gs_llm_gpu_model *m, int buffer) {
  if (m->comm) return gs_comm_wait_event(m->comm->comm, m->tokens_ready[buffer]);
  GS_CHECK_CUDA(cudaEventSynchronize(m->tokens_ready[buffer]));
  return GS_OK;
}

gs_status gs_llm_gpu_decode(gs_llm_gpu_model *m, size_t n, size_t next, int32_t *tokens) {
  // n and next against the last prefill: checked by the engine.
  if (m->ahead && n > m->ahead)
    GS_BUG("llm decode of %zu sequences after a step of %zu launched ahead", n, m->ahead);
  // This call's step: the one launched ahead by the last call, else now.
  int buffer = m->ahead ? m->ahead_buffer : 0;
  if (!m->ahead) GS_TRY(launch_step(m, n, buffer));
  m->ahead = 0;
  // The next call's step goes on the stream before this one's tokens are
  // waited for, so the GPU goes from step to step without the host's round
  // trip in between.
  if (next > 0) {
    GS_TRY(launch_step(m, next, !buffer));
    m->ahead = next;
    m->ahead_stamped = m->stamper != NULL;
    m->ahead_buffer = !buffer;
  }
  GS_TRY(wait_step(m, buffer));
  memcpy(tokens, m->host_tokens[buffer], n * 4);
  m->last_rows_logits = n; /* gs_llm_gpu_logits refuses them while a step runs ahead */
  return GS_OK;
}

gs_status gs_llm_gpu_logits(gs_llm_gpu_model *m, size_t n, float *logits) {
  if (m->ahead)
    GS_BUG("llm logits while a decode step launched ahead runs (the last decode named a next "
           "step)");
  if (n > m->last_rows_logits)
    GS_BUG("llm logits of %zu rows, %zu available", n, m->last_rows_logits);
  const uint64_t vocab = m->config.shape.vocab, part = m->dims.vocab;
  if (!m->comm) {
    GS_CHECK_CUDA(cudaMemcpy(logits, m->logits, n * vocab * sizeof(float), cudaMemcpyDeviceToHost));
    return GS_OK;
  }
  // Every shard's rows gathered (shard after shard) on each GPU; the
  // caller's copy (shard 0's) is put in whole-vocabulary order.
  float *all = NULL;
  GS_TRY(alloc_device((void **)&all, n * vocab * sizeof(float), "gathered logits"));
  float *host = logits ? malloc(n * vocab * sizeof *host) : NULL;
  gs_status status = logits && !host ? gs_error(GS_ERR_NOMEM, "cannot allocate %zu logits", n * vocab)
                                     : GS_OK;
  if (status == GS_OK)
    status = gs_llm_tp_allgather(m->comm, m->logits, all, n * part, GS_DTYPE_FLOAT, m->stream);
  if (status == GS_OK) status = wait_stream(m);
  if (status == GS_OK && host) {
    cudaError_t rc = cudaMemcpy(host, all, n * vocab * sizeof(float), cudaMemcpyDeviceToHost);
    if (rc != cudaSuccess)
      status = gs_error(GS_ERR_CUDA, "copying the gathered logits failed: %s",
                        cudaGetErrorString(rc));
    for (uint64_t k = 0; status == GS_OK && k < m->shard.count; k++)
      for (size_t i = 0; i < n; i++)
        memcpy(logits + i * vocab + k * part, host + (k * n + i) * part, part * sizeof(float));
  }
  free(host);
  cudaFree(all);
  return status;
}

/* ---- pipeline stages (llm_pp.c) ----------------------------------------------- */

gs_status gs_llm_gpu_stage_begin(gs_llm_gpu_model *m, int prefill, size_t n,
                                 const uint32_t *lengths, const size_t *group_row0,
                                 const size_t *group_first, size_t groups,
                                 const int32_t *const *prompts) {
  const gs_llm_engine_config *c = &m->config;
  if (m->ahead) GS_BUG("llm pipeline stage with a decode step launched ahead");
  m->last_rows_logits = n;
  if (m->late > 0.0) GS_CHECK_CUDA(gs_fault_cuda_spin(m->late, m->stream));
  if (!prefill) {
    for (size_t i = 0; i < n; i++)
      if (m->next_position[i]++ >= c->max_seq)
        GS_BUG("llm decode: sequence %zu is full (%u positions)", i, c->max_seq);
    return GS_OK;
  }
  size_t rows = 0;
  for (size_t i = 0; i < n; i++) rows += lengths[i];
  if (n == 0 || n > c->max_batch || rows > m->max_rows)
    GS_BUG("llm prefill of %zu sequences, %zu tokens (limits %u, %zu)", n, rows, c->max_batch,
           m->max_rows);
  // Staging: tokens | slots | positions | each sequence's last row in its
  // micro-batch; the stream is idle (the last call was waited for).
  uint32_t *tok = m->host_rows, *slot = tok + rows, *pos = slot + rows, *last = pos + rows;
  size_t at = 0, g = 0;
  for (size_t i = 0; i < n; i++) {
    while (g + 1 < groups && i >= group_first[g + 1]) g++;
    for (uint32_t p = 0; p < lengths[i]; p++, at++) {
      tok[at] = first_stage(m) ? (uint32_t)prompts[i][p] : 0;
      slot[at] = (uint32_t)i;
      pos[at] = p;
    }
    last[i] = (uint32_t)(at - 1 - group_row0[g]);
    m->next_position[i] = lengths[i];
  }
  GS_CHECK_CUDA(cudaMemcpy(m->row_tokens, tok, rows * 4, cudaMemcpyHostToDevice));
  GS_CHECK_CUDA(cudaMemcpy(m->row_slots, slot, rows * 4, cudaMemcpyHostToDevice));
  GS_CHECK_CUDA(cudaMemcpy(m->row_positions, pos, rows * 4, cudaMemcpyHostToDevice));
  GS_CHECK_CUDA(cudaMemcpy(m->group_last, last, n * 4, cudaMemcpyHostToDevice));
  GS_CHECK_CUDA(cudaMemcpy(m->decode_positions, m->next_position, n * 4, cudaMemcpyHostToDevice));
  return GS_OK;
}

gs_status gs_llm_gpu_stage_group(gs_llm_gpu_model *m, int prefill, size_t first, size_t count,
                                 size_t row0, size_t rows) {
  // The micro-batch's rows of the stream, tokens and logits: enqueue_forward
  // works from these pointers, restored before returning.
  float *h = m->h, *logits = m->logits;
  int32_t *tokens = m->tokens;
  m->h = h + row0 * m->config.shape.hidden;
  m->logits = logits + first * m->dims.vocab;
  m->tokens = tokens + first;
  gs_status st = prefill ? enqueue_forward(m, rows, m->row_tokens + row0, m->row_slots + row0,
                                           m->row_positions + row0, count, m->group_last + first, 0)
                         : enqueue_forward(m, count, m->tokens, m->decode_slots + first,
                                           m->decode_positions + first, count, NULL, 1);
  m->h = h;
  m->logits = logits;
  m->tokens = tokens;
  return st;
}

gs_status gs_llm_gpu_stage_end(gs_llm_gpu_model *m, int prefill, size_t n) {
  if (!prefill) GS_CHECK_CUDA(gs_llm_cuda_advance(m->decode_positions, (int)n, m->queue));
  return GS_OK;
}

float *gs_llm_gpu_stage_hidden(gs_llm_gpu_model *m, size_t row0) {
  return m->h + row0 * m->config.shape.hidden;
}

int32_t *gs_llm_gpu_stage_tokens(gs_llm_gpu_model *m, size_t first) { return m->tokens + first; }

cudaStream_t gs_llm_gpu_stream(const gs_llm_gpu_model *m) { return m->stream; }

/* ---- arrivals and the late fault (engine.c) ----------------------------------- */

void gs_llm_gpu_set_late(gs_llm_gpu_model *m, double seconds) {
  m->late = seconds;
  drop_graphs(m);
}

gs_status gs_llm_gpu_record_arrivals(gs_llm_gpu_model *m, double *error) {
  if (!m->comm || !first_stage(m) || !last_stage(m) || m->stamper)
    GS_BUG("llm arrival stamps twice, or on one GPU or a pipeline stage");
  // The anchor needs an idle stream; graphs captured so far hold no stamps
  // (nor did a step launched ahead before now).
  GS_TRY(wait_stream(m));
  drop_graphs(m);
  GS_TRY(gs_llm_stamper_create(m->stream, &m->stamper));
  *error = gs_llm_stamper_anchor(m->stamper)->error;
  return GS_OK;
}

gs_status gs_llm_gpu_take_arrivals(gs_llm_gpu_model *m, double offset, gs_arrival_rank *into) {
  const uint64_t done = m->stamped - (m->ahead && m->ahead_stamped); /* all but one ahead */
  return gs_llm_stamper_take(m->stamper, done, offset, into);
}

gs_status gs_llm_gpu_stage_fetch(gs_llm_gpu_model *m, size_t n, int32_t *tokens) {
  GS_CHECK_CUDA(cudaMemcpy(tokens, m->tokens, n * 4, cudaMemcpyDeviceToHost));
  return GS_OK;
}
