/* Unit tests of platform/comm on the cpu backend in threads mode: every
 * collective between rank threads, the timeout that names a stalled rank,
 * point-to-point groups (in order, only the pair taking part, a receive's
 * timeout naming the peer that did not send), groups of ranks (an
 * allreduce over the members only, the same bits on each; a member that
 * does not come ends the wait within the timeout and stops the world),
 * and the runner's communicator for a workload that communicates (its
 * exposed communication lands in the rank records' comm_seconds). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "runner/runner.h"
#include "platform/comm.h"

enum { RANKS = 3, COUNT = 5 };

typedef struct {
  gs_comm *comm;
  gs_status status;
  double allreduce[COUNT], allgather[COUNT * RANKS], scattered[COUNT], broadcast[COUNT];
  double alltoall[RANKS], shifted[COUNT], reduced[COUNT], at_root[COUNT];
  char error[256];
} rank_out;

static void *every_collective(void *arg) {
  rank_out *o = arg;
  int r = gs_comm_rank(o->comm), n = gs_comm_size(o->comm);
  double mine[COUNT * RANKS], to_each[RANKS];
  for (int i = 0; i < COUNT * RANKS; i++) mine[i] = 100.0 * r + i;
  for (int j = 0; j < RANKS; j++) to_each[j] = 10.0 * r + j;
  gs_status s =
      gs_comm_allreduce(o->comm, mine, o->allreduce, COUNT, GS_DTYPE_DOUBLE, GS_REDOP_SUM, NULL);
  if (s == GS_OK) s = gs_comm_allgather(o->comm, mine, o->allgather, COUNT, GS_DTYPE_DOUBLE, NULL);
  if (s == GS_OK)
    s = gs_comm_collective(o->comm,
                           &(gs_comm_call){.op = GS_COLL_REDUCESCATTER, .send = mine,
                                           .recv = o->scattered, .count = COUNT,
                                           .dtype = GS_DTYPE_DOUBLE, .redop = GS_REDOP_MAX},
                           NULL);
  if (s == GS_OK)
    s = gs_comm_broadcast(o->comm, mine, o->broadcast, COUNT, GS_DTYPE_DOUBLE, 2, NULL);
  if (s == GS_OK)
    s = gs_comm_collective(o->comm,
                           &(gs_comm_call){.op = GS_COLL_ALLTOALL, .send = to_each,
                                           .recv = o->alltoall, .count = 1,
                                           .dtype = GS_DTYPE_DOUBLE},
                           NULL);
  if (s == GS_OK)
    s = gs_comm_collective(o->comm,
                           &(gs_comm_call){.op = GS_COLL_SENDRECV, .send = mine,
                                           .recv = o->shifted, .count = COUNT,
                                           .dtype = GS_DTYPE_DOUBLE, .send_peer = (r + 1) % n,
                                           .recv_peer = (r + n - 1) % n},
                           NULL);
  // Reduce: only the root (1) receives; the others' buffers stay as they were.
  for (int i = 0; i < COUNT; i++) o->at_root[i] = -1.0;
  if (s == GS_OK)
    s = gs_comm_collective(o->comm,
                           &(gs_comm_call){.op = GS_COLL_REDUCE, .send = mine,
                                           .recv = o->at_root, .count = COUNT,
                                           .dtype = GS_DTYPE_DOUBLE, .redop = GS_REDOP_MIN,
                                           .root = 1},
                           NULL);
  // In place: the result replaces the input.
  if (s == GS_OK) {
    memcpy(o->reduced, mine, sizeof o->reduced);
    s = gs_comm_allreduce(o->comm, o->reduced, o->reduced, COUNT, GS_DTYPE_DOUBLE, GS_REDOP_AVG,
                          NULL);
  }
  o->status = s;
  return NULL;
}

static gs_comm_world *threads_world(int ranks, double timeout) {
  gs_comm_job job;
  gs_comm_job_detect(&job);
  job.launch = GS_COMM_LAUNCH_THREADS;
  gs_comm_world_config wc = {
      .backend = GS_BACKEND_CPU, .local_ranks = ranks, .timeout_seconds = timeout};
  gs_comm_world *w = NULL;
  assert_int_equal(gs_comm_world_create(&job, &wc, &w), GS_OK);
  return w;
}

static void test_every_collective(void **state) {
  (void)state;
  gs_comm_world *w = threads_world(RANKS, 10.0);
  assert_int_equal(gs_comm_world_size(w), RANKS);
  rank_out out[RANKS];
  pthread_t t[RANKS];
  memset(out, 0, sizeof out);
  for (int k = 0; k < RANKS; k++) {
    out[k].comm = gs_comm_world_rank(w, k);
    pthread_create(&t[k], NULL, every_collective, &out[k]);
  }
  for (int k = 0; k < RANKS; k++) pthread_join(t[k], NULL);
  for (int k = 0; k < RANKS; k++) {
    assert_int_equal(out[k].status, GS_OK);
    for (int i = 0; i < COUNT; i++) {
      assert_float_equal(out[k].allreduce[i], 300.0 + 3 * i, 1e-12);         /* 0+100+200 + 3i */
      assert_float_equal(out[k].scattered[i], 200.0 + k * COUNT + i, 1e-12); /* max: rank 2 */
      assert_float_equal(out[k].broadcast[i], 200.0 + i, 1e-12);
      assert_float_equal(out[k].shifted[i], 100.0 * ((k + RANKS - 1) % RANKS) + i, 1e-12);
      assert_float_equal(out[k].reduced[i], 100.0 + i, 1e-12); /* avg */
      assert_float_equal(out[k].at_root[i], k == 1 ? (double)i : -1.0, 1e-12); /* min: rank 0 */
    }
    for (int b = 0; b < RANKS; b++) {
      for (int i = 0; i < COUNT; i++)
        assert_float_equal(out[k].allgather[b * COUNT + i], 100.0 * b + i, 1e-12);
      assert_float_equal(out[k].alltoall[b], 10.0 * b + k, 1e-12);
    }
  }
  gs_comm_world_destroy(w);
}

