/* Reading external tools' text output from an in-memory buffer: a line
 * cursor that counts line numbers, spans (text that is not NUL-terminated)
 * and strict number parsing of spans. Shared by the ingest parsers; nothing
 * here allocates or touches files, and any byte sequence is a valid input
 * (the parsers are fuzzed). */
#ifndef GS_INGEST_TEXT_H
#define GS_INGEST_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* A piece of a buffer: `n` bytes at `p`, not NUL-terminated. */
typedef struct {
  const char *p;
  size_t n;
} gs_span;

/* Walks a buffer line by line. After gs_lines_next returns 1, `line` is the
 * current line without its "\n" or "\r\n" and `line_no` counts from 1. */
typedef struct {
  const char *data;
  size_t size;
  size_t pos;
  size_t line_no;
  gs_span line;
} gs_line_cursor;

void gs_lines_init(gs_line_cursor *c, const char *data, size_t size);
int gs_lines_next(gs_line_cursor *c);

/* The span without leading and trailing blanks (space, tab, CR). */
gs_span gs_span_trim(gs_span s);
/* 1 when the span equals / starts with / ends with the literal. */
int gs_span_eq(gs_span s, const char *lit);
int gs_span_starts(gs_span s, const char *lit);
int gs_span_ends(gs_span s, const char *lit);
/* Case-insensitive equality with an ASCII literal. */
int gs_span_eq_nocase(gs_span s, const char *lit);
/* Index of the first `ch` in s, or -1. */
long gs_span_find(gs_span s, char ch);
/* Bytes [from, s.n) / [0, to) of s (clamped). */
gs_span gs_span_from(gs_span s, size_t from);
gs_span gs_span_until(gs_span s, size_t to);
/* Splits off the next blank-separated token of *rest; 0 when none is left. */
int gs_span_next_token(gs_span *rest, gs_span *token);

/* Strict conversions of a whole span: no blanks, no trailing text, no
 * overflow. Doubles must be finite. Return 1 on success, 0 otherwise. */
int gs_span_to_double(gs_span s, double *out);
int gs_span_to_u64(gs_span s, uint64_t *out);
int gs_span_to_i64(gs_span s, int64_t *out);

/* Copies the span into buf (always NUL-terminated) for names and messages:
 * cut at size - 1 bytes (and at 60 with "..." when `quote` is set), bytes
 * that are not printable ASCII become '?'. Returns buf. */
char *gs_span_copy(gs_span s, char *buf, size_t size, int quote);

/* Records (gs_error, not printed) a GS_ERR_FORMAT error about an
 * input as "SOURCE:LINE: message", or "SOURCE: message" for line 0, and
 * returns GS_ERR_FORMAT. */
gs_status gs_ingest_fail(const char *source, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* v x 10^exp10 computed on v's shortest decimal text, so that a value read
 * as "17.13" (GB/s) becomes exactly 17130000000 (bytes/s) and not
 * 17129999999.999998 as 17.13 * 1e9 would. NaN and infinity pass through. */
double gs_scale_decimal(double v, int exp10);

/* Line (from 1) and column (from 1) of byte `offset` of `data`. */
void gs_text_position(const char *data, size_t size, size_t offset, size_t *line, size_t *column);

#endif
