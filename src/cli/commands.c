/* The command table (see commands.h) and the top-level help page. */
#include "cli/commands.h"

#include <string.h>

#include "cli/help.h"
#include "core/coll_model.h"
#include "workloads/workload.h"

/* Copies a NULL-terminated list, then `extra` when not NULL. */
static size_t copy_names(const char *const *list, const char *extra, const char **names,
                         size_t max) {
  size_t n = 0;
  for (; list[n] != NULL; n++)
    if (n < max) names[n] = list[n];
  if (extra != NULL) {
    if (n < max) names[n] = extra;
    n++;
  }
  return n;
}

static size_t workload_names(const char **names, size_t max) {
  size_t n = 0;
  const gs_workload *const *all = gs_workload_list(&n);
  for (size_t i = 0; i < n && i < max; i++) names[i] = all[i]->key;
  return n;
}

static size_t coll_names(const char **names, size_t max) {
  return copy_names(gs_coll_op_names, "all", names, max);
}

static size_t command_names(const char **names, size_t max);

static size_t shell_names(const char **names, size_t max) {
  static const char *const shells[] = {"bash", "zsh", NULL};
  return copy_names(shells, NULL, names, max);
}

static const gs_cli_command commands[] = {
    {"info", gs_cmd_info, "show the GPUs, versions and how the GPUs are linked", NULL, 0},
    {"p2p", gs_cmd_p2p, "measure GPU-to-GPU and host-GPU bandwidth and latency", NULL, 0},
    {"run", gs_cmd_run, "measure one workload on the chosen GPUs", workload_names, 1},
    {"scale", gs_cmd_scale, "measure one workload at 1, 2, 4, ... GPUs: speedup and efficiency",
     workload_names, 1},
    {"coll", gs_cmd_coll, "collective sweeps (allreduce, allgather, ...): time, algbw, busbw",
     coll_names, 0},
    {"plan", gs_cmd_plan, "run different workloads on different GPUs at the same time", NULL, 0},
    {"exec", gs_cmd_exec, "measure your own command at 1, 2, 4, ... GPUs: its figure, speedup, "
     "telemetry", NULL, 0},
    {"suite", gs_cmd_suite, "run the standard set of measurements into results/", NULL, 0},
    {"report", gs_cmd_report, "analyse result files: speedup, efficiency, rank symmetry, advice",
     NULL, 0},
    {"ingest", gs_cmd_ingest, "read MLPerf LoadGen or nccl-tests results into a result file",
     gs_cmd_ingest_kinds, 1},
    {"compare", gs_cmd_compare, "compare two result files metric by metric; exit 3 on regression",
     NULL, 0},
    {"predict", gs_cmd_predict,
     "predict speedup, efficiency and cost past the machine from measurements", NULL, 0},
    {"check", gs_cmd_check,
     "node health check for a job prolog: pass, warn or fail with an action each", NULL, 0},
    {"help", gs_cmd_help, "a command's help, or its manual page (--man)", command_names, 0},
    {"completion", gs_cmd_completion, "the bash or zsh completion script", shell_names, 0},
    {"version", gs_cmd_version, "the version and the optional parts built in (--format json)",
     NULL, 0},
};

#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static size_t command_names(const char **names, size_t max) {
  for (size_t i = 0; i < COMMAND_COUNT && i < max; i++) names[i] = commands[i].name;
  return COMMAND_COUNT;
}

/* See commands.h. */
const gs_cli_command *gs_cli_command_list(size_t *n) {
  *n = COMMAND_COUNT;
  return commands;
}

/* See commands.h. */
const gs_cli_command *gs_cli_command_find(const char *name) {
  for (size_t i = 0; i < COMMAND_COUNT; i++)
    if (strcmp(commands[i].name, name) == 0) return &commands[i];
  return NULL;
}

/* See commands.h. */
void gs_cli_describe_usage(void) {
  gs_help_usage("gpuscale [--version] [--help] COMMAND [options]");
  gs_help_para("gpuscale measures how well GPU work scales across GPUs, and why not better.");
  gs_help_list("Commands");
  for (size_t i = 0; i < COMMAND_COUNT; i++) gs_help_item(commands[i].name, commands[i].summary);
  gs_help_para("'gpuscale COMMAND --help' describes a command's options.\n"
               "Exit codes: 0 success, 1 run failed, 2 usage error, 3 regression (compare),\n"
               "4 partial (what was measured is written), 5 node verdict fail (suite, report,\n"
               "check), 6 node check warn (check), 70 a bug in gpuscale (the message names its\n"
               "file:line).");
}
