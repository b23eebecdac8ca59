/* Argument helpers shared by the commands. */
#ifndef GS_CLI_ARGS_H
#define GS_CLI_ARGS_H

/* 1 when argv[0..argc) asks for help (--help or -h before any "--"). */
int gs_cli_wants_help(int argc, char **argv);

#endif
