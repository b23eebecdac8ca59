/* Options shared by the measuring commands and their resolution into a
 * backend and ranks; config/environment blocks of result documents. */
#include "measure/common.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner/runner_driver.h"
#include "core/check.h"
#include "core/file.h"
#include "platform/device.h"

const char *const gs_backend_choices[] = {"auto", "cuda", "cpu", NULL};
const char *const gs_scaling_choices[] = {"strong", "weak", NULL};
const char *const gs_split_choices[] = {"even", "proportional", NULL};
const char *const gs_order_choices[] = {"interleaved", "sequential", NULL};
const char *const gs_gpu_mode_choices[] = {"single", "multi", "auto", NULL};

/* The most options one group adds. */
#define GROUP_MAX_OPTIONS 5

/* One group of options: the bit that selects it, its title in --help, and
 * what it appends to the table. */
typedef struct {
  unsigned bit;
  const char *title;
  size_t (*add)(gs_common_options *o, unsigned groups, gs_option *t);
} common_group;

static size_t add_output(gs_common_options *o, unsigned groups, gs_option *t) {
  const int dir = (groups & GS_GROUP_OUT_DIR) != 0;
  size_t n = 0;
  t[n++] = (gs_option){.name = "out", .short_name = 'o', .kind = GS_OPT_STRING,
                       .target = &o->out, .metavar = dir ? "DIR" : "FILE",
                       .help = dir ? "directory for result files (default results)"
                                   : "result file (default results/<command>-<workload>.json)",
                       .given = &o->given_out};
  t[n++] = (gs_option){.name = "quiet", .short_name = 'q', .kind = GS_OPT_FLAG,
                       .target = &o->quiet, .help = "no notes and no progress line"};
  t[n++] = (gs_option){.name = "no-progress", .kind = GS_OPT_FLAG, .target = &o->no_progress,
                       .help = "no progress line on a terminal"};
  return n;
}

static size_t add_devices(gs_common_options *o, unsigned groups, gs_option *t) {
  size_t n = 0;
  if (groups & GS_GROUP_BACKEND)
    t[n++] = (gs_option){.name = "backend", .kind = GS_OPT_CHOICE, .target = &o->backend_choice,
                         .choices = gs_backend_choices, .metavar = "B",
                         .help = "where to run (auto: cuda when a GPU is present, else cpu)",
                         .given = &o->given_backend};
  if (groups & GS_GROUP_GPUS) {
    t[n++] = (gs_option){.name = "gpus", .kind = GS_OPT_STRING, .target = &o->gpus_text,
                         .metavar = "LIST",
                         .help = "GPUs by CUDA ordinal as CUDA_VISIBLE_DEVICES writes them: 0, "
                                 "0,2 or 0-3 (default: GPU 0 for run, every GPU otherwise)",
                         .given = &o->given_gpus};
    t[n++] = (gs_option){.name = "ngpus", .short_name = 'g', .kind = GS_OPT_COUNT,
                         .target = &o->ngpus, .min = 1, .max = GS_MAX_RANKS, .metavar = "N",
                         .help = "the first N GPUs: a count, where --gpus names GPUs "
                                 "(default: as --gpus)",
                         .given = &o->given_ngpus};
  }
  if (groups & GS_GROUP_RANKS)
    t[n++] = (gs_option){.name = "ranks", .kind = GS_OPT_COUNT, .target = &o->ranks, .min = 1,
                         .max = GS_MAX_RANKS, .metavar = "N",
                         .help = "CPU backend: worker threads (default 1 for run; the core count, "
                                 "at most 8, for scale and suite)",
                         .given = &o->given_ranks};
  return n;
}

