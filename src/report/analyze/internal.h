/* What the files of the analysis room share (load.c: documents into
 * series; series.c: the series identity and titles; advice.c: scaling,
 * verdicts and recommendations); not part of its public interface
 * (report.h). */
#ifndef GS_REPORT_ANALYZE_INTERNAL_H
#define GS_REPORT_ANALYZE_INTERNAL_H

#include "report/analyze/report.h"

/* The series of `r` that differs from `s` only in its split policy
 * `split` ("" for unsplit), or NULL. */
const gs_report_series *gs_report_split_sibling(const gs_report *r, const gs_report_series *s,
                                                const char *split);

/* Sorts the rows of series `s` (world size, file, position), fills their
 * speedup, efficiency, Karp-Flatt, ideal throughput and ideal step against
 * the series' baseline (its own 1-rank row, else a split sibling's or the
 * data-parallel twin's), the verdict by core/scaling's rule and the
 * recommendation sentences. Every series of `r` must be placed first.
 * GS_ERR_NOMEM when memory runs out. */
gs_status gs_report_series_analyse(gs_report_series *s, const gs_report *r);

/* Sets each series' title (gs_report_series.title): the workload, then
 * what tells it from the other series of `r` (backend, scaling, differing
 * options), its label and split policy; a number where two would still
 * read the same. */
void gs_report_set_titles(gs_report *r);

/* Fills row->scores (analyze/straggler.c; docs/statistics.md, "Straggler
 * scores") from measurement `m`'s runs when the row has 2 or more ranks
 * with per-iteration times and is a stepped measurement (not requests, not
 * ingested): per iteration each rank's device time (else wall time),
 * less its comm_seconds where recorded. An iteration with a missing or
 * non-positive time of any rank is left out for all. Judged for
 * row->scores_host (gs_straggler_judge: nobody named where its CPU ranks
 * share the cores), filled from `doc`'s environment and m's backend.
 * GS_ERR_NOMEM. */
gs_status gs_report_straggler_read(const cJSON *doc, const cJSON *m, gs_report_row *row);

/* The most ranks of `row` on one host: its world over the hosts its ranks
 * name (all on one host when none is named); *host (when not NULL) the
 * host name with the most rank records (the first on a tie), else the
 * document's environment.host, else NULL. Points into the document. */
int gs_report_busiest_host(const cJSON *doc, const gs_report_row *row, const char **host);

/* The pipelines of `r` (analyze/pipeline.c; docs/report.md, "Pipeline"):
 * for every row with one, each stage's transfer time per step from a coll
 * sendrecv document of the same host and backend at 2 ranks whose sizes
 * span the boundaries (else NaN), the bubble less those transfers, and the
 * bubble's 95% interval. Every series of `r` must be placed first. */
gs_status gs_report_pipelines(gs_report *r);
/* Fills row->arrival (analyze/arrival.c; docs/stragglers.md, "Arrival
 * skew") from measurement `m`'s "arrival" member, when it has one, and
 * row->arrival.groups from its "arrival_groups" (a pipeline's stages),
 * each with the floor its host's cores set (document `doc`'s
 * environment), and names the late rank (member) by core/arrival's rule.
 * GS_ERR_FORMAT naming `file` when a member is malformed. */
gs_status gs_report_arrival_read(const cJSON *doc, const cJSON *m, const char *file,
                                 gs_report_row *row);

#endif
