/* The llm scenario under a launcher (scenario_mpi.h): every process's
 * outcome to every process after a run, or after a lost process what the
 * live ones completed. */
#include "workloads/llm/scenario_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arrival.h"
#include "core/check.h"

/* Under a launcher: every process's replica outcome, fixed size, for the
 * allgather over the control world. */
typedef struct {
  int32_t status;
  int32_t device;
  double cold_seconds, busy_seconds, end_seconds;
  uint64_t n_requests, forward_passes, generated_tokens;
  uint32_t stages;
  double stage_busy[GS_LLM_MAX_STAGES], pass_seconds;
  int32_t stage;  /* > 0: a following process, its place in the replica (its stage's busy
                     time, when it is a stage's first shard, at stage_busy[stage / tp]) */
  char error[1024];
} replica_header;

/* The replica process `p` runs the scenario of (the first rank of each
 * replica, part->per ranks each), or -1 (a later stage, or beyond the
 * world). */
static int replica_of(const gs_run_config *run, const gs_llm_process_part *part, int p) {
  return p < run->world_size && p % part->per == 0 ? p / part->per : -1;
}


/* This process's replica outcome (all zero when it runs none; a later
 * stage's busy time and outcome). */
static void header_of(const gs_run_config *run, const gs_llm_process_part *part,
                      const gs_llm_run_result *out, replica_header *h) {
  memset(h, 0, sizeof *h);
  const int me = run->process_rank, replica = replica_of(run, part, me);
  if (replica < 0 && me < run->world_size) {
    h->stage = me % part->per;
    h->stages = (uint32_t)(part->per / part->tp);
    if (h->stage % part->tp == 0) h->stage_busy[h->stage / part->tp] = part->stage_busy;
    h->status = (int32_t)part->status;
    snprintf(h->error, sizeof h->error, "%s", part->error);
    return;
  }
  if (replica < 0) return;
  const gs_llm_replica_result *r = &out->replicas[replica];
  h->status = (int32_t)r->status;
  h->device = r->device;
  h->cold_seconds = r->cold_seconds;
  h->busy_seconds = r->busy_seconds;
  h->end_seconds = out->seconds;
  h->n_requests = r->n_requests;
  h->forward_passes = r->forward_passes;
  h->generated_tokens = r->generated_tokens;
  h->stages = r->stages;
  memcpy(h->stage_busy, r->stage_busy, sizeof h->stage_busy);
  h->pass_seconds = r->pass_seconds;
  snprintf(h->error, sizeof h->error, "%s", r->error);
}

/* Files replica k's outcome `h` and its h->n_requests records into r. */
static gs_status absorb_header(gs_llm_replica_result *r, int k, const replica_header *h,
                               const gs_llm_request_record *requests) {
  r->rank = k;
  r->status = (gs_status)h->status;
  r->device = h->device;
  r->cold_seconds = h->cold_seconds;
  r->busy_seconds = h->busy_seconds;
  r->forward_passes = h->forward_passes;
  r->generated_tokens = h->generated_tokens;
  r->stages = h->stages;
  memcpy(r->stage_busy, h->stage_busy, sizeof r->stage_busy);
  r->pass_seconds = h->pass_seconds;
  snprintf(r->error, sizeof r->error, "%s", h->error);
  r->n_requests = (size_t)h->n_requests;
  if (r->n_requests == 0) return GS_OK;
  r->requests = malloc(r->n_requests * sizeof *r->requests);
  if (!r->requests) {
    r->n_requests = 0;
    return gs_error(GS_ERR_NOMEM, "cannot hold the samples of replica %d", k);
  }
  memcpy(r->requests, requests, r->n_requests * sizeof *r->requests);
  return GS_OK;
}

/* "rank P" and, for a replica over several ranks, its place: "rank P
 * (tensor-parallel shard J of T, pipeline stage S of N, replica R of M)",
 * each part where there is more than one. */
static void rank_text(const gs_run_config *run, const gs_llm_process_part *part, int p, char *buf,
                      size_t size) {
  if (part->per <= 1) {
    snprintf(buf, size, "rank %d", p);
    return;
  }
  const int at = p % part->per, stages = part->per / part->tp;
  char shard[64] = "", stage[64] = "";
  if (part->tp > 1)
    snprintf(shard, sizeof shard, "tensor-parallel shard %d of %d, ", at % part->tp, part->tp);
  if (stages > 1) snprintf(stage, sizeof stage, "pipeline stage %d of %d, ", at / part->tp, stages);
  snprintf(buf, size, "rank %d (%s%sreplica %d of %d)", p, shard, stage, p / part->per,
           run->world_size / part->per);
}

/* Replica k's following processes into its record: their stages' busy
 * seconds, and one that failed while the replica did not. */
