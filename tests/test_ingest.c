/* Unit tests of the ingest parsers (src/ingest/): LoadGen summary and
 * detail logs, nccl-tests text and JSON, the text helpers they share, and
 * the mapping into result documents. Inputs are small inline buffers;
 * every damaged input must fail with an error naming the source and line. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/result.h"
#include "ingest/ingest.h"
#include "ingest/text.h"

/* The last recorded error contains `text`. */
static void assert_error_has(const char *text) {
  const char *e = gs_last_error();
  if (!strstr(e, text)) fail_msg("error \"%s\" lacks \"%s\"", e, text);
}

/* ---- text helpers ----------------------------------------------------- */

static void test_lines_and_numbers(void **state) {
  (void)state;
  const char buf[] = "a\r\nbb\n\nlast";
  gs_line_cursor c;
  gs_lines_init(&c, buf, strlen(buf));
  assert_true(gs_lines_next(&c) && gs_span_eq(c.line, "a") && c.line_no == 1);
  assert_true(gs_lines_next(&c) && gs_span_eq(c.line, "bb"));
  assert_true(gs_lines_next(&c) && c.line.n == 0);
  assert_true(gs_lines_next(&c) && gs_span_eq(c.line, "last") && c.line_no == 4);
  assert_false(gs_lines_next(&c));

  double d;
  uint64_t u;
  int64_t i;
  assert_true(gs_span_to_double((gs_span){"12.5e3", 6}, &d) && d == 12500.0);
  assert_false(gs_span_to_double((gs_span){"12.5x", 5}, &d));
  assert_false(gs_span_to_double((gs_span){"nan", 3}, &d));
  assert_false(gs_span_to_double((gs_span){"inf", 3}, &d));
  assert_false(gs_span_to_double((gs_span){"1e999", 5}, &d));
  assert_false(gs_span_to_double((gs_span){"", 0}, &d));
  assert_false(gs_span_to_double((gs_span){"1\0" "2", 3}, &d));
  assert_true(gs_span_to_u64((gs_span){"18446744073709551615", 20}, &u) && u == UINT64_MAX);
  assert_false(gs_span_to_u64((gs_span){"18446744073709551616", 20}, &u));
  assert_false(gs_span_to_u64((gs_span){"-1", 2}, &u));
  assert_true(gs_span_to_i64((gs_span){"-1", 2}, &i) && i == -1);
  assert_false(gs_span_to_i64((gs_span){"+1", 2}, &i));

  assert_true(gs_scale_decimal(17.13, 9) == 17130000000.0);
  assert_true(gs_scale_decimal(11.21, -6) == 1.121e-05);
  assert_true(gs_scale_decimal(570050322010.0, -9) == 570.05032201);
  assert_true(isnan(gs_scale_decimal(NAN, 3)));

  size_t line, col;
  gs_text_position("ab\ncd\n", 6, 4, &line, &col);
  assert_int_equal(line, 2);
  assert_int_equal(col, 2);
  char out[16];
  assert_string_equal(gs_span_copy((gs_span){"a\x01" "b", 3}, out, sizeof out, 0), "a?b");
}

/* ---- LoadGen summary ---------------------------------------------------- */

static const char summary_ok[] =
    "================================================\n"
    "MLPerf Results Summary\n"
    "================================================\n"
    "SUT name : sut-a\n"
    "Scenario : Offline\n"
    "Mode     : PerformanceOnly\n"
    "Samples per second: 123.5\n"
    "Result is : VALID\n"
    "  Min duration satisfied : Yes\n"
    "  Min queries satisfied : Skipped\n"
    "  Early stopping satisfied: NO\n"
    "\n"
    "================================================\n"
    "Additional Stats\n"
    "================================================\n"
    "Min latency (ns)                : 1000\n"
    "Max latency (ns)                : 9000\n"
    "Mean latency (ns)               : 5000\n"
    "50.00 percentile latency (ns)   : 4000\n"
    "99.90 percentile latency (ns)   : 8900\n"
    "\n"
    "================================================\n"
    "Test Parameters Used\n"
    "================================================\n"
    "samples_per_query : 1000\n"
    "target_latency (ns): 0\n"
    "\n"
    "No warnings encountered during test.\n";

static gs_status parse_summary(const char *text, gs_mlperf_log *log) {
  return gs_mlperf_parse_summary(text, strlen(text), "sum.txt", log);
}

