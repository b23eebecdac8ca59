/* The communication layer: one interface for every multi-GPU part of
 * gpuscale. GPU buffers go through NCCL, host buffers (the CPU backend)
 * through MPI between processes or through shared memory between the rank
 * threads of one process; MPI also bootstraps NCCL across processes.
 *
 * Two launch modes (docs/collectives.md, "Launch modes"):
 *  - threads: one process drives every rank, one host thread per rank (the
 *    runner's model); the NCCL communicators are created together by the
 *    process before the rank threads start. No MPI is involved.
 *  - mpi: one rank per process under mpirun/srun. The local rank comes from
 *    the launcher's environment (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID,
 *    MPI_LOCALRANKID, PMI_LOCAL_RANK, ...), process 0 creates the NCCL unique
 *    id and broadcasts it over MPI.
 *
 * Objects and threads:
 *  - gs_comm_job: the process in its job (launcher, process rank, local
 *    rank). One per process, created by main/cli code.
 *  - gs_comm_world: the communicators of the ranks this process drives
 *    (every rank in threads mode, exactly one under MPI). Created and
 *    destroyed by one thread.
 *  - gs_comm: one rank's handle, taken from the world with gs_comm_world_rank
 *    and then used only from that rank's thread (e.g. through
 *    gs_rank_context.comm in a workload).
 *
 * Failure handling: no call waits forever. Host-side waits (gs_comm_wait,
 * gs_comm_barrier, every CPU-backend collective) poll with the world's
 * timeout; NCCL's asynchronous errors are checked while polling. When a wait
 * runs past the timeout the rank aborts its communicator (ncclCommAbort) and
 * returns GS_ERR_TIMEOUT with a message naming the rank(s) that did not
 * arrive; every later call on that handle returns GS_ERR_ABORTED. A SIGINT or
 * SIGTERM (core/interrupt.h) ends a polling wait with GS_ERR_INTERRUPTED. */
#ifndef GS_COMM_H
#define GS_COMM_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <cuda_runtime_api.h>

#include "core/coll_table.h"
#include "core/fault.h"
#include "core/status.h"
#include "core/types.h"

/* ---- vocabulary ----------------------------------------------------------- */

typedef enum { GS_COMM_LAUNCH_THREADS = 0, GS_COMM_LAUNCH_MPI } gs_comm_launch;

/* Element types; names as on the command line: int8 uint8 int32 uint32
 * int64 uint64 half bfloat16 float double. */
typedef enum {
  GS_DTYPE_INT8 = 0,
  GS_DTYPE_UINT8,
  GS_DTYPE_INT32,
  GS_DTYPE_UINT32,
  GS_DTYPE_INT64,
  GS_DTYPE_UINT64,
  GS_DTYPE_HALF,
  GS_DTYPE_BFLOAT16,
  GS_DTYPE_FLOAT,
  GS_DTYPE_DOUBLE,
  GS_DTYPE_COUNT
} gs_dtype;

/* Reduction operations: sum prod max min avg. */
typedef enum {
  GS_REDOP_SUM = 0,
  GS_REDOP_PROD,
  GS_REDOP_MAX,
  GS_REDOP_MIN,
  GS_REDOP_AVG,
  GS_REDOP_COUNT
} gs_redop;

/* Which path NCCL may use between GPUs (docs/collectives.md, "Transports"):
 * auto leaves NCCL's choice; p2p forbids the shared-memory and network
 * paths; shm forbids peer-to-peer (staging through host shared memory); net
 * forbids both (GPUs talk through the network plugin, e.g. sockets). */
typedef enum {
  GS_TRANSPORT_AUTO = 0,
  GS_TRANSPORT_P2P,
  GS_TRANSPORT_SHM,
  GS_TRANSPORT_NET
} gs_transport;

/* NULL-terminated name tables in enum order, usable as GS_OPT_CHOICE lists. */
extern const char *const gs_dtype_names[];
extern const char *const gs_redop_names[];
extern const char *const gs_transport_names[];

/* Bytes of one element of `dtype`. */
size_t gs_dtype_size(gs_dtype dtype);

/* ---- the process in its job ------------------------------------------------ */

