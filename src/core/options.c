/* The declarative option parser: matches argv against tables of gs_option,
 * stores each value through the parse.c functions, and prints help. Errors
 * name the command and the option; an unknown option gets the closest known
 * name as a suggestion when one is near enough to be a typo. */
#include "core/options.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A suggestion is offered when the edit distance is at most this. */
#define SUGGEST_MAX_DISTANCE 2
/* Names longer than this are never compared for suggestions. */
#define SUGGEST_MAX_LEN 64
/* Help text starts in this column at the latest; longer option columns
 * push their help text further right. */
#define HELP_COLUMN_MAX 32
/* Long enough for "--" plus any option name we would print. */
#define OPTION_LABEL_MAX 96

/* One matched option: its entry and its position among all entries. */
typedef struct {
  const gs_option *opt;
  size_t index;
} gs_option_match;

static const char *command_label(const char *command) {
  return command != NULL && command[0] != '\0' ? command : "gpuscale";
}

static size_t count_entries(const gs_option *const *tables) {
  size_t total = 0;
  for (size_t t = 0; tables[t] != NULL; t++)
    for (const gs_option *o = tables[t]; o->kind != GS_OPT_END; o++) total++;
  return total;
}

/* Finds the first option whose long name is name[0..len); tables in order. */
static int find_long(const gs_option *const *tables, const char *name, size_t len,
                     gs_option_match *m) {
  size_t index = 0;
  for (size_t t = 0; tables[t] != NULL; t++) {
    for (const gs_option *o = tables[t]; o->kind != GS_OPT_END; o++, index++) {
      if (o->name != NULL && strlen(o->name) == len && strncmp(o->name, name, len) == 0) {
        m->opt = o;
        m->index = index;
        return 1;
      }
    }
  }
  return 0;
}

/* Finds the first option whose short name is c; tables in order. */
static int find_short(const gs_option *const *tables, char c, gs_option_match *m) {
  size_t index = 0;
  for (size_t t = 0; tables[t] != NULL; t++) {
    for (const gs_option *o = tables[t]; o->kind != GS_OPT_END; o++, index++) {
      if (o->short_name != 0 && o->short_name == c) {
        m->opt = o;
        m->index = index;
        return 1;
      }
    }
  }
  return 0;
}

/* Edit distance between a[0..la) and b[0..lb), both at most SUGGEST_MAX_LEN
 * long, counting insertions, deletions, substitutions and swaps of two
 * adjacent letters (the usual typos) as one edit each (optimal string
 * alignment); three rows of the dynamic-programming table. */
static size_t edit_distance(const char *a, size_t la, const char *b, size_t lb) {
  size_t rows[3][SUGGEST_MAX_LEN + 1];
  size_t *before = rows[0], *prev = rows[1], *cur = rows[2];
  for (size_t j = 0; j <= lb; j++) prev[j] = j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t best = prev[j - 1] + (a[i - 1] != b[j - 1]);
      if (prev[j] + 1 < best) best = prev[j] + 1;
      if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          before[j - 2] + 1 < best)
        best = before[j - 2] + 1;
      cur[j] = best;
    }
    size_t *spare = before;
    before = prev;
    prev = cur;
    cur = spare;
  }
  return prev[lb];
}

/* The long name closest to name[0..len), or NULL when none is within
 * SUGGEST_MAX_DISTANCE (and closer than the length of the typed name, so
 * that a one-letter typo does not match everything). */
static const char *suggest(const gs_option *const *tables, const char *name, size_t len) {
  if (len == 0 || len > SUGGEST_MAX_LEN) return NULL;
  const char *best = NULL;
  size_t best_d = SUGGEST_MAX_DISTANCE + 1;
  for (size_t t = 0; tables[t] != NULL; t++) {
    for (const gs_option *o = tables[t]; o->kind != GS_OPT_END; o++) {
      if (o->name == NULL || o->kind == GS_OPT_REFUSED) continue;
      size_t lo = strlen(o->name);
      if (lo > SUGGEST_MAX_LEN) continue;
      size_t d = edit_distance(name, len, o->name, lo);
      if (d < best_d && d < len) {
        best = o->name;
        best_d = d;
      }
    }
  }
  return best;
}

/* Reports an unknown option `arg` whose name part is name[0..len). */
static gs_status unknown_option(const gs_option *const *tables, const char *command,
                                const char *arg, const char *name, size_t len) {
  const char *near = suggest(tables, name, len);
  if (near != NULL)
    return gs_error(GS_ERR_USAGE, "%s: unknown option '%s'; did you mean '--%s'?",
                    command_label(command), arg, near);
  return gs_error(GS_ERR_USAGE, "%s: unknown option '%s' (see --help)", command_label(command),
                  arg);
}