static void *lone_barrier(void *arg) {
  rank_out *o = arg;
  gs_comm_progress(o->comm, 0);
  o->status = gs_comm_barrier(o->comm);
  snprintf(o->error, sizeof o->error, "%s", gs_last_error());
  return NULL;
}

static void test_timeout_names_the_stalled_rank(void **state) {
  (void)state;
  // Ranks 0 and 1 arrive, rank 2 never does: both stop within the timeout.
  gs_comm_world *w = threads_world(3, 0.2);
  rank_out out[2];
  pthread_t t[2];
  memset(out, 0, sizeof out);
  for (int k = 0; k < 2; k++) {
    out[k].comm = gs_comm_world_rank(w, k);
    pthread_create(&t[k], NULL, lone_barrier, &out[k]);
  }
  for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
  int timed_out = 0, aborted = 0;
  for (int k = 0; k < 2; k++) {
    if (out[k].status == GS_ERR_TIMEOUT) assert_non_null(strstr(out[k].error, "stalled: rank 2"));
    timed_out += out[k].status == GS_ERR_TIMEOUT;
    aborted += out[k].status == GS_ERR_ABORTED;
  }
  assert_int_equal(timed_out + aborted, 2);
  assert_true(timed_out >= 1);
  // The late rank finds the world aborted instead of waiting.
  assert_int_equal(gs_comm_barrier(gs_comm_world_rank(w, 2)), GS_ERR_ABORTED);
  gs_comm_world_destroy(w);
}

/* ---- point to point ------------------------------------------------------------ */

typedef struct {
  gs_comm *comm;
  gs_status status;
  float got[3][4];
  char error[256];
} p2p_out;

/* Rank 0 sends three messages to rank 1 and receives one back; rank 1
 * sends its message and receives rank 0's three in one group each time
 * (send and receive together, as a pipeline's steady state). */
