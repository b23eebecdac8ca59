/* exec's output reader (measure/exec_output): units, --metric patterns,
 * protocol lines per step and per run, malformed lines, a step's "items",
 * lines longer than the reader's buffer and split across its reads, and the
 * tail of stderr. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "measure/exec_output.h"

/* An unnamed temporary file holding `text`. */
static int file_with(const char *text) {
  char path[] = "/tmp/test-exec-output-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  size_t n = strlen(text);
  assert_int_equal(write(fd, text, n), (ssize_t)n);
  return fd;
}

static void scan_text(gs_exec_scan *scan, const char *text) {
  int fd = file_with(text);
  assert_int_equal(gs_exec_scan_fd(scan, fd, "stdout"), GS_OK);
  close(fd);
}

static void test_units(void **state) {
  (void)state;
  double s = 0.0;
  char item[64] = "";
  assert_int_equal(gs_exec_unit_classify("ms", &s, item, sizeof item), GS_EXEC_UNIT_TIME);
  assert_true(s == 1e-3);
  assert_int_equal(gs_exec_unit_classify("s", &s, NULL, 0), GS_EXEC_UNIT_TIME);
  assert_true(s == 1.0);
  assert_int_equal(gs_exec_unit_classify("ns", &s, NULL, 0), GS_EXEC_UNIT_TIME);
  assert_true(s == 1e-9);
  assert_int_equal(gs_exec_unit_classify("samples/s", NULL, item, sizeof item), GS_EXEC_UNIT_RATE);
  assert_string_equal(item, "samples");
  assert_int_equal(gs_exec_unit_classify("tokens/sec", NULL, item, sizeof item), GS_EXEC_UNIT_RATE);
  assert_string_equal(item, "tokens");
  assert_int_equal(gs_exec_unit_classify("TFLOPS", NULL, item, sizeof item), GS_EXEC_UNIT_OTHER);
  assert_int_equal(gs_exec_unit_classify("", NULL, item, sizeof item), GS_EXEC_UNIT_OTHER);
  assert_int_equal(gs_exec_unit_classify("/s", NULL, item, sizeof item), GS_EXEC_UNIT_OTHER);
}

static void test_patterns(void **state) {
  (void)state;
  gs_exec_pattern p;
  int is_pattern = -1;
  assert_int_equal(gs_exec_pattern_parse("loss", &p, &is_pattern), GS_OK);
  assert_int_equal(is_pattern, 0);
  assert_string_equal(p.name, "loss");
  assert_int_equal(gs_exec_pattern_parse("tput=([0-9.]+) img/s", &p, &is_pattern), GS_OK);
  assert_int_equal(is_pattern, 1);
  assert_string_equal(p.name, "tput");
  regfree(&p.regex);
  assert_int_equal(gs_exec_pattern_parse("tput=img/s", &p, &is_pattern), GS_ERR_USAGE);
  assert_int_equal(gs_exec_pattern_parse("=([0-9]+)", &p, &is_pattern), GS_ERR_USAGE);
  assert_int_equal(gs_exec_pattern_parse("a b=([0-9]+)", &p, &is_pattern), GS_ERR_USAGE);
  assert_int_equal(gs_exec_pattern_parse("a=([0-9]+", &p, &is_pattern), GS_ERR_USAGE);
  assert_int_equal(gs_exec_pattern_parse("a=", &p, &is_pattern), GS_ERR_USAGE);
}

