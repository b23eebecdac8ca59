/* Argument helpers shared by the commands (see args.h). */
#include "cli/args.h"

#include <string.h>

int gs_cli_wants_help(int argc, char **argv) {
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) return 0;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
  }
  return 0;
}

void gs_cli_refuse_options(gs_option *table, gs_cli_refusal *refusals) {
  for (gs_cli_refusal *r = refusals; r->name; r++)
    for (gs_option *o = table; o->kind != GS_OPT_END; o++)
      if (strcmp(o->name, r->name) == 0) o->given = &r->given;
}

void gs_cli_reword_options(gs_option *table, const gs_cli_wording *words) {
  for (const gs_cli_wording *w = words; w->name; w++)
    for (gs_option *o = table; o->kind != GS_OPT_END; o++)
      if (strcmp(o->name, w->name) == 0) o->help = w->help;
}

gs_status gs_cli_refused(const char *command, const gs_cli_refusal *refusals) {
  for (const gs_cli_refusal *r = refusals; r->name; r++)
    if (r->given)
      return gs_error(GS_ERR_USAGE, "option --%s does not apply to gpuscale %s: %s", r->name,
                      command, r->why);
  return GS_OK;
}
