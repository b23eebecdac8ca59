/* The streaming JSON tokenizer, the PyTorch profiler (Kineto) reader and
 * the trace analysis: figures of a hand-computed synthetic trace (breakdown,
 * overlap, idle split, kernels, launch delays, skew), HTA's step filter and
 * rounding, strict errors with byte offsets, and a trace larger than the
 * read buffer. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/json_stream.h"
#include "core/trace_events.h"
#include "report/analyze/trace_stats.h"
#include "source_path.h"

#define NCCL "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"

/* One complete event. */
static int ev(char *buf, const char *cat, const char *name, double ts, double dur, int corr,
              int stream) {
  if (stream >= 0)
    return sprintf(buf, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":0,\"tid\":%d,"
                   "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"device\":0,\"stream\":%d,"
                   "\"correlation\":%d,\"grid\":[1,2,3]}},\n",
                   cat, name, stream, ts, dur, stream, corr);
  return sprintf(buf, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":1,\"tid\":1,"
                 "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"correlation\":%d,\"External id\":3}},\n",
                 cat, name, ts, dur, corr);
}

/* The synthetic rank of the figures below; `nccl_ts` moves its collective. */
static char *synthetic(int rank, double nccl_ts, size_t *len) {
  char *b = malloc(1 << 16);
  size_t n = (size_t)sprintf(b, "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0}],"
                             "\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":%d,"
                             "\"world_size\":2},\"traceEvents\":[\n", rank);
  n += (size_t)ev(b + n, "cuda_runtime", "cudaLaunchKernel", 0, 5, 1, -1);
  n += (size_t)ev(b + n, "cuda_runtime", "cudaLaunchKernel", 10, 5, 2, -1);
  n += (size_t)ev(b + n, "cuda_runtime", "cudaLaunchKernel", 150, 5, 3, -1);
  n += (size_t)ev(b + n, "cuda_runtime", "cudaLaunchKernel", 20, 5, 4, -1);
  n += (size_t)ev(b + n, "cuda_runtime", "cudaMemcpyAsync", 300, 2, 5, -1);
  n += (size_t)ev(b + n, "cuda_runtime", "cudaLaunchKernel", 305, 5, 6, -1);
  n += (size_t)ev(b + n, "cpu_op", "aten::mm", 0, 30, -1, -1);
  n += (size_t)ev(b + n, "kernel", "gemm", 10, 40, 1, 7);
  n += (size_t)ev(b + n, "kernel", "gemm", 60, 40, 2, 7);
  n += (size_t)ev(b + n, "kernel", "relu", 200, 20, 3, 7);
  n += (size_t)ev(b + n, "kernel", NCCL, nccl_ts, 40, 4, 20);
  n += (size_t)ev(b + n, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 320, 30, 5, 7);
  n += (size_t)ev(b + n, "kernel", "gemm", 400, 10, 6, 7);
  n += (size_t)sprintf(b + n, "{\"ph\":\"f\",\"id\":1,\"pid\":0,\"tid\":7,\"ts\":10,"
                       "\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}\n],"
                       "\"traceName\":\"x\",\"displayTimeUnit\":\"ms\"}\n");
  *len = n;
  return b;
}

static void test_synthetic_figures(void **state) {
  (void)state;
  size_t len;
  char *text = synthetic(0, 40, &len);
  gs_trace_events t;
  assert_int_equal(gs_kineto_read_memory("r0.json", text, len, &t), GS_OK);
  free(text);
  assert_int_equal(t.rank, 0);
  assert_int_equal(t.world, 2);
  assert_int_equal(t.n_events, 14);
  assert_int_equal(t.n_cpu_ops, 1);
  assert_int_equal(t.n, 12);  // 6 launches + 6 GPU events
  gs_trace_rank_stats r;
  assert_int_equal(gs_trace_stats_rank(&t, GS_TRACE_KERNEL_WAIT_US, &r), GS_OK);
  assert_int_equal(r.n_gpu, 6);
  assert_true(r.span_us == 400);
  assert_true(r.busy_us == 150);
  assert_true(r.idle_us == 250);
  assert_true(r.compute_us == 110);
  assert_true(r.non_compute_us == 40);
  assert_true(r.comm_us == 40);
  assert_true(r.memory_us == 30);
  assert_true(r.overlap_us == 30);
  assert_true(fabs(r.overlap - 0.75) < 1e-12);
  assert_true(r.idle_host_us == 200);
  assert_true(r.idle_kernel_us == 10);
  assert_true(r.idle_other_us == 50);
  assert_int_equal(r.n_kernel_names, 4);
  assert_string_equal(r.top[0].name, "gemm");
  assert_int_equal(r.top[0].count, 3);
  assert_true(r.top[0].total_us == 90);
  assert_true(fabs(r.top[0].share - 0.5) < 1e-12);
  assert_string_equal(r.top[1].name, NCCL);
  assert_int_equal(r.top[1].cls, GS_TEV_COMM);
  assert_int_equal(r.top[2].cls, GS_TEV_MEMORY);
  assert_int_equal(r.n_launches, 5);
  assert_true(r.delay_mean == 45);
  assert_true(r.delay_p50 == 50);
  assert_true(r.delay_max == 95);
  assert_int_equal(r.n_short, 0);
  assert_int_equal(r.n_coll, 1);
  gs_trace_rank_stats_free(&r);
  gs_trace_events_free(&t);
}

