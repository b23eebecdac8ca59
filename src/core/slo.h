/* Latency targets (service-level objectives) for request-based
 * measurements: their parsing (`--slo ttft=2s,tpot=100ms,latency=5s` or a
 * named preset), whether one request met each target, and goodput: the
 * requests and tokens per second of the requests that met every target,
 * and the share meeting each, with 95% intervals (docs/workloads/llm.md,
 * "Latency targets and goodput"). The llm workload writes these figures
 * and the report recomputes them from the document's requests. */
#ifndef GS_CORE_SLO_H
#define GS_CORE_SLO_H

#include <stddef.h>

#include "core/json.h"
#include "core/status.h"

/* A rate is sustained while its load is at most this. The load is 1 plus
 * the slope of the ok requests' TTFT against their arrival time (least
 * squares, each run's times about its own means): a TTFT is the wait for
 * a batch plus a prefill, and a layout that keeps up makes no request wait
 * longer for coming later (slope 0, load 1); one that serves mu requests/s
 * while lambda arrive makes the k-th wait k (1/mu - 1/lambda), a slope of
 * lambda/mu - 1, so the load is the offered rate over the rate served. The
 * document holds both times, so the report recomputes it. Latency targets
 * alone cannot see it in a short run: a finite stream's queue never grows
 * past the stream, so every rate, however high, meets a target longer
 * than the whole stream's service time. */
#define GS_SLO_LOAD_SUSTAINED 1.10

/* A stream shorter than this many times the layout's slots (the requests
 * it serves at once) can hardly show a rate above what the layout serves:
 * the first `slots` requests start at once whatever the rate, and the
 * queue that would betray the overload is the rest of the stream. */
#define GS_SLO_STREAM_SLOTS 4

/* The note for a run of `stream` requests on a layout serving `slots` at
 * once, into buf (of `size`): 1 when the stream is under
 * GS_SLO_STREAM_SLOTS x slots, else 0 and buf "". Both NaN-safe. */
int gs_slo_stream_note(double stream, double slots, char *buf, size_t size);

typedef enum { GS_SLO_TTFT = 0, GS_SLO_TPOT, GS_SLO_LATENCY, GS_SLO_METRICS } gs_slo_metric;

/* "ttft", "tpot", "latency" (the keys of --slo and of the document). */
extern const char *const gs_slo_metric_names[GS_SLO_METRICS];

/* The percentile a rate must meet the targets at (MLPerf's server tail). */
#define GS_SLO_DEFAULT_PERCENTILE 99.0

typedef struct {
  char name[32];                /* preset name, "custom", or "" when no target is set */
  double bound[GS_SLO_METRICS]; /* seconds; NaN = no target on that metric */
  double percentile;            /* of each metric, for "the rate meets the targets" */
} gs_slo;

/* A named set of targets. */
typedef struct {
  const char *name;
  double ttft, tpot; /* seconds */
  const char *source;
} gs_slo_preset;

/* The presets: MLPerf Inference's Llama-3.1-8B bounds, "conversational"
 * (TTFT 2 s, TPOT 100 ms) and "interactive" (TTFT 500 ms, TPOT 30 ms);
 * terminated by a NULL name. */
extern const gs_slo_preset gs_slo_presets[];

/* No targets: name "", every bound NaN, percentile 99. */
void gs_slo_none(gs_slo *out);

/* 1 when at least one target is set. */
int gs_slo_any(const gs_slo *slo);

/* Parses `text`, a preset name or a comma list of METRIC=DURATION (each
 * metric at most once, any subset; DURATION a positive number followed by
 * s, ms or us, e.g. "ttft=2s,tpot=100ms"). GS_ERR_USAGE naming `option`
 * on anything else; *out is left as gs_slo_none then. */
gs_status gs_slo_parse(const char *text, const char *option, gs_slo *out);

/* The targets as text, "ttft<=2 s, tpot<=100 ms" (buf of `size`). */
void gs_slo_describe(const gs_slo *slo, char *buf, size_t size);

/* One request as the targets see it. A request that is not ok met no
 * target; an ok one without a TPOT (one output token) meets the TPOT
 * target. */
