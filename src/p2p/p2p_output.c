/* p2p output: terminal matrices in the style of `gpuscale info`, the
 * per-pair "what the link delivers" lines, and the result-document member
 * (docs/p2p.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "p2p/p2p.h"

static size_t cell_count(const gs_p2p_result *r, const gs_p2p_test *t) {
  return t->per_gpu ? r->n_gpus : r->n_gpus * r->n_gpus;
}

/* Median of a cell measured without error, else NaN. */
static double cell_value(const gs_p2p_cell *c) {
  return c->measured && c->status == GS_OK && c->n ? c->median : NAN;
}

static const gs_p2p_test *find_test(const gs_p2p_result *r, const char *key) {
  for (size_t i = 0; i < r->n_tests; i++)
    if (strcmp(r->tests[i].key, key) == 0 && !r->tests[i].skipped) return &r->tests[i];
  return NULL;
}

/* The best unidirectional GPU-to-GPU figure of each measured pair against
 * the theoretical NVLink rate, and the SM-path latency. */
static void print_pair_lines(FILE *out, const gs_p2p_result *r, const gs_topology *topo) {
  static const char *const unidir[] = {"ce_unidir_p2p", "ce_unidir_p2p_streams", "sm_unidir_p2p",
                                       "sm_unidir_p2p_pull"};
  size_t n = r->n_gpus;
  int header = 0;
  for (size_t a = 0; a < n; a++) {
    for (size_t b = 0; b < n; b++) {
      if (a == b) continue;
      double best = NAN;
      const char *best_key = NULL;
      for (size_t k = 0; k < sizeof unidir / sizeof unidir[0]; k++) {
        const gs_p2p_test *t = find_test(r, unidir[k]);
        double v = t ? cell_value(&t->cells[a * n + b]) : NAN;
        if (!isnan(v) && (isnan(best) || v > best)) {
          best = v;
          best_key = unidir[k];
        }
      }
      if (isnan(best)) continue;
      if (!header) {
        fprintf(out, "\nWhat the links deliver (best unidirectional figure per pair)\n\n");
        header = 1;
      }
      fprintf(out, "  GPU%zu -> GPU%zu  %.1f GB/s (%s)", a, b, best / 1e9, best_key);
      double theory = topo && topo->n == n ? topo->nvlink_bw[a * n + b] : NAN;
      if (isfinite(theory) && theory > 0)
        fprintf(out, ", %.0f%% of %.0f GB/s NVLink theoretical", 100.0 * best / theory,
                theory / 1e9);
      const gs_p2p_test *lat = find_test(r, "latency_sm_p2p");
      double l = lat ? cell_value(&lat->cells[a * n + b]) : NAN;
      if (!isnan(l)) fprintf(out, ", SM-path latency %.2f us", l * 1e6);
      fprintf(out, "\n");
    }
  }
}

void gs_p2p_print(FILE *out, const gs_p2p_result *r, const gs_topology *topo) {
  size_t n = r->n_gpus;
  double *values = calloc(n > 0 ? n * n : 1, sizeof *values);
  if (!values) return;
  for (size_t ti = 0; ti < r->n_tests; ti++) {
    const gs_p2p_test *t = &r->tests[ti];
    if (t->skipped) {
      if (strncmp(t->reason, "not selected", 12) != 0)
        fprintf(out, "\n%s\n  skipped: %s\n", t->title, t->reason);
      continue;
    }
    size_t cells = cell_count(r, t);
    int any = 0;
    for (size_t k = 0; k < cells; k++) {
      values[k] = cell_value(&t->cells[k]);
      any |= t->cells[k].measured || t->cells[k].error[0];
    }
    if (!any) continue;
    double scale = t->unit == GS_P2P_UNIT_LATENCY ? 1e6 : 1e-9;
    int decimals = t->unit == GS_P2P_UNIT_LATENCY ? 2 : 1;
    fprintf(out, "\n%s\n\n", t->title);
    if (t->per_gpu)
      gs_topology_print_row(out, 1, "host", n, values, scale, decimals, "-");
    else
      gs_topology_print_values(out, n, values, scale, decimals, "-");
    for (size_t k = 0; k < cells; k++) {
      const gs_p2p_cell *c = &t->cells[k];
      if (!c->error[0]) continue;
      if (t->per_gpu)
        fprintf(out, "  GPU%zu: %s\n", k, c->error);
      else
        fprintf(out, "  GPU%zu -> GPU%zu: %s\n", k / n, k % n, c->error);
    }
  }
  print_pair_lines(out, r, topo);
  free(values);
}

/* ---- JSON ------------------------------------------------------------------------ */

static const char *verify_name(gs_verify_status v) {
  return v == GS_VERIFY_PASSED ? "passed" : v == GS_VERIFY_FAILED ? "failed" : "skipped";
}

/* A cell: null when not asked for; {"status": "skipped", "reason"} when it
 * could not run here; else the measured object. */
