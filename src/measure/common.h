/* Options shared by the measuring commands (run, scale, suite), how they
 * resolve into a backend and a list of ranks, and the result document's
 * config and environment blocks that every measuring command writes. */
#ifndef GS_CLI_COMMON_H
#define GS_CLI_COMMON_H

#include <cjson/cJSON.h>

#include "runner/runner.h"
#include "core/options.h"
#include "core/result.h"
#include "platform/comm.h"
#include "platform/trace.h"

/* Room for every common option and the end marker. */
#define GS_COMMON_OPTION_COUNT 30
/* Room for the groups of one command's table. */
#define GS_COMMON_GROUP_MAX 16

/* Shortest telemetry interval accepted: NVML itself updates utilization no
 * faster than every few tens of milliseconds. */
#define GS_TELEMETRY_MIN_INTERVAL 0.01

typedef struct {
  int backend_choice;          /* index into gs_backend_choices */
  const char *gpus_text;       /* --gpus: CUDA ordinals "0", "0,2", "0-3"; NULL = default */
  uint64_t ngpus;              /* -g/--ngpus: the first N GPUs */
  uint64_t ranks;              /* CPU backend ranks */
  uint64_t warmup;
  uint64_t iters;
  double min_time;
  uint64_t runs;
  uint64_t seed;
  const char *out;             /* result file or directory */
  int quiet;
  int no_progress;
  int scaling_choice;          /* index into gs_scaling_choices (scale, suite) */
  gs_u64_list counts;          /* --counts for scale */
  double telemetry_interval;   /* seconds between NVML readings; 0 = off */
  int telemetry_series;        /* keep every reading in the document */
  gs_string_list inject;       /* --inject faults (run, scale, plan) */
  int split_choice;            /* index into gs_split_choices (run, scale) */
  int gpu_mode_choice;         /* index into gs_gpu_mode_choices (run) */
  int order_choice;            /* index into gs_order_choices (scale, suite, exec) */
  int given_gpu_mode;
  double timeout;              /* seconds any rank waits for the others (lockstep,
                                  communicators) before the run ends as partial */
  const char *trace;           /* --trace FILE: the timeline file (docs/timeline.md) */
  uint64_t trace_steps;        /* timed steps traced per run */
  int given_trace_steps;
  uint64_t arrival_times;      /* --arrival-times 0|1: record arrivals at collectives (default 1) */
  int given_arrival_times;
  uint64_t nccl_max_ctas;      /* --nccl-max-ctas N: NCCL's CTAs per collective (cuda);
                                  0 = NCCL's default, unless a driver sets one */
  int given_nccl_max_ctas;
  int mpi_processes;           /* set by the caller under mpirun/srun (before
                                  gs_common_resolve): the world is this many processes */
  int given_gpus, given_ngpus, given_ranks, given_iters, given_min_time, given_counts, given_scaling,
      given_backend, given_out, given_warmup, given_runs;
  unsigned group_bits;         /* the groups the table was composed of (GS_GROUP_*) */
  gs_option table[GS_COMMON_OPTION_COUNT];
  /* The groups the table was composed of, in order: table[begin, end). */
  struct {
    const char *title;
    size_t begin, end;
  } groups[GS_COMMON_GROUP_MAX];
  size_t n_groups;
} gs_common_options;

/* The choices of --backend, --scaling, --split and --gpu-mode, each named
 * by the enum of its indices. */
extern const char *const gs_backend_choices[]; /* auto, cuda, cpu */
enum { GS_BACKEND_CHOICE_AUTO = 0, GS_BACKEND_CHOICE_CUDA = 1, GS_BACKEND_CHOICE_CPU = 2 };
extern const char *const gs_scaling_choices[]; /* strong, weak */
enum { GS_SCALING_CHOICE_STRONG = 0, GS_SCALING_CHOICE_WEAK = 1 };
extern const char *const gs_split_choices[];   /* even, proportional */
enum { GS_SPLIT_CHOICE_EVEN = 0, GS_SPLIT_CHOICE_PROPORTIONAL = 1 };
extern const char *const gs_order_choices[];   /* interleaved, sequential */
enum { GS_ORDER_CHOICE_INTERLEAVED = 0, GS_ORDER_CHOICE_SEQUENTIAL = 1 };
extern const char *const gs_gpu_mode_choices[]; /* single, multi, auto */
enum { GS_GPU_MODE_SINGLE = 0, GS_GPU_MODE_MULTI = 1, GS_GPU_MODE_AUTO = 2 };

