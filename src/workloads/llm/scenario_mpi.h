/* The llm scenario under a launcher (one process per rank,
 * docs/multinode.md): after a run every process's outcome goes to every
 * process, so that the document holds every replica wherever it is
 * written; after a lost process the live ones exchange what they
 * completed and the lost rank is named. A replica spans `per` ranks
 * (pipeline stages of tensor-parallel shards): its first rank's process
 * runs its scenario, the others follow its calls (engine.h,
 * gs_llm_engine_follow) and contribute their stage's busy time. Called by scenario.c from the main thread. */
#ifndef GS_LLM_SCENARIO_MPI_H
#define GS_LLM_SCENARIO_MPI_H

#include "workloads/llm/scenario.h"

/* What this process adds besides a replica it runs. */
typedef struct {
  int per;           /* ranks per replica (tp x pp); 1 without shards or stages */
  int tp;            /* shards per pipeline stage (tensor parallelism), >= 1 */
  double stage_busy; /* a following process: the seconds its stage computed (its first shard) */
  gs_status status;  /* a following process: how following its replica ended */
  char error[1024];
} gs_llm_process_part;

/* Brings every replica's result (samples included) and its later stages'
 * busy time to every process (out->world_size replicas). */
gs_status gs_llm_scenario_gather(const gs_run_config *run, const gs_llm_process_part *part,
                                 gs_llm_run_result *out);

/* Shards over processes: every shard's arrival series (process p's in
 * groups[p / tp].arrival->ranks[p % tp], its offset and error; every
 * group of tp ranks) to every process, so that each group holds all its
 * shards'. */
gs_status gs_llm_scenario_gather_arrival(const gs_run_config *run, gs_llm_arrival_group *groups,
                                         size_t n_groups);

/* After the gather broke with `status` (a process was lost): names the
 * lost rank (gs_comm_find_lost; with shards or stages, its shard, stage
 * and replica) and
 * exchanges the live replicas' results point to point, so that the
 * requests every live replica completed are kept. The lost rank's replica
 * says it was lost; one whose result did not arrive says so. Returns
 * GS_ERR_RANK_LOST naming the rank, else `status`. */
gs_status gs_llm_scenario_salvage(const gs_run_config *run, const gs_llm_process_part *part,
                                  gs_llm_run_result *out, gs_status status);

#endif
