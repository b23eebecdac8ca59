/* Unit tests of core/gpu_model.c (the strict reader of expected figures)
 * and report/verdict/check_model.c (a GPU against its model's figures):
 * the shipped file parses and names a source for every figure; each
 * malformed form is refused naming the member; each figure's fraction
 * decides pass, warn or fail with its action. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gpu_model.h"
#include "core/status.h"
#include "report/verdict/check.h"

#ifndef GS_SOURCE_DIR
#error "GS_SOURCE_DIR names the source tree (tests/CMakeLists.txt)"
#endif

static const char *const one_model =
    "{\"schema\": \"gpuscale/gpu-models/v1\", \"models\": [{\"model\": \"H200 SXM 141GB\", "
    "\"nvml_names\": [\"NVIDIA H200\"], \"form_factor\": \"sxm\", \"figures\": {"
    "\"memory_gb\": {\"value\": 141, \"source\": \"s1\"}, "
    "\"nvlink_links\": {\"value\": 18, \"source\": \"s2\"}, "
    "\"pcie_generation\": {\"value\": 5, \"source\": \"s3\"}, "
    "\"pcie_width\": {\"value\": 16, \"source\": \"s4\"}, "
    "\"power_limit_w\": {\"value\": 700, \"source\": \"s5\"}, "
    "\"max_sm_clock_mhz\": {\"value\": 1980, \"source\": \"s6\"}, "
    "\"max_memory_clock_mhz\": {\"value\": 3201, \"source\": \"s7\"}, "
    "\"memory_bandwidth_gbs\": {\"value\": 4800, \"source\": \"s8\"}}}]}";

static void test_shipped_file_parses(void **state) {
  (void)state;
  gs_gpu_models m;
  assert_int_equal(gs_gpu_models_load(GS_SOURCE_DIR "/data/gpu-models.json", &m), GS_OK);
  assert_int_equal(m.n, 7);
  const char *const names[] = {"NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA A100-SXM4-80GB",
                               "NVIDIA H100 PCIe", "NVIDIA A100 80GB PCIe"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    assert_non_null(gs_gpu_models_find(&m, names[i]));
  const gs_gpu_model *h200 = gs_gpu_models_find(&m, "NVIDIA H200");
  assert_string_equal(h200->model, "H200 SXM 141GB");
  assert_true(h200->sxm);
  assert_true(h200->fig[GS_FIG_MEMORY_BANDWIDTH_GBS].has);
  assert_true(h200->fig[GS_FIG_MEMORY_BANDWIDTH_GBS].value == 4800);
  assert_true(h200->fig[GS_FIG_NVLINK_GBS].value == 450);
  const gs_gpu_model *a100 = gs_gpu_models_find(&m, "NVIDIA A100-SXM4-80GB");
  assert_true(a100->fig[GS_FIG_MEMORY_BANDWIDTH_GBS].value == 2039);
  assert_true(a100->fig[GS_FIG_PCIE_GENERATION].value == 4);
  // Every model states its memory size and bandwidth, each figure a source.
  for (size_t i = 0; i < m.n; i++) {
    assert_true(m.models[i].fig[GS_FIG_MEMORY_GB].has);
    assert_true(m.models[i].fig[GS_FIG_MEMORY_BANDWIDTH_GBS].has);
    for (int k = 0; k < GS_FIG_COUNT; k++)
      if (m.models[i].fig[k].has) assert_true(strlen(m.models[i].fig[k].source) > 10);
  }
  assert_null(gs_gpu_models_find(&m, "NVIDIA H200 "));
  gs_gpu_models_free(&m);
}

/* `text` is refused with an error that contains `needle`. */
static void refused(const char *text, const char *needle) {
  gs_gpu_models m;
  assert_int_equal(gs_gpu_models_parse(text, "f.json", &m), GS_ERR_FORMAT);
  if (!strstr(gs_last_error(), needle)) fail_msg("error '%s' lacks '%s'", gs_last_error(), needle);
  assert_int_equal(m.n, 0);
  gs_gpu_models_free(&m);
}

/* one_model with `from` replaced by `to`. */
static char *edited(const char *from, const char *to) {
  const char *at = strstr(one_model, from);
  assert_non_null(at);
  size_t size = strlen(one_model) - strlen(from) + strlen(to) + 1;
  char *out = malloc(size);
  assert_non_null(out);
  snprintf(out, size, "%.*s%s%s", (int)(at - one_model), one_model, to, at + strlen(from));
  return out;
}

static void refused_edit(const char *from, const char *to, const char *needle) {
  char *text = edited(from, to);
  refused(text, needle);
  free(text);
}

