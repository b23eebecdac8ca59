/* Predicting scaling past the measured machine (`gpuscale predict`, and
 * `report --predict`): models of compute and communication fitted to result
 * documents and evaluated at any GPU count, one node or many. The model
 * half (gs_predict_fit_*, gs_predict_point_at) is pure arithmetic on a few
 * numbers; the document half (gs_predict_build) takes them from a loaded
 * report. Every model and its assumptions are written down in
 * docs/predict.md; the field names here match that page. */
#ifndef GS_PREDICT_H
#define GS_PREDICT_H

#include <stddef.h>
#include <stdio.h>

#include "core/coll_model.h"
#include "core/json.h"
#include "core/scaling.h"
#include "core/status.h"
#include "report/analyze/report.h"

/* Inter-node network assumed when --inter-node / --inter-node-latency are
 * not given: 50 GB/s (400 Gb/s) per GPU and 5 us per message step. */
#define GS_PREDICT_INTER_NODE_GBPS 50.0
#define GS_PREDICT_INTER_NODE_LATENCY_US 5.0
/* Most GPU counts one prediction takes (a range "1-100000" is fine). */
#define GS_PREDICT_COUNTS_MAX 1000000

/* llm's stage transfers: a residual row is `hidden` fp32 values, a token
 * an int32 (docs/workloads/llm.md, "Pipeline parallelism"). */
#define GS_PREDICT_ACTIVATION_BYTES 4.0
#define GS_PREDICT_TOKEN_BYTES 4.0

/* ---- the models ------------------------------------------------------------ */

typedef enum {
  GS_PREDICT_FIXED_STEP = 0, /* lockstep steps without communication (voxelize, resample, fuse) */
  GS_PREDICT_DATA_PARALLEL,  /* compute per rank + gradient all-reduce that does not overlap (mlp) */
  GS_PREDICT_REQUESTS        /* replicas serving a request stream in batch rounds (llm) */
} gs_predict_kind;

/* "fixed step", "data parallel" or "requests". */
const char *gs_predict_kind_name(gs_predict_kind kind);

/* What the machine's links cost, from a coll document and the options. */
typedef struct {
  int have_allreduce;      /* 1: `allreduce` holds a fit */
  gs_coll_fit allreduce;   /* alpha + beta x bus bytes within one node */
  const gs_coll_curve *curves; /* the allreduce measured within a node, one per rank count */
  size_t n_curves;
  int gpus_per_node;
  gs_coll_link network;    /* between nodes: latency per step, seconds per byte per GPU */
  const gs_coll_curve *network_curve; /* the 2-rank allreduce measured between nodes
                                         (--inter-node-coll; `network` is then its fit), or NULL */
  const gs_coll_curve *sendrecv; /* a 2-rank send/recv measured within a node (coll sendrecv),
                                    or NULL: llm's stage transfers within a node cost 0 */
} gs_predict_machine;

/* Where the cost of an allreduce came from, as bits: a step that makes
 * several may combine them. */
#define GS_PREDICT_FROM_MEASURED 1u /* a measured curve, interpolated at the size */
#define GS_PREDICT_FROM_FIT 2u      /* an alpha-beta fit: outside the measured sizes or counts */
#define GS_PREDICT_FROM_FIGURES 4u  /* the network's figures (--inter-node, --inter-node-latency) */

/* "measured", "fit", "figures" joined by '+' in that order ("none" for 0)
 * into `out`. */
void gs_predict_from_name(unsigned from, char *out, size_t size);

/* Seconds of an allreduce of `bytes` over `gpus` GPUs on `m`: 0 for one
 * GPU; within a node the measured curve at that count where it covers the
 * size, else the fitted alpha + beta x 2(p-1)/p x bytes; across nodes
 * (gpus a multiple of gpus_per_node) the hierarchical form, the network's
 * 2-rank allreduces from its measured curve where it covers them. `*how`
 * (may be NULL) receives "none", "intra-node", "ring" or "tree" (the
 * inter-node algorithm); `*from` (may be NULL) gains the
 * GS_PREDICT_FROM_* bits of the costs used. Needs m->have_allreduce where
 * a node holds more than one of the GPUs. */