static size_t add_timing(gs_common_options *o, unsigned groups, gs_option *t) {
  size_t n = 0;
  if (groups & GS_GROUP_WARMUP)
    t[n++] = (gs_option){.name = "warmup", .short_name = 'w', .kind = GS_OPT_COUNT,
                         .target = &o->warmup, .min = 0, .max = 1000000, .metavar = "N",
                         .help = "untimed iterations before each run", .given = &o->given_warmup};
  if (groups & GS_GROUP_ITERS)
    t[n++] = (gs_option){.name = "iters", .short_name = 'n', .kind = GS_OPT_COUNT,
                         .target = &o->iters, .min = 1, .max = 100000000, .metavar = "N",
                         .help = (groups & GS_GROUP_MIN_TIME)
                                     ? "timed iterations per run (default: as many as --min-time "
                                       "takes)"
                                     : "timed iterations per run",
                         .given = &o->given_iters};
  if (groups & GS_GROUP_MIN_TIME)
    t[n++] = (gs_option){.name = "min-time", .kind = GS_OPT_DOUBLE, .target = &o->min_time,
                         .dmin = 0.0, .dmax = 86400.0, .metavar = "SEC",
                         .help = "timed seconds per run, at least 10 iterations",
                         .given = &o->given_min_time};
  if (groups & GS_GROUP_RUNS)
    t[n++] = (gs_option){.name = "runs", .kind = GS_OPT_COUNT, .target = &o->runs, .min = 1,
                         .max = 1000, .metavar = "N", .help = "repeated runs",
                         .given = &o->given_runs};
  if (groups & GS_GROUP_SEED)
    t[n++] = (gs_option){.name = "seed", .kind = GS_OPT_COUNT, .target = &o->seed, .min = 0,
                         .max = UINT64_MAX, .metavar = "S",
                         .help = "seed of the generated input data"};
  return n;
}

static size_t add_telemetry(gs_common_options *o, unsigned groups, gs_option *t) {
  (void)groups;
  t[0] = (gs_option){.name = "telemetry-interval", .kind = GS_OPT_DOUBLE,
                     .target = &o->telemetry_interval, .dmin = 0.0, .dmax = 3600.0,
                     .metavar = "SEC",
                     .help = "GPU telemetry (NVML) every SEC seconds during measuring; 0 = off"};
  t[1] = (gs_option){.name = "telemetry-series", .kind = GS_OPT_FLAG,
                     .target = &o->telemetry_series,
                     .help = "keep every telemetry reading in the result, not only min/mean/max"};
  return 2;
}

static size_t add_timeout(gs_common_options *o, unsigned groups, gs_option *t) {
  (void)groups;
  t[0] = (gs_option){.name = "timeout", .kind = GS_OPT_DOUBLE, .target = &o->timeout,
                     .dmin = 0.0, .dmax = 86400.0, .metavar = "SEC",
                     .help = "longest wait of a rank for the others before the run ends as "
                             "partial (0: no limit; docs/multinode.md)"};
  return 1;
}

static size_t add_arrival(gs_common_options *o, unsigned groups, gs_option *t) {
  (void)groups;
  t[0] = (gs_option){.name = "arrival-times", .kind = GS_OPT_COUNT, .target = &o->arrival_times,
                     .min = 0, .max = 1, .metavar = "0|1",
                     .help = "record every rank's entry and exit at each collective of ranks "
                             "that communicate, for arrival skew (docs/stragglers.md); 0 "
                             "records none (default 1)",
                     .given = &o->given_arrival_times};
  return 1;
}

static size_t add_nccl(gs_common_options *o, unsigned groups, gs_option *t) {
  (void)groups;
  t[0] = (gs_option){.name = "nccl-max-ctas", .kind = GS_OPT_COUNT, .target = &o->nccl_max_ctas,
                     .min = 0, .max = GS_COMM_MAX_CTAS, .metavar = "N",
                     .help = "cuda: the most CTAs (thread blocks) NCCL gives one collective of "
                             "the measured ranks; 0 = NCCL's default (default: 4 in run, scale "
                             "and suite where the workload's collectives overlap its compute, "
                             "as mlp's data-parallel all-reduces do; else 0)",
                     .given = &o->given_nccl_max_ctas};
  return 1;
}

static size_t add_trace(gs_common_options *o, unsigned groups, gs_option *t) {
  (void)groups;
  t[0] = (gs_option){.name = "trace", .kind = GS_OPT_STRING, .target = &o->trace,
                     .metavar = "FILE",
                     .help = "write a timeline of the first steps of every run per rank "
                             "(Chrome trace JSON for Perfetto; docs/timeline.md)"};
  t[1] = (gs_option){.name = "trace-steps", .kind = GS_OPT_COUNT, .target = &o->trace_steps,
                     .min = 1, .max = 1000000, .metavar = "N",
                     .help = "timed steps per run in the --trace file (default 5)",
                     .given = &o->given_trace_steps};
  return 2;
}

