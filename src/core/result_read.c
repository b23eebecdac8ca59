/* Reading a result document back: the file whole (core/file.h), JSON
 * errors with byte offset, line and column, and validation of the schema
 * and of the members every reader relies on, naming the JSON path. */
#include "core/result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_version.h"

/* Readers refuse larger files: a result document that big is almost surely
 * not one, and parsing it would need several times its size in memory. */
#define GS_RESULT_MAX_BYTES ((uint64_t)1 << 30)

typedef enum { WANT_OBJECT, WANT_ARRAY, WANT_STRING, WANT_NUMBER } json_want;

static int has_type(const cJSON *item, json_want want) {
  switch (want) {
    case WANT_OBJECT: return cJSON_IsObject(item);
    case WANT_ARRAY: return cJSON_IsArray(item);
    case WANT_STRING: return cJSON_IsString(item);
    case WANT_NUMBER: return cJSON_IsNumber(item);
  }
  return 0;
}

static const char *want_name(json_want want) {
  switch (want) {
    case WANT_OBJECT: return "an object";
    case WANT_ARRAY: return "an array";
    case WANT_STRING: return "a string";
    case WANT_NUMBER: return "a number";
  }
  return "?";
}

/* Member `name` of `object` (whose JSON path is `where`, "" for the top)
 * with the wanted type, or NULL after reporting which path is wrong. */
static const cJSON *require(const cJSON *object, const char *where, const char *name,
                            json_want want, const char *source) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
  const char *dot = where[0] ? "." : "";
  if (!item) {
    gs_error(GS_ERR_FORMAT, "%s: required member %s%s%s is missing", source, where, dot, name);
    return NULL;
  }
  if (!has_type(item, want)) {
    gs_error(GS_ERR_FORMAT, "%s: member %s%s%s must be %s but is %s", source, where, dot, name,
             want_name(want), gs_json_type_name(item));
    return NULL;
  }
  return item;
}

/* An element of an array that must be an object. */
static int require_object_element(const cJSON *item, const char *where, const char *source) {
  if (cJSON_IsObject(item)) return 1;
  gs_error(GS_ERR_FORMAT, "%s: %s must be an object but is %s", source, where,
           gs_json_type_name(item));
  return 0;
}

gs_status gs_result_validate(const cJSON *doc, const char *source) {
  if (!source) source = "result document";
  if (!cJSON_IsObject(doc))
    return gs_error(GS_ERR_FORMAT, "%s: not a gpuscale result document (top level is %s, not an object)",
                    source, gs_json_type_name(doc));

  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(doc, "schema");
  if (!schema)
    return gs_error(GS_ERR_FORMAT,
                    "%s: not a gpuscale result document (no \"schema\" member; expected \"%s\")",
                    source, GS_RESULT_SCHEMA);
  if (!cJSON_IsString(schema))
    return gs_error(GS_ERR_FORMAT, "%s: member schema must be a string but is %s", source,
                    gs_json_type_name(schema));
  if (strcmp(schema->valuestring, GS_RESULT_SCHEMA) != 0)
    return gs_error(GS_ERR_FORMAT,
                    "%s: unsupported schema \"%s\"; this gpuscale (%s) reads only \"%s\"", source,
                    schema->valuestring, GS_VERSION_STRING, GS_RESULT_SCHEMA);

  if (!require(doc, "", "tool", WANT_OBJECT, source) ||
      !require(doc, "", "created", WANT_STRING, source) ||
      !require(doc, "", "command", WANT_STRING, source) ||
      !require(doc, "", "config", WANT_OBJECT, source) ||
      !require(doc, "", "environment", WANT_OBJECT, source))
    return GS_ERR_FORMAT;
  const cJSON *measurements = require(doc, "", "measurements", WANT_ARRAY, source);
  if (!measurements) return GS_ERR_FORMAT;

  char mpath[64], rpath[96], kpath[128];
  size_t mi = 0;
  for (const cJSON *m = measurements->child; m; m = m->next, mi++) {
    snprintf(mpath, sizeof mpath, "measurements[%zu]", mi);
    if (!require_object_element(m, mpath, source) ||
        !require(m, mpath, "workload", WANT_STRING, source) ||
        !require(m, mpath, "world_size", WANT_NUMBER, source) ||
        !require(m, mpath, "status", WANT_STRING, source))
      return GS_ERR_FORMAT;
    const cJSON *runs = require(m, mpath, "runs", WANT_ARRAY, source);
    if (!runs) return GS_ERR_FORMAT;
    size_t ri = 0;
    for (const cJSON *run = runs->child; run; run = run->next, ri++) {
      snprintf(rpath, sizeof rpath, "%s.runs[%zu]", mpath, ri);
      if (!require_object_element(run, rpath, source)) return GS_ERR_FORMAT;
      const cJSON *ranks = require(run, rpath, "ranks", WANT_ARRAY, source);
      if (!ranks) return GS_ERR_FORMAT;
      size_t ki = 0;
      for (const cJSON *rank = ranks->child; rank; rank = rank->next, ki++) {
        snprintf(kpath, sizeof kpath, "%s.ranks[%zu]", rpath, ki);
        if (!require_object_element(rank, kpath, source) ||
            !require(rank, kpath, "rank", WANT_NUMBER, source) ||
            !require(rank, kpath, "status", WANT_STRING, source))
          return GS_ERR_FORMAT;
      }
    }
  }
  return GS_OK;
}

/* See result.h. */
gs_status gs_result_read(const char *path, cJSON **doc_out) {
  *doc_out = NULL;
  char *data = NULL;
  size_t size = 0;
  gs_status st = gs_file_read(path, GS_RESULT_MAX_BYTES, "result documents", &data, &size);
  if (st != GS_OK) return st;

  if (size == 0) {
    free(data);
    return gs_error(GS_ERR_FORMAT, "%s: empty file, not a result document", path);
  }
  const char *nul = memchr(data, '\0', size);
  if (nul) {
    size_t off = (size_t)(nul - data);
    free(data);
    return gs_error(GS_ERR_FORMAT, "%s: invalid JSON: NUL byte at offset %zu", path, off);
  }

  const char *end = NULL;
  // Length includes the terminator so that trailing garbage is rejected.
  cJSON *doc = cJSON_ParseWithLengthOpts(data, size + 1, &end, 1);
  if (!doc) {
    size_t off = (end && end >= data && end <= data + size) ? (size_t)(end - data) : size;
    size_t line = 1, col = 1;
    for (size_t i = 0; i < off; i++) {
      if (data[i] == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    free(data);
    return gs_error(GS_ERR_FORMAT,
                    "%s: invalid JSON at byte offset %zu (line %zu, column %zu)%s", path, off,
                    line, col, off >= size ? ": unexpected end of file (truncated?)" : "");
  }
  free(data);

  st = gs_result_validate(doc, path);
  if (st != GS_OK) {
    cJSON_Delete(doc);
    return st;
  }
  *doc_out = doc;
  return GS_OK;
}