typedef struct {
  gs_comm_launch launch; /* mpi when a launcher started more than one process */
  char launcher[32];     /* "none", "openmpi", "slurm", "mpich", "pmi" */
  int process_rank;      /* this process in the job; 0 in threads mode */
  int process_count;     /* processes in the job; 1 in threads mode */
  int local_rank;        /* this process among those on its host; 0 in threads mode */
  int local_count;       /* processes on this host; 1 in threads mode */
  int mpi_started;       /* gs_comm_job_start called MPI_Init */
} gs_comm_job;

/* Reads the launcher's environment (no MPI call): OMPI_COMM_WORLD_*,
 * SLURM_PROCID/NTASKS/LOCALID/NTASKS_PER_NODE... (only inside srun steps),
 * PMI_RANK/PMI_SIZE/MPI_LOCALRANKID. A job of one process is threads mode. */
void gs_comm_job_detect(gs_comm_job *job);

/* Starts MPI for a job in mpi mode (MPI_Init_thread, thread level FUNNELED
 * or better) and checks the launcher's rank and size against MPI's. Does
 * nothing in threads mode: a world of one process never needs MPI.
 * GS_ERR_UNSUPPORTED when launched with several processes but built without
 * MPI. Called once, from the main thread. */
gs_status gs_comm_job_start(gs_comm_job *job);

/* MPI_Finalize when gs_comm_job_start started MPI. */
void gs_comm_job_finish(gs_comm_job *job);

/* Ends every process of the job after a fatal error that the other
 * processes may not see (e.g. a timeout): prints the calling thread's
 * recorded error (main will not get to) and calls MPI_Abort with
 * `exit_code` in mpi mode. Returns only in threads mode (the caller then
 * returns normally). */
void gs_comm_job_abort(const gs_comm_job *job, int exit_code);

/* ---- transport and environment ---------------------------------------------- */

/* Sets NCCL's own switches for `transport` in this process's environment
 * (NCCL_P2P_DISABLE, NCCL_SHM_DISABLE; see docs/collectives.md). Must run
 * before any communicator is created. A switch the user already set to a
 * different value is a usage error naming the variable. */
gs_status gs_comm_transport_apply(gs_transport transport);

/* Every NCCL_* variable of the environment as a JSON object name -> value
 * (after gs_comm_transport_apply, so the switches it set are included).
 * NULL when memory runs out. The caller owns it. */
cJSON *gs_comm_nccl_environment_json(void);

/* ---- worlds and rank handles ---------------------------------------------- */

typedef struct gs_comm_world gs_comm_world;
typedef struct gs_comm gs_comm;

/* The most CTAs NCCL gives one collective (its channel limit, the range
 * NCCL accepts for maxCTAs): the largest nccl_max_ctas. */
#define GS_COMM_MAX_CTAS 64

typedef struct {
  gs_backend backend;     /* cuda: NCCL on device buffers; cpu: host buffers */
  int local_ranks;        /* ranks this process drives: the world size in
                             threads mode; must be 1 in mpi mode */
  const int *devices;     /* CUDA ordinal per local rank (cuda backend) */
  double timeout_seconds; /* longest host wait before aborting; 0 = no limit */
  const gs_fault_list *faults; /* NULL: none; copied. The cpu backend applies
                                  slowpair faults: a send to the pair's other
                                  rank takes F times as long, an all-reduce of
                                  a group holding both waits F - 1 times three
                                  copies of its message (docs/stragglers.md) */
  int nccl_max_ctas;      /* cuda backend: the most CTAs (thread blocks) NCCL
                             gives one collective of the world's
                             communicators, 1..GS_COMM_MAX_CTAS; 0 = NCCL's
                             own default. NCCL_MAX_CTAS in the environment
                             overrides it inside NCCL */
} gs_comm_world_config;

/* Creates the communicators of the ranks this process drives. Threads mode:
 * all ranks' NCCL communicators at once (ncclCommInitAll, or one
 * ncclCommInitRankConfig per rank in a group when nccl_max_ctas is set), or
 * a shared memory exchange on the CPU backend. Mpi mode: one rank per
 * process, the rank is the process rank; the NCCL id is broadcast over MPI,
 * or MPI_COMM_WORLD is used for host buffers. Called from one thread; *out
 * owned by the caller. */
