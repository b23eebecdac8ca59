/* Unit tests of core/options: every accepted spelling of an option, every
 * rejected one (unknown with a suggestion, repeated, flag with a value,
 * missing or bad value), options refused with a reason, "--", positional
 * arguments and the help layout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/options.h"

#define COMMAND "gpuscale run voxelize"

static const char *const modes[] = {"a", "b", "c", NULL};

/* Every kind of option, bound to one struct so each test starts clean. */
typedef struct {
  int verbose;
  uint64_t iters, points, bytes;
  double ratio;
  const char *out;
  int mode;
  gs_u64_list gpus;
  gs_double_list voxel;
  int iters_given, verbose_given, mode_given;
  gs_option table[10];
} fixture;

static void fixture_init(fixture *f) {
  memset(f, 0, sizeof *f);
  f->iters = 100;
  f->points = 1000000;
  f->bytes = 64ull << 20;
  f->ratio = 0.25;
  f->mode = 1;
  const gs_option table[] = {
      {.name = "verbose", .short_name = 'v', .kind = GS_OPT_FLAG, .target = &f->verbose,
       .help = "print more", .given = &f->verbose_given},
      {.name = "iters", .short_name = 'n', .kind = GS_OPT_COUNT, .target = &f->iters, .min = 1,
       .max = 1000000, .metavar = "N", .help = "timed iterations", .given = &f->iters_given},
      {.name = "points", .kind = GS_OPT_COUNT, .target = &f->points, .min = 1, .max = UINT64_MAX,
       .metavar = "N", .help = "points per cloud"},
      {.name = "bytes", .kind = GS_OPT_SIZE, .target = &f->bytes, .min = 1, .max = UINT64_MAX,
       .metavar = "SIZE", .help = "buffer size"},
      {.name = "ratio", .kind = GS_OPT_DOUBLE, .target = &f->ratio, .dmin = -1.0, .dmax = 1.0,
       .metavar = "X", .help = "a ratio"},
      {.name = "out", .short_name = 'o', .kind = GS_OPT_STRING, .target = &f->out,
       .metavar = "PATH", .help = "output file"},
      {.name = "mode", .kind = GS_OPT_CHOICE, .target = &f->mode, .choices = modes,
       .metavar = "MODE", .help = "the mode", .given = &f->mode_given},
      {.name = "gpus", .kind = GS_OPT_COUNT_LIST, .target = &f->gpus, .min = 0, .max = 63,
       .metavar = "LIST", .help = "devices"},
      {.name = "voxel", .kind = GS_OPT_DOUBLE_LIST, .target = &f->voxel, .dmin = 0.001,
       .dmax = 1.0, .help = "voxel size"},
      {.kind = GS_OPT_END},
  };
  memcpy(f->table, table, sizeof table);
}

/* Collects positional arguments; fails on "bad". */
typedef struct {
  int n;
  const char *args[8];
} collected;

static gs_status collect(void *ctx, const char *arg) {
  collected *c = ctx;
  if (strcmp(arg, "bad") == 0) return gs_error(GS_ERR_USAGE, "positional 'bad' refused");
  if (c->n < 8) c->args[c->n++] = arg;
  return GS_OK;
}

/* Parses argv (NULL-terminated list) against the fixture's table. */
static gs_status parse(fixture *f, char **argv, collected *c) {
  int argc = 0;
  while (argv[argc] != NULL) argc++;
  const gs_option *const tables[] = {f->table, NULL};
  gs_clear_error();
  return gs_options_parse(tables, COMMAND, argc, argv, c != NULL ? collect : NULL, c);
}

static void assert_error_has(const char *needle) {
  if (strstr(gs_last_error(), needle) == NULL)
    fail_msg("error '%s' does not contain '%s'", gs_last_error(), needle);
}

static void test_all_forms(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f);
  char *argv[] = {"--iters", "200",       "--bytes=1GiB", "-v",       "--ratio", "-0.5",
                  "-o",      "r.json",    "--mode=c",     "--gpus",   "0,1,3",   "--voxel=0.1,0.2",
                  "--points=10M", NULL};
  assert_int_equal(parse(&f, argv, NULL), GS_OK);
  assert_int_equal(f.iters, 200);
  assert_int_equal(f.iters_given, 1);
  assert_int_equal(f.bytes, 1ull << 30);
  assert_int_equal(f.verbose, 1);
  assert_int_equal(f.verbose_given, 1);
  assert_true(f.ratio == -0.5);
  assert_string_equal(f.out, "r.json");
  assert_int_equal(f.mode, 2);
  assert_int_equal(f.mode_given, 1);
  assert_int_equal(f.gpus.n, 3);
  assert_int_equal(f.gpus.v[2], 3);
  assert_int_equal(f.voxel.n, 2);
  assert_true(f.voxel.v[1] == 0.2);
  assert_int_equal(f.points, 10000000);
}

