/* Layouts of one node in a report (llm --layouts; docs/workloads/llm.md,
 * "Layouts of a node"): the request-based rows of one document at one
 * world size that differ in their tensor-parallel degree or pipeline
 * stages (a replica's GPUs are tp x pp), each
 * with its tokens/s per GPU and per user, the Pareto frontier of the two,
 * whether it met the document's latency targets and the best layout that
 * did. Computed from the rows alone (report/read). */
#ifndef GS_REPORT_ANALYZE_LAYOUTS_H
#define GS_REPORT_ANALYZE_LAYOUTS_H

#include "report/analyze/report.h"

typedef struct {
  size_t series, row;     /* where the row is in the report */
  int tp, pp, replicas;   /* a replica's GPUs are tp x pp (llm.pipeline.stages);
                             replicas: world_size / (tp x pp) */
  double per_gpu;         /* row throughput (tokens/s of ok requests) / world_size */
  double per_user;        /* 1 / median TPOT; NaN without TPOTs */
  double goodput_per_gpu; /* goodput tokens/s / world_size; NaN without targets */
  int met;                /* the targets met at their percentile; -1 without targets */
  int on_front;           /* 1: on the Pareto frontier of (per_user, per_gpu) */
} gs_report_layout;

typedef struct {
  size_t file;
  int world_size;
  size_t n;
  gs_report_layout *l;    /* by tp, then pp; owned */
  int best;               /* index of the best layout meeting the targets, -1 none */
} gs_report_layout_group;

typedef struct {
  size_t n;
  gs_report_layout_group *g; /* owned */
} gs_report_layouts;

/* The layout groups of `r`: rows with requests of one file and world size
 * holding at least two layouts (tp x pp). GS_ERR_NOMEM when memory
 * runs out (*out is then empty). */
gs_status gs_report_layouts_find(const gs_report *r, gs_report_layouts *out);

void gs_report_layouts_free(gs_report_layouts *l);

#endif