static void test_reader_is_strict(void **state) {
  (void)state;
  gs_gpu_models m;
  assert_int_equal(gs_gpu_models_parse(one_model, "f.json", &m), GS_OK);
  assert_int_equal(m.n, 1);
  assert_true(m.models[0].fig[GS_FIG_POWER_LIMIT_W].value == 700);
  assert_string_equal(m.models[0].fig[GS_FIG_PCIE_WIDTH].source, "s4");
  assert_false(m.models[0].fig[GS_FIG_NVLINK_GBS].has);
  gs_gpu_models_free(&m);

  refused("{", "f.json: not valid JSON");
  refused("[]", "an object expected");
  refused_edit("gpuscale/gpu-models/v1", "gpuscale/gpu-models/v2", "\"schema\"");
  refused_edit("\"models\": [", "\"extra\": 1, \"models\": [", "unknown member \"extra\"");
  refused_edit("\"form_factor\": \"sxm\"", "\"form_factor\": \"oam\"", "\"sxm\" or \"pcie\"");
  refused_edit("\"memory_gb\"", "\"memory_gib\"", "models[0].figures: unknown figure \"memory_gib\"");
  refused_edit("{\"value\": 141, \"source\": \"s1\"}", "{\"value\": 141}",
               "models[0].figures.memory_gb.source: a non-empty string expected, found missing");
  refused_edit("{\"value\": 141, \"source\": \"s1\"}", "{\"value\": 141, \"source\": \"\"}",
               "an empty string");
  refused_edit("\"value\": 141", "\"value\": \"141\"", "memory_gb.value: a number in (0, 100000]");
  refused_edit("\"value\": 141", "\"value\": -1", "memory_gb.value");
  refused_edit("\"value\": 18", "\"value\": 17.5", "nvlink_links.value: a whole number");
  refused_edit("\"value\": 18", "\"value\": 19", "nvlink_links.value: a number in (0, 18] expected, found 19");
  refused_edit("\"value\": 141, \"source\": \"s1\"", "\"value\": 141, \"source\": \"s1\", \"note\": 1",
               "memory_gb: unknown member \"note\"");
  refused_edit("[\"NVIDIA H200\"]", "[]", "nvml_names: a non-empty array");
  refused_edit("[\"NVIDIA H200\"]", "[\"NVIDIA H200\", \"NVIDIA H200\"]",
               "NVML name \"NVIDIA H200\" listed twice");
  refused_edit("\"memory_gb\": {\"value\": 141, \"source\": \"s1\"}, ",
               "\"memory_gb\": {\"value\": 141, \"source\": \"s1\"}, "
               "\"memory_gb\": {\"value\": 141, \"source\": \"s1\"}, ", "given twice");
  refused("{\"schema\": \"gpuscale/gpu-models/v1\", \"models\": []}", "a non-empty array");
}

/* An H200 as NVML reports it: 143771 MiB, 700 W, 1980/3201 MHz, 18 ports
 * up, PCIe gen 5 x16. */
static void h200(gs_gpu_health *h) {
  memset(h, 0, sizeof *h);
  h->index = 2;
  snprintf(h->name, sizeof h->name, "NVIDIA H200");
  h->has_memory_total = h->has_power_limit = h->has_max_clocks = 1;
  h->memory_total_bytes = 143771ull << 20;
  h->power_limit_mw = 700000;
  h->max_sm_clock_mhz = 1980;
  h->max_memory_clock_mhz = 3201;
  h->port_count = GS_HEALTH_MAX_LINKS;
  for (size_t l = 0; l < GS_HEALTH_MAX_LINKS; l++) h->port_present[l] = h->link_up[l] = 1;
  h->has_pcie = 1;
  h->pcie_gen = h->pcie_gen_max = 5;
  h->pcie_width = h->pcie_width_max = 16;
}

/* Judges one GPU against one_model; returns the finding `check` (copied). */
static gs_health_finding judged(const gs_gpu_health *h, const char *check) {
  gs_gpu_models m;
  assert_int_equal(gs_gpu_models_parse(one_model, "f.json", &m), GS_OK);
  gs_check_models models = {.site = &m};
  gs_node_state s;
  memset(&s, 0, sizeof s);
  s.nvml_loaded = 1;
  s.gpus = (gs_gpu_health *)h;
  s.gpu_count = 1;
  s.nvml_replaced = 1;
  gs_health_verdict v;
  assert_int_equal(gs_health_judge(&s, 0, &models, &v), GS_OK);
  gs_health_finding out;
  memset(&out, 0, sizeof out);
  out.check = NULL;
  for (size_t i = 0; i < v.n; i++)
    if (strcmp(v.items[i].check, check) == 0) out = v.items[i];
  gs_health_verdict_free(&v);
  gs_gpu_models_free(&m);
  if (!out.check) fail_msg("no finding %s", check);
  return out;
}

static void test_h200_passes_its_figures(void **state) {
  (void)state;
  gs_gpu_health h;
  h200(&h);
  const char *const checks[] = {"model", "memory_size", "pcie_slot", "nvlink_ports",
                                "power_limit", "max_clocks"};
  for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
    gs_health_finding f = judged(&h, checks[i]);
    if (f.state != GS_CHECK_PASS) fail_msg("%s: %s", checks[i], f.detail);
  }
  gs_health_finding f = judged(&h, "model");
  assert_string_equal(f.detail, "H200 SXM 141GB, figures from f.json");
  f = judged(&h, "memory_size");
  assert_string_equal(f.detail, "150.8 GB of the 141 GB of an H200 SXM 141GB");
}