/* Two ranks through files: rank 1 enters the collective 15 us late. */
static void test_two_rank_skew(void **state) {
  (void)state;
  char dir[] = "/tmp/gs_trace_statsXXXXXX";
  assert_non_null(mkdtemp(dir));
  char p0[128], p1[128];
  snprintf(p0, sizeof p0, "%s/b.json", dir);
  snprintf(p1, sizeof p1, "%s/a.json", dir);
  const char *paths[] = {p0, p1};
  for (int k = 0; k < 2; k++) {
    size_t len;
    char *text = synthetic(k, k ? 55 : 40, &len);
    FILE *f = fopen(paths[k], "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
    free(text);
  }
  assert_int_equal(gs_trace_file_sniff(p0), 1);
  gs_trace_stats s;
  assert_int_equal(gs_trace_stats_load(paths, 2, GS_TRACE_KERNEL_WAIT_US, &s), GS_OK);
  assert_int_equal(s.n_ranks, 2);
  assert_int_equal(s.ranks[0].rank, 0);
  assert_int_equal(s.ranks[1].rank, 1);
  assert_int_equal(s.n_collectives, 1);
  assert_true(s.skew_max_us == 15);
  assert_int_equal(s.skew_max_rank, 1);
  assert_int_equal(s.skew[1].last_count, 1);
  assert_true(s.skew[0].wait_us == 15);
  assert_true(s.skew[1].wait_us == 0);
  // rank 1's collective [55, 95] overlaps gemm [60, 100] for 35 of 40 us
  assert_true(fabs(s.ranks[1].overlap - 35.0 / 40.0) < 1e-12);
  // The critical path, no steps: one window [10, 410] on rank 0 (both end
  // at 410; the first is taken). Back from gemm [400, 410]: a 50 us gap
  // its launch (305) does not explain (other wait), the copy, relu's and
  // the copy's launches after the GPU ran dry (host 100 + 100), gemm's 10
  // us launch gap (host) and the gemms; the collective is off the path.
  assert_int_equal(s.n_paths, 1);
  const gs_trace_cpath *p = &s.paths[0];
  assert_int_equal(p->n_steps, 1);
  assert_int_equal(p->steps[0].step, -1);
  assert_true(p->steps[0].start_us == 10 && p->steps[0].end_us == 410);
  const double *r0 = p->steps[0].us;
  assert_true(r0[GS_CP_COMPUTE] == 110 && r0[GS_CP_MEMCPY] == 30 && r0[GS_CP_HOST] == 210 &&
              r0[GS_CP_OTHER] == 50 && r0[GS_CP_COMM] == 0);
  assert_int_equal(p->bound_rank, 0);
  assert_int_equal(p->bound_phase, GS_CP_HOST);
  assert_true(fabs(p->bound_share - 210.0 / 400.0) < 1e-12);
  assert_null(s.ranks[0].nodes);  // freed once the path is computed
  gs_trace_stats_free(&s);
  remove(p0);
  remove(p1);
  rmdir(dir);
}

/* HTA's rules: times rounded inward to whole us; with two profiler steps
 * or more, only GPU events launched before the last step began. */
/* CPU ops on two threads: linear [0,100] holds addmm [10,70] and t
 * [75,80]; linear [200,250] holds addmm [210,240]; mm [5,25] on thread 2.
 * Self: addmm 90, linear 35 + 20, mm 20, t 5 (of 170). */
static void test_cpu_ops(void **state) {
  (void)state;
  static const struct {
    const char *name;
    double ts, dur;
    int tid;
  } ops[] = {{"aten::linear", 0, 100, 1}, {"aten::mm", 5, 20, 2}, {"aten::addmm", 10, 60, 1},
             {"aten::t", 75, 5, 1},       {"aten::linear", 200, 50, 1},
             {"aten::addmm", 210, 30, 1}};
  char *b = malloc(1 << 14);
  size_t n = (size_t)sprintf(b, "{\"traceEvents\":[\n");
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    n += (size_t)sprintf(b + n, "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"%s\",\"pid\":9,"
                         "\"tid\":%d,\"ts\":%g,\"dur\":%g},\n",
                         ops[i].name, ops[i].tid, ops[i].ts, ops[i].dur);
  // A runtime call inside addmm is a host event but not a CPU op.
  n += (size_t)ev(b + n, "cuda_runtime", "cudaLaunchKernel", 20, 5, 1, -1);
  n += (size_t)sprintf(b + n, "{\"ph\":\"i\",\"name\":\"x\",\"ts\":1}]}\n");
  gs_trace_events t;
  assert_int_equal(gs_kineto_read_memory("cpu.json", b, n, &t), GS_OK);
  assert_int_equal(t.n_cpu_op_events, 6);
  assert_int_equal(t.cpu_unordered, 0);
  gs_trace_rank_stats r;
  assert_int_equal(gs_trace_stats_rank(&t, GS_TRACE_KERNEL_WAIT_US, &r), GS_OK);
  assert_int_equal(r.n_cpu_names, 4);
  assert_true(r.cpu_self_us == 170);
  assert_string_equal(r.cpu_top[0].name, "aten::addmm");
  assert_true(r.cpu_top[0].self_us == 90 && r.cpu_top[0].total_us == 90);
  assert_string_equal(r.cpu_top[1].name, "aten::linear");
  assert_true(r.cpu_top[1].self_us == 55 && r.cpu_top[1].total_us == 150);
  assert_int_equal(r.cpu_top[1].count, 2);
  assert_true(r.cpu_top[1].mean_us == 75);
  assert_true(fabs(r.cpu_top[1].share - 55.0 / 170.0) < 1e-12);
  assert_string_equal(r.cpu_top[2].name, "aten::mm");
  assert_string_equal(r.cpu_top[3].name, "aten::t");
  gs_trace_rank_stats_free(&r);
  gs_trace_events_free(&t);
  // Out of start order on a thread: no self times, ordered by inclusive time.
  char *swap = strstr(b, "\"ts\":200");
  memcpy(swap, "\"ts\":  1", 8);
  assert_int_equal(gs_kineto_read_memory("cpu.json", b, n, &t), GS_OK);
  assert_int_equal(t.cpu_unordered, 1);
  assert_int_equal(gs_trace_stats_rank(&t, GS_TRACE_KERNEL_WAIT_US, &r), GS_OK);
  assert_string_equal(r.cpu_top[0].name, "aten::linear");
  assert_true(r.cpu_top[0].total_us == 150 && isnan(r.cpu_top[0].self_us) && isnan(r.cpu_self_us));
  gs_trace_rank_stats_free(&r);
  gs_trace_events_free(&t);
  free(b);
}

static void test_steps_and_rounding(void **state) {
  (void)state;
  char *b = malloc(1 << 14);
  size_t n = (size_t)sprintf(b, "{\"traceEvents\":[\n");
  n += (size_t)ev(b + n, "user_annotation", "ProfilerStep#1", 0, 100, -1, -1);
  n += (size_t)ev(b + n, "user_annotation", "ProfilerStep#2", 100, 100, -1, -1);
  n += (size_t)ev(b + n, "cuda_runtime", "cudaLaunchKernel", 1.5, 3, 1, -1);
  n += (size_t)ev(b + n, "cuda_runtime", "cudaLaunchKernel", 120, 3, 2, -1);
  n += (size_t)ev(b + n, "kernel", "a", 10.4, 20.2, 1, 7);  // -> [11, 30]
  n += (size_t)ev(b + n, "kernel", "b", 130, 10, 2, 7);     // launched in the last step
  n += (size_t)sprintf(b + n, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,"
                       "\"args\":{\"name\":\"x\"}}]}");
  gs_trace_events t;
  assert_int_equal(gs_kineto_read_memory("steps.json", b, n, &t), GS_OK);
  free(b);
  assert_int_equal(t.rank, -1);
  gs_trace_rank_stats r;
  assert_int_equal(gs_trace_stats_rank(&t, GS_TRACE_KERNEL_WAIT_US, &r), GS_OK);
  assert_int_equal(r.steps, 2);
  assert_int_equal(r.n_gpu, 1);
  assert_int_equal(r.n_dropped, 1);
  assert_true(r.span_us == 19);
  assert_true(r.delay_p50 == 9);  // 11 - ceil(1.5)
  assert_true(isnan(r.overlap));
  gs_trace_rank_stats_free(&r);
  gs_trace_events_free(&t);
}

/* A malformed trace is an error naming the file and the byte offset. */
static void expect_error(const char *text, const char *what) {
  gs_trace_events t;
  assert_int_equal(gs_kineto_read_memory("bad.json", text, strlen(text), &t), GS_ERR_FORMAT);
  if (!strstr(gs_last_error(), what)) fail_msg("'%s' not in '%s'", what, gs_last_error());
  gs_trace_events_free(&t);
}

static void test_strict_errors(void **state) {
  (void)state;
  expect_error("{\"traceEvents\":[{\"ph\":\"X\",]}", "bad.json: byte 26: a member name");
  expect_error("{\"traceEvents\":[{\"ts\":01}]}", "byte 23: a number with a leading zero");
  expect_error("{\"traceEvents\":[{\"ts\":1.}]}", "byte 24: a digit expected");
  expect_error("{\"traceEvents\":[]} x", "byte 19: text after the top-level value");
  expect_error("{\"traceEvents\":[{\"name\":\"a\\qb\"}]}", "byte 27: an invalid escape");
  expect_error("{\"traceEvents\":[{\"name\":\"a", "byte 26: the file ends inside a string");
  expect_error("{\"traceEvents\":[{\"ts\":\"1\"}]}", "byte 22: ts: a number expected");
  expect_error("{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1}]}",
               "byte 16: a complete event (ph X) without name, ts or a non-negative dur");
  expect_error("{\"schemaVersion\":1}", "bad.json: not a trace (no traceEvents)");
  expect_error("{\"traceEvents\":[],\"otherData\":{\"schema\":\"gpuscale/trace/v1\"}}",
               "a gpuscale trace, not a PyTorch profiler trace");
  expect_error("[1]", "byte 0: a trace is a JSON object");
  char deep[200] = "{\"traceEvents\":[],\"x\":";
  for (int i = 0; i < 70; i++) strcat(deep, "[");
  expect_error(deep, "nesting deeper than 64");
}

/* Escapes, surrogate pairs and literals; a token over the limit. */
/* gs_json_stream_number gives strtod's double, bit for bit, on its fast
 * path (decimals of at most 2^53 without exponent: Kineto's times) and
 * off it (17 digits, above 2^53, exponents, many fraction digits). */
static void test_numbers_as_strtod(void **state) {
  (void)state;
  static const char *const fixed[] = {
      "0", "-0", "0.1", "-0.5", "4895594845998.814", "9007199254740992", "9007199254740993",
      "9999999999999999", "12345678901234567", "1.7976931348623157e308", "5e-324",
      "0.000000000000000000000000001", "123.4567890123456789", "1e22", "100000000000000000000000"};
  char text[4096];
  size_t n = (size_t)sprintf(text, "[");
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    n += (size_t)sprintf(text + n, "%s,", fixed[i]);
  // Random Kineto-like times: up to 16 digits with 0 to 6 after the point.
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 150; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    uint64_t mant = x % 10000000000000000ull;
    int frac = (int)((x >> 60) % 7);
    char digits[32];
    int len = sprintf(digits, "%llu", (unsigned long long)mant);
    if (frac >= len) frac = len - 1;
    n += (size_t)sprintf(text + n, "%.*s%s%s,", len - frac, digits, frac ? "." : "",
                         digits + len - frac);
  }
  text[n - 1] = ']';
  gs_json_stream s;
  assert_int_equal(gs_json_stream_open_memory(&s, "n", text, n), GS_OK);
  gs_json_token t;
  assert_int_equal(gs_json_stream_next(&s, &t), GS_OK);
  const char *p = text + 1;
  for (int i = 0; i < 150 + (int)(sizeof fixed / sizeof *fixed); i++) {
    double got, want = strtod(p, NULL);
    assert_int_equal(gs_json_stream_number(&s, "n", &got), GS_OK);
    assert_memory_equal(&got, &want, sizeof got);
    p = strchr(p, ',') + 1;
  }
  gs_json_stream_close(&s);
}

