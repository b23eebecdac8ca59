/* Unit tests of mlp's pipeline pieces: the GPipe and 1F1B orders of a
 * stage's passes (every micro-batch once each way, warmup / steady /
 * cooldown, the forwards in flight that bound 1F1B's memory), the grouped
 * transfers between them (a simulation in which a send completes only when
 * its receiver has posted the receive, as NCCL's do: no schedule may
 * deadlock, and each pair's messages arrive in the order they were sent),
 * the links between neighbour stages opened before the first step (a
 * simulation of NCCL's lazy connection: a schedule of one micro-batch
 * deadlocks without them),
 * the stage split by layer cost and by --stages, the micro-batch split,
 * and the option checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "workloads/mlp/pipeline.h"
#include "workloads/mlp/schedule.h"

#define MAX_STAGES 8
#define MAX_MICRO 16

static void assert_order(gs_pp_schedule sch, int P, int s, int M, const char *expect) {
  gs_pp_action order[2 * MAX_MICRO];
  gs_pp_schedule_order(sch, P, s, M, order);
  char text[8 * MAX_MICRO] = "";
  for (int k = 0; k < 2 * M; k++) {
    char one[8];
    snprintf(one, sizeof one, "%s%c%d", k ? " " : "", order[k].pass == GS_PP_FORWARD ? 'F' : 'B',
             order[k].micro);
    strcat(text, one);
  }
  assert_string_equal(text, expect);
}

static void test_gpipe_all_forwards_then_all_backwards(void **unused) {
  (void)unused;
  assert_order(GS_PP_GPIPE, 3, 1, 4, "F0 F1 F2 F3 B0 B1 B2 B3");
  assert_order(GS_PP_GPIPE, 2, 0, 1, "F0 B0");
}

static void test_1f1b_warmup_steady_cooldown(void **unused) {
  (void)unused;
  // Stage 0 of 4: 3 warmup forwards, steady pairs, 3 cooldown backwards.
  assert_order(GS_PP_1F1B, 4, 0, 6, "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  assert_order(GS_PP_1F1B, 4, 2, 6, "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5");
  // The last stage has no warmup: one forward, one backward.
  assert_order(GS_PP_1F1B, 4, 3, 3, "F0 B0 F1 B1 F2 B2");
  // Fewer micro-batches than the warmup wants: all forwards, then all backwards.
  assert_order(GS_PP_1F1B, 4, 0, 2, "F0 F1 B0 B1");
  assert_int_equal(gs_pp_warmup(4, 0, 6), 3);
  assert_int_equal(gs_pp_warmup(4, 1, 1), 1);
  assert_int_equal(gs_pp_warmup(4, 3, 8), 0);
}

/* Every micro-batch forward once and backward once after it, backwards in
 * micro-batch order, and the forwards in flight: at most stages - stage
 * with 1F1B (its memory bound), all M with GPipe. */
static void test_orders_are_complete(void **unused) {
  (void)unused;
  for (int sch = 0; sch < 2; sch++)
    for (int P = 1; P <= MAX_STAGES; P++)
      for (int s = 0; s < P; s++)
        for (int M = 1; M <= MAX_MICRO; M++) {
          gs_pp_action order[2 * MAX_MICRO];
          gs_pp_schedule_order((gs_pp_schedule)sch, P, s, M, order);
          int forwards = 0, backwards = 0, peak = 0;
          for (int k = 0; k < 2 * M; k++) {
            if (order[k].pass == GS_PP_FORWARD) {
              assert_int_equal(order[k].micro, forwards++);
            } else {
              assert_int_equal(order[k].micro, backwards++);
              assert_true(order[k].micro < forwards);
            }
            if (forwards - backwards > peak) peak = forwards - backwards;
          }
          assert_int_equal(forwards, M);
          assert_int_equal(backwards, M);
          if (sch == GS_PP_1F1B)
            assert_int_equal(peak, M < P - s ? M : P - s);
          else
            assert_int_equal(peak, M);
        }
}

/* One stage's groups of transfers in program order. */
#define MAX_GROUPS (2 * (2 * MAX_MICRO + 1))
typedef struct {
  gs_pp_transfer t[MAX_GROUPS + 1][4];
  int n[MAX_GROUPS + 1];
  int done[MAX_GROUPS + 1][4];
  int groups, at;
} stage_sim;

