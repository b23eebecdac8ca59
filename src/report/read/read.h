/* The read room: one measurement of a result document into a row
 * (measurement.c: samples, step and rank statistics, symmetry; parts.c:
 * breakdown, requests, hosts, placement, collectives, cost; ingested.c:
 * what another tool measured). Reads the document only; the rooms above
 * call it and read the rows (row.h). */
#ifndef GS_REPORT_READ_H
#define GS_REPORT_READ_H

#include <cjson/cJSON.h>

#include "report/read/row.h"

/* Fills `row` from measurement `m` (index `mi` of `file`): raw samples
 * pooled over runs, step and per-rank statistics, throughput, cold starts.
 * The row keeps its step samples in run order (the speedup's interval
 * resamples them by run); with `keep_samples` the rank samples too
 * (GS_REPORT_ROW_SAMPLES). Cross-row numbers (speedup and the like) are
 * filled later. GS_ERR_FORMAT
 * naming `file` and the JSON path for an inconsistent measurement,
 * GS_ERR_NOMEM. The row owns its ranks even on error. */
gs_status gs_report_measurement_read(const cJSON *m, size_t mi, const char *file,
                                     int keep_samples, gs_report_row *row);

/* Frees what `row` owns (its ranks with their samples, hosts, step samples). */
void gs_report_row_free(gs_report_row *row);

/* Median, deviation, marks (with `th`, worsened by success rates), spread
 * and straggler over the ranks of `row` (world size >= 2). */
gs_status gs_report_rank_symmetry(gs_report_row *row, const gs_report_thresholds *th);

/* Fills row->breakdown (not ideal_step) from measurement `m`'s runs: per
 * rank and iteration, compute = device - comm, comm, host = wall - device
 * and imbalance = slowest wall - wall, averaged. GS_ERR_FORMAT naming
 * `file` when comm_seconds is not an array of numbers or nulls. */
gs_status gs_report_breakdown_read(const cJSON *m, const char *file, gs_report_row *row);

/* Fills each rank's host, requests and telemetry numbers of `row` from
 * measurement `m` of document `doc`, then the row's hosts (needs the rank
 * statistics already computed) with marks from `th`. For a request-based
 * measurement (one with an "llm" object) it also sets the row's
 * throughput (ok tokens / llm.run_seconds), each rank's throughput (its
 * tokens/s), the scenario and the TTFT/TPOT statistics. */
gs_status gs_report_rank_extras(const cJSON *doc, const cJSON *m, const char *file,
                                const gs_report_thresholds *th, gs_report_row *row);

/* Fills the split units, the injected faults (and each named rank's
 * `injected` flag) and the plan task of `row` from measurement `m` of
 * document `doc`; members that are absent leave them empty (task -1). */
void gs_report_placement_read(const cJSON *doc, const cJSON *m, gs_report_row *row);

/* Fills row->pipeline from measurement `m` of document `doc` when its
 * workload options hold a "pipeline" (mlp) or it has llm.pipeline
 * (present 0 otherwise): the stages' busy and idle time per unit, the
 * boundaries' bytes and the per-sample stage times; not yet the bubble
 * and the imbalance (report/analyze/pipeline.c separates the transfers
 * and computes both with their intervals by core/bubble). GS_ERR_NOMEM. */
gs_status gs_report_pipeline_read(const cJSON *doc, const cJSON *m, gs_report_row *row);

/* Frees what gs_report_pipeline_read allocated (a zeroed one accepted). */
void gs_report_pipeline_free(gs_report_pipeline *p);

/* Fills row->rates from measurement `m`'s "llm.rates" (present 0 when
 * absent): each rate's figures as recorded, sorted by rate, and the
 * search's answer with its bracket (for a list of rates: the highest rate
 * met and the lowest rate above it that missed). GS_ERR_FORMAT naming
 * `file` when a point has no finite positive rate or there are more than
 * 64; GS_ERR_NOMEM. */
gs_status gs_report_rates_read(const cJSON *m, const char *file, gs_report_row *row);

/* Fills row->collective from measurement `m` of document `doc` when it is
 * a collective measurement (op, bytes, data type, reduction, root, in-place
 * form, bus and algorithm bandwidth and their check) and the theoretical
 * link bandwidth of the environment's topology; else leaves it empty
 * (present 0, NaN). */
void gs_report_collective_read(const cJSON *doc, const cJSON *m, gs_report_row *row);

/* Fills row->cost: the GPU model of the measurement's first device and,
 * with `prices` (may be NULL), the price per hour of its devices and the
 * items per dollar at row->throughput (NaN where no price matched). */
void gs_report_cost_read(const cJSON *doc, const cJSON *m, const gs_report_prices *prices,
                         gs_report_row *row);

/* Fills row->roofline from measurement `m`'s "roofline" member (present
 * 0 without one; a number that is null or absent is NaN). Where the
 * member has no "fraction_low" (a document written before the intervals
 * were), the intervals come from row's step samples (read before) as the
 * writer computes them (gs_roofline_step_of), none without samples.
 * GS_ERR_NOMEM when the steps cannot be copied. */
gs_status gs_report_roofline_read(const cJSON *m, gs_report_row *row);

/* Fills what an ingested document's tool measured (docs/report.md,
 * "Ingested documents") into `row`, read from measurement `m`: for a
 * LoadGen measurement ("mlperf" object) each rank's loadgen figures, its
 * throughput (LoadGen's samples/s) and the row's (their sum, from
 * aggregate.throughput_items_per_second); for a collective its time per op
 * and, from source or the environment, the NCCL version. Members that are
 * absent leave NaN / NULL. */
void gs_report_ingest_read(const cJSON *doc, const cJSON *m, gs_report_row *row);

/* Mark for a deviation under the thresholds. */
gs_rank_mark gs_report_mark_of(double deviation, const gs_report_thresholds *th);

/* The worse of a mark and the mark of a success rate (NaN: no change). */
gs_rank_mark gs_report_mark_success(gs_rank_mark mark, double success_rate);

#endif
