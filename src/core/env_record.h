/* Which environment variables a result document may record
 * (docs/result-schema.md, "Recorded environment"): an allow-list of the
 * prefixes and names that change how GPU programs run, minus every
 * variable whose name or value looks like a credential. */
#ifndef GS_CORE_ENV_RECORD_H
#define GS_CORE_ENV_RECORD_H

#include <stddef.h>

/* Whether the environment entry `entry` ("NAME=VALUE") may be recorded: its
 * name has an allowed prefix (CUDA_, NCCL_, NVIDIA_, OMPI_, SLURM_, OMP_,
 * MKL_, TORCH, PYTORCH_, TF_ except TF_VAR_, XLA_, UCX_) or is one of the
 * launch and path names (MASTER_ADDR, MASTER_PORT, WORLD_SIZE,
 * LOCAL_WORLD_SIZE, RANK, LOCAL_RANK, PATH, LD_LIBRARY_PATH, PYTHONPATH,
 * VIRTUAL_ENV, CONDA_PREFIX), and neither its name (TOKEN, SECRET, KEY,
 * PASS, PWD, CREDENTIAL, AUTH, COOKIE, SESSION, PRIVATE, any case) nor its
 * value (a URL with a password, a PEM block, a known token prefix such as
 * ghp_, AKIA or a JWT) looks like a credential. An entry without '=' is
 * not recorded. Pure function; any thread. */
int gs_env_recordable(const char *entry);

#endif
