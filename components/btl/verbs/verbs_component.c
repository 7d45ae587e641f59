/*
 * verbs_component.c: btl/verbs component: variables, device and port
 * discovery, init (one module per usable port) and the modex.
 *
 * Discovery: every port of every device libibverbs lists, minus those
 * btl_verbs_device_include leaves out or btl_verbs_device_exclude names
 * (entries "dev" or "dev:port"), minus ports that are not ACTIVE (said in
 * btl_verbs_devices_found and at verbose >= 1). When the remaining ports are
 * on several devices, hwloc gives each device's NUMA locality: only the
 * devices nearest the process's binding are kept (a device with no known
 * locality, like the software device, counts as near, so all stay equal).
 * Each kept port becomes a module: several ports are several rails.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "components/btl/verbs/verbs.h"
#include "core/mca/framework.h"
#include "core/mca/var.h"
#include "core/util/argv.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/base.h"
#if PX_HAVE_HWLOC
#include <hwloc.h>
#include <hwloc/openfabrics-verbs.h>
#endif

char *px_btl_verbs_device_include = NULL;
char *px_btl_verbs_device_exclude = NULL;
int px_btl_verbs_num_recvs = 16;
int px_btl_verbs_ctl_recvs = 4;
int px_btl_verbs_sq_size = 128;
int px_btl_verbs_max_inline = 128;
int px_btl_verbs_gid_index = 0;
int px_btl_verbs_timeout = 14;
int px_btl_verbs_retry_count = 7;
int px_btl_verbs_rnr_retry = 6;
int px_btl_verbs_min_rnr_timer = 12;
bool px_btl_verbs_numa = true;
px_btl_base_net_vars_t px_btl_verbs_net = PX_BTL_BASE_NET_VARS_DEFAULTS;
double px_btl_verbs_keepalive = 2.0;
int px_btl_verbs_progress_mode = PX_BTL_VERBS_PROGRESS_POLL;
int px_btl_verbs_verbose = 0;
static bool px_btl_verbs_skip_single_host = true;
int px_btl_verbs_output = -1;
char px_btl_verbs_decline_reason[1400];
static char *px_btl_verbs_devices_found = NULL;
static char *px_btl_verbs_port_details = NULL;
static char px_btl_verbs_found_text[2048];
static char px_btl_verbs_details_text[2048];

px_btl_verbs_module_t **px_btl_verbs_modules = NULL;
int px_btl_verbs_num_modules = 0;

#define PX_BTL_VERBS_MAX_PORTS 16

px_btl_verbs_module_t px_btl_verbs_module_template = {
    .super =
        {
            .btl_size = PX_BTL_MODULE_SIZE,
            .btl_component = &px_btl_verbs_component,
            .btl_exclusivity = PX_BTL_EXCLUSIVITY_DEFAULT + 0x100, /* above ofi, below shm */
            .btl_latency = 2000,
            .btl_bandwidth = 10000,
            .btl_eager_limit = 12 * 1024,
            .btl_max_send_size = 32 * 1024,
            .btl_put_limit = (size_t)1 << 30,
            .btl_get_limit = (size_t)1 << 30,
            .btl_flags =
                PX_BTL_FLAGS_SEND | PX_BTL_FLAGS_PUT | PX_BTL_FLAGS_GET | PX_BTL_FLAGS_NEEDS_REG,
            .btl_registration_handle_size = PX_BTL_VERBS_HANDLE_WIRE_SIZE,
        },
};

bool px_btl_verbs_list_matches(const char *list, const char *dev, int port)
{
    char **names = px_argv_split(list, ',');
    bool found = false;
    char with_port[IBV_SYSFS_NAME_MAX + 8];
    snprintf(with_port, sizeof(with_port), "%s:%d", dev, port);
    for (int i = 0; names && names[i] && !found; ++i) {
        const char *n = names[i];
        while (' ' == *n)
            ++n;
        found = 0 == strcmp(n, dev) || 0 == strcmp(n, with_port);
    }
    px_argv_free(names);
    return found;
}

static bool px_btl_verbs_is_set(const char *s)
{
    return s && s[0];
}

static const char *px_btl_verbs_link_str(uint8_t ll)
{
    return IBV_LINK_LAYER_ETHERNET == ll ? "RoCE" : "InfiniBand";
}

