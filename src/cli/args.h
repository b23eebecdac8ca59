/* Argument helpers shared by the commands. */
#ifndef GS_CLI_ARGS_H
#define GS_CLI_ARGS_H

#include <stddef.h>

#include "core/options.h"

/* 1 when argv[0..argc) asks for help (--help or -h before any "--"). */
int gs_cli_wants_help(int argc, char **argv);

/* A common option's help in a command's own words. A list of them ends
 * with a NULL name. */
typedef struct {
  const char *name;
  const char *help;
} gs_cli_wording;

/* Replaces the help line of each option of `table` named in `words`. */
void gs_cli_reword_options(gs_option *table, const gs_cli_wording *words);

/* The FILE operands of a command, gathered by gs_cli_add_file (the
 * positional callback of gs_options_parse); free `paths` when done. */
typedef struct {
  size_t n, cap;
  const char **paths;
} gs_cli_file_list;

/* Appends `arg` to the gs_cli_file_list `ctx`; GS_ERR_NOMEM when it cannot. */
gs_status gs_cli_add_file(void *ctx, const char *arg);

/* Parses argv[0..argc) against `tables` (NULL-terminated) for `command` (e.g. "gpuscale
 * report"), gathering the FILE operands into `files`; GS_ERR_USAGE
 * "COMMAND: missing FILE (WHAT)" when there is none. The caller frees
 * files->paths whatever the result. */
gs_status gs_cli_parse_files(const gs_option *const *tables, const char *command,
                             const char *what, int argc, char **argv, gs_cli_file_list *files);

#endif
