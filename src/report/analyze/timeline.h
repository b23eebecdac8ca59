/* The timeline of one measurement, from the trace file its
 * result document names (docs/timeline.md): the recorded steps of its
 * first traced run per rank and lane, and per rank the share of that
 * window spent computing, communicating, copying, waiting and idle. The
 * report's text table and its timeline picture are drawn from it. */
#ifndef GS_REPORT_TRACE_TIMELINE_H
#define GS_REPORT_TRACE_TIMELINE_H

#include "core/trace_model.h"
#include "report/analyze/report.h"

typedef struct {
  int rank, device;
  int busy_lane_first;       /* lanes [first, n_lanes) are the rank's busy lanes: its
                                device lanes when it has spans there, else the host lane */
  double compute, comm, copy, wait; /* shares of the window (unions of leaf spans) */
  double comm_overlapped;    /* share of the window communicating while computing; the
                                rest of comm is exposed (what the why-not split counts) */
  double idle;               /* 1 - share covered by compute, communication or copies */
} gs_report_timeline_rank;

typedef struct {
  int present;               /* 1: the document names a trace */
  char file[GS_TEXT_LONG];   /* the trace file as found (or as named, when unreadable) */
  char problem[GS_TEXT_ERROR]; /* why it could not be read ("" when it was) */
  gs_trace_view view;        /* the measurement's spans (times in seconds) */
  int run;                   /* the run the window covers */
  int first_step, last_step; /* its recorded steps */
  double begin, end;         /* the window (monotonic seconds) */
  int n_ranks;
  gs_report_timeline_rank *ranks; /* by rank; owned */
} gs_report_timeline;

/* Reads the timeline of `row` (a measurement of report `r`) from the
 * trace its document names. GS_OK with present 0 when the document names
 * none; GS_OK with `problem` set when the file cannot be read or holds no
 * step of the measurement (the report says so instead of failing);
 * GS_ERR_NOMEM. Free with gs_report_timeline_free. */
gs_status gs_report_timeline_load(const gs_report *r, const gs_report_row *row,
                                  gs_report_timeline *out);
void gs_report_timeline_free(gs_report_timeline *t);

/* Whether span `i` of `lane` is a leaf (holds no other span of the lane). */
int gs_report_timeline_leaf(const gs_trace_lane *lane, size_t i);

/* Whether `s` lies in the window of `t` (its run and recorded steps). */
int gs_report_timeline_in_window(const gs_report_timeline *t, const gs_trace_span *s);

#endif