gs_status gs_comm_world_create(const gs_comm_job *job, const gs_comm_world_config *config,
                               gs_comm_world **out);

/* Destroys the communicators (aborts those that failed); accepts NULL. */
void gs_comm_world_destroy(gs_comm_world *world);

/* Ranks in the whole world (all processes). */
int gs_comm_world_size(const gs_comm_world *world);

/* The handle of local rank `local_index` (0 .. local_ranks-1); the handle
 * belongs to the world and must be used only from that rank's thread. */
gs_comm *gs_comm_world_rank(gs_comm_world *world, int local_index);

int gs_comm_rank(const gs_comm *comm);   /* global rank */
int gs_comm_size(const gs_comm *comm);   /* global world size */

/* ---- collectives ---------------------------------------------------------- */
/* Counts are elements. On the cuda backend buffers are device memory of the
 * handle's device and the call only enqueues on `stream` (wait with
 * gs_comm_wait); on the cpu backend buffers are host memory, `stream` is
 * ignored and the call returns when the operation is complete (bounded by
 * the timeout). The in-place form is the layout of the op's descriptor
 * (core/coll_table.h: send == recv, or send/recv at the rank's block of the
 * other for allgather/reducescatter, as NCCL defines). Every rank of the
 * world must call the same sequence. */

/* One call of a collective. Its buffers have the blocks of its descriptor
 * (core/coll_table.h), each `count` elements of `dtype`: allreduce,
 * broadcast, reduce and sendrecv one each; allgather receives and
 * reducescatter sends one per rank; alltoall sends and receives one per
 * rank (block j of send goes to rank j, arriving as block `rank` of its
 * recv). reduce writes only the root's recv. Members an op does not take
 * are ignored. */
typedef struct {
  gs_coll_op op;
  const void *send;
  void *recv;
  size_t count;
  gs_dtype dtype;
  gs_redop redop;           /* ops with a reduction */
  int root;                 /* ops with a root */
  int send_peer, recv_peer; /* ops with peers (sendrecv: both at once, a ring
                               shift when they are rank+1 and rank-1) */
} gs_comm_call;

/* Runs `call` on this rank: through the op's NCCL call on the cuda
 * backend, between the rank threads or through the op's MPI call on the
 * cpu backend (platform/comm_coll.c). Peers outside the world are refused. */
gs_status gs_comm_collective(gs_comm *comm, const gs_comm_call *call, cudaStream_t stream);

/* Shorthands of gs_comm_collective for the calls workloads make. */
/* recv[i] = op over ranks of send[i], i < count. */
gs_status gs_comm_allreduce(gs_comm *comm, const void *send, void *recv, size_t count,
                            gs_dtype dtype, gs_redop op, cudaStream_t stream);
/* recv (count * size elements) = concatenation of every rank's send (count). */
gs_status gs_comm_allgather(gs_comm *comm, const void *send, void *recv, size_t count,
                            gs_dtype dtype, cudaStream_t stream);
/* recv (count) on every rank = root's send. */
gs_status gs_comm_broadcast(gs_comm *comm, const void *send, void *recv, size_t count,
                            gs_dtype dtype, int root, cudaStream_t stream);

/* ---- sub-communicators ----------------------------------------------------- */

/* A group of the world's ranks with its own collectives, e.g. the replicas
 * of one pipeline stage summing their gradients. Members are ordered by
 * global rank. cuda: a communicator split from the rank's (ncclCommSplit);
 * cpu under MPI: MPI_Comm_split of MPI_COMM_WORLD; cpu between the rank
 * threads: a shared-memory exchange of the members only, its barrier
 * bounded by the world's timeout and ended by another rank's abort. */
typedef struct gs_comm_group gs_comm_group;

/* Collective over every rank of the world: the ranks passing the same
 * `color` (>= 0) form one group. Starts with a barrier of the world
 * (bounded by the timeout), so that a rank lost before it is found there
 * rather than in the split. Called from the rank's thread; *out owned by
 * the caller (gs_comm_group_destroy). */
gs_status gs_comm_group_create(gs_comm *comm, int color, gs_comm_group **out);

