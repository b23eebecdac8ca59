/* The allow-list and the credential filter of recorded environment
 * variables (see env_record.h). */
#include "core/env_record.h"

#include <string.h>

/* Prefixes of the variables that change how GPU programs run. */
static const char *const allowed_prefixes[] = {"CUDA_", "NCCL_", "NVIDIA_", "OMPI_",    "SLURM_",
                                               "OMP_",  "MKL_",  "TORCH",   "PYTORCH_", "TF_",
                                               "XLA_",  "UCX_",  NULL};

/* Whole names allowed: launch variables and search paths. */
static const char *const allowed_names[] = {
    "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "RANK",         "LOCAL_RANK",
    "PATH",        "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX", NULL};

/* Allowed prefixes whose variables hold something else (Terraform's
 * TF_VAR_* inputs are often secrets). */
static const char *const refused_prefixes[] = {"TF_VAR_", NULL};

/* Words of a name that say it may hold a credential. */
static const char *const secret_words[] = {"TOKEN",  "SECRET",  "KEY",    "PASS",    "PWD",
                                           "CREDENTIAL", "AUTH", "COOKIE", "SESSION", "PRIVATE",
                                           NULL};

/* Beginnings of values that are credentials whatever the name says. */
static const char *const secret_values[] = {"-----BEGIN", "ghp_", "gho_", "ghu_", "ghs_",
                                            "github_pat_", "glpat-", "xoxb-", "xoxp-", "AKIA",
                                            "ASIA", "sk-", "hf_", "eyJ", NULL};

static int starts_with_any(const char *text, size_t n, const char *const *list) {
  for (size_t i = 0; list[i]; i++) {
    const size_t len = strlen(list[i]);
    if (len <= n && strncmp(text, list[i], len) == 0) return 1;
  }
  return 0;
}

/* Whether the name (n bytes) holds a secret word, in any case. */
static int secret_name(const char *name, size_t n) {
  char upper[256];
  if (n >= sizeof upper) return 1; /* a name this long is no setting of ours */
  for (size_t k = 0; k < n; k++)
    upper[k] = (char)(name[k] >= 'a' && name[k] <= 'z' ? name[k] - 'a' + 'A' : name[k]);
  upper[n] = '\0';
  for (size_t w = 0; secret_words[w]; w++)
    if (strstr(upper, secret_words[w])) return 1;
  return 0;
}

/* Whether a value looks like a credential: a known token prefix, a PEM
 * block, or a URL whose user part carries a password (scheme://user:pw@). */
static int secret_value(const char *value) {
  if (starts_with_any(value, strlen(value), secret_values)) return 1;
  for (const char *s = strstr(value, "://"); s; s = strstr(s + 3, "://")) {
    const char *host_end = s + 3 + strcspn(s + 3, "/?#");
    const char *at = memchr(s + 3, '@', (size_t)(host_end - (s + 3)));
    if (at && memchr(s + 3, ':', (size_t)(at - (s + 3)))) return 1;
  }
  return 0;
}

int gs_env_recordable(const char *entry) {
  const char *eq = strchr(entry, '=');
  if (!eq || eq == entry) return 0;
  const size_t n = (size_t)(eq - entry);
  int allowed = starts_with_any(entry, n, allowed_prefixes);
  for (size_t i = 0; allowed_names[i] && !allowed; i++)
    allowed = strlen(allowed_names[i]) == n && strncmp(entry, allowed_names[i], n) == 0;
  if (!allowed || starts_with_any(entry, n, refused_prefixes)) return 0;
  return !secret_name(entry, n) && !secret_value(eq + 1);
}
