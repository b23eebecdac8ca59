/* The GPU link matrix (nvidia-smi's vocabulary), peer access and NVLink
 * bandwidth: pure logic on plain data first, collection from NVML and the
 * CUDA runtime last. */
#include "platform/topology.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/check.h"
#include "core/json.h"

gs_status gs_topology_init(gs_topology *t, size_t n) {
  memset(t, 0, sizeof *t);
  if (n == 0) return GS_OK;
  if (n > SIZE_MAX / n) return gs_error(GS_ERR_NOMEM, "too many GPUs for a topology matrix");
  size_t cells = n * n;
  t->links = calloc(cells, sizeof *t->links);
  t->peer_access = malloc(cells * sizeof *t->peer_access);
  t->nvlink_bw = malloc(cells * sizeof *t->nvlink_bw);
  if (!t->links || !t->peer_access || !t->nvlink_bw) {
    gs_topology_free(t);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the topology of %zu GPUs", n);
  }
  t->n = n;
  for (size_t c = 0; c < cells; c++) {
    t->links[c].kind = GS_LINK_UNKNOWN;
    t->peer_access[c] = -1;
    t->nvlink_bw[c] = NAN;
  }
  for (size_t i = 0; i < n; i++) t->links[i * n + i].kind = GS_LINK_SELF;
  return GS_OK;
}

void gs_topology_free(gs_topology *t) {
  free(t->links);
  free(t->peer_access);
  free(t->nvlink_bw);
  memset(t, 0, sizeof *t);
}

gs_link_kind gs_topology_level_kind(int nvml_level) {
  switch (nvml_level) {
    // INTERNAL: two GPUs on one board; behind one bridge like PIX.
    case GS_NVML_TOPOLOGY_INTERNAL: return GS_LINK_PIX;
    case GS_NVML_TOPOLOGY_SINGLE: return GS_LINK_PIX;
    case GS_NVML_TOPOLOGY_MULTIPLE: return GS_LINK_PXB;
    case GS_NVML_TOPOLOGY_HOSTBRIDGE: return GS_LINK_PHB;
    case GS_NVML_TOPOLOGY_NODE: return GS_LINK_NODE;
    case GS_NVML_TOPOLOGY_SYSTEM: return GS_LINK_SYS;
    default: return GS_LINK_UNKNOWN;
  }
}

void gs_link_word(gs_link link, char *out, size_t size) {
  const char *word = "?";
  switch (link.kind) {
    case GS_LINK_SELF: word = "X"; break;
    case GS_LINK_NVLINK: snprintf(out, size, "NV%zu", link.nvlinks); return;
    case GS_LINK_PIX: word = "PIX"; break;
    case GS_LINK_PXB: word = "PXB"; break;
    case GS_LINK_PHB: word = "PHB"; break;
    case GS_LINK_NODE: word = "NODE"; break;
    case GS_LINK_SYS: word = "SYS"; break;
    case GS_LINK_UNKNOWN: word = "?"; break;
  }
  snprintf(out, size, "%s", word);
}

/* Reads "[domain:]bus:device.function" (hex fields). */
static int parse_bus_id(const char *s, unsigned long long f[4]) {
  if (!s || !*s) return 0;
  unsigned long long v[4];
  size_t count = 0;
  const char *p = s;
  while (count < 4) {
    if (!isxdigit((unsigned char)*p)) return 0;
    char *end = NULL;
    v[count++] = strtoull(p, &end, 16);
    p = end;
    if (*p == ':' || *p == '.') {
      p++;
      continue;
    }
    break;
  }
  if (*p != '\0' || count < 3) return 0;
  if (count == 3) {  // no domain: domain 0
    f[0] = 0;
    memcpy(&f[1], v, 3 * sizeof v[0]);
  } else {
    memcpy(f, v, 4 * sizeof v[0]);
  }
  return 1;
}

int gs_pci_bus_id_equal(const char *a, const char *b) {
  unsigned long long fa[4], fb[4];
  if (!parse_bus_id(a, fa) || !parse_bus_id(b, fb)) return 0;
  return memcmp(fa, fb, sizeof fa) == 0;
}

/* Index of the GPU whose bus id is `bus`, or n when none. */
static size_t gpu_of_bus(const gs_nvlink_ports *ports, size_t n, const char *bus) {
  for (size_t k = 0; k < n; k++)
    if (gs_pci_bus_id_equal(ports[k].pci_bus_id, bus)) return k;
  return n;
}

