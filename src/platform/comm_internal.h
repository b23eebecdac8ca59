/* Private parts of the communication layer shared by comm.c (job, worlds,
 * NCCL, waiting), comm_host.c (collectives on host buffers) and comm_coll.c
 * (each collective's NCCL and MPI call). Nothing outside
 * src/platform/comm*.c includes this header. */
#ifndef GS_COMM_INTERNAL_H
#define GS_COMM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include <nccl.h>

#include "platform/comm.h"

#ifdef GS_HAVE_MPI
#include <mpi.h>
#endif

/* The shared-memory exchange of the rank threads of one process (cpu
 * backend, threads mode): every rank publishes its buffers, waits at a
 * barrier that remembers who arrived, reads its peers' buffers, and waits
 * again before anyone reuses them. */
typedef struct {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int parties;
  int waiting;
  unsigned long generation;
  int aborted;
  unsigned long *arrived; /* per rank: generations passed + 1 while waiting */
  const void **send;      /* per rank: published send buffer */
  struct comm_message **inbox; /* per rank: point-to-point messages to it (comm_p2p.c) */
} comm_exchange;

struct gs_comm {
  gs_comm_world *world;
  int rank;
  int device;
  int progress_index; /* this rank's slot in world->progress */
  ncclComm_t nccl;    /* cuda backend */
  int aborted;
  char op_name[32]; /* the operation last started, for timeout messages */
  /* Exposed-communication brackets. */
  cudaEvent_t exposed_events[2 * GS_COMM_EXPOSED_MAX];
  int exposed_events_made;
  int exposed_count; /* brackets begun since the last take */
  double exposed_host_begin;
  double exposed_host_sum;
  /* Host scratch for the cpu backend. */
  void *scratch;
  size_t scratch_bytes;
  /* Point-to-point sends of the cpu backend under MPI still in flight
   * (comm_p2p.c): their requests and the copies they read. */
  struct comm_pending_send *pending;
  size_t pending_count, pending_capacity;
  struct comm_arrival *arrival; /* the arrival recorder (comm_arrival.c), or NULL */
};

struct gs_comm_world {
  gs_comm_job job;
  gs_comm_world_config config;
  int size; /* global ranks */
  int local_ranks;
  gs_comm *ranks;          /* local_ranks handles */
  _Atomic int any_aborted; /* a local rank aborted: the others stop too */
  /* Progress of every rank of this process (threads mode) or of the
   * processes on this host (mpi mode, in a shared window). */
  _Atomic uint64_t *progress;
  int progress_count;
  int *progress_ranks;    /* global rank of each progress slot */
  /* mpi mode, in the shared window after the progress slots, one slot per
   * process of this host each: its heartbeat (CLOCK_MONOTONIC
   * nanoseconds), the signal that stopped it (0: none) and its pid. NULL
   * in threads mode. */
  _Atomic uint64_t *heartbeat;
  _Atomic uint64_t *left;
  _Atomic uint64_t *pids;
  /* mpi mode: process rank + 1 of the process of this host that claimed
   * the writing of a broken job's document (gs_comm_claim_writer); 0 while
   * none has. In the shared window, after the slots above. */
  _Atomic uint64_t *writer_claim;
  int lost_process; /* the last gs_comm_find_lost found, or -1 */
  comm_exchange exchange; /* cpu backend, threads mode */
  gs_fault_list faults;   /* the slowpair faults of config.faults */
#ifdef GS_HAVE_MPI
  MPI_Comm node_comm; /* processes on this host (mpi mode) */
  MPI_Win progress_window;
#endif
};

/* Seconds the survivors of a broken job listen for each other (the roll
 * call, the salvage) once a signal came: the launcher ending the job kills
 * what is left about a second after its SIGTERM (Open MPI's
 * odls_base_sigkill_timeout), and the writer needs the rest to write. */
#define COMM_SIGNALLED_SECONDS 0.3

#ifdef GS_HAVE_MPI
/* Completes `n` MPI requests by polling (MPI_Testall) within the world's
 * timeout; on timeout names the laggards and returns GS_ERR_TIMEOUT, and on
 * a signal or a stopped peer GS_ERR_INTERRUPTED. Requests not completed
 * stay active: collective ones cannot be cancelled (the caller ends the
 * job); point-to-point ones go through comm_mpi_complete_p2p. */
gs_status comm_mpi_complete(gs_comm *comm, MPI_Request *requests, int n);
/* comm_mpi_complete sleeping `nap` seconds between polls instead of
 * yielding (0: yield): a waiter that must leave the cores to others. */
gs_status comm_mpi_complete_napping(gs_comm *comm, MPI_Request *requests, int n, double nap);
/* Cancels and releases point-to-point requests that were given up, so that
 * a message arriving later (while the survivors of a broken job salvage
 * their results) matches none of them. A receive that had already begun
 * may still write its buffer, which must therefore outlive the job: the
 * callers receive into heap copies they keep once a request is given up. */
void comm_mpi_cancel(MPI_Request *requests, int n);
/* comm_mpi_complete for point-to-point requests: those not completed are
 * cancelled (comm_mpi_cancel). */
gs_status comm_mpi_complete_p2p(gs_comm *comm, MPI_Request *requests, int n);
#endif

/* Arrays of one slot per process of a host in the shared window: progress,
 * heartbeat, signal, pid (comm_internal's gs_comm_world). */
#define COMM_HOST_ARRAYS 4

/* CLOCK_MONOTONIC in nanoseconds: the heartbeats' clock, shared by the
 * processes of a host. */
uint64_t comm_now_ns(void);

