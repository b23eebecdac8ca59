/* `gpuscale info`: what this machine is — host, CPU, GPUs, driver, CUDA,
 * NCCL and MPI versions — and how its GPUs are linked (nvidia-smi's link
 * matrix, CUDA peer access, theoretical NVLink bandwidth), as terminal text,
 * a result document (JSON) or a Graphviz graph. No GPU is a normal state.
 * See docs/info.md. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "core/options.h"
#include "measure/info.h"
#include "core/check.h"
#include "platform/nvml.h"
#include "platform/topology.h"

static const char *const format_choices[] = {"text", "json", "dot", NULL};
enum { FORMAT_TEXT = 0, FORMAT_JSON = 1, FORMAT_DOT = 2 };

static gs_status reject_positional(void *ctx, const char *arg) {
  (void)ctx;
  return gs_error(GS_ERR_USAGE, "gpuscale info: unexpected argument '%s'", arg);
}

static void print_version(FILE *out, const char *label, int v) {
  if (v > 0)
    fprintf(out, "%s %d.%d", label, v / 1000, (v % 1000) / 10);
  else
    fprintf(out, "%s unknown", label);
}

static void print_text(FILE *out, const gs_machine_info *d) {
  const gs_environment *e = &d->env;
  fprintf(out, "Host       %s (%s)\n", e->host[0] ? e->host : "unknown",
          e->os[0] ? e->os : "unknown OS");
  fprintf(out, "CPU        %s", e->cpu_model[0] ? e->cpu_model : "unknown");
  if (e->cpu_logical_cores > 0) fprintf(out, ", %d logical cores", e->cpu_logical_cores);
  fprintf(out, "\n");
  if (e->host_memory_bytes)
    fprintf(out, "Memory     %.1f GiB\n", (double)e->host_memory_bytes / 1073741824.0);
  else
    fprintf(out, "Memory     unknown\n");
  if (d->driver[0])
    fprintf(out, "Driver     %s\n", d->driver);
  else
    fprintf(out, "Driver     unknown (%s)\n",
            d->nvml_status[0] ? d->nvml_status : "NVML has no version");
  fprintf(out, "CUDA       ");
  print_version(out, "driver", e->cuda_driver_version);
  print_version(out, ", runtime", e->cuda_runtime_version);
  fprintf(out, "\n");
  fprintf(out, "NCCL       %s\n",
          e->nccl_version[0] ? e->nccl_version : "not found (libnccl.so.2)");
  fprintf(out, "MPI        %s\n", e->mpi_version[0] ? e->mpi_version : "none");
  if (e->gpu_count == 0) {
    const char *prefix = "no usable CUDA device";
    if (strncmp(e->cuda_status, prefix, strlen(prefix)) == 0)
      fprintf(out, "GPUs       %s\n", e->cuda_status);
    else
      fprintf(out, "GPUs       %s: %s\n", prefix, e->cuda_status[0] ? e->cuda_status : "unknown");
    return;
  }
  fprintf(out, "GPUs       %s\n", e->cuda_status);
  if (d->nvml_status[0]) fprintf(out, "NVML       %s\n", d->nvml_status);
  for (size_t i = 0; i < e->gpu_count; i++) {
    const gs_gpu_desc *g = &e->gpus[i];
    const gs_nvml_gpu_info *x = &d->nvml_gpus[i];
    fprintf(out, "\nGPU%d  %s\n", g->index, g->name);
    fprintf(out, "  UUID                %s\n", g->uuid);
    fprintf(out, "  PCI bus id          %s\n", g->pci_bus_id);
    fprintf(out, "  memory              %.1f GiB (%" PRIu64 " bytes)\n",
            (double)g->memory_bytes / 1073741824.0, g->memory_bytes);
    fprintf(out, "  SMs                 %d, compute capability %d.%d\n", g->sm_count,
            g->cc_major, g->cc_minor);
    fprintf(out, "  SM clock            ");
    if (x->max_sm_clock_mhz)
      fprintf(out, "max %u MHz", x->max_sm_clock_mhz);
    else if (g->clock_mhz)
      fprintf(out, "max %d MHz (CUDA)", g->clock_mhz);
    else
      fprintf(out, "unknown");
    if (x->sm_clock_mhz) fprintf(out, ", now %u MHz", x->sm_clock_mhz);
    fprintf(out, "\n  memory clock        ");
    if (x->max_memory_clock_mhz)
      fprintf(out, "max %u MHz", x->max_memory_clock_mhz);
    else if (g->memory_clock_mhz)
      fprintf(out, "max %d MHz (CUDA)", g->memory_clock_mhz);
    else
      fprintf(out, "unknown");
    if (x->memory_clock_mhz) fprintf(out, ", now %u MHz", x->memory_clock_mhz);
    fprintf(out, "\n");
    if (g->peak_memory_bandwidth > 0)
      fprintf(out, "  memory bandwidth    %.1f GB/s peak (%d-bit bus)\n",
              g->peak_memory_bandwidth / 1e9, g->memory_bus_width_bits);
    if (x->power_limit_mw)
      fprintf(out, "  power limit         %.0f W\n", x->power_limit_mw / 1000.0);
    else
      fprintf(out, "  power limit         unknown\n");
    fprintf(out, "  NUMA node           %s\n", d->numa_text[i][0] ? d->numa_text[i] : "unknown");
    fprintf(out, "  CPU affinity        %s\n", x->cpu_affinity[0] ? x->cpu_affinity : "unknown");
  }
  fprintf(out, "\nLink matrix\n\n");
  gs_topology_print_links(out, &d->topo, d->affinity, d->numa);
  fprintf(out, "\nPeer access (cudaDeviceCanAccessPeer, row -> column)\n\n");
  gs_topology_print_peer(out, &d->topo);
  int any_bw = 0;
  for (size_t c = 0; c < d->topo.n * d->topo.n; c++)
    if (isfinite(d->topo.nvlink_bw[c]) && d->topo.nvlink_bw[c] > 0) any_bw = 1;
  if (any_bw) {
    fprintf(out, "\nNVLink bandwidth per direction, theoretical (GB/s)\n\n");
    gs_topology_print_values(out, d->topo.n, d->topo.nvlink_bw, 1e-9, 0, "?");
  }
}

/* The info document on standard output, or atomically into `out_path`. */
static gs_status write_json(const gs_machine_info *d, const char *format_name,
                            const char *out_path) {
  cJSON *doc = NULL;
  GS_TRY(gs_machine_info_document(d, format_name, &doc));
  const gs_status st = out_path ? gs_result_write(doc, out_path) : gs_json_print(stdout, doc);
  cJSON_Delete(doc);
  return st;
}

