/* One measurement as the report reads it: a row (the world size, step
 * statistics, throughput, its ranks and hosts, the "why not N x" split)
 * and the parts of it that belong to one feature. The read room fills it
 * from a result document (read.h); every room above reads it. Every number
 * and its formula is written down in docs/report.md; the field names here
 * match that page. */
#ifndef GS_REPORT_READ_ROW_H
#define GS_REPORT_READ_ROW_H

#include <stddef.h>
#include <stdint.h>

#include "core/scaling.h"
#include "core/slo.h"
#include "core/stats.h"
#include "core/status.h"
#include "core/arrival.h"
#include "core/bubble.h"
#include "core/straggler.h"

/* Default rank-mark thresholds: relative deviation of a rank's throughput
 * from the median rank throughput, as fractions (0.05 = 5%). */
#define GS_REPORT_MODERATE_DEFAULT 0.05
#define GS_REPORT_CRITICAL_DEFAULT 0.15
/* A sample counts as "stable" when within this fraction of its rank's mean. */
#define GS_REPORT_STABLE_BAND 0.15
/* A rank's cold start is flagged when first iteration / median exceeds this. */
#define GS_REPORT_COLD_FLAG 2.0
/* "Warm up longer" when a rank's first timed sample is above this many
 * times its median (gs_report_needs_warmup; docs/report.md). */
#define GS_REPORT_WARMUP_FLAG GS_REPORT_COLD_FLAG
/* A rank or host whose share of successful requests is below these is
 * moderate / critical, whatever its throughput. */
#define GS_REPORT_SUCCESS_MODERATE 0.99
#define GS_REPORT_SUCCESS_CRITICAL 0.90
/* "Consider a larger batch" when GPU utilization or memory use (mean over the
 * ranks, from telemetry) is below this share. */
#define GS_REPORT_LOW_USE 0.50
/* "Transport issue" when the best measured bus bandwidth of a collective is
 * below this share of the link's theoretical bandwidth. */
#define GS_REPORT_LOW_BUSBW 0.50
/* An ingested (or measured) bus bandwidth disagrees with algbw x the op's
 * bus factor (core/coll_model) when it is off by more than this share of
 * the expected figure and by more than the rounding of nccl-tests' two
 * decimals in GB/s (GS_REPORT_BUSBW_ROUNDING bytes/s on each of algbw and
 * busbw). docs/report.md, "Collectives". */
#define GS_REPORT_BUSBW_TOLERANCE 0.01
#define GS_REPORT_BUSBW_ROUNDING 5e6

typedef struct {
  double moderate; /* fraction; deviation above it is "moderate" */
  double critical; /* fraction; deviation above it is "critical" */
} gs_report_thresholds;

typedef enum {
  GS_MARK_NONE = 0, /* no throughput (no samples): not marked */
  GS_MARK_GOOD,
  GS_MARK_MODERATE,
  GS_MARK_CRITICAL
} gs_rank_mark;

/* "good", "moderate", "critical" or "n/a". */
const char *gs_rank_mark_name(gs_rank_mark mark);

/* One rank of an ingested LoadGen measurement, from its "mlperf" object
 * (docs/ingest.md); seconds and per-second figures, NaN where the log has
 * none. */
typedef struct {
  int present;               /* 1: the rank has an "mlperf" object */
  int valid;                 /* 1 VALID, 0 INVALID, -1 not recorded */
  const char *scenario;      /* LoadGen's spelling ("Offline"), or NULL; points into the document */
  const char *failed;        /* failed_criteria ("min duration not satisfied"), or NULL */
  double samples_per_second; /* throughput_samples_per_second */
  double tokens_per_second;
  double query_count;
  double lat_mean, lat_p50, lat_p90, lat_p99, lat_max; /* latency_seconds */
  double ttft_p50, ttft_p99; /* first_token_latency_seconds */
  double tpot_p50, tpot_p99; /* time_per_output_token_seconds */
} gs_report_loadgen;

/* One rank of one measurement, pooled over the measurement's runs. Doubles
 * that are not available are NaN. */
