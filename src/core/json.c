/* The checked JSON builder and the member readers of core/json.h. */
#include "core/json.h"

#include <math.h>

cJSON *gs_json_check(gs_json_build *b, cJSON *item) {
  if (!item) b->failed = 1;
  return item;
}

cJSON *gs_json_add_number(cJSON *object, const char *name, double value) {
  if (!isfinite(value)) return cJSON_AddNullToObject(object, name);
  return cJSON_AddNumberToObject(object, name, value);
}

void gs_json_put_number(gs_json_build *b, cJSON *o, const char *name, double value) {
  gs_json_check(b, gs_json_add_number(o, name, value));
}

void gs_json_put_u64(gs_json_build *b, cJSON *o, const char *name, uint64_t value) {
  gs_json_put_number(b, o, name, (double)value);
}

void gs_json_put_string(gs_json_build *b, cJSON *o, const char *name, const char *text) {
  gs_json_check(b, cJSON_AddStringToObject(o, name, text));
}

void gs_json_put_string_or_null(gs_json_build *b, cJSON *o, const char *name, const char *text) {
  if (text && text[0])
    gs_json_check(b, cJSON_AddStringToObject(o, name, text));
  else
    gs_json_check(b, cJSON_AddNullToObject(o, name));
}

void gs_json_put_bool(gs_json_build *b, cJSON *o, const char *name, int flag) {
  gs_json_check(b, cJSON_AddBoolToObject(o, name, flag ? 1 : 0));
}

void gs_json_put_bool_or_null(gs_json_build *b, cJSON *o, const char *name, int flag) {
  if (flag < 0)
    gs_json_put_null(b, o, name);
  else
    gs_json_put_bool(b, o, name, flag);
}

void gs_json_put_null(gs_json_build *b, cJSON *o, const char *name) {
  gs_json_check(b, cJSON_AddNullToObject(o, name));
}

cJSON *gs_json_put_object(gs_json_build *b, cJSON *o, const char *name) {
  return gs_json_check(b, cJSON_AddObjectToObject(o, name));
}

cJSON *gs_json_put_array(gs_json_build *b, cJSON *o, const char *name) {
  return gs_json_check(b, cJSON_AddArrayToObject(o, name));
}

void gs_json_put_item(gs_json_build *b, cJSON *o, const char *name, cJSON *item) {
  if (!item || !o || !cJSON_AddItemToObject(o, name, item)) {
    cJSON_Delete(item);
    b->failed = 1;
  }
}

void gs_json_append(gs_json_build *b, cJSON *a, cJSON *item) {
  if (!item || !a || !cJSON_AddItemToArray(a, item)) {
    cJSON_Delete(item);
    b->failed = 1;
  }
}

void gs_json_append_number(gs_json_build *b, cJSON *a, double value) {
  gs_json_append(b, a, isfinite(value) ? cJSON_CreateNumber(value) : cJSON_CreateNull());
}

void gs_json_append_string(gs_json_build *b, cJSON *a, const char *text) {
  gs_json_append(b, a, cJSON_CreateString(text));
}

cJSON *gs_json_build_finish(const gs_json_build *b, cJSON *root) {
  if (!b->failed) return root;
  cJSON_Delete(root);
  return NULL;
}

gs_status gs_json_build_status(const gs_json_build *b, const char *what) {
  if (!b->failed) return GS_OK;
  return gs_error(GS_ERR_NOMEM, "out of memory building %s", what);
}

const cJSON *gs_json_member(const cJSON *obj, const char *name) {
  return cJSON_GetObjectItemCaseSensitive(obj, name);
}

const char *gs_json_string_member(const cJSON *obj, const char *name, const char *fallback) {
  const cJSON *x = gs_json_member(obj, name);
  return cJSON_IsString(x) ? x->valuestring : fallback;
}

double gs_json_number_or_nan(const cJSON *x) {
  return cJSON_IsNumber(x) && isfinite(x->valuedouble) ? x->valuedouble : NAN;
}

double gs_json_number_member(const cJSON *obj, const char *name) {
  return gs_json_number_or_nan(gs_json_member(obj, name));
}

const char *gs_json_type_name(const cJSON *item) {
  if (!item) return "missing";
  if (cJSON_IsObject(item)) return "an object";
  if (cJSON_IsArray(item)) return "an array";
  if (cJSON_IsString(item)) return "a string";
  if (cJSON_IsNumber(item)) return "a number";
  if (cJSON_IsBool(item)) return "a boolean";
  if (cJSON_IsNull(item)) return "null";
  return "invalid";
}