static void absorb_stages(const gs_run_config *run, const gs_llm_process_part *part,
                          gs_llm_replica_result *r, int k, const replica_header *all) {
  for (int s = 1; s < part->per; s++) {
    const replica_header *h = &all[k * part->per + s];
    if (h->stage != s) continue;
    r->stage_busy[s / part->tp] += h->stage_busy[s / part->tp];
    if (r->status == GS_OK && h->status != GS_OK) {
      char who[160];
      rank_text(run, part, k * part->per + s, who, sizeof who);
      r->status = (gs_status)h->status;
      snprintf(r->error, sizeof r->error, "%s: %s", who, h->error);
    }
  }
}

gs_status gs_llm_scenario_gather(const gs_run_config *run, const gs_llm_process_part *part,
                                 gs_llm_run_result *out) {
  gs_comm *control = gs_comm_world_rank(run->control, 0);
  const int procs = gs_comm_world_size(run->control);
  const int mine_k = replica_of(run, part, run->process_rank), world = out->world_size;
  replica_header mine;
  header_of(run, part, out, &mine);
  replica_header *all = calloc((size_t)procs, sizeof *all);
  if (!all) return gs_error(GS_ERR_NOMEM, "cannot gather %d replica results", procs);
  gs_status status = gs_comm_allgather(control, &mine, all, sizeof mine, GS_DTYPE_UINT8, NULL);
  int comm_failed = status != GS_OK;
  uint64_t most = 0;
  for (int k = 0; status == GS_OK && k < procs; k++)
    if (all[k].n_requests > most) most = all[k].n_requests;
  const size_t bytes = (size_t)most * sizeof(gs_llm_request_record);
  gs_llm_request_record *send = most ? calloc(most, sizeof *send) : NULL;
  gs_llm_request_record *recv = most ? calloc((size_t)procs * most, sizeof *recv) : NULL;
  if (status == GS_OK && most && (!send || !recv))
    status = gs_error(GS_ERR_NOMEM, "cannot gather %llu samples per replica",
                      (unsigned long long)most);
  if (status == GS_OK && most) {
    if (mine_k >= 0 && out->replicas[mine_k].n_requests)
      memcpy(send, out->replicas[mine_k].requests,
             out->replicas[mine_k].n_requests * sizeof(gs_llm_request_record));
    status = gs_comm_allgather(control, send, recv, bytes, GS_DTYPE_UINT8, NULL);
    comm_failed = status != GS_OK;
  }
  for (int k = 0; status == GS_OK && k < world; k++) {
    gs_llm_replica_result *r = &out->replicas[k];
    const int p = k * part->per; /* the replica's process */
    const replica_header *h = &all[p];
    if (out->seconds < h->end_seconds) out->seconds = h->end_seconds;
    if (k != mine_k) status = absorb_header(r, k, h, recv + (size_t)p * most);
    absorb_stages(run, part, r, k, all);
  }
  // A broken allgather cannot be cancelled: MPI may still write into its
  // buffers while the survivors exchange their results, so they stay.
  if (comm_failed) return status;
  free(all);
  free(send);
  free(recv);
  return status;
}

/* Marks replica r, stopped by the job's end, as stopped because rank
 * `lost` was lost (its requests completed until then are kept). */
static void stopped_by(gs_llm_replica_result *r, int lost) {
  if (r->status != GS_ERR_INTERRUPTED && r->status != GS_ERR_TIMEOUT && r->status != GS_ERR_MPI)
    return;
  r->status = GS_ERR_ABORTED;
  snprintf(r->error, sizeof r->error, "stopped after %zu requests because rank %d was lost",
           r->n_requests, lost);
}

/* Under a launcher, after the gather broke with `status` (a process was
 * lost): names the lost rank (gs_comm_find_lost) and exchanges the live
 * replicas' results point to point (gs_comm_world_salvage), so that the
 * requests every live replica completed are kept. The lost replica's
 * record says it was lost; one whose result did not arrive says so.
 * Returns GS_ERR_RANK_LOST naming the rank, else `status`. */