double gs_predict_allreduce(const gs_predict_machine *m, double bytes, int gpus,
                            const char **how, unsigned *from);

/* E[max of n independent standard normal variables]: 0 for n = 1, 0.5642
 * for 2, 1.0294 for 4; computed by integrating the density of the maximum. */
double gs_predict_expected_max(int n);

/* One measured GPU count of a step-based series, as the fit reads it. */
typedef struct {
  int gpus;
  double step;    /* mean step time (slowest rank) */
  double compute; /* mean over ranks of device - comm */
  double comm;    /* mean exposed communication */
} gs_predict_step_obs;

/* The layout of an llm replica: `tp` tensor-parallel GPUs in each of `pp`
 * pipeline stages, each prefill and decode call cut into `micro` groups of
 * sequences, the slowest stage's busy time over the stages' mean. A zero
 * member means "as the model measured" (tp, pp), P (micro) or 1 (imbalance). */
typedef struct {
  int tp, pp, micro;
  double imbalance;
} gs_predict_layout;

/* One measured GPU count of a request-based series. */
typedef struct {
  int gpus;
  double run_seconds;    /* mean seconds of one run (the whole request stream) */
  double tokens_per_run; /* generated tokens of one run */
  gs_predict_layout layout; /* the measured replica's layout */
  double run_half;       /* relative half-width of run_seconds' 95% interval (0: unknown) */
} gs_predict_request_obs;

typedef struct {
  gs_predict_kind kind;
  gs_scaling scaling;
  /* Step-based: compute(N) = overhead + work x share(N) + growth x (N - 1),
   * share 1/N strong (growth 0), 1 weak (overhead 0: under weak scaling the
   * fixed part is part of each rank's work, and growth is what each added
   * rank adds: contention); imbalance(N) = noise x gs_predict_expected_max(N). */
  double work_seconds, overhead_seconds, growth_seconds, noise_seconds;
  /* Data parallel: fp32 gradient bytes of the model and the bucket size. */
  double gradient_bytes, bucket_bytes;
  /* Requests: compute seconds of one batch round of a replica at the
   * measured tensor-parallel degree, and the request stream. */
  double round_seconds, tokens_per_run;
  int samples, batch, measured_tp, layers;
  double hidden, element_bytes, decode_steps, prefill_tokens;
  /* Requests with pipeline stages (docs/predict.md, "Pipelined replicas"):
   * the series' own stages, micro-batches and stage imbalance; the share of
   * a stage's call that does not shrink with its micro-batch's rows (1:
   * bound by reading the weights) and whether measurements fitted it; the
   * 95% bounds of round_seconds (at GPU 1, tp 1, pp 1) and of the share. */
  int measured_pp, measured_micro, share_fitted;
  double stage_imbalance, fixed_share;
  double round_low, round_high, share_low, share_high;
} gs_predict_model;

/* Fits work, overhead (strong) or growth (weak) and noise of a step-based
 * model (kind and scaling set by the caller) to `obs[0..n)`, n >= 1:
 * compute by least squares in 1/N (strong; overhead 0 from one count, both
 * kept >= 0) or in N - 1 (weak; growth 0 from one count, kept >= 0); noise
 * as the mean over N > 1 of (step - compute - comm) / e(N) (0 without such
 * counts). GS_ERR_USAGE when n is 0 or a number is not finite. */
gs_status gs_predict_fit_step(const gs_predict_step_obs *obs, size_t n, gs_predict_model *model);

