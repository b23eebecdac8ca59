/* Unit tests of platform/topology on hand-built data: NVML levels to words,
 * NV# counted from per-link remote PCI ids (direct and through NVSwitch),
 * NVLink generations and rates, the matrix as text, JSON and Graphviz. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/topology.h"

static const char *const bus[4] = {"0000:18:00.0", "0000:2A:00.0", "0000:9a:00.0",
                                   "0000:ab:00.0"};

/* Connects `links` ports of GPU a to GPU b (both directions), NVML-style
 * 8-digit domains on the remote ids. */
static void connect(gs_nvlink_ports *p, size_t a, size_t b, size_t links) {
  for (size_t k = 0; k < links; k++) {
    size_t la = p[a].port_count++, lb = p[b].port_count++;
    p[a].active[la] = 1;
    snprintf(p[a].remote_bus_id[la], sizeof p[a].remote_bus_id[la], "0000%s", bus[b]);
    p[a].remote_type[la] = GS_NVLINK_REMOTE_GPU;
    p[b].active[lb] = 1;
    snprintf(p[b].remote_bus_id[lb], sizeof p[b].remote_bus_id[lb], "0000%s", bus[a]);
    p[b].remote_type[lb] = GS_NVLINK_REMOTE_GPU;
  }
}

/* Four GPUs: NVLink pairs 0-1 and 2-3 (4 links each), PCIe between them. */
static void example(gs_nvlink_ports ports[4], int levels[16], gs_gpu_desc gpus[4]) {
  memset(ports, 0, 4 * sizeof *ports);
  memset(gpus, 0, 4 * sizeof *gpus);
  for (size_t i = 0; i < 4; i++) {
    snprintf(ports[i].pci_bus_id, sizeof ports[i].pci_bus_id, "%s", bus[i]);
    ports[i].version = 4;  // an older driver's plain "NVLink 3"... on an A100 (8.0)
    gpus[i].index = (int)i;
    snprintf(gpus[i].name, sizeof gpus[i].name, "NVIDIA A100-SXM4-40GB");
    snprintf(gpus[i].pci_bus_id, sizeof gpus[i].pci_bus_id, "%s", bus[i]);
    gpus[i].cc_major = 8;
    gpus[i].cc_minor = 0;
  }
  // A disabled port between 0 and 1 must not count.
  ports[0].port_count = 1;
  snprintf(ports[0].remote_bus_id[0], sizeof ports[0].remote_bus_id[0], "%s", bus[1]);
  connect(ports, 0, 1, 4);
  connect(ports, 2, 3, 4);
  const int l[16] = {-1, GS_NVML_TOPOLOGY_MULTIPLE, GS_NVML_TOPOLOGY_NODE, GS_NVML_TOPOLOGY_SYSTEM,
                     GS_NVML_TOPOLOGY_MULTIPLE, -1, GS_NVML_TOPOLOGY_HOSTBRIDGE,
                     GS_NVML_TOPOLOGY_SYSTEM,
                     GS_NVML_TOPOLOGY_NODE, GS_NVML_TOPOLOGY_HOSTBRIDGE, -1, GS_NVML_TOPOLOGY_SINGLE,
                     GS_NVML_TOPOLOGY_SYSTEM, GS_NVML_TOPOLOGY_SYSTEM, GS_NVML_TOPOLOGY_SINGLE, -1};
  memcpy(levels, l, sizeof l);
}

/* Not inlined: gcc's -Wdangling-pointer misreads open_memstream's hold on
 * the local `text` once it is inlined into a caller (seen at -O3). */
__attribute__((noinline)) static char *capture_links(const gs_topology *t,
                                                     const char *const *aff,
                                                     const char *const *numa) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  assert_non_null(f);
  gs_topology_print_links(f, t, aff, numa);
  assert_int_equal(fclose(f), 0);
  return text;
}

