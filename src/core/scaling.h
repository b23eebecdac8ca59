/* Scaling maths and the single-vs-multi verdict, in one place: speedup,
 * parallel efficiency, the Karp-Flatt serial fraction, the ideal step, the
 * thresholds that turn a speedup into a verdict, the wording of that verdict
 * per backend, and the rule for which measurement of a series it speaks of.
 * The runner (speedup fields), `run --gpu-mode auto`, the terminal summary
 * of run/scale/suite and `gpuscale report` all use it, so one document
 * never gets two verdicts. The definitions are written down in
 * docs/report.md ("Scaling numbers", "Recommendation") and the interval's
 * method in docs/statistics.md ("Intervals of ratios"). */
#ifndef GS_SCALING_H
#define GS_SCALING_H

#include <stddef.h>

#include "core/result.h"
#include "core/stats.h"

/* Speedup at or above which more GPUs are beneficial, and below which one
 * GPU is preferred; in between the verdict is marginal. A verdict needs its
 * whole 95% interval on one side of these (gs_scaling_verdict). */
#define GS_SCALING_BENEFICIAL 1.1
#define GS_SCALING_MARGINAL 0.95
/* Efficiency from which a result is suspect (a Karp-Flatt fraction clearly
 * below 0; a hair above 100% is rounding, not a finding), whatever its
 * interval; an interval wholly above 100% is suspect too. */
#define GS_SCALING_SUSPECT 1.01

typedef enum {
  GS_SCALING_NONE = 0, /* not a scaling measurement ("none", or unknown) */
  GS_SCALING_STRONG,   /* fixed total work: speedup = T(1) / T(N) */
  GS_SCALING_WEAK      /* fixed work per rank: speedup is the scaled speedup */
} gs_scaling;

/* Name of a scaling mode: "none", "strong" or "weak". */
const char *gs_scaling_name(gs_scaling scaling);

/* The kind named by a document's "scaling" member ("strong", "weak");
 * GS_SCALING_NONE for anything else, NULL included. */
gs_scaling gs_scaling_of(const char *name);

/* Speedup S(N) = X(N) / X(1) of throughputs (items per second). Under
 * strong scaling this equals T(1) / T(N); under weak scaling it is the
 * scaled speedup. NaN unless both throughputs are finite and > 0. */
double gs_scaling_speedup(double base_throughput, double throughput);

/* Parallel efficiency E(N) = S(N) / N with S the throughput ratio: under
 * strong scaling T(1) / (N T(N)), under weak scaling T(1) / T(N) (each
 * rank does the 1-rank work, so the ideal step stays T(1)). NaN unless S
 * is finite and > 0 and N >= 1. */
double gs_scaling_efficiency(double speedup, int world_size);

/* Karp-Flatt experimentally determined serial fraction
 * e(N) = (1/S - 1/N) / (1 - 1/N); NaN for N < 2 or S not finite and > 0. */
double gs_scaling_karp_flatt(double speedup, int world_size);

/* The ideal step time at N ranks given the 1-rank step `base_step`:
 * T(1) / N under strong scaling, T(1) under weak scaling (and for
 * GS_SCALING_NONE, where the work is not known to be divided). NaN when
 * base_step is not finite or N < 1. */
double gs_scaling_ideal_step(gs_scaling kind, double base_step, int world_size);

/* Why a step falls short of the ideal: the parts of the step (the report's
 * why-not-N split, in this order) and what each lost against its own
 * ideal. */
typedef enum {
  GS_PART_COMPUTE = 0,   /* device time less communication */
  GS_PART_COMM,          /* exposed communication */
  GS_PART_IMBALANCE,     /* waiting for the slowest rank */
  GS_PART_HOST,          /* wall less device time */
  GS_PART_COUNT
} gs_scaling_part;

/* "compute", "exposed communication", "load imbalance", "host overhead". */
const char *gs_scaling_part_name(int part);

