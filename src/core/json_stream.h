/* An incremental JSON tokenizer over a fixed buffer: reads a file of any
 * size token by token, checking the grammar (RFC 8259) as it goes, in
 * memory bounded by its buffer and the longest token, never by the file.
 * Used for PyTorch profiler traces (core/kineto_read.c), which reach
 * gigabytes where cJSON would hold the whole tree. Errors name the file
 * and the byte offset of the offending character. */
#ifndef GS_CORE_JSON_STREAM_H
#define GS_CORE_JSON_STREAM_H

#include <stdint.h>
#include <stdio.h>

#include "core/status.h"

/* The read buffer and the longest string or number the tokenizer accepts
 * (a longer one is an error naming its offset). */
#define GS_JSON_STREAM_BUFFER (1u << 20)
#define GS_JSON_STREAM_TOKEN (1u << 16)
/* The deepest nesting accepted. */
#define GS_JSON_STREAM_DEPTH 64

typedef enum {
  GS_JS_OBJECT = 0,  /* '{' */
  GS_JS_OBJECT_END,  /* '}' */
  GS_JS_ARRAY,       /* '[' */
  GS_JS_ARRAY_END,   /* ']' */
  GS_JS_KEY,         /* an object member's name (text), its ':' consumed */
  GS_JS_STRING,      /* a string value (text, unescaped, UTF-8) */
  GS_JS_NUMBER,      /* a number (text as written, grammar checked) */
  GS_JS_TRUE,
  GS_JS_FALSE,
  GS_JS_NULL,
  GS_JS_END          /* the end of the file after the one top-level value */
} gs_json_token;

typedef struct {
  FILE *f;
  const char *path;          /* for error messages; not owned */
  unsigned char *buf;        /* GS_JSON_STREAM_BUFFER bytes */
  size_t len, pos;
  uint64_t base;             /* file offset of buf[0] */
  int eof;
  char *text;                /* the last KEY/STRING/NUMBER, NUL-terminated */
  size_t text_len;
  uint64_t offset;           /* file offset where the last token began */
  int depth, state;
  uint8_t stack[GS_JSON_STREAM_DEPTH];
} gs_json_stream;

/* Opens `path` for tokenizing. GS_ERR_IO (cannot open), GS_ERR_NOMEM. */
gs_status gs_json_stream_open(gs_json_stream *s, const char *path);
/* Tokenizes `len` bytes of memory (tests); `name` stands for the file. */
gs_status gs_json_stream_open_memory(gs_json_stream *s, const char *name, const void *data,
                                     size_t len);
/* Closes the file and frees the buffers; accepts a zeroed or closed stream. */
void gs_json_stream_close(gs_json_stream *s);

/* The next token into *tok (text in s->text for KEY, STRING, NUMBER).
 * GS_ERR_FORMAT "FILE: byte N: what" on a grammar error, a token longer
 * than GS_JSON_STREAM_TOKEN, nesting deeper than GS_JSON_STREAM_DEPTH or
 * an early end; GS_ERR_IO on a read error. */
gs_status gs_json_stream_next(gs_json_stream *s, gs_json_token *tok);

/* Skips the rest of the value that began with `first` (the token just
 * returned): a scalar needs nothing, an object or array is read to its
 * end, checked. */
gs_status gs_json_stream_skip(gs_json_stream *s, gs_json_token first);

/* Reads the value that follows a KEY as a finite number into *v;
 * GS_ERR_FORMAT naming `what` and the offset when it is something else. */
gs_status gs_json_stream_number(gs_json_stream *s, const char *what, double *v);

#endif
