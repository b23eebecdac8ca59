/* Unit tests of core/env_record: the variables that change how GPU
 * programs run are recorded; names outside the allow-list, Terraform's
 * TF_VAR_* inputs, secret-looking names (password, passphrase, *_PWD,
 * tokens, keys) and secret-looking values under allowed names are not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/env_record.h"

static void test_allowed(void **state) {
  (void)state;
  const char *kept[] = {"CUDA_VISIBLE_DEVICES=GPU-8a3b1c2d-0000-1111-2222-333344445555",
                        "NCCL_DEBUG=INFO", "OMPI_COMM_WORLD_RANK=1", "SLURM_PROCID=3",
                        "OMP_NUM_THREADS=8", "TF_CPP_MIN_LOG_LEVEL=2", "RANK=0",
                        "MASTER_ADDR=node1", "PATH=/usr/bin:/bin",
                        "NCCL_SOCKET_IFNAME=eth0", "TORCH_NCCL_BLOCKING_WAIT=1"};
  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
    if (!gs_env_recordable(kept[i])) fail_msg("%s was not recorded", kept[i]);
  }
}

static void test_refused(void **state) {
  (void)state;
  const char *refused[] = {
      "HOME=/root", "AWS_SECRET_ACCESS_KEY=abc", "DB_PWD=hunter2", "MY_PASSPHRASE=x",
      "TF_VAR_db_password=hunter2", "TF_VAR_region=eu", "NCCL_IB_PASSWORD=x",
      "CUDA_API_TOKEN=abc", "SLURM_JOB_ACCOUNT_KEY=x", "OMPI_MCA_auth=x", "MASTER_PORT",
      "=value", "RANKS=4", "PATHX=/bin", "TORCH_HUB_session=1",
      // Secret values under allowed names.
      "NCCL_URL=https://user:hunter2@example.com/x", "CUDA_NOTE=ghp_0123456789abcdef",
      "OMP_X=AKIAIOSFODNN7EXAMPLE", "PYTHONPATH=eyJhbGciOiJIUzI1NiJ9.e30.x",
      "SLURM_X=-----BEGIN OPENSSH PRIVATE KEY-----"};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    if (gs_env_recordable(refused[i])) fail_msg("%s was recorded", refused[i]);
  }
  // A URL without a password is no secret.
  assert_true(gs_env_recordable("NCCL_URL=https://example.com:8080/path"));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_allowed),
                                     cmocka_unit_test(test_refused)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