typedef struct {
  double lost[GS_PART_COUNT];  /* part(N) - its ideal (kind, part(1), N), seconds; may be < 0 */
  double compute_ideal;        /* the 1-rank compute times the rank's share of the work */
  double compute_efficiency;   /* compute_ideal / compute(N): the rate of a rank's share of
                                  the work against the 1-rank rate (1: as fast) */
  int main_loss;               /* the part that lost most; -1: none lost time */
} gs_scaling_losses;

/* The losses of a step split into `parts` (seconds per step at
 * `world_size` ranks) against the 1-rank step's `base` parts: each part's
 * ideal is gs_scaling_ideal_step of the base part (under strong scaling
 * a rank's share of the work is 1/N), so the losses add up to the step
 * less the ideal step when both splits add up to their steps. NaN
 * figures (and main_loss -1) where a part is not finite. */
void gs_scaling_losses_of(gs_scaling kind, const double base[GS_PART_COUNT],
                          const double parts[GS_PART_COUNT], int world_size,
                          gs_scaling_losses *out);

typedef enum {
  GS_VERDICT_NONE = 0,   /* no usable speedup at N > 1 */
  GS_VERDICT_BENEFICIAL, /* the whole interval >= GS_SCALING_BENEFICIAL */
  GS_VERDICT_MARGINAL,   /* the whole interval in [GS_SCALING_MARGINAL, GS_SCALING_BENEFICIAL) */
  GS_VERDICT_SINGLE,     /* the whole interval < GS_SCALING_MARGINAL */
  GS_VERDICT_INCONCLUSIVE, /* the interval crosses a threshold, or there is none */
  GS_VERDICT_SUSPECT     /* efficiency above 100% (negative Karp-Flatt): implausible */
} gs_verdict;

/* The verdict of a speedup S at N ranks with its 95% interval [low, high]
 * (docs/report.md, "Recommendation"): GS_VERDICT_NONE when S is not finite
 * and > 0; GS_VERDICT_SUSPECT when S >= GS_SCALING_SUSPECT x N or the
 * interval lies wholly above N (efficiency above 100%, a negative
 * Karp-Flatt fraction); else the zone (single < 0.95 <= marginal
 * < 1.1 <= beneficial) that holds the whole interval, and
 * GS_VERDICT_INCONCLUSIVE when the interval reaches into two zones or is
 * not known (NaN bounds). */
gs_verdict gs_scaling_verdict(double speedup, double low, double high, int world_size);

/* The verdict's JSON name, the same on every backend: "beneficial",
 * "marginal", "single GPU preferred", "inconclusive", "suspect" or
 * "none". */
const char *gs_verdict_name(gs_verdict verdict);

/* The verdict in words for people, into `out`: "multi-GPU beneficial",
 * "multi-GPU marginal", "single GPU preferred" on the cuda backend;
 * "multi-rank ...", "single rank preferred" on any other (CPU ranks);
 * "inconclusive", "suspect", and "no verdict" for GS_VERDICT_NONE. */
void gs_scaling_verdict_words(gs_verdict verdict, const char *backend, char *out, size_t size);

/* A ratio with its 95% interval, the one print form of every ratio a user
 * reads: "1.72x [1.69, 1.75]" (`scale` 1, 2 decimals, unit "x") or
 * "86.0% [84.5, 87.5]" (`scale` 100, 1 decimal, unit "%"); "-" when
 * `value` is not finite, "1.72x [-]" when a bound is not. */
void gs_scaling_format_ratio(double value, double low, double high, double scale, int decimals,
                             const char *unit, char *out, size_t size);

/* Cores of other work on the host (in a run, on average) from which CPU
 * ranks that need every free core are said to contend with it. */
#define GS_SCALING_OTHER_WORK_CORES 0.25