const char *px_btl_verbs_mtu_str(int mtu)
{
    switch (mtu) {
    case IBV_MTU_256:
        return "256";
    case IBV_MTU_512:
        return "512";
    case IBV_MTU_1024:
        return "1024";
    case IBV_MTU_2048:
        return "2048";
    case IBV_MTU_4096:
        return "4096";
    default:
        return "?";
    }
}

#define PX_APPEND(out, len, ...)                                                                   \
    do {                                                                                           \
        size_t used_ = strlen(out);                                                                \
        if (used_ < (len))                                                                         \
            snprintf((out) + used_, (len)-used_, __VA_ARGS__);                                     \
    } while (0)

/* NUMA distance of each candidate's device from this process: 0 when its
 * local CPUs meet the process's binding or are unknown, 1 otherwise. Only
 * asked when the candidates are on more than one device. */
static void px_btl_verbs_numa_distances(struct ibv_device **list, px_btl_verbs_port_t *ports, int n,
                                        char *out, size_t len)
{
    for (int i = 0; i < n; ++i)
        ports[i].numa_distance = 0;
#if PX_HAVE_HWLOC
    bool several = false;
    for (int i = 1; i < n; ++i)
        several = several || ports[i].dev_index != ports[0].dev_index;
    if (!several || !px_btl_verbs_numa)
        return;
    hwloc_topology_t topo;
    if (0 != hwloc_topology_init(&topo))
        return;
    if (0 == hwloc_topology_load(topo)) {
        hwloc_bitmap_t mine = hwloc_bitmap_alloc(), dev = hwloc_bitmap_alloc();
        if (mine && dev && 0 == hwloc_get_cpubind(topo, mine, HWLOC_CPUBIND_PROCESS)) {
            for (int i = 0; i < n; ++i) {
                if (0 != hwloc_ibv_get_device_cpuset(topo, list[ports[i].dev_index], dev) ||
                    hwloc_bitmap_iszero(dev) || hwloc_bitmap_isfull(dev))
                    continue; /* unknown: near */
                ports[i].numa_distance = hwloc_bitmap_intersects(dev, mine) ? 0 : 1;
            }
        }
        hwloc_bitmap_free(mine);
        hwloc_bitmap_free(dev);
    }
    hwloc_topology_destroy(topo);
    bool any_near = false;
    for (int i = 0; i < n; ++i)
        any_near = any_near || 0 == ports[i].numa_distance;
    for (int i = 0; i < n && any_near; ++i)
        if (ports[i].numa_distance)
            PX_APPEND(out, len, "%s%s:%u (skipped: on another NUMA node than this process)",
                      out[0] ? ", " : "", ports[i].dev_name, ports[i].port);
#else
    (void)list;
    (void)out;
    (void)len;
#endif
}