/* Fits a request model (samples, batch, measured_tp, layers, hidden,
 * element_bytes, decode_steps, prefill_tokens set by the caller) to
 * `obs[0..n)`, each with its own layout: round_seconds is one round's
 * compute of one GPU (tp 1, pp 1) and a round at layout (t, p, m, imb)
 * computes round x (p + (m - 1) imb) / (p t) x (fixed_share + (1 -
 * fixed_share) / m), plus the tensor-parallel all-reduces and the stage
 * transfers on `m` (the send/recv curve within a node); round_seconds and
 * fixed_share by least squares of the relative misfit of run / rounds less
 * those costs (fixed_share 1, bound by the weights, when no pipelined
 * measurement with m > 1 is among obs; kept in [0, 1]), their 95% bounds
 * from the runs' intervals; tokens_per_run their mean. GS_ERR_USAGE when n
 * is 0 or a count is not a multiple of a layout's GPUs. */
gs_status gs_predict_fit_requests(const gs_predict_request_obs *obs, size_t n,
                                  const gs_predict_machine *m, gs_predict_model *model);

/* The prediction at one GPU count, with the terms that make it up. */
typedef struct {
  int gpus, nodes;
  double step_seconds;     /* step-based: the step; requests: one run of the stream */
  double throughput;       /* items (tokens) per second */
  double speedup, efficiency; /* against the series' 1-GPU throughput (core/scaling) */
  double speedup_low, speedup_high; /* requests: the 95% bounds, the ratio at each corner of
                                       the fit's interval (both from one fit); NaN none */
  double work, overhead, comm, imbalance; /* seconds; they add up to step_seconds */
  const char *comm_how;    /* "none", "intra-node", "ring", "tree" */
  unsigned comm_from;      /* GS_PREDICT_FROM_* bits of the collective costs used */
  int tensor_parallel, replicas, rounds; /* requests */
  int pipeline_stages, micro_batches;    /* requests: the replica's stages, groups per call */
  double transfer;         /* requests: stage transfers of a run (part of comm) */
  double throughput_low, throughput_high; /* requests: the 95% bounds of throughput from the
                                             fit's bounds; NaN for the other kinds */
  double bound_throughput[4]; /* requests: the throughput at the fit's four corners (round low
                                 or high x share low or high); NaN without bounds. Two
                                 predictions of one fit are ordered only where every corner
                                 orders them alike */
  double measured_low, measured_high;     /* holdout: the measurement's 95% bounds, NaN unknown */
  double error_low, error_high; /* holdout: the error's bounds from both intervals */
  double dollars_per_million, seconds_to_target, dollars_to_target; /* NaN unpriced */
  double measured, error;  /* holdout: the measured step (tokens/s for requests) and
                              (predicted - measured) / measured; NaN when not measured */
} gs_predict_point;

/* Evaluates `model` at `gpus` GPUs on `m` (tensor-parallel degree `tp`
 * for requests, 0: as measured) into `out`; a step-based model's throughput
 * is `items_per_step` (the items of one step at 1 GPU; times N under weak
 * scaling) over the step. Speedup, cost and errors are left NaN. GS_ERR_USAGE when
 * the count cannot be placed: not a multiple of gpus_per_node beyond one
 * node, or of the tensor-parallel degree. */
gs_status gs_predict_point_at(const gs_predict_model *model, const gs_predict_machine *m,
                              double items_per_step, int gpus, int tp, gs_predict_point *out);

/* As gs_predict_point_at, with the replica's pipeline stages `pp` as well
 * (requests; 0: as measured): a count must hold whole replicas of tp x pp
 * GPUs. */
gs_status gs_predict_point_at_layout(const gs_predict_model *model, const gs_predict_machine *m,
                                     double items_per_step, int gpus, int tp, int pp,
                                     gs_predict_point *out);

/* ---- from documents ------------------------------------------------------------ */

/* A list of GPU counts from text: "8,16,64", ranges "1-1000" (every
 * count) and ranges with a step "8-8000:8", each >= 1; ascending order is
 * not required. GS_ERR_USAGE naming
 * `option` on a bad part. `*counts` is owned by the caller (free). */
