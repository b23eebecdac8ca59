/* Declarative command-line options shared by the CLI and the workloads.
 * A command describes its options in a table of gs_option; gs_options_parse
 * fills the targets, rejects unknown options, missing or bad values and
 * repeated options, and gs_options_help prints the table. */
#ifndef GS_OPTIONS_H
#define GS_OPTIONS_H

#include <stdio.h>

#include "core/parse.h"

typedef enum {
  GS_OPT_END = 0,  /* terminates a table */
  GS_OPT_FLAG,     /* int, set to 1; takes no value */
  GS_OPT_COUNT,    /* uint64_t via gs_parse_count within [min, max] */
  GS_OPT_SIZE,     /* uint64_t via gs_parse_size within [min, max] */
  GS_OPT_DOUBLE,   /* double via gs_parse_double within [dmin, dmax] */
  GS_OPT_STRING,   /* const char * pointing into argv */
  GS_OPT_CHOICE,   /* int index into `choices` */
  GS_OPT_COUNT_LIST, /* gs_u64_list via gs_parse_count_list within [min, max] */
  GS_OPT_DOUBLE_LIST, /* gs_double_list via gs_parse_double_list within [dmin, dmax] */
  GS_OPT_STRING_LIST, /* gs_string_list: repeatable, each use appends one value */
  GS_OPT_REFUSED   /* not an option of this command: never listed by help; its use is a
                      usage error whose reason is `help` (e.g. an option of another
                      command, or nccl-tests' spelling of one) */
} gs_option_kind;

/* Values of a repeatable option, e.g. "--inject a --inject b"; the strings
 * point into argv. */
typedef struct {
  size_t n;
  const char *v[GS_LIST_MAX];
} gs_string_list;

typedef struct {
  const char *name;        /* long name without "--", e.g. "points" */
  char short_name;         /* single-letter alias or 0, e.g. 'n' for -n */
  gs_option_kind kind;
  void *target;            /* type depends on kind (see above) */
  uint64_t min, max;       /* for COUNT, SIZE, COUNT_LIST */
  double dmin, dmax;       /* for DOUBLE, DOUBLE_LIST */
  const char *const *choices; /* NULL-terminated, for CHOICE */
  const char *metavar;     /* shown in help, e.g. "N" */
  const char *help;        /* one line */
  int *given;              /* optional: set to 1 when the option appears */
} gs_option;

/* Parses argv[0..argc) against the tables (searched in order; a NULL table
 * pointer ends the list). Options take "--name value", "--name=value" or
 * "-x value". Arguments that are not options are passed, in order, to
 * `positional` (may be NULL: then any positional argument is an error).
 * `command` names the command in error messages ("gpuscale run voxelize").
 * Returns GS_ERR_USAGE with a message naming the option on any error. */
gs_status gs_options_parse(const gs_option *const *tables, const char *command, int argc,
                           char **argv,
                           gs_status (*positional)(void *ctx, const char *arg), void *ctx);

/* Prints one line per option: "  -n, --iters N   help (default ...)";
 * GS_OPT_REFUSED entries are not listed. */
void gs_options_help(FILE *out, const gs_option *table);

/* Long enough for any label and help text gs_option_label and
 * gs_option_help_text write (longer ones are cut). */
#define GS_OPTION_LABEL_MAX 160
#define GS_OPTION_HELP_MAX 1024

/* o's left column in help into buf: "-n, --iters N", or "    --iters N"
 * (four spaces where the short name would be) for an option without one. */
void gs_option_label(const gs_option *o, char *buf, size_t size);

/* o's help text into buf as --help shows it: the help line, the choices of
 * a CHOICE option ("(one of: a, b)") and the default, the target's current
 * value ("(default 3)"), unless the help line states its own. Man pages
 * and --help both use it, so they cannot disagree. */
void gs_option_help_text(const gs_option *o, char *buf, size_t size);

#endif