static size_t add_scale(gs_common_options *o, unsigned groups, gs_option *t) {
  size_t n = 0;
  if (groups & GS_GROUP_SCALE) {
    t[n++] = (gs_option){.name = "scaling", .kind = GS_OPT_CHOICE, .target = &o->scaling_choice,
                         .choices = gs_scaling_choices, .metavar = "MODE",
                         .help = "strong: fixed total work split over ranks; weak: fixed work "
                                 "per rank",
                         .given = &o->given_scaling};
    t[n++] = (gs_option){.name = "counts", .kind = GS_OPT_COUNT_LIST, .target = &o->counts,
                         .min = 1, .max = GS_MAX_RANKS, .metavar = "LIST",
                         .help = "rank counts to measure (default 1,2,4,... and the total)",
                         .given = &o->given_counts};
    t[n++] = (gs_option){.name = "order", .kind = GS_OPT_CHOICE, .target = &o->order_choice,
                         .choices = gs_order_choices, .metavar = "ORDER",
                         .help = "interleaved: one run of each count in turn (1,2,4,1,2,4,...), "
                                 "so drift hits every count; sequential: each count's runs "
                                 "together"};
  }
  if (groups & GS_GROUP_SPLIT)
    t[n++] = (gs_option){.name = "split", .kind = GS_OPT_CHOICE, .target = &o->split_choice,
                         .choices = gs_split_choices, .metavar = "POLICY",
                         .help = "work units per rank: even, or proportional to each rank's "
                                 "calibrated speed (measured next to even, with the gain)"};
  if (groups & GS_GROUP_GPU_MODE)
    t[n++] = (gs_option){.name = "gpu-mode", .kind = GS_OPT_CHOICE, .target = &o->gpu_mode_choice,
                         .choices = gs_gpu_mode_choices, .metavar = "MODE",
                         .help = "single: the first selected GPU; multi: all selected; auto: "
                                 "measure both briefly and use multi only at >= 1.1x",
                         .given = &o->given_gpu_mode};
  return n;
}

static size_t add_faults(gs_common_options *o, unsigned groups, gs_option *t) {
  (void)groups;
  t[0] = (gs_option){.name = "inject", .kind = GS_OPT_STRING_LIST, .target = &o->inject,
                     .metavar = "KIND:rank=R,...",
                     .help = "inject a fault, repeatable; slow:rank=R,factor=F makes rank R's "
                             "steps take F times its own work"};
  return 1;
}

/* The groups in the order --help lists them. */
static const common_group groups_in_order[] = {
    {GS_GROUP_OUTPUT, "Output", add_output},
    {GS_GROUP_DEVICES, "GPUs and ranks", add_devices},
    {GS_GROUP_TIMING | GS_GROUP_SEED, "Timing", add_timing},
    {GS_GROUP_SCALE | GS_GROUP_SPLIT | GS_GROUP_GPU_MODE, "Scaling", add_scale},
    {GS_GROUP_TELEMETRY, "Telemetry", add_telemetry},
    {GS_GROUP_TIMEOUT, "Waiting for ranks", add_timeout},
    {GS_GROUP_ARRIVAL, "Stragglers", add_arrival},
    {GS_GROUP_NCCL, "Communication", add_nccl},
    {GS_GROUP_FAULTS, "Faults", add_faults},
    {GS_GROUP_TRACE, "Trace", add_trace},
};

void gs_common_init(gs_common_options *o, unsigned groups) {
  memset(o, 0, sizeof *o);
  o->ranks = 1;
  o->warmup = 3;
  o->min_time = 1.0;
  o->runs = 3;
  o->seed = 42;
  o->telemetry_interval = 0.1;
  o->timeout = 120.0;
  o->trace_steps = GS_TRACE_STEPS_DEFAULT;
  o->arrival_times = 1;
  o->group_bits = groups;
  size_t n = 0;
  for (size_t g = 0; g < sizeof groups_in_order / sizeof groups_in_order[0]; g++) {
    const common_group *group = &groups_in_order[g];
    if (!(groups & group->bit)) continue;
    const size_t begin = n;
    if (n + GROUP_MAX_OPTIONS >= GS_COMMON_OPTION_COUNT || o->n_groups == GS_COMMON_GROUP_MAX)
      GS_BUG("the common option table is too small for its groups");
    n += group->add(o, groups, o->table + n);
    o->groups[o->n_groups].title = group->title;
    o->groups[o->n_groups].begin = begin;
    o->groups[o->n_groups].end = n;
    o->n_groups++;
  }
  o->table[n] = (gs_option){.kind = GS_OPT_END};
}