static void *p2p_pair(void *arg) {
  p2p_out *o = arg;
  const int r = gs_comm_rank(o->comm);
  float out[3][4], back[4] = {9, 8, 7, 6};
  for (int m = 0; m < 3; m++)
    for (int i = 0; i < 4; i++) out[m][i] = (float)(10 * m + i);
  gs_status s = GS_OK;
  if (r == 0) {
    for (int m = 0; m < 3 && s == GS_OK; m++) {
      gs_comm_p2p_op op = {.send = 1, .buf = out[m], .count = 4, .dtype = GS_DTYPE_FLOAT, .peer = 1};
      s = gs_comm_p2p(o->comm, &op, 1, NULL);
    }
    gs_comm_p2p_op op = {.send = 0, .buf = o->got[0], .count = 4, .dtype = GS_DTYPE_FLOAT, .peer = 1};
    if (s == GS_OK) s = gs_comm_p2p(o->comm, &op, 1, NULL);
  } else {
    gs_comm_p2p_op ops[2] = {
        {.send = 1, .buf = back, .count = 4, .dtype = GS_DTYPE_FLOAT, .peer = 0},
        {.send = 0, .buf = o->got[0], .count = 4, .dtype = GS_DTYPE_FLOAT, .peer = 0}};
    s = gs_comm_p2p(o->comm, ops, 2, NULL);
    for (int m = 1; m < 3 && s == GS_OK; m++) {
      ops[1].buf = o->got[m];
      s = gs_comm_p2p(o->comm, &ops[1], 1, NULL);
    }
  }
  if (s == GS_OK) s = gs_comm_p2p_drain(o->comm);
  o->status = s;
  snprintf(o->error, sizeof o->error, "%s", gs_last_error());
  return NULL;
}

static void test_p2p_in_order_and_grouped(void **state) {
  (void)state;
  // Rank 2 takes no part: point to point involves only the pair.
  gs_comm_world *w = threads_world(3, 10.0);
  p2p_out out[2];
  pthread_t t[2];
  memset(out, 0, sizeof out);
  for (int k = 0; k < 2; k++) {
    out[k].comm = gs_comm_world_rank(w, k);
    pthread_create(&t[k], NULL, p2p_pair, &out[k]);
  }
  for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
  assert_int_equal(out[0].status, GS_OK);
  assert_int_equal(out[1].status, GS_OK);
  const float back[4] = {9, 8, 7, 6};
  assert_memory_equal(out[0].got[0], back, sizeof back);
  for (int m = 0; m < 3; m++)
    for (int i = 0; i < 4; i++) assert_float_equal(out[1].got[m][i], 10 * m + i, 0.0);
  gs_comm_world_destroy(w);
}

static void *lone_receive(void *arg) {
  p2p_out *o = arg;
  gs_comm_p2p_op op = {.send = 0, .buf = o->got[0], .count = 4, .dtype = GS_DTYPE_FLOAT, .peer = 2};
  o->status = gs_comm_p2p(o->comm, &op, 1, NULL);
  snprintf(o->error, sizeof o->error, "%s", gs_last_error());
  return NULL;
}

static void test_p2p_timeout_names_the_peer(void **state) {
  (void)state;
  // Rank 0 waits for rank 2, which never sends: it stops within the timeout.
  gs_comm_world *w = threads_world(3, 0.2);
  p2p_out out;
  memset(&out, 0, sizeof out);
  out.comm = gs_comm_world_rank(w, 0);
  pthread_t t;
  pthread_create(&t, NULL, lone_receive, &out);
  pthread_join(t, NULL);
  assert_int_equal(out.status, GS_ERR_TIMEOUT);
  assert_non_null(strstr(out.error, "receive from rank 2"));
  assert_non_null(strstr(out.error, "stalled: rank 2 did not send"));
  // The others find the world aborted instead of waiting.
  assert_int_equal(gs_comm_barrier(gs_comm_world_rank(w, 1)), GS_ERR_ABORTED);
  gs_comm_world_destroy(w);
}

/* ---- groups ---------------------------------------------------------------------- */

typedef struct {
  gs_comm *comm;
  gs_status status;
  int index, size;
  int sums_made; /* allreduces this rank makes once the groups exist: 2, 1 or 0 */
  float sums[2][3];
  char error[256];
} group_out;

