/* One model replica: the llm model on one backend (CPU reference or one
 * GPU) with a KV cache of `max_batch` sequence slots. The scenario driver
 * talks only to this interface: prefill a batch of prompts, then decode one
 * token per sequence per step. Sequence i of a batch lives in slot i. Every
 * call is synchronous and made from the thread that owns the replica. */
#ifndef GS_LLM_ENGINE_H
#define GS_LLM_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "core/arrival.h"
#include "core/status.h"
#include "workloads/llm/llm_tp.h"
#include "workloads/llm/model.h"
#include "workloads/workload.h"

/* How linear layers of 1..16 rows (decode) run on the GPU; more rows
 * always use cuBLASLt (llm_gemm.h), and so does SIMT's choice above 8
 * rows. auto: the tensor-core GEMV (the SIMT one where K is not a multiple
 * of 64); on an H200 it beat SIMT and cuBLAS at 1 and 8 rows, on an H100
 * cuBLAS at 16 (docs/workloads/llm.md, "Speed"). */
typedef enum {
  GS_LLM_GEMM_AUTO = 0,
  GS_LLM_GEMM_SIMT,
  GS_LLM_GEMM_MMA,
  GS_LLM_GEMM_CUBLAS
} gs_llm_decode_gemm;

extern const char *const gs_llm_decode_gemm_names[]; /* auto, simt, mma, cublas */

typedef struct {
  gs_llm_shape shape;
  uint64_t seed;      /* weights */
  uint32_t max_batch; /* sequences decoded together, >= 1 */
  uint32_t max_seq;   /* positions per sequence (input + output), >= 2 */
  uint32_t max_input; /* longest prompt */
  int decode_graphs;    /* CUDA: capture each decode step size in a CUDA graph */
  int overlap_launches; /* CUDA: each kernel may start while its predecessor ends (sm_90+) */
  int decode_gemm;      /* CUDA: gs_llm_decode_gemm, how linear layers of <= 16 rows run */
  uint32_t tp;          /* tensor-parallel shards of the replica (0 or 1: none) */
  int nccl_max_ctas;    /* CUDA: the most CTAs NCCL gives a collective of the
                           replica's communicators (gs_run_config's); 0 = NCCL's
                           default */
  /* Pipeline parallelism (llm_pp.h): stages of the replica (0 or 1: none),
   * each of tp shards, and the micro-batches a call's sequences are cut
   * into (0: one per stage). A stage's model holds decoder layers
   * [layer_begin, layer_end) (both 0: every layer), the embedding on the
   * first stage and the output head on the last. */
  uint32_t pp;
  uint32_t micro_batches;
  uint32_t stage_first[GS_LLM_MAX_STAGES + 1]; /* first layer of each stage; stage_first[pp] = layers */
  uint64_t layer_begin, layer_end;
} gs_llm_engine_config;

typedef struct gs_llm_engine gs_llm_engine;

/* Decoder layers [*begin, *end) of a model built from `c` (the whole model
 * when layer_end is 0). */
void gs_llm_engine_layers(const gs_llm_engine_config *c, uint64_t *begin, uint64_t *end);

/* Builds a replica: weights from the seed (on the GPU by a kernel), cache and
 * buffers. `devices` holds the CUDA ordinal of each of config->tp shards
 * (unused on the CPU backend); every call makes a shard's GPU current on
 * the thread that runs it (shard 0 runs on the caller's, which is left with
 * the first GPU current). With tp > 1 the replica splits heads, FFN columns
 * and vocabulary over its shards (model.h, gs_llm_shard), one thread each,
 * and adds their partial sums with an all-reduce (NCCL on the GPUs) after
 * attention and MLP. */
gs_status gs_llm_engine_create(const gs_llm_engine_config *config, gs_backend backend,
                               const int *devices, gs_llm_engine **out);

/* Prefills sequences 0..n-1 (n <= max_batch) with prompts[i][0..lengths[i])
 * and writes each sequence's first generated token to first_tokens[i]. A
 * prompt longer than max_input, or without room for a token after it in
 * the cache, is refused (GS_ERR_UNSUPPORTED), as a server refuses a request
 * over its context; more than max_batch sequences is a bug. */
gs_status gs_llm_engine_prefill(gs_llm_engine *e, size_t n, const int32_t *const *prompts,
                                const uint32_t *lengths, int32_t *first_tokens);

/* Feeds each of sequences 0..n-1 its last token and writes the next one to
 * tokens[i]. n must not exceed the last prefill's n; no sequence may pass
 * max_seq positions (either is a bug). `next` (<= n) promises that the next call is a decode
 * of at most `next` sequences (0: no promise): on the GPU that step is
 * launched before this call waits for its own tokens, so the GPU does not
 * idle for the host's round trip between steps. Until that decode, logits
 * are refused; a prefill drops the step. */
