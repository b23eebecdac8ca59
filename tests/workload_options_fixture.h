/* Shared by the tests that configure a workload from command-line words:
 * the words parsed into the workload's fresh options, then its
 * options_check, as `gpuscale run WORKLOAD` does before measuring.
 * Include after <cmocka.h>. */
#ifndef GS_TEST_WORKLOAD_OPTIONS_FIXTURE_H
#define GS_TEST_WORKLOAD_OPTIONS_FIXTURE_H

#include <stddef.h>

#include "core/options.h"
#include "core/status.h"
#include "workloads/workload.h"

/* Parses `words` (NULL-terminated) into fresh options of w, then runs w's
 * options_check if the parse passed. Returns the parse's status, else the
 * check's. *opts receives the options in either case; the caller frees
 * them with w->options_free. String options point into `words`, which
 * must outlive them. For tests that expect a refusal. */
static gs_status workload_options_parse(const gs_workload *w, const char *const *words,
                                        void **opts) {
  *opts = w->options_new();
  assert_non_null(*opts);
  int n = 0;
  while (words[n] != NULL) n++;
  const gs_option *tables[] = {w->options_table(*opts), NULL};
  // The parser reads the words and never writes them; its signature is argv's.
  gs_status st = gs_options_parse(tables, "test", n, (char **)words, NULL, NULL);
  return st != GS_OK ? st : w->options_check(*opts);
}

/* The options of w from `words` (as workload_options_parse), which must
 * parse and pass the check (else the test fails with the error); the
 * caller frees them with w->options_free. */
static void *workload_options(const gs_workload *w, const char *const *words) {
  void *opts = NULL;
  const gs_status st = workload_options_parse(w, words, &opts);
  if (st != GS_OK)
    fail_msg("%s options refused (status %d): %s", w->key, (int)st, gs_last_error());
  return opts;
}

#endif
