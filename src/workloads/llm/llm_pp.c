/* Pipeline parallelism of the llm replica (llm_pp.h): the stage split,
 * the micro-batches and one shard's part of a call. */
#include "workloads/llm/llm_pp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/timer.h"
#include "platform/trace.h"

gs_status gs_llm_pp_split(uint64_t layers, uint32_t stages, const uint64_t *bounds, size_t n,
                          uint32_t *first) {
  if (stages < 1 || stages > GS_LLM_MAX_STAGES)
    return gs_error(GS_ERR_USAGE, "option --pp %u: 1 to %d stages", stages, GS_LLM_MAX_STAGES);
  if ((uint64_t)stages > layers)
    return gs_error(GS_ERR_USAGE, "option --pp %u: the model has only %llu layers (a stage "
                    "needs one at least)", stages, (unsigned long long)layers);
  first[0] = 0;
  first[stages] = (uint32_t)layers;
  if (n == 0) {
    if (layers % stages != 0)
      return gs_error(GS_ERR_USAGE, "option --pp %u: %llu layers do not divide into %u equal "
                      "stages (give --layers a multiple of %u, or the boundaries with --stages)",
                      stages, (unsigned long long)layers, stages, stages);
    for (uint32_t s = 1; s < stages; s++) first[s] = (uint32_t)(layers / stages * s);
    return GS_OK;
  }
  if (n != (size_t)stages - 1)
    return gs_error(GS_ERR_USAGE, "option --stages: takes %u layers (the first of stages 1..%u) "
                    "for --pp %u, got %zu", stages - 1, stages - 1, stages, n);
  uint64_t previous = 0;
  for (size_t i = 0; i < n; i++) {
    if (bounds[i] <= previous || bounds[i] >= layers)
      return gs_error(GS_ERR_USAGE, "option --stages: layer %llu must lie after %llu and before "
                      "layer %llu (the last); boundaries increase strictly",
                      (unsigned long long)bounds[i], (unsigned long long)previous,
                      (unsigned long long)layers - 1);
    previous = bounds[i];
    first[i + 1] = (uint32_t)bounds[i];
  }
  return GS_OK;
}

void gs_llm_pp_micro(size_t n, size_t groups, size_t j, size_t *first, size_t *count) {
  const size_t base = n / groups, extra = n % groups;
  *count = base + (j < extra ? 1 : 0);
  *first = j * base + (j < extra ? j : extra);
}

size_t gs_llm_pp_groups(const gs_llm_engine_config *c, size_t n) {
  size_t groups = c->micro_batches ? c->micro_batches : (c->pp ? c->pp : 1);
  return groups < n ? groups : n;
}

/* ---- one shard's part of a call -------------------------------------------- */

/* The rows of a micro-batch: sequences [first, first + count) of the call,
 * rows [row0, row0 + rows) of its row layout. */
typedef struct {
  size_t j, first, count, row0, rows;
} micro_batch;

static micro_batch micro_of(const gs_llm_engine *e, size_t groups, size_t j) {
  micro_batch mb = {.j = j};
  gs_llm_pp_micro(e->n, groups, j, &mb.first, &mb.count);
  if (e->op == OP_DECODE) {
    mb.row0 = mb.first;
    mb.rows = mb.count;
    return mb;
  }
  for (size_t i = 0; i < mb.first; i++) mb.row0 += e->lengths[i];
  for (size_t i = mb.first; i < mb.first + mb.count; i++) mb.rows += e->lengths[i];
  return mb;
}

/* Where a transfer goes: a micro-batch's stream or tokens (DATA) over
 * sh->out and sh->in, device buffers on CUDA; a call's header or the
 * logits (HOST, host buffers) between processes over the job's world. */
enum { DATA = 0, HOST = 1 };

/* Sends (to the next stage, over sh->out) or receives (from the stage
 * before, over sh->in) one micro-batch's transfer, on `stream` on CUDA;
 * `via` HOST: over the job's world between processes. A failure names
 * both stages. */
