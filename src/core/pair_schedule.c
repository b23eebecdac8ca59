/* The round-robin tournament of GPUs, the bisection of nodes and the
 * slots of a round on hosts with few cores (pair_schedule.h; docs/check.md,
 * "Localization by pairs"). */
#include "core/pair_schedule.h"

#include <string.h>

/* See pair_schedule.h. */
size_t gs_pairs_tournament_rounds(size_t n_units) {
  if (n_units < 2) return 0;
  return n_units % 2 ? n_units : n_units - 1;
}

/* See pair_schedule.h. The circle method over m = n_units rounded up to
 * even: unit m-1 stays, the others turn; in round r unit m-1 meets r and
 * every other u meets (2r - u) mod (m - 1). A partner equal to n_units
 * (the padding of an odd count) is a round out. */
int gs_pairs_tournament_partner(size_t n_units, size_t r, size_t u) {
  if (n_units < 2 || u >= n_units || r >= gs_pairs_tournament_rounds(n_units)) return -1;
  const size_t m = n_units + n_units % 2, k = m - 1;
  size_t p;
  if (u == k)
    p = r;
  else if (u == r)
    p = k;
  else
    p = (2 * r + k - u % k) % k;
  return p >= n_units ? -1 : (int)p;
}

/* See pair_schedule.h. */
size_t gs_pairs_bisection_rounds(size_t n_nodes) {
  size_t rounds = 0;
  while (((size_t)1 << rounds) < n_nodes) rounds++;
  return rounds;
}

/* See pair_schedule.h. */
int gs_pairs_bisection_partner(size_t n_nodes, size_t r, size_t u) {
  if (u >= n_nodes || r >= gs_pairs_bisection_rounds(n_nodes)) return -1;
  const size_t p = u ^ ((size_t)1 << r);
  return p < n_nodes ? (int)p : -1;
}

/* See pair_schedule.h. */
size_t gs_pairs_slots(size_t n, const int *a, const int *b, const int *host_of, const int *cores,
                      size_t n_hosts, int *scratch, size_t *slot) {
  size_t slots = 0;
  if (n > 0) memset(scratch, 0, n * n_hosts * sizeof *scratch);
  for (size_t i = 0; i < n; i++) {
    const int ha = host_of[a[i]], hb = host_of[b[i]];
    size_t s = 0;
    for (; s < slots; s++) {
      int *used = scratch + s * n_hosts;
      const int need_a = used[ha] + 1 + (hb == ha), need_b = used[hb] + 1 + (hb == ha);
      if (need_a <= cores[ha] && need_b <= cores[hb]) break;
    }
    if (s == slots) slots++;
    scratch[s * n_hosts + (size_t)ha]++;
    scratch[s * n_hosts + (size_t)hb]++;
    slot[i] = s;
  }
  return slots;
}
