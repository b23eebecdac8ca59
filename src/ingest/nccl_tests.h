/* nccl-tests output read into a plain struct: the text table every
 * nccl-tests binary prints (header lines starting with '#', one row per
 * size with out-of-place and in-place columns, "# Avg bus bandwidth"
 * footer) and the JSON file recent versions write with --output_file
 * (format "version": 2 or 3). Parsers work on a buffer (fuzzed); the mapping
 * of every column is documented in docs/ingest.md. */
#ifndef GS_INGEST_NCCL_TESTS_H
#define GS_INGEST_NCCL_TESTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define GS_NCCL_TESTS_TEXT 128

/* One half of a table row: the out-of-place or the in-place measurement. */
typedef struct {
  int present;             /* 0: not measured (e.g. trace replay has no out-of-place) */
  double time_us;          /* average time of one operation, microseconds */
  double algbw_gbs;        /* GB/s = 1e9 bytes/s */
  double busbw_gbs;
  int64_t wrong;           /* elements that failed the check; -1 = "N/A" (no check) */
  size_t n_iter_times;     /* per-iteration times (JSON per-iteration report only) */
  double *iter_times_us;   /* owned */
} gs_nccl_tests_half;

/* One row of the table: one message size. */
typedef struct {
  size_t line;             /* where it was read (text: line number; JSON: 0) */
  uint64_t bytes;
  uint64_t count;          /* elements */
  char type[32];           /* "float", "bfloat16", ... */
  char redop[32];          /* "sum", "none", ... */
  int64_t root;            /* -1 when the collective has no root */
  gs_nccl_tests_half out_of_place, in_place;
} gs_nccl_tests_row;

/* A rank from the "# Using devices" list. */
typedef struct {
  int rank;
  char host[GS_NCCL_TESTS_TEXT];
  int device;              /* CUDA ordinal on its host */
  char device_name[GS_NCCL_TESTS_TEXT];
} gs_nccl_tests_rank;

typedef struct {
  char format[8];          /* "text" or "json" */
  char program[GS_NCCL_TESTS_TEXT]; /* "all_reduce_perf"; "" when the output does not say */
  char version[32];        /* nccl-tests version, "" when not given */
  char nccl_version[32];   /* "2.28.3", "" when not given */
  int threads, gpus_per_thread; /* -1 when not given */
  int warmup_iters, iters, validation; /* -1 when not given */
  int cpu_time;            /* 1: the time columns are host time (-C) */
  size_t n_ranks;
  gs_nccl_tests_rank *ranks;     /* owned */
  /* 1: the list names each process's first rank only, as nccl-tests' JSON
   * does (its config.devices: one entry per process, the rank of its first
   * thread and GPU); 0: every rank, as the text's "# Using devices" does. */
  int lists_processes;
  size_t n_rows;
  gs_nccl_tests_row *rows;       /* owned */
  double avg_busbw_gbs;    /* the footer's average; NAN when absent */
  int64_t out_of_bounds;   /* footer "Out of bounds values"; -1 when absent */
} gs_nccl_tests_output;

/* Parses nccl-tests output (text or JSON, told apart by a leading '{').
 * `source` names the file in errors, recorded with gs_error as
 * "SOURCE:LINE: what was wrong (what was expected)" for text and
 * "SOURCE: results[3].in_place.time: ..." for JSON. On error `out` holds
 * nothing (freed). */
gs_status gs_nccl_tests_parse(const char *data, size_t size, const char *source,
                              gs_nccl_tests_output *out);

void gs_nccl_tests_free(gs_nccl_tests_output *out);

/* The gpuscale collective name for an nccl-tests program name
 * ("all_reduce_perf" or ".../all_reduce_perf_mpi" -> "allreduce"); NULL
 * when it is not a known nccl-tests program. */
const char *gs_nccl_tests_op_from_program(const char *program);

/* The ranks of one process: threads x GPUs per thread; 0 when the output
 * does not say. */
size_t gs_nccl_tests_process_ranks(const gs_nccl_tests_output *out);

/* The number of ranks: the device list when given (times a process's
 * ranks where it lists processes), else one process's ranks; 0 when the
 * output tells neither. */
size_t gs_nccl_tests_world_size(const gs_nccl_tests_output *out);

#endif
