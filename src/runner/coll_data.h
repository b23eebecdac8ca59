/* The data of a collective check: what every rank puts in its send buffer
 * and what each rank must find in its receive buffer afterwards, for every
 * element type (half and bfloat16 encoded on the host). Values are small
 * integers, so sums and products stay exact where the type allows. */
#ifndef GS_COLL_DATA_H
#define GS_COLL_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "core/coll_model.h"
#include "platform/comm.h"

typedef struct {
  gs_coll_op op;
  gs_dtype dtype;
  gs_redop redop; /* ops with a reduction */
  int root;       /* broadcast, reduce */
  int rank, ranks;
  const gs_coll_shape *shape;
} gs_coll_case;

/* Value of input element `index` of `rank`'s send buffer. */
double gs_coll_input_value(gs_redop redop, int rank, uint64_t index);

/* Writes `count` input elements of `rank` starting at input index `first`
 * into buf, encoded as dtype. */
void gs_coll_fill(void *buf, size_t count, gs_dtype dtype, gs_redop redop, int rank,
                  uint64_t first);

/* Element i of buf decoded to double. */
double gs_coll_element(const void *buf, size_t i, gs_dtype dtype);

/* Writes one element encoded as dtype (rounding to nearest). */
void gs_coll_store(void *buf, size_t i, gs_dtype dtype, double value);

/* Elements of this rank's receive buffer (host copy, recv_elements long)
 * that differ from the expected result; 0 for a rank that receives
 * nothing (reduce on a non-root rank). Integers must match exactly,
 * floating-point types within a relative tolerance of their precision. */
uint64_t gs_coll_count_wrong(const gs_coll_case *c, const void *recv);

#endif