static const char *default_metavar(gs_option_kind kind) {
  switch (kind) {
    case GS_OPT_COUNT: return "N";
    case GS_OPT_SIZE: return "SIZE";
    case GS_OPT_DOUBLE: return "X";
    case GS_OPT_STRING: return "TEXT";
    case GS_OPT_CHOICE: return "NAME";
    case GS_OPT_COUNT_LIST: return "N,...";
    case GS_OPT_DOUBLE_LIST: return "X,...";
    case GS_OPT_STRING_LIST: return "TEXT";
    case GS_OPT_REFUSED:
    case GS_OPT_END:
    case GS_OPT_FLAG: break;
  }
  return "";
}

static const char *metavar_of(const gs_option *o) {
  return o->metavar != NULL ? o->metavar : default_metavar(o->kind);
}

/* Parses `value` for option o and stores it through o->target (when set). */
static gs_status store_value(const gs_option *o, const char *command, const char *value) {
  char label[OPTION_LABEL_MAX];
  snprintf(label, sizeof label, "--%s", o->name);
  switch (o->kind) {
    case GS_OPT_COUNT:
    case GS_OPT_SIZE: {
      uint64_t v = 0;
      gs_status st = o->kind == GS_OPT_COUNT ? gs_parse_count(value, label, o->min, o->max, &v)
                                             : gs_parse_size(value, label, o->min, o->max, &v);
      if (st == GS_OK && o->target != NULL) *(uint64_t *)o->target = v;
      return st;
    }
    case GS_OPT_DOUBLE: {
      double v = 0.0;
      gs_status st = gs_parse_double(value, label, o->dmin, o->dmax, &v);
      if (st == GS_OK && o->target != NULL) *(double *)o->target = v;
      return st;
    }
    case GS_OPT_STRING:
      if (value[0] == '\0')
        return gs_error(GS_ERR_USAGE, "%s: option %s: empty value", command_label(command), label);
      if (o->target != NULL) *(const char **)o->target = value;
      return GS_OK;
    case GS_OPT_CHOICE: {
      int v = 0;
      gs_status st = gs_parse_choice(value, label, o->choices, &v);
      if (st == GS_OK && o->target != NULL) *(int *)o->target = v;
      return st;
    }
    case GS_OPT_COUNT_LIST: {
      gs_u64_list v;
      gs_status st = gs_parse_count_list(value, label, o->min, o->max, &v);
      if (st == GS_OK && o->target != NULL) *(gs_u64_list *)o->target = v;
      return st;
    }
    case GS_OPT_DOUBLE_LIST: {
      gs_double_list v;
      gs_status st = gs_parse_double_list(value, label, o->dmin, o->dmax, &v);
      if (st == GS_OK && o->target != NULL) *(gs_double_list *)o->target = v;
      return st;
    }
    case GS_OPT_STRING_LIST: {
      gs_string_list *list = o->target;
      if (value[0] == '\0')
        return gs_error(GS_ERR_USAGE, "%s: option %s: empty value", command_label(command), label);
      if (list == NULL) return GS_OK;
      if (list->n == GS_LIST_MAX)
        return gs_error(GS_ERR_USAGE, "%s: option %s given more than %d times",
                        command_label(command), label, GS_LIST_MAX);
      list->v[list->n++] = value;
      return GS_OK;
    }
    case GS_OPT_FLAG:
    case GS_OPT_REFUSED:
    case GS_OPT_END: break;
  }
  GS_BUG("%s: option %s has no value kind", command_label(command), label);
}

/* A following argument can be a value unless it looks like a long option;
 * single-dash text stays allowed so that "-1" and "-" are values. */
static int can_be_value(const char *arg) { return !(arg[0] == '-' && arg[1] == '-'); }

/* Handles option m given as `arg` (its value, if any, inline after '=' or in
 * argv[*i + 1]); advances *i past a consumed value. */