static void test_level_words(void **state) {
  (void)state;
  char w[16];
  struct { int level; const char *word; } cases[] = {
      {GS_NVML_TOPOLOGY_INTERNAL, "PIX"}, {GS_NVML_TOPOLOGY_SINGLE, "PIX"},
      {GS_NVML_TOPOLOGY_MULTIPLE, "PXB"}, {GS_NVML_TOPOLOGY_HOSTBRIDGE, "PHB"},
      {GS_NVML_TOPOLOGY_NODE, "NODE"},    {GS_NVML_TOPOLOGY_SYSTEM, "SYS"},
      {-1, "?"},                          {35, "?"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gs_link_word((gs_link){.kind = gs_topology_level_kind(cases[i].level)}, w, sizeof w);
    assert_string_equal(w, cases[i].word);
  }
  gs_link_word((gs_link){.kind = GS_LINK_SELF}, w, sizeof w);
  assert_string_equal(w, "X");
  gs_link_word((gs_link){.kind = GS_LINK_NVLINK, .nvlinks = 18}, w, sizeof w);
  assert_string_equal(w, "NV18");
}

static void test_bus_id_equal(void **state) {
  (void)state;
  assert_true(gs_pci_bus_id_equal("0000:18:00.0", "00000000:18:00.0"));
  assert_true(gs_pci_bus_id_equal("0000:1A:00.0", "00000000:1a:00.0"));
  assert_true(gs_pci_bus_id_equal("18:00.0", "0000:18:00.0"));
  assert_false(gs_pci_bus_id_equal("0000:18:00.0", "0000:19:00.0"));
  assert_false(gs_pci_bus_id_equal("0000:18:00.0", "0000:18:00.1"));
  assert_false(gs_pci_bus_id_equal("0001:18:00.0", "0000:18:00.0"));
  assert_false(gs_pci_bus_id_equal("", ""));
  assert_false(gs_pci_bus_id_equal(NULL, "0000:18:00.0"));
  assert_false(gs_pci_bus_id_equal("zz", "zz"));
  assert_false(gs_pci_bus_id_equal("0000:18:00.0x", "0000:18:00.0"));
}

static void test_nvlink_count_direct(void **state) {
  (void)state;
  gs_nvlink_ports ports[4];
  int levels[16];
  gs_gpu_desc gpus[4];
  example(ports, levels, gpus);
  assert_int_equal(gs_nvlink_count(ports, 4, 0, 1), 4);
  assert_int_equal(gs_nvlink_count(ports, 4, 1, 0), 4);
  assert_int_equal(gs_nvlink_count(ports, 4, 2, 3), 4);
  assert_int_equal(gs_nvlink_count(ports, 4, 0, 2), 0);
  assert_int_equal(gs_nvlink_count(ports, 4, 1, 3), 0);
  assert_int_equal(gs_nvlink_count(ports, 4, 0, 0), 0);
  assert_int_equal(gs_nvlink_count(NULL, 4, 0, 1), 0);
}

static void test_nvlink_count_switch(void **state) {
  (void)state;
  gs_nvlink_ports ports[4];
  memset(ports, 0, sizeof ports);
  for (size_t i = 0; i < 4; i++) {
    snprintf(ports[i].pci_bus_id, sizeof ports[i].pci_bus_id, "%s", bus[i]);
    ports[i].port_count = 18;
    for (size_t l = 0; l < 18; l++) {
      ports[i].active[l] = 1;
      snprintf(ports[i].remote_bus_id[l], sizeof ports[i].remote_bus_id[l], "00000000:%02zx:00.0",
               0xc0 + l % 4);
      // GPU 3 has no remote types from NVML: unmatched ends count as switches.
      ports[i].remote_type[l] = i == 3 ? GS_NVLINK_REMOTE_UNKNOWN : GS_NVLINK_REMOTE_SWITCH;
    }
  }
  ports[1].active[17] = 0;  // one link down on GPU 1
  ports[2].remote_type[0] = GS_NVLINK_REMOTE_OTHER;
  assert_int_equal(gs_nvlink_count(ports, 4, 0, 3), 18);
  assert_int_equal(gs_nvlink_count(ports, 4, 0, 1), 17);
  assert_int_equal(gs_nvlink_count(ports, 4, 0, 2), 17);

  gs_topology t;
  assert_int_equal(gs_topology_init(&t, 4), GS_OK);
  gs_gpu_desc gpus[4];
  memset(gpus, 0, sizeof gpus);
  for (size_t i = 0; i < 4; i++) {
    gpus[i].cc_major = 9;
    ports[i].version = 6;  // NVML_NVLINK_VERSION_4_0
  }
  gs_topology_build(&t, NULL, ports, gpus);
  assert_int_equal(t.links[0 * 4 + 3].kind, GS_LINK_NVLINK);
  assert_int_equal(t.links[0 * 4 + 3].nvlinks, 18);
  assert_true(t.nvlink_bw[0 * 4 + 3] == 450e9);
  assert_true(t.nvlink_bw[1 * 4 + 0] == 17 * 25e9);
  gs_topology_free(&t);
}

static void test_generation_and_rate(void **state) {
  (void)state;
  assert_int_equal(gs_nvlink_generation(4, 9, 0), 4);   // old driver, plain 4
  assert_int_equal(gs_nvlink_generation(6, 9, 0), 4);   // enum 4.0
  assert_int_equal(gs_nvlink_generation(7, 9, 0), 4);   // misreport: arch wins
  assert_int_equal(gs_nvlink_generation(4, 8, 0), 3);   // enum 3.0
  assert_int_equal(gs_nvlink_generation(3, 8, 0), 3);   // plain 3
  assert_int_equal(gs_nvlink_generation(7, 10, 0), 5);
  assert_int_equal(gs_nvlink_generation(1, 6, 0), 1);
  // Unknown architecture: only unambiguous values count.
  assert_int_equal(gs_nvlink_generation(7, 42, 0), 5);
  assert_int_equal(gs_nvlink_generation(2, 42, 0), 2);
  assert_int_equal(gs_nvlink_generation(4, 42, 0), 0);
  assert_int_equal(gs_nvlink_generation(0, 42, 0), 0);
  assert_true(gs_nvlink_link_rate(1, 6, 0) == 20e9);
  assert_true(gs_nvlink_link_rate(2, 7, 0) == 25e9);
  assert_true(gs_nvlink_link_rate(3, 8, 0) == 25e9);
  assert_true(gs_nvlink_link_rate(3, 8, 6) == 14.0625e9);
  assert_true(gs_nvlink_link_rate(4, 9, 0) == 25e9);
  assert_true(gs_nvlink_link_rate(5, 10, 0) == 50e9);
  assert_true(gs_nvlink_link_rate(0, 9, 0) == 0.0);
}

static void test_matrix_text(void **state) {
  (void)state;
  gs_nvlink_ports ports[4];
  int levels[16];
  gs_gpu_desc gpus[4];
  example(ports, levels, gpus);
  gs_topology t;
  assert_int_equal(gs_topology_init(&t, 4), GS_OK);
  gs_topology_build(&t, levels, ports, gpus);
  const char *aff[4] = {"0-15", "0-15", "16-31", ""};
  const char *numa[4] = {"0", "0", "1", ""};
  char *text = capture_links(&t, aff, numa);
  const char *want =
      "        GPU0    GPU1    GPU2    GPU3    CPU Affinity    NUMA Affinity\n"
      "GPU0    X       NV4     NODE    SYS     0-15            0\n"
      "GPU1    NV4     X       PHB     SYS     0-15            0\n"
      "GPU2    NODE    PHB     X       NV4     16-31           1\n"
      "GPU3    SYS     SYS     NV4     X       N/A             N/A\n"
      "\nLegend:\n";
  assert_int_equal(strncmp(text, want, strlen(want)), 0);
  assert_non_null(strstr(text, "NV#  = Connection traversing a bonded set of # NVLinks"));
  free(text);
  // 4 x 25 GB/s per direction on an A100 pair; 0 over PCIe.
  assert_true(t.nvlink_bw[0 * 4 + 1] == 100e9);
  assert_true(t.nvlink_bw[3 * 4 + 2] == 100e9);
  assert_true(t.nvlink_bw[0 * 4 + 2] == 0.0);

  // Peer access as CUDA would report it.
  for (size_t i = 0; i < 4; i++)
    for (size_t j = 0; j < 4; j++)
      if (i != j) t.peer_access[i * 4 + j] = (i / 2 == j / 2);
  t.peer_access[3 * 4 + 0] = -1;
  char *peer = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&peer, &size);
  gs_topology_print_peer(f, &t);
  fclose(f);
  assert_non_null(strstr(peer, "GPU0    X       OK      NS      NS      \n"));
  assert_non_null(strstr(peer, "GPU3    ?       NS      OK      X       \n"));
  free(peer);

  cJSON *json = gs_topology_to_json(&t);
  assert_non_null(json);
  char *printed = cJSON_PrintUnformatted(json);
  assert_non_null(printed);
  assert_non_null(strstr(printed, "\"links\":[[\"X\",\"NV4\",\"NODE\",\"SYS\"],"));
  assert_non_null(strstr(printed, "\"peer_access\":[[null,true,false,false],"));
  assert_non_null(strstr(printed, "[null,false,true,null]]"));
  assert_non_null(strstr(printed, "\"nvlink_bandwidth_bytes_per_s\":[[null,100000000000,0,0],"));
  cJSON_free(printed);
  cJSON_Delete(json);
  gs_topology_free(&t);
}