static cJSON *cell_to_json(const gs_p2p_cell *c) {
  if (!c->measured && !c->error[0]) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  int ok = o != NULL;
  if (!c->measured) {
    ok = ok && cJSON_AddStringToObject(o, "status", "skipped");
    ok = ok && cJSON_AddStringToObject(o, "reason", c->error);
  } else {
    ok = ok && cJSON_AddStringToObject(o, "status", gs_status_name(c->status));
    ok = ok && (c->error[0] ? cJSON_AddStringToObject(o, "error", c->error)
                            : cJSON_AddNullToObject(o, "error"));
    int have = c->n > 0;
    ok = ok && gs_json_add_number(o, "median", have ? c->median : NAN);
    ok = ok && gs_json_add_number(o, "min", have ? c->min : NAN);
    ok = ok && gs_json_add_number(o, "max", have ? c->max : NAN);
    cJSON *samples = ok ? cJSON_AddArrayToObject(o, "samples") : NULL;
    ok = samples != NULL;
    for (size_t k = 0; ok && k < c->n; k++)
      ok = cJSON_AddItemToArray(samples, cJSON_CreateNumber(c->samples[k]));
    if (ok && c->bidirectional) {
      cJSON *dir = cJSON_AddArrayToObject(o, "direction_median");
      ok = dir && cJSON_AddItemToArray(dir, cJSON_CreateNumber(c->direction_median[0])) &&
           cJSON_AddItemToArray(dir, cJSON_CreateNumber(c->direction_median[1]));
    }
    cJSON *v = ok ? cJSON_AddObjectToObject(o, "verification") : NULL;
    ok = v != NULL;
    ok = ok && cJSON_AddStringToObject(v, "status", verify_name(c->verify));
    ok = ok && cJSON_AddNumberToObject(v, "mismatches", (double)c->mismatches);
  }
  if (ok) return o;
  cJSON_Delete(o);
  return NULL;
}

static cJSON *test_to_json(const gs_p2p_result *r, const gs_p2p_test *t) {
  cJSON *o = cJSON_CreateObject();
  int ok = o != NULL;
  ok = ok && cJSON_AddStringToObject(o, "name", t->key);
  ok = ok && cJSON_AddStringToObject(o, "title", t->title);
  ok = ok && cJSON_AddStringToObject(
                 o, "unit", t->unit == GS_P2P_UNIT_LATENCY ? "seconds" : "bytes_per_second");
  ok = ok && cJSON_AddStringToObject(o, "layout", t->per_gpu ? "per_gpu" : "matrix");
  ok = ok && cJSON_AddStringToObject(o, "status", t->skipped ? "skipped" : "ran");
  ok = ok && (t->skipped ? cJSON_AddStringToObject(o, "reason", t->reason)
                         : cJSON_AddNullToObject(o, "reason"));
  size_t n = r->n_gpus;
  if (ok && !t->skipped && t->per_gpu) {
    cJSON *cells = cJSON_AddArrayToObject(o, "cells");
    ok = cells != NULL;
    for (size_t k = 0; ok && k < n; k++) {
      cJSON *c = cell_to_json(&t->cells[k]);
      ok = c && cJSON_AddItemToArray(cells, c);
      if (!ok) cJSON_Delete(c);
    }
  } else if (ok && !t->skipped) {
    cJSON *rows = cJSON_AddArrayToObject(o, "cells");
    ok = rows != NULL;
    for (size_t i = 0; ok && i < n; i++) {
      cJSON *row = cJSON_CreateArray();
      ok = row && cJSON_AddItemToArray(rows, row);
      if (!ok) cJSON_Delete(row);
      for (size_t j = 0; ok && j < n; j++) {
        cJSON *c = cell_to_json(&t->cells[i * n + j]);
        ok = c && cJSON_AddItemToArray(row, c);
        if (!ok) cJSON_Delete(c);
      }
    }
  }
  if (ok) return o;
  cJSON_Delete(o);
  return NULL;
}

cJSON *gs_p2p_to_json(const gs_p2p_result *r) {
  cJSON *o = cJSON_CreateObject();
  int ok = o != NULL;
  cJSON *devices = ok ? cJSON_AddArrayToObject(o, "devices") : NULL;
  ok = devices != NULL;
  for (size_t i = 0; ok && i < r->n_gpus; i++)
    ok = cJSON_AddItemToArray(devices, cJSON_CreateNumber(r->devices[i]));
  cJSON *tests = ok ? cJSON_AddArrayToObject(o, "tests") : NULL;
  ok = tests != NULL;
  for (size_t ti = 0; ok && ti < r->n_tests; ti++) {
    cJSON *t = test_to_json(r, &r->tests[ti]);
    ok = t && cJSON_AddItemToArray(tests, t);
    if (!ok) cJSON_Delete(t);
  }
  if (ok) return o;
  cJSON_Delete(o);
  return NULL;
}

cJSON *gs_p2p_options_to_json(const gs_p2p_options *o) {
  cJSON *c = cJSON_CreateObject();
  if (!c) return NULL;
  int ok = cJSON_AddNumberToObject(c, "size_bytes", (double)o->size_bytes) != NULL;
  ok = ok && cJSON_AddNumberToObject(c, "iters", (double)o->iters);
  ok = ok && cJSON_AddNumberToObject(c, "samples", (double)o->samples);
  ok = ok && cJSON_AddNumberToObject(c, "streams", (double)o->streams);
  ok = ok && cJSON_AddNumberToObject(c, "latency_rounds", (double)o->latency_rounds);
  ok = ok && cJSON_AddNumberToObject(c, "sm_ctas_per_sm", (double)o->sm_ctas);
  ok = ok && cJSON_AddStringToObject(c, "mode", gs_p2p_mode_names[o->mode]);
  cJSON *pairs = NULL;
  if (ok && o->n_pairs == 0) {
    ok = cJSON_AddNullToObject(c, "pairs") != NULL;
  } else if (ok) {
    pairs = cJSON_AddArrayToObject(c, "pairs");
    ok = pairs != NULL;
    for (size_t k = 0; ok && k < o->n_pairs; k++) {
      cJSON *p = cJSON_CreateArray();
      ok = p && cJSON_AddItemToArray(pairs, p) &&
           cJSON_AddItemToArray(p, cJSON_CreateNumber(o->pairs[k][0])) &&
           cJSON_AddItemToArray(p, cJSON_CreateNumber(o->pairs[k][1]));
    }
  }
  if (ok) return c;
  cJSON_Delete(c);
  return NULL;
}