/* Releases the group (after every member stopped using it: between the
 * rank threads the last member to leave frees the shared part); accepts
 * NULL. Not collective. */
void gs_comm_group_destroy(gs_comm_group *group);

int gs_comm_group_rank(const gs_comm_group *group); /* this rank's index in the group */
int gs_comm_group_size(const gs_comm_group *group); /* members */
void gs_comm_group_mark_arrivals(gs_comm_group *group); /* see gs_comm_group_allreduce */

/* recv[i] = op over the group's members of send[i], i < count; send ==
 * recv is in place. As gs_comm_allreduce (cuda: enqueued on `stream`,
 * wait with gs_comm_wait; cpu: complete on return, every member
 * reducing in member order, so that all get the same bits). `op` is sum,
 * prod, max or min (avg is refused). Every member calls it with the same
 * count, dtype and op. NCCL's asynchronous errors are polled on the
 * world's communicator only: a group's stalled transfer ends in
 * gs_comm_wait's timeout, which aborts the world's communicator. In a
 * group marked with gs_comm_group_mark_arrivals, an arrival recorder on
 * the member's handle marks it (and the allgather below) as it marks the
 * world's collectives; unmarked groups are not. A marked group's members
 * are summarized apart from the world's other groups (mlp's stage
 * replicas reach their all-reduce at different points of the pipeline:
 * gs_arrival_set_groups). */
gs_status gs_comm_group_allreduce(gs_comm_group *group, const void *send, void *recv,
                                  size_t count, gs_dtype dtype, gs_redop op, cudaStream_t stream);

/* recv (count * members elements) = every member's send (count), in
 * member order; as gs_comm_group_allreduce otherwise (cuda: enqueued on
 * `stream`; cpu: complete on return). Between processes a collective given
 * up (a member lost) leaves its own heap copy to MPI, never `recv`. */
gs_status gs_comm_group_allgather(gs_comm_group *group, const void *send, void *recv,
                                  size_t count, gs_dtype dtype, cudaStream_t stream);

/* ---- point to point ---------------------------------------------------------- */

/* One transfer of a point-to-point group: `count` elements of `dtype` at
 * `buf` sent to or received from global rank `peer`. */
typedef struct {
  int send;       /* 1: send buf to peer; 0: receive into buf from peer */
  void *buf;
  size_t count;
  gs_dtype dtype;
  int peer;
} gs_comm_p2p_op;

/* Runs ops[0..n) of this rank as one group: a pipeline's "send my output,
 * receive my next input" at once, so that two ranks sending to each other
 * do not wait on each other. Messages between a pair of ranks arrive in
 * the order they were sent; only the two ranks of a transfer take part.
 * cuda: ncclSend/ncclRecv inside ncclGroupStart/End, enqueued on `stream`
 * (device buffers; wait with gs_comm_wait). cpu: returns when every
 * receive has arrived; a send's buffer may be reused on return (between
 * the rank threads it is copied into the receiver's inbox; under MPI a
 * copy is sent with MPI_Isend, completed by gs_comm_p2p_drain). Receives
 * are bounded by the world's timeout, and the error names the peer.
 * cuda: NCCL opens the link of each direction between two ranks in the
 * first group that uses it, and that group's end waits on the host until
 * the peer opens the same direction (NCCL's transport.cc): the peer's
 * first group with this rank should open the same directions (both, or
 * the same one). Open the links first with a group that both ranks run
 * alike (a send and a receive each way), as mlp's pipeline does
 * (gs_pp_link_transfers); no hang of this kind was seen here (the
 * pipeline's hangs on GPUs were lazy kernel loads: mlp_pp_cuda.c).
 * Called from the rank's thread. */
gs_status gs_comm_p2p(gs_comm *comm, const gs_comm_p2p_op *ops, int n, cudaStream_t stream);

/* ops[0..n) as one group on the group's own communicator, peers given as
 * member indices (gs_comm_group_rank): cuda only (GS_ERR_UNSUPPORTED on
 * the cpu backend, whose gs_comm_p2p carries any pair alike). A pair's
 * copy belongs on the pair's communicator: on the world's of 4 GPUs,
 * copies each way between GPUs 0-2 and 1-3 (peers at distance world/2)
 * read 1.5x slower than the other pairs on 4 x H100 and on 4 x H200,
 * where nccl-tests' 2-GPU sendrecv measured every pair alike
 * (docs/check.md). Enqueued on `stream`; wait with gs_comm_wait. */
