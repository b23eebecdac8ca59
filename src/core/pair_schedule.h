/* The schedules of localization by pairs (docs/check.md, "Localization by
 * pairs"): rounds of disjoint pairs, so that every pair of a round is
 * measured at the same time without sharing a unit. Pure functions. */
#ifndef GS_PAIR_SCHEDULE_H
#define GS_PAIR_SCHEDULE_H

#include <stddef.h>

/* The partner of unit u (0 .. n_units-1) in round r of the round-robin
 * tournament (the circle method: n_units - 1 rounds for an even count,
 * n_units for an odd one, every pair met once), -1 when u sits out the
 * round. Rounds: gs_pairs_tournament_rounds. */
int gs_pairs_tournament_partner(size_t n_units, size_t r, size_t u);
size_t gs_pairs_tournament_rounds(size_t n_units);

/* The partner of node u in round r of the bisection of nodes: u XOR 2^r,
 * -1 when that node does not exist; ceil(log2 n_nodes) rounds
 * (gs_pairs_bisection_rounds), so every node meets one partner per
 * round, each in a different half of the nodes at that bit. */
int gs_pairs_bisection_partner(size_t n_nodes, size_t r, size_t u);
size_t gs_pairs_bisection_rounds(size_t n_nodes);

/* Splits one round's `n` disjoint pairs of ranks (a[i], b[i]) into slots
 * measured one after another, so that no host runs more of the pairs'
 * ranks at once than it has cores: host_of[rank] in 0 .. n_hosts-1,
 * cores[host] its logical cores. Pair i goes into the first slot, in
 * order, that it fits (an empty slot takes any pair, so a host of fewer
 * cores than a pair's ranks on it gets one pair per slot); slot[i]
 * receives its slot. `scratch` holds n x n_hosts ints. Returns the
 * number of slots (0 when n is 0). */
size_t gs_pairs_slots(size_t n, const int *a, const int *b, const int *host_of, const int *cores,
                      size_t n_hosts, int *scratch, size_t *slot);

#endif
