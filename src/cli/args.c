/* Argument helpers shared by the commands (see args.h). */
#include "cli/args.h"

#include <stdlib.h>
#include <string.h>

int gs_cli_wants_help(int argc, char **argv) {
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) return 0;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
  }
  return 0;
}

void gs_cli_reword_options(gs_option *table, const gs_cli_wording *words) {
  for (const gs_cli_wording *w = words; w->name; w++)
    for (gs_option *o = table; o->kind != GS_OPT_END; o++)
      if (strcmp(o->name, w->name) == 0) o->help = w->help;
}

/* See args.h. */
gs_status gs_cli_add_file(void *ctx, const char *arg) {
  gs_cli_file_list *l = ctx;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 8;
    const char **grown = realloc(l->paths, cap * sizeof *grown);
    if (!grown) return gs_error(GS_ERR_NOMEM, "out of memory");
    l->paths = grown;
    l->cap = cap;
  }
  l->paths[l->n++] = arg;
  return GS_OK;
}

/* See args.h. */
gs_status gs_cli_parse_files(const gs_option *const *tables, const char *command,
                             const char *what, int argc, char **argv, gs_cli_file_list *files) {
  gs_status st = gs_options_parse(tables, command, argc, argv, gs_cli_add_file, files);
  if (st == GS_OK && files->n == 0)
    st = gs_error(GS_ERR_USAGE, "%s: missing FILE (%s)", command, what);
  return st;
}
