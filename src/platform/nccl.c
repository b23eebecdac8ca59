/* NCCL loaded at run time, on first use. The binary does not link it, so
 * that it starts where no CUDA toolkit is installed (Debian has no
 * libnccl2; the CPU backend, report and compare need no NCCL at all).
 * Each NCCL function gpuscale calls is defined here under NCCL's own name
 * and forwards to the library, opened with dlopen by the first call; its
 * functions are looked up once, then, so a collective in a timed loop
 * costs one indirect call more than a linked one. platform/comm.c and
 * device.c call NCCL as before. When the library cannot be opened (or
 * lacks a function), every call returns ncclSystemError and
 * ncclGetErrorString says why: "NCCL could not be loaded: ...". */
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define GS_NCCL_STRING(x) #x
#define GS_NCCL_SONAME(major) "libnccl.so." GS_NCCL_STRING(major)

/* Every function gpuscale calls that returns an ncclResult_t:
 * X(name, parameters, arguments). */
#define GS_NCCL_FUNCTIONS(X)                                                                   \
  X(ncclGetVersion, (int *version), (version))                                                 \
  X(ncclGetUniqueId, (ncclUniqueId * id), (id))                                                \
  X(ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank),              \
    (comm, nranks, id, rank))                                                                  \
  X(ncclCommInitRankConfig,                                                                    \
    (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *config),          \
    (comm, nranks, id, rank, config))                                                          \
  X(ncclCommInitAll, (ncclComm_t * comms, int ndev, const int *devices), (comms, ndev, devices)) \
  X(ncclCommSplit, (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config), \
    (comm, color, key, newcomm, config))                                                       \
  X(ncclCommDestroy, (ncclComm_t comm), (comm))                                                \
  X(ncclCommCount, (const ncclComm_t comm, int *count), (comm, count))                         \
  X(ncclCommUserRank, (const ncclComm_t comm, int *rank), (comm, rank))                        \
  X(ncclCommAbort, (ncclComm_t comm), (comm))                                                  \
  X(ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t * error), (comm, error))             \
  X(ncclAllReduce,                                                                             \
    (const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,          \
     ncclComm_t comm, cudaStream_t stream),                                                    \
    (send, recv, count, type, op, comm, stream))                                               \
  X(ncclAllGather,                                                                             \
    (const void *send, void *recv, size_t count, ncclDataType_t type, ncclComm_t comm,         \
     cudaStream_t stream),                                                                     \
    (send, recv, count, type, comm, stream))                                                   \
  X(ncclReduceScatter,                                                                         \
    (const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,          \
     ncclComm_t comm, cudaStream_t stream),                                                    \
    (send, recv, count, type, op, comm, stream))                                               \
  X(ncclBroadcast,                                                                             \
    (const void *send, void *recv, size_t count, ncclDataType_t type, int root,                \
     ncclComm_t comm, cudaStream_t stream),                                                    \
    (send, recv, count, type, root, comm, stream))                                             \
  X(ncclReduce,                                                                                \
    (const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,          \
     int root, ncclComm_t comm, cudaStream_t stream),                                          \
    (send, recv, count, type, op, root, comm, stream))                                         \
  X(ncclSend,                                                                                  \
    (const void *send, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,           \
     cudaStream_t stream),                                                                     \
    (send, count, type, peer, comm, stream))                                                   \
  X(ncclRecv,                                                                                  \
    (void *recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,                 \
     cudaStream_t stream),                                                                     \
    (recv, count, type, peer, comm, stream))                                                   \
  X(ncclGroupStart, (void), ())                                                                \
  X(ncclGroupEnd, (void), ())

#define GS_NCCL_POINTER(name, params, args) ncclResult_t (*name) params;

typedef struct {
  void *handle;    /* NULL when the library or one of its functions is missing */
  char error[512]; /* why, "" when loaded */
  GS_NCCL_FUNCTIONS(GS_NCCL_POINTER)
  const char *(*ncclGetErrorString)(ncclResult_t result);
  const char *(*ncclGetLastError)(ncclComm_t comm);
} nccl_library;

static nccl_library library;
static pthread_once_t library_once = PTHREAD_ONCE_INIT;

/* The address of `name` in the opened library into *slot (a function
 * pointer of the right type; memcpy because ISO C has no cast from the
 * object pointer dlsym gives). Returns 0 and says why when it is missing. */
static int find_function(const char *name, void *slot, size_t size) {
  void *symbol = dlsym(library.handle, name);
  if (!symbol) {
    snprintf(library.error, sizeof library.error,
             "NCCL could not be loaded: %s has no %s (gpuscale was built with NCCL %d.%d)",
             GS_NCCL_SONAME(NCCL_MAJOR), name, NCCL_MAJOR, NCCL_MINOR);
    return 0;
  }
  memcpy(slot, &symbol, size);
  return 1;
}

#define GS_NCCL_FIND(name, params, args) \
  ok = ok && find_function(#name, &library.name, sizeof library.name);

/* Opens the library through the loader's search path (the CUDA toolkit's
 * ld.so.conf entry, LD_LIBRARY_PATH) and looks every function up. */
static void open_library(void) {
  library.handle = dlopen(GS_NCCL_SONAME(NCCL_MAJOR), RTLD_NOW | RTLD_LOCAL);
  if (!library.handle) {
    const char *why = dlerror();
    snprintf(library.error, sizeof library.error, "NCCL could not be loaded: %s",
             why ? why : GS_NCCL_SONAME(NCCL_MAJOR) ": unknown error");
    return;
  }
  int ok = 1;
  GS_NCCL_FUNCTIONS(GS_NCCL_FIND)
  GS_NCCL_FIND(ncclGetErrorString, , )
  GS_NCCL_FIND(ncclGetLastError, , )
  if (!ok) {
    dlclose(library.handle);
    library.handle = NULL;
  }
}

/* Whether the library is open (opening it on the first call). */
static int loaded(void) {
  pthread_once(&library_once, open_library);
  return library.handle != NULL;
}

/* Defines NAME(PARAMS) forwarding ARGS to the library's NAME; without the
 * library it returns ncclSystemError. */
#define GS_NCCL_FORWARD(name, params, args)    \
  ncclResult_t name params {                   \
    if (!loaded()) return ncclSystemError;     \
    return library.name args;                  \
  }

// nccl.h declares these two with "()", which is no prototype in C.
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

GS_NCCL_FUNCTIONS(GS_NCCL_FORWARD)

/* NCCL's own text for `result`; without the library, why it is missing. */
const char *ncclGetErrorString(ncclResult_t result) {
  if (!loaded()) return library.error;
  return library.ncclGetErrorString(result);
}

/* NCCL's last error of `comm`; "" without the library (no call reached
 * NCCL, so ncclGetErrorString holds the whole story). */
const char *ncclGetLastError(ncclComm_t comm) {
  if (!loaded()) return "";
  return library.ncclGetLastError(comm);
}