typedef struct {
  int rank;
  char status[32];           /* first non-"ok" status over the runs, else "ok" */
  const char *error;         /* that run's error text, or NULL; points into the document */
  const char *clock;         /* "device", "wall" or "mixed": which samples were used */
  uint64_t items_per_step;   /* the rank's share (from its first run) */
  size_t n;                  /* samples used */
  double mean, min, max, stddev, median;
  double stable_share;       /* samples within GS_REPORT_STABLE_BAND of mean / n */
  double throughput;         /* items_per_step / mean */
  double deviation;          /* |throughput - median rank throughput| / median */
  gs_rank_mark mark;
  double first_seconds;      /* first_iteration_seconds of the first run that has one */
  double cold_ratio;         /* first_seconds / median */
  int cold_flag;             /* cold_ratio > GS_REPORT_COLD_FLAG */
  double first_sample_ratio; /* first timed sample of the first run / median */
  int first_sample_flag;     /* first_sample_ratio > GS_REPORT_COLD_FLAG */
  const char *host;          /* the rank's "host" (first run), or NULL; points into the document */
  /* From the rank's "requests" (all runs); zero counts and NaN when absent. */
  size_t requests, requests_ok, requests_failed, requests_timed_out, cold_requests;
  size_t cold_outliers;      /* cold requests slower than GS_REPORT_COLD_FLAG x median ok latency */
  double success_rate;       /* requests_ok / requests; else 1 - failed_samples / samples
                                when the rank recorded failed samples (fail fault) */
  uint64_t failed_samples;   /* the rank's "failed_samples" over all runs */
  uint64_t samples_taken;    /* its timed samples over all runs (failed ones included) */
  double tokens_per_second;  /* output tokens of ok requests / the rank's busy seconds
                                (llm.ranks[].busy_seconds; else the sum of its samples) */
  int injected;              /* 1: the measurement's "faults" name this rank */
  int injected_delay;        /* 1: one of them delays its first step (a planned cold start) */
  /* From the measurement's "telemetry" entry of this rank; NaN when absent. */
  double memory_used_bytes;  /* memory_used_bytes.mean */
  double memory_total_bytes; /* environment.gpus[device].memory_bytes */
  double utilization;        /* utilization_percent.mean / 100 */
  double telemetry_seconds;  /* samples x interval_seconds: the window those means cover */
  gs_report_loadgen loadgen; /* ingested LoadGen figures (present 0 otherwise) */
  double *samples;           /* with GS_REPORT_ROW_SAMPLES: the n samples above (any order);
                                owned; else NULL */
} gs_report_rank;

/* The ranks of one host in one measurement, their samples pooled. */
typedef struct {
  char name[128];            /* "host" of its ranks ("-" when not recorded) */
  size_t n_ranks;
  size_t n;                  /* samples */
  double mean, min, max, stddev, stable_share;
  double throughput;         /* sum of its ranks' throughputs */
  double per_rank;           /* throughput / n_ranks (compared between hosts) */
  double deviation;          /* |per_rank - median per_rank| / median */
  size_t requests, requests_ok;
  double success_rate, tokens_per_second, memory_used_bytes;
  gs_rank_mark mark;
  size_t cold_ranks;         /* ranks with a cold flag or slow first sample */
} gs_report_host;

/* Why not N x: the mean step split into parts that add up to it (see
 * docs/report.md). Each part is the mean over ranks and iterations. */
typedef struct {
  int available;             /* 0: no per-iteration rank samples */
  int comm_measured;         /* 1: the ranks recorded comm_seconds */
  int device_clock;          /* 1: device_seconds recorded (else host overhead is 0) */
  size_t samples;            /* (rank, iteration) pairs used */
  double step;               /* mean step time */
  double compute;            /* device - comm */
  double comm;               /* exposed communication */
  double imbalance;          /* step - rank wall time (waiting for the slowest rank) */
  double host;               /* wall - device */
  double ideal_step;         /* T(1) / N (strong) or T(1) (weak); NaN without baseline */
  /* What each part lost against its share of the 1-rank step's part, the
   * compute efficiency and the main loss (set with ideal_step). */
  int has_losses;
  gs_scaling_losses losses;
} gs_report_breakdown;

/* The parts of a row that belong to one feature; each is read by its own
 * reader (read.h) and is empty (present 0, NaN, NULL) where the
 * measurement has no such part. */

/* Collective measurements ("workload": "coll"; docs/report.md,
 * "Collectives"). */
typedef struct {
  int present;               /* 1: a collective measurement */
  const char *op;            /* collective.op or NULL */
  double bytes;              /* collective.bytes */
  const char *dtype;         /* collective.dtype or NULL */
  const char *redop;         /* collective.redop or NULL (no reduction) */
  double root;               /* collective.root, NaN when null (no root) */
  int in_place;              /* collective.in_place: 1 in place, 0 out of place, -1 not recorded */
  double busbw;              /* bytes/s */
  double algbw;              /* bytes/s */
  double link_bandwidth;     /* theoretical bytes/s of the best GPU link (topology), NaN unknown */
  double time;               /* collective.time_seconds (one op), NaN when not recorded */
  double busbw_factor;       /* the op's bus factor at world_size (core/coll_model), NaN unknown */
  double busbw_expected;     /* algbw x busbw_factor; NaN when either is unknown */
  int busbw_mismatch;        /* 1: busbw is off busbw_expected (GS_REPORT_BUSBW_TOLERANCE) */
  const char *nccl_version;  /* source.nccl_version (ingested nccl-tests), or NULL */
} gs_report_collective;

