/*
 * singleton_component.c: registration and query of boot/singleton.
 */
#include "components/boot/singleton/singleton.h"
#include "core/mca/var.h"
#include "core/util/error.h"

int px_boot_singleton_priority = 1;

static const px_mca_var_field_t px_boot_singleton_vars[] = {
    {.name = "priority",
     .help = "Priority of boot/singleton (a process with no launcher); launcher components use "
             "higher values",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 9,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .min = "0",
     .max = "100",
     .storage = &px_boot_singleton_priority},
    {.name = NULL},
};

static int px_boot_singleton_register(void)
{
    return px_mca_var_register_table("boot", "singleton", px_boot_singleton_vars, -1, NULL);
}

static int px_boot_singleton_query(int *priority, px_boot_module_t **module)
{
    *priority = px_boot_singleton_priority;
    *module = &px_boot_singleton_module;
    return PX_SUCCESS;
}

const px_boot_component_t px_boot_singleton_component = {
    .base =
        PX_MCA_COMPONENT_HEADER("boot", PX_BOOT_API_MAJOR, PX_BOOT_API_MINOR, PX_BOOT_API_RELEASE,
                                "singleton", 1, 0, 0, px_boot_singleton_register, NULL, NULL),
    .query = px_boot_singleton_query,
};
