/* `gpuscale exec`: the user's own command measured at 1, 2, 4 ... GPUs
 * (docs/exec.md). The command is measured through the sweep of run and
 * scale (measure/sweep.h) as a workload with its own timing loop: the
 * driver hooks of gs_exec_workload run the command --warmup and --runs
 * times per GPU count, read its figure from its output (the protocol or
 * --metric patterns) or take its wall time, and fill ordinary
 * measurements, so the document, its telemetry, report and compare are
 * those of every measuring command. */
#ifndef GS_MEASURE_EXEC_H
#define GS_MEASURE_EXEC_H

#include "measure/common.h"
#include "measure/exec_output.h"

/* Entries of exec's own option table (with its end marker). */
#define GS_EXEC_OPTION_COUNT 8

/* Where the figure of the measurements comes from. */
typedef enum {
  GS_EXEC_FIGURE_AUTO = 0,  /* the first protocol metric the command prints, else wall time */
  GS_EXEC_FIGURE_PROTOCOL,  /* the protocol metric named by the first --metric NAME */
  GS_EXEC_FIGURE_PATTERN,   /* the first --metric NAME=REGEX */
  GS_EXEC_FIGURE_WALL       /* each run's wall time (chosen when a run printed no protocol line) */
} gs_exec_figure_source;

typedef struct {
  int argc;                     /* the command after "--", placeholders unexpanded */
  char **argv;                  /* points into main's argv */
  gs_string_list metric_texts;  /* --metric NAME or NAME=REGEX, repeatable */
  const char *unit;             /* --unit of a NAME=REGEX figure */
  int better_choice, given_better; /* --better higher|lower */
  int no_visible_devices;       /* do not set CUDA_VISIBLE_DEVICES */
  int no_logs;                  /* discard the command's output after reading it */
  const char *items_text;       /* --items: the items of a step (per GPU under weak scaling) */
  const char *item_unit;        /* --item-unit: what they are (default "items") */
  /* Filled by gs_exec_options_check and gs_exec_prepare. */
  size_t n_metrics;
  gs_exec_pattern metrics[GS_LIST_MAX]; /* a bare NAME has no compiled regex */
  int is_pattern[GS_LIST_MAX];
  size_t n_patterns;
  gs_exec_pattern patterns[GS_LIST_MAX]; /* copies of the compiled ones, for the scan */
  gs_exec_figure_source figure_source;
  uint64_t items;               /* --items as a number; 0 when not given */
  double timeout_seconds;       /* per run; 0: none */
  char log_dir[GS_TEXT_LONG];   /* "" with --no-logs */
  gs_option table[GS_EXEC_OPTION_COUNT];
} gs_exec_options;

/* The choices of --better, named by the enum of their indices. */
extern const char *const gs_exec_better_choices[]; /* higher, lower */
enum { GS_EXEC_BETTER_HIGHER = 0, GS_EXEC_BETTER_LOWER = 1 };

/* Defaults and the option table of exec's own options. */
void gs_exec_options_init(gs_exec_options *o);

/* Checks exec's options after parsing and compiles the patterns:
 * GS_ERR_USAGE naming the option (a missing command, a bad pattern, a
 * --unit that is neither a time nor a rate, --unit or --better without a
 * NAME=REGEX figure, a metric named twice, a bad --items or --item-unit,
 * --items for a rate figure, a program that cannot be found). */
gs_status gs_exec_options_check(gs_exec_options *o);

/* Frees the compiled patterns. */
void gs_exec_options_free(gs_exec_options *o);

/* The default result file: results/exec-PROGRAM.json. */
void gs_exec_default_out(const gs_exec_options *o, char *path, size_t size);

/* Resolves the common options for exec into *config and *counts: GPUs as
 * run and scale do (default: every GPU, counts 1, 2, 4 ... and the whole
 * selection); on a machine without GPUs (the cpu backend) the counts are
 * honoured as they are (default 1) and the step's ordinals are 0..n-1.
 * Sets the per-run timeout and the log directory beside `path` (PATH
 * without .json, plus ".logs"; none with --no-logs). */
gs_status gs_exec_prepare(const gs_common_options *common, gs_exec_options *o,
                          gs_run_config *config, gs_u64_list *counts, const char *path);

/* The workload whose driver hooks measure the command (not registered:
 * only `gpuscale exec` uses it). Its options are a gs_exec_options. */
const gs_workload *gs_exec_workload(void);

#endif
