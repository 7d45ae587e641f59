/*
 * ptest_plugin.c: one source for every test plugin of the ptest framework.
 * test/mca/Makefile.inc builds it several times with -D settings:
 *   PTEST_NAME        file-name component (symbol px_ptest_<PTEST_NAME>_component)
 *   PTEST_STRUCT_NAME component name inside the struct (default PTEST_NAME)
 *   PTEST_ABI         MCA ABI version (default current)
 *   PTEST_API_MAJOR   framework API major (default 1)
 *   PTEST_UNRESOLVED  call a function that exists nowhere
 *   PTEST_OPEN_RC     what open returns (default PX_SUCCESS)
 */
#include <stdio.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "test/mca/ptest.h"

#define STR2(x)       #x
#define STR(x)        STR2(x)
#define CAT3(a, b, c) a##b##c
#define SYM(a, b, c)  CAT3(a, b, c)

#ifndef PTEST_STRUCT_NAME
#define PTEST_STRUCT_NAME STR(PTEST_NAME)
#endif
#ifndef PTEST_ABI
#define PTEST_ABI PX_MCA_ABI_VERSION_CURRENT
#endif
#ifndef PTEST_API_MAJOR
#define PTEST_API_MAJOR PX_PTEST_API_MAJOR
#endif
#ifndef PTEST_OPEN_RC
#define PTEST_OPEN_RC PX_SUCCESS
#endif

static int counters[3];
static int weight = 7;
static const char *label = "plugin-default";
static const px_mca_var_enum_value_t modes[] = {{1, "fast"}, {2, "slow"}, {0, NULL}};
static int mode = 1;

static const int *plugin_counters(void)
{
    return counters;
}

static const char *found = "not probed";
static char found_buf[64];

/* An informational variable computed on first read (like a discovery). */
static int plugin_probe(void)
{
    snprintf(found_buf, sizeof(found_buf), "probed:%s", STR(PTEST_NAME));
    found = found_buf;
    return PX_SUCCESS;
}

static int plugin_register(void)
{
    counters[0]++;
    px_mca_var_register("ptest", STR(PTEST_NAME), "weight", "Weight of a ptest plugin",
                        PX_MCA_VAR_TYPE_INT, NULL, 4, PX_MCA_VAR_SCOPE_LOCAL, 0, &weight);
    px_mca_var_register("ptest", STR(PTEST_NAME), "label", "Label of a ptest plugin",
                        PX_MCA_VAR_TYPE_STRING, NULL, 4, PX_MCA_VAR_SCOPE_LOCAL, 0, &label);
    px_mca_var_register("ptest", STR(PTEST_NAME), "mode", "Mode of a ptest plugin",
                        PX_MCA_VAR_TYPE_ENUM, modes, 4, PX_MCA_VAR_SCOPE_LOCAL, 0, &mode);
    int idx = px_mca_var_register("ptest", STR(PTEST_NAME), "found",
                                  "What a ptest plugin found (probed on first read)",
                                  PX_MCA_VAR_TYPE_STRING, NULL, 2, PX_MCA_VAR_SCOPE_CONSTANT,
                                  PX_MCA_VAR_FLAG_READONLY, &found);
    if (idx >= 0)
        px_mca_var_set_probe(idx, plugin_probe);
    return PX_SUCCESS;
}

static int plugin_open(void)
{
    counters[1]++;
    return PTEST_OPEN_RC;
}

static int plugin_close(void)
{
    counters[2]++;
    return PX_SUCCESS;
}

#ifdef PTEST_UNRESOLVED
extern int px_ptest_function_that_exists_nowhere(void);
#endif

static int plugin_query(int *priority)
{
#ifdef PTEST_UNRESOLVED
    *priority = px_ptest_function_that_exists_nowhere();
#else
    *priority = weight;
#endif
    return PX_SUCCESS;
}

const px_ptest_component_t SYM(px_ptest_, PTEST_NAME, _component) = {
    .base =
        {
            .mca_abi_version = PTEST_ABI,
            .framework_name = "ptest",
            .framework_version = {PTEST_API_MAJOR, PX_PTEST_API_MINOR, 0},
            .component_name = PTEST_STRUCT_NAME,
            .component_version = {1, 2, 3},
            .register_params = plugin_register,
            .open = plugin_open,
            .close = plugin_close,
        },
    .query = plugin_query,
    .counters = plugin_counters,
};
