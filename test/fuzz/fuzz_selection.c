/*
 * fuzz_selection.c: framework selection lists (core/mca/framework.c
 * parse_selection, the include/exclude checks and the unknown-name
 * explanations) on the test-only framework "ptest" of test/mca (built-in
 * components alpha, beta, shy, broken). Input: the value of the selection
 * variable "ptest" from the command line (cut at the first NUL).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/framework.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "test/fuzz/fuzz.h"
#include "test/mca/ptest.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("HOME", px_fuzz_empty_dir(), 1);
    setenv("PX_SYSCONFDIR", px_fuzz_empty_dir(), 1);
    setenv("PX_MCA_mca_component_path", px_fuzz_empty_dir(), 1); /* no plugins */
    ptest_add_builtins();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = px_fuzz_text(data, size);
    if (!text)
        return 0;
    px_mca_var_init();
    px_mca_var_set_source("ptest", text, PX_MCA_VAR_SOURCE_COMMAND_LINE, "--mca");
    int rc = px_mca_framework_open(&px_ptest_base_framework);
    if (rc != PX_SUCCESS && rc != PX_ERR_BAD_PARAM && rc != PX_ERR_NOT_FOUND)
        abort();
    static const char *const comps[] = {"alpha", "beta", "shy", "broken", "nosuch", ""};
    for (size_t k = 0; k < sizeof comps / sizeof *comps; k++)
        (void)px_mca_framework_allows(&px_ptest_base_framework, comps[k]);
    (void)px_mca_framework_selection_error(&px_ptest_base_framework);
    px_mca_var_check_unknown();
    ptest_log_clear();
    px_mca_framework_close(&px_ptest_base_framework);
    px_mca_var_finalize();
    free(text);
    return 0;
}