static int matches(const gs_pp_transfer *a, int a_stage, const gs_pp_transfer *b, int b_stage) {
  return a->send != b->send && a->peer_stage == b_stage && b->peer_stage == a_stage &&
         a->pass == b->pass && a->micro == b->micro;
}

/* Runs the stages' groups where a transfer completes only when both sides
 * have it in their current group; returns 1 when every stage finishes.
 * `ungrouped`: each transfer alone, the send before the receive;
 * `linked`: the group of gs_pp_link_transfers first. */
static int simulate(gs_pp_schedule sch, int P, int M, int ungrouped, int linked) {
  static stage_sim sim[MAX_STAGES];
  for (int s = 0; s < P; s++) {
    gs_pp_action order[2 * MAX_MICRO];
    gs_pp_schedule_order(sch, P, s, M, order);
    stage_sim *a = &sim[s];
    memset(a, 0, sizeof *a);
    if (linked) a->n[a->groups] = gs_pp_link_transfers(s, P, a->t[a->groups]), a->groups++;
    for (int k = 0; k <= 2 * M; k++) {
      gs_pp_transfer t[2];
      const int n = gs_pp_transfers_before(order, 2 * M, k, s, P, t);
      for (int i = 0; ungrouped && i < n; i++) a->t[a->groups][0] = t[i], a->n[a->groups++] = 1;
      if (ungrouped) continue;
      memcpy(a->t[a->groups], t, (size_t)n * sizeof *t);
      a->n[a->groups++] = n;
    }
  }
  for (int progress = 1; progress;) {
    progress = 0;
    for (int s = 0; s < P; s++) {
      stage_sim *a = &sim[s];
      if (a->at == a->groups) continue;
      for (int i = 0; i < a->n[a->at]; i++) {
        if (a->done[a->at][i]) continue;
        const int q = a->t[a->at][i].peer_stage;
        stage_sim *b = &sim[q];
        if (b->at == b->groups) continue;
        for (int j = 0; j < b->n[b->at]; j++)
          if (!b->done[b->at][j] && matches(&a->t[a->at][i], s, &b->t[b->at][j], q)) {
            a->done[a->at][i] = b->done[b->at][j] = 1;
            progress = 1;
          }
      }
      int complete = 1;
      for (int i = 0; i < a->n[a->at]; i++) complete = complete && a->done[a->at][i];
      if (complete) a->at++, progress = 1;
    }
  }
  for (int s = 0; s < P; s++)
    if (sim[s].at != sim[s].groups) return 0;
  return 1;
}

/* Between each pair of stages, the tensors sent in program order are the
 * ones received in program order (messages of a pair are FIFO). */
static void assert_fifo(gs_pp_schedule sch, int P, int M) {
  for (int s = 0; s + 1 < P; s++)
    for (int dir = 0; dir < 2; dir++) {
      const int from = dir ? s + 1 : s, to = dir ? s : s + 1;
      int sent[2 * MAX_MICRO], got[2 * MAX_MICRO], ns = 0, ng = 0;
      gs_pp_action order[2 * MAX_MICRO];
      gs_pp_transfer t[2];
      gs_pp_schedule_order(sch, P, from, M, order);
      for (int k = 0; k <= 2 * M; k++)
        for (int i = 0, n = gs_pp_transfers_before(order, 2 * M, k, from, P, t); i < n; i++)
          if (t[i].send && t[i].peer_stage == to) sent[ns++] = t[i].pass * 1000 + t[i].micro;
      gs_pp_schedule_order(sch, P, to, M, order);
      for (int k = 0; k <= 2 * M; k++)
        for (int i = 0, n = gs_pp_transfers_before(order, 2 * M, k, to, P, t); i < n; i++)
          if (!t[i].send && t[i].peer_stage == from) got[ng++] = t[i].pass * 1000 + t[i].micro;
      assert_int_equal(ns, M);
      assert_int_equal(ng, M);
      assert_memory_equal(sent, got, sizeof(int) * (size_t)M);
    }
}

static void test_transfers_never_deadlock(void **unused) {
  (void)unused;
  for (int sch = 0; sch < 2; sch++)
    for (int P = 1; P <= MAX_STAGES; P++)
      for (int M = 1; M <= MAX_MICRO; M++) {
        assert_true(simulate((gs_pp_schedule)sch, P, M, 0, 0));
        assert_true(simulate((gs_pp_schedule)sch, P, M, 0, 1));
        assert_fifo((gs_pp_schedule)sch, P, M);
      }
}