static void test_tokens(void **state) {
  (void)state;
  const char *text = "{\"k\\u00e9\":[\"a\\n\\\"b\\ud83d\\ude00\",-1.5e+3,true,false,null]}";
  gs_json_stream s;
  assert_int_equal(gs_json_stream_open_memory(&s, "t", text, strlen(text)), GS_OK);
  gs_json_token want[] = {GS_JS_OBJECT, GS_JS_KEY, GS_JS_ARRAY, GS_JS_STRING, GS_JS_NUMBER,
                          GS_JS_TRUE, GS_JS_FALSE, GS_JS_NULL, GS_JS_ARRAY_END,
                          GS_JS_OBJECT_END, GS_JS_END};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    gs_json_token t;
    assert_int_equal(gs_json_stream_next(&s, &t), GS_OK);
    assert_int_equal(t, want[i]);
    if (t == GS_JS_KEY) assert_string_equal(s.text, "k\xc3\xa9");
    if (t == GS_JS_STRING) assert_string_equal(s.text, "a\n\"b\xf0\x9f\x98\x80");
    if (t == GS_JS_NUMBER) assert_string_equal(s.text, "-1.5e+3");
  }
  gs_json_stream_close(&s);
  size_t big = GS_JSON_STREAM_TOKEN + 100;
  char *b = malloc(big + 32);
  b[0] = '"';
  memset(b + 1, 'x', big);
  strcpy(b + 1 + big, "\"");
  assert_int_equal(gs_json_stream_open_memory(&s, "big", b, strlen(b)), GS_OK);
  gs_json_token t;
  assert_int_equal(gs_json_stream_next(&s, &t), GS_ERR_FORMAT);
  assert_non_null(strstr(gs_last_error(), "big: byte 0: a string or number longer than 64 KiB"));
  gs_json_stream_close(&s);
  free(b);
}

