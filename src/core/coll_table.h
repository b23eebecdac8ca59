/* The collectives gpuscale knows, one descriptor each (as nccl-tests'
 * `struct testColl`): name, buffers per rank in blocks of the call's count,
 * the bus-bandwidth factor, the in-place layout, where each block of the
 * result comes from (what a check expects and what the host backend
 * computes), and whether the call takes a reduction, a root or peers.
 * Every layer reads this table: the sizes of a sweep, the busbw of the
 * table and of ingested nccl-tests lines, the check, the buffers' in-place
 * layout, and the platform's dispatch (platform/comm_coll.c holds each
 * collective's NCCL and MPI call). Adding a collective: its enum value, its
 * name in gs_coll_op_names, its descriptor in core/coll_table.c and its
 * calls in platform/comm_coll.c (docs/collectives.md, "Adding a
 * collective"). Pure data and arithmetic. */
#ifndef GS_COLL_TABLE_H
#define GS_COLL_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  GS_COLL_ALLREDUCE = 0,
  GS_COLL_ALLGATHER,
  GS_COLL_REDUCESCATTER,
  GS_COLL_BROADCAST,
  GS_COLL_REDUCE,
  GS_COLL_ALLTOALL,
  GS_COLL_SENDRECV,
  GS_COLL_COUNT
} gs_coll_op;

/* NULL-terminated names in enum order ("allreduce", ...), the choices of
 * `gpuscale coll OP` and of completion; the same strings as the
 * descriptors' names. */
extern const char *const gs_coll_op_names[];

/* A rank's send or receive buffer in blocks of the call's count. */
typedef enum {
  GS_COLL_ONE_BLOCK = 0, /* `count` elements */
  GS_COLL_BLOCK_PER_RANK /* `count` elements per rank of the world */
} gs_coll_blocks;

/* The in-place form: which one buffer both sides use (nccl-tests' in-place
 * offsets). */
typedef enum {
  GS_COLL_NO_IN_PLACE = 0,       /* none (grouped sends and receives cannot share one) */
  GS_COLL_IN_PLACE_SAME,         /* send == recv */
  GS_COLL_IN_PLACE_SEND_AT_RANK, /* send is the rank's block of recv (allgather) */
  GS_COLL_IN_PLACE_RECV_AT_RANK  /* recv is the rank's block of send (reducescatter) */
} gs_coll_in_place;

/* One call as a descriptor's source sees it. */
typedef struct {
  int rank, ranks;
  int root;      /* collectives with a root */
  int recv_peer; /* collectives with peers: the rank this one receives from */
} gs_coll_who;

/* Where one block of a rank's receive buffer comes from: block `block` of
 * the send buffer of rank `rank`, or, when `reduced`, that block of every
 * rank's send buffer reduced in rank order. */
typedef struct {
  int reduced;
  int rank; /* when not reduced */
  size_t block;
} gs_coll_source;

typedef struct {
  const char *name;
  int has_redop;           /* takes a reduction operation */
  int has_root;            /* takes a root rank */
  int has_peers;           /* takes a send peer and a receive peer */
  int root_only;           /* only the root receives (reduce) */
  gs_coll_blocks send_blocks, recv_blocks;
  gs_coll_in_place in_place;
  /* busbw = algbw * busbw_scale * ((n-1)/n when busbw_ring, else 1) */
  double busbw_scale;
  int busbw_ring;
  /* Block `block` (< the receive blocks) of `who`'s receive buffer. */
  void (*source)(const gs_coll_who *who, size_t block, gs_coll_source *out);
} gs_coll_desc;

/* The descriptors in enum order. */
extern const gs_coll_desc gs_coll_table[GS_COLL_COUNT];

/* The descriptor of `op` (< GS_COLL_COUNT), or of the op named `name`
 * (NULL for a name gpuscale does not know, e.g. nccl-tests' gather). */
const gs_coll_desc *gs_coll_desc_of(gs_coll_op op);
const gs_coll_desc *gs_coll_desc_named(const char *name);

/* The descriptor's flags by op. */
int gs_coll_has_redop(gs_coll_op op);
int gs_coll_has_root(gs_coll_op op);
int gs_coll_has_in_place(gs_coll_op op);

/* Elements of a buffer of `blocks` at `ranks` ranks: count or count*ranks. */
size_t gs_coll_elements(gs_coll_blocks blocks, size_t count, int ranks);

/* One size of a sweep as each rank sees it. `bytes` and `count` are what
 * the table prints (nccl-tests' convention: the whole buffer of the larger
 * side); `param_count` is the count passed to the call (per peer for
 * allgather, reducescatter, alltoall: see docs). */
typedef struct {
  uint64_t bytes;
  uint64_t count;
  size_t param_count;
  size_t send_elements; /* elements in the send buffer */
  size_t recv_elements; /* elements in the receive buffer */
} gs_coll_shape;

/* Shape of `op` for a requested size of `bytes` with elements of
 * `element_size` bytes over `ranks` ranks. Sizes are rounded down to whole
 * elements (and to whole per-rank blocks where a buffer has one block per
 * rank); the shape's bytes are 0 when nothing remains. */
void gs_coll_shape_for(gs_coll_op op, uint64_t bytes, size_t element_size, int ranks,
                       gs_coll_shape *out);

/* nccl-tests' bus-bandwidth factor of `op` at `ranks` ranks:
 * allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n;
 * broadcast, reduce, sendrecv 1. */
double gs_coll_busbw_factor(gs_coll_op op, int ranks);

/* The same factor for an op named as gs_coll_op_names names it; NaN for an
 * op gpuscale does not know (nccl-tests' gather, scatter, hypercube). */
double gs_coll_busbw_factor_of(const char *op, int ranks);

#endif