gs_status gs_comm_group_p2p(gs_comm_group *group, const gs_comm_p2p_op *ops, int n,
                            cudaStream_t stream);

/* cpu backend under MPI: waits (bounded by the timeout) until every send
 * this rank started has been received, and frees their copies; does
 * nothing otherwise. Called where the peers are known to receive, e.g. at
 * the end of a pipeline's step. */
gs_status gs_comm_p2p_drain(gs_comm *comm);

/* ---- waiting, errors, abort ------------------------------------------------- */

/* Waits until `stream` has finished its work, without blocking in the
 * driver: polls the stream and ncclCommGetAsyncError. Returns GS_ERR_NCCL
 * on an asynchronous NCCL error and GS_ERR_TIMEOUT after the world's
 * timeout; in both cases the communicator is aborted first. On the cpu
 * backend returns GS_OK at once. */
gs_status gs_comm_wait(gs_comm *comm, cudaStream_t stream);

/* The same wait for `event` (recorded on a stream of this rank's GPU):
 * the work before it, not what the stream holds after it. */
gs_status gs_comm_wait_event(gs_comm *comm, cudaEvent_t event);

/* Non-blocking check for an asynchronous NCCL error (aborts on one). */
gs_status gs_comm_check(gs_comm *comm);

/* Aborts this rank's communicator (ncclCommAbort); idempotent. Other ranks
 * blocked on it get an error or time out instead of hanging. */
void gs_comm_abort(gs_comm *comm);

/* A host barrier over every rank of the world (threads and processes),
 * bounded by the timeout. Not for timed regions. */
gs_status gs_comm_barrier(gs_comm *comm);

/* gs_comm_barrier for a rank with nothing to do meanwhile: between
 * processes it sleeps `nap` seconds between polls instead of yielding, so
 * that on a host whose ranks outnumber its cores it leaves them to the
 * ranks at work (threads already sleep in their barrier). Leaving it takes
 * up to `nap` longer. */
gs_status gs_comm_barrier_idle(gs_comm *comm, double nap);

/* Declares how far this rank has got (e.g. the iteration it is about to
 * enqueue), so that a timeout can name the rank(s) that fell behind. */
void gs_comm_progress(gs_comm *comm, uint64_t step);

/* After a wait of this process broke (a timeout, a signal, a dead peer):
 * the process rank that was lost as far as this host shows, or -1, with
 * the reason in how[size]. In order: a process of this host that died; this
 * process, when a signal stopped it and not every other process of its
 * host (a signal to the whole job names no one: -1); a process of this host
 * that a signal stopped; one whose progress (gs_comm_progress) is behind
 * this one's; one whose heartbeat is older than half the timeout (stopped,
 * frozen). When the job spans hosts (gs_comm_roll_call, done here), what
 * this host found is shared with the others, and a host that found no one
 * takes the lowest rank another host found, else the lowest process that
 * did not answer the roll call. -1 in threads mode. Called by the one
 * thread of the process; the world remembers the answer
 * (gs_comm_answering says 0 for it). */
int gs_comm_find_lost(gs_comm_world *world, char *how, size_t size);

/* A process of this host that a signal stopped (its process rank, its
 * signal in *signal), or -1: a loop that does not communicate for a while
 * (llm's requests) looks, so that it stops when the job is ending. Safe
 * from any thread. */
int gs_comm_stopped_peer(gs_comm_world *world, int *signal);

/* Whether process `process_rank` still answers, as this host shows it: 1
 * for this process and for a live peer whose heartbeat (renewed by a
 * thread of each process) is younger than half the timeout, 0 for a peer
 * that died, went silent (stopped, frozen) or was found lost, -1 when it runs on
 * another host or in threads mode (unknown). */
int gs_comm_answering(const gs_comm_world *world, int process_rank);