/* Active links of GPU i that end at a switch. */
static size_t switch_links(const gs_nvlink_ports *ports, size_t n, size_t i) {
  size_t count = 0;
  const gs_nvlink_ports *p = &ports[i];
  for (size_t l = 0; l < p->port_count && l < GS_NVLINK_MAX_LINKS; l++) {
    if (!p->active[l]) continue;
    if (p->remote_type[l] == GS_NVLINK_REMOTE_SWITCH) {
      count++;
    } else if (p->remote_type[l] == GS_NVLINK_REMOTE_UNKNOWN && p->remote_bus_id[l][0] &&
               gpu_of_bus(ports, n, p->remote_bus_id[l]) == n) {
      // No type from NVML and not one of our GPUs: most likely a switch.
      count++;
    }
  }
  return count;
}

size_t gs_nvlink_count(const gs_nvlink_ports *ports, size_t n, size_t i, size_t j) {
  if (!ports || i >= n || j >= n || i == j) return 0;
  size_t direct = 0;
  const gs_nvlink_ports *p = &ports[i];
  for (size_t l = 0; l < p->port_count && l < GS_NVLINK_MAX_LINKS; l++)
    if (p->active[l] && gs_pci_bus_id_equal(p->remote_bus_id[l], ports[j].pci_bus_id)) direct++;
  if (direct > 0) return direct;
  size_t si = switch_links(ports, n, i), sj = switch_links(ports, n, j);
  return si < sj ? si : sj;
}

/* The NVLink generation of an architecture; 0 when it has none we know. */
static int generation_of_arch(int cc_major, int cc_minor) {
  if (cc_major == 6 && cc_minor == 0) return 1;  // P100
  if (cc_major == 7 && (cc_minor == 0 || cc_minor == 5)) return 2; // V100, TU10x
  if (cc_major == 8 && (cc_minor == 0 || cc_minor == 6)) return 3; // A100, GA10x
  if (cc_major == 9 && cc_minor == 0) return 4;  // H100, H200, GH200
  if (cc_major == 10) return 5;                  // B200, GB200, B300
  return 0;
}

/* nvmlNvlinkVersion_t -> generation. */
static int generation_of_enum(unsigned v) {
  static const int gen[] = {0, 1, 2, 2, 3, 3, 4, 5, 6};
  return v < sizeof gen / sizeof gen[0] ? gen[v] : 0;
}

int gs_nvlink_generation(unsigned nvml_version, int cc_major, int cc_minor) {
  int arch = generation_of_arch(cc_major, cc_minor);
  // The architecture fixes the generation; NVML's value is only needed when
  // the architecture is not in our table, and then only an unambiguous one.
  if (arch) return arch;
  int as_enum = generation_of_enum(nvml_version);
  int as_plain = nvml_version <= 5 ? (int)nvml_version : 0;
  if (as_enum && as_enum == as_plain) return as_enum;
  if (nvml_version >= 6) return as_enum;
  return 0;
}

double gs_nvlink_link_rate(int generation, int cc_major, int cc_minor) {
  switch (generation) {
    case 1: return 20e9;
    case 2: return 25e9;
    case 3:
      // GA10x (A40, RTX A6000, RTX 3090): 112.5 GB/s both ways over 4 links.
      if (cc_major == 8 && cc_minor == 6) return 14.0625e9;
      return 25e9;
    case 4: return 25e9;
    case 5: return 50e9;
    default: return 0.0;
  }
}

void gs_topology_build(gs_topology *t, const int *levels, const gs_nvlink_ports *ports,
                       const gs_gpu_desc *gpus) {
  size_t n = t->n;
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < n; j++) {
      size_t c = i * n + j;
      if (i == j) {
        t->links[c] = (gs_link){.kind = GS_LINK_SELF};
        t->nvlink_bw[c] = NAN;
        continue;
      }
      // nvidia-smi counts from both ends; a link is a link either way.
      size_t nv = 0;
      if (ports) {
        size_t a = gs_nvlink_count(ports, n, i, j), b = gs_nvlink_count(ports, n, j, i);
        nv = a > b ? a : b;
      }
      if (nv > 0) {
        t->links[c] = (gs_link){.kind = GS_LINK_NVLINK, .nvlinks = nv};
        double rate = NAN;
        if (gpus) {
          double ri = gs_nvlink_link_rate(
              gs_nvlink_generation(ports[i].version, gpus[i].cc_major, gpus[i].cc_minor),
              gpus[i].cc_major, gpus[i].cc_minor);
          double rj = gs_nvlink_link_rate(
              gs_nvlink_generation(ports[j].version, gpus[j].cc_major, gpus[j].cc_minor),
              gpus[j].cc_major, gpus[j].cc_minor);
          double r = ri < rj ? ri : rj;
          if (r > 0) rate = r;
        }
        t->nvlink_bw[c] = (double)nv * rate;
      } else {
        gs_link_kind kind = levels ? gs_topology_level_kind(levels[c]) : GS_LINK_UNKNOWN;
        t->links[c] = (gs_link){.kind = kind};
        t->nvlink_bw[c] = kind == GS_LINK_UNKNOWN ? NAN : 0.0;
      }
    }
  }
}

