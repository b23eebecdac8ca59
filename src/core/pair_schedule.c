/* The round-robin tournament of GPUs and the bisection of nodes
 * (pair_schedule.h; docs/check.md, "Localization by pairs"). */
#include "core/pair_schedule.h"

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