/* After a job broke (a rank lost), the processes of one host that may
 * write its document settle who does: the first to claim gets the right
 * for good; returns 1 to it on every call, 0 to the others. A process that
 * died after writing then cannot make a slower one overwrite the document
 * with its own death as the cause. Without a launcher: 1. */
int gs_comm_claim_writer(gs_comm_world *world);

/* The process rank that claimed the writing on this host, or -1. */
int gs_comm_writer_claimed(const gs_comm_world *world);

/* Records in `world` that process `process_rank` was found lost in
 * another world of the job (a coll sweep's own world), so that the writer
 * election of `world` (gs_comm_answering) passes it over. */
void gs_comm_note_lost(gs_comm_world *world, int process_rank);

/* Whether gs_comm_find_lost found this process itself lost, or, in a job
 * over hosts, it was silent (stopped, frozen) longer than half the timeout:
 * the others have gone on without it. */
int gs_comm_self_lost(const gs_comm_world *world);

/* Whether the job's processes run on more than one host (mpi mode), where
 * no host sees the others' pids and heartbeats. */
int gs_comm_spans_hosts(const gs_comm_world *world);

/* After a job that spans hosts broke: which processes still answer, seen
 * through MPI point to point. The job's first call (gs_comm_find_lost, or
 * this) sends one message to every other process, with the rank this
 * host found lost, and listens until every process expected answered
 * (those of this host found dead or silent are not) or half the timeout
 * passed (1 to 5 s); later calls return its result. NULL on one host, in
 * threads mode, or without memory; else process_count entries, 1 for this
 * process and each that answered. Every live process must take part, so
 * every process calls gs_comm_find_lost after a break. Main or rank
 * thread, one per process. */
const unsigned char *gs_comm_roll_call(gs_comm_world *world);

/* Tests: GPUSCALE_TEST_SEPARATE_HOSTS=1 makes every process a host of its
 * own (its own shared window, its host named with its rank), so that one
 * machine rehearses a job whose processes cannot see each other. */
int gs_comm_separate_hosts(void);

/* ---- arrival times at collectives (comm_arrival.c) ---------------------- */
/* A recorder on a rank's handle marks the entry and exit of every
 * gs_comm_collective call into its open slot, so that the runner and coll
 * know when each rank arrived at its collectives (docs/stragglers.md,
 * "Arrival skew"):
 *   gs_comm_arrival_start(comm, slots, stream, &clock);  (collective)
 *   per timed step: gs_comm_arrival_slot(comm); ... collectives ...
 *   after the work completed: gs_comm_arrival_take(comm, entry, exit, &n);
 *   gs_comm_arrival_stop(comm);
 * A slot's entry is its first collective's, its exit its last one's; a
 * collective before the first slot is not marked. cuda: CUDA events on the
 * call's stream (when the stream reached the call: the device's arrival),
 * the recorder's own or lent by the caller (gs_comm_arrival_lend), placed
 * on the host clock by an anchor event; cpu: the monotonic clock around
 * the call. Marking allocates nothing. Tests: GPUSCALE_TEST_ARRIVAL_DELAY_US=U
 * makes every slot's entry wait U us on the host (a slow recorder, which
 * coll --arrival-cost must detect); a malformed U fails the start. */
typedef struct {
  const char *clock;      /* "host" or "device" */
  const char *alignment;  /* "shared" (one host's clock) or "ping-pong" */
  double offset_seconds;  /* added to this rank's clock to reach process 0's */
  double error_seconds;   /* bound of the error of the alignment and the device anchor */
} gs_comm_arrival_clock;

/* Starts a recorder of `slots` (>= 1) slots on this rank's handle, its
 * events made and its clock aligned: collective over every rank of the
 * world when the job spans hosts (the ping-pong with process 0, bounded by
 * the timeout). cuda: `stream` must be idle (the device anchor is recorded
 * on it). *clock (may be NULL) receives the alignment. Rank thread. */
gs_status gs_comm_arrival_start(gs_comm *comm, size_t slots, cudaStream_t stream,
                                gs_comm_arrival_clock *clock);

/* Opens the next slot: the collectives from here on are its (GS_BUG past
 * the recorder's slots; nothing without a recorder). */
void gs_comm_arrival_slot(gs_comm *comm);

