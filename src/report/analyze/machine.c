/* Reading the machine out of the report's documents: the inventory and
 * topology of an `info` document (docs/info.md, "JSON members added by
 * info") and the cells of a `p2p` document's tests (docs/p2p.md, "Result
 * document"), as typed views for the machine sections and the node
 * verdict. Nothing here is measured or derived: absent members stay NULL
 * or NaN. */
#include "report/analyze/machine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"

/* The string member `name` of `obj`, or NULL. */
static const char *text_of(const cJSON *obj, const char *name) {
  return gs_json_string_member(obj, name, NULL);
}

static const char *command_of(const gs_report *r, size_t file) {
  return gs_json_string_member(r->docs[file], "command", "");
}

/* See machine.h. */
int gs_machine_is_p2p(const gs_report *r, size_t file) {
  return cJSON_IsObject(gs_json_member(r->docs[file], "p2p"));
}

/* See machine.h. */
int gs_machine_is_ingested(const gs_report *r, size_t file) {
  return strcmp(command_of(r, file), "ingest") == 0;
}

/* See machine.h. */
int gs_machine_any(const gs_report *r) {
  for (size_t i = 0; i < r->n_files; i++)
    if (strcmp(command_of(r, i), "info") == 0 || gs_machine_is_p2p(r, i)) return 1;
  return 0;
}

/* See machine.h. */
int gs_machine_nvlinks(const char *word) {
  if (!word || strncmp(word, "NV", 2) != 0) return 0;
  char *end = NULL;
  long n = strtol(word + 2, &end, 10);
  return end != word + 2 && *end == '\0' && n > 0 && n < 1000 ? (int)n : 0;
}

static void gpu_read(const cJSON *g, gs_machine_gpu *out) {
  const cJSON *index = gs_json_member(g, "index");
  out->index = cJSON_IsNumber(index) ? index->valueint : -1;
  out->name = text_of(g, "name");
  out->uuid = text_of(g, "uuid");
  out->bus_id = text_of(g, "pci_bus_id");
  out->compute_capability = text_of(g, "compute_capability");
  out->cpu_affinity = text_of(g, "cpu_affinity");
  out->memory_bytes = gs_json_number_member(g, "memory_bytes");
  out->sm_count = gs_json_number_member(g, "sm_count");
  out->max_sm_clock_mhz = gs_json_number_member(g, "max_sm_clock_mhz");
  out->max_memory_clock_mhz = gs_json_number_member(g, "max_memory_clock_mhz");
  out->power_limit_watts = gs_json_number_member(g, "power_limit_watts");
  out->numa_node = gs_json_number_member(g, "numa_node");
}

/* Element (i, j) of a matrix member of the topology. */
static const cJSON *matrix_at(const cJSON *topology, const char *name, size_t i, size_t j) {
  return cJSON_GetArrayItem(cJSON_GetArrayItem(gs_json_member(topology, name), (int)i), (int)j);
}

/* See machine.h. */
void gs_machine_read(const gs_report *r, gs_machine *m) {
  memset(m, 0, sizeof *m);
  size_t file = 0;
  while (file < r->n_files && strcmp(command_of(r, file), "info") != 0) file++;
  if (file == r->n_files) return;
  m->present = 1;
  m->file = file;
  const cJSON *env = gs_json_member(r->docs[file], "environment");
  const cJSON *cuda = gs_json_member(env, "cuda");
  m->host = text_of(env, "host");
  m->driver = text_of(gs_json_member(env, "nvml"), "driver_version");
  m->nvml_status = text_of(gs_json_member(env, "nvml"), "status");
  m->cuda_driver = text_of(cuda, "driver_version_text");
  m->cuda_runtime = text_of(cuda, "runtime_version_text");
  m->cuda_status = text_of(cuda, "status");
  m->nccl = text_of(env, "nccl_version");
  m->cpu_model = text_of(gs_json_member(env, "cpu"), "model");
  const cJSON *gpus = gs_json_member(env, "gpus");
  for (const cJSON *g = cJSON_IsArray(gpus) ? gpus->child : NULL; g; g = g->next) {
    if (m->n_shown < GS_MACHINE_GPUS_MAX) gpu_read(g, &m->gpus[m->n_shown++]);
    m->n_gpus++;
  }
  const cJSON *topo = gs_json_member(env, "topology");
  for (size_t i = 0; i < m->n_shown; i++)
    for (size_t j = 0; j < m->n_shown; j++) {
      const cJSON *word = matrix_at(topo, "links", i, j);
      m->links[i][j] = cJSON_IsString(word) ? word->valuestring : NULL;
      const cJSON *peer = matrix_at(topo, "peer_access", i, j);
      m->peer[i][j] = cJSON_IsBool(peer) ? cJSON_IsTrue(peer) : -1;
      m->nvlink_bw[i][j] =
          gs_json_number_or_nan(matrix_at(topo, "nvlink_bandwidth_bytes_per_s", i, j));
    }
}

/* See machine.h. */
const cJSON *gs_machine_p2p_test(const cJSON *doc, const char *name) {
  const cJSON *tests = gs_json_member(gs_json_member(doc, "p2p"), "tests");
  for (const cJSON *t = cJSON_IsArray(tests) ? tests->child : NULL; t; t = t->next) {
    const char *key = gs_json_string_member(t, "name", NULL);
    if (key && strcmp(key, name) == 0) return t;
  }
  return NULL;
}

/* See machine.h. */
void gs_machine_p2p_cell(const cJSON *test, size_t i, size_t j, double *median,
                         const char **state) {
  *median = NAN;
  *state = NULL;
  const cJSON *cells = gs_json_member(test, "cells");
  const cJSON *cell = cJSON_GetArrayItem(cells, (int)i);
  if (strcmp(gs_json_string_member(test, "layout", ""), "matrix") == 0)
    cell = cJSON_GetArrayItem(cell, (int)j);
  if (!cJSON_IsObject(cell)) return;
  *state = gs_json_string_member(cell, "status", "?");
  const char *verified =
      gs_json_string_member(gs_json_member(cell, "verification"), "status", NULL);
  if (strcmp(*state, "ok") == 0 && verified && strcmp(verified, "failed") == 0)
    *state = "verification";
  *median = gs_json_number_member(cell, "median");
}
