/* What the files of report/predict share among themselves and nobody
 * else calls: llm's layouts and its pooled request fit (requests.c), the
 * rows a fit takes (predict.c). */
#ifndef GS_PREDICT_INTERNAL_H
#define GS_PREDICT_INTERNAL_H

#include <stddef.h>

#include "report/predict/predict.h"

/* One number of a plain struct written as JSON: its member name, where it
 * lies in the struct, and whether it is an int (else a double). A table
 * of them ends with a NULL name. */
typedef struct {
  const char *name;
  size_t offset;
  int is_int;
} gs_predict_json_field;

#define GS_PREDICT_JSON_INT(type, name, member) {(name), offsetof(type, member), 1}
#define GS_PREDICT_JSON_NUM(type, name, member) {(name), offsetof(type, member), 0}
#define GS_PREDICT_JSON_END {NULL, 0, 0}

/* Puts the `fields` of the struct at `row` into object `o`. */
void gs_predict_json_fields(gs_json_build *b, cJSON *o, const void *row,
                            const gs_predict_json_field *fields);

/* Puts [low, high] (an interval or a bracket; NaN as null) as member `name`. */
void gs_predict_json_pair(gs_json_build *b, cJSON *o, const char *name, double low, double high);

/* Appends to `arr` the object of one predicted series: "series": `name`,
 * then the `fields` of the struct at `series`; returns it for the caller's
 * other members (NULL after a failed add, which `b` records). */
cJSON *gs_predict_json_series(gs_json_build *b, cJSON *arr, const char *name, const void *series,
                              const gs_predict_json_field *fields);

/* Puts "assumption" and "predictions" (one object of `fields` per element
 * of rows[0..n), each `stride` bytes) into the series object `o`. */
void gs_predict_json_predictions(gs_json_build *b, cJSON *o, const char *assumption,
                                 const void *rows, size_t n, size_t stride,
                                 const gs_predict_json_field *fields);

/* The replica layout of an llm row: tp = parallelism.gpus_per_rank /
 * llm.pipeline.stages, pp = the stages, micro = llm.pipeline.micro_batches
 * and imbalance = the slowest stage's busy time over the stages' mean (1
 * and 1 without a pipeline). */
gs_predict_layout gs_predict_row_layout(const gs_report *r, const gs_report_row *row);

/* 1 when `l` is the layout held out by --holdout-layout. */
int gs_predict_layout_held(const gs_predict_options *opt, const gs_predict_layout *l);

/* 1 when series `a` and `b` measured the same workload, backend, scaling
 * and options but for the replica's layout (tp, pp, micro-batches, stage
 * boundaries, --layouts). */
int gs_predict_same_stream(const gs_report_series *a, const gs_report_series *b);

/* 1 when `row` is fitted: ok, below --holdout's count and (llm, with `r`;
 * NULL skips the check) not of the held-out layout. */
int gs_predict_row_fitted(const gs_predict_options *opt, const gs_report *r,
                          const gs_report_row *row);

/* 1 when `row` is checked against the prediction: ok, at or above
 * --holdout's count, or (llm) of the held-out layout. */
int gs_predict_row_checked(const gs_predict_options *opt, const gs_report *r,
                           const gs_report_row *row);

/* One llm row as the fit reads it (its mean run, tokens per run, layout,
 * the run mean's relative 95% half-width); 0 when it has no run. */
int gs_predict_request_run(const gs_report *r, const gs_report_row *row, gs_predict_request_obs *o);

/* Fits the request model of series `s` into w->model from every fitted row
 * of every offline series of the same stream (gs_predict_same_stream),
 * each with its own layout; w->fitted gains their counts and w->n_family
 * counts the series used (this one among them when it was fitted). GS_ERR_USAGE naming the series when nothing is
 * left to fit or the fit fails. */
gs_status gs_predict_requests_fit(const gs_report *r, const gs_report_series *s,
                                  const gs_predict *p, gs_predict_workload *w);

#endif
