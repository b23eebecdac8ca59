/* Server rates measured in turn within one llm measurement: a list given
 * by --rates, or the rates the search of rate_search.c chooses
 * (--find-max-rate). Each rate is --runs scenario runs judged against the
 * latency targets (core/slo) and against the load (a rate served more
 * slowly than it arrived is missed whatever its latencies); the
 * measurement keeps the requests of one rate (the highest that met the
 * targets, else the lowest measured) and
 * records every rate's figures in "llm.rates" (docs/workloads/llm.md,
 * "Rate sweeps and the highest rate"). */
#ifndef GS_LLM_RATES_H
#define GS_LLM_RATES_H

#include <stdio.h>

#include "core/json.h"
#include "core/parse.h"
#include "core/slo.h"
#include "workloads/llm/llm_options.h"
#include "workloads/llm/rate_search.h"
#include "workloads/llm/scenario.h"

/* The tolerance of the search: the bracket it stops at, relative. */
#define GS_LLM_RATE_TOLERANCE 0.05

/* One measured rate. */
typedef struct {
  double rate;             /* target arrivals per second */
  double achieved_rate;    /* requests that are not cold / run seconds */
  double tokens_per_second; /* of ok requests over the run seconds */
  double ratio;            /* worst targeted percentile over its target (<= 1: within them) */
  int met;                 /* ratio <= 1 and the load sustained (core/slo.h) */
  gs_slo_goodput goodput;  /* against the targets, with the load */
  gs_status status;        /* of its runs */
} gs_llm_rate_point;

typedef struct {
  int search;              /* 1: --find-max-rate; 0: --rates */
  size_t n;
  gs_llm_rate_point points[GS_LIST_MAX]; /* in the order measured */
  gs_rate_search_result result;          /* search only */
  double kept_rate;        /* the rate whose requests the measurement holds */
  uint64_t stream;         /* requests a run */
  uint64_t slots;          /* requests the layout serves at once: replicas x batch */
} gs_llm_rate_plan;

/* Measures the rates of `o` (--rates or the search from --rate) with the
 * scenario `sc` over `config`; the runs of the rate kept are handed to
 * *runs (config->runs of them; the caller frees each with
 * gs_llm_run_result_free, then the array) and *n_runs, every rate's
 * figures to *plan. A rate whose runs fail ends the plan with that status
 * (its runs are the ones kept, so that the failure is recorded). */
gs_status gs_llm_rates_measure(const gs_llm_options *o, const gs_run_config *config,
                               const gs_llm_scenario_config *sc, gs_llm_rate_plan *plan,
                               gs_llm_run_result **runs, size_t *n_runs);

/* The member "rates" of `llm`: mode, each point (with its goodput against
 * `slo`), and for the search the highest rate met with its bracket. */
void gs_llm_rates_to_json(gs_json_build *b, cJSON *llm, const gs_llm_rate_plan *plan,
                          const gs_slo *slo);

/* The terminal lines of a plan: one per rate and the answer. */
void gs_llm_rates_print(FILE *out, const gs_llm_rate_plan *plan, const gs_slo *slo);

#endif
