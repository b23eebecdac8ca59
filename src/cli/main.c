/* gpuscale: measures how GPU work scales across GPUs and nodes. This file
 * dispatches git-style subcommands and maps their status to the exit code:
 * 0 success, 1 the run failed (a rank error, a wrong result, I/O, the OS
 * refusing a thread or process), 2 usage error (bad, unknown or conflicting
 * options), 3 regression found by compare, 4 partial (the run ended early;
 * what was measured is written), 5 node verdict fail (suite, report, check),
 * 6 node check warn (check), and
 * 70 a bug in gpuscale (a broken invariant of its own code: GS_BUG ends the
 * process there, not through a status). See docs/cli.md. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/help.h"
#include "core/interrupt.h"
#include "core/result.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    gs_help_begin(GS_HELP_TEXT, stderr, "/", 1);
    gs_cli_describe_usage();
    gs_help_end();
    return 2;
  }
  const char *name = argv[1];
  // A signal or a file-size limit never leaves a temp file behind.
  gs_interrupt_install_cleanup();
  // Every result document records the command line as given.
  gs_result_set_command_line(argc, argv);
  // --help and --version are the help and version commands.
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) name = "help";
  if (strcmp(name, "--version") == 0) name = "version";
  const gs_cli_command *command = gs_cli_command_find(name);
  if (command != NULL) {
    const gs_status status = command->run(argc - 2, argv + 2);
    // Library code records errors; they are printed here, once. compare's
    // regressions are its findings, already printed, not an error.
    if (status != GS_OK && status != GS_REGRESSION) gs_error_print();
    return gs_status_exit_code(status);
  }
  fprintf(stderr, "gpuscale: error: unknown command '%s' (see 'gpuscale --help')\n", name);
  return 2;
}
