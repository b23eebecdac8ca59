/* The result document: the contract between measuring and reporting.
 * Measuring code fills the plain structs below; this module turns them into
 * the versioned JSON document "gpuscale/result/v1" (docs/result-schema.md),
 * writes it atomically, and reads documents back with validation. The one
 * include for the model: its implementation is split into result.c
 * (building), result_write.c, result_read.c and environment.c; the file
 * I/O it uses (core/file.h) comes with it. */
#ifndef GS_RESULT_H
#define GS_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/arrival.h"
#include "core/fault.h"
#include "core/file.h"
#include "core/json.h"
#include "core/stats.h"
#include "core/status.h"
#include "core/types.h"

#define GS_RESULT_SCHEMA "gpuscale/result/v1"

/* One GPU as the CUDA runtime describes it. */
typedef struct {
  int index;                      /* CUDA device ordinal in this process */
  char name[GS_TEXT_LONG];
  char uuid[GS_TEXT_SHORT];       /* "GPU-xxxxxxxx-xxxx-..." */
  char pci_bus_id[GS_TEXT_SHORT]; /* "0000:18:00.0" */
  uint64_t memory_bytes;
  int sm_count;
  int cc_major, cc_minor;
  int clock_mhz;                  /* peak SM clock; 0 = unknown */
  int memory_clock_mhz;           /* peak memory clock; 0 = unknown */
  int memory_bus_width_bits;      /* 0 = unknown */
  double peak_memory_bandwidth;   /* bytes/s from clock and bus width; 0 = unknown */
  uint64_t l2_cache_bytes;        /* 0 = unknown */
} gs_gpu_desc;

/* The Slurm job a process runs in, from its environment; job_id "" outside
 * Slurm. Node lists are in Slurm's compressed form ("node[01-04]"). */
typedef struct {
  char job_id[GS_TEXT_SHORT];     /* SLURM_JOB_ID */
  char step_id[GS_TEXT_SHORT];    /* SLURM_STEP_ID; "" in a batch script outside srun */
  char node_list[1024];           /* SLURM_JOB_NODELIST, the job's nodes; cut at 1023 */
} gs_slurm_job;

/* Where a measurement ran. Version numbers are encoded as the libraries do
 * (CUDA 13000 = 13.0); 0 or "" means not present. */
typedef struct {
  char host[GS_TEXT_LONG];
  char os[GS_TEXT_LONG];          /* "Linux 6.1.0 x86_64" */
  char cpu_model[GS_TEXT_LONG];
  int cpu_logical_cores;
  double load_average;            /* 1-minute load average when collected; NaN unknown */
  uint64_t cpu_l2_cache_bytes;    /* one core's L2 (cpu0's level-2 cache); 0 unknown */
  uint64_t host_memory_bytes;
  int cuda_driver_version;
  int cuda_runtime_version;
  char cuda_status[GS_TEXT_LONG]; /* "2 devices" or why there are none */
  char nccl_version[GS_TEXT_SHORT];
  char mpi_version[GS_TEXT_LONG];
  size_t gpu_count;
  gs_gpu_desc *gpus;              /* owned; gpu_count entries */
  gs_slurm_job slurm;
} gs_environment;

/* What bounds a step at best (core/roofline.h, docs/workloads/): the
 * device memory's bandwidth over the cost's bytes, or the math units' peak
 * over its flops in one arithmetic. */
typedef enum {
  GS_BOUND_NONE = 0,              /* not declared: no "roofline" member */
  GS_BOUND_MEMORY,                /* bytes / peak memory bandwidth */
  GS_BOUND_FP32,                  /* flops / peak fp32 (non-tensor) rate */
  GS_BOUND_TF32,                  /* flops / peak dense tf32 tensor rate */
  GS_BOUND_BF16,                  /* flops / peak dense bf16 tensor rate */
  GS_BOUND_COUNT
} gs_bound;

/* Cost of one step of the whole measurement (all ranks together). */
typedef struct {
  uint64_t items;                 /* e.g. points */
  const char *item_unit;          /* static string, e.g. "points" */
  uint64_t bytes;                 /* minimum device-memory traffic */
  uint64_t flops;
  gs_bound bound;                 /* which of bytes and flops bounds the step */
} gs_cost;

/* Where a measurement stands against its bound (the member "roofline",
 * filled by the measuring layer from the cost and the GPU models'
 * figures; core/roofline.h). Rates are per second of all its devices
 * together: bytes/s for the memory bound, flop/s for the others. */
