/* The help page writer (see help.h): terminal text, roff, or completion
 * lines from the same calls. Man pages leave out blocks that an earlier
 * call already put on the page, remembered by a hash of their text. */
#include "cli/help.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

/* Blocks remembered per man page; a command has a few dozen. */
#define SEEN_MAX 512
/* A formatted usage line or paragraph; ours are a few hundred bytes. */
#define TEXT_MAX 4096

typedef enum { BLOCK_NONE, BLOCK_USAGE, BLOCK_PARA, BLOCK_LIST, BLOCK_OPTIONS } block_kind;

static struct {
  gs_help_mode mode;
  FILE *out;          /* NULL: standard output */
  char key[128];      /* "run/voxelize" */
  int later;          /* a later call on a man page that has blocks already */
  int heading_done;   /* man, later call: its heading is written */
  block_kind last;    /* the block written last in this call */
  int skipping;       /* man: the current list is a duplicate; skip its items */
  int blocks;         /* blocks written in this call */
  uint64_t seen[SEEN_MAX];
  size_t n_seen;
} page;

static FILE *out_file(void) { return page.out != NULL ? page.out : stdout; }

/* FNV-1a of a block's kind and text. */
static uint64_t block_hash(char kind, const char *text) {
  uint64_t h = 1469598103934665603ull;
  h = (h ^ (unsigned char)kind) * 1099511628211ull;
  for (const unsigned char *p = (const unsigned char *)text; *p; p++)
    h = (h ^ *p) * 1099511628211ull;
  return h;
}

/* 1 when the block was on this man page already; else remembers it. Text
 * and collection never skip. */
static int seen_before(char kind, const char *text) {
  if (page.mode != GS_HELP_MAN) return 0;
  const uint64_t h = block_hash(kind, text);
  for (size_t i = 0; i < page.n_seen; i++)
    if (page.seen[i] == h) return 1;
  if (page.n_seen < SEEN_MAX) page.seen[page.n_seen++] = h;
  return 0;
}

void gs_help_begin(gs_help_mode mode, FILE *out, const char *key, int first) {
  page.mode = mode;
  page.out = out;
  snprintf(page.key, sizeof page.key, "%s", key != NULL ? key : "");
  if (first) page.n_seen = 0;
  page.later = !first;
  page.heading_done = 0;
  page.last = BLOCK_NONE;
  page.skipping = 0;
  page.blocks = 0;
  // Every page takes --help, which no option table lists.
  if (mode == GS_HELP_COLLECT) fprintf(out_file(), "%s --help flag\n%s -h flag\n", page.key, page.key);
}

void gs_help_end(void) {
  FILE *out = out_file();
  if (page.mode == GS_HELP_MAN && page.last == BLOCK_USAGE) fputs(".fi\n", out);
  page.mode = GS_HELP_TEXT;
  page.out = NULL;
  page.last = BLOCK_NONE;
}

/* Writes text for roff: backslashes and hyphens escaped, a line that
 * would start with a control character guarded, each line ended. */
static void roff_text(FILE *out, const char *text) {
  int line_start = 1;
  for (const char *p = text; *p; p++) {
    if (line_start && (*p == '.' || *p == '\'')) fputs("\\&", out);
    line_start = 0;
    if (*p == '\\') {
      fputs("\\e", out);
    } else if (*p == '-') {
      fputs("\\-", out);
    } else if (*p == '\n') {
      fputc('\n', out);
      line_start = 1;
    } else {
      fputc(*p, out);
    }
  }
  if (!line_start) fputc('\n', out);
}

/* A roff section heading: ".SH TITLE" (upper case) on a page's first call,
 * ".SS Title" under a later call's heading. */
static void roff_heading(FILE *out, const char *title) {
  char upper[256];
  size_t n = 0;
  for (; title[n] && n + 1 < sizeof upper; n++) upper[n] = (char)toupper((unsigned char)title[n]);
  upper[n] = '\0';
  fputs(page.later ? ".SS \"" : ".SH \"", out);
  for (const char *p = page.later ? title : upper; *p; p++)
    if (*p != '"') fputc(*p, out);
  fputs("\"\n", out);
}

/* Starts a block of `kind` that is new on the page: the separator (text),
 * the end of a preceding synopsis and a later call's heading (man). */
static void block_start(block_kind kind) {
  FILE *out = out_file();
  if (page.mode == GS_HELP_TEXT && page.blocks > 0 && !(kind == BLOCK_USAGE && page.last == BLOCK_USAGE))
    fputc('\n', out);
  if (page.mode == GS_HELP_MAN) {
    if (page.last == BLOCK_USAGE && kind != BLOCK_USAGE) fputs(".fi\n", out);
    if (page.later && !page.heading_done) {
      fputs(".SH \"", out);
      for (const char *p = page.key; *p; p++)
        fputc(*p == '/' ? ' ' : toupper((unsigned char)*p), out);
      fputs("\"\n", out);
      page.heading_done = 1;
    }
  }
  page.last = kind;
  page.blocks++;
}