static gs_status transfer(engine_shard *sh, int via, int send, void *buf, size_t count,
                          gs_dtype dtype, const micro_batch *mb, const char *what,
                          cudaStream_t stream) {
  const gs_llm_engine *e = sh->engine;
  const uint32_t peer_stage = (send ? sh->stage + 1 : sh->stage + e->stages - 1) % e->stages;
  gs_comm_p2p_op op = {.send = send, .buf = buf, .count = count, .dtype = dtype,
                       .peer = send ? sh->out_peer : sh->in_peer};
  gs_comm *comm = via == HOST && e->remote ? e->control : send ? sh->out : sh->in;
  gs_trace_begin(GS_TRACE_COMM, send ? "pp send" : "pp recv", (int64_t)mb->j, stream);
  gs_status st = gs_comm_p2p(comm, &op, 1, stream);
  gs_trace_end();
  if (st == GS_OK) return GS_OK;
  return gs_error(st, "llm pipeline stage %u of %u, %s %s of micro-batch %zu %s stage %u: %s",
                  sh->stage, e->stages, send ? "sending" : "receiving", what, mb->j,
                  send ? "to" : "from", peer_stage, gs_last_error());
}

/* The CPU stage's layers over one micro-batch; the last stage picks its
 * tokens into sh->tokens + first. */
static gs_status cpu_micro(engine_shard *sh, const micro_batch *mb) {
  gs_llm_engine *e = sh->engine;
  const int prefill = e->op == OP_PREFILL, first = sh->stage == 0,
            last = sh->stage + 1 == e->stages;
  size_t total = e->n;
  if (prefill) {
    total = 0;
    for (size_t i = 0; i < e->n; i++) total += e->lengths[i];
  }
  const uint32_t *slots = e->rows, *positions = slots + total, *outs = positions + total;
  for (size_t i = 0; i < mb->count; i++) sh->outs[i] = outs[mb->first + i] - (uint32_t)mb->row0;
  const int32_t *tokens = prefill ? e->row_tokens : e->last_token;
  gs_llm_shard_dims d;
  gs_llm_shard_sizes(&e->config.shape, sh->shard, &d);
  float *logits = last ? sh->logits + mb->first * d.vocab : NULL;
  GS_TRY(gs_llm_cpu_stage_forward(sh->cpu, mb->rows, first ? tokens + mb->row0 : NULL,
                                  first ? NULL : sh->hidden, slots + mb->row0,
                                  positions + mb->row0, mb->count, sh->outs, logits,
                                  last ? NULL : sh->hidden));
  if (!last) return GS_OK;
  return gs_llm_engine_pick_tokens(sh, logits, mb->count, sh->tokens + mb->first);
}

/* The CPU stage: each micro-batch received (or embedded), computed and
 * passed on in turn; a send never waits (it is copied to the receiver). */
static gs_status cpu_call(engine_shard *sh, size_t groups) {
  gs_llm_engine *e = sh->engine;
  const uint64_t hidden = e->config.shape.hidden;
  const int last = sh->stage + 1 == e->stages;
  for (size_t j = 0; j < groups; j++) {
    const micro_batch mb = micro_of(e, groups, j);
    if (sh->stage > 0)
      GS_TRY(transfer(sh, DATA, 0, sh->hidden, mb.rows * hidden, GS_DTYPE_FLOAT, &mb,
                      "the residual stream", NULL));
    const double began = gs_time_seconds();
    gs_trace_begin(GS_TRACE_COMPUTE, "pp stage", (int64_t)j, NULL);
    gs_status st = cpu_micro(sh, &mb);
    gs_trace_end();
    sh->busy += gs_time_seconds() - began;
    GS_TRY(st);
    if (!last)
      GS_TRY(transfer(sh, DATA, 1, sh->hidden, mb.rows * hidden, GS_DTYPE_FLOAT, &mb,
                      "the residual stream", NULL));
    else
      GS_TRY(transfer(sh, DATA, 1, sh->tokens + mb.first, mb.count, GS_DTYPE_INT32, &mb,
                      "tokens", NULL));
  }
  for (size_t j = 0; sh->stage == 0 && j < groups; j++) {
    const micro_batch mb = micro_of(e, groups, j);
    GS_TRY(transfer(sh, DATA, 0, sh->tokens + mb.first, mb.count, GS_DTYPE_INT32, &mb,
                    "tokens", NULL));
  }
  return gs_comm_p2p_drain(sh->out);
}

/* ---- CUDA ----------------------------------------------------------------------- */

