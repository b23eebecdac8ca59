/* gpuscale: measures how GPU work scales across GPUs and nodes. This file
 * dispatches git-style subcommands and maps their status to the exit code:
 * 0 success, 1 the run failed (a rank error, a wrong result, I/O), 2 usage
 * error (bad, unknown or conflicting options). See docs/cli.md. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "gs_version.h"

typedef struct {
  const char *name;
  gs_status (*run)(int argc, char **argv);
  const char *summary;
} command;

static const command commands[] = {
    {"info", gs_cmd_info, "show the GPUs, versions and how the GPUs are linked"},
    {"run", gs_cmd_run, "measure one workload on the chosen GPUs"},
    {"scale", gs_cmd_scale, "measure one workload at 1, 2, 4, ... GPUs: speedup and efficiency"},
    {"coll", gs_cmd_coll, "collective sweeps (allreduce, allgather, ...): time, algbw, busbw"},
    {"plan", gs_cmd_plan, "run different workloads on different GPUs at the same time"},
    {"suite", gs_cmd_suite, "run the standard set of measurements into results/"},
    {"report", gs_cmd_report, "analyse result files: speedup, efficiency, rank symmetry, advice"},
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
          "Exit codes: 0 success, 1 run failed, 2 usage error.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const char *name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
    print_usage(stdout);
    return 0;
  }
  if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
    printf("gpuscale %s (git %s)\n", GS_VERSION_STRING, GS_GIT_REVISION);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(name, commands[i].name) == 0)
      return gs_status_exit_code(commands[i].run(argc - 2, argv + 2));
  }
  fprintf(stderr, "gpuscale: error: unknown command '%s' (see 'gpuscale --help')\n", name);
  return 2;
}