gs_status gs_llm_scenario_salvage(const gs_run_config *run, const gs_llm_process_part *part,
                                  gs_llm_run_result *out, gs_status status) {
  char how[GS_TEXT_LONG] = "", who[160] = "";
  const int lost = gs_comm_find_lost(run->control, how, sizeof how);
  const int procs = gs_comm_world_size(run->control);
  const int me = run->process_rank, world = out->world_size;
  const int mine_k = replica_of(run, part, me), lost_k = lost >= 0 ? lost / part->per : -1;
  if (lost >= 0) rank_text(run, part, lost, who, sizeof who);
  const size_t n = mine_k >= 0 ? out->replicas[mine_k].n_requests : 0;
  const size_t bytes = sizeof(replica_header) + n * sizeof(gs_llm_request_record);
  replica_header *mine = calloc(1, bytes);
  void **recv = calloc((size_t)procs, sizeof *recv);
  size_t *sizes = calloc((size_t)procs, sizeof *sizes);
  gs_status s = GS_OK;
  if (!mine || !recv || !sizes) {
    s = gs_error(GS_ERR_NOMEM, "cannot salvage the replicas' results");
  } else {
    header_of(run, part, out, mine);
    if (n) memcpy(mine + 1, out->replicas[mine_k].requests, n * sizeof(gs_llm_request_record));
    s = gs_comm_world_salvage(run->control, mine, bytes, recv, sizes);
  }
  for (int k = 0; s == GS_OK && k < world; k++) {
    gs_llm_replica_result *r = &out->replicas[k];
    const int p = k * part->per; /* the replica's process */
    const replica_header *h = recv[p];
    const size_t records = sizes[p] >= sizeof *h ? (sizes[p] - sizeof *h) / sizeof *r->requests : 0;
    if (k == mine_k) {
      // This replica is the lost one when a signal stopped it alone.
    } else if (h && records == h->n_requests) {
      // A replica stopped by a signal of its own sent what it completed.
      if (out->seconds < h->end_seconds) out->seconds = h->end_seconds;
      s = absorb_header(r, k, h, (const gs_llm_request_record *)(h + 1));
    } else if (k == lost_k) {
      // Marked below.
    } else {
      r->status = GS_ERR_ABORTED;
      snprintf(r->error, sizeof r->error, "its results did not reach process %d after the job "
               "broke (%s)", me, gs_status_name(status));
    }
    if (k == lost_k) {
      r->status = GS_ERR_RANK_LOST;
      snprintf(r->error, sizeof r->error, "%s on %s lost: %s", who, run->places[lost].host, how);
    } else if (lost >= 0) {
      stopped_by(r, lost);
    }
  }
  for (int k = 0; recv && k < procs; k++) free(recv[k]);
  free(recv);
  free(sizes);
  free(mine);
  if (s != GS_OK) return s;
  if (lost < 0) return status;
  return gs_error(GS_ERR_RANK_LOST, "%s on %s lost: %s", who, run->places[lost].host, how);
}

/* One shard's arrival series, fixed size, for the allgather. */
typedef struct {
  uint64_t n;
  double offset_seconds, error_seconds;
} arrival_header;

/* Process p's series: group p / tp, rank p % tp (every group has tp). */
static gs_arrival_rank *series_of(gs_llm_arrival_group *groups, int p) {
  const int tp = (int)groups[0].arrival->n_ranks;
  return &groups[p / tp].arrival->ranks[p % tp];
}

gs_status gs_llm_scenario_gather_arrival(const gs_run_config *run, gs_llm_arrival_group *groups,
                                         size_t n_groups) {
  gs_comm *control = gs_comm_world_rank(run->control, 0);
  const int procs = gs_comm_world_size(run->control), me = run->process_rank;
  const int shards = (int)(n_groups * groups[0].arrival->n_ranks), mine = me < shards ? me : -1;
  arrival_header h = {0};
  if (mine >= 0) {
    const gs_arrival_rank *r = series_of(groups, mine);
    h = (arrival_header){r->n, r->offset_seconds, r->error_seconds};
  }
  arrival_header *all = calloc((size_t)procs, sizeof *all);
  if (!all) return gs_error(GS_ERR_NOMEM, "cannot gather %d arrival series", procs);
  gs_status status = gs_comm_allgather(control, &h, all, sizeof h, GS_DTYPE_UINT8, NULL);
  if (status != GS_OK) return status; /* MPI may still write `all`: it stays */
  uint64_t most = 0;
  for (int p = 0; p < shards && p < procs; p++)
    if (all[p].n > most) most = all[p].n;
  double *send = calloc(2 * most + 1, sizeof *send);
  double *recv = calloc((size_t)procs * (2 * most + 1), sizeof *recv);
  if (!send || !recv) {
    free(all);
    free(send);
    free(recv);
    return gs_error(GS_ERR_NOMEM, "cannot gather %llu arrival times per shard",
                    (unsigned long long)most);
  }
  if (mine >= 0) {
    memcpy(send, series_of(groups, mine)->entry, h.n * sizeof *send);
    memcpy(send + most, series_of(groups, mine)->exit, h.n * sizeof *send);
  }
  status = gs_comm_allgather(control, send, recv, 2 * most + 1, GS_DTYPE_DOUBLE, NULL);
  if (status != GS_OK) return status; /* the buffers stay, as above */
  for (int p = 0; p < shards && p < procs && status == GS_OK; p++) {
    if (p == mine) continue;
    gs_arrival_rank *r = series_of(groups, p);
    const double *from = recv + (size_t)p * (2 * most + 1);
    r->n = 0;
    r->offset_seconds = all[p].offset_seconds;
    r->error_seconds = all[p].error_seconds;
    for (uint64_t i = 0; i < all[p].n && status == GS_OK; i++)
      status = gs_arrival_append(r, from[i], from[most + i]);
  }
  free(all);
  free(send);
  free(recv);
  return status;
}