static gs_status apply_option(const gs_option_match *m, const char *command, const char *arg,
                              const char *inline_value, int argc, char **argv, int *i,
                              unsigned char *seen) {
  const gs_option *o = m->opt;
  if (o->kind == GS_OPT_REFUSED) {
    if (o->short_name != 0)
      return gs_error(GS_ERR_USAGE, "option -%c/--%s does not apply to %s: %s", o->short_name,
                      o->name, command_label(command), o->help);
    return gs_error(GS_ERR_USAGE, "option --%s does not apply to %s: %s", o->name,
                    command_label(command), o->help);
  }
  if (seen[m->index] && o->kind != GS_OPT_STRING_LIST)
    return gs_error(GS_ERR_USAGE, "%s: option --%s given twice", command_label(command), o->name);
  seen[m->index] = 1;
  if (o->kind == GS_OPT_FLAG) {
    if (inline_value != NULL)
      return gs_error(GS_ERR_USAGE, "%s: option --%s takes no value (got '%s')",
                      command_label(command), o->name, arg);
    if (o->target != NULL) *(int *)o->target = 1;
  } else {
    const char *value = inline_value;
    if (value == NULL) {
      if (*i + 1 >= argc || argv[*i + 1] == NULL || !can_be_value(argv[*i + 1]))
        return gs_error(GS_ERR_USAGE, "%s: option --%s needs a value (%s)",
                        command_label(command), o->name, metavar_of(o));
      value = argv[++*i];
    }
    gs_status st = store_value(o, command, value);
    if (st != GS_OK) return st;
  }
  if (o->given != NULL) *o->given = 1;
  return GS_OK;
}

/* See options.h. Details: a separate value may start with one '-' ("-0.5",
 * "-") but not with "--", so "--iters --verbose" reports the missing value;
 * "-xyz" is an unknown option (no bundling); "-" alone is positional; after
 * the first "--" every argument is positional. Stops at the first error;
 * options before it have already been stored. Called by one thread. */
gs_status gs_options_parse(const gs_option *const *tables, const char *command, int argc,
                           char **argv,
                           gs_status (*positional)(void *ctx, const char *arg), void *ctx) {
  static const gs_option *const no_tables[] = {NULL};
  if (tables == NULL) tables = no_tables;
  if (argc < 0 || (argc > 0 && argv == NULL))
    GS_BUG("%s: bad argument vector", command_label(command));
  size_t total = count_entries(tables);
  unsigned char *seen = calloc(total > 0 ? total : 1, 1);
  if (seen == NULL) return gs_error(GS_ERR_NOMEM, "%s: out of memory", command_label(command));

  gs_status st = GS_OK;
  int options_ended = 0;
  for (int i = 0; i < argc && st == GS_OK; i++) {
    const char *arg = argv[i];
    if (arg == NULL) GS_BUG("%s: argument %d is NULL", command_label(command), i);
    gs_option_match m;
    if (!options_ended && strcmp(arg, "--") == 0) {
      options_ended = 1;
    } else if (!options_ended && arg[0] == '-' && arg[1] == '-') {
      const char *name = arg + 2;
      const char *eq = strchr(name, '=');
      size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
      if (find_long(tables, name, len, &m))
        st = apply_option(&m, command, arg, eq != NULL ? eq + 1 : NULL, argc, argv, &i, seen);
      else
        st = unknown_option(tables, command, arg, name, len);
    } else if (!options_ended && arg[0] == '-' && arg[1] != '\0') {
      // Only "-x" is a short option; "-xyz" is neither bundled flags nor an
      // attached value, so it is reported (with a hint for "-points").
      if (arg[2] == '\0' && find_short(tables, arg[1], &m)) {
        st = apply_option(&m, command, arg, NULL, argc, argv, &i, seen);
      } else {
        const char *name = arg + 1;
        const char *eq = strchr(name, '=');
        st = unknown_option(tables, command, arg, name,
                            eq != NULL ? (size_t)(eq - name) : strlen(name));
      }
    } else if (positional == NULL) {
      st = gs_error(GS_ERR_USAGE, "%s: unexpected argument '%s' (this command takes no arguments)",
                    command_label(command), arg);
    } else {
      st = positional(ctx, arg);
    }
  }
  free(seen);
  return st;
}

/* Writes value v with the largest suffix that divides it exactly
 * (base 1000 for counts, 1024 for sizes), e.g. 67108864 -> "64M". */
static void format_scaled(uint64_t v, uint64_t base, char *buf, size_t size) {
  static const char suffix[] = {'G', 'M', 'K'};
  uint64_t mult = base * base * base;
  for (size_t k = 0; k < sizeof suffix; k++, mult /= base) {
    if (v != 0 && v % mult == 0) {
      snprintf(buf, size, "%" PRIu64 "%c", v / mult, suffix[k]);
      return;
    }
  }
  snprintf(buf, size, "%" PRIu64, v);
}