/* summary_ok with line `n` (from 1) replaced by `line` (NULL: removed). */
static char *summary_with(size_t n, const char *line) {
  size_t size = strlen(summary_ok) + (line ? strlen(line) : 0) + 2;
  char *out = malloc(size);
  assert_non_null(out);
  out[0] = '\0';
  const char *p = summary_ok;
  for (size_t k = 1; *p; k++) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
    if (k != n)
      strncat(out, p, len);
    else if (line) {
      strcat(out, line);
      strcat(out, "\n");
    }
    p += len;
  }
  return out;
}

static void test_summary_fields(void **state) {
  (void)state;
  gs_mlperf_log log;
  assert_int_equal(parse_summary(summary_ok, &log), GS_OK);
  assert_string_equal(log.sut_name, "sut-a");
  assert_int_equal(log.scenario, GS_MLPERF_OFFLINE);
  assert_string_equal(log.mode, "PerformanceOnly");
  assert_int_equal(log.valid, 1);
  assert_int_equal(log.min_duration_met, 1);
  assert_int_equal(log.min_queries_met, -1);
  assert_int_equal(log.early_stopping_met, 0);
  assert_true(log.samples_per_second == 123.5);
  assert_true(gs_mlperf_throughput(&log) == 123.5);
  assert_true(log.latency.min_ns == 1000 && log.latency.max_ns == 9000 && log.latency.mean_ns == 5000);
  assert_int_equal(log.latency.n_percentiles, 2);
  assert_true(log.latency.percentile[1] == 99.9 && log.latency.value_ns[1] == 8900);
  assert_true(isnan(log.tokens_per_second));
  assert_string_equal(gs_mlperf_scenario_name(log.scenario), "offline");
}