static void test_defaults_untouched(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f);
  char *argv[] = {"-n", "5", NULL};
  assert_int_equal(parse(&f, argv, NULL), GS_OK);
  assert_int_equal(f.iters, 5);
  assert_int_equal(f.iters_given, 1);
  assert_int_equal(f.verbose, 0);
  assert_int_equal(f.verbose_given, 0);
  assert_int_equal(f.mode_given, 0);
  assert_int_equal(f.mode, 1);
  assert_int_equal(f.points, 1000000);
  char *none[] = {NULL};
  assert_int_equal(parse(&f, none, NULL), GS_OK);
}

static void test_unknown_with_suggestion(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f);
  char *typo[] = {"--pionts", "5", NULL};
  assert_int_equal(parse(&f, typo, NULL), GS_ERR_USAGE);
  assert_string_equal(gs_last_error(),
                      COMMAND ": unknown option '--pionts'; did you mean '--points'?");
  char *typo_eq[] = {"--itres=5", NULL};
  assert_int_equal(parse(&f, typo_eq, NULL), GS_ERR_USAGE);
  assert_error_has("unknown option '--itres=5'; did you mean '--iters'?");
  char *single_dash[] = {"-points", "5", NULL};
  assert_int_equal(parse(&f, single_dash, NULL), GS_ERR_USAGE);
  assert_error_has("unknown option '-points'; did you mean '--points'?");
  char *far[] = {"--colour", NULL};
  assert_int_equal(parse(&f, far, NULL), GS_ERR_USAGE);
  assert_error_has(COMMAND ": unknown option '--colour'");
  assert_null(strstr(gs_last_error(), "did you mean"));
  char *short_unknown[] = {"-x", NULL};
  assert_int_equal(parse(&f, short_unknown, NULL), GS_ERR_USAGE);
  assert_error_has("unknown option '-x'");
  char *dashes[] = {"---iters", "5", NULL};
  assert_int_equal(parse(&f, dashes, NULL), GS_ERR_USAGE);
}

static void test_repeated(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f);
  char *twice[] = {"--iters", "5", "--iters=6", NULL};
  assert_int_equal(parse(&f, twice, NULL), GS_ERR_USAGE);
  assert_string_equal(gs_last_error(), COMMAND ": option --iters given twice");
  char *short_and_long[] = {"-n", "5", "--iters", "6", NULL};
  assert_int_equal(parse(&f, short_and_long, NULL), GS_ERR_USAGE);
  assert_error_has("option --iters given twice");
  char *flag_twice[] = {"-v", "--verbose", NULL};
  assert_int_equal(parse(&f, flag_twice, NULL), GS_ERR_USAGE);
  assert_error_has("option --verbose given twice");
}

static void test_flag_with_value(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f);
  char *argv[] = {"--verbose=1", NULL};
  assert_int_equal(parse(&f, argv, NULL), GS_ERR_USAGE);
  assert_string_equal(gs_last_error(),
                      COMMAND ": option --verbose takes no value (got '--verbose=1')");
  assert_int_equal(f.verbose, 0);
}

static void test_missing_value(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f);
  char *at_end[] = {"--iters", NULL};
  assert_int_equal(parse(&f, at_end, NULL), GS_ERR_USAGE);
  assert_string_equal(gs_last_error(), COMMAND ": option --iters needs a value (N)");
  char *next_option[] = {"-n", "--verbose", NULL};
  assert_int_equal(parse(&f, next_option, NULL), GS_ERR_USAGE);
  assert_error_has("option --iters needs a value");
  char *empty[] = {"--iters=", NULL};
  assert_int_equal(parse(&f, empty, NULL), GS_ERR_USAGE);
  assert_error_has("option --iters: empty value");
  char *empty_string[] = {"--out=", NULL};
  assert_int_equal(parse(&f, empty_string, NULL), GS_ERR_USAGE);
  assert_error_has("option --out: empty value");
}

static void test_bad_values(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f);
  char *junk[] = {"--iters", "12x", NULL};
  assert_int_equal(parse(&f, junk, NULL), GS_ERR_USAGE);
  assert_error_has("option --iters: '12x' is not a whole number");
  assert_int_equal(f.iters, 100);
  char *range[] = {"-n", "0", NULL};
  assert_int_equal(parse(&f, range, NULL), GS_ERR_USAGE);
  assert_error_has("option --iters: 0 is below the minimum 1");
  char *size[] = {"--bytes", "64Q", NULL};
  assert_int_equal(parse(&f, size, NULL), GS_ERR_USAGE);
  assert_error_has("option --bytes: '64Q' is not a size");
  char *dbl[] = {"--ratio=2", NULL};
  assert_int_equal(parse(&f, dbl, NULL), GS_ERR_USAGE);
  assert_error_has("option --ratio: 2 is above the maximum 1");
  char *choice[] = {"--mode", "z", NULL};
  assert_int_equal(parse(&f, choice, NULL), GS_ERR_USAGE);
  assert_error_has("option --mode: 'z' is not one of: a, b, c");
  assert_int_equal(f.mode, 1);
  char *list[] = {"--gpus", "0,,1", NULL};
  assert_int_equal(parse(&f, list, NULL), GS_ERR_USAGE);
  assert_error_has("option --gpus: ");
  char *dlist[] = {"--voxel", "0.1,0", NULL};
  assert_int_equal(parse(&f, dlist, NULL), GS_ERR_USAGE);
  assert_error_has("option --voxel: 0 is below the minimum 0.001");
}

