/* Localization by pairs (docs/check.md, "Localization by pairs"): the
 * times of an exchange (a 2-rank all-reduce or a copy) measured on pairs
 * of units (GPUs of a node, or nodes) turned into a judgement by
 * elimination: a unit slow with every partner it was measured with is the
 * slow GPU or node; a pair slow while both its units are fine with others
 * is the slow link. Every pair's slowness is a ratio of medians with its
 * 95% interval against the fastest quarter of the pairs, and only an interval that
 * clears the threshold counts, so noise names nothing. A pair slow in the
 * rounds is named only when a confirming round, which measures it again
 * alone beside the reference pairs, finds it slow again; one that is then
 * neither clearly slow nor clearly fine makes the judgement inconclusive.
 * Data in, data out: a test or a fleet can judge pair times built by hand
 * or stored. */
#ifndef GS_REPORT_VERDICT_CHECK_PAIRS_H
#define GS_REPORT_VERDICT_CHECK_PAIRS_H

#include <stddef.h>

#include "core/status.h"

/* A pair is slow when the low end of its ratio's 95% interval is above
 * 1 + GS_PAIRS_THRESHOLD: 30% slower than the reference pairs. */
#define GS_PAIRS_THRESHOLD 0.30

/* The times of one measured pair: n seconds (finite, > 0) of one kind of
 * exchange between units a and b (a != b). */
typedef struct {
  int a, b;
  const double *seconds;
  size_t n;
} gs_pairs_sample;

/* One pair's judgement. */
typedef struct {
  int a, b;
  double median;           /* seconds */
  double ratio, low, high; /* median / the reference pairs' median, 95% interval */
  int slow;                /* low > 1 + GS_PAIRS_THRESHOLD */
  int reference;           /* 1: one of the reference pairs */
} gs_pairs_result;

typedef struct {
  size_t n_units;
  size_t n_pairs;
  gs_pairs_result *pairs; /* owned, in the order given */
  double reference;       /* the median of the reference pairs' times, seconds */
  int *unit_slow;         /* owned, n_units: 1 when the unit is named */
  size_t units_named, links_named;
  size_t undecided;       /* slow pairs whose cause cannot be told apart
                             (a unit measured with one partner only) */
} gs_pairs_verdict;

/* Judges `n` pairs of units 0 .. n_units-1. The reference is the set of
 * pairs whose median is at or below the 25th percentile of the pairs'
 * medians (the fastest pair when fewer than 6 pairs were measured, so that
 * one slow unit's pairs, half of 6 among 4 units, stay out of it). A unit
 * is named when it has 2 or more measured pairs and every one is slow; a
 * slow pair whose units are both unnamed is a link when each of its units
 * has another measured pair that is not slow, else undecided.
 * GS_ERR_USAGE for a pair that names a unit out of range, twice the same
 * unit, or has a time that is not positive; GS_ERR_NOMEM. *out owned by the
 * caller (gs_pairs_verdict_free). */
gs_status gs_pairs_judge(const gs_pairs_sample *pairs, size_t n, size_t n_units,
                         gs_pairs_verdict *out);

/* Frees what `v` owns and zeroes it; safe on a zeroed struct. */
void gs_pairs_verdict_free(gs_pairs_verdict *v);

/* 1 when pair r is a suspect: slow, or with its ratio above 1 +
 * GS_PAIRS_THRESHOLD while its interval is too wide to show it (a pair
 * 5x slow at [0.5, 54] on a host at a load average of 15 is no pass). */
int gs_pairs_suspect(const gs_pairs_result *r);

/* The pairs of the confirming round, chosen from the rounds' verdicts of
 * both kinds (v[0], v[1]: the same pairs in the same order): every
 * suspect of either kind (gs_pairs_suspect), the reference pairs of either kind that
 * are not suspects, the other pairs of a suspect's units that are not
 * clearly fine in both kinds (interval above 1 + GS_PAIRS_THRESHOLD: its
 * neighbours), and, for each unit of a suspect that has no pair left
 * that is not a suspect, a pair of it with the lowest unit that is in no
 * suspect and that it was not measured with (none where no such unit
 * exists): what tells that unit from the link. In that order, each pair
 * once, a < b; none when no pair is slow. *a and *b are owned by the
 * caller (free both; NULL when *n is 0). GS_ERR_NOMEM. */