static void test_unknown_without_nvml(void **state) {
  (void)state;
  gs_topology t;
  assert_int_equal(gs_topology_init(&t, 2), GS_OK);
  gs_topology_build(&t, NULL, NULL, NULL);
  char *text = capture_links(&t, NULL, NULL);
  assert_non_null(strstr(text, "GPU0    X       ?       \nGPU1    ?       X       \n"));
  free(text);
  cJSON *json = gs_topology_to_json(&t);
  char *printed = cJSON_PrintUnformatted(json);
  assert_string_equal(printed, "{\"links\":[[\"X\",null],[null,\"X\"]],\"peer_access\":[[null,null],"
                               "[null,null]],\"nvlink_bandwidth_bytes_per_s\":[[null,null],[null,"
                               "null]]}");
  cJSON_free(printed);
  cJSON_Delete(json);
  gs_topology_free(&t);
  // Zero GPUs: empty matrices, no crash.
  assert_int_equal(gs_topology_init(&t, 0), GS_OK);
  json = gs_topology_to_json(&t);
  printed = cJSON_PrintUnformatted(json);
  assert_string_equal(printed, "{\"links\":[],\"peer_access\":[],\"nvlink_bandwidth_bytes_per_s\":[]}");
  cJSON_free(printed);
  cJSON_Delete(json);
  gs_topology_free(&t);
}