int px_btl_verbs_discover(px_btl_verbs_port_t *ports, int max, char *out, size_t len)
{
    int num = 0, usable = 0;
    out[0] = '\0';
    char *details = px_btl_verbs_details_text;
    details[0] = '\0';
    const char *why = NULL;
    if (!px_btl_verbs_lib_load(&why)) {
        snprintf(out, len, "none: %s", why);
        snprintf(details, sizeof(px_btl_verbs_details_text), "none: %s", why);
        return 0;
    }
    struct ibv_device **list = ibv_get_device_list(&num);
    if (NULL == list || 0 == num) {
        snprintf(out, len, "none");
        snprintf(details, sizeof(px_btl_verbs_details_text), "none");
        if (list)
            ibv_free_device_list(list);
        return 0;
    }
    px_btl_verbs_port_t cand[PX_BTL_VERBS_MAX_PORTS];
    int ncand = 0;
    for (int i = 0; i < num; ++i) {
        const char *name = ibv_get_device_name(list[i]);
        struct ibv_context *ctx = ibv_open_device(list[i]);
        if (NULL == ctx) {
            PX_APPEND(out, len, "%s%s (cannot open)", out[0] ? ", " : "", name);
            continue;
        }
        struct ibv_device_attr attr;
        if (0 != ibv_query_device(ctx, &attr)) {
            PX_APPEND(out, len, "%s%s (ibv_query_device failed)", out[0] ? ", " : "", name);
            ibv_close_device(ctx);
            continue;
        }
        for (int port = 1; port <= attr.phys_port_cnt; ++port) {
            struct ibv_port_attr pa;
            if (0 != ibv_query_port(ctx, (uint8_t)port, &pa)) {
                PX_APPEND(out, len, "%s%s:%d (ibv_query_port failed)", out[0] ? ", " : "", name,
                          port);
                continue;
            }
            PX_APPEND(details, sizeof(px_btl_verbs_details_text),
                      "%s%s:%d state %s link %s mtu %s max_msg %u max_qp_wr %d max_sge %d "
                      "max_cqe %d",
                      details[0] ? "; " : "", name, port, ibv_port_state_str(pa.state),
                      px_btl_verbs_link_str(pa.link_layer), px_btl_verbs_mtu_str(pa.active_mtu),
                      pa.max_msg_sz, attr.max_qp_wr, attr.max_sge, attr.max_cqe);
            if (px_btl_verbs_is_set(px_btl_verbs_device_include) &&
                !px_btl_verbs_list_matches(px_btl_verbs_device_include, name, port)) {
                PX_APPEND(out, len, "%s%s:%d (not in btl_verbs_device_include)", out[0] ? ", " : "",
                          name, port);
                continue;
            }
            if (px_btl_verbs_is_set(px_btl_verbs_device_exclude) &&
                px_btl_verbs_list_matches(px_btl_verbs_device_exclude, name, port)) {
                PX_APPEND(out, len, "%s%s:%d (in btl_verbs_device_exclude)", out[0] ? ", " : "",
                          name, port);
                continue;
            }
            if (IBV_PORT_ACTIVE != pa.state) {
                PX_APPEND(out, len, "%s%s:%d (skipped: port state %s, not ACTIVE)",
                          out[0] ? ", " : "", name, port, ibv_port_state_str(pa.state));
                continue;
            }
            if (ncand >= PX_BTL_VERBS_MAX_PORTS) {
                PX_APPEND(out, len, "%s%s:%d (skipped: more than %d ports)", out[0] ? ", " : "",
                          name, port, PX_BTL_VERBS_MAX_PORTS);
                continue;
            }
            px_btl_verbs_port_t *c = &cand[ncand++];
            memset(c, 0, sizeof(*c));
            snprintf(c->dev_name, sizeof(c->dev_name), "%s", name);
            c->dev_index = i;
            c->port = (uint8_t)port;
            c->pattr = pa;
            c->dattr = attr;
        }
        ibv_close_device(ctx);
    }
    px_btl_verbs_numa_distances(list, cand, ncand, out, len);
    for (int i = 0; i < ncand; ++i) {
        if (cand[i].numa_distance)
            continue;
        PX_APPEND(out, len, "%s%s:%u active (%s)", out[0] ? ", " : "", cand[i].dev_name,
                  cand[i].port, px_btl_verbs_link_str(cand[i].pattr.link_layer));
        if (ports && usable < max)
            ports[usable] = cand[i];
        usable++;
    }
    ibv_free_device_list(list);
    return usable;
}

static const px_mca_var_enum_value_t px_btl_verbs_progress_values[] = {
    {PX_BTL_VERBS_PROGRESS_POLL, "poll"},
    {PX_BTL_VERBS_PROGRESS_EVENT, "event"},
    {0, NULL},
};