static void test_each_figure_short(void **state) {
  (void)state;
  gs_gpu_health h;
  // 95% of 141 GB is 133.95 GB: 134 GB passes, 133 GB fails.
  h200(&h);
  h.memory_total_bytes = 134000000000ull;
  assert_int_equal(judged(&h, "memory_size").state, GS_CHECK_PASS);
  h.memory_total_bytes = 133000000000ull;
  gs_health_finding f = judged(&h, "memory_size");
  assert_int_equal(f.state, GS_CHECK_FAIL);
  assert_string_equal(f.action,
                      "investigate: GPU 2 reports 133.0 GB of memory, 141 GB expected of an H200 SXM 141GB");
  h200(&h);
  h.pcie_gen_max = h.pcie_gen = 4;
  f = judged(&h, "pcie_slot");
  assert_int_equal(f.state, GS_CHECK_WARN);
  assert_non_null(strstr(f.action, "investigate: GPU 2's slot allows PCIe gen 4 of the gen 5"));
  h200(&h);
  h.pcie_width_max = h.pcie_width = 8;
  f = judged(&h, "pcie_slot");
  assert_int_equal(f.state, GS_CHECK_WARN);
  assert_non_null(strstr(f.action, "allows PCIe x8 of the x16"));
  // 665 W is 95% of 700 W: passes; 664 W warns.
  h200(&h);
  h.power_limit_mw = 665000;
  assert_int_equal(judged(&h, "power_limit").state, GS_CHECK_PASS);
  h.power_limit_mw = 500000;
  f = judged(&h, "power_limit");
  assert_int_equal(f.state, GS_CHECK_WARN);
  assert_non_null(strstr(f.action, "investigate: GPU 2 power limit 500 W, below the 700 W"));
  h200(&h);
  h.max_sm_clock_mhz = 1600;
  f = judged(&h, "max_clocks");
  assert_int_equal(f.state, GS_CHECK_WARN);
  assert_non_null(strstr(f.action, "highest SM clock 1600 MHz, below the 1980 MHz"));
  h200(&h);
  h.max_memory_clock_mhz = 2619;
  assert_non_null(strstr(judged(&h, "max_clocks").action, "highest memory clock 2619 MHz"));
  // Ports: fewer listed fails; an SXM board with none up fails.
  h200(&h);
  h.port_count = 12;
  f = judged(&h, "nvlink_ports");
  assert_int_equal(f.state, GS_CHECK_FAIL);
  assert_string_equal(f.action, "drain: GPU 2 lists 12 of the 18 NVLink ports of an H200 SXM 141GB");
  h200(&h);
  for (size_t l = 0; l < GS_HEALTH_MAX_LINKS; l++) h.link_up[l] = 0;
  f = judged(&h, "nvlink_ports");
  assert_string_equal(f.action, "drain: no NVLink of GPU 2 up (an H200 SXM 141GB has 18)");
}

static void test_unknown_model_not_applicable(void **state) {
  (void)state;
  gs_gpu_health h;
  h200(&h);
  snprintf(h.name, sizeof h.name, "NVIDIA B200");
  gs_health_finding f = judged(&h, "model");
  assert_int_equal(f.state, GS_CHECK_NA);
  assert_string_equal(f.detail, "no expected figures for \"NVIDIA B200\" in f.json");
  // The site's file wins over the shipped one for the same name.
  gs_gpu_models site, shipped;
  assert_int_equal(gs_gpu_models_parse(one_model, "site.json", &site), GS_OK);
  assert_int_equal(gs_gpu_models_load(GS_SOURCE_DIR "/data/gpu-models.json", &shipped), GS_OK);
  gs_check_models models = {.site = &site, .shipped = &shipped};
  gs_gpu_model m;
  h200(&h);
  assert_int_equal(gs_check_model_of(&models, &h, &m), 1);
  assert_string_equal(m.model, "H200 SXM 141GB");
  assert_string_equal(m.fig[GS_FIG_POWER_LIMIT_W].source, "s5");
  // A figure the site does not state comes from the shipped file.
  assert_true(m.fig[GS_FIG_NVLINK_GBS].has && m.fig[GS_FIG_NVLINK_GBS].value == 450);
  assert_non_null(strstr(m.fig[GS_FIG_NVLINK_GBS].source, "nvidia.com"));
  snprintf(h.name, sizeof h.name, "NVIDIA H100 80GB HBM3");
  assert_int_equal(gs_check_model_of(&models, &h, &m), 1);
  assert_string_equal(m.model, "H100 SXM5 80GB");
  snprintf(h.name, sizeof h.name, "NVIDIA B200");
  assert_int_equal(gs_check_model_of(&models, &h, &m), 0);
  gs_gpu_models_free(&site);
  gs_gpu_models_free(&shipped);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shipped_file_parses),
      cmocka_unit_test(test_reader_is_strict),
      cmocka_unit_test(test_h200_passes_its_figures),
      cmocka_unit_test(test_each_figure_short),
      cmocka_unit_test(test_unknown_model_not_applicable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