void gs_common_describe(const gs_common_options *o,
                        void (*section)(const char *title, const gs_option *table)) {
  for (size_t g = 0; g < o->n_groups; g++) {
    gs_option slice[GS_COMMON_OPTION_COUNT];
    size_t n = 0;
    for (size_t i = o->groups[g].begin; i < o->groups[g].end; i++) slice[n++] = o->table[i];
    slice[n] = (gs_option){.kind = GS_OPT_END};
    section(o->groups[g].title, slice);
  }
}

/* 1 when text is one number, e.g. "2": no list, no range. */
static int lone_number(const char *text) {
  return strchr(text, '-') == NULL && strchr(text, ',') == NULL;
}

/* Records the usage error of a --gpus value: "option LABEL: ...". */
static gs_status gpus_error(const char *option, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static gs_status gpus_error(const char *option, const char *fmt, ...) {
  char why[GS_TEXT_ERROR];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return gs_error(GS_ERR_USAGE, "option %s: %s", option, why);
}

gs_status gs_common_parse_gpus(const char *text, const char *option, int device_count,
                               gs_run_config *config) {
  char buf[256];
  if (strlen(text) >= sizeof buf) return gpus_error(option, "list too long");
  snprintf(buf, sizeof buf, "%s", text);
  config->world_size = 0;
  // Only digits, commas and one dash per item; no empty item ("0,,1", "1-").
  const size_t len = strlen(buf);
  int well_formed = len > 0 && buf[0] != ',' && buf[len - 1] != ',' && !strstr(buf, ",,");
  int dashes = 0; /* in the current item */
  for (size_t i = 0; well_formed && i < len; i++) {
    const char c = buf[i];
    if (c == ',') {
      dashes = 0;
    } else if (c == '-') {
      well_formed = ++dashes == 1 && i > 0 && isdigit((unsigned char)buf[i - 1]) &&
                    isdigit((unsigned char)buf[i + 1]);
    } else {
      well_formed = isdigit((unsigned char)c);
    }
  }
  if (!well_formed)
    return gpus_error(option, "'%s' is not a list of GPU ordinals (0, 0,2 or 0-3)", text);
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    uint64_t first = 0, last = 0;
    char *dash = strchr(item, '-');
    if (dash) {
      *dash = '\0';
      GS_TRY(gs_parse_count(item, option, 0, GS_MAX_RANKS - 1, &first));
      GS_TRY(gs_parse_count(dash + 1, option, 0, GS_MAX_RANKS - 1, &last));
      if (last < first)
        return gpus_error(option, "range %llu-%llu runs backwards", (unsigned long long)first,
                          (unsigned long long)last);
    } else {
      GS_TRY(gs_parse_count(item, option, 0, GS_MAX_RANKS - 1, &first));
      last = first;
    }
    for (uint64_t d = first; d <= last; d++) {
      for (int k = 0; k < config->world_size; k++)
        if (config->devices[k] == (int)d)
          return gpus_error(option, "GPU %llu listed twice", (unsigned long long)d);
      if (config->world_size == GS_MAX_RANKS)
        return gpus_error(option, "more than %d GPUs", GS_MAX_RANKS);
      config->devices[config->world_size++] = (int)d;
    }
  }
  if (config->world_size == 0) return gpus_error(option, "no GPU listed");
  for (int k = 0; device_count >= 0 && k < config->world_size; k++) {
    if (config->devices[k] < device_count) continue;
    // A lone number that is no GPU here was most likely meant as a count.
    if (config->world_size == 1 && lone_number(text))
      return gpus_error(option, "GPU %d does not exist (%d present, 0-%d); the first %d GPUs "
                        "are -g %d (--ngpus)", config->devices[k], device_count,
                        device_count - 1, config->devices[k], config->devices[k]);
    return gpus_error(option, "GPU %d does not exist (%d present)", config->devices[k],
                      device_count);
  }
  return GS_OK;
}

static int cpu_default_ranks(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1) cores = 1;
  return cores > 8 ? 8 : (int)cores;
}