static const px_mca_var_field_t px_btl_verbs_vars[] = {
    {.name = "device_include",
     .help = "Comma-separated RDMA devices or device:port pairs btl/verbs may use (e.g. "
             "\"mlx5_0,mlx5_1:2\"); empty: every active port. Exclusive with "
             "btl_verbs_device_exclude",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .storage = &px_btl_verbs_device_include},
    {.name = "device_exclude",
     .help = "Comma-separated RDMA devices or device:port pairs btl/verbs must not use. "
             "Exclusive with btl_verbs_device_include",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .storage = &px_btl_verbs_device_exclude},
    {.name = "numa",
     .help = "When the usable ports are on several devices, use only the devices nearest this "
             "process's NUMA node (hwloc); devices of unknown locality count as near",
     .type = PX_MCA_VAR_TYPE_BOOL,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .storage = &px_btl_verbs_numa},
    {.name = "num_recvs",
     .help = "Receive buffers (header + btl_verbs_max_send_size bytes each) posted per peer "
             "for messages: the credits a sender starts with",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "2",
     .max = "4096",
     .storage = &px_btl_verbs_num_recvs},
    {.name = "ctl_recvs",
     .help = "Receive buffers posted per peer for credit updates (the control credits)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "1",
     .max = "64",
     .storage = &px_btl_verbs_ctl_recvs},
    {.name = "sq_size",
     .help = "Send work requests per queue pair (capped by the device's max_qp_wr); sends "
             "beyond wait in order",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "4",
     .max = "65536",
     .storage = &px_btl_verbs_sq_size},
    {.name = "max_inline",
     .help = "Largest send (header included) copied into the work request (IBV_SEND_INLINE) by "
             "sendi; capped by what the device accepts; 0: no inline sends",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "4096",
     .storage = &px_btl_verbs_max_inline},
    {.name = "gid_index",
     .help = "GID table index for RoCE (and InfiniBand ports without a LID)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "255",
     .storage = &px_btl_verbs_gid_index},
    {.name = "timeout",
     .help = "Local ACK timeout exponent of the queue pairs (4.096 us * 2^timeout per try)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "1",
     .max = "31",
     .storage = &px_btl_verbs_timeout},
    {.name = "retry_count",
     .help = "Transport retries before a send fails with IBV_WC_RETRY_EXC_ERR (peer lost)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "7",
     .storage = &px_btl_verbs_retry_count},
    {.name = "rnr_retry",
     .help = "Receiver-not-ready retries before a send fails (7 means forever on hardware; "
             "credits keep the eager path from ever seeing RNR)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "7",
     .storage = &px_btl_verbs_rnr_retry},
    {.name = "min_rnr_timer",
     .help = "Minimum RNR NAK timer code of the queue pairs (IB encoding, 12 = 0.64 ms)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 7,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "31",
     .storage = &px_btl_verbs_min_rnr_timer},
    {.name = NULL},
};

