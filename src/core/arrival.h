/* Arrival skew at collectives (docs/stragglers.md, "Arrival skew"): each
 * rank's entry and exit time at every timed collective on one clock, the
 * summary of a measurement (which rank arrived last and how often, its
 * median lateness against the others with a 95% interval, the share of the
 * ranks' time in the collective spent waiting for the last arrival), the
 * rule that names the late rank only when its lateness clears the noise,
 * and the document's bounded "arrival" member (the summary plus the raw
 * times of at most GS_ARRIVAL_SAMPLE iterations). */
#ifndef GS_ARRIVAL_H
#define GS_ARRIVAL_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/json.h"
#include "core/status.h"
#include "core/types.h"

/* Iterations whose raw times a document keeps, evenly spread. */
#define GS_ARRIVAL_SAMPLE 64

/* One rank's times, seconds on the measurement's common clock. */
typedef struct {
  size_t n, capacity;
  double *entry, *exit;   /* n each; owned */
  double offset_seconds;  /* added to the rank's own clock to reach the common one (last run) */
  double error_seconds;   /* bound of that alignment's error (largest over the runs) */
  /* Device clock, where the host's call was timed too (the runner, coll):
   * iterations checked, and those whose device entry came within
   * GS_ARRIVAL_HOST_BOUND_SECONDS of the host's call (the stream had run
   * dry and waited for its host to enqueue the collective). 0 and 0 where
   * not known (host clock, llm's GPU stamps). */
  size_t host_checked, host_bound;
} gs_arrival_rank;

/* How soon after its host's call a device entry counts as the stream
 * waiting for its host: an idle stream runs an enqueued event 2-10 us
 * after the call; a stream with work queued reaches it that work's time
 * later. */
#define GS_ARRIVAL_HOST_BOUND_SECONDS 50e-6

/* A measurement's arrivals: iteration i is the i-th recorded time of
 * every rank (runs in order). When the ranks reach their collectives in
 * groups (mlp's pipeline: the replicas of each stage sum their gradients
 * among themselves), `grouped` is set and each group is summarized on its
 * own, its members in rank order (member k: the group's "rank" k). */
typedef struct gs_arrival {
  const char *clock;      /* static: "host" (monotonic clock around the call) or "device"
                             (CUDA events on the call's stream, anchored to the host clock) */
  const char *alignment;  /* static: "shared" (one host's clock) or "ping-pong" */
  size_t n_ranks;
  gs_arrival_rank ranks[GS_MAX_RANKS];
  int grouped;              /* the ranks' collectives run in the groups below */
  int group[GS_MAX_RANKS];  /* grouped: each rank's group, its pipeline stage (>= 0) */
  int group_stages;         /* grouped by replica and stage (llm: a replica's shards of one
                               stage): group g is stage g % group_stages of replica
                               g / group_stages; 0: the group number is the stage (mlp) */
} gs_arrival;

/* What the document keeps of every iteration and what the report shows. */
typedef struct {
  size_t iterations;          /* with a finite entry and exit of every rank */
  size_t n_ranks;
  size_t last_count[GS_MAX_RANKS]; /* iterations each rank arrived last (latest entry) */
  int last_rank;              /* the rank last most often (lowest on a tie); -1 none */
  double lateness;            /* its median lateness: entry - median of the others' entries */
  double lateness_low, lateness_high; /* 95% interval of that median (order statistics) */
  double rank_lateness[GS_MAX_RANKS]; /* each rank's median lateness, the same way */
  double noise;               /* 1.4826 x the MAD of last_rank's lateness */
  double alignment_error;     /* last_rank's clock error + the largest of the others' */
  double exit_spread;         /* median over iterations of the latest exit less the earliest:
                                 how unevenly the collective itself lets the ranks go */
  double wait_share;          /* sum of waits for the last arrival / sum of time in it */
  double floor;               /* the smallest lateness attributed (gs_arrival_floor); 0 none */
  double host_bound_share;    /* last_rank's iterations whose device entry waited for its
                                 host's call (host_bound / host_checked); NaN: not known */
  double period;              /* median time from one iteration's entries to the next's
                                 (each iteration's median entry); NaN below 2 iterations */
} gs_arrival_summary;

/* The share of an iteration's period below which a lateness is not worth
 * a name: a rank that costs the others under 1% of each iteration is no
 * straggler, however steady (a GPU-bound clean pipeline on 4 x H200 had
 * one replica 9 us late, every step, in steps of about 9 ms). */
#define GS_ARRIVAL_MATERIAL_SHARE 0.01

