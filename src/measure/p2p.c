/* `gpuscale p2p` as a job (see p2p.h): checks, the measurement, the
 * topology and the document. */
#include "measure/p2p.h"

#include <string.h>

#include "core/check.h"
#include "core/file.h"
#include "measure/job.h"
#include "platform/nvml.h"

/* The first failed cell's status. */
static gs_status first_cell_failure(const gs_p2p_result *r) {
  for (size_t ti = 0; ti < r->n_tests; ti++) {
    const gs_p2p_test *t = &r->tests[ti];
    size_t cells = t->per_gpu ? r->n_gpus : r->n_gpus * r->n_gpus;
    for (size_t k = 0; k < cells; k++)
      if (t->cells[k].measured && t->cells[k].status != GS_OK) return t->cells[k].status;
  }
  return GS_OK;
}

static gs_status write_document(const gs_p2p_options *o, const gs_environment *env,
                                const gs_p2p_outcome *out, int interrupted, const char *path) {
  cJSON *doc = gs_result_new("p2p");
  if (!doc) return gs_error(GS_ERR_NOMEM, "cannot create the result document");
  gs_status st = gs_result_set_config(doc, gs_p2p_options_to_json(o));
  if (st == GS_OK) st = gs_result_set_environment(doc, env);
  cJSON *envj = cJSON_GetObjectItemCaseSensitive(doc, "environment");
  cJSON *topoj = st == GS_OK ? gs_topology_to_json(&out->topology) : NULL;
  if (st == GS_OK && (!envj || !topoj || !cJSON_AddItemToObject(envj, "topology", topoj))) {
    cJSON_Delete(topoj);
    st = gs_error(GS_ERR_NOMEM, "out of memory building the p2p document");
  }
  cJSON *p2p = st == GS_OK ? gs_p2p_to_json(&out->result) : NULL;
  if (st == GS_OK && (!p2p || !cJSON_AddItemToObject(doc, "p2p", p2p))) {
    cJSON_Delete(p2p);
    st = gs_error(GS_ERR_NOMEM, "out of memory building the p2p document");
  }
  // The cells as one measurement: a failed cell keeps the others' figures.
  const size_t failed = gs_p2p_any_failed(&out->result) ? 1 : 0;
  if (st == GS_OK) st = gs_result_set_status(doc, gs_result_status_rule(1, failed, failed, !interrupted));
  if (st == GS_OK) st = gs_common_add_trace(doc, o->trace, path);
  if (st == GS_OK) st = gs_result_write(doc, path);
  if (st == GS_OK) gs_note("result written to %s", path);
  cJSON_Delete(doc);
  return st;
}

/* Measures and writes, within a job already started. */
static gs_status measure(const gs_p2p_options *o, const gs_environment *env, const char *path,
                         gs_p2p_outcome *out) {
  for (size_t k = 0; k < o->n_pairs; k++)
    for (int e = 0; e < 2; e++)
      if ((size_t)o->pairs[k][e] >= env->gpu_count && env->gpu_count > 0)
        return gs_error(GS_ERR_USAGE, "option --pairs: GPU %d does not exist (%zu present)",
                        o->pairs[k][e], env->gpu_count);
  gs_status st = gs_p2p_measure(o, env, &out->result);
  const int interrupted = st == GS_ERR_INTERRUPTED;
  if (st != GS_OK && !interrupted) return st;
  gs_nvml *nvml = gs_nvml_open(NULL, 0);
  gs_status topo = gs_topology_collect(&out->topology, env, nvml);
  gs_nvml_close(nvml);
  if (topo != GS_OK) return topo;
  out->have_topology = 1;
  GS_TRY(write_document(o, env, out, interrupted, path));
  if (interrupted)
    return gs_error(GS_ERR_PARTIAL, "p2p stopped by a signal; the document holds the "
                          "cells measured before");
  return first_cell_failure(&out->result);
}

gs_status gs_measure_p2p(const gs_p2p_options *options, const gs_environment *env,
                         const gs_common_options *common, const char *path, gs_p2p_outcome *out) {
  memset(out, 0, sizeof *out);
  GS_TRY(gs_file_check_output(path, "option --out"));
  gs_environment collected = {0};
  gs_measure_job mj;
  gs_status st = gs_measure_job_start_local(&mj, "p2p");
  if (st == GS_OK && common) st = gs_measure_job_trace(&mj, common, path);
  gs_p2p_options traced = *options;
  traced.trace = mj.trace;
  const gs_p2p_options *o = &traced;
  // The environment is collected after the output was checked (CUDA's
  // start takes time) unless the caller has it already.
  if (st == GS_OK && !env) {
    st = gs_common_environment(&collected);
    env = &collected;
  }
  if (st == GS_OK) st = measure(o, env, path, out);
  gs_environment_free(&collected);
  return gs_measure_job_finish(&mj, st);
}

void gs_p2p_outcome_free(gs_p2p_outcome *out) {
  gs_p2p_result_free(&out->result);
  if (out->have_topology) gs_topology_free(&out->topology);
  memset(out, 0, sizeof *out);
}