void gs_llm_pp_release(engine_shard *sh) {
  for (size_t k = 0; k < sh->events; k++) {
    if (sh->arrived && sh->arrived[k]) cudaEventDestroy(sh->arrived[k]);
    if (sh->began && sh->began[k]) cudaEventDestroy(sh->began[k]);
    if (sh->ready && sh->ready[k]) cudaEventDestroy(sh->ready[k]);
  }
  free(sh->arrived);
  free(sh->began);
  free(sh->ready);
  sh->arrived = sh->began = sh->ready = NULL;
  sh->events = 0;
  if (sh->send_stream) cudaStreamDestroy(sh->send_stream);
  if (sh->recv_stream) cudaStreamDestroy(sh->recv_stream);
  sh->send_stream = sh->recv_stream = NULL;
}

/* The transfer streams and one event of each kind per micro-batch (at
 * most max_batch), made once on the shard's GPU. */
static gs_status cuda_prepare(engine_shard *sh) {
  if (sh->events) return GS_OK;
  const size_t n = sh->config.max_batch;
  GS_CHECK_CUDA(cudaStreamCreateWithFlags(&sh->send_stream, cudaStreamNonBlocking));
  GS_CHECK_CUDA(cudaStreamCreateWithFlags(&sh->recv_stream, cudaStreamNonBlocking));
  sh->arrived = calloc(n, sizeof *sh->arrived);
  sh->began = calloc(n, sizeof *sh->began);
  sh->ready = calloc(n, sizeof *sh->ready);
  if (!sh->arrived || !sh->began || !sh->ready)
    return gs_error(GS_ERR_NOMEM, "cannot allocate pipeline stage %u's events", sh->stage);
  sh->events = n;
  for (size_t k = 0; k < n; k++) {
    GS_CHECK_CUDA(cudaEventCreateWithFlags(&sh->arrived[k], cudaEventDisableTiming));
    GS_CHECK_CUDA(cudaEventCreate(&sh->began[k]));
    GS_CHECK_CUDA(cudaEventCreate(&sh->ready[k]));
  }
  return GS_OK;
}

/* The CUDA stage: every micro-batch enqueued at once. A stream received
 * on the receive stream is waited for by the compute stream (event
 * `arrived`); what a micro-batch computed goes out on the send stream
 * once its compute is done (`ready`), so that the compute stream goes on
 * to the next micro-batch while it travels. The first stage receives the
 * tokens of micro-batch j only after its own compute of j read the
 * previous ones. Busy time: the compute events of each micro-batch. */
static gs_status cuda_call(engine_shard *sh, size_t groups) {
  gs_llm_engine *e = sh->engine;
  gs_llm_gpu_model *m = sh->gpu;
  const int prefill = e->op == OP_PREFILL, last = sh->stage + 1 == e->stages;
  const uint64_t hidden = e->config.shape.hidden;
  GS_TRY(cuda_prepare(sh));
  size_t row0[GS_LLM_MAX_BATCH], first[GS_LLM_MAX_BATCH];
  for (size_t j = 0; j < groups; j++) {
    const micro_batch mb = micro_of(e, groups, j);
    row0[j] = mb.row0;
    first[j] = mb.first;
  }
  GS_TRY(gs_llm_gpu_stage_begin(m, prefill, e->n, e->lengths, row0, first, groups, e->prompts));
  cudaStream_t cs = gs_llm_gpu_stream(m);
  for (size_t j = 0; j < groups; j++) {
    const micro_batch mb = micro_of(e, groups, j);
    float *h = gs_llm_gpu_stage_hidden(m, mb.row0);
    if (sh->stage > 0) {
      GS_TRY(transfer(sh, DATA, 0, h, mb.rows * hidden, GS_DTYPE_FLOAT, &mb, "the residual stream",
                      sh->recv_stream));
      GS_CHECK_CUDA(cudaEventRecord(sh->arrived[j], sh->recv_stream));
      GS_CHECK_CUDA(cudaStreamWaitEvent(cs, sh->arrived[j], 0));
    }
    GS_CHECK_CUDA(cudaEventRecord(sh->began[j], cs));
    gs_trace_begin(GS_TRACE_COMPUTE, "pp stage", (int64_t)j, cs);
    gs_status st = gs_llm_gpu_stage_group(m, prefill, mb.first, mb.count, mb.row0, mb.rows);
    gs_trace_end();
    GS_TRY(st);
    GS_CHECK_CUDA(cudaEventRecord(sh->ready[j], cs));
    GS_CHECK_CUDA(cudaStreamWaitEvent(sh->send_stream, sh->ready[j], 0));
    if (!last)
      GS_TRY(transfer(sh, DATA, 1, h, mb.rows * hidden, GS_DTYPE_FLOAT, &mb, "the residual stream",
                      sh->send_stream));
    else
      GS_TRY(transfer(sh, DATA, 1, gs_llm_gpu_stage_tokens(m, mb.first), mb.count,
                      GS_DTYPE_INT32, &mb, "tokens", sh->send_stream));
  }
  for (size_t j = 0; sh->stage == 0 && j < groups; j++) {
    const micro_batch mb = micro_of(e, groups, j);
    GS_CHECK_CUDA(cudaStreamWaitEvent(sh->recv_stream, sh->ready[j], 0));
    GS_TRY(transfer(sh, DATA, 0, gs_llm_gpu_stage_tokens(m, mb.first), mb.count,
                    GS_DTYPE_INT32, &mb, "tokens", sh->recv_stream));
  }
  // The next call starts after every stream below is done: the tokens the
  // first stage received are in place for its next embedding.
  GS_TRY(gs_llm_gpu_stage_end(m, prefill, e->n));
  GS_TRY(gs_comm_wait(sh->out, sh->send_stream));
  GS_TRY(gs_comm_wait(sh->in, sh->recv_stream));
  GS_TRY(gs_comm_wait(sh->in, cs));
  for (size_t j = 0; j < groups; j++) {
    float ms = 0.0f;
    GS_CHECK_CUDA(cudaEventElapsedTime(&ms, sh->began[j], sh->ready[j]));
    sh->busy += 1e-3 * ms;
  }
  if (sh->stage == 0) GS_TRY(gs_llm_gpu_stage_fetch(m, e->n, sh->tokens));
  // Between processes the call's header went on over the job's world.
  return e->remote ? gs_comm_p2p_drain(e->control) : GS_OK;
}

