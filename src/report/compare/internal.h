/* What compare.c and tails.c share: the rows and notes of a comparison
 * being built, the figure rule, and the tail-latency checks. Not for use
 * outside src/report/compare/. */
#ifndef GS_REPORT_COMPARE_INTERNAL_H
#define GS_REPORT_COMPARE_INTERNAL_H

#include "report/compare/compare.h"

/* Samples a side a p99 needs before its change is tested: the tail beyond
 * the 99th percentile then holds at least two samples, so that the
 * bootstrap resamples a tail rather than the largest sample alone. */
#define GS_COMPARE_TAIL_SAMPLES 200

/* Appends a formatted note; 0 when out of memory. */
int gs_compare_note(gs_compare *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A zeroed row at the end of c->rows (not yet counted in n_rows) with its
 * names filled in; NULL when out of memory. */
gs_compare_row *gs_compare_row_slot(gs_compare *c, size_t series, int world_size,
                                    const char *metric, const char *unit, int higher_is_better);

/* One metric row from a figure each side recorded (no samples): the
 * relative change against the figure threshold, no significance test. A
 * figure missing on either side gives a note. */
gs_status gs_compare_figure(gs_compare *c, size_t series, int world_size, const char *metric,
                            const char *unit, int higher_is_better, double x, double y);

/* LoadGen's verdict per rank of two ingested rows: VALID to INVALID is a
 * regression, INVALID to VALID an improvement (unit "validity"). */
gs_status gs_compare_validity(gs_compare *c, size_t si, const gs_report_row *x,
                              const gs_report_row *y);

/* The tail latencies (p99 latency, TTFT p99, TPOT p99) of a Server or
 * SingleStream pair, lower is better; nothing for Offline. LoadGen's
 * figures (ingested, `x->loadgen`) by the figure rule; our own
 * request-based rows by their per-request samples (`mx`, `my`: the
 * measurements in the documents) and the bootstrap interval of the p99's
 * change: undecidable below GS_COMPARE_TAIL_SAMPLES a side. */
gs_status gs_compare_tails(gs_compare *c, size_t si, const gs_report_row *x,
                           const gs_report_row *y, const cJSON *mx, const cJSON *my);

#endif
