/* The strict reader of GPU models' expected figures (see gpu_model.h and
 * docs/check.md, "Expected figures"). */
#include "core/gpu_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/check.h"
#include "core/file.h"
#include "core/json.h"

#define MODELS_SCHEMA "gpuscale/gpu-models/v1"
#define MODELS_MAX_BYTES (1u << 20)

/* Key, whether the value is a count (an integer), and the largest value a
 * sane file states: a typo of three orders of magnitude is refused. */
static const struct {
  const char *key;
  int integer;
  double max;
} figures[GS_FIG_COUNT] = {
    [GS_FIG_MEMORY_GB] = {"memory_gb", 0, 100000},
    [GS_FIG_MEMORY_BANDWIDTH_GBS] = {"memory_bandwidth_gbs", 0, 1e6},
    [GS_FIG_NVLINK_LINKS] = {"nvlink_links", 1, 18},
    [GS_FIG_NVLINK_GBS] = {"nvlink_gbs_per_direction", 0, 1e5},
    [GS_FIG_PCIE_GENERATION] = {"pcie_generation", 1, 16},
    [GS_FIG_PCIE_WIDTH] = {"pcie_width", 1, 32},
    [GS_FIG_POWER_LIMIT_W] = {"power_limit_w", 0, 10000},
    [GS_FIG_MAX_SM_CLOCK_MHZ] = {"max_sm_clock_mhz", 1, 100000},
    [GS_FIG_MAX_MEMORY_CLOCK_MHZ] = {"max_memory_clock_mhz", 1, 100000},
    [GS_FIG_FP32_TFLOPS] = {"fp32_tflops", 0, 1e5},
    [GS_FIG_TF32_TENSOR_TFLOPS] = {"tf32_tensor_tflops", 0, 1e5},
    [GS_FIG_BF16_TENSOR_TFLOPS] = {"bf16_tensor_tflops", 0, 1e5},
};

const char *gs_figure_key(gs_figure f) {
  return (unsigned)f < GS_FIG_COUNT ? figures[f].key : "unknown";
}

void gs_gpu_models_free(gs_gpu_models *m) {
  for (size_t i = 0; m->models && i < m->n; i++) free(m->models[i].nvml_names);
  free(m->models);
  m->models = NULL;
  m->n = 0;
}

/* Fails unless every member of `o` is one of `allowed` (NULL-terminated). */
static gs_status only_members(const cJSON *o, const char *const *allowed, const char *origin,
                              const char *where) {
  for (const cJSON *c = o->child; c; c = c->next) {
    size_t k = 0;
    while (allowed[k] && strcmp(allowed[k], c->string) != 0) k++;
    if (!allowed[k])
      return gs_error(GS_ERR_FORMAT, "%s: %s: unknown member \"%s\"", origin, where, c->string);
  }
  return GS_OK;
}

/* A string member into buf; it must be present, non-empty and fit. */
static gs_status take_string(const cJSON *o, const char *name, char *buf, size_t size,
                             const char *origin, const char *where) {
  const cJSON *s = gs_json_member(o, name);
  if (!cJSON_IsString(s) || !s->valuestring[0])
    return gs_error(GS_ERR_FORMAT, "%s: %s.%s: a non-empty string expected, found %s", origin,
                    where, name, cJSON_IsString(s) ? "an empty string" : gs_json_type_name(s));
  if (strlen(s->valuestring) >= size)
    return gs_error(GS_ERR_FORMAT, "%s: %s.%s: longer than %zu characters", origin, where, name,
                    size - 1);
  memcpy(buf, s->valuestring, strlen(s->valuestring) + 1);
  return GS_OK;
}