/* Request-based measurements (those with an "llm" object): the row's
 * throughput = generated_tokens / run_seconds, no "why not N x" split. */
typedef struct {
  int present;               /* 1: a request-based measurement */
  const char *scenario;      /* measurement "scenario" or NULL; points into the document */
  double generated_tokens;   /* output tokens of ok requests over all runs and ranks */
  double run_seconds;        /* sum of llm.run_seconds; NaN when not recorded */
  gs_stats ttft, tpot;       /* over ok requests that are not cold; n == 0 when none */
  gs_slo slo;                /* llm.slo's targets; gs_slo_none when the document has none */
  gs_slo_goodput goodput;    /* recomputed from the requests that are not cold (core/slo) */
} gs_report_requests;

/* A server measurement's rates (llm --rates or --find-max-rate;
 * docs/report.md, "Rates"): each rate as the document recorded it (only
 * the kept rate's requests are in the document, so the other rates'
 * figures cannot be recomputed), sorted by rate, and the search's answer
 * with its bracket. */
typedef struct {
  int order;                 /* 1-based position in the order measured */
  double rate;               /* target rate (requests/s) */
  double achieved_rate;      /* ok requests / run seconds */
  double tokens_per_second;
  double ratio;              /* worst targeted percentile / its target; +inf never done */
  int met;                   /* ratio <= 1 and the rate sustained, as recorded */
  const char *status;        /* the runs' status; points into the document */
  gs_slo_goodput goodput;    /* shares, goodput and percentiles (NaN where not recorded;
                                +inf for a percentile never reached) */
} gs_report_rate_point;

typedef struct {
  int present;               /* 1: llm.rates was recorded */
  int search;                /* 1: --find-max-rate, 0: --rates */
  gs_slo slo;                /* the targets and percentile the rates were judged at */
  double kept_rate;          /* the rate whose requests the measurement holds */
  double stream, slots;      /* requests a run and requests the layout serves at once; NaN
                                where not recorded */
  size_t n;
  gs_report_rate_point *points; /* by rate (ties in the order measured); owned */
  double max_rate;           /* search: its answer; list: the highest rate met; NaN none */
  double low, high;          /* search: its bracket; list: max_rate and the lowest rate
                                above it that missed (NaN none) */
  int converged, unreachable;/* search only (0 for a list) */
  double tolerance;          /* search only; NaN otherwise */
} gs_report_rates;

/* Placement, faults and plan tasks (docs/workloads/placement.md). */
typedef struct {
  char split_units[64];      /* split.units as "21,11" ("" without split) */
  char faults[256];          /* the injected faults, e.g. "slow rank 1 factor=3" ("" none) */
  int task;                  /* plan task index, -1 when not part of a plan */
  const char *task_spec;     /* config.tasks[task].spec or NULL; points into the document */
} gs_report_placement;

/* A pipeline (mlp --pp, llm --pp; docs/report.md, "Pipeline"): per stage
 * the mean busy time per unit and the idle time (mlp: per step, stage =
 * rank % stages, busy = device - comm and idle = comm over the stage's
 * replicas, the comm holding the waits for transfers, the bubble and the
 * replicas' gradient sum; llm: per prefill or decode call, from its
 * replicas' pipeline_samples, idle = the calls' time - busy); with a coll
 * sendrecv document of the same machine (report/analyze/pipeline.c) the
 * transfers' own time apart from the idle, so that the bubble is the
 * idle time only; the bubble and the imbalance by core/bubble. */
