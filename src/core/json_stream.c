/* The incremental JSON tokenizer (core/json_stream.h): a state machine over
 * a 1 MiB read buffer. Structure is checked by a stack of open containers
 * and one state (what may come next); strings are unescaped into a
 * bounded text buffer; numbers are checked against JSON's grammar. */
#include "core/json_stream.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What may come next. */
enum {
  ST_VALUE = 0,   /* a value (top level, after a key, after ',' in an array) */
  ST_ARRAY_FIRST, /* a value or ']' */
  ST_OBJECT_FIRST,/* a key or '}' */
  ST_KEY,         /* a key (after ',' in an object) */
  ST_AFTER,       /* ',' or the container's end; at depth 0 the end of the file */
  ST_DONE         /* GS_JS_END was returned */
};

static gs_status fail(gs_json_stream *s, uint64_t offset, const char *what) {
  return gs_error(GS_ERR_FORMAT, "%s: byte %llu: %s", s->path, (unsigned long long)offset,
                  what);
}

static uint64_t here(const gs_json_stream *s) { return s->base + s->pos; }

/* Refills the buffer; 0 at the end of the file, -1 on a read error. */
static int refill(gs_json_stream *s) {
  if (s->eof) return 0;
  s->base += s->len;
  s->pos = 0;
  s->len = fread(s->buf, 1, GS_JSON_STREAM_BUFFER, s->f);
  if (s->len == 0) {
    if (ferror(s->f)) return -1;
    s->eof = 1;
    return 0;
  }
  return 1;
}

/* The next byte without consuming it: -1 at the end, -2 on a read error. */
static inline int peek(gs_json_stream *s) {
  if (s->pos < s->len) return s->buf[s->pos];
  int r = refill(s);
  return r > 0 ? s->buf[s->pos] : r == 0 ? -1 : -2;
}

static gs_status start(gs_json_stream *s, FILE *f, const char *path) {
  memset(s, 0, sizeof *s);
  s->f = f;
  s->path = path;
  s->buf = malloc(GS_JSON_STREAM_BUFFER);
  s->text = malloc(GS_JSON_STREAM_TOKEN + 8);
  if (!s->buf || !s->text) {
    gs_json_stream_close(s);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the reader of %s", path);
  }
  s->text[0] = '\0';
  return GS_OK;
}

gs_status gs_json_stream_open(gs_json_stream *s, const char *path) {
  memset(s, 0, sizeof *s);
  struct stat sb;
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
    return gs_error(GS_ERR_IO, "cannot read %s: not a regular file", path);
  FILE *f = fopen(path, "rb");
  if (!f) return gs_error(GS_ERR_IO, "cannot open %s: %s", path, strerror(errno));
  return start(s, f, path);
}

gs_status gs_json_stream_open_memory(gs_json_stream *s, const char *name, const void *data,
                                     size_t len) {
  memset(s, 0, sizeof *s);
  FILE *f = len ? fmemopen((void *)data, len, "r") : fopen("/dev/null", "rb");
  if (!f) return gs_error(GS_ERR_NOMEM, "cannot open %s in memory", name);
  return start(s, f, name);
}

void gs_json_stream_close(gs_json_stream *s) {
  if (s->f) fclose(s->f);
  free(s->buf);
  free(s->text);
  memset(s, 0, sizeof *s);
}

static gs_status read_error(gs_json_stream *s) {
  return gs_error(GS_ERR_IO, "cannot read %s: %s", s->path, strerror(errno));
}

static int skip_space(gs_json_stream *s) {
  for (;;) {
    int c = peek(s);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      s->pos++;
      continue;
    }
    return c;
  }
}

static gs_status put_text(gs_json_stream *s, const char *bytes, size_t n) {
  if (s->text_len + n > GS_JSON_STREAM_TOKEN)
    return fail(s, s->offset, "a string or number longer than 64 KiB");
  memcpy(s->text + s->text_len, bytes, n);
  s->text_len += n;
  return GS_OK;
}

