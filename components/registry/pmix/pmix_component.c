/*
 * pmix_component.c: registry/pmix component: variables and query.
 * query declines, saying why, when this process was not started by a PMIx
 * launcher (PMIx is not initialized: boot/pmix was not selected) or when the
 * launcher's server does not answer a probe lookup with "found" or "not
 * found" (Slurm's srun --mpi=pmix: publish/lookup not supported).
 */
#include <pmix.h>
#include <stdio.h>
#include <string.h>
#include "components/registry/pmix/pmix.h"
#include "core/mca/framework.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"

/* Above p2p (which needs nothing), below redis and etcd (which run only
 * where the user configured a store, and reach every job). */
int px_registry_pmix_priority = 20;
int px_registry_pmix_range = PMIX_RANGE_SESSION;

static const px_mca_var_enum_value_t px_registry_pmix_range_values[] = {
    {PMIX_RANGE_SESSION, "session"}, {PMIX_RANGE_GLOBAL, "global"}, {0, NULL}};

static const px_mca_var_field_t px_registry_pmix_vars[] = {
    {.name = "priority",
     .help = "Priority of registry/pmix when this process runs under a PMIx launcher whose "
             "server supports publish/lookup (mpirun); p2p is lower, redis and etcd higher",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .min = "0",
     .max = "100",
     .storage = &px_registry_pmix_priority},
    {.name = "range",
     .help = "PMIx range of published names: session (Open MPI 4.1's mpirun: the job's "
             "processes, and every job started with the same --ompi-server) or global (the "
             "launcher's idea of everything; with Open MPI 4.1 names published with global are "
             "not seen by other jobs even through ompi-server: docs/registry.md)",
     .type = PX_MCA_VAR_TYPE_ENUM,
     .enum_values = px_registry_pmix_range_values,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .storage = &px_registry_pmix_range},
    {.name = NULL},
};

const char *px_registry_pmix_range_name(void)
{
    for (int i = 0; px_registry_pmix_range_values[i].name; ++i)
        if (px_registry_pmix_range_values[i].value == px_registry_pmix_range)
            return px_registry_pmix_range_values[i].name;
    return "?";
}

static int px_registry_pmix_register(void)
{
    return px_mca_var_register_table("registry", "pmix", px_registry_pmix_vars, -1, NULL);
}

static int px_registry_pmix_query(int *priority, px_registry_module_t **module)
{
    *priority = -1;
    *module = NULL;
    const char *why = px_registry_pmix_probe(module);
    if (why) {
        /* The base's summary only has our error code: say why here. Loudly
         * when the user asked for pmix (PX_MCA_registry=pmix), else only at
         * registry_base_verbose >= 1 (another store may serve). */
        px_mca_framework_t *fw = px_registry_base_framework_get();
        const char *sel = fw->selection;
        if (sel && '^' != sel[0] && strstr(sel, "pmix"))
            px_show_error("registry/pmix declined: %s", why);
        else
            PX_OUTPUT_VERBOSE(1, fw->output, "registry/pmix declined: %s", why);
        return PX_ERR_NOT_AVAILABLE;
    }
    *priority = px_registry_pmix_priority;
    return PX_SUCCESS;
}

const px_registry_component_t px_registry_pmix_component = {
    .base = PX_REGISTRY_COMPONENT_HEADER("pmix", 1, 0, 0, px_registry_pmix_register, NULL, NULL),
    .query = px_registry_pmix_query,
};