typedef struct {
  int ok;
  double ttft, tpot, latency; /* seconds; NaN where not reached */
  double tokens;              /* output tokens */
  double arrival;             /* seconds since its run's stream began; NaN unknown */
} gs_slo_request;

/* Whether request `q` met each target (met[m] = -1 where no target is set)
 * and returns 1 when it met every set target (0 otherwise). */
int gs_slo_request_met(const gs_slo *slo, const gs_slo_request *q, int met[GS_SLO_METRICS]);

/* A figure with its 95% interval (NaN where there is none). */
typedef struct {
  double value, low, high;
} gs_slo_figure;

/* Goodput of a set of requests against a set of targets. */
typedef struct {
  size_t requests;                         /* counted requests */
  size_t good;                             /* meeting every target */
  double seconds;                          /* the run time the rates are over */
  gs_slo_figure share[GS_SLO_METRICS];     /* met that target / requests; NaN: not set */
  gs_slo_figure share_all;                 /* good / requests */
  gs_slo_figure requests_per_second;       /* good / seconds */
  gs_slo_figure tokens_per_second;         /* output tokens of good requests / seconds */
  double percentile_value[GS_SLO_METRICS]; /* slo->percentile of each metric (a request
                                              that is not ok counts as infinitely slow) */
  int percentile_met;                      /* every set target met at its percentile */
  gs_slo_figure load;                      /* offered over served (GS_SLO_LOAD_SUSTAINED)
                                              with its 95% interval (each run's requests
                                              redrawn); NaN where no run's arrivals differ */
} gs_slo_goodput;

/* 1 when the load does not show the rate beyond what was served: at most
 * GS_SLO_LOAD_SUSTAINED, or not known. Judged by the load itself, as the
 * targets are by their percentile; the interval says how firmly. */
int gs_slo_sustained(const gs_slo_goodput *g);

/* 1 when the targets were met at their percentile and the rate sustained. */
int gs_slo_goodput_met(const gs_slo_goodput *g);

/* Goodput of requests q[0..n), in runs: run r holds run_sizes[r]
 * consecutive requests (the bootstrap's groups; sum = n), over `seconds`
 * (the runs' time together), and their load (also without targets). The
 * intervals are gs_stats_ratio_interval's two-level bootstrap of the mean
 * of the per-request indicator (met / not met, or tokens of a good
 * request); requests/s and tokens/s scale the mean's interval by
 * requests / seconds. GS_ERR_NOMEM when memory runs
 * out. With n == 0 every figure is NaN. */
gs_status gs_slo_goodput_compute(const gs_slo *slo, const gs_slo_request *q, size_t n,
                                 const size_t *run_sizes, size_t n_runs, double seconds,
                                 gs_slo_goodput *out);

/* Member "slo" of object `parent`: the targets (name, targets in seconds,
 * percentile) and the goodput figures, each {value, low, high}
 * (docs/result-schema.md, llm.slo). Every writer of goodput uses it. */
void gs_slo_goodput_to_json(gs_json_build *b, cJSON *parent, const gs_slo *slo,
                            const gs_slo_goodput *g);

/* The targets of a "slo" object written by gs_slo_goodput_to_json into
 * *out; gs_slo_none when `j` is absent or holds no target. */
void gs_slo_from_json(const cJSON *j, gs_slo *out);

/* One line of text: "goodput 1.20 requests/s [0.80, 1.60], 48.2 tokens/s
 * [..]; 60.0% [..] met every target (ttft 70.0% [..], tpot ..); p99 ttft
 * 0.93 s, tpot 90 ms: targets met" (buf of `size`). */
void gs_slo_goodput_describe(const gs_slo *slo, const gs_slo_goodput *g, char *buf, size_t size);

/* The Pareto frontier of points (x[i], y[i]), both higher-is-better (e.g.
 * tokens/s per user against tokens/s per GPU): on[i] = 1 when no other
 * point is at least as high on both and higher on one, else 0; a point
 * with a coordinate that is not finite is never on it. */
void gs_slo_frontier(const double *x, const double *y, size_t n, int *on);

#endif
