/* gpuscale: measures how GPU work scales across GPUs and nodes. This file
 * dispatches git-style subcommands and maps their status to the exit code:
 * 0 success, 1 the run failed (a rank error, a wrong result, I/O), 2 usage
 * error (bad, unknown or conflicting options), 3 regression found by compare,
 * 4 partial (the run ended early; what was measured is written), 70 a bug
 * in gpuscale (a broken internal invariant). See docs/cli.md. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/result.h"
#include "gs_version.h"

typedef struct {
  const char *name;
  gs_status (*run)(int argc, char **argv);
  const char *summary;
} command;

static const command commands[] = {
    {"info", gs_cmd_info, "show the GPUs, versions and how the GPUs are linked"},
    {"p2p", gs_cmd_p2p, "measure GPU-to-GPU and host-GPU bandwidth and latency"},
    {"run", gs_cmd_run, "measure one workload on the chosen GPUs"},
    {"scale", gs_cmd_scale, "measure one workload at 1, 2, 4, ... GPUs: speedup and efficiency"},
    {"coll", gs_cmd_coll, "collective sweeps (allreduce, allgather, ...): time, algbw, busbw"},
    {"plan", gs_cmd_plan, "run different workloads on different GPUs at the same time"},
    {"suite", gs_cmd_suite, "run the standard set of measurements into results/"},
    {"report", gs_cmd_report, "analyse result files: speedup, efficiency, rank symmetry, advice"},
    {"ingest", gs_cmd_ingest, "read MLPerf LoadGen or nccl-tests results into a result file"},
    {"compare", gs_cmd_compare, "compare two result files metric by metric; exit 3 on regression"},
};

static void print_usage(FILE *out) {
  fprintf(out,
          "usage: gpuscale [--version] [--help] COMMAND [options]\n\n"
          "gpuscale measures how well GPU work scales across GPUs, and why not better.\n\n"
          "Commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\n'gpuscale COMMAND --help' describes a command's options.\n"
          "Exit codes: 0 success, 1 run failed, 2 usage error, 3 regression (compare),\n"
          "4 partial (what was measured is written), 70 internal error (a bug).\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const char *name = argv[1];
  // Every result document records the command line as given.
  gs_result_set_command_line(argc, argv);
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
    print_usage(stdout);
    return 0;
  }
  if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
    printf("gpuscale %s (git %s)\n", GS_VERSION_STRING, GS_GIT_REVISION);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(name, commands[i].name) == 0) {
      const gs_status status = commands[i].run(argc - 2, argv + 2);
      // Library code records errors; they are printed here, once. compare's
      // regressions are its findings, already printed, not an error.
      if (status != GS_OK && status != GS_REGRESSION) gs_error_print();
      return gs_status_exit_code(status);
    }
  }
  fprintf(stderr, "gpuscale: error: unknown command '%s' (see 'gpuscale --help')\n", name);
  return 2;
}
