/*
 * verbs_component.c: btl/verbs component: variables, device discovery with
 * ibv_get_device_list / ibv_query_port, and init, which declines with the
 * reason (see verbs.h for the state of the data path).
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "components/btl/verbs/verbs.h"
#include "core/mca/framework.h"
#include "core/mca/var.h"
#include "core/util/argv.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/btl/base/base.h"

char *px_btl_verbs_device_include = NULL;
int px_btl_verbs_verbose = 0;
char px_btl_verbs_decline_reason[1400];
static char *px_btl_verbs_devices_found = NULL;
static char px_btl_verbs_found_text[1024];
static int px_btl_verbs_output = -1;

static bool px_btl_verbs_listed(const char *list, const char *name)
{
    char **names = px_argv_split(list, ',');
    bool found = false;
    for (int i = 0; names && names[i] && !found; ++i)
        found = 0 == strcmp(names[i], name);
    px_argv_free(names);
    return found;
}

int px_btl_verbs_discover(char *out, size_t len)
{
    int num = 0, usable = 0;
    out[0] = '\0';
    struct ibv_device **list = ibv_get_device_list(&num);
    if (NULL == list || 0 == num) {
        snprintf(out, len, "none");
        if (list)
            ibv_free_device_list(list);
        return 0;
    }
    for (int i = 0; i < num; ++i) {
        const char *name = ibv_get_device_name(list[i]);
        size_t used = strlen(out);
        if (px_btl_verbs_device_include && px_btl_verbs_device_include[0] &&
            !px_btl_verbs_listed(px_btl_verbs_device_include, name)) {
            snprintf(out + used, len - used, "%s%s (not in btl_verbs_device_include)",
                     used ? ", " : "", name);
            continue;
        }
        struct ibv_context *ctx = ibv_open_device(list[i]);
        if (NULL == ctx) {
            snprintf(out + used, len - used, "%s%s (cannot open)", used ? ", " : "", name);
            continue;
        }
        struct ibv_device_attr attr;
        int active = 0;
        if (0 == ibv_query_device(ctx, &attr)) {
            for (int port = 1; port <= attr.phys_port_cnt; ++port) {
                struct ibv_port_attr pa;
                if (0 == ibv_query_port(ctx, (uint8_t)port, &pa) && IBV_PORT_ACTIVE == pa.state) {
                    used = strlen(out);
                    snprintf(out + used, len - used, "%s%s port %d active (%s)", used ? ", " : "",
                             name, port,
                             IBV_LINK_LAYER_ETHERNET == pa.link_layer ? "RoCE" : "InfiniBand");
                    active++;
                }
            }
        }
        if (0 == active) {
            used = strlen(out);
            snprintf(out + used, len - used, "%s%s (no active port)", used ? ", " : "", name);
        } else {
            usable++;
        }
        ibv_close_device(ctx);
    }
    ibv_free_device_list(list);
    return usable;
}

static const px_mca_var_field_t px_btl_verbs_vars[] = {
    {.name = "device_include",
     .help = "Comma-separated RDMA devices btl/verbs may use (e.g. \"mlx5_0\"); empty: all with "
             "an active port",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .storage = &px_btl_verbs_device_include},
    {.name = "verbose",
     .help = "Verbosity of btl/verbs (0-100)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "100",
     .storage = &px_btl_verbs_verbose},
    {.name = NULL},
};

/* Registered after discovery, which fills its storage. */
static const px_mca_var_field_t px_btl_verbs_info_vars[] = {
    {.name = "devices_found",
     .help = "RDMA devices and active ports found by ibv_get_device_list (informational)",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 1,
     .scope = PX_MCA_VAR_SCOPE_CONSTANT,
     .flags = PX_MCA_VAR_FLAG_READONLY,
     .storage = &px_btl_verbs_devices_found},
    {.name = NULL},
};

static int px_btl_verbs_register(void)
{
    /* A refused value was reported and its default kept: go on with the
     * others, and return the first error at the end. */
    int first = px_mca_var_register_table("btl", "verbs", px_btl_verbs_vars, -1, NULL);
    if (first < 0 && first != PX_ERR_BAD_PARAM)
        return first;
    int rc =
        px_btl_base_register_module_params(&px_btl_verbs_component, &px_btl_verbs_module_template);
    if (rc < 0 && first == PX_SUCCESS)
        first = rc;
    if (rc < 0 && rc != PX_ERR_BAD_PARAM)
        return rc;
    px_btl_verbs_discover(px_btl_verbs_found_text, sizeof(px_btl_verbs_found_text));
    if (NULL == px_btl_verbs_devices_found)
        px_btl_verbs_devices_found = px_btl_verbs_found_text;
    rc = px_mca_var_register_table("btl", "verbs", px_btl_verbs_info_vars, -1, NULL);
    return first < 0 ? first : rc;
}

static int px_btl_verbs_open(void)
{
    px_btl_verbs_output = px_output_open("btl:verbs", px_btl_verbs_verbose);
    return PX_SUCCESS;
}

static int px_btl_verbs_close(void)
{
    if (px_btl_verbs_output > 0)
        px_output_close(px_btl_verbs_output);
    px_btl_verbs_output = -1;
    return PX_SUCCESS;
}

static px_btl_module_t **px_btl_verbs_init(int *num_modules, bool enable_progress_threads)
{
    (void)enable_progress_threads;
    *num_modules = 0;
    char found[1024];
    int usable = px_btl_verbs_discover(found, sizeof(found));
    if (0 == strcmp(found, "none"))
        snprintf(px_btl_verbs_decline_reason, sizeof(px_btl_verbs_decline_reason),
                 "no RDMA device found (ibv_get_device_list lists none)");
    else if (0 == usable)
        snprintf(px_btl_verbs_decline_reason, sizeof(px_btl_verbs_decline_reason),
                 "no usable RDMA device: %.1000s", found);
    else
        snprintf(px_btl_verbs_decline_reason, sizeof(px_btl_verbs_decline_reason),
                 "found %.1000s, but this btl/verbs has no data path yet (RC queue pairs are not "
                 "implemented); btl/ofi reaches these devices through libfabric's "
                 "verbs;ofi_rxm provider",
                 found);
    /* Someone who named verbs in the btl list wants to know; others do not. */
    const char *sel = px_btl_base_framework.selection;
    if (sel && sel[0] != '^' && strstr(sel, "verbs"))
        px_show_warning("btl/verbs declines: %s", px_btl_verbs_decline_reason);
    else
        PX_OUTPUT_VERBOSE(1, px_btl_verbs_output, "btl/verbs declines: %s",
                          px_btl_verbs_decline_reason);
    return NULL;
}

const px_btl_component_t px_btl_verbs_component = {
    .base = PX_BTL_COMPONENT_HEADER("verbs", 0, 1, 0, px_btl_verbs_register, px_btl_verbs_open,
                                    px_btl_verbs_close),
    .btl_init = px_btl_verbs_init,
    .btl_modex_send = NULL,
};
