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