static void test_summary_damaged(void **state) {
  (void)state;
  gs_mlperf_log log;
  static const struct {
    size_t line;
    const char *replacement;
    const char *error;
  } cases[] = {
      {7, "Samples per second: 12x", "sum.txt:7: 'Samples per second' has the value '12x'"},
      {7, "Samples per second: -4", "expected a non-negative number"},
      {17, "Max latency (ms)                : 9", "sum.txt:17: 'Max latency (ms)' is in 'ms'"},
      {19, "50.00 percentile latency (s)   : 4", "sum.txt:19: '50.00 percentile latency (s)'"},
      {5, "Scenario : Batch", "sum.txt:5: 'Scenario' has the value 'Batch'; expected SingleStream"},
      {6, "Mode     : Fast", "sum.txt:6: 'Mode' has the value 'Fast'"},
      {8, "Result is : MAYBE", "sum.txt:8: 'Result is' has the value 'MAYBE'"},
      {9, "  Min duration satisfied : Perhaps", "sum.txt:9: 'Min duration satisfied'"},
      {12, "garbage", "sum.txt:12: unexpected line 'garbage'"},
      {8, NULL, "sum.txt: no 'Result is : VALID|INVALID' line; the file ends at line 27"},
      {5, NULL, "no 'Scenario : ...' line"},
      {6, NULL, "no 'Mode : ...' line"},
      {17, NULL, "no 'Min/Max/Mean latency (ns)' lines"},
      {7, NULL, "no 'Samples per second' line for the Offline scenario"},
      {2, NULL, "sum.txt:3: 'SUT name : sut-a' before the heading"},
      {4, "Scenario : Server", "sum.txt:5: 'Scenario' has the value 'Offline'; expected the scenario given before"},
      {4, "SUT name : other\nSUT name : sut-b", "sum.txt:5: 'SUT name' given twice"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *text = summary_with(cases[i].line, cases[i].replacement);
    gs_status st = parse_summary(text, &log);
    if (st != GS_ERR_FORMAT) fail_msg("case %zu parsed", i);
    assert_error_has(cases[i].error);
    free(text);
  }
  // Truncated anywhere: never accepted, never a crash.
  for (size_t cut = 0; cut < 380; cut += 7) {
    gs_status st = gs_mlperf_parse_summary(summary_ok, cut, "sum.txt", &log);
    assert_int_equal(st, GS_ERR_FORMAT);
    assert_error_has("sum.txt");
  }
  assert_int_equal(gs_mlperf_parse_summary("", 0, "empty.txt", &log), GS_ERR_FORMAT);
  assert_error_has("empty.txt: no 'MLPerf Results Summary' heading in 0 lines");
}

/* ---- LoadGen detail ----------------------------------------------------- */

#define MLLOG(key, value)                                                                   \
  ":::MLLOG {\"key\": \"" key "\", \"value\": " value ", \"time_ms\": 1.5, \"namespace\": " \
  "\"mlperf::logging\", \"event_type\": \"POINT_IN_TIME\", \"metadata\": {\"is_error\": "  \
  "false, \"is_warning\": false, \"file\": \"a.cc\", \"line_no\": 1, \"pid\": 1, \"tid\": 1}}\n"

static void test_detail_records(void **state) {
  (void)state;
  const char text[] = MLLOG("effective_scenario", "\"MultiStream\"")
      "Log Contention Counters:\n"
      MLLOG("effective_test_mode", "\"PerformanceOnly\"")
      MLLOG("result_validity", "\"INVALID\"")
      MLLOG("result_invalid_reason", "\"Reduce the QPS. \"")
      MLLOG("result_min_duration_met", "false")
      MLLOG("result_query_count", "270336")
      MLLOG("result_min_latency_ns", "100")
      MLLOG("result_min_query_latency_ns", "700")
      MLLOG("result_max_query_latency_ns", "900")
      MLLOG("result_mean_query_latency_ns", "800")
      MLLOG("result_99.00_percentile_per_query_latency_ns", "880")
      MLLOG("result_first_token_90.00_percentile_latency_ns", "55")
      MLLOG("result_time_per_output_token_99.00_percentile_ns", "12")
      ":::MLLOG {\"key\": \"error_runtime\", \"value\": \"SUT stalled\", \"time_ms\": 2, "
      "\"metadata\": {\"is_error\": true}}\n";
  gs_mlperf_log log;
  assert_int_equal(gs_mlperf_parse_detail(text, strlen(text), "d.txt", &log), GS_OK);
  assert_int_equal(log.scenario, GS_MLPERF_MULTI_STREAM);
  assert_int_equal(log.valid, 0);
  assert_string_equal(log.invalid_reason, "Reduce the QPS.");
  assert_int_equal(log.min_duration_met, 0);
  assert_int_equal(log.query_count, 270336);
  // MultiStream: the headline statistics are the per-query ones.
  assert_true(log.latency.min_ns == 700 && log.latency.mean_ns == 800);
  assert_int_equal(log.latency.n_percentiles, 1);
  assert_true(log.latency.percentile[0] == 99.0 && log.latency.value_ns[0] == 880);
  assert_true(log.first_token.percentile[0] == 90.0 && log.first_token.value_ns[0] == 55);
  assert_true(log.time_per_output_token.value_ns[0] == 12);
  assert_int_equal(log.n_errors, 1);
  assert_string_equal(log.first_error, "error_runtime: SUT stalled");
  assert_true(isnan(gs_mlperf_throughput(&log)));
}

static void test_detail_damaged(void **state) {
  (void)state;
  static const struct {
    const char *text;
    const char *error;
  } cases[] = {
      {":::MLLOG {\"key\": \"a\", \"value\": 1, \"time_ms\": 1", "d.txt:1: invalid JSON after ':::MLLOG'"},
      {":::MLLOG {\"key\": \"a\", \"value\": 1, \"time_ms\": 1", "does not end with '}'"},
      {"x\n:::MLLOG {\"value\": 1, \"time_ms\": 1}", "d.txt:2: ':::MLLOG' record without a string \"key\""},
      {":::MLLOG {\"key\": \"a\", \"time_ms\": 1}", "d.txt:1: ':::MLLOG' record \"a\" without a \"value\""},
      {":::MLLOG {\"key\": \"a\", \"value\": 1}", "record \"a\" without a numeric \"time_ms\""},
      {":::MLLOG [1, 2]", "is followed by an array, expected a JSON object"},
      {":::MLLOG {\"key\": \"a\", \"value\": 1, \"time_ms\": 1} trailing", "text after the JSON record"},
      {":::MLLOG {\"key\": \"result_max_latency_ns\", \"value\": \"9\", \"time_ms\": 1}",
       "d.txt:1: \"result_max_latency_ns\" has a string value; expected a non-negative number"},
      {":::MLLOG {\"key\": \"result_min_duration_met\", \"value\": 1, \"time_ms\": 1}",
       "\"result_min_duration_met\" has a number value; expected true or false"},
      {":::MLLOG {\"key\": \"result_validity\", \"value\": \"OK\", \"time_ms\": 1}",
       "\"result_validity\" is \"OK\"; expected VALID or INVALID"},
      {":::MLLOG {\"key\": \"effective_scenario\", \"value\": \"Batch\", \"time_ms\": 1}",
       "\"effective_scenario\" is \"Batch\""},
      {":::MLLOG {\"key\": \"result_query_count\", \"value\": 1.5, \"time_ms\": 1}",
       "expected a whole number of queries"},
      {"plain text only\n", "d.txt: no ':::MLLOG' record in 1 lines"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gs_mlperf_log log;
    gs_status st = gs_mlperf_parse_detail(cases[i].text, strlen(cases[i].text), "d.txt", &log);
    if (st != GS_ERR_FORMAT) fail_msg("case %zu parsed", i);
    assert_error_has(cases[i].error);
  }
}

static void test_merge(void **state) {
  (void)state;
  gs_mlperf_log summary, detail;
  assert_int_equal(parse_summary(summary_ok, &summary), GS_OK);
  const char text[] = MLLOG("effective_scenario", "\"Offline\"")
      MLLOG("result_samples_per_second", "123.4987") MLLOG("loadgen_version", "\"5.0\"");
  assert_int_equal(gs_mlperf_parse_detail(text, strlen(text), "d.txt", &detail), GS_OK);
  assert_int_equal(gs_mlperf_merge(&summary, &detail, "s.txt", "d.txt"), GS_OK);
  assert_true(summary.samples_per_second == 123.4987);  // full precision wins (123.5 rounded)

  // A number beyond the summary's rounding is a contradiction, not replaced.
  gs_mlperf_log rounded;
  assert_int_equal(parse_summary(summary_ok, &rounded), GS_OK);
  const char other[] = MLLOG("result_samples_per_second", "124.0");
  assert_int_equal(gs_mlperf_parse_detail(other, strlen(other), "d.txt", &detail), GS_OK);
  assert_int_equal(gs_mlperf_merge(&rounded, &detail, "s.txt", "d.txt"), GS_ERR_FORMAT);
  assert_error_has("s.txt: samples per second is 123.5 here but 124 in d.txt");
  assert_true(rounded.samples_per_second == 123.5);
  assert_string_equal(summary.loadgen_version, "5.0");
  assert_true(summary.latency.mean_ns == 5000);            // kept from the summary

  const char server[] = MLLOG("effective_scenario", "\"Server\"");
  assert_int_equal(gs_mlperf_parse_detail(server, strlen(server), "d.txt", &detail), GS_OK);
  assert_int_equal(gs_mlperf_merge(&summary, &detail, "s.txt", "d.txt"), GS_ERR_FORMAT);
  assert_error_has("s.txt says scenario Offline but d.txt says Server");
  const char invalid[] = MLLOG("result_validity", "\"INVALID\"");
  assert_int_equal(gs_mlperf_parse_detail(invalid, strlen(invalid), "d.txt", &detail), GS_OK);
  assert_int_equal(gs_mlperf_merge(&summary, &detail, "s.txt", "d.txt"), GS_ERR_FORMAT);
  assert_error_has("the result is VALID but d.txt says INVALID");
}

/* ---- nccl-tests ------------------------------------------------------------ */

static const char table_ok[] =
    "# nccl-tests version 2.17.6 nccl-headers=22803 nccl-library=22803\n"
    "# Collective test starting: broadcast_perf\n"
    "# nThread 1 nGpus 2 minBytes 8 maxBytes 64 step: 8(factor) warmup iters: 5 iters: 20 agg "
    "iters: 1 validation: 1 graph: 0\n"
    "#  Rank  0 Group  0 Pid  1 on  host-a device  0 [0000:18:00] GPU A\n"
    "#  Rank  1 Group  0 Pid  1 on  host-a device  3 [0000:2a:00] GPU B\n"
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     "
    "time   algbw   busbw  #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             "
    "(us)  (GB/s)  (GB/s)\n"
    "           8             2     float    none       0    10.50    0.00    0.00       0    "
    "10.25    0.00    0.00     N/A\n"
    "host-a:1:1 [0] NCCL INFO something\n"
    "          64            16     float    none       1    12.00    0.01    0.01   1e+06    "
    "11.00    0.01    0.01       0\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 0.005 \n";

static gs_status parse_nccl(const char *text, gs_nccl_tests_output *out) {
  return gs_nccl_tests_parse(text, strlen(text), "t.txt", out);
}

static void test_nccl_text(void **state) {
  (void)state;
  gs_nccl_tests_output out;
  assert_int_equal(parse_nccl(table_ok, &out), GS_OK);
  assert_string_equal(out.format, "text");
  assert_string_equal(out.program, "broadcast_perf");
  assert_string_equal(gs_nccl_tests_op_from_program(out.program), "broadcast");
  assert_string_equal(out.version, "2.17.6");
  assert_int_equal(out.iters, 20);
  assert_int_equal(out.warmup_iters, 5);
  assert_int_equal(out.validation, 1);
  assert_int_equal(gs_nccl_tests_world_size(&out), 2);
  assert_string_equal(out.ranks[1].host, "host-a");
  assert_int_equal(out.ranks[1].device, 3);
  assert_string_equal(out.ranks[1].device_name, "GPU B");
  assert_int_equal(out.n_rows, 2);
  assert_int_equal(out.rows[0].line, 8);
  assert_true(out.rows[0].bytes == 8 && out.rows[0].count == 2 && out.rows[0].root == 0);
  assert_true(out.rows[0].out_of_place.time_us == 10.5 && out.rows[0].out_of_place.wrong == 0);
  assert_true(out.rows[0].in_place.wrong == -1);
  assert_true(out.rows[1].out_of_place.wrong == 1000000);
  assert_true(out.avg_busbw_gbs == 0.005);
  assert_int_equal(out.out_of_bounds, 0);
  gs_nccl_tests_free(&out);

  assert_null(gs_nccl_tests_op_from_program("bisection_perf"));
  assert_string_equal(gs_nccl_tests_op_from_program("/x/reduce_scatter_perf_mpi"), "reducescatter");
  assert_null(gs_nccl_tests_op_from_program("all_reduce_perfx"));
}

/* table_ok with every `from` replaced by `to` (first occurrence only when once). */
static char *table_with(const char *from, const char *to) {
  const char *hit = strstr(table_ok, from);
  assert_non_null(hit);
  size_t size = strlen(table_ok) - strlen(from) + strlen(to) + 1;
  char *out = malloc(size);
  assert_non_null(out);
  size_t head = (size_t)(hit - table_ok);
  memcpy(out, table_ok, head);
  strcpy(out + head, to);
  strcat(out, hit + strlen(from));
  return out;
}

static void test_nccl_text_damaged(void **state) {
  (void)state;
  static const struct {
    const char *from, *to, *error;
  } cases[] = {
      {"10.50", "ten", "t.txt:8: column 'time' is 'ten'; expected a time in microseconds"},
      {"   0    10.25", "   x    10.25", "t.txt:8: column '#wrong' is 'x'"},
      {"  1e+06", "  1.5", "column '#wrong' is '1.5'"},
      {"     float    none       1", "     float    none      -2", "t.txt:10: column 'root' is '-2'"},
      {"           8             2", "          -8             2", "t.txt:8: column 'size' is '-8'"},
      {"    0.00     N/A", "    0.00", "t.txt:8: a table row with 12 columns; expected 13"},
      {"(us)  (GB/s)  (GB/s)             (us)", "(us)  (MB/s)  (GB/s)             (us)",
       "t.txt:7: the table unit row has '(MB/s)' where nccl-tests writes '(GB/s)'"},
      {"busbw  #wrong     time", "busbw  error     time",
       "an 'error' column: output of nccl-tests before version 2.10"},
      {"algbw   busbw  #wrong     time", "algbw   busbw  #wrong     when", "has 'when' where"},
      {"size         count      type", "size         cuont      type",
       "t.txt:6: the table header has 'cuont' where nccl-tests writes 'count'"},
      {"#  Rank  1 Group  0 Pid  1 on  host-a device  3", "#  Rank  1 Group  0 Pid  1 on  host-a",
       "t.txt:5: a device line without 'on HOST device N'"},
      {"nThread 1", "nThread one", "t.txt:3: 'nThread' is not followed by a whole number"},
      {"# Avg bus bandwidth    : 0.005", "# Avg bus bandwidth    : fast",
       "t.txt:12: 'Avg bus bandwidth' is not followed by a number of GB/s"},
      {"# Avg bus bandwidth    : 0.005 \n", "", "t.txt: no '# Avg bus bandwidth' footer after the last row (line 10)"},
      {"# Out of bounds values : 0 OK\n", "# Avg bus bandwidth : 1\n           8   2 float none 0 "
       "1 1 1 0 1 1 1 0\n", "t.txt:12: a table row after the 'Avg bus bandwidth' footer"},
      {"# Collective test starting", "mpirun: warning\n# Collective test starting",
       "t.txt:2: unexpected line 'mpirun: warning' before the table header"},
      {"# Out of bounds values", "#       size  count  type  redop  root  time algbw busbw #wrong "
       "time algbw busbw #wrong\n# Out of bounds values", "t.txt:11: a second table header"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *text = table_with(cases[i].from, cases[i].to);
    gs_nccl_tests_output out;
    gs_status st = parse_nccl(text, &out);
    if (st != GS_ERR_FORMAT) fail_msg("case %zu parsed", i);
    assert_error_has(cases[i].error);
    assert_null(out.rows);  // nothing half-kept
    free(text);
  }
  gs_nccl_tests_output out;
  for (size_t cut = 0; cut + 20 < sizeof table_ok - 1; cut += 11) {
    assert_int_equal(gs_nccl_tests_parse(table_ok, cut, "t.txt", &out), GS_ERR_FORMAT);
    assert_error_has("t.txt");
  }
  assert_int_equal(parse_nccl("hello\n", &out), GS_ERR_FORMAT);
  assert_error_has("t.txt:1: unexpected line 'hello' before the table header");
  assert_int_equal(parse_nccl("# just a comment\n", &out), GS_ERR_FORMAT);
  assert_error_has("t.txt: no table header");
}

static void test_nccl_text_layouts(void **state) {
  (void)state;
  // Host time (-C), per-iteration columns, timestamps, in-place-only rows.
  const char text[] =
      "#  size count type redop root cputime algbw busbw #wrong i_min i_max i_p99 i_cv% "
      "cputime algbw busbw #wrong i_min i_max i_p99 i_cv% timestamp\n"
      "#  (B) (elements) (us) (GB/s) (GB/s) (us) (us) (us) (%) (us) (GB/s) (GB/s) (us) (us) (us) (%) "
      "%Y-%m-%d %H:%M:%S\n"
      " 1024 256 float sum -1 5.0 0.2 0.2 0 4.0 6.0 5.9 3.1 5.5 0.19 0.19 0 4.1 6.2 6.0 3.0 "
      "2026-11-20 10:00:00\n"
      " 2048 512 float sum -1 5.5 0.37 0.37 0 4.0 6.0 5.9 3.1 2026-11-20 10:00:01\n"
      "# Avg bus bandwidth : 0.3\n";
  gs_nccl_tests_output out;
  assert_int_equal(parse_nccl(text, &out), GS_OK);
  assert_int_equal(out.cpu_time, 1);
  assert_int_equal(out.n_rows, 2);
  assert_true(out.rows[0].in_place.time_us == 5.5);
  assert_false(out.rows[1].out_of_place.present);
  assert_true(out.rows[1].in_place.present && out.rows[1].in_place.time_us == 5.5);
  assert_int_equal(gs_nccl_tests_world_size(&out), 0);  // no device list, no settings
  gs_nccl_tests_free(&out);
}

static const char json_ok[] =
    "{\"version\":2,\"args\":[\"./build/all_reduce_perf\",\"-b\",\"8\"],\"nccl_version\":22803,"
    "\"config\":{\"nthreads\":1,\"ngpus\":2,\"iterations\":20,\"warmup_iters\":5,\"validation\":1,"
    "\"devices\":[{\"rank\":0,\"hostname\":\"h\",\"device\":0,\"device_info\":\"G\"}]},"
    "\"results\":[{\"size\":8,\"count\":2,\"type\":\"float\",\"redop\":\"sum\",\"root\":\"    -1\","
    "\"out_of_place\":{\"time\":10.5,\"alg_bw\":0.000762,\"bus_bw\":\"nan\",\"nwrong\":null},"
    "\"out_of_place_per_iter\":{\"times_us\":[10.0,11.0]},"
    "\"in_place\":null}],"
    "\"average_bus_bandwidth\":{\"bandwidth\":0.5},\"out_of_bounds\":{\"count\":0}}\n";

static void test_nccl_json(void **state) {
  (void)state;
  gs_nccl_tests_output out;
  assert_int_equal(gs_nccl_tests_parse(json_ok, strlen(json_ok), "t.json", &out), GS_OK);
  assert_string_equal(out.format, "json");
  assert_string_equal(out.program, "all_reduce_perf");
  assert_string_equal(out.nccl_version, "2.28.3");
  // nccl-tests' JSON lists each process's first rank: 1 process x 1 thread x 2 GPUs.
  assert_int_equal(gs_nccl_tests_world_size(&out), 2);
  assert_int_equal(out.n_rows, 1);
  assert_true(out.rows[0].root == -1);
  assert_true(out.rows[0].out_of_place.present && !out.rows[0].in_place.present);
  assert_true(isnan(out.rows[0].out_of_place.busbw_gbs));
  assert_true(out.rows[0].out_of_place.wrong == -1);
  assert_int_equal(out.rows[0].out_of_place.n_iter_times, 2);
  assert_true(out.avg_busbw_gbs == 0.5);

  // The mapping: one measurement, per-iteration steps, collective members.
  cJSON *doc = gs_result_new("ingest");
  assert_non_null(doc);
  assert_int_equal(gs_ingest_add_nccl_tests(doc, &out, "allreduce", "t.json"), GS_OK);
  assert_int_equal(gs_result_validate(doc, "doc"), GS_OK);
  cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "measurements"), 0);
  cJSON *c = cJSON_GetObjectItem(m, "collective");
  assert_string_equal(cJSON_GetObjectItem(c, "op")->valuestring, "allreduce");
  assert_true(cJSON_GetObjectItem(c, "time_seconds")->valuedouble == 1.05e-05);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(c, "busbw_bytes_per_second")));
  assert_true(cJSON_GetObjectItem(c, "busbw_factor")->valuedouble == 1.0);
  assert_string_equal(cJSON_GetObjectItem(c, "launch")->valuestring, "threads");
  cJSON *steps = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "runs"), 0), "step_seconds");
  assert_int_equal(cJSON_GetArraySize(steps), 2);
  assert_true(cJSON_GetArrayItem(steps, 1)->valuedouble == 1.1e-05);
  assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "verification"), "status")->valuestring,
                      "skipped");
  assert_int_equal(gs_ingest_set_document_status(doc), GS_OK);
  assert_string_equal(cJSON_GetObjectItem(doc, "status")->valuestring, "ok");
  cJSON_Delete(doc);
  gs_nccl_tests_free(&out);
}

