/* p2p output: terminal matrices in the style of `gpuscale info`, the
 * per-pair "what the link delivers" lines, and the result-document member
 * (docs/p2p.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
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
 * could not run here; else the measured object. Appended to array `a`. */
static void append_cell(gs_json_build *b, cJSON *a, const gs_p2p_cell *c) {
  if (!c->measured && !c->error[0]) {
    gs_json_append(b, a, cJSON_CreateNull());
    return;
  }
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  if (!c->measured) {
    gs_json_put_string(b, o, "status", "skipped");
    gs_json_put_string(b, o, "reason", c->error);
  } else {
    gs_json_put_string(b, o, "status", gs_status_name(c->status));
    gs_json_put_string_or_null(b, o, "error", c->error);
    int have = c->n > 0;
    gs_json_put_number(b, o, "median", have ? c->median : NAN);
    gs_json_put_number(b, o, "min", have ? c->min : NAN);
    gs_json_put_number(b, o, "max", have ? c->max : NAN);
    cJSON *samples = gs_json_put_array(b, o, "samples");
    for (size_t k = 0; !b->failed && k < c->n; k++)
      gs_json_append_number(b, samples, c->samples[k]);
    if (c->bidirectional) {
      cJSON *dir = gs_json_put_array(b, o, "direction_median");
      gs_json_append_number(b, dir, c->direction_median[0]);
      gs_json_append_number(b, dir, c->direction_median[1]);
    }
    cJSON *v = gs_json_put_object(b, o, "verification");
    gs_json_put_string(b, v, "status", verify_name(c->verify));
    gs_json_put_u64(b, v, "mismatches", c->mismatches);
  }
  gs_json_append(b, a, o);
}

static void append_test(gs_json_build *b, cJSON *tests, const gs_p2p_result *r,
                        const gs_p2p_test *t) {
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  gs_json_put_string(b, o, "name", t->key);
  gs_json_put_string(b, o, "title", t->title);
  gs_json_put_string(b, o, "unit",
                     t->unit == GS_P2P_UNIT_LATENCY ? "seconds" : "bytes_per_second");
  gs_json_put_string(b, o, "layout", t->per_gpu ? "per_gpu" : "matrix");
  gs_json_put_string(b, o, "status", t->skipped ? "skipped" : "ran");
  if (t->skipped)
    gs_json_put_string(b, o, "reason", t->reason);
  else
    gs_json_put_null(b, o, "reason");
  size_t n = r->n_gpus;
  if (!t->skipped && t->per_gpu) {
    cJSON *cells = gs_json_put_array(b, o, "cells");
    for (size_t k = 0; !b->failed && k < n; k++) append_cell(b, cells, &t->cells[k]);
  } else if (!t->skipped) {
    cJSON *rows = gs_json_put_array(b, o, "cells");
    for (size_t i = 0; !b->failed && i < n; i++) {
      cJSON *row = gs_json_check(b, cJSON_CreateArray());
      for (size_t j = 0; !b->failed && j < n; j++) append_cell(b, row, &t->cells[i * n + j]);
      gs_json_append(b, rows, row);
    }
  }
  gs_json_append(b, tests, o);
}

cJSON *gs_p2p_to_json(const gs_p2p_result *r) {
  gs_json_build b = {0};
  cJSON *o = gs_json_check(&b, cJSON_CreateObject());
  cJSON *devices = gs_json_put_array(&b, o, "devices");
  for (size_t i = 0; !b.failed && i < r->n_gpus; i++)
    gs_json_append_number(&b, devices, r->devices[i]);
  cJSON *tests = gs_json_put_array(&b, o, "tests");
  for (size_t ti = 0; !b.failed && ti < r->n_tests; ti++)
    append_test(&b, tests, r, &r->tests[ti]);
  return gs_json_build_finish(&b, o);
}

cJSON *gs_p2p_options_to_json(const gs_p2p_options *o) {
  gs_json_build b = {0};
  cJSON *c = gs_json_check(&b, cJSON_CreateObject());
  gs_json_put_u64(&b, c, "size_bytes", o->size_bytes);
  gs_json_put_number(&b, c, "iters", (double)o->iters);
  gs_json_put_number(&b, c, "samples", (double)o->samples);
  gs_json_put_number(&b, c, "streams", (double)o->streams);
  gs_json_put_number(&b, c, "latency_rounds", (double)o->latency_rounds);
  gs_json_put_number(&b, c, "sm_ctas_per_sm", (double)o->sm_ctas);
  gs_json_put_string(&b, c, "mode", gs_p2p_mode_names[o->mode]);
  if (o->n_pairs == 0) {
    gs_json_put_null(&b, c, "pairs");
  } else {
    cJSON *pairs = gs_json_put_array(&b, c, "pairs");
    for (size_t k = 0; !b.failed && k < o->n_pairs; k++) {
      cJSON *p = gs_json_check(&b, cJSON_CreateArray());
      gs_json_append_number(&b, p, o->pairs[k][0]);
      gs_json_append_number(&b, p, o->pairs[k][1]);
      gs_json_append(&b, pairs, p);
    }
  }
  return gs_json_build_finish(&b, c);
}