/* Ranks of the same parity form a group (as a pipeline stage's replicas:
 * rank = replica x stages + stage) and sum over it, then take the maximum
 * in place. */
static void *group_sums(void *arg) {
  group_out *o = arg;
  const int r = gs_comm_rank(o->comm);
  gs_comm_group *g = NULL;
  gs_status s = gs_comm_group_create(o->comm, r % 2, &g);
  if (s == GS_OK) {
    o->index = gs_comm_group_rank(g);
    o->size = gs_comm_group_size(g);
  }
  float mine[3] = {0.1f * (float)r, 1.0f + (float)r, -2.5f * (float)r};
  if (s == GS_OK && o->sums_made >= 1)
    s = gs_comm_group_allreduce(g, mine, o->sums[0], 3, GS_DTYPE_FLOAT, GS_REDOP_SUM, NULL);
  memcpy(o->sums[1], mine, sizeof mine);
  if (s == GS_OK && o->sums_made >= 2)
    s = gs_comm_group_allreduce(g, o->sums[1], o->sums[1], 3, GS_DTYPE_FLOAT, GS_REDOP_MAX, NULL);
  o->status = s;
  snprintf(o->error, sizeof o->error, "%s", gs_last_error());
  gs_comm_group_destroy(g);
  return NULL;
}

static void run_group_ranks(gs_comm_world *w, group_out *out) {
  pthread_t t[4];
  for (int k = 0; k < 4; k++) {
    out[k].comm = gs_comm_world_rank(w, k);
    pthread_create(&t[k], NULL, group_sums, &out[k]);
  }
  for (int k = 0; k < 4; k++) pthread_join(t[k], NULL);
}

static void test_group_allreduce_over_its_members(void **state) {
  (void)state;
  // Four ranks: groups {0, 2} and {1, 3}.
  gs_comm_world *w = threads_world(4, 10.0);
  group_out out[4];
  memset(out, 0, sizeof out);
  for (int k = 0; k < 4; k++) out[k].sums_made = 2;
  run_group_ranks(w, out);
  for (int k = 0; k < 4; k++) {
    assert_int_equal(out[k].status, GS_OK);
    assert_int_equal(out[k].index, k / 2);
    assert_int_equal(out[k].size, 2);
    const float a = (float)(k % 2), b = (float)(k % 2 + 2);
    // The sum in member order, the same bits on both members.
    const float sum[3] = {0.1f * a + 0.1f * b, (1.0f + a) + (1.0f + b), -2.5f * a + -2.5f * b};
    const float most[3] = {0.1f * b, 1.0f + b, -2.5f * a};
    assert_memory_equal(out[k].sums[0], sum, sizeof sum);
    assert_memory_equal(out[k].sums[1], most, sizeof most);
  }
  gs_comm_world_destroy(w);
}

static void test_group_timeout_names_the_member(void **state) {
  (void)state;
  // Rank 0 sums over {0, 2}; rank 2 never comes.
  gs_comm_world *w = threads_world(4, 0.3);
  group_out out[4];
  memset(out, 0, sizeof out);
  out[0].sums_made = 1;
  out[1].sums_made = out[3].sums_made = 2;
  run_group_ranks(w, out);
  assert_int_equal(out[0].status, GS_ERR_TIMEOUT);
  assert_non_null(strstr(out[0].error, "allreduce over a group of 2"));
  assert_non_null(strstr(out[0].error, "stalled: group member rank 1 did not arrive"));
  assert_int_equal(out[1].status, GS_OK);
  assert_int_equal(out[2].status, GS_OK);
  // The rest of the world stops instead of waiting.
  assert_int_equal(gs_comm_barrier(gs_comm_world_rank(w, 1)), GS_ERR_ABORTED);
  gs_comm_world_destroy(w);
}

/* ---- a workload that communicates, through the runner ----------------------- */

typedef struct {
  gs_comm *comm;
  double value, sum;
} ring_state;

