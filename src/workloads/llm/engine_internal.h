/* The llm replica's inside, shared by engine.c (the calls, tensor
 * parallelism) and llm_pp.c (pipeline stages): a replica is tp x pp
 * shards, shard i = stage * tp + its index in the stage, each driven by
 * its own thread (shard 0 by the caller's). Not for other files. */
#ifndef GS_LLM_ENGINE_INTERNAL_H
#define GS_LLM_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/arrival.h"
#include "core/barrier.h"
#include "platform/comm.h"
#include "workloads/llm/engine.h"
#include "workloads/llm/llm_cpu.h"
#include "workloads/llm/llm_gpu.h"
#include "workloads/llm/llm_tp.h"

/* OP_CLOCK: under a launcher, stage 0 tells the other stages' processes
 * that its clock starts (gs_llm_engine_follow returns to meet it). */
typedef enum { OP_CREATE, OP_PREFILL, OP_DECODE, OP_LOGITS, OP_QUIT, OP_CLOCK } engine_op;

typedef struct {
  gs_llm_engine *engine;
  gs_llm_shard shard;
  uint32_t stage;       /* pipeline stage (0 without a pipeline) */
  gs_llm_engine_config config; /* the replica's, with the stage's layers */
  int device;
  gs_llm_tp_comm tp; /* the stage's other shards; tp.comm NULL without tensor parallelism */
  /* Pipeline transfers (NULL without stages): `out` sends to the same
   * shard of the next stage (the last stage: of the first), `in` receives
   * from the one before; in one process each a world of the two (rank 0
   * sends), between processes the job's world (CPU) or an NCCL link of
   * every process (CUDA, gs_llm_process_join), whose ranks are processes.
   * Between processes a call's header and the logits go over the job's
   * world (engine->control) on both backends. */
  gs_comm *out, *in;
  int out_peer, in_peer; /* their ranks in those worlds */
  /* CUDA pipeline: transfer streams and per micro-batch events, made by
   * the first call (llm_pp.c), freed by gs_llm_pp_release. */
  cudaStream_t send_stream, recv_stream;
  cudaEvent_t *arrived, *began, *ready;
  size_t events;
  gs_llm_gpu_model *gpu;
  gs_llm_cpu_model *cpu;
  float *logits;   /* CPU: max_batch x the shard's vocabulary rows */
  int32_t *tokens; /* this shard's tokens of the last call */
  float *hidden;   /* CPU pipeline: one micro-batch's residual stream in transit */
  uint32_t *outs;  /* CPU pipeline: a micro-batch's output rows */
  double busy;     /* pipeline: seconds computing in calls since the last reset */
  double late;     /* --inject late: seconds the shard waits before each prefill and decode */
  gs_status status;
  char error[512];
  pthread_t thread;
  int started;
} engine_shard;

struct gs_llm_engine {
  gs_backend backend;
  gs_llm_engine_config config;
  uint32_t stages;        /* config.pp, at least 1 */
  uint32_t n_shards;      /* tp x stages; 1 for a stage of a replica over processes */
  int remote;             /* one shard of a replica whose other shards are processes */
  int quit_pending;       /* remote first shard: tell the others to quit when destroyed */
  gs_comm *control;       /* remote: the job's world (calls, pipeline transfers) */
  int first_rank;         /* remote: the replica's first process */
  gs_comm_world **worlds; /* per stage: its shards' communicators (tp > 1) */
  gs_comm_world **links;  /* stages > 1: per shard, the world of it and the shard it sends to */
  engine_shard *shards;   /* n_shards */
  gs_barrier start, done;
  int barriers;           /* start and done were made */
  /* CPU backend: the shards out of the start barrier of the current call,
   * and the calls all of them left (gs_llm_engine_leave_start, engine.c). */
  _Atomic uint32_t out_of_start;
  _Atomic uint64_t started_calls;
  double call_seconds;    /* prefills and decodes since the last reset */
  const gs_llm_arrival_group *arrival; /* per stage, its shards' arrivals at each prefill's and
                             decode's collectives go here (gs_llm_engine_record_arrival),
                             or NULL; the caller's */
  /* The call the shards run. */
  engine_op op;
  size_t n;
  size_t next; /* decode: rows the next decode will take (gs_llm_engine_decode) */
  const int32_t *const *prompts;
  const uint32_t *lengths;
  float *logits_out;
  /* CPU backend state, the same for every shard. */
  size_t active;
  int32_t *last_token; /* per slot */
  uint32_t *length;    /* per slot: tokens in the cache */
  uint32_t *rows;      /* scratch: slots, positions, output rows */
  int32_t *row_tokens;
  size_t logits_rows;
};

/* The greedy token of each of n rows of `logits` (the shard's vocabulary
 * rows each) into tokens[0..n): over the stage's shards when the model is
 * split (engine.c). */
gs_status gs_llm_engine_pick_tokens(engine_shard *sh, const float *logits, size_t n,
                                    int32_t *tokens);

/* CPU: the logits of the last call in whole-vocabulary order, gathered
 * from the stage's shards; shard 0 writes them to `out` (engine.c). */
gs_status gs_llm_engine_cpu_logits(engine_shard *sh, float *out);

#endif
