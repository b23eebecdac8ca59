/* The llm request stream and the dispatch queues (see requests.h). */
#include "workloads/llm/requests.h"

#include <math.h>
#include <stdlib.h>

#include "core/rng.h"

/* Streams of gs_rng: 2 id for lengths, 2 id + 1 for prompts, one for gaps. */
#define GS_LLM_GAP_STREAM UINT64_C(0xA77A1)

const char *const gs_llm_arrival_names[] = {"poisson", "gamma", "constant", NULL};

/* A standard normal draw (Box-Muller; 1 - u keeps the logarithm finite). */
static double normal_draw(gs_rng *rng) {
  const double u = 1.0 - gs_rng_double(rng), v = gs_rng_double(rng);
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* A gamma draw of shape k and scale 1 (Marsaglia and Tsang's squeeze; a
 * shape below 1 from shape k + 1 times U^(1/k)). */
static double gamma_draw(gs_rng *rng, double k) {
  if (k < 1.0) {
    const double u = 1.0 - gs_rng_double(rng);
    return gamma_draw(rng, k + 1.0) * pow(u, 1.0 / k);
  }
  const double d = k - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = normal_draw(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = 1.0 - gs_rng_double(rng);
    if (log(u) < 0.5 * x * x + d - d * v + d * log(v)) return d * v;
  }
}

/* The gap before the next arrival at spec->rate. */
static double gap_draw(const gs_llm_stream_spec *spec, gs_rng *gaps) {
  switch (spec->arrival) {
    case GS_LLM_ARRIVAL_GAMMA:
      return gamma_draw(gaps, spec->burstiness) / (spec->burstiness * spec->rate);
    case GS_LLM_ARRIVAL_CONSTANT:
      return 1.0 / spec->rate;
    case GS_LLM_ARRIVAL_POISSON:
      break;
  }
  return -log(1.0 - gs_rng_double(gaps)) / spec->rate;
}

gs_status gs_llm_stream_make(const gs_llm_stream_spec *spec, gs_llm_sample **out) {
  *out = NULL;
  if (spec->count == 0 || spec->count > UINT32_MAX || spec->input_min < 1 ||
      spec->input_min > spec->input_max || spec->output_min < 1 ||
      spec->output_min > spec->output_max || spec->rate < 0.0 ||
      (spec->arrival == GS_LLM_ARRIVAL_GAMMA && !(spec->burstiness > 0.0)))
    GS_BUG("bad llm stream: %llu samples, input %u-%u, output %u-%u",
           (unsigned long long)spec->count, spec->input_min, spec->input_max, spec->output_min,
           spec->output_max);
  gs_llm_sample *s = calloc(spec->count, sizeof *s);
  if (!s)
    return gs_error(GS_ERR_NOMEM, "cannot allocate %llu samples", (unsigned long long)spec->count);
  gs_rng gaps;
  gs_rng_seed(&gaps, spec->seed, GS_LLM_GAP_STREAM);
  double t = 0.0;
  for (uint64_t i = 0; i < spec->count; i++) {
    gs_rng r;
    gs_rng_seed(&r, spec->seed, 2 * i);
    s[i].id = (uint32_t)i;
    s[i].input_tokens =
        spec->input_min + (uint32_t)gs_rng_below(&r, spec->input_max - spec->input_min + 1u);
    s[i].output_tokens =
        spec->output_min + (uint32_t)gs_rng_below(&r, spec->output_max - spec->output_min + 1u);
    if (spec->rate > 0.0) {
      // Exponential gaps with mean 1/rate make a Poisson process (gamma of
      // shape 1); the first sample also waits one gap, as LoadGen's
      // schedule does.
      t += gap_draw(spec, &gaps);
      s[i].arrival = t;
    }
  }
  *out = s;
  return GS_OK;
}

void gs_llm_prompt_tokens(uint64_t seed, uint32_t id, uint32_t len, uint64_t vocab, int32_t *out) {
  gs_rng r;
  gs_rng_seed(&r, seed, 2 * (uint64_t)id + 1);
  for (uint32_t i = 0; i < len; i++) out[i] = (int32_t)gs_rng_below(&r, vocab);
}

void gs_llm_dispatch_static(uint64_t count, int world, int rank, uint64_t *begin, uint64_t *n) {
  uint64_t w = (uint64_t)world, k = (uint64_t)rank;
  uint64_t base = count / w, extra = count % w;
  *begin = k * base + (k < extra ? k : extra);
  *n = base + (k < extra ? 1 : 0);
}

int gs_llm_queue_init(gs_llm_queue *q, const gs_llm_sample *samples, uint64_t begin, uint64_t end) {
  q->samples = samples;
  q->next = begin;
  q->end = end;
  return pthread_mutex_init(&q->mutex, NULL);
}

void gs_llm_queue_destroy(gs_llm_queue *q) {
  pthread_mutex_destroy(&q->mutex);
}

size_t gs_llm_queue_take(gs_llm_queue *q, double now, size_t max, uint32_t *ids,
                         double *next_arrival) {
  size_t n = 0;
  pthread_mutex_lock(&q->mutex);
  while (n < max && q->next < q->end && q->samples[q->next].arrival <= now)
    ids[n++] = q->samples[q->next++].id;
  *next_arrival = q->next < q->end ? q->samples[q->next].arrival : -1.0;
  pthread_mutex_unlock(&q->mutex);
  return n;
}