static void test_protocol_per_step_and_auto_figure(void **state) {
  (void)state;
  gs_exec_scan scan = {0};
  scan_text(&scan,
            "hello\n"
            "{\"other\": 1}\n"
            "  {\"metric\": \"tput\", \"value\": 10, \"unit\": \"samples/s\", \"step\": 0}\n"
            "{\"metric\": \"loss\", \"value\": 2.5}\r\n"
            "{\"metric\": \"tput\", \"value\": 30, \"unit\": \"samples/s\", \"step\": 1}\n"
            "{\"metric\": \"tput\", \"value\": 20, \"unit\": \"samples/s\", \"step\": 2}");
  assert_string_equal(scan.error, "");
  assert_string_equal(scan.figure, "tput");
  assert_int_equal(scan.figure_auto, 1);
  assert_int_equal(scan.lines, 6);
  assert_int_equal(scan.protocol_lines, 4);
  const gs_exec_metric *t = gs_exec_scan_metric(&scan, "tput");
  assert_non_null(t);
  assert_int_equal(t->steps.n, 3);
  assert_true(t->steps.v[0] == 10 && t->steps.v[1] == 30 && t->steps.v[2] == 20);
  assert_true(t->min == 10 && t->max == 30 && t->last == 20 && t->sum == 60);
  assert_string_equal(t->unit, "samples/s");
  const gs_exec_metric *loss = gs_exec_scan_metric(&scan, "loss");
  assert_non_null(loss);
  assert_int_equal(loss->count, 1);
  assert_int_equal(loss->steps.n, 0); /* not the figure: no samples kept */
  assert_null(gs_exec_scan_metric(&scan, "missing"));
  gs_exec_scan_free(&scan);
}

static void test_values_per_rank(void **state) {
  (void)state;
  gs_exec_scan scan = {.figure = "t"};
  scan_text(&scan,
            "{\"metric\": \"t\", \"value\": 1, \"step\": 0, \"rank\": 1}\n"
            "{\"metric\": \"t\", \"value\": 2, \"step\": 0, \"rank\": 0}\n"
            "{\"metric\": \"t\", \"value\": 3, \"step\": 1, \"rank\": 1}\n"
            "{\"metric\": \"u\", \"value\": 3, \"rank\": 5}\n");
  const gs_exec_metric *t = gs_exec_scan_metric(&scan, "t");
  assert_non_null(t);
  assert_non_null(t->ranks);
  assert_int_equal(t->ranks_seen, 2);
  assert_int_equal(t->ranks[0].n, 1);
  assert_int_equal(t->ranks[1].n, 2);
  assert_true(t->ranks[1].v[0] == 1 && t->ranks[1].v[1] == 3);
  assert_int_equal(t->steps.n, 0);
  assert_null(gs_exec_scan_metric(&scan, "u")->ranks); /* not the figure */
  gs_exec_scan_free(&scan);
}

static void test_run_value_without_step(void **state) {
  (void)state;
  gs_exec_scan scan = {.figure = "tput"};
  scan_text(&scan, "{\"metric\": \"tput\", \"value\": 5}\n{\"metric\": \"tput\", \"value\": 7}\n");
  const gs_exec_metric *t = gs_exec_scan_metric(&scan, "tput");
  assert_non_null(t);
  assert_int_equal(t->steps.n, 0);
  assert_int_equal(t->has_run_value, 1);
  assert_true(t->run_value == 7); /* the last one */
  assert_int_equal(scan.figure_auto, 0);
  gs_exec_scan_free(&scan);
}