void gs_help_usage(const char *fmt, ...) {
  char line[TEXT_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (page.mode == GS_HELP_COLLECT || seen_before('U', line)) return;
  FILE *out = out_file();
  const int continues = page.last == BLOCK_USAGE;
  block_start(BLOCK_USAGE);
  if (page.mode == GS_HELP_TEXT) {
    fprintf(out, "%s%s\n", continues ? "       " : "usage: ", line);
    return;
  }
  if (!continues) fputs(page.later ? ".PP\n.nf\n" : ".SH SYNOPSIS\n.nf\n", out);
  roff_text(out, line);
}

/* Writes text and a line end, each line break in it as `line_break` (a
 * newline and the indent of the lines that continue). */
static void put_indented(FILE *out, const char *text, const char *line_break) {
  for (const char *p = text; *p; p++) {
    if (*p == '\n')
      fputs(line_break, out);
    else
      fputc(*p, out);
  }
  fputc('\n', out);
}

/* A paragraph or example of text (already formatted). */
static void put_para(const char *text, int example) {
  if (page.mode == GS_HELP_COLLECT || seen_before(example ? 'E' : 'P', text)) return;
  FILE *out = out_file();
  const int first_para = page.mode == GS_HELP_MAN && !page.later && page.last == BLOCK_USAGE;
  block_start(BLOCK_PARA);
  if (page.mode == GS_HELP_TEXT) {
    if (!example) {
      fprintf(out, "%s\n", text);
      return;
    }
    fputs("  ", out);
    put_indented(out, text, "\n  ");
    return;
  }
  if (first_para) fputs(".SH DESCRIPTION\n", out);
  fputs(example ? ".PP\n.RS\n.nf\n" : ".PP\n", out);
  roff_text(out, text);
  if (example) fputs(".fi\n.RE\n", out);
}

void gs_help_para(const char *fmt, ...) {
  char text[TEXT_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  put_para(text, 0);
}

void gs_help_example(const char *text) { put_para(text, 1); }

void gs_help_list(const char *title) {
  page.skipping = page.mode == GS_HELP_COLLECT || seen_before('L', title);
  if (page.skipping) return;
  block_start(BLOCK_LIST);
  if (page.mode == GS_HELP_TEXT)
    fprintf(out_file(), "%s:\n", title);
  else
    roff_heading(out_file(), title);
}

void gs_help_item(const char *name, const char *summary) {
  if (page.skipping) return;
  FILE *out = out_file();
  if (page.mode == GS_HELP_TEXT) {
    fprintf(out, "  %-12s ", name);
    put_indented(out, summary, "\n               ");
    return;
  }
  fputs(".TP\n.B ", out);
  roff_text(out, name);
  roff_text(out, summary);
}

/* The completion lines of one option: "KEY --name KIND [VALUES...]" and the
 * same for its short name. KIND is flag, choice (VALUES follow), path (a
 * file or directory name) or value (anything else). */
static void collect_option(FILE *out, const gs_option *o) {
  const char *kind = "value";
  if (o->kind == GS_OPT_FLAG)
    kind = "flag";
  else if (o->kind == GS_OPT_CHOICE && o->choices != NULL)
    kind = "choice";
  else if (o->metavar != NULL &&
           (strstr(o->metavar, "FILE") || strstr(o->metavar, "DIR") || strstr(o->metavar, "PATH")))
    kind = "path";
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1 && o->short_name == 0) break;
    if (pass == 0)
      fprintf(out, "%s --%s %s", page.key, o->name, kind);
    else
      fprintf(out, "%s -%c %s", page.key, o->short_name, kind);
    if (o->kind == GS_OPT_CHOICE && o->choices != NULL)
      for (int k = 0; o->choices[k] != NULL; k++) fprintf(out, " %s", o->choices[k]);
    fputc('\n', out);
  }
}

/* Writes a word inside a roff line: hyphens and backslashes escaped. */
static void roff_word(FILE *out, const char *word) {
  for (const char *p = word; *p; p++) {
    if (*p == '-')
      fputs("\\-", out);
    else if (*p == '\\')
      fputs("\\e", out);
    else
      fputc(*p, out);
  }
}

/* One option as a roff tagged paragraph: names bold, the value italic. */
static void roff_option(FILE *out, const gs_option *o) {
  char label[GS_OPTION_LABEL_MAX], text[GS_OPTION_HELP_MAX];
  gs_option_label(o, label, sizeof label);
  gs_option_help_text(o, text, sizeof text);
  // The label is "[-x, ]--name[ METAVAR]"; the value is what follows the name.
  const char *name_at = strstr(label, "--");
  const char *value = name_at != NULL ? strchr(name_at, ' ') : NULL;
  fputs(".TP\n", out);
  if (o->short_name != 0) fprintf(out, "\\fB\\-%c\\fR, ", o->short_name);
  fputs("\\fB\\-\\-", out);
  roff_word(out, o->name);
  fputs("\\fR", out);
  if (value != NULL) {
    fputs(" \\fI", out);
    roff_word(out, value + 1);
    fputs("\\fR", out);
  }
  fputc('\n', out);
  roff_text(out, text);
}

/* 1 for an option the page lists: named, and not a refusal. */
static int listed(const gs_option *o) { return o->name != NULL && o->kind != GS_OPT_REFUSED; }

void gs_help_options(const char *title, const gs_option *table) {
  if (table == NULL) return;
  FILE *out = out_file();
  if (page.mode == GS_HELP_COLLECT) {
    for (const gs_option *o = table; o->kind != GS_OPT_END; o++)
      if (listed(o)) collect_option(out, o);
    return;
  }
  char names[TEXT_MAX];
  size_t used = (size_t)snprintf(names, sizeof names, "%s", title);
  for (const gs_option *o = table; o->kind != GS_OPT_END && used < sizeof names; o++)
    if (listed(o)) used += (size_t)snprintf(names + used, sizeof names - used, " %s", o->name);
  if (seen_before('O', names)) return;
  block_start(BLOCK_OPTIONS);
  if (page.mode == GS_HELP_TEXT) {
    fprintf(out, "%s:\n", title);
    gs_options_help(out, table);
    return;
  }
  roff_heading(out, title);
  for (const gs_option *o = table; o->kind != GS_OPT_END; o++)
    if (listed(o)) roff_option(out, o);
}