static void print_info_help(const gs_option *table) {
  gs_help_usage("gpuscale info [options]");
  gs_help_para("Shows the host, CPU, GPUs (memory, SMs, clocks, power limit, NUMA node), the\n"
         "driver, CUDA, NCCL and MPI versions, and how the GPUs are linked: the link\n"
         "matrix (X, NV#, PIX, PXB, PHB, NODE, SYS, as nvidia-smi topo -m), CUDA peer\n"
         "access and the theoretical NVLink bandwidth. Works without any GPU.");
  gs_help_options("Options", table);
}

gs_status gs_cmd_info(int argc, char **argv) {
  int format = FORMAT_TEXT;
  const char *out_path = NULL;
  const gs_option table[] = {
      {.name = "format", .short_name = 'f', .kind = GS_OPT_CHOICE, .target = &format,
       .choices = format_choices,
       .metavar = "text|json|dot", .help = "output: terminal tables, a result document, Graphviz"},
      {.name = "out", .short_name = 'o', .kind = GS_OPT_STRING, .target = &out_path,
       .metavar = "FILE", .help = "write to FILE instead of standard output"},
      {.kind = GS_OPT_END},
  };
  if (gs_cli_wants_help(argc, argv)) {
    print_info_help(table);
    return GS_OK;
  }
  const gs_option *tables[] = {table, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale info", argc, argv, reject_positional, NULL));
  if (out_path) GS_TRY(gs_file_check_output(out_path, "option --out"));

  gs_machine_info d;
  gs_status st = gs_machine_info_collect(&d);
  if (st == GS_OK && format == FORMAT_JSON) {
    st = write_json(&d, format_choices[format], out_path);
  } else if (st == GS_OK) {
    // Written atomically: a failed write leaves an existing file as it was.
    gs_file_out out;
    st = gs_file_out_open(&out, out_path, NULL);
    if (st == GS_OK) {
      if (format == FORMAT_DOT) {
        if (d.env.gpu_count == 0) fprintf(out.f, "// %s\n", d.env.cuda_status);
        gs_topology_write_dot(out.f, &d.topo, d.names, d.bus_ids);
      } else {
        print_text(out.f, &d);
      }
      st = gs_file_out_commit(&out);
    }
  }
  gs_machine_info_free(&d);
  return st;
}
