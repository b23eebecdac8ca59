/* Fault injection: faults given on the command line as
 * "KIND:rank=R,NAME=VALUE,..." (option --inject, repeatable), parsed
 * against a table of kinds and their parameters, and applied by the runner
 * to the rank they name. Implemented: slow (the rank's every step takes
 * `factor` times its own measured work). The syntax and the table leave
 * room for fail:rank=R,rate=P, kill:rank=R,after=N and
 * delay:rank=R,seconds=S. Design: docs/workloads/placement.md. */
#ifndef GS_FAULT_H
#define GS_FAULT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/status.h"

#define GS_FAULT_MAX 16
#define GS_FAULT_MAX_PARAMS 4

typedef enum { GS_FAULT_SLOW = 0 } gs_fault_kind;

/* One injected fault. params[] follow the kind's table order after "rank"
 * (slow: params[0] = factor). */
typedef struct {
  gs_fault_kind kind;
  int rank;
  double params[GS_FAULT_MAX_PARAMS];
} gs_fault;

typedef struct {
  size_t n;
  gs_fault items[GS_FAULT_MAX];
} gs_fault_list;

/* Parses one --inject value into list (appended). GS_ERR_USAGE naming the
 * kind, parameter or value that is wrong, missing or repeated. */
gs_status gs_fault_parse(const char *text, gs_fault_list *list);

/* GS_ERR_USAGE when a fault names a rank >= world_size. */
gs_status gs_fault_check_ranks(const gs_fault_list *list, int world_size);

/* The factor by which `rank` is slowed: the product of its slow faults'
 * factors, 1 when none. */
double gs_fault_slow_factor(const gs_fault_list *list, int rank);

/* Name of a kind ("slow"). */
const char *gs_fault_kind_name(gs_fault_kind kind);

/* The measurement member "faults": the faults on ranks < world_size, as
 * [{"kind": "slow", "rank": R, "factor": F}, ...]; NULL on no memory. */
cJSON *gs_fault_list_to_json(const gs_fault_list *list, int world_size);

#endif
