/* The per-call samples of a pipelined llm replica (--pp), bounded: each
 * prefill and decode call's seconds, each stage's busy seconds in it, and
 * the rows, micro-batches and sequences it moved, gathered into at most
 * GS_LLM_PP_SAMPLES samples of equal numbers of consecutive calls (two
 * neighbours merge when they would overflow). They give the bubble and the
 * stage imbalance their intervals (core/bubble.h) and the report the
 * transfers to price; the document keeps them per run and replica
 * (docs/result-schema.md, runs[].ranks[].pipeline_samples). */
#ifndef GS_LLM_PP_SAMPLES_H
#define GS_LLM_PP_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/json.h"
#include "workloads/llm/model.h"

/* At most this many samples per replica and run. */
#define GS_LLM_PP_SAMPLES 128

typedef struct gs_llm_pp_samples {
  uint32_t stages;
  uint64_t width;        /* calls per sample (a power of 2; the last sample may hold fewer) */
  size_t n;              /* samples held */
  uint64_t calls[GS_LLM_PP_SAMPLES];
  double seconds[GS_LLM_PP_SAMPLES];   /* the calls' time, posting to end */
  double rows[GS_LLM_PP_SAMPLES];      /* residual-stream rows sent across each boundary */
  double groups[GS_LLM_PP_SAMPLES];    /* micro-batches: transfers across each boundary */
  double sequences[GS_LLM_PP_SAMPLES]; /* sequences: the tokens sent back to the first stage */
  double *busy;          /* stages x GS_LLM_PP_SAMPLES: busy[s * GS_LLM_PP_SAMPLES + i] */
  double total_seconds, total_busy[GS_LLM_MAX_STAGES]; /* the engine's running totals at the last call */
} gs_llm_pp_samples;

/* A new record for `stages` (2 .. GS_LLM_MAX_STAGES) stages, or NULL (out of memory). */
gs_llm_pp_samples *gs_llm_pp_samples_new(uint32_t stages);

/* Frees `s` (NULL accepted). */
void gs_llm_pp_samples_free(gs_llm_pp_samples *s);

/* Adds one call: its engine totals after the call (`seconds` of calls and
 * each stage's busy seconds, running sums since the engine's last reset,
 * which is when the record was made), and what it moved. */
void gs_llm_pp_samples_add(gs_llm_pp_samples *s, double seconds, const double *busy, double rows,
                           double groups, double sequences);

/* Adds "pipeline_samples" to the rank record `rank` (nothing for NULL or
 * an empty record). */
void gs_llm_pp_samples_to_json(gs_json_build *b, cJSON *rank, const gs_llm_pp_samples *s);

#endif