/* cuda: lends the open slot events the caller records on the stream of
 * the slot's collectives anyway, so that the recorder records none of its
 * own there (coll's per-iteration timing events; docs/stragglers.md,
 * "Arrival skew"): `entry` recorded before the slot's first collective
 * with nothing enqueued on that stream between them, `exit` recorded after
 * its last collective, nothing between; either NULL for the recorder's
 * own. A lent entry is taken no earlier than the host clock read when the
 * slot's first collective is called (the stream reached the collective when
 * its previous work ended or when the call enqueued it, whichever came
 * later). Both made on this rank's device with timing enabled, recorded after
 * gs_comm_arrival_start and before gs_comm_arrival_take, neither recorded
 * again nor destroyed until that take has returned (one event may be one
 * slot's exit and the next one's entry). Call after gs_comm_arrival_slot,
 * before the slot's first collective (GS_BUG otherwise, and on the cpu
 * backend); nothing without a recorder. Rank thread. */
void gs_comm_arrival_lend(gs_comm *comm, cudaEvent_t entry, cudaEvent_t exit);

/* After the slots' work completed: each opened slot's entry and exit
 * seconds on process 0's clock (NaN for a slot without a collective) into
 * entry[0..*n) and exit[0..*n), then no slot is open (the next
 * gs_comm_arrival_slot reuses slot 0). cuda: *host_checked (may be NULL)
 * receives the slots with a collective, *host_bound (may be NULL) those
 * whose device entry came within GS_ARRIVAL_HOST_BOUND_SECONDS of the
 * host's call of the slot's first collective (the stream waited for its
 * host: core/arrival.h); cpu: both 0 (the entry is the host's call). */
gs_status gs_comm_arrival_take(gs_comm *comm, double *entry, double *exit, size_t *n,
                               size_t *host_checked, size_t *host_bound);

/* Ends the recorder and frees it; nothing without one. */
void gs_comm_arrival_stop(gs_comm *comm);

/* ---- exposed communication time ------------------------------------------ */
/* A workload brackets the part of a step in which its compute stream waits
 * for communication (the communication it could not overlap):
 *   gs_comm_exposed_begin(comm, stream);
 *   ... the collective on `stream`, or cudaStreamWaitEvent on a comm stream ...
 *   gs_comm_exposed_end(comm, stream);
 * On the cuda backend each bracket records a pair of CUDA events on
 * `stream`; on the cpu backend it reads the monotonic clock. After the step
 * has completed the runner calls gs_comm_exposed_take, which sums the
 * brackets since the last take; that sum is the step's entry in the rank
 * record's "comm_seconds". At most GS_COMM_EXPOSED_MAX brackets per step on the
 * cuda backend (each holds a pair of events); any number on the cpu backend. */
#define GS_COMM_EXPOSED_MAX 1024

gs_status gs_comm_exposed_begin(gs_comm *comm, cudaStream_t stream);
gs_status gs_comm_exposed_end(gs_comm *comm, cudaStream_t stream);
/* Seconds of exposed communication since the previous take (the step must
 * be complete); resets the brackets. */
gs_status gs_comm_exposed_take(gs_comm *comm, double *seconds);

/* ---- host data between processes --------------------------------------------- */

/* Gathers `bytes` from every process to every process (recv:
 * process_count * bytes, in process order), bounded by the timeout, so that
 * any live process can write the document when process 0 is lost. In
 * threads mode copies send into recv. Called by one thread per process. */
gs_status gs_comm_world_allgather(gs_comm_world *world, const void *send, size_t bytes,
                                  void *recv);

/* After a collective of the world broke (a rank lost): every process
 * still answering sends its `bytes` of `send` to every other such process
 * point to point, and receives theirs until every process still answering
 * sent (at most the world's timeout, at least a second). recv[k]
 * (malloc'ed, owned by the caller) and sizes[k] hold what process k sent,
 * NULL and 0 for this process and for those that sent nothing (the one
 * gs_comm_find_lost found, a dead or silent one). Called by one thread per
 * process, after gs_comm_find_lost. In threads mode every entry is NULL. */
gs_status gs_comm_world_salvage(gs_comm_world *world, const void *send, size_t bytes, void **recv,
                                size_t *sizes);

#endif
