/*
 * boot_base.c: the boot framework object, selection of the boot module by
 * priority, and the modex helpers keyed "<framework>.<component>".
 */
#include <stdio.h>
#include <string.h>
#include "core/mca/framework.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/boot/boot.h"

px_boot_module_t *px_boot = NULL;

px_mca_framework_t px_boot_base_framework = {
    .name = "boot",
    .description = "How a process learns its rank, size, peers' hosts and addresses (modex)",
    .api_version = {PX_BOOT_API_MAJOR, PX_BOOT_API_MINOR, PX_BOOT_API_RELEASE},
    .register_fn = NULL,
    .open_fn = NULL,
    .close_fn = NULL,
};

static int px_boot_base_query(const px_mca_component_t *component, int *priority, void **module)
{
    const px_boot_component_t *c = (const px_boot_component_t *)component;
    *priority = -1;
    *module = NULL;
    if (NULL == c->query)
        return PX_ERR_NOT_AVAILABLE;
    px_boot_module_t *m = NULL;
    int rc = c->query(priority, &m);
    *module = m;
    return rc;
}

int px_boot_base_select(void)
{
    if (px_boot)
        return PX_SUCCESS;
    int rc = px_mca_framework_open(&px_boot_base_framework);
    if (rc != PX_SUCCESS)
        return rc;
    const px_mca_component_t *best = NULL;
    void *module = NULL;
    rc = px_mca_select_highest(&px_boot_base_framework, px_boot_base_query, &best, &module);
    if (rc != PX_SUCCESS || NULL == module) {
        char known[512] = "";
        const px_mca_component_t *list[32];
        int n = px_mca_repository_list("boot", list, 32);
        for (int i = 0; i < n && i < 32; ++i) {
            size_t used = strlen(known);
            snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
                     list[i]->component_name);
        }
        px_show_error("no boot component can start this process (selection variable \"boot\" "
                      "= %s): each one declined. Components known: %s. A launcher's component "
                      "serves only processes its launcher started, singleton serves a process "
                      "started alone; set PX_MCA_boot_base_verbose=10 to see each one's answer",
                      px_boot_base_framework.selection && *px_boot_base_framework.selection
                          ? px_boot_base_framework.selection
                          : "(all)",
                      n > 0 ? known : "none");
        px_mca_framework_close(&px_boot_base_framework);
        return rc != PX_SUCCESS ? rc : PX_ERR_NOT_FOUND;
    }
    px_boot_module_t *m = module;
    PX_OUTPUT_VERBOSE(10, px_boot_base_framework.output, "boot: selected %s",
                      best ? best->component_name : m->name);
    if (m->init) {
        rc = m->init();
        if (rc != PX_SUCCESS) {
            px_show_error("boot %s: init failed: %s", m->name ? m->name : "?", px_strerror(rc));
            px_mca_framework_close(&px_boot_base_framework);
            return rc;
        }
    }
    px_boot = m;
    return PX_SUCCESS;
}

int px_boot_base_close(void)
{
    int rc = PX_SUCCESS;
    if (px_boot) {
        px_boot_base_session_close();
        if (px_boot->finalize)
            rc = px_boot->finalize();
        px_boot = NULL;
        px_mca_framework_close(&px_boot_base_framework);
    }
    return rc;
}

static int modex_key(const px_mca_component_t *component, char *key, size_t len)
{
    int n = snprintf(key, len, "%s.%s", component->framework_name, component->component_name);
    return (n < 0 || (size_t)n >= len) ? PX_ERR_BAD_PARAM : PX_SUCCESS;
}

int px_boot_modex_send(const px_mca_component_t *component, const void *data, size_t len)
{
    char key[256];
    if (NULL == px_boot)
        return PX_ERR_NOT_INITIALIZED;
    int rc = modex_key(component, key, sizeof(key));
    if (rc != PX_SUCCESS)
        return rc;
    return px_boot->put(key, data, len);
}

int px_boot_modex_recv(const px_mca_component_t *component, int rank, void **data, size_t *len)
{
    char key[256];
    if (NULL == px_boot)
        return PX_ERR_NOT_INITIALIZED;
    int rc = modex_key(component, key, sizeof(key));
    if (rc != PX_SUCCESS)
        return rc;
    return px_boot->get(rank, key, data, len);
}