gs_status gs_predict_parse_counts(const char *text, const char *option, int **counts, size_t *n);

/* A layout "tp=T,pp=P" (either part may be left out: 1) into `out` (micro
 * and imbalance 0). GS_ERR_USAGE naming `option` on anything else. */
gs_status gs_predict_parse_layout(const char *text, const char *option, gs_predict_layout *out);

typedef struct {
  const int *counts;       /* GPU counts to predict; may be empty with holdout */
  size_t n_counts;
  int gpus_per_node;       /* 0: the GPU count of the measured machine */
  double inter_node_bytes_per_second;
  double inter_node_latency_seconds;
  int holdout;             /* > 1: fit below this count, check at it and above; 0 none */
  int tensor_parallel;     /* llm replicas of this many GPUs; 0 as measured */
  int pipeline_stages;     /* llm replicas of this many stages; 0 as measured */
  gs_predict_layout holdout_layout; /* tp > 0: fit llm on the other layouts, check this one */
  double target_items;     /* > 0: time and cost to process this many items */
  int skip_unmodelled;     /* 1: leave out (and name in `skipped`) the series without a
                              model or of another machine than the first, instead of failing */
  const gs_report *inter_node_coll; /* a coll document of the 2-rank allreduce between
                                       nodes: describes the network instead of the two
                                       figures above; NULL: the figures */
} gs_predict_options;

/* One fitted collective of the coll document (shown, and allreduce used). */
typedef struct {
  const char *op;          /* static name */
  gs_coll_fit fit;
} gs_predict_coll;

typedef struct {
  size_t series;           /* index of its series in the report */
  char name[256];          /* the series' name (gs_report_series_name) */
  const char *item_unit;   /* points into the report */
  gs_predict_model model;
  double items_per_step;
  int fitted[8];           /* the GPU counts fitted (first 8) */
  size_t n_fitted;
  size_t n_family;         /* requests: series of the same stream (its layouts) fitted */
  size_t family;           /* requests: the first series of its request stream (the layouts
                              of one stream share it) */
  double base_throughput;  /* X(1): measured, else predicted */
  double base_bounds[4];   /* requests: X(1) at the fit's four corners; NaN without bounds */
  double price_per_gpu_hour; /* NaN without a price for its GPU */
  size_t n_points;
  gs_predict_point *points; /* owned */
  int cheapest, fastest;   /* index of the point with least $/M items, most items/s; -1 none */
  double worst_error;      /* largest |error| over the holdout points; NaN none */
  char misfit[512];        /* the first fitted measurement the model misses beyond its 95%
                              interval and by more than GS_PREDICT_MISFIT, in words; "" none
                              (a workload with one is not predicted: an error, or with
                              skip_unmodelled named in `skipped`) */
} gs_predict_workload;

/* A model that misses a measurement it was fitted to by more than this
 * share (and beyond the measurement's 95% interval) does not fit it, and
 * predict refuses to extrapolate it. */
#define GS_PREDICT_MISFIT 0.10

/* Serving across nodes (llm --find-max-rate; docs/predict.md, "Serving at
 * the measured highest rate"): one predicted node count. */
typedef struct {
  int gpus, nodes;
  double rate, rate_low, rate_high; /* requests/s: nodes x the node's, and its bracket */
  double tokens_per_second;         /* nodes x the node's goodput tokens/s at its highest rate */
} gs_predict_serving_point;

/* A server series whose measurement holds a searched highest rate. */
typedef struct {
  size_t series;
  char name[256];
  int node_gpus, tp, pp;     /* GPUs of the node measured; a replica's tensor-parallel
                                degree and pipeline stages (its GPUs: tp x pp) */
  double max_rate, low, high; /* requests/s: the answer and its bracket (high NaN: none missed) */
  double percentile;
  double tokens_per_second;  /* goodput tokens/s of the node at max_rate */
  char targets[128];         /* "conversational: ttft<=2 s, tpot<=100 ms" */
  size_t n_points;
  gs_predict_serving_point *points; /* owned */
} gs_predict_serving;