#define GS_REPORT_MAX_STAGES 16
typedef struct {
  int present;
  int stages, micro, replicas;
  const char *schedule;      /* points into the document; "-" for llm */
  const char *unit;          /* "step" (mlp) or "call" (llm): what the stage times are per */
  double busy[GS_REPORT_MAX_STAGES], idle[GS_REPORT_MAX_STAGES];
  double transfer[GS_REPORT_MAX_STAGES]; /* per unit: the stage's exposed transfers at the
                                measured send/recv cost; NaN without a sendrecv document */
  double boundary_bytes[GS_REPORT_MAX_STAGES]; /* mlp: one micro-batch's activations across
                                the boundary after stage s (s < stages - 1); NaN unknown and
                                for llm, whose micro-batches vary per call */
  gs_bubble bubble;          /* Σ (idle - transfer) / Σ busy over stages against (stages -
                                1) / micro, its interval and verdict, the stage imbalance
                                (slowest busy / mean busy) and its interval: set by
                                report/analyze/pipeline.c through gs_bubble_compute */
  double transfer_bytes;     /* per unit and replica: mlp activations + their gradients
                                across the stage boundaries, llm the residual stream across
                                them and the tokens back (bytes); NaN when not known */
  const char *transfer_source; /* the coll document the transfer cost came from, or NULL;
                                points into the report's file names */
  double row_bytes;          /* llm: bytes of one residual-stream row (hidden x 4); else NaN */
  size_t n_runs, n_samples;
  size_t *run_samples;       /* samples of each run (the bootstrap's groups); owned */
  double *stage_busy, *stage_idle; /* per sample (mlp: a step, mean over the replicas; llm: a
                                replica's block of calls) and stage, [i * stages + s]; owned */
  double *sample_calls, *sample_rows, *sample_groups, *sample_sequences; /* llm per sample:
                                calls, residual rows and micro-batches across a boundary,
                                sequences (NaN unknown); NULL for mlp; owned */
} gs_report_pipeline;

/* Cost (with --price): NaN when no price matched. */
typedef struct {
  const char *gpu_model;     /* environment name of the row's first GPU, or NULL */
  double price_per_hour;     /* sum over the row's GPUs of their price per GPU-hour */
  double items_per_dollar;   /* throughput * 3600 / price_per_hour */
  double dollars_per_million;/* 1e6 / items_per_dollar */
} gs_report_cost;

/* Where the measurement stands against its workload's bound (the
 * document's "roofline" member, written by run, scale and suite;
 * docs/result-schema.md): read as recorded, since the peak came from the
 * GPU models' file of the machine that measured; the intervals of a
 * document written before they were recorded from the row's steps
 * (core/roofline.h). present 0 without one. */
typedef struct {
  int present;
  const char *bound;         /* "memory", "fp32", "tf32", "bf16"; points into the document */
  double achieved;           /* bytes/s or flop/s of all the row's devices; NaN unknown */
  double achieved_low, achieved_high; /* its 95% interval; NaN when none */
  double peak;               /* their summed peak; NaN when not known */
  double fraction;           /* achieved / peak; NaN when not known */
  double fraction_low, fraction_high; /* its 95% interval; NaN when none */
  int too_few_steps;         /* 1: the fraction is known, its steps too few for an interval */
  const char *model;         /* the GPU model whose figure was used, or NULL */
  const char *why;           /* why no peak is known, or NULL; points into the document */
} gs_report_roofline;

/* The arrival skew at a measurement's collectives (analyze/arrival.c,
 * docs/stragglers.md): its document's summary and the rank named; for
 * ranks that meet in groups (mlp's pipeline stages, "arrival_groups"), one
 * of these per group, whose ranks are the group's members (replicas). */
typedef struct gs_report_arrival {
  int present;               /* the measurement has an "arrival" member */
  const char *clock;         /* "host" or "device"; points into the document */
  const char *alignment;     /* "shared" or "ping-pong"; points into the document */
  gs_arrival_summary summary; /* its floor set from the two below */
  int ranks_per_host;        /* the most ranks of the measurement on one host */
  int cores;                 /* logical cores of the document's host; 0 unknown */
  int named;                 /* gs_arrival_named: the late rank (member), or -1 (nobody) */
  int stage;                 /* a group's: its stage; -1 the measurement's own */
  int replica;               /* a group of one replica's shards (llm): the replica; else -1 */
  int members[GS_MAX_RANKS]; /* a group's: member k's rank in the measurement */
  size_t n_groups;           /* the measurement's groups ("arrival_groups"), in order */
  struct gs_report_arrival *groups; /* n_groups; owned */
} gs_report_arrival;

/* One measurement (a workload at one world size) of a series: what every
 * measurement has, and the parts of the features it uses. */