gs_status gs_common_resolve(const gs_common_options *o, int default_all, gs_run_config *config) {
  memset(config, 0, sizeof *config);
  if (o->given_iters && o->given_min_time)
    return gs_error(GS_ERR_USAGE, "options --iters and --min-time conflict: give one");
  if (o->telemetry_interval > 0.0 && o->telemetry_interval < GS_TELEMETRY_MIN_INTERVAL)
    return gs_error(GS_ERR_USAGE,
                    "option --telemetry-interval: %g s is below the shortest interval, %g s "
                    "(0 turns telemetry off)",
                    o->telemetry_interval, GS_TELEMETRY_MIN_INTERVAL);
  const char *gpu_option = o->given_ngpus ? "--ngpus" : "--gpus";
  const int given_gpus = o->given_gpus || o->given_ngpus;
  if (o->given_gpus && o->given_ngpus)
    return gs_error(GS_ERR_USAGE, "options --gpus and --ngpus conflict: --gpus names the GPUs "
                    "(0,2), --ngpus takes the first N; give one");
  if (given_gpus && o->given_ranks)
    return gs_error(GS_ERR_USAGE,
                    "options %s and --ranks conflict: %s is for the cuda backend, "
                    "--ranks for the cpu backend", gpu_option, gpu_option);
  // The syntax first: a malformed list is a usage error on any machine.
  if (o->given_gpus) GS_TRY(gs_common_parse_gpus(o->gpus_text, "--gpus", -1, config));

  char why[GS_TEXT_LONG] = "";
  int device_count = gs_device_count(why, sizeof why);
  int backend = o->backend_choice;
  if (backend == GS_BACKEND_CHOICE_AUTO) {
    if (o->given_ranks) {
      backend = GS_BACKEND_CHOICE_CPU;
    } else if (device_count > 0) {
      backend = GS_BACKEND_CHOICE_CUDA;
    } else {
      if (given_gpus) return gs_error(GS_ERR_UNSUPPORTED, "option %s: %s", gpu_option, why);
      backend = GS_BACKEND_CHOICE_CPU;
      gs_note("%s: running the CPU backend", why);
    }
  }
  if (backend == GS_BACKEND_CHOICE_CUDA) {
    if (o->given_ranks)
      return gs_error(GS_ERR_USAGE,
                      "option --ranks applies to the cpu backend; select GPUs with --gpus or "
                      "--ngpus");
    if (device_count == 0) return gs_error(GS_ERR_UNSUPPORTED, "--backend cuda: %s", why);
    config->backend = GS_BACKEND_CUDA;
    if (o->given_gpus) {
      GS_TRY(gs_common_parse_gpus(o->gpus_text, "--gpus", device_count, config));
    } else {
      if (o->given_ngpus && o->ngpus > (uint64_t)device_count)
        return gs_error(GS_ERR_USAGE, "option --ngpus: %llu GPUs asked for, %d present",
                        (unsigned long long)o->ngpus, device_count);
      config->world_size = o->given_ngpus ? (int)o->ngpus : default_all ? device_count : 1;
      if (config->world_size > GS_MAX_RANKS) config->world_size = GS_MAX_RANKS;
      for (int k = 0; k < config->world_size; k++) config->devices[k] = k;
    }
  } else {
    if (given_gpus)
      return gs_error(GS_ERR_USAGE,
                      "option %s applies to the cuda backend; the cpu backend takes --ranks",
                      gpu_option);
    config->backend = GS_BACKEND_CPU;
    config->world_size = o->given_ranks ? (int)o->ranks : (default_all ? cpu_default_ranks() : 1);
    if (o->mpi_processes > 0) config->world_size = o->mpi_processes;
    for (int k = 0; k < config->world_size; k++) config->devices[k] = -1;
  }
  config->scaling = o->scaling_choice == GS_SCALING_CHOICE_WEAK ? GS_SCALING_WEAK : GS_SCALING_STRONG;
  config->warmup = o->warmup;
  config->iters = o->given_iters ? o->iters : 0;
  config->min_time = o->min_time;
  config->min_iters = 10;
  config->max_iters = 10000000;
  config->runs = o->runs;
  config->seed = o->seed;
  config->show_progress = !o->no_progress && !o->quiet;
  config->split_proportional = o->split_choice == GS_SPLIT_CHOICE_PROPORTIONAL;
  config->comm_timeout_seconds = o->timeout;
  config->no_arrival_times = o->arrival_times == 0;
  if (o->given_nccl_max_ctas && o->nccl_max_ctas > 0 && config->backend != GS_BACKEND_CUDA)
    return gs_error(GS_ERR_USAGE, "option --nccl-max-ctas %llu applies to the cuda backend (NCCL's "
                    "communicators); the cpu backend has none (0 is accepted)",
                    (unsigned long long)o->nccl_max_ctas);
  config->nccl_max_ctas = (int)o->nccl_max_ctas;
  for (size_t i = 0; i < o->inject.n; i++) GS_TRY(gs_fault_parse(o->inject.v[i], &config->faults));
  GS_TRY(gs_fault_check_launch(&config->faults, o->mpi_processes > 0));
  return gs_fault_check_ranks(&config->faults,
                              o->mpi_processes > 0 ? o->mpi_processes : config->world_size);
}