/* Ungrouped transfers (send, then receive, one at a time) deadlock 1F1B:
 * after F1, stage 0 of 2 sends its activations while stage 1, after B0,
 * sends its gradients, and each waits for the other to receive. GPipe
 * survives it. So the simulation can fail, and its success above means
 * something. */
static void test_simulation_catches_a_deadlock(void **unused) {
  (void)unused;
  assert_false(simulate(GS_PP_1F1B, 2, 2, 1, 0));
  assert_false(simulate(GS_PP_1F1B, 4, 8, 1, 0));
  assert_true(simulate(GS_PP_GPIPE, 4, 8, 1, 0));
}

/* Links as NCCL opens them (transport.cc, ncclTransportP2pSetup): the
 * first group of a rank that sends to (receives from) a peer opens that
 * direction, and its ncclGroupEnd returns only once the peer has opened
 * it too, in a group of its own that ends with the same pairwise barrier.
 * So the groups that open links meet: the groups joined by a link they
 * both open run together. Returns 1 when every meeting holds at most one
 * group of each stage (a stage cannot be in two groups at once; with 2
 * ranks the two sides would also exchange connection data of different
 * sizes) and the meetings can run in an order that keeps every stage's
 * program order. `linked`: gs_pp_link_transfers' group first. */
#define LINK_GROUPS (MAX_GROUPS + 1)
static int meeting_of(int *parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

static int links_open_safely(gs_pp_schedule sch, int P, int M, int linked) {
  static gs_pp_transfer t[MAX_STAGES][LINK_GROUPS][4];
  static int n[MAX_STAGES][LINK_GROUPS], parent[MAX_STAGES * LINK_GROUPS];
  int groups[MAX_STAGES], opener[MAX_STAGES][2][MAX_STAGES]; /* [stage][send][peer] */
  int opens[MAX_STAGES][LINK_GROUPS];
  memset(opener, -1, sizeof opener);
  memset(opens, 0, sizeof opens);
  for (int s = 0; s < P; s++) {
    gs_pp_action order[2 * MAX_MICRO];
    gs_pp_schedule_order(sch, P, s, M, order);
    groups[s] = 0;
    if (linked) n[s][groups[s]++] = gs_pp_link_transfers(s, P, t[s][0]);
    for (int k = 0; k <= 2 * M; k++, groups[s]++)
      n[s][groups[s]] = gs_pp_transfers_before(order, 2 * M, k, s, P, t[s][groups[s]]);
    for (int g = 0; g < groups[s]; g++)
      for (int i = 0; i < n[s][g]; i++) {
        int *o = &opener[s][t[s][g][i].send][t[s][g][i].peer_stage];
        if (*o < 0) *o = g, opens[s][g] = 1;
      }
  }
  for (int x = 0; x < MAX_STAGES * LINK_GROUPS; x++) parent[x] = x;
  for (int s = 0; s < P; s++)
    for (int q = 0; q < P; q++) {
      // The direction s -> q: s's sending group meets q's receiving group.
      assert_true((opener[s][1][q] < 0) == (opener[q][0][s] < 0));
      if (opener[s][1][q] < 0) continue;
      const int a = meeting_of(parent, s * LINK_GROUPS + opener[s][1][q]);
      const int b = meeting_of(parent, q * LINK_GROUPS + opener[q][0][s]);
      parent[a] = b;
    }
  // At most one group of a stage in a meeting.
  for (int s = 0; s < P; s++)
    for (int g = 0; g < groups[s]; g++)
      for (int h = g + 1; opens[s][g] && h < groups[s]; h++)
        if (opens[s][h] && meeting_of(parent, s * LINK_GROUPS + g) ==
                               meeting_of(parent, s * LINK_GROUPS + h))
          return 0;
  // Meetings in some order: repeatedly run a meeting whose every group is
  // the next opening group of its stage.
  int next[MAX_STAGES] = {0}, left = 0;
  for (int s = 0; s < P; s++)
    for (int g = 0; g < groups[s]; g++) left += opens[s][g];
  for (int ran = 1; ran && left > 0;) {
    ran = 0;
    for (int s = 0; s < P && !ran; s++) {
      while (next[s] < groups[s] && !opens[s][next[s]]) next[s]++;
      if (next[s] == groups[s]) continue;
      const int m = meeting_of(parent, s * LINK_GROUPS + next[s]);
      int ready = 1, members = 0;
      for (int q = 0; q < P; q++)
        for (int g = 0; g < groups[q]; g++)
          if (opens[q][g] && meeting_of(parent, q * LINK_GROUPS + g) == m) {
            members++;
            int first = next[q];
            while (first < groups[q] && !opens[q][first]) first++;
            ready = ready && first == g;
          }
      if (!ready) continue;
      for (int q = 0; q < P; q++)
        for (int g = 0; g < groups[q]; g++)
          if (opens[q][g] && meeting_of(parent, q * LINK_GROUPS + g) == m) next[q] = g + 1;
      left -= members;
      ran = 1;
    }
  }
  return left == 0;
}

/* With the links opened first, every schedule's first step opens nothing
 * more and never deadlocks on a link, whatever P and M. */
static void test_links_open_before_the_first_step(void **unused) {
  (void)unused;
  for (int sch = 0; sch < 2; sch++)
    for (int P = 1; P <= MAX_STAGES; P++)
      for (int M = 1; M <= MAX_MICRO; M++) {
        assert_true(links_open_safely((gs_pp_schedule)sch, P, M, 1));
        gs_pp_transfer t[4];
        for (int s = 0; s < P; s++) {
          const int n = gs_pp_link_transfers(s, P, t);
          assert_int_equal(n, 2 * ((s > 0) + (s + 1 < P)));
          for (int i = 0; i < n; i++) {
            assert_int_equal(t[i].micro, -1);
            // Upward messages are forward transfers, downward backward ones.
            const int up = t[i].send == (t[i].peer_stage > s);
            assert_int_equal(t[i].pass, up ? GS_PP_FORWARD : GS_PP_BACKWARD);
          }
        }
      }
}

/* Without them, M = 1 (bench/pipeline.sh's first run, which hung on 2
 * H200s) opens both directions between stage s and s + 1 in s's one group
 * after F0, and in two groups of s + 1 (before F0, after B0), at every P
 * and under either schedule. From M = 2 on, each non-last stage runs F1
 * right after F0 and so opens one direction at a time, as its peer does:
 * the 1..16 micro-batches of 2..8 stages fail at M = 1 only. */
static void test_lazy_links_deadlock_at_one_micro_batch(void **unused) {
  (void)unused;
  for (int sch = 0; sch < 2; sch++)
    for (int P = 2; P <= MAX_STAGES; P++)
      for (int M = 1; M <= MAX_MICRO; M++)
        assert_int_equal(links_open_safely((gs_pp_schedule)sch, P, M, 0), M > 1);
  assert_true(links_open_safely(GS_PP_1F1B, 1, 1, 0));
}

static gs_mlp_model model_of(const uint32_t *w, int n) {
  gs_mlp_model m;
  memset(&m, 0, sizeof m);
  m.n_layers = n - 1;
  for (int i = 0; i < n; i++) m.widths[i] = w[i];
  return m;
}

static void test_split_balances_layer_cost(void **unused) {
  (void)unused;
  // medium: layer costs 2 x 12800 (layer 0 computes no input gradient),
  // 3 x 32768, 3 x 8192 and 3 x 192 multiply-adds per sample of a step.
  const uint32_t medium[] = {50, 256, 128, 64, 3};
  gs_mlp_model m = model_of(medium, 5);
  assert_int_equal(gs_mlp_pp_layer_cost(&m, 0), 2 * 12800);
  assert_int_equal(gs_mlp_pp_layer_cost(&m, 1), 3 * 32768);
  int first[5];
  gs_mlp_pp_split(&m, 2, NULL, first);
  assert_true(first[0] == 0 && first[1] == 1 && first[2] == 4);
  gs_mlp_pp_split(&m, 3, NULL, first);
  assert_true(first[1] == 1 && first[2] == 2 && first[3] == 4);
  gs_mlp_pp_split(&m, 4, NULL, first);
  assert_true(first[1] == 1 && first[2] == 2 && first[3] == 3 && first[4] == 4);
  // large: 2 x 51200, then 3 x 1048576, 524288, 262144, 131072, 768: the
  // two first layers (3248128) against the four last (2754816).
  const uint32_t large[] = {50, 1024, 1024, 512, 512, 256, 3};
  m = model_of(large, 7);
  gs_mlp_pp_split(&m, 2, NULL, first);
  assert_true(first[0] == 0 && first[1] == 2 && first[2] == 6);
  // Equal layers split evenly (the first stage 2/3 of a layer lighter).
  const uint32_t even[] = {64, 64, 64, 64, 64, 64, 64, 64, 64};
  m = model_of(even, 9);
  gs_mlp_pp_split(&m, 4, NULL, first);
  assert_true(first[1] == 2 && first[2] == 4 && first[3] == 6 && first[4] == 8);
  // A first layer 1.5 times as costly as the others makes equal stages of
  // equal layer counts: 2 x 1.5 + 3 x 3 = 12 = 4 x 3 at P = 2 (and
  // 2 x 1.5 + 3 = 6 = 2 x 3 at P = 4): bench/pipeline.sh's model.
  const uint32_t balanced[] = {96, 64, 64, 64, 64, 64, 64, 64, 64};
  m = model_of(balanced, 9);
  uint64_t cost[2] = {0, 0};
  gs_mlp_pp_split(&m, 2, NULL, first);
  assert_true(first[1] == 4);
  for (int l = 0; l < 8; l++) cost[l >= first[1]] += gs_mlp_pp_layer_cost(&m, l);
  assert_int_equal(cost[0], cost[1]);
  gs_mlp_pp_split(&m, 4, NULL, first);
  assert_true(first[1] == 2 && first[2] == 4 && first[3] == 6);
  // --stages boundaries as given.
  gs_u64_list bounds = {.n = 2, .v = {3, 5}};
  gs_mlp_pp_split(&m, 3, &bounds, first);
  assert_true(first[0] == 0 && first[1] == 3 && first[2] == 5 && first[3] == 8);
}

static void test_micro_rows(void **unused) {
  (void)unused;
  const uint64_t expect_first[] = {0, 3, 6, 8}, expect_count[] = {3, 3, 2, 2};
  for (int j = 0; j < 4; j++) {
    uint64_t f = 0, n = 0;
    gs_mlp_pp_micro_rows(10, 4, j, &f, &n);
    assert_int_equal(f, expect_first[j]);
    assert_int_equal(n, expect_count[j]);
  }
  assert_int_equal(gs_mlp_pp_stage_of(5, 2), 1);
  assert_int_equal(gs_mlp_pp_replica_of(5, 2), 2);
}

static void test_option_checks(void **unused) {
  (void)unused;
  const uint32_t medium[] = {50, 256, 128, 64, 3};
  const gs_mlp_model m = model_of(medium, 5);
  gs_option table[GS_MLP_PP_OPTIONS];
  gs_mlp_pp_options p;
  gs_mlp_pp_options_bind(&p, table);
  assert_string_equal(table[0].name, "pp");
  assert_int_equal(gs_mlp_pp_options_check(&p, &m), GS_OK);
  p.given_micro = 1;
  assert_int_equal(gs_mlp_pp_options_check(&p, &m), GS_ERR_USAGE);
  p.stages = 5;
  assert_int_equal(gs_mlp_pp_options_check(&p, &m), GS_ERR_USAGE);
  p.stages = 3;
  assert_int_equal(gs_mlp_pp_options_check(&p, &m), GS_OK);
  p.given_bounds = 1;
  p.bounds = (gs_u64_list){.n = 1, .v = {2}};
  assert_int_equal(gs_mlp_pp_options_check(&p, &m), GS_ERR_USAGE); /* needs 2 */
  p.bounds = (gs_u64_list){.n = 2, .v = {2, 2}};
  assert_int_equal(gs_mlp_pp_options_check(&p, &m), GS_ERR_USAGE); /* not increasing */
  p.bounds = (gs_u64_list){.n = 2, .v = {1, 4}};
  assert_int_equal(gs_mlp_pp_options_check(&p, &m), GS_ERR_USAGE); /* 4 is past the last */
  p.bounds = (gs_u64_list){.n = 2, .v = {1, 3}};
  assert_int_equal(gs_mlp_pp_options_check(&p, &m), GS_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpipe_all_forwards_then_all_backwards),
      cmocka_unit_test(test_1f1b_warmup_steady_cooldown),
      cmocka_unit_test(test_orders_are_complete),
      cmocka_unit_test(test_transfers_never_deadlock),
      cmocka_unit_test(test_simulation_catches_a_deadlock),
      cmocka_unit_test(test_links_open_before_the_first_step),
      cmocka_unit_test(test_lazy_links_deadlock_at_one_micro_batch),
      cmocka_unit_test(test_split_balances_layer_cost),
      cmocka_unit_test(test_micro_rows),
      cmocka_unit_test(test_option_checks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
