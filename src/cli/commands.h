/* The subcommands of the gpuscale binary. Each takes the arguments after
 * its own name and returns a status that main maps to the exit code. */
#ifndef GS_COMMANDS_H
#define GS_COMMANDS_H

#include "core/status.h"

gs_status gs_cmd_info(int argc, char **argv);
gs_status gs_cmd_run(int argc, char **argv);
gs_status gs_cmd_scale(int argc, char **argv);
gs_status gs_cmd_suite(int argc, char **argv);
gs_status gs_cmd_coll(int argc, char **argv);
gs_status gs_cmd_report(int argc, char **argv);
gs_status gs_cmd_plan(int argc, char **argv);

#endif
