/* The one way JSON is built and read: a builder whose adds are checked (the
 * first allocation that fails sets one flag, the build goes on as cJSON
 * ignores a NULL parent, and one check at the end turns the flag into
 * GS_ERR_NOMEM), and member readers that tolerate absent or mistyped
 * members. Every writer of a document (core/result*.c, ingest/, the
 * report's JSON, measure/'s documents, the telemetry and p2p members, the
 * workloads' options, `version --format json`) builds through it. */
#ifndef GS_CORE_JSON_H
#define GS_CORE_JSON_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/status.h"

/* ---- building ---------------------------------------------------------- */

/* A build in progress: `failed` is set by the first add that could not
 * allocate (and stays set). Start it zeroed: gs_json_build b = {0}. */
typedef struct {
  int failed;
} gs_json_build;

/* Returns `item`; a NULL `item` marks the build failed. For an add the
 * helpers below do not cover. */
cJSON *gs_json_check(gs_json_build *b, cJSON *item);

/* Members of object `o` (a NULL `o` is a failed parent: nothing is added,
 * the build was already marked). Numbers that are NaN or infinite become
 * null; a 64-bit count travels as a double, exact up to 2^53. */
void gs_json_put_number(gs_json_build *b, cJSON *o, const char *name, double value);
void gs_json_put_u64(gs_json_build *b, cJSON *o, const char *name, uint64_t value);
void gs_json_put_string(gs_json_build *b, cJSON *o, const char *name, const char *text);
/* A string, or null when `text` is NULL or empty. */
void gs_json_put_string_or_null(gs_json_build *b, cJSON *o, const char *name, const char *text);
void gs_json_put_bool(gs_json_build *b, cJSON *o, const char *name, int flag);
/* true / false, or null when `flag` < 0 (not known). */
void gs_json_put_bool_or_null(gs_json_build *b, cJSON *o, const char *name, int flag);
void gs_json_put_null(gs_json_build *b, cJSON *o, const char *name);
/* A new empty object / array as member `name`; NULL (and the build marked
 * failed) when it cannot be allocated. */
cJSON *gs_json_put_object(gs_json_build *b, cJSON *o, const char *name);
cJSON *gs_json_put_array(gs_json_build *b, cJSON *o, const char *name);
/* Adds `item` as member `name` of `o` and takes it over; a NULL `item` (its
 * creation failed) or a failed add marks the build failed and frees it. */
void gs_json_put_item(gs_json_build *b, cJSON *o, const char *name, cJSON *item);
/* Appends `item` to array `a` and takes it over, as gs_json_put_item. */
void gs_json_append(gs_json_build *b, cJSON *a, cJSON *item);
/* Appends a number (null when NaN or infinite) / a string to array `a`. */
void gs_json_append_number(gs_json_build *b, cJSON *a, double value);
void gs_json_append_string(gs_json_build *b, cJSON *a, const char *text);

/* `root` when the build did not fail; else frees `root` (NULL is fine) and
 * returns NULL: the end of a function that returns what it built. */
cJSON *gs_json_build_finish(const gs_json_build *b, cJSON *root);

/* GS_OK, or GS_ERR_NOMEM "out of memory building WHAT" when the build
 * failed. */
gs_status gs_json_build_status(const gs_json_build *b, const char *what);

/* Adds a number member, writing null for NaN or infinity; unchecked (the
 * builder's gs_json_put_number checks). Returns the member or NULL. */
cJSON *gs_json_add_number(cJSON *object, const char *name, double value);

/* ---- reading ----------------------------------------------------------- */

/* Member `name` of `obj` (case-sensitive), or NULL when `obj` is NULL or
 * has none (an array or a scalar has none). */
const cJSON *gs_json_member(const cJSON *obj, const char *name);

/* The string member `name` of `obj`, or `fallback` when it is absent or not
 * a string. Points into the document. */
const char *gs_json_string_member(const cJSON *obj, const char *name, const char *fallback);

/* The value of number `x`, or NaN when it is absent, not a number or not
 * finite. */
double gs_json_number_or_nan(const cJSON *x);

/* gs_json_number_or_nan of member `name` of `obj`. */
double gs_json_number_member(const cJSON *obj, const char *name);

/* "an object", "a string", ..., "null", or "missing" for NULL: for errors
 * that say what a JSON value is instead of what was expected. */
const char *gs_json_type_name(const cJSON *item);

#endif