/* The assumption every serving prediction rests on, written beside it. */
extern const char gs_predict_serving_assumption[];

/* Pipelines (mlp --pp, one replica; docs/predict.md, "Pipelines"): the
 * measured stages of a series' last row and the step predicted at other
 * stage and micro-batch counts. */
typedef struct {
  int stages, micro;
  double step_seconds, throughput;      /* samples per second */
  double bubble, bubble_formula;        /* (step - mean stage busy) / mean stage busy; (p-1)/m */
  double transfer_seconds;              /* the fill's and drain's boundary crossings */
  int inter_node_boundaries;            /* boundaries between nodes of gpus_per_node GPUs */
  double step_low, step_high;           /* 95% bounds from the busy time's interval; NaN none */
  double throughput_low, throughput_high, bubble_low, bubble_high; /* likewise */
} gs_predict_pipeline_point;

typedef struct {
  size_t series;
  char name[256];
  int stages, micro;         /* as measured */
  double busy_seconds;       /* the stages' busy time per step, summed */
  double busy_half;          /* its mean's relative 95% half-width over the steps; NaN none */
  double imbalance;          /* slowest stage's busy / the mean */
  double samples;            /* per step */
  double bytes_per_sample;   /* one boundary's activation bytes per sample (the mean boundary) */
  double measured_step, measured_bubble, model_step; /* the model at the measured point */
  gs_coll_curve curve;       /* owned: the send/recv curve within a node (n 0: none) */
  const char *curve_file;    /* its coll document, or NULL */
  size_t n_points;
  gs_predict_pipeline_point *points; /* owned */
} gs_predict_pipeline;

/* The assumption every pipeline prediction rests on, written beside it. */
extern const char gs_predict_pipeline_assumption[];

typedef struct gs_predict {
  gs_predict_options opt;  /* its counts point into the caller's array */
  gs_predict_machine machine;
  int measured_gpus_per_node; /* the measured machine's GPUs (its largest count without GPUs):
                                 the fit is checked on it, whatever --gpus-per-node says */
  const char *coll_file;   /* the coll document used, or NULL */
  const char *links_file;  /* without one: the p2p document the allreduce came from, or NULL */
  size_t n_coll;
  gs_predict_coll coll[GS_COLL_COUNT];
  size_t n_curves;
  gs_coll_curve *curves;   /* owned: the node's allreduce measured, one per rank count */
  const char *network_file; /* the --inter-node-coll document, or NULL */
  gs_coll_fit network_fit; /* its 2-rank allreduce's fit */
  gs_coll_curve network_curve; /* owned: its 2-rank allreduce as measured */
  gs_coll_curve sendrecv;  /* owned: the node's 2-rank send/recv as measured (n 0: none) */
  const char *sendrecv_file; /* its coll document, or NULL */
  size_t n_workloads;
  gs_predict_workload *workloads; /* owned */
  char skipped[2048];      /* with skip_unmodelled: "SERIES: why; ..." of those left out */
  size_t n_serving;
  gs_predict_serving *serving; /* owned */
  size_t n_pipelines;
  gs_predict_pipeline *pipelines; /* owned */
} gs_predict;

/* The step of pipeline `q` at `stages` stages and `micro` micro-batches
 * (one replica, the measured samples per step) into *out, with its 95%
 * bounds (and the throughput's and bubble's) from the busy time's
 * interval: with c = the
 * measured busy time per step over stages x micro, step = stages c +
 * (micro - 1) imbalance c + 2 crossings of every boundary (one
 * micro-batch's activations: the measured send/recv curve within a node,
 * `o`'s latency + bytes / bandwidth across a node's edge every
 * `gpus_per_node` stages; 0 within a node without a curve). Pure. */
void gs_predict_pipeline_at(const gs_predict_pipeline *q, const gs_predict_options *o,
                               int gpus_per_node, int stages, int micro,
                               gs_predict_pipeline_point *out);

