/* Writing a result document: a pretty printer with exact numbers (the
 * shortest text that reads back bit for bit) whose output goes through the
 * atomic file path of core/file.h. */
#include "core/result.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

/* Shortest decimal text that reads back as exactly `v`. cJSON's own printer
 * tries 15 digits and accepts them when they come back within an epsilon, so
 * 0.1 + 0.2 would be written as 0.3; we require bit equality instead. */
static void format_number(double v, char *buf, size_t size) {
  if (!isfinite(v)) {
    snprintf(buf, size, "null");
    return;
  }
  // Integers below 2^53 are exact: write them without exponent or point.
  if (v == floor(v) && fabs(v) < 9007199254740992.0) {
    snprintf(buf, size, "%.0f", v);
    return;
  }
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(buf, size, "%.*g", digits, v);
    if (strtod(buf, NULL) == v) return;
  }
}

static void print_indent(FILE *f, int depth) {
  for (int i = 0; i < depth; i++) fputs("  ", f);
}

static void print_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    switch (*p) {
      case '"': fputs("\\\"", f); break;
      case '\\': fputs("\\\\", f); break;
      case '\b': fputs("\\b", f); break;
      case '\f': fputs("\\f", f); break;
      case '\n': fputs("\\n", f); break;
      case '\r': fputs("\\r", f); break;
      case '\t': fputs("\\t", f); break;
      default:
        if (*p < 0x20)
          fprintf(f, "\\u%04x", (unsigned)*p);
        else
          fputc(*p, f);
    }
  }
  fputc('"', f);
}

static int is_container(const cJSON *item) { return cJSON_IsArray(item) || cJSON_IsObject(item); }

/* Pretty printer with two-space indentation. Arrays of scalars (the raw
 * samples) stay on one line so that a result file remains browsable. */
static void print_value(FILE *f, const cJSON *item, int depth) {
  if (cJSON_IsNumber(item)) {
    char buf[64];
    format_number(item->valuedouble, buf, sizeof buf);
    fputs(buf, f);
  } else if (cJSON_IsString(item)) {
    print_string(f, item->valuestring);
  } else if (cJSON_IsTrue(item)) {
    fputs("true", f);
  } else if (cJSON_IsFalse(item)) {
    fputs("false", f);
  } else if (cJSON_IsRaw(item) && item->valuestring) {
    fputs(item->valuestring, f);
  } else if (is_container(item)) {
    int object = cJSON_IsObject(item);
    const cJSON *child = item->child;
    if (!child) {
      fputs(object ? "{}" : "[]", f);
      return;
    }
    int inline_scalars = !object;
    for (const cJSON *c = child; c && inline_scalars; c = c->next)
      if (is_container(c)) inline_scalars = 0;
    fputc(object ? '{' : '[', f);
    for (const cJSON *c = child; c; c = c->next) {
      if (inline_scalars) {
        if (c != child) fputs(", ", f);
      } else {
        fputc('\n', f);
        print_indent(f, depth + 1);
      }
      if (object) {
        print_string(f, c->string);
        fputs(": ", f);
      }
      print_value(f, c, depth + 1);
      if (!inline_scalars && c->next) fputc(',', f);
    }
    if (!inline_scalars) {
      fputc('\n', f);
      print_indent(f, depth);
    }
    fputc(object ? '}' : ']', f);
  } else {
    fputs("null", f);
  }
}

/* See result.h. */
gs_status gs_json_print(FILE *out, const cJSON *doc) {
  print_value(out, doc, 0);
  fputc('\n', out);
  if (fflush(out) != 0 || ferror(out))
    return gs_error(GS_ERR_IO, "cannot write the JSON document: %s", strerror(errno));
  return GS_OK;
}

/* Prints `doc` into the opened `out` and commits it. */
static gs_status write_into(gs_file_out *out, const cJSON *doc) {
  print_value(out->f, doc, 0);
  fputc('\n', out->f);
  return gs_file_out_commit(out);
}

/* See result.h. */
gs_status gs_result_write(const cJSON *doc, const char *path) {
  if (!doc || !path || !path[0])
    GS_BUG("gs_result_write: no document or no path");
  gs_file_out out;
  GS_TRY(gs_file_out_open(&out, path, NULL));
  return write_into(&out, doc);
}

/* See result.h. */
gs_status gs_result_rewrite(const cJSON *doc, const char *path, gs_file_stamp *stamp) {
  if (!doc || !path || !path[0])
    GS_BUG("gs_result_rewrite: no document or no path");
  gs_file_out out;
  GS_TRY(gs_file_out_reopen(&out, path, NULL, stamp));
  return write_into(&out, doc);
}