static gs_status parse_figure(const cJSON *f, gs_figure k, gs_model_figure *out,
                              const char *origin, const char *where) {
  static const char *const members[] = {"value", "source", NULL};
  char at[GS_TEXT_LONG];
  snprintf(at, sizeof at, "%s.figures.%s", where, figures[k].key);
  if (!cJSON_IsObject(f))
    return gs_error(GS_ERR_FORMAT, "%s: %s: an object {\"value\", \"source\"} expected, found %s",
                    origin, at, gs_json_type_name(f));
  GS_TRY(only_members(f, members, origin, at));
  const cJSON *v = gs_json_member(f, "value");
  const double x = gs_json_number_or_nan(v);
  if (!cJSON_IsNumber(v))
    return gs_error(GS_ERR_FORMAT, "%s: %s.value: a number in (0, %g] expected, found %s", origin,
                    at, figures[k].max, gs_json_type_name(v));
  if (!(x > 0) || x > figures[k].max)
    return gs_error(GS_ERR_FORMAT, "%s: %s.value: a number in (0, %g] expected, found %g", origin,
                    at, figures[k].max, v->valuedouble);
  if (figures[k].integer && x != floor(x))
    return gs_error(GS_ERR_FORMAT, "%s: %s.value: a whole number expected, found %g", origin, at,
                    x);
  GS_TRY(take_string(f, "source", out->source, sizeof out->source, origin, at));
  out->value = x;
  out->has = 1;
  return GS_OK;
}

static gs_status parse_model(const cJSON *m, gs_gpu_model *out, const char *origin, size_t i) {
  static const char *const members[] = {"model", "nvml_names", "form_factor", "figures", NULL};
  char where[GS_TEXT_SHORT];
  snprintf(where, sizeof where, "models[%zu]", i);
  if (!cJSON_IsObject(m))
    return gs_error(GS_ERR_FORMAT, "%s: %s: an object expected, found %s", origin, where,
                    gs_json_type_name(m));
  GS_TRY(only_members(m, members, origin, where));
  GS_TRY(take_string(m, "model", out->model, sizeof out->model, origin, where));
  char form[GS_TEXT_SHORT];
  GS_TRY(take_string(m, "form_factor", form, sizeof form, origin, where));
  if (strcmp(form, "sxm") != 0 && strcmp(form, "pcie") != 0)
    return gs_error(GS_ERR_FORMAT, "%s: %s.form_factor: \"sxm\" or \"pcie\" expected, found \"%s\"",
                    origin, where, form);
  out->sxm = strcmp(form, "sxm") == 0;
  const cJSON *names = gs_json_member(m, "nvml_names");
  const int count = cJSON_IsArray(names) ? cJSON_GetArraySize(names) : 0;
  if (count <= 0)
    return gs_error(GS_ERR_FORMAT, "%s: %s.nvml_names: a non-empty array of strings expected",
                    origin, where);
  out->nvml_names = calloc((size_t)count, sizeof *out->nvml_names);
  if (!out->nvml_names) return gs_error(GS_ERR_NOMEM, "out of memory reading %s", origin);
  for (const cJSON *s = names->child; s; s = s->next) {
    if (!cJSON_IsString(s) || !s->valuestring[0] ||
        strlen(s->valuestring) >= sizeof out->nvml_names[0])
      return gs_error(GS_ERR_FORMAT, "%s: %s.nvml_names[%zu]: a name of 1 to %zu characters "
                      "expected", origin, where, out->name_count, sizeof out->nvml_names[0] - 1);
    snprintf(out->nvml_names[out->name_count++], sizeof out->nvml_names[0], "%s", s->valuestring);
  }
  const cJSON *figs = gs_json_member(m, "figures");
  if (!cJSON_IsObject(figs))
    return gs_error(GS_ERR_FORMAT, "%s: %s.figures: an object expected, found %s", origin, where,
                    gs_json_type_name(figs));
  for (const cJSON *f = figs->child; f; f = f->next) {
    size_t k = 0;
    while (k < GS_FIG_COUNT && strcmp(figures[k].key, f->string) != 0) k++;
    if (k == GS_FIG_COUNT)
      return gs_error(GS_ERR_FORMAT, "%s: %s.figures: unknown figure \"%s\"", origin, where,
                      f->string);
    if (out->fig[k].has)
      return gs_error(GS_ERR_FORMAT, "%s: %s.figures: \"%s\" given twice", origin, where,
                      f->string);
    GS_TRY(parse_figure(f, (gs_figure)k, &out->fig[k], origin, where));
  }
  return GS_OK;
}