/* The header of a call: op, n, next, then n prompt lengths (a prefill's). */
#define HEADER_WORDS (3 + GS_LLM_MAX_BATCH)

static void header_fill(const gs_llm_engine *e, engine_op op, uint32_t *h) {
  memset(h, 0, HEADER_WORDS * sizeof *h);
  h[0] = (uint32_t)op;
  h[1] = (uint32_t)e->n;
  h[2] = op == OP_DECODE ? (uint32_t)e->next : 0;
  for (size_t i = 0; op == OP_PREFILL && i < e->n; i++) h[3 + i] = e->lengths[i];
}

/* A received header into its call; one this code did not send is a bug. */
static void header_read(const engine_shard *sh, const uint32_t *h, engine_op *op, size_t *n,
                        size_t *next, uint32_t *lengths) {
  *op = (engine_op)h[0];
  *n = h[1];
  *next = h[2];
  if (*n > GS_LLM_MAX_BATCH || *next > *n ||
      (*op != OP_PREFILL && *op != OP_DECODE && *op != OP_LOGITS && *op != OP_QUIT &&
       *op != OP_CLOCK))
    GS_BUG("llm shard %u of stage %u received call %u of %zu sequences", sh->shard.index,
           sh->stage, h[0], *n);
  memcpy(lengths, h + 3, *n * sizeof *lengths);
}

gs_status gs_llm_pp_header_send(engine_shard *sh, engine_op op) {
  uint32_t h[HEADER_WORDS];
  header_fill(sh->engine, op, h);
  const micro_batch mb = {0};
  return transfer(sh, HOST, 1, h, HEADER_WORDS, GS_DTYPE_UINT32, &mb, "the call", NULL);
}

gs_status gs_llm_pp_header_next(engine_shard *sh, engine_op *op, size_t *n, size_t *next,
                                uint32_t *lengths) {
  const gs_llm_engine *e = sh->engine;
  uint32_t h[HEADER_WORDS];
  const micro_batch mb = {0};
  GS_TRY(transfer(sh, HOST, 0, h, HEADER_WORDS, GS_DTYPE_UINT32, &mb, "the call", NULL));
  if (sh->stage + 1 < e->stages)
    GS_TRY(transfer(sh, HOST, 1, h, HEADER_WORDS, GS_DTYPE_UINT32, &mb, "the call", NULL));
  header_read(sh, h, op, n, next, lengths);
  return GS_OK;
}

/* One message between the first shard and shard `peer` of the first stage
 * over the job's world; a failure names both. */
