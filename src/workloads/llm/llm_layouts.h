/* The layouts of one run's GPUs (llm --layouts): per tensor-parallel degree
 * and pipeline depth its throughput per GPU and per user, whether it met the latency targets,
 * the Pareto frontier and the best layout meeting the targets, printed
 * after the measurements (docs/workloads/llm.md, "Layouts of a node"). */
#ifndef GS_LLM_LAYOUTS_H
#define GS_LLM_LAYOUTS_H

#include <stdio.h>

#include "workloads/llm/llm_measure.h"

/* One layout's figures from its measurement's summary. */
typedef struct {
  int tp, pp, replicas; /* GPUs of a replica: tp x pp; replicas: GPUs / (tp x pp) */
  double per_gpu;    /* tokens/s of ok requests / GPUs */
  double per_user;   /* 1 / median TPOT: a user's tokens/s while decoding */
  int met;           /* the targets met at their percentile; -1 without targets */
  double goodput_per_gpu; /* goodput tokens/s / GPUs; NaN without targets */
} gs_llm_layout;

/* The layout of summary `s`. */
void gs_llm_layout_of(const gs_llm_summary *s, gs_llm_layout *out);

/* The best layout meeting the targets among l[0..n): the highest goodput
 * tokens/s per GPU among those met; -1 when none met or there are no
 * targets. */
int gs_llm_layout_best(const gs_llm_layout *l, size_t n);

/* The layouts of the summaries i < count with summarized[i] set: a table
 * with the frontier marked, and the best layout meeting the targets. */
void gs_llm_layouts_print(FILE *out, const gs_llm_summary *summaries, const int *summarized,
                          size_t count);

#endif