/* The small groups a command composes its common options of: it lists
 * (and --help, the man pages and the completions show) exactly the options
 * of the groups it names, so it never lists an option it cannot apply. */
enum {
  GS_GROUP_OUTPUT = 1u << 0,    /* -o/--out FILE, -q/--quiet, --no-progress */
  GS_GROUP_OUT_DIR = 1u << 1,   /* modifies OUTPUT: --out names a directory (suite) */
  GS_GROUP_BACKEND = 1u << 2,   /* --backend */
  GS_GROUP_GPUS = 1u << 3,      /* --gpus LIST (ordinals), -g/--ngpus N (a count) */
  GS_GROUP_RANKS = 1u << 4,     /* --ranks N (cpu backend) */
  GS_GROUP_WARMUP = 1u << 5,    /* -w/--warmup N */
  GS_GROUP_ITERS = 1u << 6,     /* -n/--iters N */
  GS_GROUP_MIN_TIME = 1u << 7,  /* --min-time SEC */
  GS_GROUP_RUNS = 1u << 8,      /* --runs N */
  GS_GROUP_SEED = 1u << 9,      /* --seed S of generated data */
  GS_GROUP_TELEMETRY = 1u << 10, /* --telemetry-interval, --telemetry-series */
  GS_GROUP_TIMEOUT = 1u << 11,  /* --timeout SEC of a rank's wait */
  GS_GROUP_TRACE = 1u << 12,    /* --trace FILE, --trace-steps N */
  GS_GROUP_SCALE = 1u << 13,    /* --scaling, --counts, --order */
  GS_GROUP_FAULTS = 1u << 14,   /* --inject */
  GS_GROUP_SPLIT = 1u << 15,    /* --split */
  GS_GROUP_GPU_MODE = 1u << 16, /* --gpu-mode */
  GS_GROUP_ARRIVAL = 1u << 17,  /* --arrival-times 0|1 (docs/stragglers.md) */
  GS_GROUP_NCCL = 1u << 18,     /* --nccl-max-ctas N of the workloads' communicators */
  /* Compositions used by several commands. */
  GS_GROUP_DEVICES = GS_GROUP_BACKEND | GS_GROUP_GPUS | GS_GROUP_RANKS,
  GS_GROUP_TIMING = GS_GROUP_WARMUP | GS_GROUP_ITERS | GS_GROUP_MIN_TIME | GS_GROUP_RUNS,
  /* What a workload's measurement takes (run, scale, suite add to it). */
  GS_GROUP_MEASURE = GS_GROUP_OUTPUT | GS_GROUP_DEVICES | GS_GROUP_TIMING | GS_GROUP_SEED |
                     GS_GROUP_TELEMETRY | GS_GROUP_TIMEOUT | GS_GROUP_TRACE | GS_GROUP_ARRIVAL |
                     GS_GROUP_NCCL
};

/* Fills defaults and composes the option table of the `groups` (in the
 * order of the enum, whatever the order of the bits), recording each
 * group's slice and title for the help. */
void gs_common_init(gs_common_options *o, unsigned groups);

/* The help of the common options: one titled section per group ("Output",
 * "GPUs and ranks", ...), through cli/help.h's gs_help_options by the
 * caller-supplied `section` (title, table terminated by GS_OPT_END). */
void gs_common_describe(const gs_common_options *o,
                        void (*section)(const char *title, const gs_option *table));

/* Resolves the backend (auto: CUDA when a device is present, else the CPU
 * with a note saying so) and the ranks: CUDA ordinals from --gpus, the
 * first N devices from --ngpus (default `default_all` ? all : GPU 0), or
 * --ranks CPU workers. A malformed --gpus is a usage error whether or not
 * a GPU is present. Checks the devices exist and options agree.
 * Fills config->backend, world_size, devices, the timing fields, the
 * faults (checked against the ranks) and the split policy. */
gs_status gs_common_resolve(const gs_common_options *o, int default_all, gs_run_config *config);

/* Picks this process's ranks and devices for a job (platform/comm.h):
 * threads mode: every selected GPU (or --ranks CPU ranks), one thread each;
 * mpi mode: one rank per process, the GPU chosen by the local rank among the
 * --gpus list (or all GPUs the process sees), world_size = the process
 * count. Resolves the options first (gs_common_resolve with default_all). */
gs_status gs_common_choose_ranks(gs_common_options *o, int default_all, const gs_comm_job *job,
                                 gs_run_config *config, int *local_ranks, int *local_devices);