static void test_dot(void **state) {
  (void)state;
  gs_nvlink_ports ports[4];
  int levels[16];
  gs_gpu_desc gpus[4];
  example(ports, levels, gpus);
  gs_topology t;
  assert_int_equal(gs_topology_init(&t, 4), GS_OK);
  gs_topology_build(&t, levels, ports, gpus);
  const char *names[4] = {"A100 \"SXM\"", "A100", "A100", "A100"};
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  gs_topology_write_dot(f, &t, names, bus);
  fclose(f);
  assert_int_equal(strncmp(text, "graph gpuscale_topology {\n", 26), 0);
  assert_non_null(strstr(text, "  gpu0 [label=\"GPU0\\nA100 \\\"SXM\\\"\\n0000:18:00.0\"];\n"));
  assert_non_null(strstr(text, "  gpu0 -- gpu1 [label=\"NV4\", style=bold];\n"));
  assert_non_null(strstr(text, "  gpu0 -- gpu2 [label=\"NODE\"];\n"));
  assert_non_null(strstr(text, "  gpu2 -- gpu3 [label=\"NV4\", style=bold];\n"));
  assert_null(strstr(text, "gpu1 -- gpu0"));
  assert_non_null(strstr(text, "}\n"));
  free(text);
  gs_topology_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_level_words),        cmocka_unit_test(test_bus_id_equal),
      cmocka_unit_test(test_nvlink_count_direct), cmocka_unit_test(test_nvlink_count_switch),
      cmocka_unit_test(test_generation_and_rate), cmocka_unit_test(test_matrix_text),
      cmocka_unit_test(test_unknown_without_nvml), cmocka_unit_test(test_dot),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
