/* What exec.c (options, document, printing) and exec_run.c (the runs of
 * one measurement) share: the context of one exec sweep. */
#ifndef GS_MEASURE_EXEC_PRIVATE_H
#define GS_MEASURE_EXEC_PRIVATE_H

#include "measure/exec.h"
#include "measure/exec_child.h"

/* Lines of stderr kept with a failed run. */
#define GS_EXEC_TAIL_LINES 20
#define GS_EXEC_TAIL_BYTES 2048

/* One run of the command (warmup or timed). */
typedef struct {
  int timed;
  size_t index;                  /* among the warmup or the timed runs */
  gs_exec_child_result child;
  gs_status status;              /* the run's outcome: the child's, or a missing metric */
  char reason[GS_TEXT_ERROR];
  size_t values;                 /* samples of the figure it gave */
  size_t lost_steps;             /* child.lost_rank's values of the figure before it ended */
  double read_seconds;           /* gpuscale's time reading its output (after it exited) */
  char stdout_log[GS_TEXT_LONG]; /* "" with --no-logs */
  char stderr_log[GS_TEXT_LONG];
  char stderr_tail[GS_EXEC_TAIL_BYTES]; /* failed runs only */
} gs_exec_run_note;

/* One measurement (one GPU count): what the command was and every run. */
typedef struct {
  int world_size;                /* the GPU count, {n} */
  int argc;
  char **argv;                   /* the command as run (placeholders filled), owned */
  char **envp;                   /* its environment, owned */
  char visible[GS_TEXT_LONG];    /* CUDA_VISIBLE_DEVICES as set; "" when not set */
  char gpus[GS_TEXT_LONG];       /* the {gpus} text */
  size_t n_notes;
  gs_exec_run_note *notes;       /* warmup then timed runs, owned */
  size_t n_metrics;
  gs_exec_metric metrics[GS_EXEC_METRICS_MAX]; /* over the timed runs (no steps) */
  double items;                  /* the figure's "items" at this count (every run the
                                    same); 0 when its lines carry none */
} gs_exec_record;

/* The figure, once known (chosen by the options or by the first run). */
typedef struct {
  int known;
  gs_exec_figure_source source;
  char name[GS_TEXT_SHORT];      /* "wall_time" for the wall time */
  char unit[GS_TEXT_SHORT];
  gs_exec_unit_kind kind;
  double seconds_per_unit;       /* kind TIME */
  char item_unit[GS_TEXT_SHORT]; /* what the throughput counts */
  int items_printed;             /* a time whose lines carry "items": they are a step's work */
  int per_step;                  /* some run printed values per step */
  int per_rank;                  /* some run printed values per rank */
} gs_exec_figure;

typedef struct {
  const gs_exec_options *o;
  const gs_environment *env;
  gs_exec_figure figure;
  int weak;                      /* --scaling weak: a step's items count N times */
  size_t count;
  gs_exec_record *records;       /* `count`, one per measurement */
} gs_exec_ctx;

/* The driver's measure hook (exec_run.c): the command at config->world_size
 * GPUs, warmup then timed runs, into *m and ctx->records[index]. */
gs_status gs_exec_measure(void *ctx, const gs_run_config *config, size_t index,
                          gs_measurement *m);

/* Sets f->item_unit and f->items_printed for a time figure: the
 * "item_unit" of the figure's lines `m` when they carry "items" ("items"
 * when they name none), else --item-unit under --items ("items"), else
 * `plain` ("steps", "runs"). `m` is NULL for a pattern or the wall time. */
void gs_exec_time_items(const gs_exec_options *o, const gs_exec_metric *m, const char *plain,
                        gs_exec_figure *f);

/* Frees one record's arrays. */
void gs_exec_record_free(gs_exec_record *r);

#endif