/* Appends the list entries to buf as "a,b,c". */
static void format_list(const gs_option *o, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  size_t n = o->kind == GS_OPT_COUNT_LIST ? ((const gs_u64_list *)o->target)->n
                                          : ((const gs_double_list *)o->target)->n;
  for (size_t k = 0; k < n && k < GS_LIST_MAX && used + 1 < size; k++) {
    int w;
    if (o->kind == GS_OPT_COUNT_LIST)
      w = snprintf(buf + used, size - used, "%s%" PRIu64, k > 0 ? "," : "",
                   ((const gs_u64_list *)o->target)->v[k]);
    else
      w = snprintf(buf + used, size - used, "%s%g", k > 0 ? "," : "",
                   ((const gs_double_list *)o->target)->v[k]);
    if (w < 0) break;
    used += (size_t)w;
  }
}

/* The current value of o's target as text for "(default ...)"; "" when there
 * is nothing meaningful to show (flags, unset strings, empty lists). */
static void format_default(const gs_option *o, char *buf, size_t size) {
  buf[0] = '\0';
  if (o->target == NULL) return;
  switch (o->kind) {
    case GS_OPT_COUNT: format_scaled(*(const uint64_t *)o->target, 1000u, buf, size); break;
    case GS_OPT_SIZE: format_scaled(*(const uint64_t *)o->target, 1024u, buf, size); break;
    case GS_OPT_DOUBLE: snprintf(buf, size, "%g", *(const double *)o->target); break;
    case GS_OPT_STRING: {
      const char *s = *(const char *const *)o->target;
      if (s != NULL) snprintf(buf, size, "%s", s);
      break;
    }
    case GS_OPT_CHOICE: {
      int idx = *(const int *)o->target;
      if (o->choices == NULL || idx < 0) break;
      for (int k = 0; o->choices[k] != NULL; k++)
        if (k == idx) snprintf(buf, size, "%s", o->choices[k]);
      break;
    }
    case GS_OPT_COUNT_LIST:
    case GS_OPT_DOUBLE_LIST: format_list(o, buf, size); break;
    case GS_OPT_STRING_LIST:
    case GS_OPT_FLAG:
    case GS_OPT_REFUSED:
    case GS_OPT_END: break;
  }
}

/* See options.h. */
void gs_option_label(const gs_option *o, char *buf, size_t size) {
  const char *mv = o->kind == GS_OPT_FLAG ? "" : metavar_of(o);
  if (o->short_name != 0)
    snprintf(buf, size, "-%c, --%s%s%s", o->short_name, o->name, mv[0] ? " " : "", mv);
  else
    snprintf(buf, size, "    --%s%s%s", o->name, mv[0] ? " " : "", mv);
}

/* See options.h. The "(default ...)" is the target's current value; a help
 * text that states its own default (e.g. "as many as --min-time takes")
 * says it better than the target's placeholder value. */
void gs_option_help_text(const gs_option *o, char *buf, size_t size) {
  if (size == 0) return;
  size_t used = 0;
  int w = snprintf(buf, size, "%s", o->help != NULL ? o->help : "");
  if (w > 0) used = (size_t)w < size ? (size_t)w : size - 1;
  if (o->kind == GS_OPT_CHOICE && o->choices != NULL) {
    for (int k = 0; o->choices[k] != NULL && used + 1 < size; k++) {
      w = snprintf(buf + used, size - used, "%s%s", k > 0 ? ", " : " (one of: ", o->choices[k]);
      if (w < 0) break;
      used += (size_t)w < size - used ? (size_t)w : size - used - 1;
    }
    if (used + 1 < size) buf[used++] = ')', buf[used] = '\0';
  }
  char def[256] = "";
  if (o->help == NULL || strstr(o->help, "(default") == NULL) format_default(o, def, sizeof def);
  if (def[0] != '\0' && used + 1 < size) snprintf(buf + used, size - used, " (default %s)", def);
}

/* See options.h. Call it before parsing: the defaults shown are the
 * targets' current values. */
void gs_options_help(FILE *out, const gs_option *table) {
  if (out == NULL || table == NULL) return;
  char left[GS_OPTION_LABEL_MAX], text[GS_OPTION_HELP_MAX];
  int width = 0;
  for (const gs_option *o = table; o->kind != GS_OPT_END; o++) {
    if (o->name == NULL || o->kind == GS_OPT_REFUSED) continue;
    gs_option_label(o, left, sizeof left);
    int len = (int)strlen(left);
    if (len > width && len <= HELP_COLUMN_MAX) width = len;
  }
  for (const gs_option *o = table; o->kind != GS_OPT_END; o++) {
    if (o->name == NULL || o->kind == GS_OPT_REFUSED) continue;
    gs_option_label(o, left, sizeof left);
    gs_option_help_text(o, text, sizeof text);
    fprintf(out, "  %-*s  %s\n", width, left, text);
  }
}