static gs_status call_transfer(engine_shard *sh, int send, uint32_t peer, void *buf, size_t count,
                               gs_dtype dtype, const char *what) {
  const gs_llm_engine *e = sh->engine;
  gs_comm_p2p_op op = {.send = send, .buf = buf, .count = count, .dtype = dtype,
                       .peer = e->first_rank + (int)peer};
  gs_status st = gs_comm_p2p(e->control, &op, 1, NULL);
  if (st == GS_OK) return GS_OK;
  return gs_error(st, "llm tensor-parallel shard %u, %s %s %s shard %u (rank %d): %s",
                  sh->shard.index, send ? "sending" : "receiving", what, send ? "to" : "from",
                  peer, op.peer, gs_last_error());
}

gs_status gs_llm_pp_call_announce(engine_shard *sh, engine_op op) {
  const gs_llm_engine *e = sh->engine;
  uint32_t h[HEADER_WORDS];
  header_fill(e, op, h);
  // A prefill's prompts, one after another: the first stage embeds them.
  int32_t *tokens = NULL;
  size_t total = 0;
  if (op == OP_PREFILL) {
    for (size_t i = 0; i < e->n; i++) total += e->lengths[i];
    tokens = malloc((total ? total : 1) * sizeof *tokens);
    if (!tokens) return gs_error(GS_ERR_NOMEM, "cannot gather the prompts of %zu sequences", e->n);
    for (size_t i = 0, at = 0; i < e->n; at += e->lengths[i], i++)
      memcpy(tokens + at, e->prompts[i], e->lengths[i] * sizeof *tokens);
  }
  gs_status st = GS_OK;
  for (uint32_t k = 1; k < sh->shard.count && st == GS_OK; k++) {
    st = call_transfer(sh, 1, k, h, HEADER_WORDS, GS_DTYPE_UINT32, "the call");
    if (st == GS_OK && op == OP_PREFILL)
      st = call_transfer(sh, 1, k, tokens, total, GS_DTYPE_INT32, "the prompts");
  }
  free(tokens);
  return st;
}

gs_status gs_llm_pp_call_receive(engine_shard *sh, engine_op *op, size_t *n, size_t *next,
                                 uint32_t *lengths, int32_t *prompts) {
  uint32_t h[HEADER_WORDS];
  GS_TRY(call_transfer(sh, 0, 0, h, HEADER_WORDS, GS_DTYPE_UINT32, "the call"));
  header_read(sh, h, op, n, next, lengths);
  if (*op != OP_PREFILL) return GS_OK;
  const gs_llm_engine_config *c = &sh->engine->config;
  size_t total = 0;
  for (size_t i = 0; i < *n; i++) {
    if (lengths[i] > c->max_input) GS_BUG("llm prompt of %u tokens announced", lengths[i]);
    total += lengths[i];
  }
  return call_transfer(sh, 0, 0, prompts, total, GS_DTYPE_INT32, "the prompts");
}

gs_status gs_llm_pp_logits(engine_shard *sh) {
  gs_llm_engine *e = sh->engine;
  const size_t count = e->n * e->config.shape.vocab;
  const int last = sh->stage + 1 == e->stages, first = sh->shard.index == 0;
  const micro_batch mb = {0};
  if (sh->stage == 0) GS_TRY(gs_llm_pp_header_send(sh, OP_LOGITS));
  if (last) {
    // Gathered over the stage's shards (a collective on both backends).
    float *whole = first ? malloc(count * sizeof *whole) : NULL;
    if (first && !whole) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu logits", count);
    gs_status st = sh->gpu ? gs_llm_gpu_logits(sh->gpu, e->n, whole)
                           : gs_llm_engine_cpu_logits(sh, whole);
    if (st == GS_OK && first)
      st = transfer(sh, HOST, 1, whole, count, GS_DTYPE_FLOAT, &mb, "logits", NULL);
    free(whole);
    GS_TRY(st);
  }
  if (sh->stage == 0 && first)
    GS_TRY(transfer(sh, HOST, 0, e->logits_out, count, GS_DTYPE_FLOAT, &mb, "logits", NULL));
  return gs_comm_p2p_drain(e->control);
}

gs_status gs_llm_pp_call(engine_shard *sh) {
  gs_llm_engine *e = sh->engine;
  const size_t groups = gs_llm_pp_groups(&e->config, e->n);
  if (e->remote && sh->stage == 0) GS_TRY(gs_llm_pp_header_send(sh, e->op));
  if (e->backend == GS_BACKEND_CUDA) return cuda_call(sh, groups);
  return cpu_call(sh, groups);
}
