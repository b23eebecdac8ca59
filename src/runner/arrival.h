/* Arrival times at collectives for the runner and coll (docs/stragglers.md,
 * "Arrival skew"): a rank's recorder started on its communicator before
 * the timed iterations, its slots collected into the measurement's
 * gs_arrival afterwards, and, under a launcher, every rank's times brought
 * to every process. */
#ifndef GS_RUNNER_ARRIVAL_H
#define GS_RUNNER_ARRIVAL_H

#include "core/arrival.h"
#include "platform/comm.h"

/* Starts the recorder of global rank `rank` with `slots` slots on `comm`
 * (collective: every rank of the world calls it at the same point; cuda:
 * `stream` idle) and notes its clock in a->ranks[rank]; `notes_alignment`
 * (one thread per process) also sets a->alignment. Rank thread. */
gs_status gs_runner_arrival_begin(gs_comm *comm, size_t slots, cudaStream_t stream, gs_arrival *a,
                                  int rank, int notes_alignment);

/* After the slots' work completed: appends the opened slots' times to
 * a->ranks[rank] (growing it when it lacks room) and, when `stop`, ends
 * the recorder. Rank thread. */
gs_status gs_runner_arrival_collect(gs_comm *comm, size_t slots, gs_arrival *a, int rank,
                                    int stop);

/* mpi mode (one rank per process): every process sends rank `self`'s
 * times of each of arrivals[0..n) (at most `iters` iterations each) and
 * files the others' into their ranks. Collective over the world's
 * processes; main thread. */
gs_status gs_runner_arrival_gather(gs_comm_world *world, int self, gs_arrival *const *arrivals,
                                   size_t n, size_t iters);

#endif
