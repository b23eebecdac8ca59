/* The JSON of predict's sections built one way (internal.h): a predicted
 * series' object with its name, numbers, assumption and rows of
 * predictions, the numbers read from plain structs through a table of
 * fields, and two-number intervals. serving.c, pipeline.c and render.c use
 * them. */
#include <string.h>

#include "report/predict/internal.h"

/* See internal.h. */
void gs_predict_json_fields(gs_json_build *b, cJSON *o, const void *row,
                            const gs_predict_json_field *fields) {
  const char *base = row;
  for (const gs_predict_json_field *f = fields; f->name; f++) {
    if (f->is_int) {
      int v;
      memcpy(&v, base + f->offset, sizeof v);
      gs_json_put_number(b, o, f->name, v);
    } else {
      double v;
      memcpy(&v, base + f->offset, sizeof v);
      gs_json_put_number(b, o, f->name, v);
    }
  }
}

/* See internal.h. */
void gs_predict_json_pair(gs_json_build *b, cJSON *o, const char *name, double low, double high) {
  cJSON *a = gs_json_put_array(b, o, name);
  gs_json_append_number(b, a, low);
  gs_json_append_number(b, a, high);
}

/* See internal.h. */
cJSON *gs_predict_json_series(gs_json_build *b, cJSON *arr, const char *name, const void *series,
                              const gs_predict_json_field *fields) {
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  gs_json_put_string(b, o, "series", name);
  gs_predict_json_fields(b, o, series, fields);
  gs_json_append(b, arr, o);  // frees `o` when it fails
  return b->failed ? NULL : o;
}

/* See internal.h. */
void gs_predict_json_predictions(gs_json_build *b, cJSON *o, const char *assumption,
                                 const void *rows, size_t n, size_t stride,
                                 const gs_predict_json_field *fields) {
  gs_json_put_string(b, o, "assumption", assumption);
  cJSON *pts = gs_json_put_array(b, o, "predictions");
  for (size_t k = 0; k < n && !b->failed; k++) {
    cJSON *j = gs_json_check(b, cJSON_CreateObject());
    gs_predict_json_fields(b, j, (const char *)rows + k * stride, fields);
    gs_json_append(b, pts, j);
  }
}