typedef struct {
  gs_bound bound;                 /* GS_BOUND_NONE: no member */
  double achieved;                /* cost per step / median step; NaN unknown */
  double achieved_low, achieved_high; /* its 95% interval from the median step's; NaN none */
  double peak;                    /* the devices' summed peak; NaN when not known */
  double fraction;                /* achieved / peak; NaN when not known */
  double fraction_low, fraction_high; /* its 95% interval; NaN when none */
  int too_few_steps;              /* 1: a step was timed, too few for an interval */
  char model[GS_TEXT_SHORT];      /* the GPU model whose figure was used; "" none */
  char why[GS_TEXT_LONG];         /* why the peak is not known; "" when it is */
} gs_roofline_record;

typedef enum { GS_VERIFY_SKIPPED = 0, GS_VERIFY_PASSED, GS_VERIFY_FAILED } gs_verify_status;

typedef struct {
  gs_verify_status status;
  double max_abs_error;           /* largest |device - reference| seen */
  double tolerance;               /* what was allowed */
  uint64_t mismatches;            /* elements outside the tolerance */
  char detail[GS_TEXT_ERROR];     /* what was compared, or why skipped/failed */
} gs_verification;

/* One rank's part of one run. Samples exclude warmup and the first timed
 * iteration, which is kept apart as the cold-start sample. */
typedef struct {
  int rank;
  int device;                     /* CUDA ordinal, -1 on the CPU backend */
  char host[GS_TEXT_LONG];
  gs_status status;
  char error[GS_TEXT_ERROR];      /* "" when ok */
  uint64_t items_per_step;        /* this rank's share of the work */
  double first_iteration_seconds; /* cold start; < 0 when not measured */
  size_t n_samples;
  double *device_seconds;         /* per iteration from CUDA events; NULL on CPU */
  double *wall_seconds;           /* per iteration from the monotonic clock */
  double *comm_seconds;           /* per iteration: exposed communication (platform/comm.h); NULL when the workload does not communicate */
  gs_verification verification;
  uint64_t failed_samples;        /* timed samples declared failed (fail fault); "failed_samples" when > 0 */
  uint64_t steps_completed;       /* steps this rank finished in the measurement (cold start,
                                     warmup, timed); "last_completed_step" when the rank
                                     stopped early (status neither ok nor verification) */
} gs_rank_record;

typedef struct {
  size_t n_steps;
  double *step_seconds;           /* per iteration: slowest rank's time */
  /* When the run's first timed step began (Unix seconds; 0: unknown, no
   * "started_unix_seconds") and its place in the sweep's measuring order
   * (sequence - 1; 0: not recorded, no "sequence"), so that a document
   * shows the order in which its rank counts were measured. */
  double started_unix_seconds;
  uint64_t sequence;
  /* The cores that other work kept busy on average on the measuring host
   * while the run was measured (core/host_cpu.h; threads mode, where one
   * process holds every rank): "host_other_cores" when other_cores_known. */
  int other_cores_known;
  double other_cores;
  size_t n_ranks;
  gs_rank_record *ranks;          /* owned */
} gs_run_record;

/* Summary over all runs of one measurement. */
typedef struct {
  gs_stats step;                  /* over the step times of all runs */
  double throughput;              /* items per second: cost.items / step.mean */
  double cold_start_ratio;        /* slowest first iteration / step median */
  double speedup;                 /* vs the 1-rank measurement of the same file; 0 = n/a */
  double efficiency;              /* speedup / world_size (strong) or throughput ratio / world_size (weak); 0 = n/a */
} gs_aggregate;

/* How the work units of a measurement were split over its ranks (the
 * member "split", measured under --split proportional: the even split and
 * the proportional one from the same calibration). */
typedef enum {
  GS_SPLIT_NONE = 0,              /* not a split measurement: no "split" member */
  GS_SPLIT_EVEN,
  GS_SPLIT_PROPORTIONAL
} gs_split_policy;

typedef struct {
  gs_split_policy policy;
  int ranks;                      /* entries of the arrays below */
  uint64_t units[GS_MAX_RANKS];   /* work units of each rank */
  double calibration_items_per_second[GS_MAX_RANKS]; /* each rank's calibrated speed */
} gs_split_record;

/* Which units each rank owned (the member "work_units"): rank k owns
 * [begin[k], begin[k] + count[k]) of the step's `total`. */
typedef struct {
  const char *unit;               /* static string (the workload's unit name); NULL: no member */
  uint64_t total;
  int ranks;
  uint64_t begin[GS_MAX_RANKS];
  uint64_t count[GS_MAX_RANKS];
} gs_work_units_record;

/* Why a failed measurement failed (the member "failure"): the first rank
 * that really failed, or, when none can be named (a stop request, a rank
 * lost on another host), rank -1 with the measurement's status and error. */
typedef struct {
  int present;                    /* 0: no "failure" member */
  int rank;                       /* -1: none named (rank, host and step are null) */
  char host[GS_TEXT_LONG];
  uint64_t last_completed_step;
  gs_status status;
  char reason[GS_TEXT_ERROR];
} gs_failure_record;