gs_status gs_common_choose_ranks(gs_common_options *o, int default_all, const gs_comm_job *job,
                                 gs_run_config *config, int *local_ranks, int *local_devices) {
  int mpi = job->launch == GS_COMM_LAUNCH_MPI;
  if (mpi && o->given_ranks)
    return gs_error(GS_ERR_USAGE, "option --ranks: under %s every process is one rank; set the "
                    "number of processes with the launcher", job->launcher);
  if (mpi && job->process_count > GS_MAX_RANKS)
    return gs_error(GS_ERR_UNSUPPORTED, "%d processes: gpuscale measures at most %d ranks",
                    job->process_count, GS_MAX_RANKS);
  o->mpi_processes = mpi ? job->process_count : 0;
  // Every process resolves the same options: only process 0 tells their
  // notes (the CPU backend's "no NVIDIA driver found" once, not per rank).
  int quiet = gs_is_quiet();
  if (mpi && job->process_rank != 0) gs_set_quiet(1);
  gs_status resolved = gs_common_resolve(o, default_all, config);
  gs_set_quiet(quiet);
  GS_TRY(resolved);
  if (!mpi) {
    *local_ranks = config->world_size;
    for (int k = 0; k < config->world_size; k++) local_devices[k] = config->devices[k];
    return GS_OK;
  }
  *local_ranks = 1;
  local_devices[0] = -1;
  if (config->backend == GS_BACKEND_CUDA) {
    // The GPUs this process may use: the --gpus list, or all it sees.
    local_devices[0] = config->devices[job->local_rank % config->world_size];
    if (!o->given_gpus && !o->given_ngpus) {
      int n = gs_device_count(NULL, 0);
      local_devices[0] = job->local_rank % (n > 0 ? n : 1);
    }
  }
  config->world_size = job->process_count;
  return GS_OK;
}

cJSON *gs_common_config_json(const gs_common_options *o, const gs_run_config *config,
                             const gs_workload *workload, const void *workload_opts) {
  gs_json_build build = {0}, *b = &build;
  cJSON *c = gs_json_check(b, cJSON_CreateObject());
  gs_json_put_string(b, c, "backend", config->backend == GS_BACKEND_CUDA ? "cuda" : "cpu");
  cJSON *devices = gs_json_put_array(b, c, "devices");
  for (int k = 0; k < config->world_size; k++)
    gs_json_append(b, devices, config->backend == GS_BACKEND_CUDA
                                   ? cJSON_CreateNumber(config->devices[k])
                                   : cJSON_CreateNull());
  gs_json_put_number(b, c, "ranks", config->world_size);
  if (o->given_gpu_mode)
    gs_json_put_string(b, c, "gpu_mode", gs_gpu_mode_choices[o->gpu_mode_choice]);
  gs_json_put_string(b, c, "scaling", gs_scaling_name(config->scaling));
  if (o->given_counts) {
    cJSON *counts = gs_json_put_array(b, c, "counts");
    for (size_t i = 0; i < o->counts.n; i++)
      gs_json_append_number(b, counts, (double)o->counts.v[i]);
  }
  gs_json_put_number(b, c, "warmup", (double)config->warmup);
  if (config->iters > 0) {
    gs_json_put_number(b, c, "iters", (double)config->iters);
    gs_json_put_null(b, c, "min_time_seconds");
  } else {
    gs_json_put_null(b, c, "iters");
    gs_json_put_number(b, c, "min_time_seconds", config->min_time);
  }
  gs_json_put_number(b, c, "min_iters", (double)config->min_iters);
  gs_json_put_number(b, c, "max_iters", (double)config->max_iters);
  gs_json_put_number(b, c, "runs", (double)config->runs);
  gs_json_put_number(b, c, "telemetry_interval_seconds", o->telemetry_interval);
  gs_json_put_bool(b, c, "telemetry_series", o->telemetry_series != 0);
  // Seeds are 64-bit: kept as a string so no digit is lost in a JSON double.
  char seed[32];
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)config->seed);
  gs_json_put_string(b, c, "seed", seed);
  if (config->split_proportional) gs_json_put_string(b, c, "split", "proportional");
  // The option as given or by default, where the command takes it; whether
  // a measurement recorded is its own "arrival" member (docs/result-schema.md).
  if (o->group_bits & GS_GROUP_ARRIVAL)
    gs_json_put_bool(b, c, "arrival_times", !config->no_arrival_times);
  // What the world's NCCL communicators were created with; null: NCCL's
  // default, which also covers the cpu backend (no NCCL).
  if (o->group_bits & GS_GROUP_NCCL) {
    if (config->backend == GS_BACKEND_CUDA && config->nccl_max_ctas > 0)
      gs_json_put_number(b, c, "nccl_max_ctas", config->nccl_max_ctas);
    else
      gs_json_put_null(b, c, "nccl_max_ctas");
  }
  if (config->faults.n > 0)
    gs_json_put_item(b, c, "inject", gs_fault_list_to_json(&config->faults, GS_MAX_RANKS));
  // NCCL's variables choose its transports and algorithms (NCCL_P2P_DISABLE
  // moves a transfer from NVLink to host memory): every document keeps the
  // ones it ran with (on the cpu backend they change nothing).
  cJSON *nccl = gs_comm_nccl_environment_json();
  gs_json_put_item(b, c, "nccl_environment", nccl ? nccl : cJSON_CreateNull());
  if (workload) {
    gs_json_put_string(b, c, "workload", workload->key);
    cJSON *wo = workload->options_to_json(workload_opts);
    gs_json_put_item(b, c, "workload_options", wo ? wo : cJSON_CreateNull());
  }
  if (b->failed) {
    cJSON_Delete(c);
    return NULL;
  }
  return c;
}

