/*
 * p2p_component.c: registry/p2p's variables and query. It needs no service,
 * so it is always available, with a low priority: a store that is configured
 * (redis, etcd, pmix) wins over it.
 */
#include "components/registry/p2p/p2p.h"
#include <stdio.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"

px_registry_p2p_vars_t px_registry_p2p_vars = {
    .priority = 10, .port = 0, .max_clients = 64, .list_max = 4 << 20, .verbose = 1};
static int p2p_output = -1;

#define P2P_AT(field) .offset = PX_MCA_VAR_AT(px_registry_p2p_vars_t, field)
static const px_mca_var_field_t p2p_var_table[] = {
    {.name = "priority",
     .help = "Priority of registry/p2p (no service: each process answers lookups of its own "
             "names); a configured store's component has a higher one",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 9,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "10",
     .min = "0",
     .max = "100",
     P2P_AT(priority)},
    {.name = "address",
     .help = "Numeric IPv4 address registry/p2p's listener binds (others look this process's "
             "names up there): 127.0.0.1 (this host only), an interface's address, or 0.0.0.0 "
             "(then set registry_p2p_contact_address); empty (default): peer_listen_address, "
             "127.0.0.1 when that is unset",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "",
     P2P_AT(address)},
    {.name = "port",
     .help = "TCP port registry/p2p's listener binds; 0 (default): any free port (the "
             "qualified names, px_name_qualify, say which)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "0",
     .min = "0",
     .max = "65535",
     P2P_AT(port)},
    {.name = "contact_address",
     .help = "Numeric IPv4 address in this process's qualified names (a.b.c.d:port/name): how "
             "others reach its listener; empty (default): registry_p2p_address, or "
             "peer_contact_address when registry_p2p_address is empty too",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "",
     P2P_AT(contact_address)},
    {.name = "max_clients",
     .help = "Connections the listener serves at once; a new one beyond them replaces the "
             "oldest (so stalled clients cannot keep askers out)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "64",
     .min = "1",
     .max = "4096",
     P2P_AT(max_clients)},
    {.name = "list_max",
     .help = "Largest listing (bytes of names and values) the listener sends, and a client "
             "accepts, in answer to one list call; an owner with more says its listing was cut",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "4M",
     .min = "64k",
     .max = "256M",
     P2P_AT(list_max)},
    {.name = "verbose",
     .help = "Verbosity of registry/p2p: 1 (default) each connection the listener refused or "
             "dropped, and why; 2 also lookups of missing names and the listener's address",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "1",
     .min = "0",
     .max = "100",
     P2P_AT(verbose)},
    {.name = NULL},
};
#undef P2P_AT

int px_registry_p2p_output(void)
{
    if (p2p_output < 0)
        p2p_output = px_output_open("registry:p2p", px_registry_p2p_vars.verbose);
    return p2p_output < 0 ? 0 : p2p_output;
}

static int p2p_register(void)
{
    return px_mca_var_register_table("registry", "p2p", p2p_var_table, -1, &px_registry_p2p_vars);
}

static int p2p_close_component(void)
{
    if (p2p_output >= 0)
        px_output_close(p2p_output);
    p2p_output = -1;
    return PX_SUCCESS;
}

static int p2p_query(int *priority, px_registry_module_t **module)
{
    char why[128];
    int rc = px_registry_p2p_module_get(module, why, sizeof why);
    if (rc != PX_SUCCESS) {
        px_show_error("registry/p2p: %s", why);
        *priority = -1;
        return rc;
    }
    *priority = px_registry_p2p_vars.priority;
    return PX_SUCCESS;
}

const px_registry_component_t px_registry_p2p_component = {
    .base = PX_MCA_COMPONENT_HEADER("registry", PX_REGISTRY_API_MAJOR, PX_REGISTRY_API_MINOR,
                                    PX_REGISTRY_API_RELEASE, "p2p", 1, 0, 0, p2p_register, NULL,
                                    p2p_close_component),
    .query = p2p_query,
};
