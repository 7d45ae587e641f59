/*
 * ptest.h: "ptest", a framework that exists only in the test suite, to
 * exercise core/mca without the real frameworks. Built-in test components
 * (alpha, beta, broken, shy) live in ptest_base.c and are added with
 * px_mca_repository_add_static; plugins are built from ptest_plugin.c with
 * different -D settings (good, wrong ABI, wrong API, older and newer API
 * minor, the other debug setting, mismatched name, unresolved symbol, failing
 * open). Used by test/mca/ *_test.c only.
 */
#ifndef PX_TEST_PTEST_H
#define PX_TEST_PTEST_H

#include "core/mca/component.h"
#include "core/mca/framework.h"

#define PX_PTEST_API_MAJOR 1
#define PX_PTEST_API_MINOR 1 /* 1.1, so that a 1.0 plugin shows the rule */

typedef struct px_ptest_component {
    px_mca_component_t base;
    /* Priority for px_mca_select_highest; negative declines. */
    int (*query)(int *priority);
    /* Plugins: counts of register_params, open, close calls. */
    const int *(*counters)(void);
} px_ptest_component_t;

extern px_mca_framework_t px_ptest_base_framework;

/* Add the built-in test components (once). */
void ptest_add_builtins(void);
/* Lifecycle log of the framework and the built-in components:
 * "fw:register alpha:register ... alpha:open ...". */
void ptest_log(const char *event);
const char *ptest_log_get(void);
void ptest_log_clear(void);

/* Where the test plugins are built (the libtool .libs folder). */
#ifndef PTEST_PLUGIN_DIR
#define PTEST_PLUGIN_DIR "."
#endif

#endif