gs_status gs_common_counts(const gs_common_options *o, const gs_run_config *config, int sweep,
                           gs_u64_list *counts) {
  memset(counts, 0, sizeof *counts);
  if (o->given_counts) {
    for (size_t i = 0; i < o->counts.n; i++)
      if (o->counts.v[i] > (uint64_t)config->world_size)
        return gs_error(GS_ERR_USAGE, "option --counts: %llu ranks asked for, %d selected",
                        (unsigned long long)o->counts.v[i], config->world_size);
    *counts = o->counts;
  } else if (sweep) {
    for (int c = 1; c < config->world_size && counts->n < GS_LIST_MAX - 1; c *= 2)
      counts->v[counts->n++] = (uint64_t)c;
    counts->v[counts->n++] = (uint64_t)config->world_size;
  } else {
    counts->n = 1;
    counts->v[0] = (uint64_t)config->world_size;
  }
  return GS_OK;
}

int gs_common_interleaved(const gs_common_options *o, const gs_workload *workload,
                          const void *workload_opts, const char **why) {
  if (why) *why = NULL;
  if (o->order_choice != GS_ORDER_CHOICE_INTERLEAVED) return 0;
  const gs_workload_driver *d = gs_runner_driver_of(workload);
  const char *reason = !d->interleaves ? "its driver measures a measurement's runs in one call"
                       : d->keeps_runs_together ? d->keeps_runs_together(workload_opts)
                                                : NULL;
  if (why) *why = reason;
  return reason == NULL;
}

void gs_common_driver_defaults(gs_common_options *o, const gs_workload_driver *driver) {
  if (!o->given_runs && driver->default_runs) o->runs = driver->default_runs;
  if (!o->given_warmup && driver->default_warmup) o->warmup = driver->default_warmup;
}

gs_status gs_common_configure(gs_common_options *o, const gs_workload *workload, void *wopts,
                              gs_run_config *config) {
  const gs_workload_driver *driver = gs_runner_driver_of(workload);
  gs_common_driver_defaults(o, driver);
  config->runs = o->runs;
  config->warmup = o->warmup;
  const gs_given_options given = {.iters = o->given_iters, .min_time = o->given_min_time,
                                  .runs = o->given_runs, .warmup = o->given_warmup,
                                  .gpu_mode = o->given_gpu_mode,
                                  .arrival_times = o->given_arrival_times,
                                  .nccl_max_ctas = o->given_nccl_max_ctas};
  if (driver->configure) GS_TRY(driver->configure(workload, wopts, &given, config));
  // The split is calibrated and measured by a driver that splits work units.
  if (config->split_proportional && !driver->split)
    return gs_error(GS_ERR_USAGE, "option --split proportional does not apply to %s: it has its "
                    "own timing loop", workload->key);
  return GS_OK;
}

