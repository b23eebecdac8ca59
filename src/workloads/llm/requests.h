/* The llm request stream: seeded samples with input and output lengths
 * drawn uniformly from ranges, their prompt tokens, arrival times (all at
 * once, or at a target rate with Poisson, gamma or constant gaps), and the
 * queues that hand
 * samples to replicas: a rank's own even share (static dispatch) or one
 * shared queue that idle replicas pull from (dynamic dispatch). */
#ifndef GS_LLM_REQUESTS_H
#define GS_LLM_REQUESTS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct {
  uint32_t id;
  uint32_t input_tokens;
  uint32_t output_tokens; /* tokens to generate, >= 1 */
  double arrival;         /* seconds after the scenario starts */
} gs_llm_sample;

/* How the gaps between arrivals are drawn at a rate. */
typedef enum {
  GS_LLM_ARRIVAL_POISSON = 0, /* exponential gaps, mean 1 / rate */
  GS_LLM_ARRIVAL_GAMMA,       /* gamma gaps of shape `burstiness`, mean 1 / rate */
  GS_LLM_ARRIVAL_CONSTANT     /* every gap 1 / rate */
} gs_llm_arrival;

extern const char *const gs_llm_arrival_names[]; /* poisson, gamma, constant */

typedef struct {
  uint64_t count;
  uint32_t input_min, input_max;
  uint32_t output_min, output_max;
  double rate; /* samples per second; 0 = all arrive at 0 */
  gs_llm_arrival arrival;
  double burstiness; /* gamma's shape: 1 is Poisson, below 1 burstier, above more even */
  uint64_t seed;
} gs_llm_stream_spec;

/* The samples of a stream in id order (= arrival order); *out is allocated
 * (free()). Lengths and gaps depend only on (seed, id). */
gs_status gs_llm_stream_make(const gs_llm_stream_spec *spec, gs_llm_sample **out);

/* The prompt of sample `id`: len tokens uniform in [0, vocab). */
void gs_llm_prompt_tokens(uint64_t seed, uint32_t id, uint32_t len, uint64_t vocab, int32_t *out);

/* Even split of `count` samples over `world` ranks: rank r gets the
 * contiguous block [*begin, *begin + *n), sizes differing by at most one. */
void gs_llm_dispatch_static(uint64_t count, int world, int rank, uint64_t *begin, uint64_t *n);

/* Samples [begin, end) of a stream handed out in arrival order. A queue
 * shared by several replicas is used under its mutex. */
typedef struct {
  pthread_mutex_t mutex;
  const gs_llm_sample *samples;
  uint64_t next, end;
} gs_llm_queue;

int gs_llm_queue_init(gs_llm_queue *q, const gs_llm_sample *samples, uint64_t begin, uint64_t end);
void gs_llm_queue_destroy(gs_llm_queue *q);

/* Takes up to `max` samples that have arrived by `now` (seconds after the
 * start) into ids[] and returns how many. When none has arrived, returns 0
 * and sets *next_arrival to the earliest pending arrival, or to a negative
 * value when the queue is empty. */
size_t gs_llm_queue_take(gs_llm_queue *q, double now, size_t max, uint32_t *ids,
                         double *next_arrival);

#endif
