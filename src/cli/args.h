/* Argument helpers shared by the commands. */
#ifndef GS_CLI_ARGS_H
#define GS_CLI_ARGS_H

#include <stddef.h>

#include "core/options.h"

/* 1 when argv[0..argc) asks for help (--help or -h before any "--"). */
int gs_cli_wants_help(int argc, char **argv);

/* A common option that a command cannot apply, and why (a sentence that
 * follows "option --NAME does not apply to gpuscale CMD: "). A list of them
 * ends with a NULL name. */
typedef struct {
  const char *name;
  const char *why;
  int given;
} gs_cli_refusal;

/* Marks the refused options in `table` (they stay in the table, so that
 * they parse, and are shown by help) so that gs_cli_refused can say why
 * they were refused rather than calling them unknown. */
void gs_cli_refuse_options(gs_option *table, gs_cli_refusal *refusals);

/* A common option's help in a command's own words. A list of them ends
 * with a NULL name. */
typedef struct {
  const char *name;
  const char *help;
} gs_cli_wording;

/* Replaces the help line of each option of `table` named in `words`. */
void gs_cli_reword_options(gs_option *table, const gs_cli_wording *words);

/* GS_ERR_USAGE naming the first refused option that was given, with why;
 * GS_OK when none was. */
gs_status gs_cli_refused(const char *command, const gs_cli_refusal *refusals);

/* The FILE operands of a command, gathered by gs_cli_add_file (the
 * positional callback of gs_options_parse); free `paths` when done. */
typedef struct {
  size_t n, cap;
  const char **paths;
} gs_cli_file_list;

/* Appends `arg` to the gs_cli_file_list `ctx`; GS_ERR_NOMEM when it cannot. */
gs_status gs_cli_add_file(void *ctx, const char *arg);

/* Parses argv[0..argc) against `table` for `command` (e.g. "gpuscale
 * report"), gathering the FILE operands into `files`; GS_ERR_USAGE
 * "COMMAND: missing FILE (WHAT)" when there is none. The caller frees
 * files->paths whatever the result. */
gs_status gs_cli_parse_files(const gs_option *table, const char *command, const char *what,
                             int argc, char **argv, gs_cli_file_list *files);

#endif