gs_status gs_pairs_confirm_choose(const gs_pairs_verdict v[2], int **a, int **b, size_t *n);

/* A pair's judgement after the confirming round. */
typedef enum {
  GS_PAIRS_FINE,         /* not slow, or slow in the rounds and clearly not alone */
  GS_PAIRS_LINK,         /* slow (confirmed) only together: the link */
  GS_PAIRS_UNDECIDED,    /* slow (confirmed), a unit of it has no other pair to clear it */
  GS_PAIRS_UNIT,         /* slow because a unit of it is named */
  GS_PAIRS_INCONCLUSIVE  /* slow in the rounds, neither clearly slow nor fine alone */
} gs_pairs_judged;

/* Names of gs_pairs_judged: "fine", "link", "undecided", "unit", "inconclusive". */
extern const char *const gs_pairs_judged_names[];

/* The judgement of both kinds over the rounds' pairs and the pairs the
 * confirming round added (those of confirm[] that are not rounds' pairs,
 * after them, in confirm's order). */
typedef struct {
  size_t n_units, n_pairs;
  int *a, *b;               /* n_pairs, owned */
  int *alone;               /* n_pairs, owned: the pair's index in confirm[], -1 none */
  gs_pairs_judged *judged;  /* n_pairs, owned */
  int *unit;                /* n_units, owned: 1 named */
  size_t units, links, undecided, inconclusive;
  const char *overall;      /* static: "fail" (a unit or link named), "warn" (undecided),
                               "inconclusive", or "pass" */
} gs_pairs_decision;

/* Decides from the rounds' verdicts of both kinds and the confirming
 * round's (confirm: NULL or both kinds over the pairs of
 * gs_pairs_confirm_choose, in its order, n_units as the rounds'). Per
 * kind, "clearly fine" is an interval whose high end is at or below 1 +
 * GS_PAIRS_THRESHOLD, and a pair's state is, for a suspect of the rounds
 * (gs_pairs_suspect): alone, slow when slow, fine when clearly fine, else
 * unclear; without a confirming round slow when slow, else unclear; for
 * any other pair of the rounds (not slow, ratio at or below 1 +
 * GS_PAIRS_THRESHOLD): fine, unless measured again alone and then slow or
 * above the threshold (weak: no evidence either way); for a pair the
 * confirming round added, from that round alone. Per kind, a unit with 2 or more pairs all slow is named; a
 * slow pair of unnamed units is a link when each of its units has a fine
 * pair besides, inconclusive when a unit without one has another pair,
 * else undecided; an unclear pair of unnamed units is inconclusive. The kinds combine: a unit named by either is named; a
 * pair takes link over undecided over inconclusive over fine, and is
 * "unit" when slow or unclear with a named unit. GS_ERR_USAGE when
 * confirm names a pair outside the units; GS_ERR_NOMEM. *out owned by the
 * caller (gs_pairs_decision_free). */
gs_status gs_pairs_decide(const gs_pairs_verdict rounds[2], const gs_pairs_verdict *confirm,
                          gs_pairs_decision *out);

/* Frees what `d` owns and zeroes it; safe on a zeroed struct. */
void gs_pairs_decision_free(gs_pairs_decision *d);

/* What a reason for an inconclusive judgement tells of the host. */
typedef struct {
  const char *unit;       /* "rank" or "node" */
  const char *host;       /* the host running the most ranks for its CPUs */
  int ranks, cpus;        /* its ranks and the CPUs they may run on (0: unknown) */
  double load_average;    /* NaN unknown */
} gs_pairs_host;

/* The reason of an inconclusive decision into buf: the first inconclusive
 * pair's figures in the rounds and alone (kind by kind where unclear) and
 * how many more, after what the host did: "4 ranks share 2 CPUs of host H
 * (load average 7.1)" where its ranks outnumber its CPUs, else its load
 * average against its CPUs. "" when nothing is inconclusive. */
void gs_pairs_reason(const gs_pairs_decision *d, const gs_pairs_verdict rounds[2],
                     const gs_pairs_verdict *confirm, const gs_pairs_host *host, char *buf,
                     size_t size);

#endif