/* Parses a --gpus value: CUDA ordinals as CUDA_VISIBLE_DEVICES writes
 * them, a list "0,2" or ranges "0-3", mixable, no device twice; a lone "N"
 * is device N, never a count (that is --ngpus). With `device_count` >= 0
 * every device must be below it (a lone number that is not gets a hint to
 * --ngpus); with -1 only the syntax is checked. Fills config->world_size
 * and devices. GS_ERR_USAGE naming `option` ("--gpus"; "DEVICES" for a
 * plan's task). */
gs_status gs_common_parse_gpus(const char *text, const char *option, int device_count,
                               gs_run_config *config);

/* The "config" block of a result document: common options as resolved plus
 * the workload's own options; NULL when memory runs out. */
cJSON *gs_common_config_json(const gs_common_options *o, const gs_run_config *config,
                             const gs_workload *workload, const void *workload_opts);

/* Whether a sweep of `workload` with `workload_opts` measures its rank
 * counts interleaved, one run of each count per round (1, 2, 4, 1, 2, 4,
 * ...): --order interleaved (the default) and a driver that can with these
 * options (workload.h, `interleaves`, `keeps_runs_together`); else one
 * count's runs after the other's. *why (may be NULL) receives why not when
 * --order interleaved was asked for and the driver cannot, else NULL. */
int gs_common_interleaved(const gs_common_options *o, const gs_workload *workload,
                          const void *workload_opts, const char **why);

/* The rank counts to measure: --counts (each at most config->world_size,
 * else GS_ERR_USAGE naming the option), or by default 1, 2, 4, ... and the
 * whole world when `sweep`, else the whole world only. */
gs_status gs_common_counts(const gs_common_options *o, const gs_run_config *config, int sweep,
                           gs_u64_list *counts);

/* Sets --runs and --warmup that the user did not give to `driver`'s own
 * defaults, where it has them (workload.h). The one place a driver's
 * defaults are applied: the commands call it before parsing, so that
 * --help shows them, and gs_common_configure for every measurement. */
void gs_common_driver_defaults(gs_common_options *o, const gs_workload_driver *driver);

/* Fits the resolved configuration to `workload`'s driver
 * (gs_runner_driver_of): its defaults of --runs and --warmup where the user
 * gave none (into *o and *config), its configure hook (given which common
 * options the user set), and --split proportional refused for a driver
 * that splits no work units. GS_ERR_USAGE naming the option. */
gs_status gs_common_configure(gs_common_options *o, const gs_workload *workload, void *wopts,
                              gs_run_config *config);

/* Default of --trace-steps: timed steps traced per run. */
#define GS_TRACE_STEPS_DEFAULT 5

/* The trace recorder of --trace (NULL in *out without it), after checking
 * that its file can be written and differs from `result_path` (the
 * result document). GS_ERR_USAGE naming --trace or --trace-steps; with a
 * build without trace ranges, GS_ERR_UNSUPPORTED. Free with
 * gs_trace_free. */
gs_status gs_common_trace_open(const gs_common_options *o, const char *result_path,
                               gs_trace **out);

/* Writes the trace file of `trace` (none when NULL) and names it in the
 * result document `doc` being written to `doc_path`: the member "trace"
 * (docs/result-schema.md) with the file's path relative to the
 * document's directory when it lies there, else as given, the step bound
 * and the device lanes' source. Called just before the document is
 * written, so the document never names a trace that is not on disk; a
 * trace that cannot be written is a note, and the document is written
 * without it. GS_ERR_NOMEM. */
gs_status gs_common_add_trace(cJSON *doc, const gs_trace *trace, const char *doc_path);

/* Collects the environment (host, GPUs, library versions) into env. */
gs_status gs_common_environment(gs_environment *env);

/* The status of a document holding measurements ms[0..count) by the one
 * rule of core/result (gs_result_status_rule); `complete` is 0 while more
 * measurements are to come. */
const char *gs_common_result_status(const gs_measurement *ms, size_t count, int complete);

/* Writes a result document with its status derived from the measurements
 * (`complete` as above), and says where it went (unless quiet). `stamp`,
 * when not NULL, is the job's record of its last write (gs_result_rewrite):
 * a document another process put there since is kept. */
gs_status gs_common_write_result(cJSON *doc, const gs_measurement *ms, size_t count,
                                 int complete, const char *path, gs_file_stamp *stamp);

#endif