/* Under MPI the JSON lists one entry per process (its first rank): 2
 * processes of 2 GPUs each are 4 ranks, launched by MPI. */
static void test_nccl_json_processes(void **state) {
  (void)state;
  const char json[] =
      "{\"version\":3,\"args\":[\"./all_reduce_perf_mpi\"],"
      "\"config\":{\"nthreads\":1,\"ngpus\":2,\"devices\":["
      "{\"rank\":0,\"hostname\":\"a\",\"device\":0,\"device_info\":\"G\"},"
      "{\"rank\":2,\"hostname\":\"b\",\"device\":0,\"device_info\":\"G\"}]},"
      "\"results\":[{\"size\":1024,\"count\":256,\"type\":\"float\",\"redop\":\"sum\","
      "\"root\":-1,\"out_of_place\":{\"time\":10.0,\"alg_bw\":0.1024,\"bus_bw\":0.1536,"
      "\"nwrong\":0},\"in_place\":null}]}\n";
  gs_nccl_tests_output out;
  assert_int_equal(gs_nccl_tests_parse(json, strlen(json), "p.json", &out), GS_OK);
  assert_int_equal(gs_nccl_tests_world_size(&out), 4);
  cJSON *doc = gs_result_new("ingest");
  assert_non_null(doc);
  assert_int_equal(gs_ingest_add_nccl_tests(doc, &out, "allreduce", "p.json"), GS_OK);
  cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "measurements"), 0);
  assert_int_equal(cJSON_GetObjectItem(m, "world_size")->valueint, 4);
  cJSON *c = cJSON_GetObjectItem(m, "collective");
  assert_true(cJSON_GetObjectItem(c, "busbw_factor")->valuedouble == 1.5);
  assert_string_equal(cJSON_GetObjectItem(c, "launch")->valuestring, "mpi");
  cJSON_Delete(doc);
  gs_nccl_tests_free(&out);
}

