/* The bounded per-call samples of a pipelined llm replica (llm_pp_samples.h). */
#include "workloads/llm/llm_pp_samples.h"

#include <stdlib.h>
#include <string.h>

#include "core/status.h"

gs_llm_pp_samples *gs_llm_pp_samples_new(uint32_t stages) {
  if (stages < 2 || stages > GS_LLM_MAX_STAGES) GS_BUG("llm pipeline samples of %u stages", stages);
  gs_llm_pp_samples *s = calloc(1, sizeof *s);
  if (s) s->busy = calloc((size_t)stages * GS_LLM_PP_SAMPLES, sizeof *s->busy);
  if (!s || !s->busy) {
    gs_llm_pp_samples_free(s);
    return NULL;
  }
  s->stages = stages;
  s->width = 1;
  return s;
}

void gs_llm_pp_samples_free(gs_llm_pp_samples *s) {
  if (!s) return;
  free(s->busy);
  free(s);
}

/* Sample j += sample i (both of `s`). */
static void merge_into(gs_llm_pp_samples *s, size_t j, size_t i) {
  s->calls[j] += s->calls[i];
  s->seconds[j] += s->seconds[i];
  s->rows[j] += s->rows[i];
  s->groups[j] += s->groups[i];
  s->sequences[j] += s->sequences[i];
  for (uint32_t st = 0; st < s->stages; st++)
    s->busy[st * GS_LLM_PP_SAMPLES + j] += s->busy[st * GS_LLM_PP_SAMPLES + i];
}

/* Sample j = sample i. */
static void move_to(gs_llm_pp_samples *s, size_t j, size_t i) {
  s->calls[j] = s->calls[i];
  s->seconds[j] = s->seconds[i];
  s->rows[j] = s->rows[i];
  s->groups[j] = s->groups[i];
  s->sequences[j] = s->sequences[i];
  for (uint32_t st = 0; st < s->stages; st++)
    s->busy[st * GS_LLM_PP_SAMPLES + j] = s->busy[st * GS_LLM_PP_SAMPLES + i];
}

void gs_llm_pp_samples_add(gs_llm_pp_samples *s, double seconds, const double *busy, double rows,
                           double groups, double sequences) {
  if (s->n == 0 || s->calls[s->n - 1] == s->width) {
    if (s->n == GS_LLM_PP_SAMPLES) {
      // Full: neighbours merge, each sample now holds twice the calls.
      for (size_t i = 0; i < GS_LLM_PP_SAMPLES / 2; i++) {
        move_to(s, i, 2 * i);
        merge_into(s, i, 2 * i + 1);
      }
      s->n = GS_LLM_PP_SAMPLES / 2;
      s->width *= 2;
    }
    const size_t i = s->n++;
    s->calls[i] = 0;
    s->seconds[i] = s->rows[i] = s->groups[i] = s->sequences[i] = 0.0;
    for (uint32_t st = 0; st < s->stages; st++) s->busy[st * GS_LLM_PP_SAMPLES + i] = 0.0;
  }
  const size_t i = s->n - 1;
  s->calls[i]++;
  s->seconds[i] += seconds - s->total_seconds;
  s->total_seconds = seconds;
  for (uint32_t st = 0; st < s->stages; st++) {
    s->busy[st * GS_LLM_PP_SAMPLES + i] += busy[st] - s->total_busy[st];
    s->total_busy[st] = busy[st];
  }
  s->rows[i] += rows;
  s->groups[i] += groups;
  s->sequences[i] += sequences;
}

void gs_llm_pp_samples_to_json(gs_json_build *b, cJSON *rank, const gs_llm_pp_samples *s) {
  if (!s || s->n == 0) return;
  cJSON *o = gs_json_put_object(b, rank, "pipeline_samples");
  gs_json_put_number(b, o, "calls_per_sample", (double)s->width);
  cJSON *calls = gs_json_put_array(b, o, "calls"), *secs = gs_json_put_array(b, o, "seconds");
  cJSON *rows = gs_json_put_array(b, o, "rows"), *groups = gs_json_put_array(b, o, "micro_batches");
  cJSON *seqs = gs_json_put_array(b, o, "sequences");
  for (size_t i = 0; !b->failed && i < s->n; i++) {
    gs_json_append_number(b, calls, (double)s->calls[i]);
    gs_json_append_number(b, secs, s->seconds[i]);
    gs_json_append_number(b, rows, s->rows[i]);
    gs_json_append_number(b, groups, s->groups[i]);
    gs_json_append_number(b, seqs, s->sequences[i]);
  }
  cJSON *busy = gs_json_put_array(b, o, "stage_busy_seconds");
  for (uint32_t st = 0; !b->failed && st < s->stages; st++) {
    cJSON *one = gs_json_check(b, cJSON_CreateArray());
    for (size_t i = 0; !b->failed && i < s->n; i++)
      gs_json_append_number(b, one, s->busy[st * GS_LLM_PP_SAMPLES + i]);
    gs_json_append(b, busy, one);
  }
}