/* The smallest lateness the rule attributes on the host clock when the
 * ranks of one host outnumber its logical cores: there the scheduler
 * decides who runs, and a rank that waits out another's time slice arrives
 * late for no fault of its own (a Linux scheduling period is 6-24 ms under
 * CFS, with slices of 0.75-3 ms under EEVDF). */
#define GS_ARRIVAL_SHARED_CORES_SECONDS 0.010

/* The floor of a summary on `clock` ("host" or "device") whose busiest
 * host ran `ranks` ranks on `cores` logical cores (0: unknown):
 * GS_ARRIVAL_SHARED_CORES_SECONDS on the host clock when ranks > cores,
 * else 0. */
double gs_arrival_floor(const char *clock, int ranks, int cores);

/* A new record of n_ranks (2..GS_MAX_RANKS) ranks with room for
 * `capacity` iterations each; NULL when memory runs out (error recorded). */
gs_arrival *gs_arrival_new(size_t n_ranks, size_t capacity, const char *clock,
                           const char *alignment);

/* Frees `a` and what it owns; accepts NULL. */
void gs_arrival_free(gs_arrival *a);

/* Makes room for `more` iterations after rank r's n, growing its arrays
 * by doubling. GS_ERR_NOMEM when they cannot grow. */
gs_status gs_arrival_reserve(gs_arrival_rank *r, size_t more);

/* Appends one iteration's times to rank `r` (gs_arrival_reserve). */
gs_status gs_arrival_append(gs_arrival_rank *r, double entry, double exit);

/* 1 when every rank of `a` has at least one finite entry (a collective
 * was marked), else 0: a measurement whose steps had no collective (mlp's
 * pipeline stages talk point to point) or with a rank that failed at once
 * keeps no arrival times. A grouped `a` is recorded when one group of 2
 * or more ranks is, every rank of it: a replica that failed at once loses
 * its own group's times, not the others'. */
int gs_arrival_recorded(const gs_arrival *a);

/* Appends every rank's iterations of `from` to `into` (same n_ranks and,
 * when both are grouped, the same groups; the alignment error kept is the
 * larger; `into` takes `from`'s groups when it has none). GS_ERR_NOMEM,
 * GS_ERR_USAGE. */
gs_status gs_arrival_merge(gs_arrival *into, const gs_arrival *from);

/* The summary of `a` (docs/stragglers.md gives each definition). Iterations
 * where a rank has no finite entry or exit are left out. GS_ERR_NOMEM. */
gs_status gs_arrival_summarize(const gs_arrival *a, gs_arrival_summary *out);

/* The naming rule: last_rank when the low end of its median lateness's
 * interval is above the largest of noise, alignment error, exit spread,
 * the floor and GS_ARRIVAL_MATERIAL_SHARE of the period (and 2 or more
 * iterations were summarized); -1 ("nobody") otherwise. */
int gs_arrival_named(const gs_arrival_summary *s);

/* The threshold the rule holds the lateness's low end to. */
double gs_arrival_threshold(const gs_arrival_summary *s);

/* The measurement member "arrival" (docs/result-schema.md) of `a`: clock,
 * alignment, the summary and per rank its offset, error, last count,
 * median lateness and the entry and exit times of the sampled iterations
 * (relative to the earliest entry). NULL when memory runs out. */
cJSON *gs_arrival_to_json(const gs_arrival *a);

/* Sets the groups of `a`: rank k's collectives run among the ranks of
 * group[k] (>= 0, e.g. its pipeline stage); NULL: every rank together. */
void gs_arrival_set_groups(gs_arrival *a, const int *group);

/* Group `g`'s members of a grouped `a` as a record of their own in `view`
 * (its rank k the k-th member in rank order; it shares a's arrays: never
 * freed), their global ranks in members[0..view->n_ranks). */
void gs_arrival_group_view(const gs_arrival *a, int g, gs_arrival *view, int *members);

/* The measurement member "arrival_groups" (docs/result-schema.md) of a
 * grouped `a`: per group of 2 or more members that all recorded
 * (gs_arrival_recorded), in order of its number, an
 * object as gs_arrival_to_json's of the group's view (its "rank" the
 * member index) with "stage" (the group, or with group_stages its stage),
 * "replica" (with group_stages only) and "global_ranks" (member k's rank
 * in the measurement). NULL when memory runs out. */
cJSON *gs_arrival_groups_to_json(const gs_arrival *a);

/* The summary back from a document's "arrival" member (the report's
 * reading): GS_ERR_PARSE naming `source` when a member is missing or of
 * the wrong type. */
gs_status gs_arrival_summary_from_json(const cJSON *arrival, const char *source,
                                       gs_arrival_summary *out);

#endif