/* A trace several times the read buffer: events across refills, offsets
 * counted across them. */
static void test_larger_than_buffer(void **state) {
  (void)state;
  size_t cap = 3 * GS_JSON_STREAM_BUFFER + (1 << 16), n = 0;
  char *b = malloc(cap);
  n += (size_t)sprintf(b, "{\"traceEvents\":[\n");
  int k = 0;
  while (n < 3 * GS_JSON_STREAM_BUFFER) {
    n += (size_t)ev(b + n, "cuda_runtime", "cudaLaunchKernel", 100.0 * k, 2, k + 1, -1);
    n += (size_t)ev(b + n, "kernel", k % 2 ? "even_kernel" : "odd_kernel", 100.0 * k + 10, 50,
                    k + 1, 7);
    k++;
  }
  n += (size_t)sprintf(b + n, "{\"ph\":\"i\"}]}");
  gs_trace_events t;
  assert_int_equal(gs_kineto_read_memory("large.json", b, n, &t), GS_OK);
  assert_int_equal(t.n, 2 * (size_t)k);
  assert_int_equal(t.n_names, 3);
  gs_trace_rank_stats r;
  assert_int_equal(gs_trace_stats_rank(&t, GS_TRACE_KERNEL_WAIT_US, &r), GS_OK);
  assert_true(r.busy_us == 50.0 * k);
  assert_true(r.idle_host_us == 50.0 * (k - 1));  // each launch came after the previous kernel ended
  assert_true(r.delay_p99 == 10);
  gs_trace_rank_stats_free(&r);
  gs_trace_events_free(&t);
  // A break past the first buffer is named by its offset in the file.
  size_t at = n - 20;
  b[at] = '#';
  assert_int_equal(gs_kineto_read_memory("large.json", b, n, &t), GS_ERR_FORMAT);
  char want[64];
  snprintf(want, sizeof want, "large.json: byte %zu:", at);
  assert_non_null(strstr(gs_last_error(), want));
  gs_trace_events_free(&t);
  free(b);
}