gs_status gs_topology_collect(gs_topology *t, const gs_environment *env, gs_nvml *nvml) {
  size_t n = env->gpu_count;
  GS_TRY(gs_topology_init(t, n));
  if (n == 0) return GS_OK;
  int *levels = malloc(n * n * sizeof *levels);
  gs_nvlink_ports *ports = calloc(n, sizeof *ports);
  if (!levels || !ports) {
    free(levels);
    free(ports);
    gs_topology_free(t);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the topology of %zu GPUs", n);
  }
  for (size_t i = 0; i < n; i++) {
    gs_nvml_nvlink_ports_get(nvml, env->gpus[i].pci_bus_id, &ports[i]);
    for (size_t j = 0; j < n; j++) {
      int level = -1;
      if (i != j &&
          !gs_nvml_common_ancestor(nvml, env->gpus[i].pci_bus_id, env->gpus[j].pci_bus_id, &level))
        level = -1;
      levels[i * n + j] = level;
    }
  }
  gs_topology_build(t, levels, nvml ? ports : NULL, env->gpus);
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < n; j++) {
      if (i == j) continue;
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, env->gpus[i].index, env->gpus[j].index) == cudaSuccess)
        t->peer_access[i * n + j] = can ? 1 : 0;
      else
        (void)cudaGetLastError();
    }
  }
  free(levels);
  free(ports);
  return GS_OK;
}

/* One "GPU<i>" cell of a matrix, padded to the column width. */
static void print_gpu_cell(FILE *out, size_t i) {
  char head[32];
  snprintf(head, sizeof head, "GPU%zu", i);
  fprintf(out, "%-8s", head);
}

/* The heading row of a GPU-by-GPU matrix (without its line end). */
static void print_column_heads(FILE *out, size_t n) {
  fprintf(out, "%-8s", "");
  for (size_t j = 0; j < n; j++) print_gpu_cell(out, j);
}

void gs_topology_print_links(FILE *out, const gs_topology *t, const char *const *cpu_affinity,
                             const char *const *numa) {
  size_t n = t->n;
  print_column_heads(out, n);
  if (cpu_affinity) fprintf(out, "%-16s", "CPU Affinity");
  if (numa) fprintf(out, "%s", "NUMA Affinity");
  fprintf(out, "\n");
  for (size_t i = 0; i < n; i++) {
    print_gpu_cell(out, i);
    for (size_t j = 0; j < n; j++) {
      char word[32];
      gs_link_word(t->links[i * n + j], word, sizeof word);
      fprintf(out, "%-8s", word);
    }
    if (cpu_affinity)
      fprintf(out, "%-16s", cpu_affinity[i] && *cpu_affinity[i] ? cpu_affinity[i] : "N/A");
    if (numa) fprintf(out, "%s", numa[i] && *numa[i] ? numa[i] : "N/A");
    fprintf(out, "\n");
  }
  fprintf(out,
          "\nLegend:\n\n"
          "  X    = Self\n"
          "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA "
          "nodes\n"
          "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host "
          "Bridges within a NUMA node\n"
          "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
          "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe "
          "Host Bridge)\n"
          "  PIX  = Connection traversing at most a single PCIe bridge\n"
          "  NV#  = Connection traversing a bonded set of # NVLinks\n"
          "  ?    = Unknown (no NVML data)\n");
}

/* One number cell: NaN as `missing`. */
static void print_number_cell(FILE *out, double v, double scale, int decimals,
                              const char *missing) {
  char cell[32];
  if (isnan(v))
    snprintf(cell, sizeof cell, "%s", missing);
  else
    snprintf(cell, sizeof cell, "%.*f", decimals, v * scale);
  fprintf(out, "%-8s", cell);
}

void gs_topology_print_values(FILE *out, size_t n, const double *values, double scale,
                              int decimals, const char *missing) {
  print_column_heads(out, n);
  fprintf(out, "\n");
  for (size_t i = 0; i < n; i++) {
    print_gpu_cell(out, i);
    for (size_t j = 0; j < n; j++) {
      if (i == j)
        fprintf(out, "%-8s", "X");
      else
        print_number_cell(out, values[i * n + j], scale, decimals, missing);
    }
    fprintf(out, "\n");
  }
}

void gs_topology_print_row(FILE *out, int heads, const char *label, size_t n,
                           const double *values, double scale, int decimals,
                           const char *missing) {
  if (heads) {
    print_column_heads(out, n);
    fprintf(out, "\n");
  }
  fprintf(out, "%-8s", label);
  for (size_t j = 0; j < n; j++) print_number_cell(out, values[j], scale, decimals, missing);
  fprintf(out, "\n");
}