static void test_nccl_json_damaged(void **state) {
  (void)state;
  static const struct {
    const char *from, *to, *error;
  } cases[] = {
      {"\"version\":2", "\"version\":1", "t.json: nccl-tests JSON version 1; gpuscale reads versions 2 and 3"},
      {"\"version\":2,", "", "no numeric \"version\""},
      {"\"results\":[", "\"results\":{\"x\":[", "t.json:1: invalid JSON"},
      {"\"size\":8", "\"size\":-8", "results[0].size is not a byte count"},
      {"\"type\":\"float\"", "\"type\":\"fl oat\"", "results[0].type is not a data type name"},
      {"\"root\":\"    -1\"", "\"root\":\"top\"", "results[0].root is not a rank or -1"},
      {"\"time\":10.5", "\"time\":\"slow\"", "results[0].out_of_place.time is a string; expected a time"},
      {"\"nwrong\":null", "\"nwrong\":0.5", "results[0].out_of_place.nwrong is a number; expected a count"},
      {"\"times_us\":[10.0,", "\"times_us\":[true,", "out_of_place_per_iter.times_us[0] is a boolean"},
      {"\"out_of_place\":{\"time\":10.5,\"alg_bw\":0.000762,\"bus_bw\":\"nan\",\"nwrong\":null},", "",
       "results[0] has neither an out_of_place nor an in_place result"},
      {"{\"rank\":0,", "{\"rank\":\"one\",", "config.devices[0].rank is not a rank number"},
      {"\"count\":2,", "\"count\":2,,", "t.json:1: invalid JSON at column"},
      {"}\n", "} extra\n", "t.json:1: text at column"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *hit = strstr(json_ok, cases[i].from);
    assert_non_null(hit);
    char text[2048];
    size_t head = (size_t)(hit - json_ok);
    snprintf(text, sizeof text, "%.*s%s%s", (int)head, json_ok, cases[i].to,
             hit + strlen(cases[i].from));
    gs_nccl_tests_output out;
    gs_status st = gs_nccl_tests_parse(text, strlen(text), "t.json", &out);
    if (st != GS_ERR_FORMAT) fail_msg("case %zu parsed", i);
    assert_error_has(cases[i].error);
  }
  gs_nccl_tests_output out;
  const char empty[] = "{\"version\":2,\"results\":[]}";
  assert_int_equal(gs_nccl_tests_parse(empty, strlen(empty), "t.json", &out), GS_ERR_FORMAT);
  assert_error_has("results is empty");
  for (size_t cut = 1; cut + 1 < strlen(json_ok); cut += 9) {
    assert_int_equal(gs_nccl_tests_parse(json_ok, cut, "t.json", &out), GS_ERR_FORMAT);
    assert_error_has("t.json");
  }
}

/* ---- mapping --------------------------------------------------------------- */

static void test_mlperf_mapping(void **state) {
  (void)state;
  gs_ingest_mlperf_rank ranks[2];
  memset(ranks, 0, sizeof ranks);
  assert_int_equal(parse_summary(summary_ok, &ranks[0].log), GS_OK);
  assert_int_equal(parse_summary(summary_ok, &ranks[1].log), GS_OK);
  ranks[0].dir = "a";
  ranks[1].dir = "b";
  ranks[0].host = "node-a";
  ranks[1].host = "node-b";
  ranks[1].log.valid = 0;
  cJSON *doc = gs_result_new("ingest");
  assert_int_equal(gs_ingest_add_mlperf(doc, ranks, 2), GS_OK);
  assert_int_equal(gs_result_validate(doc, "doc"), GS_OK);
  cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "measurements"), 0);
  assert_string_equal(cJSON_GetObjectItem(m, "status")->valuestring, "verification");
  assert_string_equal(cJSON_GetObjectItem(m, "scenario")->valuestring, "offline");
  assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "aggregate"), "throughput_items_per_second")
                  ->valuedouble == 247.0);
  cJSON *ranks_json = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "runs"), 0), "ranks");
  cJSON *r1 = cJSON_GetArrayItem(ranks_json, 1);
  assert_string_equal(cJSON_GetObjectItem(r1, "host")->valuestring, "node-b");
  assert_string_equal(cJSON_GetObjectItem(r1, "error")->valuestring,
                      "LoadGen result INVALID: early stopping not satisfied");
  cJSON *lat = cJSON_GetObjectItem(cJSON_GetObjectItem(r1, "mlperf"), "latency_seconds");
  assert_true(cJSON_GetObjectItem(lat, "p99.9")->valuedouble == 8.9e-06);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(r1, "wall_seconds")));
  assert_int_equal(gs_ingest_set_document_status(doc), GS_OK);
  assert_string_equal(cJSON_GetObjectItem(doc, "status")->valuestring, "failed");

  ranks[1].log.scenario = GS_MLPERF_SERVER;
  assert_int_equal(gs_ingest_add_mlperf(doc, ranks, 2), GS_ERR_FORMAT);
  assert_error_has("a ran the Offline scenario but b ran Server");

  gs_nccl_tests_output none;
  memset(&none, 0, sizeof none);
  none.threads = none.gpus_per_thread = -1;
  assert_int_equal(gs_ingest_add_nccl_tests(doc, &none, "allreduce", "x.txt"), GS_ERR_FORMAT);
  assert_error_has("x.txt: cannot tell how many ranks ran");
  none.threads = 64;
  none.gpus_per_thread = 64;
  assert_int_equal(gs_ingest_add_nccl_tests(doc, &none, "allreduce", "x.txt"), GS_ERR_FORMAT);
  assert_error_has("x.txt: nThread 64 x nGpus 64 = 4096 ranks in one process is not plausible");
  cJSON_Delete(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lines_and_numbers), cmocka_unit_test(test_summary_fields),
      cmocka_unit_test(test_summary_damaged),   cmocka_unit_test(test_detail_records),
      cmocka_unit_test(test_detail_damaged),    cmocka_unit_test(test_merge),
      cmocka_unit_test(test_nccl_text),         cmocka_unit_test(test_nccl_text_damaged),
      cmocka_unit_test(test_nccl_text_layouts), cmocka_unit_test(test_nccl_json),
      cmocka_unit_test(test_nccl_json_processes),
      cmocka_unit_test(test_nccl_json_damaged), cmocka_unit_test(test_mlperf_mapping),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
