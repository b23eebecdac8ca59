/* The subcommands of the gpuscale binary and the one table that lists
 * them: main dispatches through it, and the top-level help, the man pages
 * and the shell completions are generated from it. Each command takes the
 * arguments after its own name and returns a status that main maps to the
 * exit code. */
#ifndef GS_COMMANDS_H
#define GS_COMMANDS_H

#include <stddef.h>

#include "core/status.h"

gs_status gs_cmd_info(int argc, char **argv);
gs_status gs_cmd_check(int argc, char **argv);
/* `gpuscale check pairs` (cmd_check_pairs.c), from gs_cmd_check; argv
 * after "pairs". */
gs_status gs_cmd_check_pairs(int argc, char **argv);
gs_status gs_cmd_run(int argc, char **argv);
gs_status gs_cmd_scale(int argc, char **argv);
gs_status gs_cmd_suite(int argc, char **argv);
gs_status gs_cmd_coll(int argc, char **argv);
gs_status gs_cmd_report(int argc, char **argv);
gs_status gs_cmd_p2p(int argc, char **argv);
gs_status gs_cmd_plan(int argc, char **argv);
gs_status gs_cmd_exec(int argc, char **argv);
gs_status gs_cmd_ingest(int argc, char **argv);
gs_status gs_cmd_compare(int argc, char **argv);
gs_status gs_cmd_predict(int argc, char **argv);
gs_status gs_cmd_help(int argc, char **argv);
gs_status gs_cmd_completion(int argc, char **argv);
gs_status gs_cmd_version(int argc, char **argv);

/* The values of the first argument of a command (workloads, collectives,
 * ingest kinds, command names, shells) into names[0..max); returns how
 * many there are (at most max are written). Strings are static. */
typedef size_t (*gs_cli_operands_fn)(const char **names, size_t max);

typedef struct {
  const char *name;
  gs_status (*run)(int argc, char **argv);
  const char *summary;
  gs_cli_operands_fn operands; /* NULL: the command has no such argument */
  int operand_options;         /* 1: "COMMAND OPERAND --help" adds the operand's own options */
} gs_cli_command;

/* Every command, in the order the help lists them; *n is set to the count. */
const gs_cli_command *gs_cli_command_list(size_t *n);

/* The command called `name`, or NULL. */
const gs_cli_command *gs_cli_command_find(const char *name);

/* The ingest kinds (mlperf, nccl-tests) for the command table. */
size_t gs_cmd_ingest_kinds(const char **names, size_t max);

/* The top-level help page ("gpuscale --help") through cli/help.h. */
void gs_cli_describe_usage(void);

#endif