/* No NVML name may belong to two models: the figures of a GPU are one. */
static gs_status names_unique(const gs_gpu_models *m, const char *origin) {
  for (size_t a = 0; a < m->n; a++)
    for (size_t i = 0; i < m->models[a].name_count; i++)
      for (size_t b = a; b < m->n; b++)
        for (size_t j = b == a ? i + 1 : 0; j < m->models[b].name_count; j++)
          if (strcmp(m->models[a].nvml_names[i], m->models[b].nvml_names[j]) == 0)
            return gs_error(GS_ERR_FORMAT, "%s: NVML name \"%s\" listed twice (models[%zu] and "
                            "models[%zu])", origin, m->models[a].nvml_names[i], a, b);
  return GS_OK;
}

static gs_status parse_document(const cJSON *root, const char *origin, gs_gpu_models *out) {
  static const char *const members[] = {"schema", "about", "models", NULL};
  if (!cJSON_IsObject(root))
    return gs_error(GS_ERR_FORMAT, "%s: an object expected, found %s", origin,
                    gs_json_type_name(root));
  GS_TRY(only_members(root, members, origin, "the document"));
  const char *schema = gs_json_string_member(root, "schema", NULL);
  if (!schema || strcmp(schema, MODELS_SCHEMA) != 0)
    return gs_error(GS_ERR_FORMAT, "%s: \"schema\": \"%s\" expected, found %s%s%s", origin,
                    MODELS_SCHEMA, schema ? "\"" : "", schema ? schema : "none",
                    schema ? "\"" : "");
  const cJSON *about = gs_json_member(root, "about");
  if (about && !cJSON_IsString(about))
    return gs_error(GS_ERR_FORMAT, "%s: \"about\": a string expected, found %s", origin,
                    gs_json_type_name(about));
  const cJSON *models = gs_json_member(root, "models");
  const int count = cJSON_IsArray(models) ? cJSON_GetArraySize(models) : 0;
  if (count <= 0)
    return gs_error(GS_ERR_FORMAT, "%s: \"models\": a non-empty array expected", origin);
  out->models = calloc((size_t)count, sizeof *out->models);
  if (!out->models) return gs_error(GS_ERR_NOMEM, "out of memory reading %s", origin);
  for (const cJSON *m = models->child; m; m = m->next) {
    gs_gpu_model *one = &out->models[out->n];
    out->n++;
    GS_TRY(parse_model(m, one, origin, out->n - 1));
  }
  return names_unique(out, origin);
}

gs_status gs_gpu_models_parse(const char *text, const char *origin, gs_gpu_models *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->path, sizeof out->path, "%s", origin);
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
  if (!root) {
    size_t at = end && end >= text ? (size_t)(end - text) : 0;
    return gs_error(GS_ERR_FORMAT, "%s: not valid JSON (at byte %zu)", origin, at);
  }
  gs_status st = parse_document(root, origin, out);
  cJSON_Delete(root);
  if (st != GS_OK) {
    gs_gpu_models_free(out);
    snprintf(out->path, sizeof out->path, "%s", origin);
  }
  return st;
}

gs_status gs_gpu_models_load(const char *path, gs_gpu_models *out) {
  memset(out, 0, sizeof *out);
  char *text = NULL;
  size_t size = 0;
  GS_TRY(gs_file_read(path, MODELS_MAX_BYTES, "expected-figure files", &text, &size));
  if (strlen(text) != size) {
    free(text);
    return gs_error(GS_ERR_FORMAT, "%s: a NUL byte in the file", path);
  }
  gs_status st = gs_gpu_models_parse(text, path, out);
  free(text);
  return st;
}

const gs_gpu_model *gs_gpu_models_find(const gs_gpu_models *m, const char *nvml_name) {
  if (!m || !nvml_name || !*nvml_name) return NULL;
  for (size_t i = 0; i < m->n; i++)
    for (size_t j = 0; j < m->models[i].name_count; j++)
      if (strcmp(m->models[i].nvml_names[j], nvml_name) == 0) return &m->models[i];
  return NULL;
}