gs_status gs_common_trace_open(const gs_common_options *o, const char *result_path,
                               gs_trace **out) {
  *out = NULL;
  if (!o->trace) {
    if (o->given_trace_steps)
      return gs_error(GS_ERR_USAGE, "option --trace-steps applies only with --trace FILE");
    return GS_OK;
  }
  if (!GS_TRACE_BUILT)
    return gs_error(GS_ERR_UNSUPPORTED, "option --trace: this gpuscale was built without trace "
                    "ranges (GPUSCALE_TRACE=OFF)");
  if (!o->trace[0]) return gs_error(GS_ERR_USAGE, "option --trace: empty file name");
  if (result_path && strcmp(o->trace, result_path) == 0)
    return gs_error(GS_ERR_USAGE, "option --trace: %s is the result file too; give the trace "
                    "its own file", o->trace);
  GS_TRY(gs_file_check_output(o->trace, "option --trace"));
  return gs_trace_new(o->trace, o->trace_steps, out);
}

/* The directory part of `path` ("." when it has none) into `dir`. */
static void directory_of(const char *path, char *dir, size_t size) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(dir, size, ".");
  else if (slash == path)
    snprintf(dir, size, "/");
  else
    snprintf(dir, size, "%.*s", (int)(slash - path), path);
}

gs_status gs_common_add_trace(cJSON *doc, const gs_trace *trace, const char *doc_path) {
  if (!trace) return GS_OK;
  // The measurements matter more than their timeline: a trace that cannot
  // be written is a note, and the document is written without naming it.
  gs_error_kept kept;
  gs_error_keep(&kept);
  if (gs_trace_write(trace) != GS_OK) {
    gs_note("the trace was not written: %s", gs_last_error());
    gs_error_restore(&kept);
    return GS_OK;
  }
  // Relative to the document when both lie in one directory, so the pair
  // can be moved together; else the path as given.
  const char *path = gs_trace_path(trace);
  char trace_dir[GS_TEXT_LONG], doc_dir[GS_TEXT_LONG];
  directory_of(path, trace_dir, sizeof trace_dir);
  directory_of(doc_path, doc_dir, sizeof doc_dir);
  struct stat a, b;
  const char *slash = strrchr(path, '/');
  const char *named = path;
  if (stat(trace_dir, &a) == 0 && stat(doc_dir, &b) == 0 && a.st_dev == b.st_dev &&
      a.st_ino == b.st_ino)
    named = slash ? slash + 1 : path;
  cJSON *t = cJSON_CreateObject();
  if (!t || !cJSON_AddStringToObject(t, "file", named) ||
      !cJSON_AddNumberToObject(t, "steps_per_run", (double)gs_trace_steps(trace)) ||
      !cJSON_AddStringToObject(t, "device_source", gs_trace_source(trace)) ||
      !cJSON_AddItemToObject(doc, "trace", t)) {
    cJSON_Delete(t);
    return gs_error(GS_ERR_NOMEM, "out of memory naming the trace in the result document");
  }
  return GS_OK;
}

gs_status gs_common_environment(gs_environment *env) {
  memset(env, 0, sizeof *env);
  gs_environment_collect_host(env);
  gs_device_collect_library_versions(env);
  return gs_device_discover(env);
}

const char *gs_common_result_status(const gs_measurement *ms, size_t count, int complete) {
  size_t failed = 0, with_samples = 0;
  for (size_t i = 0; i < count; i++) {
    if (ms[i].status == GS_OK) continue;
    failed++;
    int kept = 0;
    for (size_t r = 0; r < ms[i].n_runs && !kept; r++)
      for (size_t k = 0; k < ms[i].runs[r].n_ranks && !kept; k++)
        kept = ms[i].runs[r].ranks[k].n_samples > 0;
    with_samples += (size_t)kept;
  }
  return gs_result_status_rule(count, failed, with_samples, complete);
}

gs_status gs_common_write_result(cJSON *doc, const gs_measurement *ms, size_t count,
                                 int complete, const char *path, gs_file_stamp *stamp) {
  GS_TRY(gs_result_set_status(doc, gs_common_result_status(ms, count, complete)));
  GS_TRY(stamp ? gs_result_rewrite(doc, path, stamp) : gs_result_write(doc, path));
  gs_note("result written to %s", path);
  return GS_OK;
}