static void *ring_options_new(void) {
  return calloc(1, 1);
}
static void ring_options_free(void *o) {
  free(o);
}
static const gs_option ring_no_options[] = {{.kind = GS_OPT_END}};
static const gs_option *ring_options_table(void *o) {
  (void)o;
  return ring_no_options;
}
static gs_status ring_options_check(void *o) {
  (void)o;
  return GS_OK;
}
static cJSON *ring_options_to_json(const void *o) {
  (void)o;
  return cJSON_CreateObject();
}
static uint64_t ring_work_units(const void *o) {
  (void)o;
  return 4;
}
static void ring_cost(const void *o, uint64_t units, gs_cost *out) {
  (void)o;
  memset(out, 0, sizeof *out);
  out->items = units;
  out->item_unit = "values";
}
static gs_status ring_setup(const void *o, const gs_rank_context *ctx, void **state) {
  (void)o;
  if (!ctx->comm) GS_BUG("the ring workload runs without a communicator");
  ring_state *s = calloc(1, sizeof *s);
  s->comm = ctx->comm;
  s->value = ctx->rank + 1;
  *state = s;
  return GS_OK;
}
static gs_status ring_step(void *state) {
  ring_state *s = state;
  struct timespec pause = {0, 1000000};
  nanosleep(&pause, NULL);
  gs_status st = gs_comm_exposed_begin(s->comm, NULL);
  if (st == GS_OK)
    st = gs_comm_allreduce(s->comm, &s->value, &s->sum, 1, GS_DTYPE_DOUBLE, GS_REDOP_SUM, NULL);
  if (st == GS_OK) st = gs_comm_exposed_end(s->comm, NULL);
  return st;
}
static gs_status ring_verify(void *state, gs_verification *v) {
  ring_state *s = state;
  int n = gs_comm_size(s->comm);
  v->status = s->sum == n * (n + 1) / 2.0 ? GS_VERIFY_PASSED : GS_VERIFY_FAILED;
  return GS_OK;
}
static void ring_teardown(void *state) {
  free(state);
}

static const gs_workload ring_workload = {.key = "ring",
                                          .summary = "test",
                                          .unit_name = "units",
                                          .item_unit = "values",
                                          .communicates = 1,
                                          .options_new = ring_options_new,
                                          .options_free = ring_options_free,
                                          .options_table = ring_options_table,
                                          .options_check = ring_options_check,
                                          .options_to_json = ring_options_to_json,
                                          .work_units = ring_work_units,
                                          .cost = ring_cost,
                                          .setup = ring_setup,
                                          .step = ring_step,
                                          .verify = ring_verify,
                                          .teardown = ring_teardown};

static void test_runner_records_comm_seconds(void **state) {
  (void)state;
  gs_run_config c = {.backend = GS_BACKEND_CPU,
                     .world_size = 2,
                     .warmup = 1,
                     .iters = 5,
                     .runs = 1,
                     .comm_timeout_seconds = 10.0};
  c.devices[0] = c.devices[1] = -1;
  gs_measurement m;
  void *opts = ring_options_new();
  assert_int_equal(gs_runner_measure(&ring_workload, opts, &c, &m), GS_OK);
  assert_int_equal(m.verification.status, GS_VERIFY_PASSED);
  for (int k = 0; k < 2; k++) {
    const gs_rank_record *rec = &m.runs[0].ranks[k];
    assert_int_equal(rec->n_samples, 5);
    assert_non_null(rec->comm_seconds);
    for (size_t i = 0; i < rec->n_samples; i++) {
      assert_true(rec->comm_seconds[i] >= 0.0);
      assert_true(rec->comm_seconds[i] <= rec->wall_seconds[i]);
    }
  }
  gs_measurement_free(&m);
  ring_options_free(opts);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_collective),
      cmocka_unit_test(test_timeout_names_the_stalled_rank),
      cmocka_unit_test(test_p2p_in_order_and_grouped),
      cmocka_unit_test(test_p2p_timeout_names_the_peer),
      cmocka_unit_test(test_group_allreduce_over_its_members),
      cmocka_unit_test(test_group_timeout_names_the_member),
      cmocka_unit_test(test_runner_records_comm_seconds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