/* The pipeline predictions of `r` into p->pipelines: every series whose
 * last row is an ok pipeline of one replica, at each of p->opt.counts as a
 * stage count (2 and more; without counts the measured stages and twice
 * them), at 1, 2, 4, 8, 16 and 32 micro-batches. GS_ERR_NOMEM. */
gs_status gs_predict_pipeline_build(const gs_report *r, gs_predict *p);
int gs_predict_pipeline_has(const gs_predict *p, size_t series);
void gs_predict_pipeline_free(gs_predict *p);
/* The pipeline sections of the text (Markdown when `markdown`) output. */
void gs_predict_pipeline_text(FILE *f, const gs_predict *p, int markdown);
/* The JSON member "pipelines" of `doc` (absent without pipelines). */
void gs_predict_pipeline_json(gs_json_build *b, cJSON *doc, const gs_predict *p);

/* Which llm layout of a request stream is fastest at each GPU count
 * predicted for two or more of its layouts, decided only where every
 * corner of the fit's interval agrees ("inconclusive" otherwise): text
 * (Markdown when `markdown`) and the JSON member "layout_choices". */
void gs_predict_layouts_text(FILE *f, const gs_predict *p, int markdown);
void gs_predict_layouts_json(gs_json_build *b, cJSON *doc, const gs_predict *p);

/* 1 when point `a` has a higher throughput than `b` at the prediction and
 * at every corner of the fit's interval; 0 when some corner orders them
 * otherwise or has no bound (no interval: nothing is decided). */
int gs_predict_point_beats(const gs_predict_point *a, const gs_predict_point *b);

/* The serving predictions of `r` into p->serving: every series whose
 * last row (its largest GPU count) is a server measurement with a searched
 * highest rate, at each of p->opt.counts that is a whole number of its
 * nodes (1, 2, 4, 8 nodes without counts). GS_ERR_NOMEM when memory runs
 * out. */
gs_status gs_predict_serving_build(const gs_report *r, gs_predict *p);

/* 1 when series `series` is predicted by p->serving. */
int gs_predict_serving_has(const gs_predict *p, size_t series);

/* The serving sections of the text (Markdown when `markdown`) output. */
void gs_predict_serving_text(FILE *f, const gs_predict *p, int markdown);

/* The JSON member "serving" of `doc` (absent without serving series). */
void gs_predict_serving_json(gs_json_build *b, cJSON *doc, const gs_predict *p);

/* Fits a model per workload series of `r` (loaded with the prices wanted)
 * and predicts it at the options' counts. The coll series of `r` give the
 * machine's collective fits (without them, a p2p document its links); they
 * must come from the machine the workloads were measured on (same host and
 * GPU model). The network between nodes comes from the options' figures or
 * from their inter_node_coll document. GS_ERR_USAGE for inputs that
 * cannot be predicted, naming the file and what is missing: a coll document
 * of another machine, a collective with fewer than two sizes, a series
 * without a model (unless skip_unmodelled), a data-parallel series without
 * a coll document, a holdout with nothing below or at/above it, a model
 * that does not reproduce a measurement it was fitted to (`misfit`; with
 * skip_unmodelled that series is named in `skipped` instead). */
gs_status gs_predict_build(const gs_report *r, const gs_predict_options *opt, gs_predict *out);

/* Frees what `p` owns and zeroes it. */
void gs_predict_free(gs_predict *p);

typedef enum { GS_PREDICT_TEXT = 0, GS_PREDICT_JSON, GS_PREDICT_MARKDOWN } gs_predict_format;

/* "text", "json", "markdown", NULL-terminated, in enum order. */
extern const char *const gs_predict_format_choices[];

/* Writes the prediction to `f` in `format` (docs/predict.md, "Output").
 * GS_ERR_NOMEM when the JSON cannot be built. */
gs_status gs_predict_render(FILE *f, const gs_predict *p, gs_predict_format format);

#endif
