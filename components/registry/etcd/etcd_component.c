/*
 * etcd_component.c: registry/etcd component: variables and query. query
 * declines when registry_etcd_endpoints is empty (nothing to reach); when it
 * is set, the module is made and its lease granted, so a store that is down
 * is said at selection, within registry_timeout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <curl/curl.h>
#include "components/registry/etcd/etcd.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"

char *px_registry_etcd_endpoints = NULL;
int px_registry_etcd_priority = 50;

static const px_mca_var_field_t px_registry_etcd_vars[] = {
    {.name = "endpoints",
     .help = "etcd v3 endpoints of one cluster, \"http://host:port[,http://host:port...]\" (or "
             "https://, verified against the system's CA store); tried in order, the next one "
             "after one that fails or does not answer within registry_timeout. Empty: "
             "registry/etcd is not used",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 2,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "",
     .storage = &px_registry_etcd_endpoints},
    {.name = "priority",
     .help = "Priority of registry/etcd when registry_etcd_endpoints is set (above p2p, which "
             "needs no store)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .min = "0",
     .max = "100",
     .storage = &px_registry_etcd_priority},
    {.name = NULL},
};

static int px_registry_etcd_register(void)
{
    return px_mca_var_register_table("registry", "etcd", px_registry_etcd_vars, -1, NULL);
}

/* libcurl is set up only when the endpoints are set (query), so a process
 * that does not use etcd does not pay for it. */
static bool px_registry_etcd_curl_ready = false;

static int px_registry_etcd_close(void)
{
    if (px_registry_etcd_curl_ready)
        curl_global_cleanup();
    px_registry_etcd_curl_ready = false;
    return PX_SUCCESS;
}

static int px_registry_etcd_query(int *priority, px_registry_module_t **module)
{
    *priority = -1;
    *module = NULL;
    if (NULL == px_registry_etcd_endpoints || '\0' == px_registry_etcd_endpoints[0])
        return PX_ERR_NOT_AVAILABLE; /* registry_etcd_endpoints is not set */
    if (!px_registry_etcd_curl_ready) {
        /* libcurl 7.84+ makes it thread-safe; the base calls query once */
        if (CURLE_OK != curl_global_init(CURL_GLOBAL_DEFAULT)) {
            px_show_error("registry/etcd: libcurl could not be initialized (curl_global_init)");
            return PX_ERR_NOT_AVAILABLE;
        }
        px_registry_etcd_curl_ready = true;
    }
    int rc = px_registry_etcd_module_create(px_registry_etcd_endpoints, module);
    if (PX_SUCCESS != rc)
        return rc;
    *priority = px_registry_etcd_priority;
    return PX_SUCCESS;
}

const px_registry_component_t px_registry_etcd_component = {
    .base = PX_REGISTRY_COMPONENT_HEADER("etcd", 1, 0, 0, px_registry_etcd_register, NULL,
                                         px_registry_etcd_close),
    .query = px_registry_etcd_query,
};
