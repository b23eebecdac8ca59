/* Tests of core/trace_model and the trace ranges of platform/trace on the host
 * lane: kinds and their names, spans kept only inside recorded steps below
 * the bound (frames always), nesting, a write and read back of the file
 * with two measurements, dropping a measurement measured again, and a
 * file that is not a trace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/trace_model.h"
#include "platform/trace.h"
#include "tmpdir_fixture.h"

static void test_kinds(void **state) {
  (void)state;
  for (int k = 0; k < GS_TRACE_KIND_COUNT; k++)
    assert_int_equal(gs_trace_kind_parse(gs_trace_kind_name((gs_trace_kind)k)), k);
  assert_int_equal(gs_trace_kind_parse("gpu"), -1);
  assert_int_not_equal(gs_trace_kind_rgb(GS_TRACE_COMPUTE), gs_trace_kind_rgb(GS_TRACE_COMM));
}

/* One rank's steps 0..steps-1 of run `run`: a frame, a lockstep wait, and a
 * step holding forward and an allreduce of bucket 2. */
static void record_steps(int run, int steps) {
  gs_trace_begin(GS_TRACE_RUN, "run", run, NULL);
  for (int s = 0; s < steps; s++) {
    gs_trace_step_open(run, s);
    gs_trace_begin(GS_TRACE_WAIT, "lockstep", -1, NULL);
    gs_trace_end();
    gs_trace_begin(GS_TRACE_STEP, "step", -1, NULL);
    gs_trace_begin(GS_TRACE_COMPUTE, "forward", -1, NULL);
    gs_trace_end();
    gs_trace_begin(GS_TRACE_COMM, "allreduce bucket", 2, NULL);
    gs_trace_end();
    gs_trace_end();
    gs_trace_step_close();
  }
  gs_trace_end();
}

static size_t count_named(const gs_trace_lane *lane, const char *name) {
  size_t n = 0;
  for (size_t i = 0; i < lane->n; i++) n += strcmp(lane->spans[i].name, name) == 0;
  return n;
}

/* A recorder writing `name` in the scratch directory (its path in `path`)
 * with measurement 0 begun and this thread attached as its rank 0. */
static gs_trace *attached_trace(const fixture *fx, const char *name, uint64_t steps, char *path,
                                size_t size) {
  path_in(fx, name, path, size);
  gs_trace *t = NULL;
  assert_int_equal(gs_trace_new(path, steps, &t), GS_OK);
  assert_int_equal(gs_trace_measurement_begin(t, 0, name), GS_OK);
  assert_int_equal(gs_trace_attach(t, 0, 0, -1, NULL), GS_OK);
  return t;
}

static void test_bound_and_round_trip(void **state) {
  char path[512];
  gs_trace *t = attached_trace(*state, "t.json", 2, path, sizeof path);
  record_steps(0, 5);
  gs_trace_detach();
  assert_int_equal(gs_trace_measurement_begin(t, 1, "two ranks \"quoted\""), GS_OK);
  for (int rank = 0; rank < 2; rank++) {
    assert_int_equal(gs_trace_attach(t, 1, rank, -1, NULL), GS_OK);
    record_steps(0, 3);
    gs_trace_detach();
  }
  assert_int_equal(gs_trace_write(t), GS_OK);

  gs_trace_view v;
  assert_int_equal(gs_trace_read(path, 0, &v), GS_OK);
  assert_int_equal(v.n_ranks, 1);
  assert_int_equal((int)v.steps, 2);
  const gs_trace_lane *host = &v.ranks[0].lanes[GS_TRACE_HOST_LANE];
  assert_string_equal(host->name, "host");
  // Five steps ran, two were kept; the run frame is always kept.
  assert_int_equal((int)count_named(host, "step"), 2);
  assert_int_equal((int)count_named(host, "forward"), 2);
  assert_int_equal((int)count_named(host, "run"), 1);
  for (size_t i = 0; i < host->n; i++) {
    assert_true(host->spans[i].step < 2);
    assert_true(host->spans[i].end >= host->spans[i].begin);
    if (i > 0) assert_true(host->spans[i].begin >= host->spans[i - 1].begin);
    if (strcmp(host->spans[i].name, "allreduce bucket") == 0) {
      assert_int_equal(host->spans[i].kind, GS_TRACE_COMM);
      assert_int_equal((int)host->spans[i].index, 2);
    }
  }
  gs_trace_view_free(&v);
  assert_int_equal(gs_trace_read(path, 1, &v), GS_OK);
  assert_int_equal(v.n_ranks, 2);
  assert_int_equal((int)count_named(&v.ranks[1].lanes[0], "lockstep"), 2);
  gs_trace_view_free(&v);

  // Measuring measurement 1 again drops what it held.
  assert_int_equal(gs_trace_measurement_begin(t, 1, "again"), GS_OK);
  assert_int_equal(gs_trace_write(t), GS_OK);
  assert_int_equal(gs_trace_read(path, 1, &v), GS_OK);
  assert_int_equal(v.n_ranks, 0);
  gs_trace_view_free(&v);
  gs_trace_free(t);
}

static void test_unattached_thread_records_nothing(void **state) {
  (void)state;
  assert_null(gs_trace_bound());
  gs_trace_begin(GS_TRACE_COMPUTE, "forward", -1, NULL);
  assert_int_equal(gs_trace_depth(), 0);
  gs_trace_end();
  gs_trace_abandon(0);
}

static void test_abandon_closes_open_ranges(void **state) {
  char path[512];
  gs_trace *t = attached_trace(*state, "a.json", 3, path, sizeof path);
  gs_trace_begin(GS_TRACE_RUN, "run", 0, NULL);
  gs_trace_step_open(0, 0);
  gs_trace_begin(GS_TRACE_STEP, "step", -1, NULL);
  gs_trace_begin(GS_TRACE_COMM, "allreduce", -1, NULL);
  assert_int_equal(gs_trace_depth(), 3);
  gs_trace_abandon(0);
  assert_int_equal(gs_trace_depth(), 0);
  assert_int_equal(gs_trace_bound()->recording, 0);
  gs_trace_detach();
  gs_trace_free(t);
}

static void test_not_a_trace(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "r.json", path, sizeof path);
  write_text(path, "{\"schema\": \"gpuscale/result/v1\"}");
  gs_trace_view v;
  assert_int_equal(gs_trace_read(path, 0, &v), GS_ERR_FORMAT);
  assert_error_mentions("not a gpuscale trace");
  write_text(path, "{\"traceEvents\": [");
  assert_int_equal(gs_trace_read(path, 0, &v), GS_ERR_FORMAT);
  assert_int_equal(count_entries(fx->dir, "r.json"), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kinds),
      cmocka_unit_test_setup_teardown(test_bound_and_round_trip, setup, teardown),
      cmocka_unit_test(test_unattached_thread_records_nothing),
      cmocka_unit_test_setup_teardown(test_abandon_closes_open_ranges, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_a_trace, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