/* One configuration measured: a workload at one world size. */
typedef struct {
  char workload[GS_TEXT_SHORT];
  char backend[GS_TEXT_SHORT];    /* "cuda" or "cpu" */
  char scaling[GS_TEXT_SHORT];    /* "strong", "weak" or "none" */
  char variant[GS_TEXT_SHORT];    /* problem variant, e.g. "batch=512"; "" when the workload has one */
  int world_size;
  int devices[GS_MAX_RANKS];      /* CUDA ordinals (world_size entries), -1 on CPU */
  gs_status status;
  char error[GS_TEXT_ERROR];
  gs_cost cost;
  gs_verification verification;   /* combined over ranks */
  size_t n_runs;
  gs_run_record *runs;            /* owned */
  gs_aggregate aggregate;
  gs_fault_list faults;           /* injected faults; "faults" when n > 0 */
  gs_work_units_record work_units;
  gs_failure_record failure;
  gs_split_record split;
  gs_roofline_record roofline;
  gs_arrival *arrival;            /* each rank's arrival at the collectives of the timed
                                     iterations (core/arrival.h), "arrival" ("arrival_groups"
                                     when grouped); owned, may be NULL */
  cJSON *extra;                   /* other optional members, copied into the measurement
                                     object as they are after the typed ones (e.g. a plan's
                                     "task"); owned, may be NULL */
} gs_measurement;

/* "even", "proportional", or "" for GS_SPLIT_NONE. */
const char *gs_split_policy_name(gs_split_policy policy);

/* Frees the arrays owned by these records (not the records themselves). */
void gs_environment_free(gs_environment *env);
void gs_measurement_free(gs_measurement *m);

/* Fills host, OS, CPU, memory and Slurm fields of `env` (GPU fields
 * untouched). */
void gs_environment_collect_host(gs_environment *env);

/* Records the command line as main received it ("gpuscale", the command,
 * its arguments): every document's "argv". Called once, by main. */
void gs_result_set_command_line(int argc, char **argv);

/* A new document with schema, tool (name, version, git revision), creation
 * time, `command` and the command line (gs_result_set_command_line; empty
 * when none was recorded). The caller owns it (cJSON_Delete). */
cJSON *gs_result_new(const char *command);

/* Adds the "config", "environment" and one entry of "measurements". The
 * config object is taken over by the document. */
gs_status gs_result_set_config(cJSON *doc, cJSON *config);
gs_status gs_result_set_environment(cJSON *doc, const gs_environment *env);
gs_status gs_result_add_measurement(cJSON *doc, const gs_measurement *m);

/* Sets the document's overall "status" ("ok", "partial" or "failed"). */
gs_status gs_result_set_status(cJSON *doc, const char *status);

/* The document status, one rule for every writer: "ok" when the document
 * is complete (nothing more is to be measured) and none of its
 * `measurements` failed; "failed" when every one failed and none of the
 * failed ones kept a sample (`failed_with_samples`); else "partial": a
 * sweep still under way (a crash now leaves what it holds), or what was
 * measured before a failure, a lost rank or a signal. */
const char *gs_result_status_rule(size_t measurements, size_t failed, size_t failed_with_samples,
                                  int complete);

/* Writes `doc` to `path` atomically (gs_file_out_open/commit): a temp file
 * in the same directory, checked, fsync'ed, then renamed over `path`.
 * Creates missing parent directories. On error (GS_ERR_IO naming `path`)
 * the old file, if any, is left untouched and no temp file remains. */
gs_status gs_result_write(const cJSON *doc, const char *path);

/* Like gs_result_write, for a document this process rewrites as it
 * measures: `stamp` (gs_file_out_reopen) names the file its last write
 * left. A document another process put there since (a rank that took over
 * the writing) is kept: GS_ERR_IO, nothing written. */
gs_status gs_result_rewrite(const cJSON *doc, const char *path, gs_file_stamp *stamp);

/* Prints `doc` to `out` as result files are written (two-space indent,
 * arrays of scalars on one line, doubles in full, NaN/Inf as null) and a
 * newline; GS_ERR_IO when the stream fails. */
gs_status gs_json_print(FILE *out, const cJSON *doc);

/* Reads and validates a result document. Rejects unreadable files, invalid
 * JSON (with the byte offset), a missing or foreign "schema", and required
 * members missing or of the wrong type, naming `path` in the error. */
gs_status gs_result_read(const char *path, cJSON **doc_out);

/* Validates an already parsed document; `source` names it in errors. */
gs_status gs_result_validate(const cJSON *doc, const char *source);

/* Step statistics as they appear in a measurement's aggregate.step: an
 * object with every gs_stats field and the warnings by name, or JSON null
 * when stats->n == 0. NULL when memory runs out. The caller owns it. */
cJSON *gs_result_stats_to_json(const gs_stats *stats);

#endif
