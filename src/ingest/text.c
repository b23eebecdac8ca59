/* Line cursor, spans and strict number parsing for the ingest parsers
 * (see text.h). */
#include "ingest/text.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gs_lines_init(gs_line_cursor *c, const char *data, size_t size) {
  c->data = data;
  c->size = data ? size : 0;
  c->pos = 0;
  c->line_no = 0;
  c->line = (gs_span){data, 0};
}

int gs_lines_next(gs_line_cursor *c) {
  if (c->pos >= c->size) return 0;
  const char *start = c->data + c->pos;
  const char *nl = memchr(start, '\n', c->size - c->pos);
  size_t len = nl ? (size_t)(nl - start) : c->size - c->pos;
  c->pos += len + (nl ? 1 : 0);
  if (len > 0 && start[len - 1] == '\r') len--;
  c->line = (gs_span){start, len};
  c->line_no++;
  return 1;
}

static int is_blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\r'; }

gs_span gs_span_trim(gs_span s) {
  while (s.n > 0 && is_blank(s.p[0])) {
    s.p++;
    s.n--;
  }
  while (s.n > 0 && is_blank(s.p[s.n - 1])) s.n--;
  return s;
}

int gs_span_eq(gs_span s, const char *lit) {
  size_t n = strlen(lit);
  return s.n == n && memcmp(s.p, lit, n) == 0;
}

int gs_span_starts(gs_span s, const char *lit) {
  size_t n = strlen(lit);
  return s.n >= n && memcmp(s.p, lit, n) == 0;
}

int gs_span_ends(gs_span s, const char *lit) {
  size_t n = strlen(lit);
  return s.n >= n && memcmp(s.p + s.n - n, lit, n) == 0;
}

static char lower(char ch) { return (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch; }

int gs_span_eq_nocase(gs_span s, const char *lit) {
  size_t n = strlen(lit);
  if (s.n != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (lower(s.p[i]) != lower(lit[i])) return 0;
  return 1;
}

long gs_span_find(gs_span s, char ch) {
  const char *hit = s.n ? memchr(s.p, ch, s.n) : NULL;
  return hit ? (long)(hit - s.p) : -1;
}

gs_span gs_span_from(gs_span s, size_t from) {
  if (from > s.n) from = s.n;
  return (gs_span){s.p + from, s.n - from};
}

gs_span gs_span_until(gs_span s, size_t to) {
  if (to > s.n) to = s.n;
  return (gs_span){s.p, to};
}

int gs_span_next_token(gs_span *rest, gs_span *token) {
  gs_span r = *rest;
  while (r.n > 0 && is_blank(r.p[0])) {
    r.p++;
    r.n--;
  }
  if (r.n == 0) {
    *rest = r;
    return 0;
  }
  size_t len = 0;
  while (len < r.n && !is_blank(r.p[len])) len++;
  *token = (gs_span){r.p, len};
  *rest = (gs_span){r.p + len, r.n - len};
  return 1;
}

/* Copies a number's text into a NUL-terminated buffer; 0 when it cannot
 * be a number (empty, too long, or containing a NUL or blank). */
static int number_text(gs_span s, char *buf, size_t size) {
  if (s.n == 0 || s.n >= size) return 0;
  for (size_t i = 0; i < s.n; i++)
    if (s.p[i] == '\0' || is_blank(s.p[i]) || s.p[i] == '\n') return 0;
  memcpy(buf, s.p, s.n);
  buf[s.n] = '\0';
  return 1;
}

int gs_span_to_double(gs_span s, double *out) {
  char buf[64];
  if (!number_text(s, buf, sizeof buf)) return 0;
  // strtod also reads "inf", "nan" and hex floats; only decimal text counts.
  for (const char *q = buf; *q; q++)
    if (!((*q >= '0' && *q <= '9') || *q == '.' || *q == '-' || *q == '+' || *q == 'e' ||
          *q == 'E'))
      return 0;
  char *end = NULL;
  errno = 0;
  double v = strtod(buf, &end);
  if (end != buf + s.n || errno == ERANGE || !isfinite(v)) return 0;
  *out = v;
  return 1;
}

int gs_span_to_u64(gs_span s, uint64_t *out) {
  char buf[32];
  if (!number_text(s, buf, sizeof buf) || buf[0] < '0' || buf[0] > '9') return 0;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(buf, &end, 10);
  if (end != buf + s.n || errno == ERANGE) return 0;
  *out = (uint64_t)v;
  return 1;
}

int gs_span_to_i64(gs_span s, int64_t *out) {
  char buf[32];
  if (!number_text(s, buf, sizeof buf)) return 0;
  if (!((buf[0] >= '0' && buf[0] <= '9') || buf[0] == '-')) return 0;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (end != buf + s.n || errno == ERANGE) return 0;
  *out = (int64_t)v;
  return 1;
}

char *gs_span_copy(gs_span s, char *buf, size_t size, int quote) {
  if (size == 0) return buf;
  size_t limit = size - 1;
  int cut = 0;
  if (quote && limit > 63) limit = 63;
  size_t n = s.n;
  if (n > limit) {
    n = quote ? limit - 3 : limit;
    cut = quote;
  }
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s.p[i];
    buf[i] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
  }
  if (cut) {
    memcpy(buf + n, "...", 3);
    n += 3;
  }
  buf[n] = '\0';
  return buf;
}

gs_status gs_ingest_fail(const char *source, size_t line, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (line > 0) return gs_error(GS_ERR_FORMAT, "%s:%zu: %s", source, line, msg);
  return gs_error(GS_ERR_FORMAT, "%s: %s", source, msg);
}

void gs_text_position(const char *data, size_t size, size_t offset, size_t *line, size_t *column) {
  gs_line_cursor c;
  gs_lines_init(&c, data, size < offset ? size : offset);
  size_t start = 0;
  *line = 1;
  // Each complete line before `offset` moves the position one line down.
  while (gs_lines_next(&c))
    if (c.pos <= offset && c.data[c.pos - 1] == '\n') {
      (*line)++;
      start = c.pos;
    }
  *column = offset - start + 1;
}

double gs_scale_decimal(double v, int exp10) {
  if (!isfinite(v) || v == 0) return v;
  char buf[64];
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(buf, sizeof buf, "%.*e", digits - 1, v);
    if (strtod(buf, NULL) == v) break;
  }
  // "%e" always writes "MANTISSAe[+-]EXP": move the exponent.
  char *e = strchr(buf, 'e');
  if (!e) return v;
  long exp = strtol(e + 1, NULL, 10) + exp10;
  snprintf(e, sizeof buf - (size_t)(e - buf), "e%ld", exp);
  return strtod(buf, NULL);
}