static void test_positional_and_double_dash(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f);
  collected c = {0};
  char *argv[] = {"first", "--iters", "3", "-", "second", "--", "--iters", "-v", NULL};
  assert_int_equal(parse(&f, argv, &c), GS_OK);
  assert_int_equal(f.iters, 3);
  assert_int_equal(f.verbose, 0);
  assert_int_equal(c.n, 5);
  assert_string_equal(c.args[0], "first");
  assert_string_equal(c.args[1], "-");
  assert_string_equal(c.args[2], "second");
  assert_string_equal(c.args[3], "--iters");
  assert_string_equal(c.args[4], "-v");

  // a second "--" after the first is an ordinary argument
  fixture_init(&f);
  collected c2 = {0};
  char *twice[] = {"--", "--", NULL};
  assert_int_equal(parse(&f, twice, &c2), GS_OK);
  assert_int_equal(c2.n, 1);
  assert_string_equal(c2.args[0], "--");

  // the callback's error stops parsing
  fixture_init(&f);
  collected c3 = {0};
  char *bad[] = {"bad", "--iters", "7", NULL};
  assert_int_equal(parse(&f, bad, &c3), GS_ERR_USAGE);
  assert_error_has("positional 'bad' refused");
  assert_int_equal(f.iters, 100);
}

static void test_positional_without_callback(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f);
  char *argv[] = {"--iters", "3", "stray", NULL};
  assert_int_equal(parse(&f, argv, NULL), GS_ERR_USAGE);
  assert_error_has(COMMAND ": unexpected argument 'stray'");
  char *after_dashes[] = {"--", "x", NULL};
  assert_int_equal(parse(&f, after_dashes, NULL), GS_ERR_USAGE);
}

static void test_several_tables(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f);
  uint64_t seed = 1, shadow = 0;
  int seed_given = 0;
  const gs_option common[] = {
      {.name = "seed", .kind = GS_OPT_COUNT, .target = &seed, .min = 0, .max = UINT64_MAX,
       .help = "random seed", .given = &seed_given},
      {.name = "iters", .kind = GS_OPT_COUNT, .target = &shadow, .min = 0, .max = 10,
       .help = "never reached: the first table wins"},
      {.kind = GS_OPT_END},
  };
  const gs_option *const tables[] = {f.table, common, NULL};
  char *argv[] = {"--seed", "42", "--iters", "500", NULL};
  assert_int_equal(gs_options_parse(tables, COMMAND, 4, argv, NULL, NULL), GS_OK);
  assert_int_equal(seed, 42);
  assert_int_equal(seed_given, 1);
  assert_int_equal(f.iters, 500);
  assert_int_equal(shadow, 0);
  // suggestions come from every table
  char *typo[] = {"--sede", "1", NULL};
  assert_int_equal(gs_options_parse(tables, COMMAND, 2, typo, NULL, NULL), GS_ERR_USAGE);
  assert_error_has("did you mean '--seed'?");
  // no tables at all: every option is unknown
  const gs_option *const none[] = {NULL};
  assert_int_equal(gs_options_parse(none, COMMAND, 2, typo, NULL, NULL), GS_ERR_USAGE);
  assert_error_has("unknown option '--sede'");
}

static void test_refused(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f);
  // An option of another command: refused with its reason, in either
  // spelling, never listed by help and never suggested for a typo.
  const gs_option refused[] = {
      {.name = "runs", .kind = GS_OPT_REFUSED, .help = "each size is one batch"},
      {.name = "format", .short_name = 'f', .kind = GS_OPT_REFUSED,
       .help = "this command prints one table"},
      {.kind = GS_OPT_END},
  };
  const gs_option *const tables[] = {f.table, refused, NULL};
  char *runs[] = {"--runs", "3", NULL};
  assert_int_equal(gs_options_parse(tables, COMMAND, 2, runs, NULL, NULL), GS_ERR_USAGE);
  assert_string_equal(gs_last_error(), "option --runs does not apply to " COMMAND
                                       ": each size is one batch");
  char *f_short[] = {"-n", "5", "-f", "json", NULL};
  assert_int_equal(gs_options_parse(tables, COMMAND, 4, f_short, NULL, NULL), GS_ERR_USAGE);
  assert_string_equal(gs_last_error(), "option -f/--format does not apply to " COMMAND
                                       ": this command prints one table");
  assert_int_equal(f.iters, 5);
  char *typo[] = {"--fromat", "json", NULL};
  assert_int_equal(gs_options_parse(tables, COMMAND, 2, typo, NULL, NULL), GS_ERR_USAGE);
  assert_error_has("unknown option '--fromat' (see --help)");
  FILE *fp = tmpfile();
  assert_non_null(fp);
  gs_options_help(fp, refused);
  assert_int_equal(ftell(fp), 0);
  fclose(fp);
}

