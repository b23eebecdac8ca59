/* What `gpuscale exec` reads from the output of the user's command
 * (docs/exec.md): the one-line protocol (a JSON object with "metric" and
 * "value" per line) and --metric NAME=REGEX patterns, read as a stream
 * from the run's log files (never held whole in memory), and the units
 * that turn a figure into the seconds of a step. */
#ifndef GS_MEASURE_EXEC_OUTPUT_H
#define GS_MEASURE_EXEC_OUTPUT_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dvec.h"
#include "core/status.h"
#include "core/types.h"

/* Metrics one run may print (protocol and patterns together); more names
 * are counted as lines but not kept. */
#define GS_EXEC_METRICS_MAX 16

/* Longest line read whole; the rest of a longer line is skipped. */
#define GS_EXEC_LINE_MAX 65536

/* The most items a step may count: whole numbers that a double holds exactly. */
#define GS_EXEC_ITEMS_MAX 9007199254740992.0

/* Longest item unit ("samples"), and whether `name` is one: 1 to
 * GS_EXEC_ITEM_UNIT_MAX letters, digits, '_', '-' or '.'. */
#define GS_EXEC_ITEM_UNIT_MAX 31
int gs_exec_item_unit_valid(const char *name);

typedef enum {
  GS_EXEC_UNIT_OTHER = 0, /* neither: cannot be a figure */
  GS_EXEC_UNIT_TIME,      /* s, ms, us, ns, min, h: lower is better */
  GS_EXEC_UNIT_RATE       /* THING/s: higher is better */
} gs_exec_unit_kind;

/* What `unit` measures: a time (*seconds_per_unit set, e.g. 1e-3 for
 * "ms"), a rate "THING/s" (THING into `item`, e.g. "samples"; also /sec
 * and /second), or neither. `item` and `seconds_per_unit` may be NULL. */
gs_exec_unit_kind gs_exec_unit_classify(const char *unit, double *seconds_per_unit, char *item,
                                        size_t item_size);

/* One --metric NAME=REGEX: its first capture group is the value. */
typedef struct {
  char name[GS_TEXT_SHORT];
  regex_t regex;
} gs_exec_pattern;

/* Parses "NAME=REGEX" (POSIX extended, at least one group) or a bare
 * "NAME" (a protocol metric: *is_pattern = 0, nothing compiled). The name
 * is letters, digits, '_', '-', '.' and '/'. GS_ERR_USAGE naming --metric
 * and the text. Free a compiled pattern with regfree(&p->regex). */
gs_status gs_exec_pattern_parse(const char *text, gs_exec_pattern *p, int *is_pattern);

/* Every value of one metric seen in a run. */
typedef struct {
  char name[GS_TEXT_SHORT];
  char unit[GS_TEXT_SHORT];       /* "" when not said */
  int higher_is_better;           /* 1, 0, or -1 when not said */
  double items;                   /* "items" of its lines (the same on every line); 0: none */
  char item_unit[GS_TEXT_SHORT];  /* "item_unit" of its lines; "" when not said */
  int from_pattern;               /* read by a --metric pattern, not the protocol */
  uint64_t count;
  double sum, min, max, last;
  gs_dvec steps;                  /* the figure only: values printed per step */
  int has_run_value;              /* the figure only: a value printed without a step */
  double run_value;               /* the last such */
  gs_dvec *ranks;                 /* the figure only: values printed with "rank" k in
                                     ranks[k] (GS_MAX_RANKS entries), in the order printed;
                                     NULL when none had a rank */
  int ranks_seen;                 /* 1 + the largest rank printed */
} gs_exec_metric;

/* The scan of one run's output. Set `patterns`/`n_patterns` and `figure`
 * ("" while the figure is not chosen: the first protocol metric seen
 * becomes it), then feed each stream to gs_exec_scan_fd. */
typedef struct {
  const gs_exec_pattern *patterns;
  size_t n_patterns;
  char figure[GS_TEXT_SHORT];
  int figure_auto;                /* 1: the figure was chosen by this scan */
  size_t n_metrics;
  gs_exec_metric metrics[GS_EXEC_METRICS_MAX];
  uint64_t lines;                 /* lines read over every stream */
  uint64_t protocol_lines;
  char error[GS_TEXT_ERROR];      /* the first malformed protocol line or value; "" none */
} gs_exec_scan;

/* Reads `fd` from its start to its end, line by line, into `scan`;
 * `stream` ("stdout") names it in scan->error. A malformed protocol line
 * or pattern value is recorded in scan->error (the run fails); only a
 * read error or memory is a failure of this call (GS_ERR_IO, GS_ERR_NOMEM). */
gs_status gs_exec_scan_fd(gs_exec_scan *scan, int fd, const char *stream);

/* The metric `name` of the scan, or NULL when the run printed none. */
const gs_exec_metric *gs_exec_scan_metric(const gs_exec_scan *scan, const char *name);

/* Frees the scan's arrays (not the patterns). */
void gs_exec_scan_free(gs_exec_scan *scan);

/* The last lines of the file `fd` (at most `max_lines`, within the last
 * `size` - 1 bytes) into `out`, NUL-terminated; "" when empty. */
void gs_exec_tail(int fd, int max_lines, char *out, size_t size);

#endif