/* After the shared rows (rcache_max_entries, rcache_max_bytes, flush_timeout). */
static const px_mca_var_field_t px_btl_verbs_vars_tail[] = {
    {.name = "keepalive",
     .help = "Seconds without any completion after which btl/verbs probes each idle peer with "
             "an 8-byte RDMA read, so that a process only waiting to receive learns that the "
             "peer died or failed its queue pair; 0: never",
     .type = PX_MCA_VAR_TYPE_DOUBLE,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .storage = &px_btl_verbs_keepalive},
    {.name = "progress_mode",
     .help = "How btl/verbs learns of completions: poll (poll the completion queue at every "
             "progress call) or event (a completion channel too: when the process has nothing "
             "else to do, the progress engine arms it and sleeps in poll() on its descriptor, "
             "see progress_idle_spins, progress_idle_wait_ms; only when every transport that "
             "needs progress can wake it, as with btl=self,verbs)",
     .type = PX_MCA_VAR_TYPE_ENUM,
     .enum_values = px_btl_verbs_progress_values,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .storage = &px_btl_verbs_progress_mode},
    {.name = "skip_single_host",
     .help = "Decline when every rank of the job is on this host and btl/shm is allowed (shm "
             "would serve every pair); false keeps verbs as a fallback on one host",
     .type = PX_MCA_VAR_TYPE_BOOL,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .storage = &px_btl_verbs_skip_single_host},
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

/* Probe of the informational variables: discovery fills their texts. */
static int px_btl_verbs_probe(void)
{
    px_btl_verbs_discover(NULL, 0, px_btl_verbs_found_text, sizeof(px_btl_verbs_found_text));
    px_btl_verbs_devices_found = px_btl_verbs_found_text;
    px_btl_verbs_port_details = px_btl_verbs_details_text;
    return PX_SUCCESS;
}

static const px_mca_var_field_t px_btl_verbs_info_vars[] = {
    {.name = "devices_found",
     .help = "RDMA devices and ports found by ibv_get_device_list, which are used and why the "
             "others are not (informational)",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 1,
     .scope = PX_MCA_VAR_SCOPE_CONSTANT,
     .flags = PX_MCA_VAR_FLAG_READONLY,
     .storage = &px_btl_verbs_devices_found,
     .probe = px_btl_verbs_probe},
    {.name = "port_details",
     .help = "Every port of every device: state, link layer, active MTU, max message size and "
             "the device's max_qp_wr, max_sge, max_cqe (informational)",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 8,
     .scope = PX_MCA_VAR_SCOPE_CONSTANT,
     .flags = PX_MCA_VAR_FLAG_READONLY,
     .storage = &px_btl_verbs_port_details,
     .probe = px_btl_verbs_probe},
    {.name = NULL},
};

static int px_btl_verbs_register(void)
{
    /* libibverbs is loaded (and pinned for the process's life: its providers
     * keep threads past this plugin's unload) by px_btl_verbs_lib_load, at
     * the first device discovery, not here: registering costs nothing. */
    return px_btl_base_net_register(&px_btl_verbs_component, &px_btl_verbs_module_template.super,
                                    px_btl_verbs_vars, &px_btl_verbs_net, px_btl_verbs_vars_tail,
                                    px_btl_verbs_info_vars);
}

static int px_btl_verbs_open(void)
{
    px_btl_verbs_output = px_output_open("btl:verbs", px_btl_verbs_verbose);
    return PX_SUCCESS;
}

static int px_btl_verbs_close(void)
{
    free(px_btl_verbs_modules);
    px_btl_verbs_modules = NULL;
    px_btl_verbs_num_modules = 0;
    if (px_btl_verbs_output > 0)
        px_output_close(px_btl_verbs_output);
    px_btl_verbs_output = -1;
    return PX_SUCCESS;
}

/* True when every rank is on this host and shm may serve them. */
static bool px_btl_verbs_single_host_job(const char **why)
{
    if (!px_btl_verbs_skip_single_host || !px_btl_base_job_is_local("shm"))
        return false;
    *why = "every rank is on this host and btl/shm serves them (btl_verbs_skip_single_host; use "
           "btl=self,verbs to run verbs here)";
    return true;
}

static void px_btl_verbs_decline(bool error)
{
    /* Someone who named verbs in the btl list wants to know; others do not. */
    const char *sel = px_btl_base_framework.selection;
    if (error)
        px_show_error("btl/verbs: %s", px_btl_verbs_decline_reason);
    else if (sel && sel[0] != '^' && strstr(sel, "verbs"))
        px_show_warning("btl/verbs declines: %s", px_btl_verbs_decline_reason);
    else
        PX_OUTPUT_VERBOSE(1, px_btl_verbs_output, "btl/verbs declines: %s",
                          px_btl_verbs_decline_reason);
}

static px_btl_module_t **px_btl_verbs_init(int *num_modules, bool enable_progress_threads)
{
    (void)enable_progress_threads;
    *num_modules = 0;
    free(px_btl_verbs_modules);
    px_btl_verbs_modules = NULL;
    px_btl_verbs_num_modules = 0;
    const char *why = NULL;
    if (px_btl_verbs_single_host_job(&why)) {
        snprintf(px_btl_verbs_decline_reason, sizeof(px_btl_verbs_decline_reason), "%s", why);
        PX_OUTPUT_VERBOSE(1, px_btl_verbs_output, "btl/verbs declines: %s", why);
        return NULL;
    }
    if (px_btl_verbs_is_set(px_btl_verbs_device_include) &&
        px_btl_verbs_is_set(px_btl_verbs_device_exclude)) {
        snprintf(px_btl_verbs_decline_reason, sizeof(px_btl_verbs_decline_reason),
                 "btl_verbs_device_include (\"%.300s\") and btl_verbs_device_exclude (\"%.300s\") "
                 "are both set; set only one of them",
                 px_btl_verbs_device_include, px_btl_verbs_device_exclude);
        px_btl_verbs_decline(true);
        return NULL;
    }
    px_btl_verbs_port_t ports[PX_BTL_VERBS_MAX_PORTS];
    char found[2048];
    int usable = px_btl_verbs_discover(ports, PX_BTL_VERBS_MAX_PORTS, found, sizeof(found));
    if (0 == strncmp(found, "none: ", 6)) {
        snprintf(px_btl_verbs_decline_reason, sizeof(px_btl_verbs_decline_reason), "%.1300s",
                 found + 6);
        px_btl_verbs_decline(false);
        return NULL;
    }
    if (0 == strcmp(found, "none")) {
        snprintf(px_btl_verbs_decline_reason, sizeof(px_btl_verbs_decline_reason),
                 "no RDMA device found (ibv_get_device_list lists none)");
        px_btl_verbs_decline(false);
        return NULL;
    }
    if (0 == usable) {
        snprintf(px_btl_verbs_decline_reason, sizeof(px_btl_verbs_decline_reason),
                 "no usable RDMA port: %.1300s", found);
        px_btl_verbs_decline(px_btl_verbs_is_set(px_btl_verbs_device_include));
        return NULL;
    }
    PX_OUTPUT_VERBOSE(10, px_btl_verbs_output, "btl/verbs: ports: %s", found);
    px_btl_module_t **mods = calloc((size_t)usable, sizeof(*mods));
    px_btl_verbs_modules = calloc((size_t)usable, sizeof(*px_btl_verbs_modules));
    if (NULL == mods || NULL == px_btl_verbs_modules) {
        free(mods);
        free(px_btl_verbs_modules);
        px_btl_verbs_modules = NULL;
        return NULL;
    }
    int nranks = px_boot ? px_boot->size : 1;
    for (int i = 0; i < usable; ++i) {
        px_btl_verbs_module_t *m = malloc(sizeof(*m));
        if (NULL == m)
            break;
        *m = px_btl_verbs_module_template;
        m->port = ports[i];
        m->index = *num_modules;
        if (PX_SUCCESS != px_btl_verbs_module_init(m, nranks)) {
            free(m);
            continue;
        }
        mods[*num_modules] = &m->super;
        px_btl_verbs_modules[(*num_modules)++] = m;
    }
    px_btl_verbs_num_modules = *num_modules;
    if (0 == *num_modules) {
        free(mods);
        free(px_btl_verbs_modules);
        px_btl_verbs_modules = NULL;
        snprintf(px_btl_verbs_decline_reason, sizeof(px_btl_verbs_decline_reason),
                 "setting up every usable port failed (see the errors above): %.1200s", found);
        return NULL;
    }
    return mods;
}

static int px_btl_verbs_modex_send(void)
{
    int nm = px_btl_verbs_num_modules;
    if (0 == nm)
        return PX_SUCCESS;
    uint32_t nranks = (uint32_t)px_btl_verbs_modules[0]->num_peers;
    size_t per = px_btl_verbs_modex_stride(nranks);
    size_t len = sizeof(px_btl_verbs_modex_hdr_t) + (size_t)nm * per;
    char *b = calloc(1, len);
    if (NULL == b)
        return PX_ERR_OUT_OF_RESOURCE;
    px_btl_verbs_modex_hdr_t *h = (px_btl_verbs_modex_hdr_t *)b;
    h->nmodules = (uint32_t)nm;
    h->nranks = nranks;
    for (int i = 0; i < nm; ++i) {
        px_btl_verbs_module_t *m = px_btl_verbs_modules[i];
        px_btl_verbs_modex_port_t *p =
            (px_btl_verbs_modex_port_t *)(b + sizeof(*h) + (size_t)i * per);
        memcpy(p->gid, m->gid.raw, sizeof(p->gid));
        p->lid = m->port.pattr.lid;
        p->port = m->port.port;
        p->link_layer = m->port.pattr.link_layer;
        p->mtu = (uint8_t)m->port.pattr.active_mtu;
        p->psn = m->psn;
        p->ka_rkey = m->ka_mr->rkey;
        p->ka_addr = (uint64_t)(uintptr_t)m->ka_buf;
        for (uint32_t r = 0; r < nranks; ++r)
            p->qpn[r] = m->peers[r] && m->peers[r]->qp ? m->peers[r]->qp->qp_num : 0;
    }
    int rc = px_boot_modex_send(&px_btl_verbs_component.base, b, len);
    free(b);
    return rc;
}

const px_btl_component_t px_btl_verbs_component = {
    .base = PX_BTL_COMPONENT_HEADER("verbs", 1, 0, 0, px_btl_verbs_register, px_btl_verbs_open,
                                    px_btl_verbs_close),
    .btl_init = px_btl_verbs_init,
    .btl_modex_send = px_btl_verbs_modex_send,
    /* Not thread-safe: its queue pairs, completion queue, registration
     * cache and fragment lists are driven without locks; the base
     * serializes each module (one per port) at PX_THREAD_MULTIPLE
     * (docs/threads.md). */
    .btl_thread_support = PX_BTL_THREADS_SERIALIZED,
};