static void test_help(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f);
  FILE *fp = tmpfile();
  assert_non_null(fp);
  gs_options_help(fp, f.table);
  rewind(fp);
  char line[512];
  int lines = 0;
  long help_column = -1;
  int saw_iters = 0, saw_choices = 0, saw_out = 0;
  while (fgets(line, sizeof line, fp) != NULL) {
    lines++;
    assert_true(strncmp(line, "  ", 2) == 0);
    // the help text of every line starts in the same column
    const char *helps[] = {"print more", "timed iterations", "points per cloud", "buffer size",
                           "a ratio", "output file", "the mode", "devices", "voxel size"};
    const char *at = strstr(line, helps[lines - 1]);
    assert_non_null(at);
    if (help_column < 0) help_column = at - line;
    assert_int_equal(at - line, help_column);
    if (strstr(line, "  -n, --iters N ") == line) saw_iters = 1;
    if (strstr(line, "  -o, --out PATH ") == line) saw_out = 1;
    if (strstr(line, "the mode (one of: a, b, c) (default b)")) saw_choices = 1;
  }
  fclose(fp);
  assert_int_equal(lines, 9);
  assert_true(saw_iters);
  assert_true(saw_out);
  assert_true(saw_choices);
}

static void test_help_defaults(void **state) {
  (void)state;
  fixture f;
  fixture_init(&f);
  FILE *fp = tmpfile();
  assert_non_null(fp);
  gs_options_help(fp, f.table);
  long size = ftell(fp);
  assert_true(size > 0);
  rewind(fp);
  char text[4096] = "";
  size_t got = fread(text, 1, sizeof text - 1, fp);
  text[got] = '\0';
  fclose(fp);
  assert_non_null(strstr(text, "    --points N"));
  assert_non_null(strstr(text, "points per cloud (default 1M)"));
  assert_non_null(strstr(text, "buffer size (default 64M)"));
  assert_non_null(strstr(text, "timed iterations (default 100)"));
  assert_non_null(strstr(text, "a ratio (default 0.25)"));
  assert_non_null(strstr(text, "print more\n"));
  assert_non_null(strstr(text, "output file\n"));
}

/* A repeatable option collects every value in order; its help shows no
 * default; an empty value and too many values are usage errors. */
static void test_string_list(void **state) {
  (void)state;
  gs_string_list faults = {0};
  const gs_option table[] = {
      {.name = "inject", .kind = GS_OPT_STRING_LIST, .target = &faults, .help = "repeatable"},
      {.name = NULL, .kind = GS_OPT_END},
  };
  const gs_option *tables[] = {table, NULL};
  char *argv[] = {"--inject", "a:rank=1", "--inject=b", "--inject", "c"};
  assert_int_equal(gs_options_parse(tables, COMMAND, 5, argv, NULL, NULL), GS_OK);
  assert_int_equal(faults.n, 3);
  assert_string_equal(faults.v[0], "a:rank=1");
  assert_string_equal(faults.v[1], "b");
  assert_string_equal(faults.v[2], "c");
  char *empty[] = {"--inject="};
  assert_int_equal(gs_options_parse(tables, COMMAND, 1, empty, NULL, NULL), GS_ERR_USAGE);
  assert_non_null(strstr(gs_last_error(), "empty value"));
  faults.n = GS_LIST_MAX;
  assert_int_equal(gs_options_parse(tables, COMMAND, 2, argv, NULL, NULL), GS_ERR_USAGE);
  assert_non_null(strstr(gs_last_error(), "more than 64 times"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_forms),
      cmocka_unit_test(test_defaults_untouched),
      cmocka_unit_test(test_unknown_with_suggestion),
      cmocka_unit_test(test_repeated),
      cmocka_unit_test(test_flag_with_value),
      cmocka_unit_test(test_missing_value),
      cmocka_unit_test(test_bad_values),
      cmocka_unit_test(test_positional_and_double_dash),
      cmocka_unit_test(test_positional_without_callback),
      cmocka_unit_test(test_several_tables),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_help),
      cmocka_unit_test(test_help_defaults),
      cmocka_unit_test(test_string_list),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