void gs_topology_print_peer(FILE *out, const gs_topology *t) {
  size_t n = t->n;
  print_column_heads(out, n);
  fprintf(out, "\n");
  for (size_t i = 0; i < n; i++) {
    print_gpu_cell(out, i);
    for (size_t j = 0; j < n; j++) {
      int p = t->peer_access[i * n + j];
      fprintf(out, "%-8s", i == j ? "X" : p == 1 ? "OK" : p == 0 ? "NS" : "?");
    }
    fprintf(out, "\n");
  }
  fprintf(out, "\nLegend:\n\n  X  = Self\n  OK = Peer access supported (cudaDeviceCanAccessPeer)\n"
               "  NS = Not supported\n  ?  = Unknown\n");
}

cJSON *gs_topology_to_json(const gs_topology *t) {
  size_t n = t->n;
  gs_json_build b = {0};
  cJSON *o = gs_json_check(&b, cJSON_CreateObject());
  cJSON *links = gs_json_put_array(&b, o, "links");
  cJSON *peer = gs_json_put_array(&b, o, "peer_access");
  cJSON *bw = gs_json_put_array(&b, o, "nvlink_bandwidth_bytes_per_s");
  for (size_t i = 0; !b.failed && i < n; i++) {
    cJSON *lr = gs_json_check(&b, cJSON_CreateArray());
    cJSON *pr = gs_json_check(&b, cJSON_CreateArray());
    cJSON *br = gs_json_check(&b, cJSON_CreateArray());
    for (size_t j = 0; !b.failed && j < n; j++) {
      size_t c = i * n + j;
      char word[32];
      gs_link_word(t->links[c], word, sizeof word);
      gs_json_append(&b, lr, t->links[c].kind == GS_LINK_UNKNOWN ? cJSON_CreateNull()
                                                                  : cJSON_CreateString(word));
      int p = t->peer_access[c];
      gs_json_append(&b, pr, (i == j || p < 0) ? cJSON_CreateNull() : cJSON_CreateBool(p == 1));
      // The diagonal is null; NaN or infinity are null anyway.
      if (i == j)
        gs_json_append(&b, br, cJSON_CreateNull());
      else
        gs_json_append_number(&b, br, t->nvlink_bw[c]);
    }
    gs_json_append(&b, links, lr);
    gs_json_append(&b, peer, pr);
    gs_json_append(&b, bw, br);
  }
  return gs_json_build_finish(&b, o);
}

/* A Graphviz double-quoted string: quotes and backslashes escaped. */
static void dot_string(FILE *out, const char *s) {
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', out);
    if (*s == '\n') {
      fputs("\\n", out);
      continue;
    }
    fputc(*s, out);
  }
}

void gs_topology_write_dot(FILE *out, const gs_topology *t, const char *const *names,
                           const char *const *bus_ids) {
  size_t n = t->n;
  fprintf(out, "graph gpuscale_topology {\n  node [shape=box];\n");
  for (size_t i = 0; i < n; i++) {
    fprintf(out, "  gpu%zu [label=\"GPU%zu\\n", i, i);
    dot_string(out, names && names[i] ? names[i] : "");
    fputs("\\n", out);
    dot_string(out, bus_ids && bus_ids[i] ? bus_ids[i] : "");
    fputs("\"];\n", out);
  }
  for (size_t i = 0; i < n; i++) {
    for (size_t j = i + 1; j < n; j++) {
      gs_link l = t->links[i * n + j];
      if (l.kind == GS_LINK_UNKNOWN) continue;
      char word[32];
      gs_link_word(l, word, sizeof word);
      fprintf(out, "  gpu%zu -- gpu%zu [label=\"%s\"%s];\n", i, j, word,
              l.kind == GS_LINK_NVLINK ? ", style=bold" : "");
    }
  }
  fprintf(out, "}\n");
}

gs_status gs_topology_attach(cJSON *doc, const gs_environment *env) {
  cJSON *block = cJSON_GetObjectItemCaseSensitive(doc, "environment");
  if (!cJSON_IsObject(block)) GS_BUG("result document has no environment");
  if (env->gpu_count == 0) return GS_OK;
  char why[GS_TEXT_ERROR];
  gs_nvml *nvml = gs_nvml_open(why, sizeof why);
  gs_topology t;
  gs_status st = gs_topology_collect(&t, env, nvml);
  gs_nvml_close(nvml);
  if (st != GS_OK) return st;
  cJSON *json = gs_topology_to_json(&t);
  gs_topology_free(&t);
  if (json && cJSON_AddItemToObject(block, "topology", json)) return GS_OK;
  cJSON_Delete(json);
  return gs_error(GS_ERR_NOMEM, "cannot add the topology to the result document");
}
