/*
 * singleton_component.c: registration and query of boot/singleton.
 */
#include "components/boot/singleton/singleton.h"
#include "core/mca/var.h"
#include "core/util/error.h"

int px_boot_singleton_priority = 1;

static int px_boot_singleton_register(void)
{
    int rc = px_mca_var_register_range("boot", "singleton", "priority",
                                       "Priority of boot/singleton (a process with no launcher); "
                                       "launcher components use higher values",
                                       PX_MCA_VAR_TYPE_INT, 9, PX_MCA_VAR_SCOPE_READONLY, 0, "0",
                                       "100", &px_boot_singleton_priority);
    return rc < 0 ? rc : PX_SUCCESS;
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
