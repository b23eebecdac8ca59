/* The machine as `gpuscale info` describes it, and its result document
 * (see info.h). */
#include "measure/info.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "measure/common.h"

void gs_machine_info_free(gs_machine_info *d) {
  gs_environment_free(&d->env);
  gs_topology_free(&d->topo);
  free(d->nvml_gpus);
  free(d->numa_text);
  free(d->affinity);
  free(d->numa);
  free(d->names);
  free(d->bus_ids);
}

gs_status gs_machine_info_collect(gs_machine_info *d) {
  memset(d, 0, sizeof *d);
  GS_TRY(gs_common_environment(&d->env));
  gs_nvml *nvml = gs_nvml_open(d->nvml_status, sizeof d->nvml_status);
  gs_nvml_driver_version(nvml, d->driver, sizeof d->driver);
  size_t n = d->env.gpu_count;
  gs_status st = GS_OK;
  if (n > 0) {
    d->nvml_gpus = calloc(n, sizeof *d->nvml_gpus);
    d->numa_text = calloc(n, sizeof *d->numa_text);
    d->affinity = calloc(n, sizeof *d->affinity);
    d->numa = calloc(n, sizeof *d->numa);
    d->names = calloc(n, sizeof *d->names);
    d->bus_ids = calloc(n, sizeof *d->bus_ids);
    if (!d->nvml_gpus || !d->numa_text || !d->affinity || !d->numa || !d->names || !d->bus_ids)
      st = gs_error(GS_ERR_NOMEM, "cannot allocate the GPU inventory");
    for (size_t i = 0; st == GS_OK && i < n; i++) {
      const gs_gpu_desc *g = &d->env.gpus[i];
      gs_nvml_gpu_info_get(nvml, g->pci_bus_id, &d->nvml_gpus[i]);
      if (d->nvml_gpus[i].numa_node >= 0)
        snprintf(d->numa_text[i], sizeof d->numa_text[i], "%d", d->nvml_gpus[i].numa_node);
      d->affinity[i] = d->nvml_gpus[i].cpu_affinity;
      d->numa[i] = d->numa_text[i];
      d->names[i] = g->name;
      d->bus_ids[i] = g->pci_bus_id;
    }
  }
  if (st == GS_OK) st = gs_topology_collect(&d->topo, &d->env, nvml);
  gs_nvml_close(nvml);
  return st;
}

/* Adds a number, or null when `known` is 0. */
static void add_opt_number(gs_json_build *b, cJSON *o, const char *name, int known, double v) {
  if (known)
    gs_json_put_number(b, o, name, v);
  else
    gs_json_put_null(b, o, name);
}

/* The NVML and topology members added to the environment block. */
static gs_status add_info_members(cJSON *doc, const gs_machine_info *d) {
  cJSON *env = cJSON_GetObjectItemCaseSensitive(doc, "environment");
  cJSON *gpus = env ? cJSON_GetObjectItemCaseSensitive(env, "gpus") : NULL;
  if (!env || !gpus) GS_BUG("result document has no environment");
  gs_json_build build = {0}, *b = &build;
  cJSON *nvml = gs_json_put_object(b, env, "nvml");
  gs_json_put_bool(b, nvml, "available", d->nvml_status[0] == '\0');
  gs_json_put_string_or_null(b, nvml, "status", d->nvml_status);
  gs_json_put_string_or_null(b, nvml, "driver_version", d->driver);
  size_t i = 0;
  cJSON *g = NULL;
  cJSON_ArrayForEach(g, gpus) {
    if (b->failed || i >= d->env.gpu_count) break;
    const gs_nvml_gpu_info *x = &d->nvml_gpus[i++];
    add_opt_number(b, g, "power_limit_watts", x->power_limit_mw != 0, x->power_limit_mw / 1000.0);
    add_opt_number(b, g, "max_sm_clock_mhz", x->max_sm_clock_mhz != 0, x->max_sm_clock_mhz);
    add_opt_number(b, g, "max_memory_clock_mhz", x->max_memory_clock_mhz != 0,
                   x->max_memory_clock_mhz);
    add_opt_number(b, g, "sm_clock_mhz", x->sm_clock_mhz != 0, x->sm_clock_mhz);
    add_opt_number(b, g, "memory_clock_mhz", x->memory_clock_mhz != 0, x->memory_clock_mhz);
    add_opt_number(b, g, "numa_node", x->numa_node >= 0, x->numa_node);
    gs_json_put_string_or_null(b, g, "cpu_affinity", x->cpu_affinity);
  }
  if (!b->failed) gs_json_put_item(b, env, "topology", gs_topology_to_json(&d->topo));
  return b->failed ? gs_error(GS_ERR_NOMEM, "out of memory building the info document") : GS_OK;
}

gs_status gs_machine_info_document(const gs_machine_info *d, const char *format_name,
                                   cJSON **doc) {
  *doc = NULL;
  cJSON *made = gs_result_new("info");
  if (!made) return gs_error(GS_ERR_NOMEM, "out of memory building the info document");
  cJSON *config = cJSON_CreateObject();
  gs_status st = GS_OK;
  if (!config || !cJSON_AddStringToObject(config, "format", format_name)) {
    cJSON_Delete(config);
    st = gs_error(GS_ERR_NOMEM, "out of memory building the info document");
  }
  if (st == GS_OK) st = gs_result_set_config(made, config);
  if (st == GS_OK) st = gs_result_set_environment(made, &d->env);
  if (st == GS_OK) st = add_info_members(made, d);
  if (st == GS_OK) st = gs_result_set_status(made, "ok");
  if (st != GS_OK) {
    cJSON_Delete(made);
    return st;
  }
  *doc = made;
  return GS_OK;
}