/* 1 when a measurement's ranks are gpuscale's own CPU ranks, one busy
 * thread or process each (the cpu backend), 0 otherwise: GPUs, or a
 * program under `exec`, whose processes run as many threads as it
 * chooses. What gs_scaling_host.cpu_ranks holds. */
int gs_scaling_cpu_ranks(const char *backend, const char *workload);

/* What the verdict rule knows of the host a series was measured on, for
 * naming the likely cause of a suspect result. */
typedef struct {
  int cores;           /* logical CPUs of the host; 0 unknown */
  double load_average; /* 1-minute load average recorded with the document; NaN unknown */
  int cpu_ranks;       /* 1: ranks are CPU threads (cpu backend) */
  /* The cache each rank has to itself: the L2 of its GPU, or a CPU core's
   * L2 for CPU ranks (a shared last level holds every rank's data at once);
   * 0 unknown. `cache_name` (static text, e.g. "GPU L2 cache") names it. */
  double cache_bytes;
  const char *cache_name;
} gs_scaling_host;

/* One measurement of a series as the verdict rule sees it. */
typedef struct {
  int world_size;
  int ok;             /* 1: the measurement's status is ok */
  double throughput;  /* items per second; NaN or <= 0 when there is none */
  const gs_stats_group *runs; /* step seconds of each run (the bootstrap's groups); may be NULL */
  size_t n_runs;
  int faults;         /* faults injected into the measurement (0 none) */
  double clock_mhz;   /* mean SM clock over its GPUs (telemetry); NaN unknown */
  /* Most compute processes besides the measuring one seen at once on one
   * of its GPUs during the measurement (telemetry); 0 none or unknown. */
  int other_processes;
  /* The most cores that other work kept busy on the host during one of its
   * runs (runs[].host_other_cores, core/host_cpu.h); 0 none or unknown. */
  double other_cores;
  /* The step's memory traffic per rank (cost.bytes / N), the data a rank
   * works on in a step; 0 unknown. */
  double rank_bytes;
} gs_scaling_point;

/* A measurement as a point: its world size, status ok, aggregate
 * throughput (what the runner measured), faults, the most cores of other
 * work in one of its runs (as gs_scaling_point_add_document reads them
 * from its document) and its runs' step
 * samples, which `groups` (n_runs entries, owned by the caller, alive as
 * long as the point) is filled to point at; `groups` may be NULL for a
 * point without samples. */
gs_scaling_point gs_scaling_point_of(const gs_measurement *m, gs_stats_group *groups);

/* What a measurement's JSON object (a document's "measurements" entry)
 * adds to its point, read the same way by the terminal (from the telemetry
 * and cost it writes) and the report: the mean SM clock over its GPUs
 * (telemetry.ranks[].sm_clock_mhz.mean), the most other compute processes
 * on one GPU (telemetry.ranks[].compute_processes.max, less the measuring
 * process), the most cores other work kept busy in one of its runs
 * (runs[].host_other_cores) and the bytes per rank (cost.bytes_per_step /
 * world_size). Members that are missing leave the fields as they were. */
void gs_scaling_point_add_document(gs_scaling_point *p, const cJSON *measurement);

/* What a document's "environment" says of the cache each rank has to
 * itself, on `backend` ("cuda": the L2 of GPU `device`, environment
 * gpus[].l2_cache_bytes; "cpu": environment cpu.l2_cache_bytes, a core's
 * own L2); left as it was when not recorded. */
void gs_scaling_host_add_document(gs_scaling_host *h, const cJSON *environment,
                                  const char *backend, int device);

/* The 95% interval [*low, *high] of `speedup`, the speedup of `p` over
 * `base`: gs_stats_ratio_interval of base's step times over p's, times
 * speedup / (the ratio of their mean steps). NaN bounds when either has no
 * samples or speedup is not finite and > 0. */
void gs_scaling_interval(const gs_scaling_point *base, const gs_scaling_point *p, double speedup,
                         double *low, double *high);