static void test_malformed_protocol_lines(void **state) {
  (void)state;
  static const struct {
    const char *text, *error;
  } cases[] = {
      {"x\n{\"metric\": \"a\", \"value\": \"fast\"}\n", "stdout line 2: protocol: \"value\" of a is not a finite number"},
      // What Python's json.dumps prints for nan and inf.
      {"{\"metric\": \"a\", \"value\": NaN}\n", "stdout line 1: protocol: \"value\" is not a finite number (NaN"},
      {"{\"metric\": \"a\", \"value\": -Infinity, \"step\": 2}\n", "\"value\" is not a finite number"},
      {"{\"metric\": \"a\", \"value\": 1, \"step\": -1}\n", "\"step\" of a must be a whole number"},
      {"{\"metric\": \"a\", \"value\": 1, \"step\": 1.5}\n", "\"step\" of a must be a whole number"},
      {"{\"metric\": 3, \"value\": 1}\n", "\"metric\" must be a name"},
      {"{\"metric\": \"a\", \"value\": 1, \"unit\": 5}\n", "\"unit\" of a must be a short string"},
      {"{\"metric\": \"a\", \"value\": 1, \"higher_is_better\": 1}\n", "must be true or false"},
      {"{\"metric\": \"a\", \"value\": 1, \"rank\": 64}\n", "\"rank\" of a must be a whole number from 0 to 63"},
      {"{\"metric\": \"a\", \"value\": 1, \"unit\": \"s\"}\n{\"metric\": \"a\", \"value\": 1, \"unit\": \"ms\"}\n",
       "line 2: protocol: a changed its \"unit\""},
      {"{\"metric\": \"a\", \"value\": 1, \"items\": 0}\n", "\"items\" of a must be a whole number from 1"},
      {"{\"metric\": \"a\", \"value\": 1, \"items\": 2.5}\n", "\"items\" of a must be a whole number from 1"},
      {"{\"metric\": \"a\", \"value\": 1, \"items\": 1e300}\n", "\"items\" of a must be a whole number from 1"},
      {"{\"metric\": \"a\", \"value\": 1, \"items\": \"64\"}\n", "\"items\" of a must be a whole number from 1"},
      {"{\"metric\": \"a\", \"value\": 1, \"item_unit\": \"samples\"}\n", "\"item_unit\" of a needs \"items\""},
      {"{\"metric\": \"a\", \"value\": 1, \"items\": 8, \"item_unit\": \"\"}\n", "\"item_unit\" of a must be a name"},
      {"{\"metric\": \"a\", \"value\": 1, \"items\": 8, \"item_unit\": \"x/s\"}\n", "\"item_unit\" of a must be a name"},
      {"{\"metric\": \"a\", \"value\": 1, \"items\": 8, \"unit\": \"img/s\"}\n", "\"items\" of a applies to a time"},
      {"{\"metric\": \"a\", \"value\": 1, \"items\": 8}\n{\"metric\": \"a\", \"value\": 1, \"items\": 9}\n",
       "line 2: protocol: a changed its \"items\""},
      {"{\"metric\": \"a\", \"value\": 1, \"items\": 8}\n{\"metric\": \"a\", \"value\": 1}\n",
       "line 2: protocol: a changed its \"items\""},
      {"{\"metric\": \"a\", \"value\": 1, \"items\": 8, \"item_unit\": \"img\"}\n"
       "{\"metric\": \"a\", \"value\": 1, \"items\": 8, \"item_unit\": \"px\"}\n",
       "line 2: protocol: a changed its \"items\" or \"item_unit\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gs_exec_scan scan = {0};
    scan_text(&scan, cases[i].text);
    if (!strstr(scan.error, cases[i].error)) fail_msg("case %zu: error '%s' lacks '%s'", i, scan.error, cases[i].error);
    gs_exec_scan_free(&scan);
  }
  /* A line that is not valid JSON is not a protocol line. */
  gs_exec_scan scan = {0};
  scan_text(&scan, "{\"metric\": \"a\", \"value\": 1\n");
  assert_string_equal(scan.error, "");
  assert_int_equal(scan.protocol_lines, 0);
  gs_exec_scan_free(&scan);
}

/* "items" and "item_unit" of a time: kept with the metric, the same on
 * every rank's and step's line. */
static void test_items(void **state) {
  (void)state;
  gs_exec_scan scan = {0};
  scan_text(&scan,
            "{\"metric\": \"t\", \"value\": 20, \"unit\": \"ms\", \"step\": 0, \"rank\": 0, "
            "\"items\": 4096, \"item_unit\": \"samples\"}\n"
            "{\"metric\": \"t\", \"value\": 21, \"unit\": \"ms\", \"step\": 0, \"rank\": 1, "
            "\"items\": 4096, \"item_unit\": \"samples\"}\n"
            "{\"metric\": \"r\", \"value\": 9, \"unit\": \"samples/s\"}\n"
            "{\"metric\": \"u\", \"value\": 1, \"items\": 9007199254740992}\n");
  assert_string_equal(scan.error, "");
  const gs_exec_metric *t = gs_exec_scan_metric(&scan, "t");
  assert_non_null(t);
  assert_true(t->items == 4096.0);
  assert_string_equal(t->item_unit, "samples");
  assert_int_equal(t->ranks_seen, 2);
  assert_true(gs_exec_scan_metric(&scan, "r")->items == 0.0);
  assert_true(gs_exec_scan_metric(&scan, "u")->items == 9007199254740992.0);
  assert_string_equal(gs_exec_scan_metric(&scan, "u")->item_unit, "");
  gs_exec_scan_free(&scan);
  assert_true(gs_exec_item_unit_valid("samples"));
  assert_true(gs_exec_item_unit_valid("img.px_2-x"));
  assert_false(gs_exec_item_unit_valid(""));
  assert_false(gs_exec_item_unit_valid("a b"));
  assert_false(gs_exec_item_unit_valid("img/s"));
  assert_false(gs_exec_item_unit_valid("abcdefghijklmnopqrstuvwxyz012345")); /* 32 */
}

static void test_patterns_in_a_scan(void **state) {
  (void)state;
  gs_exec_pattern p[2];
  int is_pattern = 0;
  assert_int_equal(gs_exec_pattern_parse("tput=([0-9.]+) img/s", &p[0], &is_pattern), GS_OK);
  assert_int_equal(gs_exec_pattern_parse("loss=loss ([^ ]+)", &p[1], &is_pattern), GS_OK);
  gs_exec_scan scan = {.patterns = p, .n_patterns = 2, .figure = "tput"};
  scan_text(&scan, "iter 1: 100 img/s loss 0.5\niter 2: 300 img/s\nnothing\n");
  const gs_exec_metric *t = gs_exec_scan_metric(&scan, "tput");
  assert_non_null(t);
  assert_int_equal(t->from_pattern, 1);
  assert_int_equal(t->steps.n, 2);
  assert_true(t->steps.v[0] == 100 && t->steps.v[1] == 300);
  assert_int_equal(gs_exec_scan_metric(&scan, "loss")->count, 1);
  assert_string_equal(scan.error, "");
  gs_exec_scan_free(&scan);
  gs_exec_scan bad = {.patterns = p, .n_patterns = 2, .figure = "tput"};
  scan_text(&bad, "loss nan-ish\n");
  assert_non_null(strstr(bad.error, "line 1: loss: 'nan-ish' is not a number"));
  gs_exec_scan_free(&bad);
  regfree(&p[0].regex);
  regfree(&p[1].regex);
}

/* Lines across the reader's 64 KiB reads are whole; a line longer than
 * GS_EXEC_LINE_MAX is cut and the next line is read as it is. */
static void test_long_lines(void **state) {
  (void)state;
  const size_t filler = 70000;
  const char *tail = "{\"metric\": \"t\", \"value\": 4, \"unit\": \"s\", \"step\": 0}\n";
  size_t n = filler + 1 + 2 * strlen(tail) + 65536;
  char *text = malloc(n + 1);
  assert_non_null(text);
  size_t at = 0;
  memset(text, 'x', filler);
  at = filler;
  text[at++] = '\n';
  /* pad so that the protocol line straddles the second 64 KiB boundary */
  size_t pad = 2 * 65536 - at - 10;
  memset(text + at, 'y', pad);
  at += pad;
  text[at++] = '\n';
  strcpy(text + at, tail);
  gs_exec_scan scan = {0};
  scan_text(&scan, text);
  free(text);
  assert_string_equal(scan.error, "");
  assert_int_equal(scan.lines, 3);
  const gs_exec_metric *t = gs_exec_scan_metric(&scan, "t");
  assert_non_null(t);
  assert_int_equal(t->steps.n, 1);
  gs_exec_scan_free(&scan);
}

static void test_tail(void **state) {
  (void)state;
  char out[64];
  int fd = file_with("a\nb\nc\nd\n");
  gs_exec_tail(fd, 2, out, sizeof out);
  assert_string_equal(out, "c\nd");
  close(fd);
  fd = file_with("");
  gs_exec_tail(fd, 2, out, sizeof out);
  assert_string_equal(out, "");
  close(fd);
  /* A window that starts inside a line leaves that cut line out. */
  char big[200];
  memset(big, 'z', 150);
  strcpy(big + 150, "\nlast line\n");
  fd = file_with(big);
  gs_exec_tail(fd, 20, out, sizeof out);
  assert_string_equal(out, "last line");
  close(fd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_units),
      cmocka_unit_test(test_patterns),
      cmocka_unit_test(test_protocol_per_step_and_auto_figure),
      cmocka_unit_test(test_run_value_without_step),
      cmocka_unit_test(test_values_per_rank),
      cmocka_unit_test(test_malformed_protocol_lines),
      cmocka_unit_test(test_items),
      cmocka_unit_test(test_patterns_in_a_scan),
      cmocka_unit_test(test_long_lines),
      cmocka_unit_test(test_tail),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
