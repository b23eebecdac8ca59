/* Basic types shared by every layer: text sizes, where a rank runs
 * (backend, the rank limit, a process's place in a multi-process job). */
#ifndef GS_TYPES_H
#define GS_TYPES_H

/* Text buffer sizes of names, paths and messages. */
#define GS_TEXT_SHORT 64
#define GS_TEXT_LONG 256
#define GS_TEXT_ERROR 1024

/* Ranks one measurement may have (threads of one process or processes). */
#define GS_MAX_RANKS 64

typedef enum { GS_BACKEND_CPU = 0, GS_BACKEND_CUDA = 1 } gs_backend;

/* Where one process of an mpi-mode job runs (gathered once by the job
 * lifecycle, measure/job.h). */
typedef struct {
  char host[GS_TEXT_LONG];
  int device;                    /* CUDA ordinal, -1 on the cpu backend */
  int pid;
  int local_rank;                /* among the processes of its host */
  char gpu_name[GS_TEXT_LONG];   /* "" on the cpu backend */
  char gpu_uuid[GS_TEXT_SHORT];
  int cuda_driver_version, cuda_runtime_version; /* 13000 = 13.0; 0 = none */
  char nccl_version[GS_TEXT_SHORT];
} gs_rank_place;

#endif