/* Adds (on) or removes a world of this process under a launcher to the
 * worlds whose heartbeat its heartbeat thread renews (started with the
 * first, joined with the last). Main thread only. */
void comm_world_register(gs_comm_world *world, int on);

/* Process `process_rank` as this host shows it: 1 this process or a live
 * peer with a fresh heartbeat, 0 dead, -1 silent (stopped, frozen), -2 on
 * another host or in threads mode (unknown). */
int comm_process_state(const gs_comm_world *world, int process_rank);

/* Called by every polling wait of a process under a launcher: records that
 * this process still answers (its heartbeat) and, when a signal stopped it,
 * which one (so that its peers stop waiting for it at once). Returns the
 * process rank of a peer of this host that a signal stopped while this
 * process got none, or -1; *signal receives that peer's signal. */
int comm_poll_peers(gs_comm *comm, int *signal);

/* Seconds left before the world's timeout expires from `start`; a huge
 * number when there is no timeout. */
double comm_time_left(const gs_comm *comm, double start);

/* The error of a wait that outlasted the world's timeout in c's current
 * operation: names the ranks whose progress is behind, then `tail`. */
gs_status comm_stalled(const gs_comm *comm, const char *tail);

/* Seconds between two looks of a polling wait at the signal, its peers and
 * the clock. Counted in time, not in polls: on a loaded machine each yield
 * between two polls may give the core away for a whole time slice, and 256
 * of them outlasted the second a launcher leaves between its SIGTERM and
 * its SIGKILL. */
#define COMM_LOOK_SECONDS 0.001

/* Whether a polling wait should look at the signal, its peers and the
 * clock now: the first call, then every COMM_LOOK_SECONDS (*next, which
 * the caller starts at 0, holds when). */
int comm_look_due(double *next);

/* What platform does for each collective, one entry per descriptor of
 * core/coll_table.h (comm_coll.c). The threads path of the cpu backend
 * needs nothing here: it follows the descriptor's sources. */
typedef struct {
  /* Enqueues the call on `stream` through NCCL (device buffers). */
  gs_status (*nccl)(gs_comm *c, const gs_comm_call *call, cudaStream_t stream);
  /* Runs the call between processes through MPI on host buffers, reading
   * the input at `send` (the call's, or a copy where the form is in
   * place) and completing with comm_mpi_complete. NULL without MPI. */
  gs_status (*mpi)(gs_comm *c, const gs_comm_call *call, const void *send);
} comm_coll_impl;

extern const comm_coll_impl comm_coll_impls[GS_COLL_COUNT];

/* NCCL's names of an element type and a reduction (comm.c), and its
 * result as a status naming `what` (aborting nothing). */
ncclDataType_t comm_nccl_type(gs_dtype dtype);
ncclRedOp_t comm_nccl_op(gs_redop op);
gs_status comm_nccl_result(gs_comm *c, ncclResult_t rc, const char *what);

/* ops[0..n) as one ncclSend/ncclRecv group on `nccl` (the world's or a
 * group's communicator; peers are ranks of that communicator), enqueued
 * on `stream`; errors recorded on c. */
gs_status comm_nccl_p2p(gs_comm *c, ncclComm_t nccl, const gs_comm_p2p_op *ops, int n,
                        cudaStream_t stream);

#ifdef GS_HAVE_MPI
/* MPI's names of an element type and a reduction (avg: the sum, divided
 * afterwards by comm_host_run) (comm_host.c). */
MPI_Datatype comm_mpi_type(gs_dtype dtype);
MPI_Op comm_mpi_op(gs_redop op);
#endif

gs_status comm_exchange_init(comm_exchange *x, int parties);
void comm_exchange_destroy(comm_exchange *x);
void comm_exchange_abort(comm_exchange *x);
gs_status comm_exchange_barrier(gs_comm *comm);
/* The barrier of exchange `x` (the world's or a group's, comm_group.c) as
 * party `index`. Waits on a group's exchange also end when another rank of
 * the world aborted (any_aborted, looked at every 100 ms). */
gs_status comm_exchange_meet(gs_comm *comm, comm_exchange *x, int index);

/* Allreduce between the rank threads over exchange `x` of a group, this
 * rank as party `index`: reduces the published buffers in party order. */
gs_status comm_host_group_allreduce(gs_comm *comm, comm_exchange *x, int index, const void *send,
                                    void *recv, size_t count, gs_dtype dtype, gs_redop op);

/* Frees the messages of the exchange's inboxes and this handle's
 * finished sends (comm_p2p.c); called when the world is destroyed. */
void comm_p2p_release_exchange(comm_exchange *x);
void comm_p2p_release(gs_comm *comm);

/* The arrival recorder's marks around a collective on `stream`, and its
 * release with the world (comm_arrival.c). */
gs_status comm_arrival_enter(gs_comm *comm, cudaStream_t stream);
gs_status comm_arrival_leave(gs_comm *comm, cudaStream_t stream);
void comm_arrival_release(gs_comm *comm);

/* A collective on host buffers (the cpu backend): between the rank
 * threads or through the op's MPI call. Returns when it is done. */
gs_status comm_host_run(gs_comm *comm, const gs_comm_call *call);

/* The factor by which the cpu backend slows messages between this rank
 * and global rank `peer` (the world's slowpair faults; 1 when none). */
double comm_pair_factor(const gs_comm *c, int peer);

/* Stretches a transfer that began at gs_time_seconds() `t0` to `factor`
 * times its length: waits (factor - 1) x its elapsed time, precisely
 * (gs_fault_late_wait). Does nothing for factor <= 1. */
void comm_pair_stretch(double factor, double t0);

#endif