/* Index of the series' 1-rank baseline among `points[0..n)`: the first
 * with world size 1, status ok and a throughput; -1 when there is none. */
int gs_scaling_baseline(const gs_scaling_point *points, size_t n);

/* Which measurement a series' verdict speaks of, and what it says. */
typedef struct {
  gs_verdict verdict;      /* GS_VERDICT_NONE: see `none_reason` */
  int point;               /* index of the measurement it speaks of; -1 none */
  int largest;             /* the series' largest world size (0 when empty) */
  int world_size;          /* N of that measurement (0 none) */
  double speedup, efficiency, karp_flatt;
  double speedup_low, speedup_high;       /* 95% interval (NaN: none) */
  double efficiency_low, efficiency_high; /* the speedup's bounds / N */
  double karp_flatt_low, karp_flatt_high; /* the Karp-Flatt of the speedup's bounds */
  size_t base_runs, runs;  /* runs with samples the interval rests on, at 1 and N */
  double base_throughput;  /* X(1), the baseline's */
  double throughput;       /* X(N) */
  double ideal_throughput; /* N X(1) */
  const char *none_reason; /* why there is no verdict (static text); NULL with one */
  char why[512];           /* inconclusive: what would decide it; suspect: the likely
                              causes checked and found; "" otherwise */
} gs_scaling_assessment;

/* The verdict of one series (the series key is in docs/report.md: workload,
 * backend, scaling, options, variant/scenario/task and split policy; each
 * split policy has its own verdict). `points[0..n)` are its measurements
 * in order of world size (ties: later ones win); `base` is its 1-rank
 * baseline (gs_scaling_baseline, or that of the series it borrows it
 * from; NULL when none); `host` may be NULL. The verdict speaks of the
 * largest world size N > 1 whose measurement is ok and has a throughput
 * (the last such in order), compared with that baseline: its speedup's
 * interval is gs_stats_ratio_interval of the baseline's step times over
 * the point's, scaled to the speedup, and decides the verdict
 * (gs_scaling_verdict). A suspect verdict names the causes it finds. On
 * CPU ranks (host->cpu_ranks, its cores known), a verdict other than
 * suspect becomes inconclusive where other work contended for the cores
 * at 1 or at N ranks: it kept at least GS_SCALING_OTHER_WORK_CORES busy and,
 * with the ranks, more than the host has (docs/statistics.md, "Other work
 * on the host"). */
void gs_scaling_assess(const gs_scaling_point *points, size_t n, const gs_scaling_point *base,
                       const gs_scaling_host *host, gs_scaling_assessment *out);

/* The one verdict sentence, for the terminal and the report alike:
 * "SERIES: VERDICT WORDS: speedup S [L, H] at N ranks (RULE; 95% interval
 * over R1 + RN runs), or "(no interval)" without one, efficiency E% [L, H], Karp-Flatt serial fraction K
 * [L, H], throughput X of ideal I UNIT/s", then for an inconclusive or
 * suspect verdict "; " and the assessment's `why`. SERIES is
 * gs_scaling_series_name's text. `a` must hold a verdict. */
void gs_scaling_verdict_sentence(const gs_scaling_assessment *a, const char *series,
                                 const char *backend, const char *item_unit, char *out,
                                 size_t size);

/* The series label beyond workload and split: "variant V", "scenario S"
 * and "task T (SPEC)", comma-separated, for those given (NULL or "" are
 * left out; task < 0 is none). "" when none is given. */
void gs_scaling_series_label(const char *variant, const char *scenario, int task,
                             const char *task_spec, char *out, size_t size);

/* The series as named in verdicts and report headers: "WORKLOAD (LABEL,
 * split POLICY)" with only the parts it has, e.g. "voxelize (split even)",
 * "mlp (variant batch=8)" or plain "voxelize". */
void gs_scaling_series_name(const char *workload, const char *label, const char *split,
                            char *out, size_t size);

#endif