/* Every cut of a real trace short of its end is an error at or before the
 * cut, never a crash or a silent success; the whole file reads. */
static void test_real_trace_cuts(void **state) {
  (void)state;
  const char *path = source_path("data/kineto/medium_n1/rank0.json");
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)size);
  assert_int_equal(fread(b, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  gs_trace_events t;
  assert_int_equal(gs_kineto_read_memory("whole", b, (size_t)size, &t), GS_OK);
  assert_int_equal(t.rank, 0);
  assert_true(t.n > 300);
  gs_trace_events_free(&t);
  size_t end = (size_t)size;
  while (end > 0 && (b[end - 1] == '\n' || b[end - 1] == ' ')) end--;
  for (size_t cut = 1; cut < end; cut += 997) {
    assert_int_equal(gs_kineto_read_memory("cut", b, cut, &t), GS_ERR_FORMAT);
    const char *at = strstr(gs_last_error(), "cut: byte ");
    assert_non_null(at);
    assert_true(strtoull(at + 10, NULL, 10) <= cut);
    gs_trace_events_free(&t);
  }
  free(b);
}

/* gpuscale's own spans: CUPTI's lanes when there are, kinds kept. */
static void test_from_gpuscale_view(void **state) {
  (void)state;
  gs_trace_view_rank rank = {.rank = 0, .device = 0, .n_lanes = 3};
  snprintf(rank.lanes[0].name, GS_TRACE_NAME, "host");
  snprintf(rank.lanes[1].name, GS_TRACE_NAME, "GPU 0: rank stream (CUDA events)");
  snprintf(rank.lanes[2].name, GS_TRACE_NAME, "GPU 0: stream 7 (CUPTI)");
  gs_trace_span spans[] = {
      {.begin = 0, .end = 1, .kind = GS_TRACE_STEP, .name = "step"},
      {.begin = 0, .end = 1e-3, .kind = GS_TRACE_COMPUTE, .name = "forward"},
      {.begin = 0, .end = 4e-4, .kind = GS_TRACE_COMPUTE, .name = "gemm"},
      {.begin = 2e-4, .end = 6e-4, .kind = GS_TRACE_COMM, .name = "allreduce"},
      {.begin = 7e-4, .end = 8e-4, .kind = GS_TRACE_COPY, .name = "Memcpy DtoD"},
      {.begin = 8e-4, .end = 9e-4, .kind = GS_TRACE_WAIT, .name = "barrier"}};
  assert_int_equal(gs_trace_lane_push(&rank.lanes[0], &spans[0]), GS_OK);
  assert_int_equal(gs_trace_lane_push(&rank.lanes[1], &spans[1]), GS_OK);
  for (int i = 2; i < 6; i++) assert_int_equal(gs_trace_lane_push(&rank.lanes[2], &spans[i]), GS_OK);
  gs_trace_view v = {.n_ranks = 1, .ranks = &rank};
  gs_trace_events t;
  assert_int_equal(gs_trace_events_from_view(&v, 0, "own.json", 0, &t), GS_OK);
  assert_string_equal(t.label, "m0 rank 0");
  assert_int_equal(t.n, 3);  // the CUPTI lane's kernel, collective and copy
  gs_trace_rank_stats r;
  assert_int_equal(gs_trace_stats_rank(&t, GS_TRACE_KERNEL_WAIT_US, &r), GS_OK);
  assert_true(fabs(r.span_us - 800) < 1e-6);
  assert_true(fabs(r.compute_us - 400) < 1e-6);
  assert_true(fabs(r.comm_us - 400) < 1e-6);
  assert_true(fabs(r.overlap - 0.5) < 1e-9);
  assert_int_equal(r.n_coll, 1);
  assert_int_equal(r.top[1].cls, GS_TEV_COMM);  // "allreduce": its kind, not its name
  gs_trace_rank_stats_free(&r);
  gs_trace_events_free(&t);
  for (int l = 0; l < 3; l++) free(rank.lanes[l].spans);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_synthetic_figures), cmocka_unit_test(test_two_rank_skew),
      cmocka_unit_test(test_steps_and_rounding), cmocka_unit_test(test_strict_errors),
      cmocka_unit_test(test_tokens), cmocka_unit_test(test_larger_than_buffer),
      cmocka_unit_test(test_real_trace_cuts), cmocka_unit_test(test_from_gpuscale_view),
      cmocka_unit_test(test_cpu_ops), cmocka_unit_test(test_numbers_as_strtod)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