static int hex4(gs_json_stream *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int c = peek(s);
    if (c >= '0' && c <= '9') v = v * 16 + (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v = v * 16 + (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v = v * 16 + (unsigned)(c - 'A' + 10);
    else return -1;
    s->pos++;
  }
  *out = v;
  return 0;
}

static gs_status put_utf8(gs_json_stream *s, unsigned cp) {
  char b[4];
  size_t n;
  if (cp < 0x80) { b[0] = (char)cp; n = 1; }
  else if (cp < 0x800) { b[0] = (char)(0xC0 | (cp >> 6)); b[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
  else if (cp < 0x10000) {
    b[0] = (char)(0xE0 | (cp >> 12)); b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    b[2] = (char)(0x80 | (cp & 0x3F)); n = 3;
  } else {
    b[0] = (char)(0xF0 | (cp >> 18)); b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); b[3] = (char)(0x80 | (cp & 0x3F)); n = 4;
  }
  return put_text(s, b, n);
}

/* A string; the opening quote is at s->pos. */
static gs_status read_string(gs_json_stream *s) {
  s->pos++;
  s->text_len = 0;
  for (;;) {
    // The common case: a run of plain bytes inside the buffer, copied at once.
    size_t run = s->pos;
    while (run < s->len && s->buf[run] != '"' && s->buf[run] != '\\' && s->buf[run] >= 0x20)
      run++;
    if (run > s->pos) {
      gs_status st = put_text(s, (const char *)s->buf + s->pos, run - s->pos);
      if (st != GS_OK) return st;
      s->pos = run;
    }
    int c = peek(s);
    if (c == -2) return read_error(s);
    if (c == -1) return fail(s, here(s), "the file ends inside a string");
    if (c == '"') {
      s->pos++;
      s->text[s->text_len] = '\0';
      return GS_OK;
    }
    if (c < 0x20) return fail(s, here(s), "a control character inside a string");
    if (c != '\\') continue;  // the buffer was refilled inside a run of plain bytes
    s->pos++;
    c = peek(s);
    const char *plain = NULL;
    switch (c) {
      case '"': plain = "\""; break;
      case '\\': plain = "\\"; break;
      case '/': plain = "/"; break;
      case 'b': plain = "\b"; break;
      case 'f': plain = "\f"; break;
      case 'n': plain = "\n"; break;
      case 'r': plain = "\r"; break;
      case 't': plain = "\t"; break;
      case 'u': break;
      default: return fail(s, here(s), "an invalid escape in a string");
    }
    s->pos++;
    gs_status st;
    if (plain) {
      st = put_text(s, plain, 1);
    } else {
      unsigned cp, low;
      if (hex4(s, &cp) != 0) return fail(s, here(s), "an invalid \\u escape");
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (peek(s) != '\\') return fail(s, here(s), "a lone surrogate in a \\u escape");
        s->pos++;
        if (peek(s) != 'u') return fail(s, here(s), "a lone surrogate in a \\u escape");
        s->pos++;
        if (hex4(s, &low) != 0 || low < 0xDC00 || low > 0xDFFF)
          return fail(s, here(s), "an invalid surrogate pair");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        return fail(s, here(s), "a lone surrogate in a \\u escape");
      }
      st = put_utf8(s, cp);
    }
    if (st != GS_OK) return st;
  }
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }

/* Appends the byte at s->pos to the text and consumes it. */
static gs_status take(gs_json_stream *s) {
  char c = (char)s->buf[s->pos++];
  return put_text(s, &c, 1);
}

/* Digits (at least one). */
static gs_status digits(gs_json_stream *s) {
  int c = peek(s);
  if (c == -2) return read_error(s);
  if (!is_digit(c)) return fail(s, here(s), "a digit expected in a number");
  while (is_digit(peek(s))) {
    gs_status st = take(s);
    if (st != GS_OK) return st;
  }
  return GS_OK;
}

/* A number lying wholly inside the buffer, checked and copied in one
 * pass: 1 done, 0 it reaches the buffer's end (the byte-wise path takes
 * it), or the error of the byte-wise path, at the same offset. */
static int number_in_buffer(gs_json_stream *s, gs_status *st) {
  const unsigned char *b = s->buf, *p = b + s->pos, *e = b + s->len, *start = p;
  const char *what = NULL;
  if (*p == '-') p++;
  if (p == e) return 0;
  if (*p == '0') {
    if (++p < e && is_digit(*p)) what = "a number with a leading zero";
  } else if (is_digit(*p)) {
    while (p < e && is_digit(*p)) p++;
  } else {
    what = "a digit expected in a number";
  }
  if (!what && p < e && *p == '.') {
    if (++p < e && !is_digit(*p)) what = "a digit expected in a number";
    while (p < e && is_digit(*p)) p++;
  }
  if (!what && p < e && (*p == 'e' || *p == 'E')) {
    if (++p < e && (*p == '+' || *p == '-')) p++;
    if (p < e && !is_digit(*p)) what = "a digit expected in a number";
    while (p < e && is_digit(*p)) p++;
  }
  if (what) {
    *st = fail(s, s->base + (uint64_t)(p - b), what);
    return 1;
  }
  if (p == e) return 0;
  size_t n = (size_t)(p - start);
  if (n > GS_JSON_STREAM_TOKEN) {
    *st = fail(s, s->offset, "a string or number longer than 64 KiB");
    return 1;
  }
  memcpy(s->text, start, n);
  s->text[n] = '\0';
  s->text_len = n;
  s->pos += n;
  *st = GS_OK;
  return 1;
}

static gs_status read_number(gs_json_stream *s) {
  gs_status fast;
  if (number_in_buffer(s, &fast)) return fast;
  s->text_len = 0;
  gs_status st = GS_OK;
  if (peek(s) == '-') st = take(s);
  if (st == GS_OK && peek(s) == '0') {
    st = take(s);
    if (st == GS_OK && is_digit(peek(s))) return fail(s, here(s), "a number with a leading zero");
  } else if (st == GS_OK) {
    st = digits(s);
  }
  if (st == GS_OK && peek(s) == '.') {
    st = take(s);
    if (st == GS_OK) st = digits(s);
  }
  if (st == GS_OK && (peek(s) == 'e' || peek(s) == 'E')) {
    st = take(s);
    if (st == GS_OK && (peek(s) == '+' || peek(s) == '-')) st = take(s);
    if (st == GS_OK) st = digits(s);
  }
  if (st == GS_OK) s->text[s->text_len] = '\0';
  return st;
}

static gs_status read_literal(gs_json_stream *s, const char *word) {
  for (const char *p = word; *p; p++) {
    int c = peek(s);
    if (c == -2) return read_error(s);
    if (c != *p) return fail(s, here(s), "an invalid literal (true, false or null expected)");
    s->pos++;
  }
  return GS_OK;
}

static gs_status push(gs_json_stream *s, uint8_t kind) {
  if (s->depth >= GS_JSON_STREAM_DEPTH) return fail(s, s->offset, "nesting deeper than 64");
  s->stack[s->depth++] = kind;
  s->pos++;
  return GS_OK;
}

/* A value starting at s->pos (whitespace skipped, c its first byte). */
static gs_status value(gs_json_stream *s, int c, gs_json_token *tok) {
  gs_status st;
  switch (c) {
    case '{':
      *tok = GS_JS_OBJECT;
      s->state = ST_OBJECT_FIRST;
      return push(s, GS_JS_OBJECT);
    case '[':
      *tok = GS_JS_ARRAY;
      s->state = ST_ARRAY_FIRST;
      return push(s, GS_JS_ARRAY);
    case '"':
      *tok = GS_JS_STRING;
      st = read_string(s);
      break;
    case 't': *tok = GS_JS_TRUE; st = read_literal(s, "true"); break;
    case 'f': *tok = GS_JS_FALSE; st = read_literal(s, "false"); break;
    case 'n': *tok = GS_JS_NULL; st = read_literal(s, "null"); break;
    default:
      if (c != '-' && !is_digit(c)) {
        if (c == -1) return fail(s, here(s), "the file ends where a value was expected");
        return fail(s, here(s), "a value expected");
      }
      *tok = GS_JS_NUMBER;
      st = read_number(s);
  }
  if (st == GS_OK) s->state = ST_AFTER;
  return st;
}

static gs_status key(gs_json_stream *s, int c, gs_json_token *tok) {
  if (c != '"') {
    if (c == -1) return fail(s, here(s), "the file ends inside an object");
    return fail(s, here(s), "a member name (string) expected");
  }
  gs_status st = read_string(s);
  if (st != GS_OK) return st;
  int colon = skip_space(s);
  if (colon == -2) return read_error(s);
  if (colon == -1) return fail(s, here(s), "the file ends inside an object");
  if (colon != ':') return fail(s, here(s), "':' expected after a member name");
  s->pos++;
  *tok = GS_JS_KEY;
  s->state = ST_VALUE;
  return GS_OK;
}

gs_status gs_json_stream_next(gs_json_stream *s, gs_json_token *tok) {
  for (;;) {
    int c = skip_space(s);
    if (c == -2) return read_error(s);
    s->offset = here(s);
    switch (s->state) {
      case ST_DONE:
        *tok = GS_JS_END;
        return GS_OK;
      case ST_OBJECT_FIRST:
        if (c == '}') {
          s->pos++;
          s->depth--;
          s->state = ST_AFTER;
          *tok = GS_JS_OBJECT_END;
          return GS_OK;
        }
        return key(s, c, tok);
      case ST_KEY:
        return key(s, c, tok);
      case ST_ARRAY_FIRST:
        if (c == ']') {
          s->pos++;
          s->depth--;
          s->state = ST_AFTER;
          *tok = GS_JS_ARRAY_END;
          return GS_OK;
        }
        return value(s, c, tok);
      case ST_VALUE:
        return value(s, c, tok);
      default:  // ST_AFTER
        if (s->depth == 0) {
          if (c != -1) return fail(s, here(s), "text after the top-level value");
          s->state = ST_DONE;
          *tok = GS_JS_END;
          return GS_OK;
        }
        uint8_t top = s->stack[s->depth - 1];
        if (c == ',') {
          s->pos++;
          s->state = top == GS_JS_OBJECT ? ST_KEY : ST_VALUE;
          continue;
        }
        if ((c == '}' && top == GS_JS_OBJECT) || (c == ']' && top == GS_JS_ARRAY)) {
          s->pos++;
          s->depth--;
          *tok = top == GS_JS_OBJECT ? GS_JS_OBJECT_END : GS_JS_ARRAY_END;
          return GS_OK;
        }
        if (c == -1) return fail(s, here(s), "the file ends inside an object or array");
        return fail(s, here(s), top == GS_JS_OBJECT ? "',' or '}' expected" : "',' or ']' expected");
    }
  }
}

gs_status gs_json_stream_skip(gs_json_stream *s, gs_json_token first) {
  if (first != GS_JS_OBJECT && first != GS_JS_ARRAY) return GS_OK;
  int level = 1;
  while (level > 0) {
    gs_json_token t;
    gs_status st = gs_json_stream_next(s, &t);
    if (st != GS_OK) return st;
    if (t == GS_JS_OBJECT || t == GS_JS_ARRAY) level++;
    else if (t == GS_JS_OBJECT_END || t == GS_JS_ARRAY_END) level--;
  }
  return GS_OK;
}

/* Clinger's fast path: a number without exponent whose digits (leading
 * zeros dropped) make an integer of at most 2^53 is that exact integer
 * divided by an exact power of ten (at most 10^22), and one correctly
 * rounded division gives strtod's result; Kineto's microsecond times
 * (16 digits) take it. 0: not such a number. */
static int fast_decimal(const char *p, double *out) {
  static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  int neg = *p == '-';
  p += neg;
  uint64_t mant = 0;
  int digits = 0, frac = 0, dot = 0;
  for (;; p++) {
    if (*p >= '0' && *p <= '9') {
      if (mant || *p != '0') digits++;
      mant = mant * 10 + (uint64_t)(*p - '0');
      frac += dot;
      if (digits > 16) return 0;
    } else if (*p == '.' && !dot) {
      dot = 1;
    } else {
      break;
    }
  }
  if (*p != '\0' || frac > 22 || mant > (1ull << 53)) return 0;  // an exponent: strtod's
  double d = (double)mant / pow10[frac];
  *out = neg ? -d : d;
  return 1;
}

gs_status gs_json_stream_number(gs_json_stream *s, const char *what, double *v) {
  gs_json_token t;
  gs_status st = gs_json_stream_next(s, &t);
  if (st != GS_OK) return st;
  if (t != GS_JS_NUMBER) {
    char msg[160];
    snprintf(msg, sizeof msg, "%s: a number expected", what);
    return fail(s, s->offset, msg);
  }
  if (fast_decimal(s->text, v)) return GS_OK;
  errno = 0;
  char *end = NULL;
  double d = strtod(s->text, &end);
  if (end == s->text || *end || !isfinite(d)) {
    char msg[160];
    snprintf(msg, sizeof msg, "%s: a number out of range", what);
    return fail(s, s->offset, msg);
  }
  *v = d;
  return GS_OK;
}
