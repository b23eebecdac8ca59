/* Unit tests of how a process finds its place in a job from the launcher's
 * environment (gs_comm_job_detect): Open MPI's mpirun, Slurm's srun (and not
 * a Slurm batch script without a step), MPICH/Hydra, a job of one process,
 * and values that are not plain numbers. No launcher is needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "platform/comm.h"

static const char *const launcher_variables[] = {
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_STEP_ID", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS",
    "SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS", "PMI_LOCAL_RANK", "PMI_LOCAL_SIZE", NULL};

static int clear_launchers(void **state) {
  (void)state;
  for (size_t i = 0; launcher_variables[i]; i++) unsetenv(launcher_variables[i]);
  return 0;
}

static void test_no_launcher(void **state) {
  (void)state;
  gs_comm_job job;
  gs_comm_job_detect(&job);
  assert_int_equal(job.launch, GS_COMM_LAUNCH_THREADS);
  assert_string_equal(job.launcher, "none");
  assert_int_equal(job.process_count, 1);
  assert_int_equal(job.process_rank, 0);
}

static void test_openmpi(void **state) {
  (void)state;
  setenv("OMPI_COMM_WORLD_RANK", "11", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "16", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "8", 1);
  gs_comm_job job;
  gs_comm_job_detect(&job);
  assert_int_equal(job.launch, GS_COMM_LAUNCH_MPI);
  assert_string_equal(job.launcher, "openmpi");
  assert_int_equal(job.process_rank, 11);
  assert_int_equal(job.process_count, 16);
  assert_int_equal(job.local_rank, 3);
  assert_int_equal(job.local_count, 8);
}

/* srun -N 2 --ntasks-per-node 8: the second node's fourth task. */
static void test_srun_step(void **state) {
  (void)state;
  setenv("SLURM_STEP_ID", "0", 1);
  setenv("SLURM_PROCID", "11", 1);
  setenv("SLURM_STEP_NUM_TASKS", "16", 1);
  setenv("SLURM_LOCALID", "3", 1);
  setenv("SLURM_STEP_TASKS_PER_NODE", "8(x2)", 1);
  gs_comm_job job;
  gs_comm_job_detect(&job);
  assert_int_equal(job.launch, GS_COMM_LAUNCH_MPI);
  assert_string_equal(job.launcher, "slurm");
  assert_int_equal(job.process_rank, 11);
  assert_int_equal(job.process_count, 16);
  assert_int_equal(job.local_rank, 3);
}

/* A batch script's own variables without an srun step are no launch. */
static void test_slurm_batch_without_step(void **state) {
  (void)state;
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_STEP_NUM_TASKS", "16", 1);
  gs_comm_job job;
  gs_comm_job_detect(&job);
  assert_int_equal(job.launch, GS_COMM_LAUNCH_THREADS);
  assert_string_equal(job.launcher, "none");
}

static void test_mpich_and_junk(void **state) {
  (void)state;
  setenv("PMI_RANK", "1", 1);
  setenv("PMI_SIZE", "2", 1);
  setenv("MPI_LOCALRANKID", "1", 1);
  gs_comm_job job;
  gs_comm_job_detect(&job);
  assert_string_equal(job.launcher, "mpich");
  assert_int_equal(job.local_rank, 1);
  clear_launchers(NULL);
  setenv("OMPI_COMM_WORLD_RANK", "x1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  gs_comm_job_detect(&job);
  assert_int_equal(job.launch, GS_COMM_LAUNCH_THREADS);
  setenv("OMPI_COMM_WORLD_RANK", "2", 1); /* rank outside the size */
  gs_comm_job_detect(&job);
  assert_int_equal(job.launch, GS_COMM_LAUNCH_THREADS);
}

/* mpirun -np 1 is one process: threads mode, no MPI needed. */
static void test_one_process(void **state) {
  (void)state;
  setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  gs_comm_job job;
  gs_comm_job_detect(&job);
  assert_string_equal(job.launcher, "openmpi");
  assert_int_equal(job.launch, GS_COMM_LAUNCH_THREADS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_no_launcher, clear_launchers),
      cmocka_unit_test_setup(test_openmpi, clear_launchers),
      cmocka_unit_test_setup(test_srun_step, clear_launchers),
      cmocka_unit_test_setup(test_slurm_batch_without_step, clear_launchers),
      cmocka_unit_test_setup(test_mpich_and_junk, clear_launchers),
      cmocka_unit_test_setup(test_one_process, clear_launchers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
