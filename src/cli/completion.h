/* The fixed parts of the bash and zsh completion scripts; the data between
 * them (commands, options, values) is generated from the help pages by
 * `gpuscale completion` (cli/cmd_help.c). */
#ifndef GS_CLI_COMPLETION_H
#define GS_CLI_COMPLETION_H

#include <stdio.h>

/* Writes the script's head (a comment, the zsh #compdef line) to out. */
void gs_completion_write_head(FILE *out, int zsh);

/* Writes the lookup over _gpuscale_data and the shell's glue to out. */
void gs_completion_write_tail(FILE *out, int zsh);

#endif
