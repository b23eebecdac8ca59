/* The help page of a command, described once and rendered three ways: the
 * terminal text of --help, a roff man page, and the option lines behind the
 * shell completions. A command describes its page with the gs_help_* calls
 * below while its option tables are alive; whoever asked for the page
 * (--help, `gpuscale help --man`, `gpuscale completion`) chose where it goes
 * with gs_help_begin. The CLI runs on one thread; so does this. */
#ifndef GS_CLI_HELP_H
#define GS_CLI_HELP_H

#include <stdio.h>

#include "core/options.h"

typedef enum {
  GS_HELP_TEXT = 0, /* --help: the terminal text on standard output (the default) */
  GS_HELP_MAN,      /* roff (man(7)) */
  GS_HELP_COLLECT   /* one "KEY OPTION KIND [VALUES...]" line per option name */
} gs_help_mode;

/* Sends the pages described next to `out` in `mode` until gs_help_end.
 * `key` names the page: "run/" or "run/voxelize" (a command and the value
 * of its first argument). A man page is one or more such calls on the same
 * `out`: blocks already written on it (the same usage, paragraph, list or
 * option section) are left out of later calls, and a later call with new
 * blocks is headed by its key ("RUN VOXELIZE"). `first` starts a new page. */
void gs_help_begin(gs_help_mode mode, FILE *out, const char *key, int first);

/* Back to the default: terminal text on standard output. */
void gs_help_end(void);

/* One line of usage without "usage: ", e.g. "gpuscale run WORKLOAD
 * [options]"; consecutive lines form one block. */
void gs_help_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A paragraph of description; its own line breaks are kept on the
 * terminal and joined in a man page. */
void gs_help_para(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* An example command line (or several, one per line), shown indented. */
void gs_help_example(const char *text);

/* Starts a titled list ("Workloads:" is written for title "Workloads"),
 * followed by gs_help_item calls. */
void gs_help_list(const char *title);

/* One entry of the list: a name and its one-line summary (line breaks in
 * the summary continue under it). */
void gs_help_item(const char *name, const char *summary);

/* A titled option section ("Common options", "Options of voxelize"): one
 * line per option of `table` as gs_options_help writes it. */
void gs_help_options(const char *title, const gs_option *table);

#endif
