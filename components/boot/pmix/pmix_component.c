/*
 * pmix_component.c: boot/pmix component: variables and query.
 * query accepts only when the environment carries PMIx's own variables
 * (PMIX_NAMESPACE and PMIX_RANK, set by every PMIx server for its clients);
 * it does not contact the server, so a process with no launcher costs nothing.
 * Only then does it load libpmix (pmix_lib.h): a process started by pxrun or
 * with no launcher never maps it.
 */
#include <stdio.h>
#include <stdlib.h>
#include "components/boot/pmix/pmix.h"
#include "components/boot/pmix/pmix_lib.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"

int px_boot_pmix_priority = 60;
int px_boot_pmix_fence_timeout = 300;

static const px_mca_var_field_t px_boot_pmix_vars[] = {
    {.name = "priority",
     .help = "Priority of boot/pmix when the PMIx environment (PMIX_NAMESPACE, PMIX_RANK) is "
             "present; singleton is lower, pxrun higher (a job started by pxrun inside a PMIx "
             "job is pxrun's)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .min = "0",
     .max = "100",
     .storage = &px_boot_pmix_priority},
    {.name = "fence_timeout",
     .help = "Seconds a modex fence may wait for the other ranks before it fails with a PMIx "
             "timeout (0: wait forever)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .min = "0",
     .storage = &px_boot_pmix_fence_timeout},
    {.name = NULL},
};

static int px_boot_pmix_register(void)
{
    return px_mca_var_register_table("boot", "pmix", px_boot_pmix_vars, -1, NULL);
}

bool px_boot_pmix_env_present(const char **why)
{
    static char text[160];
    const char *ns = getenv("PMIX_NAMESPACE");
    const char *rank = getenv("PMIX_RANK");
    if (NULL == ns || NULL == rank || '\0' == ns[0] || '\0' == rank[0]) {
        if (why)
            *why = "PMIX_NAMESPACE and PMIX_RANK are not both set: no PMIx launcher";
        return false;
    }
    snprintf(text, sizeof(text), "PMIX_NAMESPACE=%.64s PMIX_RANK=%.16s", ns, rank);
    if (why)
        *why = text;
    return true;
}

static int px_boot_pmix_query(int *priority, px_boot_module_t **module)
{
    if (!px_boot_pmix_env_present(NULL)) {
        *priority = -1;
        *module = NULL;
        return PX_ERR_NOT_AVAILABLE;
    }
    const char *why = NULL;
    if (!px_boot_pmix_lib_load(&why)) {
        const char *env = NULL;
        (void)px_boot_pmix_env_present(&env);
        px_show_error("boot/pmix: a PMIx launcher started this process (%s) but %s. Install the "
                      "PMIx client library Plexus was built with (Debian: libpmix2), or put its "
                      "folder in LD_LIBRARY_PATH; without it the process cannot join its job",
                      env, why);
        *priority = -1;
        *module = NULL;
        return PX_ERR_NOT_AVAILABLE;
    }
    *priority = px_boot_pmix_priority;
    *module = &px_boot_pmix_module;
    return PX_SUCCESS;
}

const px_boot_component_t px_boot_pmix_component = {
    .base =
        PX_MCA_COMPONENT_HEADER("boot", PX_BOOT_API_MAJOR, PX_BOOT_API_MINOR, PX_BOOT_API_RELEASE,
                                "pmix", 1, 0, 0, px_boot_pmix_register, NULL, NULL),
    .query = px_boot_pmix_query,
};