typedef struct {
  size_t file;               /* index into gs_report.files */
  size_t measurement;        /* index in that document's measurements */
  int world_size;
  const char *variant;       /* measurement "variant" or NULL; points into the document */
  char status[32];           /* the measurement's status */
  char verification[32];     /* "passed", "failed", "skipped" or "-" */
  const char *error;         /* the measurement's error, or NULL (points into the document) */
  int has_step;              /* 1 when step_seconds held at least one number */
  gs_stats step;             /* over all runs' step_seconds (nulls skipped) */
  size_t step_nulls;         /* null elements of step_seconds skipped */
  double *step_samples;      /* the step.n samples in run order (NULL when none); owned */
  size_t n_step_runs;        /* runs of the measurement */
  size_t *step_run_n;        /* samples of each run among step_samples; owned */
  uint64_t items_per_step;   /* cost.items_per_step; 0 when absent */
  double throughput;         /* items_per_step / step.mean */
  double speedup;            /* throughput / throughput of the series' 1-rank row */
  double speedup_low, speedup_high; /* its 95% interval (core/scaling); NaN when none */
  double efficiency;         /* speedup / world_size */
  double karp_flatt;         /* (1/S - 1/N) / (1 - 1/N), N > 1 */
  double ideal_throughput;   /* world_size * throughput of the 1-rank row */
  int gpus_per_rank;         /* GPUs one rank record (replica) spans: parallelism.gpus_per_rank
                                (llm.tensor_parallel in older documents), 1 when absent */
  const char *parallel_option; /* parallelism.option: the workload option that sets
                                gpus_per_rank ("tp"), or NULL; points into the document */
  int pipeline_stages;       /* of the gpus_per_rank, stages of a pipeline: llm.pipeline.stages
                                (llm --pp), 1 when absent; tp = gpus_per_rank / this */
  size_t n_ranks;            /* world_size / gpus_per_rank */
  gs_report_rank *ranks;     /* n_ranks entries, by rank number; owned */
  double spread_ratio;       /* max / min rank throughput (world_size > 1) */
  double spread_cv;          /* stddev (n - 1) / mean of rank throughputs */
  double rank_median;        /* median of rank throughputs */
  int straggler;             /* slowest rank when it is critical, else -1 */
  gs_straggler scores;       /* straggler scores (analyze/straggler.c); n_ranks 0: not scored */
  const char *scores_clock;  /* which times were scored ("device - comm", ...), or NULL */
  int scores_device;         /* CUDA ordinal of the named straggler's (first) GPU; -1 none */
  gs_straggler_host scores_host; /* the busiest host the scores were judged for */
  gs_report_arrival arrival; /* arrival skew at the collectives */
  gs_report_breakdown breakdown;
  size_t n_hosts;
  gs_report_host *hosts;     /* in order of first rank; owned */
  double host_spread_cv;     /* cv of the hosts' per-rank throughputs (2+ hosts) */
  /* Ingested LoadGen measurements ("workload": "mlperf"): throughput is the
   * ranks' summed LoadGen throughput, each rank's figures in its loadgen. */
  int loadgen;
  int ingested;              /* 1: another tool's run (a "source" member): a single run */
  gs_report_collective collective;
  gs_report_requests requests;
  gs_report_rates rates;
  gs_report_placement placement;
  gs_report_pipeline pipeline;
  gs_report_cost cost;
  gs_report_roofline roofline;
} gs_report_row;

/* One price of --price: GPU model key and dollars per GPU-hour. */
typedef struct {
  char model[64];
  double per_hour;
} gs_report_price;

#define GS_REPORT_PRICES_MAX 16

typedef struct {
  size_t n;
  gs_report_price p[GS_REPORT_PRICES_MAX];
} gs_report_prices;

/* Parses "H100=7,A100=5" (model=dollars per GPU-hour, dollars > 0) into
 * `out`. GS_ERR_USAGE naming the bad part on error. */
gs_status gs_report_parse_prices(const char *text, gs_report_prices *out);

/* The price of GPU `name` (environment gpus[].name): the longest key that
 * occurs in the name as a whole word, case-insensitively ("H100" matches
 * "NVIDIA H100 80GB HBM3", not "H1000"); NaN when none matches. */
double gs_report_price_of(const gs_report_prices *prices, const char *name);

/* The point of a row within its series: 1 when `x` and `y` have the same
 * world size and, for collectives, the same op, message size, data type,
 * reduction, root and in-place form. Rows of one series with the same
 * point are repeats of one measurement. */
int gs_report_point_same(const gs_report_row *x, const gs_report_row *y);

/* The in-place form of a collective in words: "in-place" (in_place 1),
 * "out-of-place" (0) or "-" (not recorded, -1), as gs_report_row's
 * coll_in_place holds it. */
const char *gs_report_coll_form(int in_place);

/* The point of `row` in words into `out`: "" for a workload row (its world
 * size is a column of its own), "allreduce 1 MiB float sum in-place"
 * (with "root R" where there is one) for a collective row. */
void gs_report_point_name(const gs_report_row *row, char *out, size_t size);

#endif
