/* The collectives' descriptors and what is derived from them: sizes per
 * rank and bus-bandwidth factors (docs/collectives.md). */
#include "core/coll_table.h"

#include <math.h>
#include <string.h>

const char *const gs_coll_op_names[] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                        "reduce",    "alltoall",  "sendrecv",      NULL};

/* ---- where a received block comes from --------------------------------------- */

/* The same block of every rank, reduced (allreduce, reduce). */
static void reduce_block(const gs_coll_who *who, size_t block, gs_coll_source *out) {
  (void)who;
  *out = (gs_coll_source){.reduced = 1, .block = block};
}

/* Every rank's block for this rank, reduced (reducescatter). */
static void reduce_rank_block(const gs_coll_who *who, size_t block, gs_coll_source *out) {
  (void)block;
  *out = (gs_coll_source){.reduced = 1, .block = (size_t)who->rank};
}

/* Block j is rank j's whole send buffer (allgather). */
static void gather_block(const gs_coll_who *who, size_t block, gs_coll_source *out) {
  (void)who;
  *out = (gs_coll_source){.rank = (int)block, .block = 0};
}

/* Block j is rank j's block for this rank (alltoall). */
static void exchange_block(const gs_coll_who *who, size_t block, gs_coll_source *out) {
  *out = (gs_coll_source){.rank = (int)block, .block = (size_t)who->rank};
}

/* The root's block (broadcast). */
static void root_block(const gs_coll_who *who, size_t block, gs_coll_source *out) {
  *out = (gs_coll_source){.rank = who->root, .block = block};
}

/* The receive peer's block (sendrecv). */
static void peer_block(const gs_coll_who *who, size_t block, gs_coll_source *out) {
  *out = (gs_coll_source){.rank = who->recv_peer, .block = block};
}

/* ---- the table ------------------------------------------------------------------ */

const gs_coll_desc gs_coll_table[GS_COLL_COUNT] = {
    [GS_COLL_ALLREDUCE] = {.name = "allreduce",
                           .has_redop = 1,
                           .send_blocks = GS_COLL_ONE_BLOCK,
                           .recv_blocks = GS_COLL_ONE_BLOCK,
                           .in_place = GS_COLL_IN_PLACE_SAME,
                           .busbw_scale = 2.0,
                           .busbw_ring = 1,
                           .source = reduce_block},
    [GS_COLL_ALLGATHER] = {.name = "allgather",
                           .send_blocks = GS_COLL_ONE_BLOCK,
                           .recv_blocks = GS_COLL_BLOCK_PER_RANK,
                           .in_place = GS_COLL_IN_PLACE_SEND_AT_RANK,
                           .busbw_scale = 1.0,
                           .busbw_ring = 1,
                           .source = gather_block},
    [GS_COLL_REDUCESCATTER] = {.name = "reducescatter",
                               .has_redop = 1,
                               .send_blocks = GS_COLL_BLOCK_PER_RANK,
                               .recv_blocks = GS_COLL_ONE_BLOCK,
                               .in_place = GS_COLL_IN_PLACE_RECV_AT_RANK,
                               .busbw_scale = 1.0,
                               .busbw_ring = 1,
                               .source = reduce_rank_block},
    [GS_COLL_BROADCAST] = {.name = "broadcast",
                           .has_root = 1,
                           .send_blocks = GS_COLL_ONE_BLOCK,
                           .recv_blocks = GS_COLL_ONE_BLOCK,
                           .in_place = GS_COLL_IN_PLACE_SAME,
                           .busbw_scale = 1.0,
                           .source = root_block},
    [GS_COLL_REDUCE] = {.name = "reduce",
                        .has_redop = 1,
                        .has_root = 1,
                        .root_only = 1,
                        .send_blocks = GS_COLL_ONE_BLOCK,
                        .recv_blocks = GS_COLL_ONE_BLOCK,
                        .in_place = GS_COLL_IN_PLACE_SAME,
                        .busbw_scale = 1.0,
                        .source = reduce_block},
    [GS_COLL_ALLTOALL] = {.name = "alltoall",
                          .send_blocks = GS_COLL_BLOCK_PER_RANK,
                          .recv_blocks = GS_COLL_BLOCK_PER_RANK,
                          .in_place = GS_COLL_NO_IN_PLACE,
                          .busbw_scale = 1.0,
                          .busbw_ring = 1,
                          .source = exchange_block},
    [GS_COLL_SENDRECV] = {.name = "sendrecv",
                          .has_peers = 1,
                          .send_blocks = GS_COLL_ONE_BLOCK,
                          .recv_blocks = GS_COLL_ONE_BLOCK,
                          .in_place = GS_COLL_NO_IN_PLACE,
                          .busbw_scale = 1.0,
                          .source = peer_block},
};

const gs_coll_desc *gs_coll_desc_of(gs_coll_op op) {
  return &gs_coll_table[op];
}

const gs_coll_desc *gs_coll_desc_named(const char *name) {
  for (int k = 0; name && k < GS_COLL_COUNT; k++)
    if (strcmp(name, gs_coll_table[k].name) == 0) return &gs_coll_table[k];
  return NULL;
}

int gs_coll_has_redop(gs_coll_op op) {
  return gs_coll_table[op].has_redop;
}

int gs_coll_has_root(gs_coll_op op) {
  return gs_coll_table[op].has_root;
}

int gs_coll_has_in_place(gs_coll_op op) {
  return gs_coll_table[op].in_place != GS_COLL_NO_IN_PLACE;
}

/* ---- sizes and bandwidth ----------------------------------------------------------- */

size_t gs_coll_elements(gs_coll_blocks blocks, size_t count, int ranks) {
  return blocks == GS_COLL_BLOCK_PER_RANK ? count * (size_t)ranks : count;
}

void gs_coll_shape_for(gs_coll_op op, uint64_t bytes, size_t element_size, int ranks,
                       gs_coll_shape *out) {
  const gs_coll_desc *d = &gs_coll_table[op];
  memset(out, 0, sizeof *out);
  uint64_t total = bytes / element_size;
  // The size is the whole buffer of the larger side: where either side has
  // a block per rank, n blocks of `per`.
  int split = d->send_blocks == GS_COLL_BLOCK_PER_RANK || d->recv_blocks == GS_COLL_BLOCK_PER_RANK;
  uint64_t per = split ? total / (uint64_t)ranks : total;
  out->param_count = (size_t)per;
  out->count = split ? per * (uint64_t)ranks : per;
  out->send_elements = gs_coll_elements(d->send_blocks, (size_t)per, ranks);
  out->recv_elements = gs_coll_elements(d->recv_blocks, (size_t)per, ranks);
  out->bytes = out->count * element_size;
}

static double busbw_factor(const gs_coll_desc *d, int ranks) {
  double n = (double)ranks;
  return d->busbw_ring ? d->busbw_scale * (n - 1.0) / n : d->busbw_scale;
}

double gs_coll_busbw_factor(gs_coll_op op, int ranks) {
  return busbw_factor(&gs_coll_table[op], ranks);
}

double gs_coll_busbw_factor_of(const char *op, int ranks) {
  const gs_coll_desc *d = gs_coll_desc_named(op);
  return d ? busbw_factor(d, ranks) : NAN;
}
