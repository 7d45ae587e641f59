/*
 * pxrun_component.c: registration and query of boot/pxrun.
 */
#include <stdlib.h>
#include "components/boot/pxrun/pxrun.h"
#include "components/boot/pxrun/pxrun_proto.h"
#include "core/mca/var.h"
#include "core/util/error.h"

int px_boot_pxrun_priority = 80;
int px_boot_pxrun_timeout = 600;

static const px_mca_var_field_t px_boot_pxrun_vars[] = {
    {.name = "priority",
     .help = "Priority of boot/pxrun when the process runs under pxrun (above pmix's 60 and "
             "singleton's 1)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 9,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .min = "0",
     .max = "100",
     .storage = &px_boot_pxrun_priority},
    {.name = "timeout",
     .help = "Seconds to wait for an answer from pxrun (a fence waits for every rank) before "
             "failing with PX_ERR_TIMEOUT",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "1",
     .storage = &px_boot_pxrun_timeout},
    {.name = NULL},
};

static int px_boot_pxrun_register(void)
{
    return px_mca_var_register_table("boot", "pxrun", px_boot_pxrun_vars, -1, NULL);
}

static int px_boot_pxrun_query(int *priority, px_boot_module_t **module)
{
    const char *uri = getenv(PX_PXRUN_URI_ENV);
    if (NULL == uri || '\0' == uri[0]) {
        *priority = -1;
        *module = NULL;
        return PX_ERR_NOT_AVAILABLE;
    }
    *priority = px_boot_pxrun_priority;
    *module = &px_boot_pxrun_module;
    return PX_SUCCESS;
}

const px_boot_component_t px_boot_pxrun_component = {
    .base =
        PX_MCA_COMPONENT_HEADER("boot", PX_BOOT_API_MAJOR, PX_BOOT_API_MINOR, PX_BOOT_API_RELEASE,
                                "pxrun", 1, 0, 0, px_boot_pxrun_register, NULL, NULL),
    .query = px_boot_pxrun_query,
};