gs_status gs_llm_engine_decode(gs_llm_engine *e, size_t n, size_t next, int32_t *tokens);

/* The logits (n x vocab floats) behind the last call's tokens. */
gs_status gs_llm_engine_logits(gs_llm_engine *e, size_t n, float *logits);

/* Pipeline stages: the seconds each of the *stages stages computed
 * (busy[0 .. *stages), its first shard's) and the seconds of the prefill
 * and decode calls (*calls), since the engine was made or last reset; a
 * stage's idle time is *calls minus its busy time. Without a pipeline,
 * one stage whose busy time is not measured (0). */
void gs_llm_engine_stage_seconds(const gs_llm_engine *e, double *busy, uint32_t *stages,
                                 double *calls);
void gs_llm_engine_reset_seconds(gs_llm_engine *e);

/* One run's record of a group of shards that meet at their own
 * all-reduces: the tensor-parallel shards of one pipeline stage of one
 * replica (docs/stragglers.md), its rank k the stage's shard k. */
typedef struct {
  int replica, stage;
  int first_rank;       /* the rank of shard 0: (replica x pp + stage) x tp */
  gs_arrival *arrival;  /* owned by the run's result */
} gs_llm_arrival_group;

/* Arrival skew at the tensor-parallel collectives (docs/stragglers.md,
 * "Arrival skew"): from now on each prefill and decode call appends each
 * shard's entry at its first collective and exit from its last one, one
 * iteration per call, to stages[its stage].arrival->ranks[its index in the
 * stage] (stages: the replica's pp groups, each of tp ranks; they outlive
 * the engine's calls). tp >= 2: the shards in this process (the recorders
 * end with the engine), or one shard over processes (its own series; the
 * caller starts the recorder on place.control, which aligns the host
 * clocks and sets the rank's offset, and stops it). CPU backend: the
 * recorder on each shard's handle; CUDA, one stage only: each shard's GPU
 * stamps its steps (llm_gpu.h, gs_llm_gpu_record_arrivals; its clock
 * anchor's error added to the rank's), a decode step launched ahead
 * appended by the call after it. GS_BUG otherwise. Call between calls. */
gs_status gs_llm_engine_record_arrival(gs_llm_engine *e, const gs_llm_arrival_group *stages);

/* --inject late: shard `shard` waits `seconds` before each prefill and
 * decode call's work (CPU backend; on CUDA its stream spins that long
 * before each step's forward pass, gs_llm_gpu_set_late), so that it
 * arrives late at the all-reduces. */
void gs_llm_engine_set_late(gs_llm_engine *e, uint32_t shard, double seconds);

/* Where one shard of a replica over processes sits (under a launcher, one
 * process per shard): process first_rank + stage x tp + shard. */
typedef struct {
  gs_comm *control;  /* the job's world: the calls (and on the CPU backend the
                        pipeline's transfers) */
  gs_llm_tp_comm tp; /* tp > 1: the collectives of the stage's shards (a group) */
  gs_comm *out, *in; /* CUDA with stages: the NCCL links to the next stage and from
                        the one before (gs_llm_process_join; ranks are processes) */
  int first_rank;    /* the replica's first process */
  uint32_t stage, shard;
  int device;        /* CUDA ordinal; unused on the CPU backend */
} gs_llm_engine_place;

/* Under a launcher: shard place->shard of stage place->stage of a replica
 * of config->tp x config->pp processes (more than one; on CUDA with
 * stages place->out and place->in given). The first shard of the first
 * stage is the engine the scenario calls: it sends each call to its
 * stage's other shards first, and each shard of the first stage sends it
 * down its column (the same shard of the later stages); the others serve
 * the calls in gs_llm_engine_follow. Destroying the first shard tells the others to
 * quit. */
gs_status gs_llm_engine_create_stage(const gs_llm_engine_config *config, gs_backend backend,
                                     const gs_llm_engine_place *place, gs_llm_engine **out);

/* A shard other than the first: runs the calls the first announces until
 * it starts its clock (*clock = 1: meet it, then follow again) or quits
 * (*clock = 0). */
gs_status gs_llm_engine_follow(gs_llm_engine *e, int *clock);

/* The first shard of a replica over processes: tells the others that the
 * clock starts; nothing otherwise. */
gs_status gs_llm_engine_start_clock(gs_llm_engine *e);

/* Frees everything; accepts NULL. */
void gs_llm_engine_destroy(gs_llm_engine *e);

#endif
